"""hepbdt.interop.to_cpp: headers compiled with the system C++ compiler, against hepbdt.

Every model of the module's set is written as a header (and again in the sparse layout, with
keys computed where read, with blocks of 8 events); one driver includes them all and is
compiled three times (C++11; C++17 at ``-O3 -march=native``, where the blocks' loops are
vectorised with the widest registers; C++11 with ``-ffinite-math-only``; all ``-O2 -Wall
-Wextra -Wpedantic -Werror`` unless overridden, side by side).
The driver evaluates binary float32 events with ``evaluate``, ``evaluate_batch`` and
``probability`` and writes doubles; these are compared with hepbdt's Numba evaluation
(``decision_function``, ``predict``, ``predict_proba``; ``Forest.raw_score`` for the
infinite inputs that the estimators refuse) and, for one model, ``predict_naive``.
Scores must be equal bit for bit; probabilities differ at most in the last bits that
``std::exp`` and numpy's exp round differently. Without a compiler the tests are skipped,
except in CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

import hepbdt.interop.cpp_export as cpp_export
from hepbdt import BDTClassifier, BDTRegressor
from hepbdt._sklearn import NotFittedError
from hepbdt.engine.predict import predict_naive
from hepbdt.estimators import from_forest
from hepbdt.interop import from_tmva_xml, from_xgboost_json
from hepbdt.interop.cpp_export import MAX_CPP_NODES, CppExportError, to_cpp
from hepbdt.model import ForestBuilder

from .conftest import tmva_inputs

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TMVA_DIR = SHARED / "tmva"
DATA_DIR = SHARED / "data"
STANDARD_HEADERS = {"<algorithm>", "<cmath>", "<cstddef>", "<cstdint>", "<cstring>", "<vector>"}
FLAGS = ["-O2", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
# std::exp (glibc) and numpy's SIMD exp each round faithfully (error < 1 ulp) but not always
# to the same neighbour: exp differs by <= 1 ulp, and 1 / (1 + exp) by <= 2 ulp. Measured:
# 2 ulp at most, in ~2 % of events (numpy 2.4 with AVX-512, glibc 2.36).
MAX_PROBABILITY_ULP = 2
N_FEATURES = 5


def _compiler() -> str:
    """The C++ compiler on PATH; a skip without one (a failure in CI)."""
    found = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no C++ compiler (c++, g++, clang++) on PATH; CI must have one")
        pytest.skip("install a C++ compiler (apt-get install g++) to run these")
    return found


# -- the models ------------------------------------------------------------------------------

def _training_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X float32 with ~10 % NaN in column 1, class labels, regression target)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] - 0.5 * X[:, 3] ** 2 + rng.normal(size=n) > 0).astype(int)
    target = 3.0 * X[:, 0] + np.sin(2 * X[:, 2]) + X[:, 1] * X[:, 4] + 0.1 * rng.normal(size=n)
    X[rng.random(n) < 0.1, 1] = np.nan
    # where column 1 is missing, the class leans to signal: the NaN direction matters
    y = np.where(np.isnan(X[:, 1]), rng.random(n) < 0.8, y).astype(int)
    return X, y, target


def _reweighted(model, aggregation: str, weights: np.ndarray):
    """A copy of a fitted model whose forest combines its trees with ``aggregation``."""
    other = copy.deepcopy(model)
    other.forest_.aggregation = aggregation
    other.forest_.tree_weights = np.asarray(weights, dtype=np.float64)
    return other


def _odd_constants(model):
    """A copy with +-inf, subnormal, -0.0 and extreme thresholds and leaf values."""
    other = copy.deepcopy(model)
    f = other.forest_
    split = np.flatnonzero(f.feature >= 0)
    leaves = np.flatnonzero(f.feature < 0)
    odd_thresholds = [np.inf, -np.inf, 1e-45, -1e-45, 3.4028235e38, -0.0, 0.0, 1.1754944e-38]
    picked = split[:: split.size // len(odd_thresholds)][: len(odd_thresholds)]
    f.threshold[picked] = odd_thresholds
    odd_values = [5e-324, -1e308, -0.0, 1e-310, 0.1, 2.0 ** -1074]
    f.value[leaves[::3][: len(odd_values)]] = odd_values
    f.tree_weights[1] = 1e300  # weight x leaf overflows to inf in a few leaves
    return other


def _chains() -> object:
    """A regressor of "caterpillar" trees of depths 3, 20 and 9 (one split per level, the
    leaf on alternating sides): too deep for the dense layout, paths of every length, and
    a group whose first tree is not its deepest."""
    builder = ForestBuilder(N_FEATURES, base_score=0.25)
    for t, depth in enumerate([3, 20, 9]):
        n = 2 * depth + 1
        arrays = {k: np.zeros(n) for k in ("threshold", "bin_threshold", "value", "gain", "cover")}
        feature, left, right = np.full(n, -1), np.full(n, -1), np.full(n, -1)
        missing_left = np.zeros(n, bool)
        for level in range(depth):
            node, leaf, deeper = 2 * level, 2 * level + 1, 2 * level + 2
            feature[node] = (level + t) % N_FEATURES
            arrays["threshold"][node] = np.float32(-2.0 + 0.2 * level)
            missing_left[node] = level % 3 == 0
            left[node], right[node] = (leaf, deeper) if level % 2 == 0 else (deeper, leaf)
            arrays["value"][leaf] = 0.1 * level - t
        arrays["value"][n - 1] = 7.5 + t
        builder.add(tree_weight=1.0, feature=feature, left=left, right=right,
                    missing_left=missing_left, **arrays)
    forest = builder.build()
    forest.validate()
    return from_forest("regressor", forest, None)


def _single_leaves() -> object:
    """A regressor of 3 trees that are one leaf each: nothing splits (depth 0, no key row)."""
    builder = ForestBuilder(N_FEATURES, base_score=-1.5)
    one = {k: np.zeros(1) for k in ("threshold", "bin_threshold", "gain", "cover")}
    for value in (0.25, -3.0, 1e-300):
        builder.add(tree_weight=0.5, feature=np.array([-1]), left=np.array([-1]),
                    right=np.array([-1]), missing_left=np.array([False]), value=np.array([value]),
                    **one)
    forest = builder.build()
    forest.validate()
    return from_forest("regressor", forest, None)


def _tied_stumps() -> object:
    """A weighted-median regressor of 40 stumps whose leaves take 3 values: the median's
    stable sort decides which tree weights come first among equal responses."""
    rng = np.random.default_rng(8)
    builder = ForestBuilder(N_FEATURES, aggregation="weighted_median")
    zeros = {k: np.zeros(3) for k in ("bin_threshold", "gain", "cover")}
    for t in range(40):
        builder.add(tree_weight=float(rng.uniform(0.1, 3.0)), feature=np.array([t % N_FEATURES, -1, -1]),
                    threshold=np.array([rng.normal(), 0, 0]), left=np.array([1, -1, -1]),
                    right=np.array([2, -1, -1]), missing_left=np.array([t % 2 == 0, False, False]),
                    value=np.array([0.0, *rng.choice([-1.0, 0.5, 2.0], 2)]), **zeros)
    forest = builder.build()
    forest.validate()
    return from_forest("regressor", forest, None)


def _half_total_median() -> object:
    """A weighted-median regressor of 9 stumps, tree t scoring t + 1 everywhere, whose
    weights (1, 2^-52, six of 2^-53, 1) total 2 + 2^-51 added in tree order (TMVA's
    AdaBoostR2, ``model.half_tree_weight``) and 2 + 2^-50 in numpy's pairwise order: the
    median is the second tree by one and the last by the other."""
    builder = ForestBuilder(N_FEATURES, aggregation="weighted_median")
    zeros = {k: np.zeros(3) for k in ("bin_threshold", "gain", "cover")}
    for t, weight in enumerate([1.0, 2.0**-52, *[2.0**-53] * 6, 1.0]):
        builder.add(tree_weight=weight, feature=np.array([0, -1, -1]), threshold=np.zeros(3),
                    left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
                    missing_left=np.zeros(3, bool), value=np.array([0.0, t + 1.0, t + 1.0]),
                    **zeros)
    return from_forest("regressor", builder.build(), None)


def _models(folder: Path) -> dict[str, object]:
    """Every model the module compiles, by name (files of imported models go to folder)."""
    X, y, target = _training_data(3000, 1)
    classifiers = {
        "gradient": BDTClassifier(boosting="gradient", n_trees=30, max_depth=3),
        "newton": BDTClassifier(boosting="newton", n_trees=25, max_depth=2),
        "stumps": BDTClassifier(boosting="gradient", n_trees=48, max_depth=1, learning_rate=0.3),
        "adaboost": BDTClassifier(boosting="adaboost", n_trees=30, max_depth=3),
        "adaboost_purity": BDTClassifier(boosting="adaboost", n_trees=20, max_depth=3,
                                         use_yes_no_leaf=False),
        "realadaboost": BDTClassifier(boosting="realadaboost", n_trees=20, max_depth=3),
        "eps": BDTClassifier(boosting="eps", n_trees=20, max_depth=3),
        "bagging": BDTClassifier(boosting="bagging", n_trees=15, max_depth=3, subsample=0.6,
                                 random_state=3),
    }
    models: dict[str, object] = {name: m.set_params(n_jobs=1).fit(X, y) for name, m in classifiers.items()}
    X_deep, y_deep, _ = _training_data(20000, 2)
    models["deep"] = BDTClassifier(n_trees=8, max_depth=10, learning_rate=0.5, min_child_weight=0,
                                   n_jobs=1).fit(X_deep, y_deep)
    for boosting in ("gradient", "newton"):
        models[f"reg_{boosting}"] = BDTRegressor(boosting=boosting, n_trees=30, max_depth=4,
                                                 n_jobs=1).fit(X, target)
    rng = np.random.default_rng(5)
    base = models["reg_gradient"]
    models["reg_median"] = _reweighted(base, "weighted_median", rng.uniform(0.1, 2.0, 30))
    models["reg_mean"] = _reweighted(base, "weighted_mean", rng.uniform(0.1, 2.0, 30))
    models["adaboost_zero_total"] = _reweighted(models["adaboost"], "weighted_mean",
                                                np.repeat([1.0, -1.0], 15))
    models["odd_constants"] = _odd_constants(models["gradient"])
    models["chains"] = _chains()
    models["single_leaves"] = _single_leaves()
    models["tied_median"] = _tied_stumps()
    models["median_zero_weights"] = _reweighted(models["tied_median"], "weighted_median",
                                                np.zeros(40))  # no weight passes the half
    models["half_total_median"] = _half_total_median()
    import pandas as pd  # installed with the test dependencies

    names = ["m_jj", "p_T(j1)", 'q"uote\\', "??=trigraph", "é"]
    frame = pd.DataFrame(X[:, ::-1], columns=names[::-1])  # trained on the reversed order
    models["named"] = BDTClassifier(n_trees=20, max_depth=3, n_jobs=1).fit(frame, y)
    models["named"].feature_definitions_ = {"m_jj": "sqrt(2*pt1*pt2*(cosh(deta) - cos(dphi)))"}
    models.update(_imported_models(folder, X, y))
    return models


def _imported_models(folder: Path, X: np.ndarray, y: np.ndarray) -> dict[str, object]:
    """The TMVA fixtures (when ../shared is there) and an XGBoost model (when installed)."""
    models: dict[str, object] = {}
    if (TMVA_DIR / "ClassExample_BDT.weights.xml").is_file():
        models["tmva_class"] = from_tmva_xml(TMVA_DIR / "ClassExample_BDT.weights.xml")
        models["tmva_reg"] = from_tmva_xml(TMVA_DIR / "Regression_BDT.weights.xml")
    try:
        import xgboost  # optional: only this model needs it
    except ImportError:
        return models
    booster = xgboost.train({"objective": "binary:logistic", "max_depth": 4, "eta": 0.3,
                             "base_score": 0.3, "nthread": 1},
                            xgboost.DMatrix(X, label=y, missing=np.nan), num_boost_round=15)
    booster.save_model(folder / "xgboost.json")
    models["xgboost"] = from_xgboost_json(folder / "xgboost.json")
    return models


# -- building and running the driver ---------------------------------------------------------

_DRIVER_MAIN = """
int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const int which = std::atoi(argv[1]);
  if (std::strcmp(argv[2], "names") == 0) return print_names(which);
  std::FILE* in = std::fopen(argv[2], "rb");
  if (!in) return 3;
  std::int64_t shape[2];
  if (std::fread(shape, sizeof(std::int64_t), 2, in) != 2) return 4;
  const std::size_t n = static_cast<std::size_t>(shape[0]);
  std::vector<float> x(n * static_cast<std::size_t>(shape[1]));
  if (std::fread(x.data(), sizeof(float), x.size(), in) != x.size()) return 5;
  std::fclose(in);
  std::vector<double> out(3 * n);
  const int status = run(which, static_cast<int>(shape[1]), x.data(), n, out.data());
  if (status != 0) return status;
  std::FILE* result = std::fopen(argv[3], "wb");
  if (!result) return 7;
  std::fwrite(out.data(), sizeof(double), out.size(), result);
  return std::fclose(result) == 0 ? 0 : 8;
}
"""


def _driver(namespaces: list[str], classifier: list[bool]) -> str:
    """A program that runs model ``which`` on a binary file of events (int64 n, m, floats)."""
    lines = ["#include <cmath>", "#include <cstdint>", "#include <cstdio>", "#include <cstdlib>",
             "#include <cstring>", "#include <vector>"]
    lines += [f'#include "{ns}.hpp"' for ns in namespaces]
    lines.append("static int run(int which, int m, const float* x, std::size_t n, double* out) {")
    for i, (ns, is_classifier) in enumerate(zip(namespaces, classifier, strict=True)):
        probability = f"{ns}::probability(row)" if is_classifier else "NAN"
        lines += [
            f"  if (which == {i}) {{",
            f"    if (m != {ns}::n_features) return 6;",
            "    for (std::size_t i = 0; i < n; ++i) {",
            f"      const float* row = x + i * static_cast<std::size_t>({ns}::n_features);",
            f"      out[i] = {ns}::evaluate(row);",
            f"      out[2 * n + i] = {probability};",
            "    }",
            f"    {ns}::evaluate_batch(x, n, out + n);",
            "    return 0;",
            "  }"]
    lines += ["  return 9;", "}", "static int print_names(int which) {"]
    for i, ns in enumerate(namespaces):
        lines.append(f"  if (which == {i}) for (const char* name : {ns}::feature_names) "
                     'std::printf("%s\\n", name);')
    lines += ["  return 0;", "}", _DRIVER_MAIN]
    return "\n".join(lines)


# Builds of the driver, run side by side: every one must give the same bits. The header
# promises that -ffinite-math-only (its nodes compare integer keys of the bits) changes
# nothing; -march=native (where the compiler takes it) vectorises the blocks' loops with
# the machine's widest registers.
BUILDS = {"c++11": ["-std=c++11"], "c++17-native": ["-std=c++17", "-O3", "@native"],
          "finite-math": ["-std=c++11", "-ffinite-math-only"]}


def _native(compiler: str) -> list[str]:
    """["-march=native"] where the compiler takes it, else nothing."""
    done = subprocess.run([compiler, "-march=native", "-x", "c++", "-fsyntax-only", "-"],
                          input="int main() { return 0; }\n", capture_output=True, text=True,
                          timeout=60)
    return ["-march=native"] if done.returncode == 0 else []


def _compile(compiler: str, source: Path, builds: dict[str, list[str]]) -> dict[str, Path]:
    """Compile ``source`` once per build, in parallel; the executables by build name."""
    jobs = {}
    native = _native(compiler)
    for std, options in builds.items():
        exe = source.with_name(f"driver_{std}")
        options = [flag for option in options for flag in (native if option == "@native" else [option])]
        cmd = [compiler, *FLAGS, *options, "-o", str(exe), str(source)]
        jobs[std] = (exe, subprocess.Popen(cmd, cwd=source.parent, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, text=True))
    for std, (_, job) in jobs.items():
        output, _ = job.communicate(timeout=300)
        assert job.returncode == 0, f"{compiler} -std={std} failed:\n{output[-6000:]}"
    return {std: exe for std, (exe, _) in jobs.items()}


@dataclass
class Compiled:
    """The exported models, their headers and the compiled drivers."""

    folder: Path
    models: dict[str, object]
    index: dict[str, int]
    exports: dict[str, dict]
    executables: dict[str, Path]

    def header(self, name: str) -> str:
        """The text of a model's header."""
        return (self.folder / f"{self.exports[name]['namespace']}.hpp").read_text()

    def run(self, name: str, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(evaluate, evaluate_batch, probability) of every event; the same from each standard."""
        X = np.ascontiguousarray(X, dtype=np.float32)
        events = self.folder / f"events_{name}.bin"
        with open(events, "wb") as handle:
            np.array(X.shape, dtype=np.int64).tofile(handle)
            X.tofile(handle)
        results = []
        for std, exe in self.executables.items():
            out = self.folder / f"out_{name}_{std}.bin"
            done = subprocess.run([str(exe), str(self.index[name]), str(events), str(out)],
                                  capture_output=True, timeout=120)
            assert done.returncode == 0, f"driver failed ({std}): {done.returncode} {done.stderr!r}"
            results.append(np.fromfile(out, dtype=np.float64).reshape(3, X.shape[0]))
        for other in results[1:]:
            np.testing.assert_array_equal(other, results[0])
        return results[0][0], results[0][1], results[0][2]

    def names(self, name: str) -> list[str]:
        """The header's feature_names, as the compiled program prints them."""
        exe = next(iter(self.executables.values()))
        done = subprocess.run([str(exe), str(self.index[name]), "names", "-"], capture_output=True,
                              timeout=60, check=True)
        return done.stdout.decode("utf-8").splitlines()


SPARSE_COPIES = ["gradient", "newton", "stumps", "adaboost", "adaboost_purity", "realadaboost",
                 "eps", "bagging", "deep", "reg_gradient", "reg_median", "reg_mean",
                 "adaboost_zero_total", "odd_constants", "named", "tied_median"]
# Copies with keys computed where a node reads them (as for forests of many features), in
# both layouts and for every aggregation, and copies whose evaluate_batch takes blocks of 8
# events (as for forests of many features) for shallow and deep dense trees.
DIRECT_COPIES = ["gradient", "adaboost", "reg_median", "deep", "chains", "odd_constants"]
BLOCK8_COPIES = ["gradient", "stumps", "reg_gradient", "deep", "adaboost_zero_total"]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> Compiled:
    """Every model exported (and again in the sparse layout) and one driver, compiled."""
    compiler = _compiler()
    folder = tmp_path_factory.mktemp("cpp_export")
    models = _models(folder)
    exports = {name: to_cpp(model, folder / f"bdt_{name}.hpp", namespace=f"bdt_{name}")
               for name, model in models.items()}
    copies = [("sparse", SPARSE_COPIES, "_layout", lambda forest: "sparse"),
              ("direct", DIRECT_COPIES, "MAX_KEY_ROWS", 1),
              ("block8", BLOCK8_COPIES, "MAX_BLOCK", 8)]
    for prefix, names, attribute, value in copies:
        with mock.patch.object(cpp_export, attribute, value):
            for name in names:  # the same models written otherwise
                copy_name = f"{prefix}_{name}"
                models[copy_name] = models[name]
                exports[copy_name] = to_cpp(models[name], folder / f"bdt_{copy_name}.hpp",
                                            namespace=f"bdt_{copy_name}")
    source = folder / "driver.cpp"
    source.write_text(_driver([e["namespace"] for e in exports.values()],
                              [hasattr(m, "predict_proba") for m in models.values()]))
    executables = _compile(compiler, source, BUILDS)
    return Compiled(folder, models, {name: i for i, name in enumerate(models)}, exports,
                    executables)


# -- events ----------------------------------------------------------------------------------

def _events(model, n: int = 1500, seed: int = 11) -> np.ndarray:
    """Events of the model's width: normal values, ~10 % NaN in every column, and rows that
    sit exactly on thresholds of the forest (the < test at its boundary)."""
    forest = model.forest_
    m = forest.n_features
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(n, m)) * 1.5).astype(np.float32)
    split = np.flatnonzero((forest.feature >= 0) & np.isfinite(forest.threshold))
    on_cut = rng.choice(split, size=(n // 3, m)) if split.size else np.empty((0, m), int)
    for j in range(m):
        rows = np.flatnonzero(forest.feature[on_cut[:, j]] == j)
        X[rows, j] = forest.threshold[on_cut[rows, j]]
    X[rng.random((n, m)) < 0.1] = np.nan
    return X


def _infinite_events(m: int) -> np.ndarray:
    """Rows with +inf and -inf in every column (one at a time and all together)."""
    rows = [np.full(m, np.inf), np.full(m, -np.inf)]
    for j in range(m):
        for value in (np.inf, -np.inf):
            row = np.zeros(m)
            row[j] = value
            rows.append(row)
    return np.array(rows, dtype=np.float32)


def _reference(model, X: np.ndarray) -> np.ndarray:
    """hepbdt's score: decision_function of a classifier, predict of a regressor."""
    score = getattr(model, "decision_function", None) or model.predict
    return score(X)


def _max_ulp(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance in units in the last place between two float64 arrays."""
    ia = a.view(np.int64)
    ib = b.view(np.int64)
    ia = np.where(ia < 0, np.int64(-(2**63)) - ia, ia)
    ib = np.where(ib < 0, np.int64(-(2**63)) - ib, ib)
    return int(np.max(np.abs(ia - ib))) if a.size else 0


# -- tests ---------------------------------------------------------------------------------

MODEL_NAMES = ["gradient", "newton", "stumps", "adaboost", "adaboost_purity", "realadaboost",
               "eps", "bagging", "deep", "reg_gradient", "reg_newton", "reg_median", "reg_mean",
               "adaboost_zero_total", "odd_constants", "named", "chains", "single_leaves",
               "tied_median", "median_zero_weights",
               *[f"sparse_{name}" for name in SPARSE_COPIES],
               *[f"direct_{name}" for name in DIRECT_COPIES],
               *[f"block8_{name}" for name in BLOCK8_COPIES]]


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_header_equals_hepbdt(compiled, name) -> None:
    """evaluate and evaluate_batch equal hepbdt's score bit for bit; probability to 2 ulp."""
    model = compiled.models[name]
    X = _events(model)
    evaluate, batch, probability = compiled.run(name, X)
    np.testing.assert_array_equal(evaluate, _reference(model, X))
    np.testing.assert_array_equal(batch, evaluate)
    if hasattr(model, "predict_proba"):
        with np.errstate(over="ignore"):  # odd_constants: scores of +-inf
            expected = model.predict_proba(X)[:, 1]
        assert _max_ulp(probability, expected) <= MAX_PROBABILITY_ULP
        if model.forest_.aggregation != "sum":  # no exp: exact
            np.testing.assert_array_equal(probability, expected)


# The standard header that declares each name, as the C++ standard lists them: a header
# that leans on another header's includes compiles with one standard library and not with
# the next (libstdc++ brings <vector> and <algorithm> in with <cmath>; libc++ does not).
HEADER_OF_NAME = {"std::vector": "<vector>", "std::stable_sort": "<algorithm>",
                    "std::sort": "<algorithm>", "std::min": "<algorithm>",
                    "std::max": "<algorithm>", "std::memcpy": "<cstring>",
                    "std::size_t": "<cstddef>", "std::uint8_t": "<cstdint>",
                    "std::uint16_t": "<cstdint>", "std::uint32_t": "<cstdint>",
                    "std::int32_t": "<cstdint>", "std::uint64_t": "<cstdint>",
                    "std::isnan": "<cmath>", "std::nan": "<cmath>", "std::exp": "<cmath>",
                    "std::signbit": "<cmath>"}


def test_headers_include_what_they_use(compiled) -> None:
    """Every std:: name in every exported header has its own standard header included."""
    for path in sorted(compiled.folder.glob("bdt_*.hpp")):
        text = path.read_text()
        included = set(re.findall(r"^#include (<\w+>)", text, re.MULTILINE))
        used = set(re.findall(r"\bstd::\w+", text))
        unknown = used - HEADER_OF_NAME.keys()
        assert not unknown, f"{path.name}: add {sorted(unknown)} to HEADER_OF_NAME"
        missing = {name: HEADER_OF_NAME[name] for name in used
                   if HEADER_OF_NAME[name] not in included}
        assert not missing, f"{path.name} uses {missing} without including them"


@pytest.mark.parametrize("name", ["gradient", "adaboost", "reg_median", "deep", "odd_constants",
                                  "chains", "sparse_gradient", "sparse_reg_median",
                                  "sparse_odd_constants", "direct_odd_constants",
                                  "block8_deep"])
def test_infinite_inputs(compiled, name) -> None:
    """The estimators refuse inf; the forest's own evaluation takes it, as the header does."""
    model = compiled.models[name]
    X = _infinite_events(model.forest_.n_features)
    evaluate, batch, _ = compiled.run(name, X)
    np.testing.assert_array_equal(evaluate, model.forest_.raw_score(X))
    np.testing.assert_array_equal(batch, evaluate)


def _signed_zero_events(m: int, seed: int = 6) -> np.ndarray:
    """Rows of -0.0, 0.0, the smallest subnormals and normals of both signs, the largest
    floats and NaN, mixed at random: the edges of the header's integer keys of floats."""
    edges = np.array([-0.0, 0.0, 1e-45, -1e-45, 1.1754944e-38, -1.1754944e-38, 3.4028235e38,
                      -3.4028235e38, np.nan], dtype=np.float32)
    rng = np.random.default_rng(seed)
    rows = [np.full(m, value, dtype=np.float32) for value in edges]
    rows += list(rng.choice(edges, size=(200, m)))
    return np.array(rows, dtype=np.float32)


@pytest.mark.parametrize("name", ["odd_constants", "sparse_odd_constants", "direct_odd_constants",
                                  "gradient", "block8_deep"])
def test_signed_zeros_and_subnormals(compiled, name) -> None:
    """-0.0 and 0.0 are one key (x < 0.0 and x < -0.0 false for both), subnormals keep their
    order; odd_constants has thresholds of -0.0, 0.0, +-1e-45 and the smallest normal."""
    model = compiled.models[name]
    X = _signed_zero_events(model.forest_.n_features)
    evaluate, batch, _ = compiled.run(name, X)
    np.testing.assert_array_equal(evaluate, model.forest_.raw_score(X))
    np.testing.assert_array_equal(batch, evaluate)


@pytest.mark.parametrize("name", ["gradient", "deep", "block8_reg_gradient", "sparse_gradient"])
def test_batches_of_every_size(compiled, name) -> None:
    """evaluate_batch of 0 to 130 events (partial blocks of 64 and of 8) equals evaluate."""
    model = compiled.models[name]
    X = _events(model, 130, seed=9)
    for n in (0, 1, 7, 8, 9, 63, 64, 65, 130):
        evaluate, batch, _ = compiled.run(name, X[:n])
        np.testing.assert_array_equal(batch, evaluate)
        np.testing.assert_array_equal(evaluate, _reference(model, X[:n]) if n else evaluate)


def test_against_the_naive_walk(compiled) -> None:
    """The header against hepbdt's recursive Python walk, not only its Numba kernels."""
    model = compiled.models["gradient"]
    X = np.concatenate([_events(model, 300, seed=4), _infinite_events(N_FEATURES)])
    evaluate, _, _ = compiled.run("gradient", X)
    np.testing.assert_array_equal(evaluate, predict_naive(X, model.forest_) + model.forest_.base_score)


def test_nan_goes_both_ways(compiled) -> None:
    """The NaN-trained forests send missing values left at some nodes and right at others."""
    for name in ("gradient", "reg_gradient", "deep"):
        forest = compiled.models[name].forest_
        on_nan_feature = forest.feature == 1
        assert forest.missing_left[on_nan_feature].any(), name
        assert (~forest.missing_left[on_nan_feature]).any(), name


def test_both_layouts_are_compiled(compiled) -> None:
    """Every model is checked in the dense layout and in forest_'s own nodes."""
    layouts = {name: e["layout"] for name, e in compiled.exports.items()}
    assert layouts["chains"] == "sparse"  # depth 20: hepbdt walks it node by node too
    assert all(layouts[f"sparse_{name}"] == "sparse" for name in SPARSE_COPIES)
    assert all(layouts[name] == "dense" for name in SPARSE_COPIES)
    assert "child[2k]" in compiled.header("chains") and "2p+1" in compiled.header("gradient")


def test_code_paths_are_compiled(compiled) -> None:
    """Blocks of events for dense sums and means, of 64 and of 8 events, with and without
    levels walked below the top ones; keys in an array or computed where read."""
    def blocked(name: str) -> bool:
        return "leaf_sums_block(x + start * stride" in compiled.header(name)

    assert all(blocked(name) for name in ("gradient", "adaboost", "deep", "reg_mean", "stumps"))
    assert not any(blocked(name) for name in ("reg_median", "sparse_gradient", "chains",
                                              "direct_gradient"))
    assert "constexpr int block = 64;" in compiled.header("gradient")
    assert "constexpr int block = 8;" in compiled.header("block8_deep")
    assert "next_block_slot(key + i" in compiled.header("block8_deep")  # depth 10: 7 walked
    assert "next_block_slot" not in compiled.header("gradient")  # depth 3: top levels only
    assert all("const detail::direct_keys key = {x};" in compiled.header(f"direct_{name}")
               for name in DIRECT_COPIES)
    assert "detail::make_keys(x, key);" in compiled.header("gradient")
    assert "constexpr int n_rows = 1;" in compiled.header("single_leaves")  # a key row unused
    nan_left = re.search(r"n_rows_nan_left = (\d+);", compiled.header("gradient"))
    assert nan_left is not None and int(nan_left.group(1)) > 0


def test_shapes_of_the_trees(compiled) -> None:
    """The set holds shallow and deep trees and the odd constants it claims to."""
    assert compiled.models["stumps"].forest_.max_depth == 1
    assert compiled.models["newton"].forest_.max_depth == 2
    assert compiled.models["deep"].forest_.max_depth == 10
    assert compiled.exports["deep"]["max_depth"] == 10
    f = compiled.models["odd_constants"].forest_
    cuts = f.threshold[f.feature >= 0]
    assert np.isposinf(cuts).any() and np.isneginf(cuts).any()
    with np.errstate(over="ignore"):
        assert np.isinf(f.tree_weights[1] * f.value).any()


def test_named_features_keep_the_model_order(compiled) -> None:
    """feature_names and x follow the model's input order, not the caller's columns."""
    model = compiled.models["named"]
    assert compiled.names("named") == list(model.feature_names_in_)
    import pandas as pd  # installed with the test dependencies

    X = _events(model, 400)
    frame = pd.DataFrame(X, columns=model.feature_names_in_)
    shuffled = frame[list(model.feature_names_in_)[::-1]]  # decision_function reorders by name
    evaluate, _, _ = compiled.run("named", X)
    np.testing.assert_array_equal(evaluate, model.decision_function(shuffled))


@pytest.fixture(scope="module")
def tmva_events(compiled):
    """The TMVA example ntuples' inputs (skipped without ../shared)."""
    if "tmva_class" not in compiled.models or not DATA_DIR.is_dir():
        pytest.skip("../shared/tmva and ../shared/data are not present")
    return {"tmva_class": tmva_inputs("ClassExample"), "tmva_reg": tmva_inputs("Regression")}


def test_xgboost_import(compiled) -> None:
    """A model read from XGBoost JSON (logistic loss, base score): score and probability."""
    if "xgboost" not in compiled.models:
        pytest.skip("xgboost is not installed")
    model = compiled.models["xgboost"]
    X = _events(model)
    evaluate, batch, probability = compiled.run("xgboost", X)
    np.testing.assert_array_equal(evaluate, model.decision_function(X))
    np.testing.assert_array_equal(batch, evaluate)
    assert model.forest_.extra["loss"] == "logistic" and model.forest_.base_score != 0
    assert _max_ulp(probability, model.predict_proba(X)[:, 1]) <= MAX_PROBABILITY_ULP


@pytest.mark.parametrize("name", ["tmva_class", "tmva_reg"])
def test_tmva_fixtures(compiled, tmva_events, name) -> None:
    """TMVA-written AdaBoost and AdaBoostR2 models, read with from_tmva_xml."""
    model = compiled.models[name]
    X = tmva_events[name]
    X_nan = X[:500].copy()
    X_nan[::7, 1] = np.nan
    X = np.concatenate([X, X_nan])
    evaluate, batch, probability = compiled.run(name, X)
    clean = ~np.isnan(X).any(axis=1)
    np.testing.assert_array_equal(evaluate[clean], _reference(model, X[clean]))
    np.testing.assert_array_equal(batch, evaluate)
    if name == "tmva_class":
        # a classifier read from a TMVA two-class file has no score for an event with a NaN
        # input (its Reader answers -999, its decision_function refuses one): NaN
        assert np.all(np.isnan(evaluate[~clean])) and np.all(np.isnan(probability[~clean]))
        assert compiled.names(name) == ["var1", "var2", "var3", "var4"]
        np.testing.assert_array_equal(probability[clean], model.predict_proba(X[clean])[:, 1])
    else:  # a regressor's Reader walks NaN through the trees, as the forest does
        np.testing.assert_array_equal(evaluate, model.forest_.raw_score(X))
        assert compiled.models[name].forest_.aggregation == "weighted_median"


def test_header_text(compiled) -> None:
    """Standard includes only, include guards, bounded lines, escaped names."""
    for name in compiled.models:
        text = compiled.header(name)
        includes = set(re.findall(r"^\s*#\s*include\s*(\S+)", text, flags=re.MULTILINE))
        assert includes <= STANDARD_HEADERS, (name, includes - STANDARD_HEADERS)
        assert "#pragma once" in text and "#ifndef HEPBDT_" in text
        fixed = [line for line in text.splitlines() if not line.startswith("//   ")]
        assert max(map(len, fixed)) <= 100, name  # all but the options' and features' lines
    text = compiled.header("named")
    assert '"q\\"uote\\\\"' in text and "\\?\\?=trigraph" in text
    assert '"m_jj" = "sqrt(2*pt1*pt2*(cosh(deta) - cos(dphi)))"' in text
    assert "signal = 1" in compiled.header("gradient")


def test_two_translation_units(compiled, tmp_path) -> None:
    """The header in two .cpp files of one program: one definition of each array, no
    clash of the inline functions."""
    header = compiled.folder / "bdt_gradient.hpp"
    for unit in ("a", "b"):
        (tmp_path / f"{unit}.cpp").write_text(
            f'#include "{header}"\n'
            f"double score_{unit}(const float* x) {{ return bdt_gradient::evaluate(x); }}\n"
            f"const double* values_{unit}() {{ return bdt_gradient::detail::forest<>::value; }}\n")
    (tmp_path / "main.cpp").write_text(
        "#include <cstdio>\n"
        "double score_a(const float*); double score_b(const float*);\n"
        "const double* values_a(); const double* values_b();\n"
        "int main() { const float x[5] = {0.5f, -1.0f, 0.25f, 2.0f, 0.0f};\n"
        '  std::printf("%d %.17g\\n", values_a() == values_b(), score_a(x) - score_b(x)); }\n')
    exe = tmp_path / "two_units"
    subprocess.run([_compiler(), "-std=c++11", *FLAGS, "-o", str(exe), "a.cpp", "b.cpp", "main.cpp"],
                   cwd=tmp_path, check=True, capture_output=True, timeout=300)
    done = subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["1", "0"]


def test_two_models_in_one_namespace(tmp_path) -> None:
    """Two models exported to the namespace ``bdt`` (``sig/bdt.h``, ``bkg/bdt.h``): in two
    source files each scores with its own trees (one include guard and one set of inline
    functions kept one model for both), and in one source file a call is a compile error,
    not the first model's score."""
    X, y, _ = _training_data(600, 11)
    models = {name: BDTClassifier(n_trees=4, max_depth=3, n_jobs=1, random_state=seed).fit(
        X[part], y[part]) for name, seed, part in (("sig", 1, slice(0, 300)),
                                                  ("bkg", 2, slice(300, 600)))}
    for name, model in models.items():
        (tmp_path / name).mkdir()
        to_cpp(model, tmp_path / name / "bdt.h")
        (tmp_path / f"{name}.cpp").write_text(
            f'#include "{name}/bdt.h"\n'
            f"double score_{name}(const float* x) {{ return bdt::evaluate(x); }}\n")
    x = X[:1]
    (tmp_path / "main.cpp").write_text(
        "#include <cstdio>\n"
        "double score_sig(const float*); double score_bkg(const float*);\n"
        "int main() { const float x[5] = {" + ", ".join(f"{v!r}f" for v in x[0].tolist())
        .replace("nanf", "__builtin_nanf(\"\")") + "};\n"
        '  std::printf("%.17g %.17g\\n", score_sig(x), score_bkg(x)); }\n')
    exe = tmp_path / "two_models"
    subprocess.run([_compiler(), "-std=c++11", *FLAGS, "-o", str(exe), "sig.cpp", "bkg.cpp",
                    "main.cpp"], cwd=tmp_path, check=True, capture_output=True, timeout=300)
    done = subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=60)
    scores = [float(v) for v in done.stdout.split()]
    expected = [models[name].forest_.raw_score(x)[0] for name in ("sig", "bkg")]
    assert expected[0] != expected[1] and scores == expected
    (tmp_path / "both.cpp").write_text('#include "sig/bdt.h"\n#include "bkg/bdt.h"\n'
                                       "double f(const float* x) { return bdt::evaluate(x); }\n")
    both = subprocess.run([_compiler(), "-std=c++11", "-c", "both.cpp", "-o", "both.o"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert both.returncode != 0 and "ambiguous" in both.stderr


def test_one_model_in_namespaces_of_one_guard_name(tmp_path) -> None:
    """One model exported as ``bdt`` and ``BDT`` (and ``a_b`` and ``a_b_``), both headers in
    one program: each namespace scores. The guard upper-cased the namespace and made runs
    of "_" one, so with the model's digest alone both headers had one guard and the second
    was skipped ('BDT' has not been declared); fee01d7^'s guards compiled."""
    X, y, _ = _training_data(300, 5)
    model = BDTClassifier(n_trees=3, max_depth=2, n_jobs=1, random_state=1).fit(X, y)
    names = ("bdt", "BDT", "a_b", "a_b_")
    for name in names:
        to_cpp(model, tmp_path / f"{name}.h", namespace=name)
    x = np.nan_to_num(X[:1])
    calls = ", ".join(f"{name}::evaluate(x)" for name in names)
    (tmp_path / "main.cpp").write_text(
        "".join(f'#include "{name}.h"\n' for name in names) + "#include <cstdio>\n"
        "int main() { const float x[5] = {" + ", ".join(f"{v!r}f" for v in x[0].tolist())
        + "};\n  std::printf(\"%.17g %.17g %.17g %.17g\\n\", " + calls + "); }\n")
    exe = tmp_path / "guards"
    built = subprocess.run([_compiler(), "-std=c++11", *FLAGS, "-o", str(exe), "main.cpp"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    done = subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=60)
    leaf_sum = _brute_force_sum(model.forest_, x[0])
    assert [float(v) for v in done.stdout.split()] == [leaf_sum] * 4


def _brute_force_sum(forest, x) -> float:
    """base_score + sum of tree weight x leaf value, each tree walked node by node in Python."""
    total = float(forest.base_score)
    for t in range(forest.n_trees):
        node = int(forest.tree_offsets[t])
        while forest.left[node] >= 0:
            go_left = np.float32(x[forest.feature[node]]) < forest.threshold[node]
            node = int(forest.left[node] if go_left else forest.right[node])
        total += float(forest.tree_weights[t]) * float(forest.value[node])
    return total


def test_returned_summary(compiled) -> None:
    """to_cpp's summary describes the header it wrote."""
    e = compiled.exports["gradient"]
    forest = compiled.models["gradient"].forest_
    assert (e["n_trees"], e["n_nodes"], e["namespace"]) == (forest.n_trees, forest.n_nodes,
                                                           "bdt_gradient")
    assert e["bytes"] == (compiled.folder / "bdt_gradient.hpp").stat().st_size
    assert e["functions"] == ["evaluate", "evaluate_batch", "probability"]
    assert "probability" not in compiled.exports["reg_gradient"]["functions"]


# -- refusals and file handling (no compiler needed) -----------------------------------------

@pytest.fixture(scope="module")
def small_model() -> BDTClassifier:
    """A tiny fitted classifier for the tests that compile nothing."""
    X, y, _ = _training_data(500, 7)
    return BDTClassifier(n_trees=3, max_depth=2, n_jobs=1).fit(X, y)


@pytest.mark.parametrize("bad", ["class", "2fast", "my-model", "a::b", "", "__x", "_Model",
                                 "x__y", "std", "and", "NAN", "émodel", 3])
def test_namespace_refused(small_model, tmp_path, bad) -> None:
    """Namespaces that are not valid, or reserved, are refused before writing."""
    path = tmp_path / "model.hpp"
    with pytest.raises(CppExportError, match="ASCII identifier"):
        to_cpp(small_model, path, namespace=bad)
    assert not path.exists()


@pytest.mark.parametrize("file_name, expected", [
    ("model.hpp", "model"), ("my-model.v2.hpp", "my_model"), ("2fast.h", "model_2fast"),
    ("class.hpp", "class_model"), ("__x__.hpp", "x"), ("-.hpp", "hepbdt_model"),
    ("std.hpp", "std_model")])
def test_namespace_from_the_file_name(small_model, tmp_path, file_name, expected) -> None:
    """The default namespace is a valid identifier made from the file name."""
    assert to_cpp(small_model, tmp_path / file_name)["namespace"] == expected
    assert f"namespace {expected} {{" in (tmp_path / file_name).read_text()


def test_unfitted_and_foreign_models(tmp_path) -> None:
    """Unfitted estimators and foreign objects are refused clearly."""
    with pytest.raises(NotFittedError, match="not fitted"):
        to_cpp(BDTRegressor(), tmp_path / "m.hpp")
    with pytest.raises(TypeError, match="BDTClassifier or BDTRegressor"):
        to_cpp(object(), tmp_path / "m.hpp")
    assert not any(tmp_path.iterdir())


def test_failed_export_leaves_no_file(small_model, tmp_path, monkeypatch) -> None:
    """A refused export writes nothing and leaves an existing file as it was."""
    broken = copy.deepcopy(small_model)
    node = int(np.flatnonzero(broken.forest_.feature >= 0)[0])
    broken.forest_.threshold[node] = np.nan
    with pytest.raises(CppExportError, match=f"node {node} has a NaN threshold"):
        to_cpp(broken, tmp_path / "new.hpp")
    assert not any(tmp_path.iterdir())
    kept = tmp_path / "kept.hpp"
    kept.write_text("previous")
    monkeypatch.setattr(cpp_export, "MAX_CPP_NODES", 5)
    with pytest.raises(CppExportError, match="more than the 5 that to_cpp writes.*to_onnx or to_tmva_xml"):
        to_cpp(small_model, kept)
    assert kept.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.hpp"]
    assert MAX_CPP_NODES == 5_000_000


def test_forest_without_trees(small_model, tmp_path) -> None:
    """A forest without trees is refused."""
    empty = copy.deepcopy(small_model)
    empty.forest_ = empty.forest_.truncate(0)
    with pytest.raises(CppExportError, match="no trees"):
        to_cpp(empty, tmp_path / "m.hpp")
