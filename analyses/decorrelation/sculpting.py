"""Analysis 5: the background mass after cuts, with and without decorrelation.

Writes the toy sample (``hepbdt.demo_data.write_sculpting_sample``) into the output
folder, then trains ``decorrelation.toml`` four ways: as written (flatness loss against
mjj), the same with the DDT map on top (``decorrelation_map = "ddt"``: the score mapped
through the background's score CDF in bins of mjj, so a cut keeps the same background
fraction at every mass), with ``decorrelation`` off, and without the mass-correlated
features mjj and tau21.
Prints background rejection and 1/JSD of the background mjj at each signal efficiency
(test events) for each, writes ``comparison.md`` and the figures ``sculpting_<name>.png``
and ``front.png``.

    python analyses/decorrelation/sculpting.py [--output DIR] [--quick]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hepbdt.analysis import check_inputs, load_config, train
from hepbdt.analysis.result import decorrelation_of
from hepbdt.demo_data import write_sculpting_sample

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "decorrelation.toml"
VARIANTS = {
    "decorrelated": [],
    "decorrelated + DDT map": ["method.decorrelation_map='ddt'"],
    "plain": ["method.decorrelation_strength=0.0"],
    "no mass features": ["features=['balance', 'width', 'noise']",
                         "method.decorrelation_strength=0.0"],
}


def main(argv: list[str] | None = None) -> list[dict[str, float | str]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default="hepbdt-decorrelation", help="output folder")
    parser.add_argument("--quick", action="store_true", help="reduced settings (tests)")
    args = parser.parse_args(argv)
    out = Path(args.output).resolve()  # the samples' paths are read relative to the config
    n_signal, n_background = (4000, 8000) if args.quick else (20_000, 40_000)
    paths = write_sculpting_sample(out / "data", n_signal, n_background)
    files = [f"samples.{name}.files='{path}'" for name, path in paths.items()]
    quick = ["method.n_trees=60", "output.report=false"] if args.quick else []
    rows, measures = [], {}
    for name, overrides in VARIANTS.items():
        config = load_config(CONFIG, files + quick + overrides,
                             output=out / name.replace(" ", "_"))
        check_inputs(config)
        result = train(config)
        m = decorrelation_of(result)
        measures[name] = m
        for row in m.rows():
            rows.append({"model": name, "signal eff.": row["signal_efficiency"],
                         "bkg rejection": row["background_rejection"],
                         "1/JSD bkg": row["inverse_jsd"]})
    table = markdown_table(rows)
    (out / "comparison.md").write_text(table + "\n")
    print(table)
    from hepbdt import plotting

    for name, m in measures.items():
        plotting.plot_mass_sculpting(m, title=name,
                                     path=out / f"sculpting_{name.replace(' ', '_')}.png")
    plotting.plot_decorrelation_front(measures, efficiency=None, path=out / "front.png")
    return rows


def markdown_table(rows: list[dict[str, float | str]]) -> str:
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v)
                                       for v in row.values()) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
