"""Limits on what a configuration may ask for: alias bombs, deep expressions, event numbers
that are not integers, resource options set by mistake, and messages in TOML's spelling."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hepbdt.analysis import ConfigError, check_inputs, load_config
from hepbdt.analysis.estimate import SECONDS_PER_EVENT_FEATURE_TREE, estimate_lines
from hepbdt.estimators import BDTClassifier, BDTRegressor, ParameterError
from hepbdt.io import BadValueError, Dataset, ExpressionError, InputError, Sample, read
from hepbdt.io.expressions import MAX_EXPRESSION_CHARS, MAX_NESTING, Expression
from hepbdt.tmva_options import MAX_POISSON_MEAN, MAX_TREES, TMVAOptionError, parse_tmva_options
from tests.faults import DATA, tiny_config
from tests.ntuples import write_rntuple, write_ttree


def _problems(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


def _bomb(n: int = 40) -> str:
    return 'a0 = "HT"\n' + "".join(f'a{i} = "a{i - 1} + a{i - 1}"\n' for i in range(1, n + 1))


def _chain(n: int) -> str:
    return 'b0 = "HT"\n' + "".join(f'b{i} = "b{i - 1} + 1"\n' for i in range(1, n + 1))


# -- aliases -------------------------------------------------------------------------------


def test_alias_bomb_is_refused_quickly_naming_the_alias(tmp_path: Path) -> None:
    start = time.perf_counter()
    message = _problems(tiny_config(tmp_path, features='["HT", "a40"]', aliases=_bomb()))
    assert time.perf_counter() - start < 5
    # a14 is the first alias whose expansion passes 100,000 characters (9 * 2**14 - 7)
    assert message.count("\n") == 0, message
    assert "[aliases] a14: expands to 147,449 characters" in message
    assert "100,000" in message


def test_unused_alias_bomb_is_refused_too(tmp_path: Path) -> None:
    message = _problems(tiny_config(tmp_path, aliases='pt1 = "Jet_pt[:, 0]"\n' + _bomb(20)))
    assert "[aliases] a14: expands to" in message


def test_moderate_aliases_expand_once_each(tmp_path: Path) -> None:
    config = load_config(tiny_config(tmp_path, features='["HT", "a10"]', aliases=_bomb(10)))
    expression = config.feature_expressions[1]
    assert len(expression) == 9 * 2**10 - 7 and expression.count("HT") == 2**10


def test_deep_alias_chain_is_refused(tmp_path: Path) -> None:
    message = _problems(tiny_config(tmp_path, features='["HT", "b150"]', aliases=_chain(150)))
    assert message.count("\n") == 0, message
    assert "[aliases] b100: nests 101 aliases deep (b100 -> b99 -> ... -> b0)" in message
    assert "more than the 100 allowed" in message
    config = load_config(tiny_config(tmp_path, features='["HT", "b60"]', aliases=_chain(60)))
    assert config.feature_expressions[1].count("+ 1") == 60


def test_alias_cycles_are_named(tmp_path: Path) -> None:
    message = _problems(tiny_config(tmp_path, aliases='pt1 = "2 * x"\nx = "y"\ny = "pt1"'))
    assert "refers to itself (pt1 -> x -> y -> pt1)" in message
    assert message.count("\n") == 0, message
    message = _problems(tiny_config(tmp_path, aliases='pt1 = "pt1 + 1"'))
    assert "[aliases] pt1: alias 'pt1' refers to itself (pt1 -> pt1)" in message


def test_expanded_expression_over_the_bound_names_its_key(tmp_path: Path) -> None:
    long_sum = " + ".join(["a13"] * 3)
    message = _problems(tiny_config(tmp_path, features=f'["HT", "{long_sum}"]',
                                    aliases=_bomb(13)))
    assert "features: expands to 221,175 characters with its aliases" in message


# -- expressions ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, words", [
    ("(" * 10000 + "x" + ")" * 10000, "nested"),
    ("-" * 100000 + "x", "characters"),
    ("1." + "0" * 100000, "more than the 100,000"),  # long, not deep: the length's refusal
    ("-" * 5000 + "x", "nested"),
    ("-" * 300 + "x", "nested"),
    ("a+" * 200000 + "a", "characters"),
    ("a+" * 40000 + "a", "nested"),
    ("sqrt(" * 250 + "x" + ")" * 250, "nested"),
    ("x[" * 300 + "0" + "]" * 300, "nested"),
])
def test_deep_or_long_expressions_are_refused(text: str, words: str) -> None:
    with pytest.raises(ExpressionError) as info:
        Expression(text, "cut")
    message = str(info.value)
    assert isinstance(info.value, InputError) and isinstance(info.value, ValueError)
    assert words in message and len(message) < 1000
    assert f"{MAX_NESTING}" in message or f"{MAX_EXPRESSION_CHARS:,}" in message


def test_expressions_within_the_bounds_work() -> None:
    x = np.arange(4.0)
    assert np.array_equal(Expression("(" * 150 + "x" + ")" * 150).evaluate({"x": x}), x)
    assert np.array_equal(Expression("-" * 150 + "x").evaluate({"x": x}), x)
    sum_of_150 = Expression(" + ".join(["x"] * 150))
    assert np.array_equal(sum_of_150.evaluate({"x": x}), 150 * x)


def test_long_text_is_shortened_in_messages() -> None:
    with pytest.raises(ExpressionError) as info:
        Expression("x + " * 20000 + "(", "weight")
    assert len(str(info.value)) < 2000


# -- event numbers -------------------------------------------------------------------------


def test_dataset_refuses_events_that_are_not_int64() -> None:
    X = np.zeros((5, 1))
    with pytest.raises(InputError) as info:
        Dataset(X, event=[0.0, 1.5, np.nan, 2**64, np.inf])
    message = str(info.value)
    assert "4 of 5" in message and "event[1]" in message and "1.5" in message
    with pytest.raises(InputError, match="event\\[0\\]"):
        Dataset(np.zeros((1, 1)), event=np.array([2**63], dtype=np.uint64))
    with pytest.raises(InputError, match="event\\[1\\]"):
        Dataset(np.zeros((2, 1)), event=np.array([1, 2**70], dtype=object))
    big = 2**62 + 1
    assert Dataset(np.zeros((3, 1)), event=[1.0, -4.0, 9.0]).event.tolist() == [1, -4, 9]
    assert Dataset(np.zeros((1, 1)), event=np.array([big], dtype=np.uint64)).event[0] == big
    assert Dataset(np.zeros((1, 1)), event=[True]).event[0] == 1


@pytest.mark.parametrize("event, bad", [("HT / 0 * 0", "nan"), ("event + 0.5", "1000001.5"),
                                        ("HT * 1e30", "e+")])
def test_read_refuses_event_expressions_that_are_not_integers(event: str, bad: str) -> None:
    sample = Sample("signal", DATA / "signal.root", tree="Events", label=1)
    with pytest.raises(BadValueError) as info:
        read(sample, ["HT"], event=event)
    message = str(info.value)
    assert "signal.root" in message and "'Events'" in message and repr(event) in message
    assert "event(s) of the 25000 read from entries 0 to 24999" in message
    assert "the first, entry 0, is" in message and bad in message


def test_read_accepts_integral_floats_as_events() -> None:
    sample = Sample("signal", DATA / "signal.root", tree="Events", label=1)
    exact = read(sample, ["HT"], event="event")
    floats = read(sample, ["HT"], event="event * 1.0")
    assert floats.event.dtype == np.int64 and np.array_equal(exact.event, floats.event)


# -- resource options ----------------------------------------------------------------------


@pytest.mark.parametrize("params, name", [
    ({"n_trees": 2**63 - 1}, "n_trees"), ({"n_trees": MAX_TREES + 1}, "n_trees"),
    ({"early_stopping_rounds": 10**9}, "early_stopping_rounds"),
    ({"n_iter_no_change": 10**9}, "n_iter_no_change"),
    ({"n_iter_no_change": 2.5}, "n_iter_no_change"),
    ({"random_state": -1}, "random_state"), ({"random_state": 2**64}, "random_state"),
    ({"n_cuts": 10**9}, "n_cuts"),
    # a Poisson mean of 1e20 met numpy's bare "lam value too large"; of 1e9, weights of 1e30
    # times the counts overflowed float32 to inf and the fit returned a constant model
    ({"subsample": 1e20, "subsample_mode": "poisson"}, "subsample"),
    ({"subsample": 1e9, "subsample_mode": "poisson"}, "subsample"),
])
def test_estimator_bounds(params: dict, name: str) -> None:
    for cls in (BDTClassifier, BDTRegressor):
        with pytest.raises(ParameterError) as info:
            cls(**params).check_params()
        assert info.value.param == name and name in str(info.value)
    BDTClassifier(n_trees=MAX_TREES, random_state=2**32, early_stopping_rounds=5).check_params()
    BDTClassifier(subsample=MAX_POISSON_MEAN, subsample_mode="poisson").check_params()


def test_poisson_mean_is_bounded_where_weights_times_counts_stay_in_float32() -> None:
    # the largest training weight times a count of the largest mean: within float32
    assert 1e30 * (MAX_POISSON_MEAN + 10 * MAX_POISSON_MEAN**0.5) < np.finfo(np.float32).max
    with pytest.raises(ParameterError, match=r"in \(0, 1e\+06\]"):
        BDTClassifier(subsample=2e6, subsample_mode="poisson").check_params()
    with pytest.raises(TMVAOptionError, match=r"BaggedSampleFraction=1e\+20.*\(0, 1e\+06\]"):
        parse_tmva_options("BoostType=Bagging:BaggedSampleFraction=1e20")
    assert parse_tmva_options("BoostType=Bagging:BaggedSampleFraction=2")["subsample"] == 2.0


def test_tmva_ntrees_is_bounded_and_written_in_digits() -> None:
    # TMVA reads an integer option up to its first non-digit (NTrees=1e3 trains 1 tree
    # there): any form but digits is refused, not read as 1000 nor as 1
    with pytest.raises(TMVAOptionError, match=r"NTrees.*\[1, 100000\]"):
        parse_tmva_options("NTrees=100000000000000000000000")
    for text in ("1e23", "1.5", "1e3", "850.0"):
        with pytest.raises(TMVAOptionError, match="expected an integer written in digits"):
            parse_tmva_options(f"NTrees={text}")
    assert parse_tmva_options("NTrees=850")["n_trees"] == 850
    with pytest.raises(TMVAOptionError, match="expected a number"):
        parse_tmva_options("NTrees=many")


@pytest.mark.parametrize("kwargs, expected", [
    ({"method": "n_trees = 9223372036854775807"}, r"[method] n_trees: n_trees=9223372036854775807"
     " is not valid; expected 'auto' or an integer in [1, 100000]"),
    ({"method": 'tmva_options = "NTrees=100000000000000000000000:MaxDepth=2"'},
     "[method] tmva_options: TMVA option NTrees=100000000000000000000000"),
    ({"split": "kfold = 100000"}, "[split] kfold: 100000 folds: k-fold needs k >= 2 and "
     "k <= 100"),
    ({"split": "kfold = 1"}, "[split] kfold: 1 folds: k-fold needs k >= 2 and k <= 100"),
    ({"split": "seed = -1"}, "[split] seed: -1 is not a seed; expected an integer >= 0"),
    ({"method": "n_trees = 3\nrandom_state = -1"}, "[method] random_state: random_state=-1"),
    ({"method": "n_trees = 3\nearly_stopping_rounds = 1000000000"},
     "[method] early_stopping_rounds:"),
    ({"extra": "permutation_repeats = 1000000000"}, "[output] permutation_repeats: must be"),
])
def test_config_bounds(tmp_path: Path, kwargs: dict, expected: str) -> None:
    message = _problems(tiny_config(tmp_path, **kwargs))
    assert expected in message and message.count("\n") == 0, message


def test_estimate_lines(tmp_path: Path) -> None:
    # 50,000 entries, 99 x 50,000 events trained, 3 features, 100,000 trees of depth 10:
    # about 4 hours at the measured cost
    config = load_config(tiny_config(tmp_path, method="n_trees = 100000\nmax_depth = 10",
                                     split="kfold = 100"))
    check_inputs(config)
    lines = estimate_lines(config, available_bytes=10**12)
    assert "up to 50,000 events (entries before cuts) x 3 features x 100,000 trees" in lines[0]
    assert any(line.startswith("warning:") and "1 hour" in line for line in lines), lines
    small = estimate_lines(load_config(tiny_config(tmp_path)), available_bytes=10**12)
    assert len(small) == 1 and "warning" not in small[0]
    tight = estimate_lines(load_config(tiny_config(tmp_path)), available_bytes=10**6)
    assert any(line.startswith("warning:") and "memory" in line for line in tight), tight
    kfold = estimate_lines(load_config(tiny_config(tmp_path, split="kfold = 5")))
    assert "5 folds" in kfold[0] and "split" not in kfold[0]
    assert 1e-11 < SECONDS_PER_EVENT_FEATURE_TREE < 1e-7
    assert "trees (depth 2)" in small[0]
    leafwise = estimate_lines(load_config(tiny_config(tmp_path, method="max_leaves = 64")))
    assert "up to 2,000 trees (64 leaves, depth <= 5, n_trees=auto)" in leafwise[0], leafwise


def test_estimate_counts_without_reading_and_survives_missing_files(tmp_path: Path) -> None:
    config = load_config(tiny_config(tmp_path))
    config.samples[0].files = [str(tmp_path / "gone.root")]
    lines = estimate_lines(config)
    assert lines and "events" in lines[0]
    from hepbdt.analysis import estimate as est

    config.samples[1].files = [str(tmp_path / "gone too.root")]
    assert est._read_sizes(config) == (0, 0)  # no entries, nothing decompressed


def test_a_read_counts_the_branches_of_every_expression_and_the_event(tmp_path: Path) -> None:
    """The read's unit counts the branches that the features (aliases expanded), the weight
    and the event number (``event``, set for all samples) use."""
    from hepbdt.analysis import estimate as est

    config = load_config(tiny_config(tmp_path))
    assert est._branch_names(config, config.make_samples()[0]) == {
        "HT", "MET_pt", "Jet_pt", "genWeight", "xsec", "lumi", "sumGenWeight", "event"}


@pytest.mark.parametrize(("n_bytes", "text"), [
    (0, "0 bytes"), (1, "1 byte"), (2, "2 bytes"), (999, "999 bytes"), (1_000, "1.0 kB"),
    (1_500, "1.5 kB"), (10**6, "1.0 MB"), (2_345_678, "2.3 MB"), (10**9, "1.0 GB"),
    (1.5e12, "1,500.0 GB"),
    # what would round to 1,000 of a unit is shown in the next: 999.95 MB read "1,000.0 MB"
    (999.6, "1.0 kB"), (999_949, "999.9 kB"), (999_999, "1.0 MB"), (999_950_000, "1.0 GB"),
    (999_949_999, "999.9 MB")])
def test_size_text(n_bytes: float, text: str) -> None:
    from hepbdt.analysis.estimate import _size

    assert _size(n_bytes) == text


# -- messages in TOML's spelling ------------------------------------------------------------


def test_sample_path_that_is_a_directory_or_fifo(tmp_path: Path) -> None:
    folder = tmp_path / "ntuples.root"
    folder.mkdir()
    sample = Sample("s", folder, tree="Events", label=1)
    with pytest.raises(InputError, match="is a directory, not a ROOT file"):
        read(sample, ["HT"])
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.root"
        os.mkfifo(fifo)
        with pytest.raises(InputError, match="is not a regular file"):
            read(Sample("s", fifo, tree="Events", label=1), ["HT"])


def test_config_path_that_is_a_directory(tmp_path: Path) -> None:
    folder = tmp_path / "a.toml"
    folder.mkdir()
    assert "is a directory, not a configuration file" in _problems(folder)


def test_inf_message_gives_the_toml_spelling() -> None:
    sample = Sample("signal", DATA / "signal.root", tree="Events", label=1)
    with pytest.raises(BadValueError) as info:
        read(sample, ["1 / (HT - HT)"])
    message = str(info.value)
    assert "inf_as_missing = true" in message and "inf_as_missing=True" in message


def _traced_training(path: Path) -> tuple[Any, int]:
    """The configuration at ``path`` and the peak that ``hepbdt train`` of it allocates
    (``tracemalloc``), compiled and imported first outside the measurement: every kernel
    (``hepbdt.warmup``: the few events of the preselection below take none of the paths of
    large fits, whose compilation with an empty cache was traced, 87 MB against the
    flatness estimate's 74), then a training of the events of ``x0 > 2.5``."""
    import tracemalloc

    import hepbdt
    from hepbdt.analysis.workflow import train

    hepbdt.warmup()
    warm = path.with_name("warm.toml")
    warm.write_text('preselection = "x0 > 2.5"\n' + path.read_text())
    train(load_config(warm), progress=False)
    config = load_config(path)
    tracemalloc.start()
    train(config, progress=False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return config, peak


@pytest.mark.slow
@pytest.mark.parametrize("method,binned,outputs,split", [
    ('n_trees = "auto"\nn_iter_no_change = 1\ntol = 1e9\nmax_depth = 3', False, False, None),
    ("n_trees = 5\nmax_depth = 3", False, False, None),
    ("n_trees = 5\nmax_depth = 3", True, False, None),
    ("n_trees = 5\nmax_depth = 3", True, True, None),
    # the float outputs and k-fold's training rows were not counted, or only as a maximum
    ("n_trees = 5\nmax_depth = 3", False, True, None),
    ("n_trees = 3\nmax_depth = 3", False, False, "kfold = 5")])  # outputs: the case above
def test_memory_estimate_bounds_what_train_allocates(tmp_path: Path, method: str, binned: bool,
                                                     outputs: bool, split: str | None) -> None:
    """``--check``'s memory figure (and the ``memory =`` refusal) is an upper bound: what
    ``hepbdt train`` allocates at its peak (``tracemalloc``: reading, splitting, fitting,
    writing the score trees, and with ``outputs`` the report and figures) stays below it,
    and not far below (within 2x), for the float and the binned reads."""

    from hepbdt.analysis.estimate import _correlation_bytes, estimate

    rng = np.random.default_rng(0)
    # binned with outputs: few events, where the correlation figure's blocks are the peak
    n, m = (200_000, 12) if not outputs else (50_000 if binned else 100_000, 28)
    for name, shift in (("s", 0.3), ("b", 0.0)):  # TTrees of one basket a branch
        write_ttree(tmp_path / f"{name}.root", "t",
                    {**{f"x{j}": (rng.normal(size=n) + shift).astype(np.float32)
                        for j in range(m)},
                     "event": np.arange(n, dtype=np.int64) + (n if name == "b" else 0)})
    (tmp_path / "a.toml").write_text(f"""
binned = {str(binned).lower()}
title = "memory"
tree = "t"
{'event = "event"' if split else ""}
features = {[f"x{j}" for j in range(m)]}
[samples.signal]
files = "{tmp_path / 's.root'}"
label = "signal"
[samples.bkg]
files = "{tmp_path / 'b.root'}"
label = "background"
[split]
{split or "train_fraction = 0.9"}
[method]
{method}
[output]
directory = "{tmp_path / 'out'}"
report = {str(outputs).lower()}
figures = {str(outputs).lower()}
permutation_repeats = 1
""")
    config, peak = _traced_training(tmp_path / "a.toml")
    e = estimate(config)
    need = e.binned_bytes if binned else e.bytes
    assert e.binned == binned
    # the correlation figure's blocks are counted at 48 bytes a value, as with columns of
    # missing values; these have none, 33 (2.04x once the fits held less, 2026-12-05)
    spare = _correlation_bytes(e.events, m) * 15 / 48 if outputs else 0
    assert peak < need < 2 * peak + spare, (peak, need)


@pytest.mark.slow
def test_memory_estimate_bounds_a_read_of_one_cluster_rntuples(tmp_path: Path) -> None:
    """A read decompresses a whole RNTuple cluster of the branches it needs (uproot writes a
    dict of arrays as one cluster): with a weight of twenty float64 branches and two float
    features, the read's peak is those clusters, not the training's copies; the estimate
    counts them from the files' page lists."""

    from hepbdt.analysis.estimate import estimate

    rng = np.random.default_rng(0)
    n, extra = 200_000, 20
    for name, shift in (("s", 0.3), ("b", 0.0)):
        write_rntuple(tmp_path / f"{name}.root", "t",
                      {"x0": (rng.normal(size=n) + shift).astype(np.float32),
                       "x1": rng.normal(size=n).astype(np.float32),
                       **{f"w{j}": rng.uniform(1, 2, n) for j in range(extra)}})
    weight = " + ".join(f"w{j}" for j in range(extra))
    (tmp_path / "a.toml").write_text(f"""
title = "memory"
tree = "t"
weight = "{weight}"
features = ["x0", "x1"]
[samples.signal]
files = "{tmp_path / 's.root'}"
label = "signal"
[samples.bkg]
files = "{tmp_path / 'b.root'}"
label = "background"
[method]
n_trees = 3
max_depth = 3
[output]
directory = "{tmp_path / 'out'}"
report = false
figures = false
""")
    config, peak = _traced_training(tmp_path / "a.toml")
    need = estimate(config).bytes
    assert peak < need < 2 * peak, (peak, need)


def two_feature_training_memory(tmp_path: Path, method: str, *,
                                shift_x1: bool = False) -> tuple[int, int]:
    """The peak that ``hepbdt train`` allocates for two samples of 200,000 events x two
    features (x0 shifted in the signal; x1 too with ``shift_x1``) with ``[method]``
    ``method`` (depth 3) and no report or figures, and ``--check``'s memory figure."""
    from hepbdt.analysis.estimate import estimate

    rng = np.random.default_rng(0)
    n = 200_000
    for name, shift in (("s", 0.3), ("b", 0.0)):
        write_ttree(tmp_path / f"{name}.root", "t",
                    {"x0": (rng.normal(size=n) + shift).astype(np.float32),
                     "x1": (rng.normal(size=n) + (shift if shift_x1 else 0.0))
                     .astype(np.float32)})
    (tmp_path / "a.toml").write_text(f"""
title = "memory"
tree = "t"
features = ["x0", "x1"]
[samples.signal]
files = "{tmp_path / 's.root'}"
label = "signal"
[samples.bkg]
files = "{tmp_path / 'b.root'}"
label = "background"
[split]
train_fraction = 0.9
[method]
{method}
max_depth = 3
[output]
directory = "{tmp_path / 'out'}"
report = false
figures = false
""")
    config, peak = _traced_training(tmp_path / "a.toml")
    return peak, estimate(config).bytes


@pytest.mark.slow
@pytest.mark.parametrize("method", [
    'boosting = "gradient"\ndecorrelation = "flatness"',
    'boosting = "adaboost"\ndecorrelation = "uboost"'])
def test_memory_estimate_bounds_a_decorrelated_training(tmp_path: Path, method: str) -> None:
    """Mass decorrelation holds more a fit than its booster alone (the flatness loss's
    variables, float64 weights, cells and gradient term): with two features a flatness
    training of 400,000 events allocated 55.8 MB where the estimate said 48.8 MB, which
    `memory =` would have let pass (audit FX's note)."""

    peak, need = two_feature_training_memory(tmp_path, method + '\ndecorrelate = ["x1"]\n'
                                             "decorrelation_strength = 1.0\nn_trees = 5")
    assert peak < need < 2 * peak, (peak, need)


@pytest.mark.slow
def test_memory_estimate_bounds_a_multiclass_training_without_a_report(tmp_path: Path) -> None:
    """Without a report or figures the outputs were not counted: the summary's per-class
    probabilities and one-against-rest sorts took 3 classes of 140,000 events x 4
    features to 95.1 MB at the peak, where the estimate said 89.6 MB."""

    from hepbdt.analysis.estimate import estimate

    rng = np.random.default_rng(0)
    n, m = 140_000, 4
    tables = ""
    for k, name in enumerate("abc"):
        write_ttree(tmp_path / f"{name}.root", "t",
                    {f"x{j}": (rng.normal(size=n) + 0.3 * k).astype(np.float32)
                     for j in range(m)})
        tables += f'[samples.{name}]\nfiles = "{tmp_path / (name + ".root")}"\nlabel = "{name}"\n'
    (tmp_path / "a.toml").write_text(f"""
title = "memory"
tree = "t"
features = {[f"x{j}" for j in range(m)]}
{tables}
[split]
train_fraction = 0.9
[method]
n_trees = 5
max_depth = 3
[output]
directory = "{tmp_path / 'out'}"
report = false
figures = false
""")
    config, peak = _traced_training(tmp_path / "a.toml")
    need = estimate(config).bytes
    assert peak < need < 2 * peak, (peak, need)


@pytest.mark.slow
def test_multiclass_binned_memory_estimate_bounds_what_train_allocates(tmp_path: Path) -> None:
    """A binned multi-class training with the report and figures: its outputs hold each
    extra class's probabilities and sorts, which the binned estimate left out (3 x 40,000
    events x 16 features: 83.8 MB at the peak, 79.6 MB estimated)."""

    from hepbdt.analysis.estimate import estimate

    rng = np.random.default_rng(0)
    n, m, names = 40_000, 16, ("a", "b", "c")
    for k, name in enumerate(names):
        write_ttree(tmp_path / f"{name}.root", "t",
                    {f"x{j}": (rng.normal(size=n) + 0.3 * k * (j % 3 == 0)).astype(np.float32)
                     for j in range(m)})
    samples = "".join(f'[samples.{name}]\nfiles = "{tmp_path / (name + ".root")}"\n'
                      f'label = "{name}"\n' for name in names)
    text = (f'binned = true\ntitle = "classes"\ntree = "t"\n'
            f'features = {[f"x{j}" for j in range(m)]}\n{samples}'
            "[split]\ntrain_fraction = 0.5\n[method]\nn_trees = 3\nmax_depth = 3\n"
            f'[output]\ndirectory = "{tmp_path / "out"}"\nreport = true\nfigures = true\n'
            "permutation_repeats = 1\n")
    (tmp_path / "a.toml").write_text(text)
    config, peak = _traced_training(tmp_path / "a.toml")
    need = estimate(config).binned_bytes
    assert peak < need < 2 * peak, (peak, need)


# -- the estimate's terms, by hand (audit GU) -----------------------------------------------

MILLION = 1_000_000
_TWO = '["HT", "MET_pt"]'
_QCD = f'[samples.qcd]\nfiles = "{DATA / "background_qcd.root"}"\nlabel = "qcd"'
_SIXTY = str([f"HT + {j}" for j in range(60)]).replace("'", '"')


def _estimate_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unit: int = 0,
                 sets: tuple[str, ...] = (), events: int = MILLION,
                 available_bytes: int = 10**15, **options: str) -> Any:
    """The estimate of a tiny configuration (train_fraction 0.5, 3 trees of depth 2) as if
    its trees held ``events`` entries (a million) and a read decompressed ``unit`` bytes at
    its peak."""
    from hepbdt.analysis import estimate as est

    monkeypatch.setattr(est, "_read_sizes", lambda config: (events, unit))
    return est.estimate(load_config(tiny_config(tmp_path, **options), list(sets)),
                        available_bytes=available_bytes)


# Per event of the documented terms (analysis.estimate): the float fit's peak, features x
# (4 a value x 2 copies + 2 codes) + 18 x 2 copies + the fit's own, plus 8 bytes a value of
# the 200,000 events the edges are fitted on; the binned fit's, features x 2 codes x 3 +
# 36 + the fit's, plus the edge sketch's 400,000 events x (features x 8 + 16); the outputs,
# (features x 4 + 18) x 2 (float) or (features x 2 + 18) x 2 (binned) + 64, 128 a class
# beyond the first, 32 more a class in the fit; the correlation blocks, 65,536 x 48 a feature.
@pytest.mark.parametrize(("options", "float_bytes", "binned_bytes"), [
    ({"features": _TWO},  # gradient: 58 bytes an event of fit (outputs 116 and 108)
     114 * MILLION + 200_000 * 2 * 8, 108 * MILLION + 400_000 * 32),
    ({"features": _TWO, "method": 'boosting = "adaboost"\nn_trees = 3\nmax_depth = 2'},
     176 * MILLION + 200_000 * 2 * 8, 168 * MILLION + 400_000 * 32),  # 120 of fit
    # flatness: 56 + 8 a variable beside the fit, the variable one more column
    ({"method": 'decorrelation = "flatness"\ndecorrelate = ["pt1"]\nn_trees = 3',
      "features": _TWO}, 188 * MILLION + 200_000 * 3 * 8, None),
    ({"method": 'decorrelation = "flatness"\ndecorrelate = ["pt1"]\nn_trees = 3\n'
               "decorrelation_strength = 0.0", "features": _TWO},  # none at strength 0
     124 * MILLION + 200_000 * 3 * 8, None),
    ({"method": 'boosting = "adaboost"\ndecorrelation = "uboost"\ndecorrelate = ["pt1"]\n'
               "n_trees = 3", "features": _TWO},  # uBoost: 32 + 8 a variable
     226 * MILLION + 200_000 * 3 * 8, None),
    # three classes: the summary's 64 + 2 x 128 beyond (8 + 18) x 2; 60 features: the fit's
    # 60 x 10 + 36 + 58 + 2 x 32, above the summary's (60 x 4 + 18) x 2 + 320
    ({"features": _TWO, "extra": _QCD}, 372 * MILLION, None),
    ({"features": _SIXTY, "extra": _QCD}, 758 * MILLION + 200_000 * 60 * 8, None),
    # k-fold (2 folds: every event trained once): its training rows, 64 + 2 x 32 + 4 a feature
    ({"features": _TWO, "extra": _QCD, "split": "kfold = 2"}, 508 * MILLION, None),
    # two classes, k-fold: training rows of 64 + 2 x 4, beside (8 + 18) x 2 + 64
    ({"features": _TWO, "split": "kfold = 2"}, 188 * MILLION, None),
    # the float report without figures: 2 x 4 + 64 a row and the correlation blocks
    ({"features": _TWO, "sets": ("output.report=true",)}, 124 * MILLION + 65_536 * 2 * 48,
     None),
    # two decorrelation variables: 56 + 2 x 8 beside the fit, two columns more
    ({"method": 'decorrelation = "flatness"\ndecorrelate = ["pt1", "MET_phi"]\nn_trees = 3',
      "features": _TWO}, 206 * MILLION + 200_000 * 4 * 8, None),
    # a DDT map holds no per-event state in the fit (its variable is a feature)
    ({"method": 'decorrelation_map = "ddt"\ndecorrelate = ["MET_pt"]\nn_trees = 3',
      "features": _TWO}, 114 * MILLION + 200_000 * 2 * 8, None),
    # binned with the report: 8 bytes a value for three classes, the correlation blocks
    ({"features": _TWO, "extra": _QCD, "sets": ("binned=true", "output.report=true")}, None,
     (44 + 2 * 8 + 64 + 256) * MILLION + 65_536 * 2 * 48 + 400_000 * 32),
])
def test_estimate_is_the_sum_of_its_documented_terms(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     options: dict, float_bytes: int | None,
                                                     binned_bytes: int | None) -> None:
    e = _estimate_of(tmp_path, monkeypatch, **options)
    if float_bytes is not None:
        assert e.bytes == float_bytes
    if binned_bytes is not None:
        assert e.binned_bytes == binned_bytes


def test_estimate_of_time_and_of_the_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Training time: 6.5e-9 s x 500,000 events trained x 2 features x 3 trees x (9 + depth
    2) / 12; a read's unit is held beside the arrays it fills (26 bytes an event as floats,
    20 binned)."""
    e = _estimate_of(tmp_path, monkeypatch, features=_TWO)
    assert e.seconds == pytest.approx(6.5e-9 * 500_000 * 2 * 3 * 11 / 12, rel=1e-12)
    e = _estimate_of(tmp_path, monkeypatch, unit=10**9, features=_TWO)
    assert (e.bytes, e.binned_bytes) == (26 * MILLION + 10**9, 20 * MILLION + 10**9)



def test_estimate_counts_the_held_out_copy_of_each_k_fold_fit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """n_trees="auto" with kfold = 2 on 10,000 events x 60 features: a fit trains on half
    of them and copies validation_fraction (0.2) of those, 4 bytes a value: 60 x (4 x (2 +
    0.2 x 0.5) + 2) + 36 + 58 an event, plus the edges' 10,000 x 60 x 8 (above the outputs'
    (240 + 18) x 2 + 64 + 4 x 60 + 64 = 884 an event)."""
    method = 'n_trees = "auto"\nvalidation_fraction = 0.2\nmax_depth = 2'
    e = _estimate_of(tmp_path, monkeypatch, events=10_000, features=_SIXTY, split="kfold = 2",
                     method=method)
    assert e.bytes == pytest.approx(10_000 * (60 * 10.4 + 94 + 480), abs=1)
    # 1,000 events: a fit of 500 holds none out (fewer than AUTO_TREES_FROM), 60 x 10 + 94
    e = _estimate_of(tmp_path, monkeypatch, events=1_000, features=_SIXTY, split="kfold = 2",
                     method=method)
    assert e.bytes == pytest.approx(1_000 * (60 * 10 + 94 + 480), abs=1)


def test_k_fold_estimate_counts_the_trees_one_fit_grows(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """n_trees="auto" on 600 events with kfold = 5: no fit trains more than the 600 events,
    on which "auto" grows 100 trees; the estimate counted the 2,400 events of all folds,
    said "up to 2,000 trees" and 20 times the time (0.057 s against 0.0029)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2)).astype(np.float32)
    grown = BDTClassifier(n_trees="auto", max_depth=2).fit(X, X[:, 0] > 0).n_trees_
    e = _estimate_of(tmp_path, monkeypatch, events=600, features=_TWO, split="kfold = 5",
                     method='n_trees = "auto"\nmax_depth = 2')
    assert e.trees == grown == 100
    assert e.seconds == pytest.approx(6.5e-9 * 2_400 * 2 * grown * 11 / 12, rel=1e-12)


