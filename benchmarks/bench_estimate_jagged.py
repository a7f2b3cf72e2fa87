"""The memory estimate of `hepbdt train --check` against the measured peak, on the demo's
ntuples (features from jagged branches) copied R times.

For each R: writes the three ntuples of data/ R times over (event numbers made distinct)
into a temporary folder, trains analyses/demo.toml on them (50 trees, no report, figures
or TMVA XML) under ``/usr/bin/time -v``, and prints the estimate, the peak RSS and their
growth per entry between the first and the last R.

The copies are TTrees written ``--basket-entries`` entries a basket (one ``extend`` each),
or with ``--rntuple`` RNTuples of one cluster (what ``file[name] = arrays`` writes with
uproot 5.7): how the file is cut into baskets or clusters decides how much a read holds
at once, since a reader decompresses a whole basket or cluster whatever its chunk size.

    python benchmarks/bench_estimate_jagged.py [--copies 1,16,48] [--basket-entries 50000]
        [--rntuple]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import awkward as ak
import numpy as np
import uproot

REPO = Path(__file__).resolve().parents[1]
SAMPLES = ("signal", "background_qcd", "background_ttbar")
SETTINGS = ["method.n_trees=50", "output.report=false", "output.figures=false",
            "output.tmva_xml=false"]


def copy_ntuples(folder: Path, copies: int, basket_entries: int | None = None) -> int:
    """The demo ntuples ``copies`` times over in ``folder``; the entries written. As TTrees
    of ``basket_entries`` entries a basket, or (None) as uproot writes a dict of arrays."""
    total = 0
    for name in SAMPLES:
        arrays = uproot.open(REPO / "data" / f"{name}.root")["Events"].arrays()
        out = {}
        for field in arrays.fields:
            column = ak.concatenate([arrays[field]] * copies)
            if field == "event":
                base = np.asarray(arrays[field])
                column = np.tile(base, copies) + np.repeat(np.arange(copies), base.size) * 10**7
            out[field] = column
        with uproot.recreate(folder / f"{name}.root") as file:
            if basket_entries is None:
                file["Events"] = out
            else:
                file.mktree("Events", {k: v.layout.form.type if isinstance(v, ak.Array)
                                       else v.dtype for k, v in out.items()})
                for start in range(0, len(out["event"]), basket_entries):
                    file["Events"].extend({k: v[start:start + basket_entries]
                                           for k, v in out.items()})
        total += len(arrays) * copies
    return total


def run(folder: Path, copies: int, basket_entries: int | None) -> tuple[int, float, float]:
    """(entries, estimate MB, peak RSS MB) of training the demo on ``copies`` copies."""
    entries = copy_ntuples(folder, copies, basket_entries)
    config = folder / "demo.toml"
    text = (REPO / "analyses" / "demo.toml").read_text().replace("../data/", f"{folder}/")
    config.write_text(text)
    hepbdt = [str(Path(sys.executable).with_name("hepbdt"))]
    sets = [arg for s in SETTINGS for arg in ("--set", s)]
    check = subprocess.run([*hepbdt, "train", str(config), "--check", *sets], capture_output=True,
                           text=True, check=True).stdout
    found = re.search(r"and ([0-9.,]+) (MB|GB) of memory", check)
    estimate = float(found.group(1).replace(",", "")) * (1024 if found.group(2) == "GB" else 1)
    timed = subprocess.run(["/usr/bin/time", "-v", *hepbdt, "train", str(config), *sets,
                            "--output", str(folder / "out"), "--no-progress"],
                           capture_output=True, text=True, check=True)
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", timed.stderr).group(1))
    return entries, estimate, peak / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", default="1,16,48")
    parser.add_argument("--basket-entries", type=int, default=50_000)
    parser.add_argument("--rntuple", action="store_true",
                        help="RNTuples of one cluster instead of TTrees")
    args = parser.parse_args()
    counts = [int(c) for c in args.copies.split(",")]
    if len(counts) < 2 or counts[0] == counts[-1] or min(counts) < 1:
        parser.error(f"--copies {args.copies}: give two or more counts of at least 1, the first and "
                     "the last different (the growth per entry is taken between them)")
    rows = []
    for copies in counts:
        with tempfile.TemporaryDirectory() as folder:
            rows.append(run(Path(folder), copies, None if args.rntuple else args.basket_entries))
        entries, estimate, peak = rows[-1]
        print(f"{entries:>10,} entries: estimate {estimate:8.1f} MB, peak RSS {peak:8.1f} MB")
    (n0, e0, p0), (n1, e1, p1) = rows[0], rows[-1]
    grow = 2**20 / (n1 - n0)
    print(f"growth per entry: estimate {(e1 - e0) * grow:.0f} bytes, peak {(p1 - p0) * grow:.0f} bytes")


if __name__ == "__main__":
    main()
