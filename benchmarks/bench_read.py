"""Read throughput of ``hepbdt.io.read`` against plain ``uproot.concatenate``, and peak memory.

Generates (in a temporary directory, never the repository) a flat ntuple of N events and
30 float32 branches written by uproot (ZLIB level 1, uproot's default), then times in the
same run, interleaved, repeated, median:

* ``hepbdt.io.read(Sample(...), features=<30 branches>)`` -> Dataset (X float32 n x 30,
  plus y, w, event, sample index), with its default decompression threads and with
  ``threads=1`` (serial, like uproot's default);
* ``uproot.concatenate(path:tree, <30 branches>, library="np")`` and ``library="ak"``.

It prints events/s and MB/s (uncompressed branch bytes per second) and the ratio to the
faster uproot call; the bar is 0.8. With ``--memory-events`` it then reads a second file
in a fresh subprocess and reports the peak resident memory the read adds, relative to the
size of the final arrays (the bar: about 2x).

    python benchmarks/bench_read.py                 # 2M events, memory check on 5M
    python benchmarks/bench_read.py --events 200000 --memory-events 0 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import uproot

N_BRANCHES = 30
TREE = "Events"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _branches() -> list[str]:
    return [f"x{i:02d}" for i in range(N_BRANCHES)]


def generate(path: Path, n_events: int, seed: int = 0, chunk: int = 250_000) -> None:
    """Write n_events x 30 float32 branches (mixed distributions) to path:Events."""
    rng = np.random.default_rng(seed)
    names = _branches()
    with uproot.recreate(path) as file:
        tree = file.mktree(TREE, {name: np.float32 for name in names})
        for start in range(0, n_events, chunk):
            size = min(chunk, n_events - start)
            data = {}
            for i, name in enumerate(names):
                if i % 3 == 0:
                    data[name] = rng.normal(0, 1, size).astype(np.float32)
                elif i % 3 == 1:
                    data[name] = rng.exponential(40.0, size).astype(np.float32)
                else:  # rounded values compress like real detector quantities
                    data[name] = np.round(rng.uniform(-5, 5, size), 2).astype(np.float32)
            tree.extend(data)


def _time(function, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
        del result
    return times


def throughput(path: Path, n_events: int, repeat: int) -> dict[str, object]:
    from hepbdt.io import Sample, read

    names = _branches()
    spec = f"{path}:{TREE}"
    calls = {
        "hepbdt.io.read": lambda: read(Sample("bench", spec, label=1), names, progress=False),
        "hepbdt.io.read(threads=1)": lambda: read(
            Sample("bench", spec, label=1), names, progress=False, threads=1
        ),
        "uproot.concatenate(np)": lambda: uproot.concatenate(spec, names, library="np"),
        "uproot.concatenate(ak)": lambda: uproot.concatenate(spec, names, library="ak"),
    }
    # warm-up (page cache, imports), then interleave the repeats so drifts hit all alike
    for call in calls.values():
        _time(call, 1)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            times[name].extend(_time(call, 1))
    mbytes = n_events * N_BRANCHES * 4 / 1e6
    results = {}
    for name, values in times.items():
        median = statistics.median(values)
        results[name] = {
            "median_s": round(median, 4),
            "events_per_s": round(n_events / median),
            "MB_per_s": round(mbytes / median, 1),
            "all_s": [round(v, 4) for v in values],
        }
    fastest_uproot = min(v["median_s"] for k, v in results.items() if k.startswith("uproot"))
    return {
        "results": results,
        "ratio_vs_fastest_uproot": round(fastest_uproot / results["hepbdt.io.read"]["median_s"], 3),
        "ratio_serial_vs_fastest_uproot": round(
            fastest_uproot / results["hepbdt.io.read(threads=1)"]["median_s"], 3
        ),
    }


_MEMORY_CHILD = r"""
import json, resource, sys
import numpy as np
import uproot
from hepbdt.io import Sample, read

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
path, which = sys.argv[1], sys.argv[2]
names = [f"x{i:02d}" for i in range(30)]
before = rss_mb()
if which == "hepbdt":
    ds = read(Sample("bench", path + ":Events", label=1), names, progress=False)
    final = sum(a.nbytes for a in (ds.X, ds.y, ds.w, ds.event, ds.sample_index))
else:
    arrays = uproot.concatenate(path + ":Events", names, library="np")
    final = sum(a.nbytes for a in arrays.values())
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rss_before_MB": round(before, 1), "peak_rss_MB": round(peak, 1),
                  "final_arrays_MB": round(final / 2**20, 1),
                  "peak_added_over_final": round((peak - before) / (final / 2**20), 3)}))
"""


def memory(path: Path) -> dict[str, object]:
    out = {}
    for which in ("hepbdt", "uproot"):
        result = subprocess.run(
            [sys.executable, "-c", _MEMORY_CHILD, str(path), which],
            capture_output=True, text=True, check=True,
        )
        out[which] = json.loads(result.stdout.strip().splitlines()[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--memory-events", type=int, default=5_000_000,
                        help="events for the peak-memory check (0 skips it)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)

    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    report: dict[str, object] = {
        "events": args.events,
        "branches": N_BRANCHES,
        "nproc": affinity or os.cpu_count(),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "uproot": uproot.__version__,
    }
    with tempfile.TemporaryDirectory(prefix="hepbdt-bench-") as tmp:
        path = Path(tmp) / "bench.root"
        start = time.perf_counter()
        generate(path, args.events)
        report["generate_s"] = round(time.perf_counter() - start, 2)
        report["file_MB"] = round(path.stat().st_size / 1e6, 1)
        report.update(throughput(path, args.events, args.repeat))
        path.unlink()
        if args.memory_events:
            mem_path = Path(tmp) / "memory.root"
            generate(mem_path, args.memory_events, seed=1)
            report["memory"] = {"events": args.memory_events, **memory(mem_path)}

    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"read benchmark: {args.events:,} events x {N_BRANCHES} float32 branches, "
          f"file {report['file_MB']} MB (ZLIB-1, written by uproot)")
    print(f"machine: nproc={report['nproc']}, cpu={report['cpu']}, uproot {uproot.__version__}")
    for name, values in report["results"].items():
        print(f"  {name:<27} {values['median_s']:8.3f} s  {values['events_per_s']:>12,} ev/s  "
              f"{values['MB_per_s']:8.1f} MB/s")
    print(f"  throughput ratio hepbdt.io.read / fastest uproot.concatenate: "
          f"{report['ratio_vs_fastest_uproot']} (bar: >= 0.8); with threads=1 (serial "
          f"decompression, as uproot's default): {report['ratio_serial_vs_fastest_uproot']}")
    if "memory" in report:
        mem = report["memory"]
        h, u = mem["hepbdt"], mem["uproot"]
        print(f"memory, {mem['events']:,} events: hepbdt.read final arrays "
              f"{h['final_arrays_MB']} MiB, peak RSS added {h['peak_rss_MB'] - h['rss_before_MB']:.0f}"
              f" MiB = {h['peak_added_over_final']}x the final arrays (bar: about 2x)")
        print(f"  uproot.concatenate(np) for comparison: arrays {u['final_arrays_MB']} MiB, "
              f"peak added {u['peak_added_over_final']}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