_TEN = str([f"HT + {j}" for j in range(10)]).replace("'", '"')
# 10 features: the float fit 10 x 10 + 36 + 58 a million events and the edges' 200,000 x 80;
# binned 10 x 6 + 94 and the sketch's 400,000 x (80 + 16)
_TEN_FLOAT, _TEN_BINNED = 194 * MILLION + 16_000_000, 154 * MILLION + 38_400_000


def test_auto_reads_binned_when_the_float_path_needs_more_than_half(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """binned = "auto" reads binned when the float estimate is more than half the memory
    (not at exactly half) and the binned one is less."""
    for available, binned in ((2 * _TEN_FLOAT, False), (2 * _TEN_FLOAT - 1, True)):
        e = _estimate_of(tmp_path, monkeypatch, features=_TEN, sets=("binned='auto'",),
                         available_bytes=available)
        assert (e.bytes, e.binned_bytes, e.binned) == (_TEN_FLOAT, _TEN_BINNED, binned)


def test_memory_refuses_only_an_estimate_beyond_it(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``memory =`` lets an estimate of exactly the memory stated pass, and refuses one byte
    less, naming the need: in bytes where the two sizes would read the same figure."""
    from hepbdt.analysis import estimate as est

    monkeypatch.setattr(est, "_read_sizes", lambda config: (MILLION, 0))
    path = tiny_config(tmp_path, features=_TEN)
    est.check_memory(load_config(path, [f"memory={_TEN_FLOAT}"]))
    with pytest.raises(ConfigError, match=r"needs about 210,000,000 bytes, more than the "
                       r"209,999,999 bytes stated"):
        est.check_memory(load_config(path, [f"memory={_TEN_FLOAT - 1}"]))
    with pytest.raises(ConfigError, match=r"needs about 210\.0 MB, more than the 200\.0 MB"):
        est.check_memory(load_config(path, ["memory=200000000"]))


def test_estimate_lines_give_the_path_read_and_warn_beyond_the_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The line gives the figure of the path read (float 210.0 MB, binned 192.4 MB, by the
    terms above) and the memory it is held against, stated or available; the warning comes
    only when that figure is more than the memory."""
    from hepbdt.analysis import estimate as est

    monkeypatch.setattr(est, "_read_sizes", lambda config: (MILLION, 0))
    path = tiny_config(tmp_path, features=_TEN)
    lines = est.estimate_lines(load_config(path), available_bytes=_TEN_FLOAT)
    assert lines[0].endswith("of training and 210.0 MB of memory (available: 210.0 MB)")
    assert len(lines) == 1, lines
    lines = est.estimate_lines(load_config(path), available_bytes=_TEN_FLOAT - 1)
    assert lines[1].startswith("warning: training may need about 210.0 MB of memory"), lines
    lines = est.estimate_lines(load_config(path, ["binned=true"]), available_bytes=_TEN_BINNED)
    assert lines == [lines[0]] and lines[0].endswith(
        "192.4 MB of memory (binned) (available: 192.4 MB)"), lines
    lines = est.estimate_lines(load_config(path, ["binned=true"]),
                               available_bytes=_TEN_BINNED - 1)
    assert "about 192.4 MB of memory, more than the 192.4 MB available" in lines[1], lines
    stated = est.estimate_lines(load_config(path, [f"memory={_TEN_FLOAT}"]))
    assert stated[0].endswith("210.0 MB of memory (stated: 210.0 MB)"), stated


@pytest.mark.parametrize(("seconds", "text"), [
    (0.5, "0.5 s"), (59, "59 s"), (60, "1 min"), (150, "2 min"), (3599, "60 min"),
    (3600, "1.0 hours"), (5400, "1.5 hours"), (48 * 3600 - 1, "48.0 hours"),
    (48 * 3600, "2 days"), (1_000 * 86_400, "1,000 days")])
def test_duration_text(seconds: float, text: str) -> None:
    from hepbdt.analysis.estimate import _duration

    assert _duration(seconds) == text


def test_time_warning_beyond_one_hour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warning comes with a training of more than an hour (3600 s), not less."""
    from hepbdt.analysis import estimate as est

    monkeypatch.setattr(est, "_read_sizes", lambda config: (MILLION, 0))
    # 6.5e-9 s x 500,000 events x 60 features x n trees x (9 + 2) / 12: 3575 and 3611 s
    for trees, warned in ((20_000, False), (20_200, True)):
        assert (6.5e-9 * 500_000 * 60 * trees * 11 / 12 > 3600) is warned
        lines = est.estimate_lines(load_config(tiny_config(
            tmp_path, features=_SIXTY, method=f"n_trees = {trees}\nmax_depth = 2")), 10**15)
        assert any("1 hour" in line for line in lines) is warned, lines


_READ_EVENTS, _WEIGHT_FIELDS = 50_000, 40


def _weighted_read_config(tmp_path: Path, write: Any) -> Any:
    """Two samples of ``_READ_EVENTS`` events in files that ``write(path, tree, columns)``
    makes, two float32 features and a weight summing forty float64 columns: a read whose
    branches are mostly the weight's."""
    rng = np.random.default_rng(0)
    for name, shift in (("s", 0.3), ("b", 0.0)):
        write(tmp_path / f"{name}.root", "t",
              {"x0": (rng.normal(size=_READ_EVENTS) + shift).astype(np.float32),
               "x1": rng.normal(size=_READ_EVENTS).astype(np.float32),
               **{f"w{j}": rng.uniform(1, 2, _READ_EVENTS) for j in range(_WEIGHT_FIELDS)}})
    samples = "".join(f'[samples.{name}]\nfiles = "{tmp_path / (name + ".root")}"\n'
                      f'label = "{label}"\n' for name, label in (("s", "sig"), ("b", "bkg")))
    weight = " + ".join(f"w{j}" for j in range(_WEIGHT_FIELDS))
    (tmp_path / "a.toml").write_text(
        f'title = "read"\ntree = "t"\nweight = "{weight}"\nfeatures = ["x0", "x1"]\n'
        f"{samples}[method]\nn_trees = 3\n[output]\nreport = false\nfigures = false\n")
    return load_config(tmp_path / "a.toml")


def _traced_read_peak(config: Any) -> int:
    """The bytes ``read`` of the configuration's samples allocates at its peak
    (``tracemalloc``), after a first read that imports and compiles."""
    import tracemalloc

    read(config.make_samples(), config.feature_expressions)
    tracemalloc.start()
    read(config.make_samples(), config.feature_expressions)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_estimate_bounds_a_read_that_decompresses_one_cluster(tmp_path: Path) -> None:
    """A read of one-cluster RNTuples whose weight sums forty float64 fields: the estimate
    counts 1.5 times the cluster's fields used (the bytes of the arrays written, 50,000 x
    (40 x 8 + 2 x 4) a file), and so bounds what ``read`` allocates (``tracemalloc``:
    19.8 MB, where the estimate without the cluster said 12.8 MB)."""
    from hepbdt.analysis import estimate as est

    config = _weighted_read_config(tmp_path, write_rntuple)
    n = _READ_EVENTS
    assert est._read_sizes(config) == (2 * n, int(1.5 * n * (_WEIGHT_FIELDS * 8 + 2 * 4)))
    peak = _traced_read_peak(config)
    assert peak < est.estimate(config).bytes, peak


def test_estimate_bounds_a_read_of_ttree_baskets_and_its_chunks(tmp_path: Path) -> None:
    """The TTree twin: two trees of 50,000 entries written in ten baskets of 5,000 (42
    branches, 1.64 MB a basket's entries) whose weight sums forty float64 branches, read in
    chunks of the 8 MB step. The estimate counts three times the largest basket and the
    chunk (the bytes written, by uproot's own chunking), and so bounds what ``read``
    allocates (``tracemalloc``: 29.6 MB, where counting the baskets alone said 12.2 MB and
    the baskets once 7.3 MB)."""
    import uproot

    from hepbdt.analysis import estimate as est
    from hepbdt.io.samples import DEFAULT_STEP_SIZE

    n, baskets = _READ_EVENTS, 10
    config = _weighted_read_config(
        tmp_path, lambda path, tree, columns: write_ttree(path, tree, columns, baskets=baskets))
    entry_bytes = _WEIGHT_FIELDS * 8 + 2 * 4
    with uproot.open(tmp_path / "s.root") as file:
        _, report = next(file["t"].iterate(step_size=DEFAULT_STEP_SIZE, report=True,
                                           library="np"))
    chunk = int(report.tree_entry_stop - report.tree_entry_start)
    assert 5_000 < chunk < n
    events, unit = est._read_sizes(config)
    assert events == 2 * n
    # fTotBytes counts each basket's key (66 bytes here) beside the values written
    assert unit == pytest.approx(3 * (n // baskets + chunk) * entry_bytes, rel=2e-3)
    peak = _traced_read_peak(config)
    assert peak < est.estimate(config).bytes, peak
