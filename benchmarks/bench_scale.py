"""The binned streaming path at scale: read throughput against ``uproot.iterate``, and the
memory and time of training per event and feature.

For each event count N it writes (in a temporary directory, never the repository) HIGGS-like
ntuples of N events x 28 float32 branches plus a weight, as an analysis has them: several
signal and background files (ZLIB level 1, uproot's default). Then, each in a fresh process
so that peak memory is its own:

* ``iterate``: one ``uproot.iterate`` over the same files and branches (8 MB steps, as
  hepbdt reads), doing nothing with the arrays: the reading floor;
* ``binned``: ``hepbdt.read(..., binned=True)`` (two passes: the edge sketch, then the
  codes), and ``pass2`` the second pass alone (``bin_edges=`` given), both with
  ``threads=1`` (serial decompression, as ``uproot.iterate``'s default); ``binned-mt`` and
  ``pass2-mt`` the same with hepbdt's default threads (baskets decompressed in parallel
  and the next chunk read while the current one is binned);
* ``train-binned`` / ``train-float``: read (binned or float32) and fit a classifier of
  ``--trees`` trees of depth 6; the peak resident memory of the fit (the data set held)
  above the process's memory after imports and compilation, per event and feature (the
  reading's own peak separately: Linux's VmHWM, reset between them), and the fit's time
  per tree (its binning included for the float path); hepbdt fits ``boosting="newton"``
  (packed histograms), as XGBoost's objective;
* ``train-xgboost``: XGBoost's ``QuantileDMatrix`` built from a data iterator over the
  same files (uproot.iterate, 8 MB steps), then ``tree_method="hist"``, depth 6,
  binary:logistic, all cores: the same time per tree and memory figures.

The throughput ratio is per pass: 2 x t(iterate) / t(binned), the issue's bar 0.9.

    python benchmarks/bench_scale.py                       # 1M and 3M events, 20 trees
    python benchmarks/bench_scale.py --events 1000000 --trees 10 --files 4
    python benchmarks/bench_scale.py --events 30000000,100000000 --no-reads \
        --results scale.jsonl --plot scale.png   # XGBoost up to 30M (--xgboost-up-to)

Each training row also gives the absolute peak resident memory of its process (reading
and training; the issue's 8 GB bound) and the weighted test AUC on 200,000 independent
events of the same generator.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import uproot

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import higgs_like, machine  # noqa: E402

N_FEATURES = 28
BASKET = 500_000  # entries per basket written
BRANCHES = [f"x{j:02d}" for j in range(N_FEATURES)]
TREE = "Events"


def generate(folder: Path, n_events: int, n_files: int, seed: int = 0) -> dict[str, list[str]]:
    """Signal and background files of ``n_events`` events in all, ``n_files`` of each class:
    draw k of the generator fills signal file k with its signal events and background file
    k with its background events, so that every drawn event is written."""
    files: dict[str, list[str]] = {"signal": [], "background": []}
    per_draw = -(-n_events // n_files)
    written = 0
    for k in range(n_files):
        n = min(per_draw, n_events - written)
        X, y, w = higgs_like(n, N_FEATURES, seed=seed + k)
        for label, value in (("signal", 1), ("background", 0)):
            path = folder / f"{label}_{k}.root"
            rows = y == value
            Xc, wc = X[rows], w[rows]
            with uproot.recreate(path) as out:
                out.mktree(TREE, {**{b: np.float32 for b in BRANCHES}, "weight": np.float32})
                for a in range(0, len(wc), BASKET):  # baskets of a few MB, as ROOT writes them
                    out[TREE].extend({**{b: Xc[a:a + BASKET, j] for j, b in enumerate(BRANCHES)},
                                      "weight": wc[a:a + BASKET]})
            files[label].append(str(path))
        written += n
        del X, y, w
    return files


_CHILD = r"""
import json, sys, time
import numpy as np

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    return 0

def rss():
    return status("VmRSS")

def reset_peak():  # Linux: VmHWM restarts from the current resident memory
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

