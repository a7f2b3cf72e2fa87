"""Analysis 1: the four boosting algorithms side by side on the demo ntuples.

Trains ``classification.toml`` with AdaBoost, epsilon-boost, gradient boost and Newton
boost (the same samples, split, features and tree size), each into its own folder with its
report, and writes ``comparison.md``: test and training AUC, signal efficiency at 1 %
background efficiency, background rejection 1 - eff_B (TMVA's) at 50 % signal efficiency,
the KS p-values of the overtraining check and the training time.

    python analyses/classification/compare_boosting.py [--output DIR] [--quick]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hepbdt.analysis import check_inputs, load_config, train
from hepbdt.evaluation import efficiency_table, overtraining_test

CONFIG = Path(__file__).resolve().with_name("classification.toml")

# What each algorithm adds to the shared [method] options of the configuration.
ALGORITHMS = {
    "adaboost": ["method.boosting='adaboost'", "method.beta=0.5"],
    "eps": ["method.boosting='eps'", "method.epsilon=0.02"],
    "gradient": ["method.boosting='gradient'", "method.learning_rate=0.1"],
    "newton": ["method.boosting='newton'", "method.learning_rate=0.1"],
}
# --quick: a tenth of the events, 30 trees, no report (for the test suite).
QUICK = ["preselection='(nJet >= 2) & (event % 10 == 0)'", "method.n_trees=30",
         "output.report=false"]

def main(argv: list[str] | None = None) -> list[dict[str, float | str]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default="hepbdt-classification", help="output folder")
    parser.add_argument("--quick", action="store_true", help="reduced settings (tests)")
    args = parser.parse_args(argv)
    out = Path(args.output)
    rows = []
    for name, options in ALGORITHMS.items():
        config = load_config(CONFIG, options + (QUICK if args.quick else []), output=out / name)
        check_inputs(config)
        result = train(config)
        test, tr = result.test, result.train
        eff = efficiency_table(test.y, result.test_scores, test.w, signal_eff=[0.5],
                               background_eff=[0.01])
        eff_train = efficiency_table(tr.y, result.train_scores, tr.w)
        check = overtraining_test(result.train_scores, tr.y, tr.w, result.test_scores,
                                  test.y, test.w)
        rows.append({"algorithm": name, "test AUC": eff.roc_auc, "train AUC": eff_train.roc_auc,
                     "eff_S @ eff_B = 1%": eff.signal_efficiency[0],
                     "1 - eff_B @ eff_S = 50%": eff.background_rejection[0],
                     "KS p signal": check.signal.ks_pvalue,
                     "KS p background": check.background.ks_pvalue,
                     "training s": result.timings["train"]})
    table = markdown_table(rows)
    (out / "comparison.md").write_text(table + "\n")
    print(table)
    return rows

def markdown_table(rows: list[dict[str, float | str]]) -> str:
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in rows:
        cells = [v if isinstance(v, str) else (f"{v:.1f}" if k == "training s" else
                                               f"{v:.3g}" if k.startswith("KS") else f"{v:.4f}")
                 for k, v in row.items()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

if __name__ == "__main__":
    main()
