"""Scoring speed: hepbdt against TMVA::Reader, XGBoost, LightGBM, onnxruntime and compiled C++.

Two model shapes, each trained once on the same HIGGS-like events (28 features) and timed
on the same held-out events, every row once per round, rounds interleaved; medians of the
rounds in microseconds per event, with one thread and with all threads:

- TMVA-style: 1000 trees of depth 3, AdaBoost (TMVA's default BDT) and gradient (BDTG).
  Rows: ``TMVA::Reader`` (``tmva_apply --time``: the loop of ``EvaluateMVA`` calls only,
  one thread, as the Reader has), hepbdt's ``tmva_response`` (the Reader's number for the
  exported file), the ONNX file in onnxruntime, the C++ header compiled with ``c++ -O2``.
  The C++ header runs in one process per round: ``evaluate`` event by event, then
  ``evaluate_batch`` on all events; its size and compile time are printed once.
- XGBoost-style: 200 trees of depth 6, newton boosting against XGBoost ``hist`` and
  LightGBM (64 leaves, depth 6) trained on the same events with the same depth; each
  library's raw-score prediction from an in-memory float32 array (XGBoost
  ``inplace_predict``, LightGBM ``predict(raw_score=True)``).

The Reader rows need ROOT's pip wheel: ``TMVA_READER_PYTHON=/path/to/venv/bin/python``
(see ../shared/tmva-reader/README.md); without it they are skipped with a line saying so.

    python benchmarks/bench_predict.py [--events 100000] [--reader-events 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _data import higgs_like, machine  # noqa: E402

from hepbdt import BDTClassifier  # noqa: E402
from hepbdt.interop import tmva_response  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
TOOL = Path(os.environ.get("TMVA_APPLY", SHARED / "tmva-reader" / "tmva_apply"))
ALL = os.cpu_count() or 1

DRIVER = r"""
#include "model.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
int main(int argc, char** argv) {
    std::FILE* f = std::fopen(argv[1], "rb");
    long n = std::atol(argv[2]);
    std::vector<float> x(n * NAMESPACE::n_features);
    if (std::fread(x.data(), sizeof(float), x.size(), f) != x.size()) return 2;
    std::fclose(f);
    double sum = 0.0;
    auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) sum += NAMESPACE::evaluate(&x[i * NAMESPACE::n_features]);
    double one = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<double> out(n);
    start = std::chrono::steady_clock::now();
    NAMESPACE::evaluate_batch(x.data(), n, out.data());
    double batch = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (long i = 0; i < n; ++i) sum += out[i];
    std::printf("%.9g %.9g %.17g\n", one, batch, sum);
    return 0;
}
"""


def _seconds(fn, threads: int) -> float:
    numba.set_num_threads(threads)
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _reader_ready() -> str | None:
    """None when tmva_apply runs here, else how to enable it."""
    if not TOOL.exists():
        return f"no {TOOL}"
    done = subprocess.run(["sh", str(TOOL), "--version"], capture_output=True, text=True)
    if done.returncode != 0:
        return ("TMVA::Reader not found; set TMVA_READER_PYTHON to a python with root==0.1a12 "
                "installed (see ../shared/tmva-reader/README.md)")
    return None


def _reader_seconds(xml: Path, data: Path, folder: Path) -> float:
    done = subprocess.run(["sh", str(TOOL), "--xml", str(xml), "--input", str(data), "--trees",
                           "T", "--out", str(folder / "reader.csv"), "--time"],
                          capture_output=True, text=True, check=True)
    line = [x for x in done.stderr.splitlines() if "evaluated" in x][-1]
    return float(line.split(" in ")[1].split()[0])


def _write_tree(path: Path, X: np.ndarray, names: list[str]) -> None:
    import uproot

    with uproot.recreate(path) as file:
        file.mktree("T", {n: np.float32 for n in names}).extend(
            {n: np.ascontiguousarray(X[:, j]) for j, n in enumerate(names)})


def _cpp_runner(model, X: np.ndarray, folder: Path, tag: str):
    """A function timing the compiled header's evaluate() loop, or None without a compiler."""
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        return None
    namespace = f"bench_{tag}"
    header = folder / "model.h"
    model.save_cpp(header, namespace=namespace)
    (folder / "driver.cpp").write_text(DRIVER.replace("NAMESPACE", namespace))
    binary = folder / f"driver_{tag}"
    start = time.perf_counter()
    subprocess.run([compiler, "-O2", "-std=c++17", "-o", str(binary), str(folder / "driver.cpp")],
                   check=True, cwd=folder)
    print(f"  C++ header of {model.n_trees_} trees ({tag}): {header.stat().st_size / 1e6:.2f} MB, "
          f"compiled with its driver by c++ -O2 in {time.perf_counter() - start:.1f} s")
    data = folder / f"{tag}.f32"
    np.ascontiguousarray(X, dtype=np.float32).tofile(data)

    def run() -> tuple[float, float]:
        """Seconds for evaluate() event by event, and for evaluate_batch()."""
        out = subprocess.run([str(binary), str(data), str(X.shape[0])], capture_output=True,
                             text=True, check=True).stdout.split()
        return float(out[0]), float(out[1])
    return run


def _add_cpp(times: dict[str, list[float]], seconds: tuple[float, float], n: int) -> None:
    times.setdefault("C++ evaluate (c++ -O2), 1 thread", []).append(seconds[0] / n)
    times.setdefault("C++ evaluate_batch (c++ -O2), 1 thread", []).append(seconds[1] / n)


