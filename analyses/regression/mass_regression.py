"""Analysis 2: regressed dijet mass against the naive one, per process.

Trains ``mass_regression.toml`` (the correction true_mass / mjj on QCD and ttbar), then
compares the regressed mass ``mjj * prediction`` with the naive ``mjj`` against the true
mass: bias (median of (m - m_true) / m_true), resolution (interquartile range / 1.349 of
the same ratio) and the median of |m - m_true| in GeV,
on the backgrounds' test events and on every signal event (never used in training).
Writes ``resolution.md`` and a figure of the signal mass peak into ``DIR-resolution/``,
beside the output set.

    python analyses/regression/mass_regression.py [--output DIR] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from hepbdt.analysis import check_inputs, load_config, train
from hepbdt.io import read

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "mass_regression.toml"
SIGNAL = HERE.parents[1] / "data" / "signal.root"
QUICK = ["preselection='(nJet >= 2) & (mjj > 30) & (event % 10 == 0)'", "method.n_trees=30",
         "output.report=false", "output.figures=false"]


def mass_quality(mass: np.ndarray, true: np.ndarray) -> tuple[float, float, float]:
    """(bias, resolution, median |m - m_true| in GeV) of a mass estimate."""
    ratio = (mass - true) / true
    q25, q50, q75 = np.percentile(ratio, [25, 50, 75])
    return float(q50), float((q75 - q25) / 1.349), float(np.median(np.abs(mass - true)))


def main(argv: list[str] | None = None) -> list[dict[str, float | str]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default="hepbdt-regression", help="output folder")
    parser.add_argument("--quick", action="store_true", help="reduced settings (tests)")
    args = parser.parse_args(argv)
    out = Path(args.output)
    config = load_config(CONFIG, QUICK if args.quick else [], output=out)
    check_inputs(config)
    result = train(config)
    model = result.model
    column = config.features.index("mjj")

    # The signal, with the same selection and target, read only for the evaluation.
    template = config.samples[0]
    signal = dataclasses.replace(template, name="signal", files=[str(SIGNAL)]).to_sample()
    signal_data = read([signal], config.feature_expressions, event=config.event)

    sets = [(name, result.test.take(result.test.sample_index == i))
            for i, name in enumerate(result.test.sample_names)]
    sets.append(("signal (not trained on)", signal_data))
    extra = Path(f"{out}-resolution")  # beside the output set, which a second run replaces
    extra.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, data in sets:
        mjj = data.X[:, column].astype(np.float64)
        true = data.y * mjj
        regressed = mjj * model.predict(data.X)
        naive_q = mass_quality(mjj, true)
        bdt_q = mass_quality(regressed, true)
        rows.append({"process": name, "events": len(data),
                     "bias mjj": naive_q[0], "bias BDT": bdt_q[0],
                     "resolution mjj": naive_q[1], "resolution BDT": bdt_q[1],
                     "median abs. error mjj (GeV)": naive_q[2], "median abs. error BDT (GeV)": bdt_q[2]})
        if name.startswith("signal") and config.output.figures:
            _peak_figure(mjj, regressed, extra / "signal_mass_peak.png")
    table = markdown_table(rows)
    (extra / "resolution.md").write_text(table + "\n")
    print(table)
    return rows


def _peak_figure(mjj: np.ndarray, regressed: np.ndarray, path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 5))
    ax = fig.subplots()
    bins = np.linspace(50, 200, 61)
    ax.hist(mjj, bins, histtype="step", label="naive mjj")
    ax.hist(regressed, bins, histtype="step", label="regressed mass")
    ax.axvline(125.0, color="grey", ls=":", label="true mass 125 GeV")
    ax.set_xlabel("dijet mass [GeV]")
    ax.set_ylabel("signal events")
    ax.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)


def markdown_table(rows: list[dict[str, float | str]]) -> str:
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in rows:
        cells = [str(v) if isinstance(v, str | int) else
                 (f"{v:.1f}" if "GeV" in k else f"{v:+.3f}" if k.startswith("bias") else f"{v:.3f}")
                 for k, v in row.items()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