files, which, trees = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
branches = [f"x{j:02d}" for j in range(28)]
sys.path.insert(0, sys.argv[4])

def test_auc(score_of):
    # weighted ROC AUC on independent events of the same generator (not in the files)
    from _data import higgs_like
    from sklearn.metrics import roc_auc_score
    X, y, w = higgs_like(TEST_EVENTS, 28, seed=TEST_SEED)
    return float(roc_auc_score(y, score_of(X), sample_weight=w))
import uproot
from hepbdt import BDTClassifier, warmup
from hepbdt.io import Sample, read
samples = [Sample("signal", {f: "Events" for f in files["signal"]}, label="signal", weight="weight"),
           Sample("background", {f: "Events" for f in files["background"]}, label="background",
                  weight="weight")]
result = {}
if which == "iterate":
    start = time.perf_counter()
    n = 0
    for arrays in uproot.iterate([f + ":Events" for f in files["signal"] + files["background"]],
                                 branches + ["weight"], step_size="8 MB", library="np"):
        n += len(arrays["weight"])
    result = {"seconds": time.perf_counter() - start, "events": n}
elif which in ("binned", "pass2", "binned-mt", "pass2-mt"):
    threads = None if which.endswith("-mt") else 1
    # the binning kernels loaded from Numba's cache before the clock starts (once a process)
    from hepbdt.engine.binning import EdgeSketch, bin_rows_into
    tiny = np.zeros((8, 28), np.float32)
    sketch = EdgeSketch(28, 16, 0)
    sketch.update_selected(tiny, np.ones(8), np.arange(8), 8)
    bin_rows_into(tiny, sketch.edges(255, 0), np.empty((8, 28), np.uint8))
    edges = None
    if which.startswith("pass2"):
        edges = read(samples, branches, binned=True, threads=1, progress=False).X.edges
    start = time.perf_counter()
    data = read(samples, branches, binned=True, threads=threads, progress=False, bin_edges=edges)
    result = {"seconds": time.perf_counter() - start, "events": len(data)}
elif which == "train-xgboost":
    import xgboost as xgb

    class Chunks(xgb.DataIter):
        # the files chunk by chunk, as uproot.iterate reads them (8 MB steps)

        def __init__(self):
            self.sources = [(f, 1.0) for f in files["signal"]] + [(f, 0.0) for f in files["background"]]
            self.chunks = None
            super().__init__()

        def _all(self):
            for path, label in self.sources:
                for arrays in uproot.iterate(path + ":Events", branches + ["weight"],
                                             step_size="8 MB", library="np"):
                    X = np.column_stack([arrays[b] for b in branches])
                    yield X, np.full(len(X), label, np.float32), arrays["weight"]

        def next(self, input_data):
            if self.chunks is None:
                self.chunks = self._all()
            try:
                X, y, w = next(self.chunks)
            except StopIteration:
                return 0
            input_data(data=X, label=y, weight=w)
            return 1

        def reset(self):
            self.chunks = None

    reset_peak()
    base = rss()
    start = time.perf_counter()
    dtrain = xgb.QuantileDMatrix(Chunks(), max_bin=256)
    read_s = time.perf_counter() - start
    read_peak = status("VmHWM")
    reset_peak()
    start = time.perf_counter()
    booster = xgb.train({"tree_method": "hist", "max_depth": 6, "eta": 0.1, "objective": "binary:logistic",
               "max_bin": 256, "nthread": 0}, dtrain, num_boost_round=trees)
    fit_s = time.perf_counter() - start
    peak = status("VmHWM")
    n, m = dtrain.num_row(), dtrain.num_col()
    result = {"read_seconds": read_s, "seconds_per_tree": fit_s / trees,
              "read_peak_added_bytes": read_peak - base, "peak_added_bytes": peak - base,
              "bytes_per_event_feature": (peak - base) / (n * m),
              "peak_rss_bytes": max(read_peak, peak), "events_read": n,
              "test_auc": test_auc(lambda X: booster.inplace_predict(X))}