def _onnx_session(model, folder: Path, tag: str, threads: int):
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    path = folder / f"{tag}.onnx"
    if not path.exists():
        model.save_onnx(path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session


def tmva_rows(X_train, y_train, X_test, rounds: int, reader_events: int, folder: Path) -> None:
    """1000 trees of depth 3: the Reader against hepbdt's scorers of the same file."""
    names = [f"x{j}" for j in range(X_test.shape[1])]
    why_not = _reader_ready()
    if why_not is None:
        data = folder / "reader_input.root"
        _write_tree(data, X_test[:reader_events], names)
    for boosting in ("adaboost", "gradient"):
        model = BDTClassifier(boosting=boosting, n_trees=1000, max_depth=3, random_state=1)
        model.fit(X_train, y_train)
        xml = folder / f"{boosting}.weights.xml"
        model.save_tmva(xml)
        tmva_response(model, X_test[:1000])  # compile
        cpp = _cpp_runner(model, X_test, folder, boosting)
        sessions = {t: _onnx_session(model, folder, boosting, t) for t in (1, ALL)}
        times: dict[str, list[float]] = {}
        for _ in range(rounds):
            if why_not is None:
                times.setdefault("TMVA::Reader, 1 thread", []).append(
                    _reader_seconds(xml, data, folder) / reader_events)
            for threads in (1, ALL):
                times.setdefault(f"hepbdt tmva_response, {threads} thread(s)", []).append(
                    _seconds(lambda m=model: tmva_response(m, X_test), threads) / len(X_test))
                session = sessions[threads]
                if session is not None:
                    times.setdefault(f"onnxruntime, {threads} thread(s)", []).append(
                        _seconds(lambda s=session: s.run(["score"], {"input": X_test}), threads)
                        / len(X_test))
            if cpp is not None:
                _add_cpp(times, cpp(), len(X_test))
        _print(f"{boosting}, 1000 trees of depth 3 (TMVA convention)", times,
               "TMVA::Reader, 1 thread", "Reader / row")
        if why_not is not None:
            print(f"  (TMVA::Reader rows skipped: {why_not})")


def xgboost_rows(X_train, y_train, X_test, rounds: int, folder: Path) -> None:
    """200 trees of depth 6: hepbdt's decision_function against XGBoost and LightGBM."""
    import lightgbm
    import xgboost

    model = BDTClassifier(boosting="newton", n_trees=200, max_depth=6, random_state=1)
    model.fit(X_train, y_train)
    booster = xgboost.XGBClassifier(n_estimators=200, max_depth=6, tree_method="hist",
                                    n_jobs=ALL).fit(X_train, y_train).get_booster()
    lgbm = lightgbm.LGBMClassifier(n_estimators=200, num_leaves=64, max_depth=6, verbose=-1,
                                   n_jobs=ALL).fit(X_train, y_train).booster_
    model.decision_function(X_test[:1000])
    sessions = {t: _onnx_session(model, folder, "newton", t) for t in (1, ALL)}
    cpp = _cpp_runner(model, X_test, folder, "newton")
    times: dict[str, list[float]] = {}
    for _ in range(rounds):
        for threads in (1, ALL):
            suffix = f", {threads} thread(s)"
            booster.set_param({"nthread": threads})
            times.setdefault("XGBoost inplace_predict" + suffix, []).append(_seconds(
                lambda: booster.inplace_predict(X_test, predict_type="margin"), threads)
                / len(X_test))
            times.setdefault("hepbdt decision_function" + suffix, []).append(
                _seconds(lambda: model.decision_function(X_test), threads) / len(X_test))
            times.setdefault("LightGBM predict" + suffix, []).append(_seconds(
                lambda t=threads: lgbm.predict(X_test, raw_score=True, num_threads=t), threads)
                / len(X_test))
            session = sessions[threads]
            if session is not None:
                times.setdefault("onnxruntime" + suffix, []).append(
                    _seconds(lambda s=session: s.run(["score"], {"input": X_test}), threads)
                    / len(X_test))
        if cpp is not None:
            _add_cpp(times, cpp(), len(X_test))
    _print("200 trees of depth 6 (raw scores)", times, None, "row / XGBoost")


def _print(title: str, times: dict[str, list[float]], reference: str | None, ratio: str) -> None:
    medians = {row: statistics.median(t) * 1e6 for row, t in times.items()}
    print(f"\n{title}")
    print(f"  {'scorer':42} {'us/event':>10} {ratio:>14}")
    for row, us in medians.items():
        threads = row.rsplit(", ", 1)[-1]
        if reference is not None:
            value = medians.get(reference, float("nan")) / us
        else:
            xgb = medians.get(f"XGBoost inplace_predict, {threads}", float("nan"))
            value = us / xgb if "thread" in threads else float("nan")
        print(f"  {row:42} {us:10.3f} {value:14.2f}")


def main() -> None:
    """Train the models, time every scorer, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="events scored (default 100000)")
    parser.add_argument("--reader-events", type=int, default=20_000,
                        help="events the Reader scores (it is slow; default 20000)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    args = parser.parse_args()
    X, y, _ = higgs_like(50_000 + args.events, 28, seed=3)
    X_train, y_train, X_test = X[:50_000], y[:50_000], np.ascontiguousarray(X[50_000:])
    print(machine())
    print(f"{args.events} events x 28 features scored, models trained on 50000; medians of "
          f"{args.rounds} interleaved rounds")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tmva_rows(X_train, y_train, X_test, args.rounds, min(args.reader_events, args.events),
                  folder)
        xgboost_rows(X_train, y_train, X_test, args.rounds, folder)


if __name__ == "__main__":
    main()
