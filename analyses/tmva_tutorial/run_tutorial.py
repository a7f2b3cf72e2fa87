"""Analysis 3: the TMVA tutorial's BDT and BDTG, trained from their TMVA option strings.

Trains ``tmva_tutorial.toml`` twice, with the tutorial's ``BDT`` (AdaBoost) and ``BDTG``
(gradient) option strings, each into its own folder (model, TMVA XML, score trees,
report), and writes ``comparison.md``: hepbdt's weighted test AUC next to the AUC of
TMVA's own trained model (the scores TMVA::Reader gives, ``../shared/tmva/*.reader.csv``)
on the same test events. TMVA trained on its own random half, so about half of these
events were in its training sample: its number is slightly optimistic.

    python analyses/tmva_tutorial/run_tutorial.py [--output DIR] [--quick]

Needs ``tmva_class_example.root`` in ``../shared/data`` beside the checkout.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from hepbdt.analysis import check_inputs, load_config, train
from hepbdt.evaluation import roc_auc

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "tmva_tutorial.toml"
SHARED = HERE.parents[2] / "shared"
DATA = SHARED / "data" / "tmva_class_example.root"

METHODS = {
    "BDT": "NTrees=850:MinNodeSize=2.5%:MaxDepth=3:BoostType=AdaBoost:AdaBoostBeta=0.5:"
           "UseBaggedBoost:BaggedSampleFraction=0.5:SeparationType=GiniIndex:nCuts=20",
    "BDTG": "NTrees=1000:MinNodeSize=2.5%:BoostType=Grad:Shrinkage=0.10:UseBaggedBoost:"
            "BaggedSampleFraction=0.5:nCuts=20:MaxDepth=2",
}


def reader_scores(name: str) -> dict[tuple[str, int], float] | None:
    """TMVA::Reader's score of each (tree, entry), or None without the reference file."""
    path = SHARED / "tmva" / f"ClassExample_{name}.reader.csv"
    if not path.is_file():
        return None
    with path.open() as handle:
        return {(row["tree"], int(row["entry"])): float(row["score"])
                for row in csv.DictReader(handle)}


def main(argv: list[str] | None = None) -> list[dict[str, float | str]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default="hepbdt-tmva-tutorial", help="output folder")
    parser.add_argument("--quick", action="store_true", help="reduced settings (tests)")
    args = parser.parse_args(argv)
    if not DATA.is_file():
        raise SystemExit(f"{DATA} is not there: this analysis needs ROOT's tutorial file in "
                         "../shared/data beside the checkout")
    out = Path(args.output)
    rows = []
    for name, options in METHODS.items():
        if args.quick:  # a tenth of the trees, no report
            n_trees = int(options.split("NTrees=")[1].split(":")[0])
            options = options.replace(f"NTrees={n_trees}", f"NTrees={n_trees // 10}")
        overrides = [f"method.tmva_options='{options}'", f"title='TMVA tutorial: {name}'"]
        if args.quick:
            overrides.append("output.report=false")
        config = load_config(CONFIG, overrides, output=out / name)
        check_inputs(config)
        result = train(config)
        test = result.test
        row: dict[str, float | str] = {
            "method": name, "options": options,
            "hepbdt test AUC": roc_auc(test.y, result.test_scores, test.w),
            "hepbdt train AUC": roc_auc(result.train.y, result.train_scores, result.train.w),
            "training s": result.timings["train"],
        }
        reference = reader_scores(name)
        if reference is not None:
            trees = np.where(test.sample_index == 0, "TreeS", "TreeB")
            tmva = np.array([reference[(tree, int(entry))]
                             for tree, entry in zip(trees, test.event, strict=True)])
            row["TMVA model AUC (same events)"] = roc_auc(test.y, tmva, test.w)
        rows.append(row)
    table = markdown_table(rows)
    (out / "comparison.md").write_text(table + "\n")
    print(table)
    return rows


def markdown_table(rows: list[dict[str, float | str]]) -> str:
    header = [key for key in rows[0] if key != "options"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in rows:
        cells = [row[k] if isinstance(row[k], str) else
                 (f"{row[k]:.1f}" if k == "training s" else f"{row[k]:.4f}") for k in header]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