else:
    warmup()
    reset_peak()
    base = rss()
    start = time.perf_counter()
    data = read(samples, branches, binned=which == "train-binned", progress=False)
    read_s = time.perf_counter() - start
    read_peak = status("VmHWM")
    reset_peak()  # the fit's own peak, above the base, with the data set held
    model = BDTClassifier(boosting="newton", n_trees=trees, max_depth=6, random_state=0)
    start = time.perf_counter()
    model.fit(data.X, data.y, data.w)
    fit_s = time.perf_counter() - start
    peak = status("VmHWM")
    n, m = data.X.shape
    result = {"read_seconds": read_s, "seconds_per_tree": fit_s / trees,
              "read_peak_added_bytes": read_peak - base,
              "peak_added_bytes": peak - base,
              "bytes_per_event_feature": (peak - base) / (n * m),
              "data_bytes_per_event_feature": (data.X.nbytes + data.w.nbytes + data.y.nbytes
                                               + data.event.nbytes + data.sample_index.nbytes)
              / (n * m),
              "peak_rss_bytes": max(read_peak, peak), "events_read": n,
              "test_auc": test_auc(model.decision_function)}
print(json.dumps(result))
"""


TEST_EVENTS, TEST_SEED = 200_000, 10_000  # the test sample: seeds of the files are 0, 1, ...


def run(files: dict[str, list[str]], which: str, trees: int) -> dict[str, float]:
    child = f"TEST_EVENTS, TEST_SEED = {TEST_EVENTS}, {TEST_SEED}\n" + _CHILD
    done = subprocess.run([sys.executable, "-c", child, json.dumps(files), which, str(trees),
                           str(Path(__file__).resolve().parent)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", default="1000000,3000000",
                        help="comma-separated event counts (default 1M and 3M)")
    parser.add_argument("--files", type=int, default=4, help="files per class (default 4)")
    parser.add_argument("--trees", type=int, default=20, help="trees of depth 6 (default 20)")
    parser.add_argument("--repeat", type=int, default=2, help="timed reads, the best kept")
    parser.add_argument("--reads-only", action="store_true",
                        help="time the reads only (no training rows)")
    parser.add_argument("--no-reads", action="store_true",
                        help="training rows only (no timed reads)")
    parser.add_argument("--kinds", default="binned,float,xgboost",
                        help="training rows (default binned,float,xgboost)")
    parser.add_argument("--xgboost-up-to", type=int, default=30_000_000,
                        help="no XGBoost row above this many events (default 30M)")
    parser.add_argument("--results", type=Path,
                        help="JSON-lines file: each row is appended to it, and the training "
                             "table and plot show every row in it (runs at several sizes)")
    parser.add_argument("--plot", type=Path, help="PNG of time per tree and peak memory "
                                                  "against events")
    args = parser.parse_args(argv)
    print(machine())
    rows = []
    for n_events in [int(x) for x in args.events.split(",")]:
        row = measure(n_events, args)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.results:
            with args.results.open("a") as out:
                out.write(json.dumps(row) + "\n")
    if args.results:
        rows = [json.loads(line) for line in args.results.read_text().splitlines() if line]
    print_tables(rows)
    if args.plot:
        plot(rows, args.plot)
        print(f"plot: {args.plot}")
    return 0


def measure(n_events: int, args: argparse.Namespace) -> dict:
    """One event count: write the files, time the reads, train each kind."""
    with tempfile.TemporaryDirectory(prefix="hepbdt-scale-") as tmp:
        start = time.perf_counter()
        files = generate(Path(tmp), n_events, args.files)
        print(f"{n_events:,} events in {2 * args.files} files written in "
              f"{time.perf_counter() - start:.0f} s", flush=True)
        row: dict = {"events": n_events, "trees": args.trees}
        if not args.no_reads:
            reads = ("iterate", "binned", "pass2", "binned-mt", "pass2-mt")
            seconds: dict[str, list[float]] = {which: [] for which in reads}
            for _ in range(args.repeat):  # interleaved, the best of each kept
                for which in reads:
                    seconds[which].append(run(files, which, 0)["seconds"])
            timed = {which: min(v) for which, v in seconds.items()}
            row.update({f"{k}_s": round(v, 2) for k, v in timed.items()})
            row.update({"pass_ratio": round(2 * timed["iterate"] / timed["binned"], 3),
                        "pass2_ratio": round(timed["iterate"] / timed["pass2"], 3),
                        "pass_ratio_mt": round(2 * timed["iterate"] / timed["binned-mt"], 3),
                        "pass2_ratio_mt": round(timed["iterate"] / timed["pass2-mt"], 3)})
        if not args.reads_only:
            for kind in args.kinds.split(","):
                if kind == "xgboost" and n_events > args.xgboost_up_to:
                    continue
                row[kind] = {k: round(v, 4) for k, v in run(files, f"train-{kind}",
                                                             args.trees).items()}
                if row[kind]["events_read"] != n_events:  # the files hold every event drawn
                    raise SystemExit(f"{kind} read {row[kind]['events_read']:,} events of "
                                     f"{n_events:,}")
                print(f"  {kind}: {json.dumps(row[kind])}", flush=True)
    return row


def print_tables(rows: list[dict]) -> None:
    """The markdown tables of the reads and of the training rows."""
    reads = [r for r in rows if "iterate_s" in r]
    if reads:
        print()
        print("| events | uproot.iterate | binned read, 2 passes: threads=1, default | per pass vs "
              "iterate: threads=1, default | pass 2 alone vs iterate: threads=1, default |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        for r in reads:
            print(f"| {r['events']:,} | {r['iterate_s']} s | {r['binned_s']} s, "
                  f"{r['binned-mt_s']} s | {r['pass_ratio']}x, {r['pass_ratio_mt']}x | "
                  f"{r['pass2_ratio']}x, {r['pass2_ratio_mt']}x |")
    trained = [r for r in rows if "binned" in r]
    if not trained:
        return
    print()
    print("| events | trees | row | s / tree | vs XGBoost | peak resident GB (reading and "
          "training) | training bytes / (event x feature) | test AUC |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in sorted(trained, key=lambda r: r["events"]):
        xgb = r.get("xgboost")
        for kind in ("binned", "float", "xgboost"):
            if kind not in r:
                continue
            k = r[kind]
            ratio = (f"{k['seconds_per_tree'] / xgb['seconds_per_tree']:.2f}x" if xgb else "")
            auc = f"{k['test_auc']:.4f}" if "test_auc" in k else ""
            peak = f"{k['peak_rss_bytes'] / 1e9:.2f}" if "peak_rss_bytes" in k else ""
            print(f"| {r['events']:,} | {r.get('trees', '')} | {ROW_NAMES[kind]} | "
                  f"{k['seconds_per_tree']:.3f} | {ratio} | {peak} | "
                  f"{k['bytes_per_event_feature']:.2f} | {auc} |")


ROW_NAMES = {"binned": "hepbdt, binned read", "float": "hepbdt, float read",
             "xgboost": "XGBoost, QuantileDMatrix"}


def plot(rows: list[dict], path: Path) -> None:
    """Time per tree and peak resident memory against events, log-log, one line a row kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for kind, style in (("binned", "o-"), ("float", "s--"), ("xgboost", "^:")):
        points = sorted((r["events"], r[kind]) for r in rows
                        if kind in r and "peak_rss_bytes" in r[kind])
        if not points:
            continue
        n = [p[0] for p in points]
        ax_t.plot(n, [p[1]["seconds_per_tree"] for p in points], style, label=ROW_NAMES[kind])
        ax_m.plot(n, [p[1]["peak_rss_bytes"] / 1e9 for p in points], style, label=ROW_NAMES[kind])
    ax_m.axhline(8, color="grey", lw=0.8, label="8 GB (issue 18's bound at 100M)")
    for ax, label in ((ax_t, "seconds per tree (depth 6)"), (ax_m, "peak resident memory (GB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("events (28 features)")
        ax.set_ylabel(label)
        ax.legend()
    fig.suptitle(machine())
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    raise SystemExit(main())
