"""The training report: one self-contained HTML file with the options, tables and figures.

:func:`report` evaluates a fitted classifier or regressor on its training and test
samples (:mod:`hepbdt.evaluation`), draws the figures (:mod:`hepbdt.plotting`) and writes
a single HTML file: figures embedded as base64 PNG, tables as HTML tables, no external
resources. A small inline script writes into ``<div id="render-check">`` how many images
the browser decoded and how many table cells are filled, so a headless browser can check
the rendered page.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import os
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from hepbdt import plotting
from hepbdt._util import atomic_write_text, is_classifier
from hepbdt.evaluation._data import unpack_dataset
from hepbdt.evaluation.curves import learning_curve
from hepbdt.evaluation.metrics import (
    DEFAULT_MIN_BACKGROUND_EVENTS,
    SignificanceScan,
    efficiency_table,
    regression_metrics,
    resolution_vs_target,
    significance_scan,
    yield_note,
)
from hepbdt.evaluation.overtraining import overtraining_test
from hepbdt.evaluation.ranking import permutation_importance, tmva_importance

__all__ = ["report", "Section", "html_table", "significance_table"]

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { border-bottom: 2px solid #3f90da; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #eef3fa; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; }
figure img { max-width: 520px; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #555; max-width: 520px; }
.verdict-ok { color: #1a7f37; } .verdict-warning { color: #b58900; }
.verdict-overtrained { color: #c0392b; font-weight: bold; }
#render-check { font-size: 0.8em; color: #888; }
"""

# Runs on load, after the browser has decoded the images: a headless browser dumping the
# DOM then shows whether every figure and every table cell made it to the page.
_RENDER_CHECK = """
window.addEventListener("load", function () {
  var images = document.querySelectorAll("img");
  var shown = 0;
  images.forEach(function (img) { if (img.complete && img.naturalWidth > 0) { shown++; } });
  var cells = document.querySelectorAll("td");
  var filled = 0;
  cells.forEach(function (td) { if (td.textContent.trim().length > 0) { filled++; } });
  var out = document.getElementById("render-check");
  out.setAttribute("data-images-shown", shown);
  out.setAttribute("data-images-total", images.length);
  out.setAttribute("data-cells-filled", filled);
  out.setAttribute("data-cells-total", cells.length);
  out.setAttribute("data-tables", document.querySelectorAll("table").length);
  out.textContent = "rendered: " + shown + "/" + images.length + " figures, " + filled + "/" +
    cells.length + " table cells filled";
});
"""


def _fmt(value: Any) -> str:
    """Table cell text: 4 significant digits for floats, 'n/a' for NaN / None."""
    if value is None:
        return "n/a"
    if isinstance(value, bool | str):
        return str(value)
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return "n/a" if not np.isfinite(value) else f"{float(value):.4g}"
    return str(value)


@dataclass
class Section:
    """A section the caller adds to the report: a heading, HTML (paragraphs, tables made
    with :func:`html_table`) and figures as (element id, caption, function drawing it)."""

    heading: str
    html: str = ""
    figures: Sequence[tuple[str, str, Callable[[], Figure]]] = ()


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], table_id: str) -> str:
    """An HTML table, cells formatted as everywhere in the report (4 significant digits)."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(c))}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return (f'<table id="{table_id}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


_FIGURE_OF_MERIT_LABELS = {"s_over_sqrt_b": "S/sqrt(B)", "s_over_sqrt_s_plus_b": "S/sqrt(S+B)",
                           "ams": "AMS"}
SIGNIFICANCE_HEADER = ["figure of merit", "best cut", "value", "S", "S stat. unc.", "B",
                       "B stat. unc.", "signal MC events", "background MC events"]


def significance_table(scan: SignificanceScan, table_id: str) -> str:
    """The best cut of each figure of merit as an HTML table (S, B, their statistical
    uncertainties and MC counts), or "no cut leaves >= N background MC events"."""
    rows: list[list[Any]] = []
    for key, label in _FIGURE_OF_MERIT_LABELS.items():
        if key == "ams":
            label += f" (b_reg = {scan.b_reg:g})"
        best = scan.best_cuts[key]
        if best.found:
            rows.append([label, best.threshold, best.value, best.signal, best.signal_error,
                         best.background, best.background_error, best.n_signal_mc,
                         best.n_background_mc])
        else:
            rows.append([label, f"no cut leaves >= {scan.min_background_events} background "
                         "MC events with B > 0", *(["n/a"] * 7)])
    return html_table(SIGNIFICANCE_HEADER, rows, table_id)


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=72)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class _Sections:
    """Collects the report's HTML sections and figures."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.figures: list[str] = []

    def heading(self, text: str) -> None:
        self.parts.append(f"<h2>{html.escape(text)}</h2>")

    def html(self, text: str) -> None:
        self.parts.append(text)

    def figure(self, fig_id: str, caption: str, draw: Callable[[], Figure]) -> None:
        try:
            data = _png(draw())
        except Exception as exc:  # a failing figure must not lose the rest of the report
            self.parts.append(f'<p class="error" id="{fig_id}-error">{html.escape(caption)}: '
                              f"could not be drawn ({html.escape(repr(exc))})</p>")
            return
        self.figures.append(fig_id)
        self.parts.append(
            f'<figure id="{fig_id}"><img alt="{html.escape(caption)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{html.escape(caption)}'
            f"</figcaption></figure>"
        )


def _options_table(model: Any) -> str:
    params = model.get_params() if hasattr(model, "get_params") else {}
    rows = [(name, repr(value)) for name, value in sorted(params.items())]
    rows.append(("trees kept (n_trees_)", getattr(model, "n_trees_", None)))
    rows.append(("best iteration (best_iteration_)", getattr(model, "best_iteration_", None)))
    return html_table(["option", "value"], rows, "options")


def _sample_rows(name: str, y: np.ndarray, w: np.ndarray, classifier: bool) -> list[Any]:
    row: list[Any] = [name, y.size]
    if classifier:
        sig = y == 1
        row += [int(sig.sum()), int((~sig).sum()), float(w[sig].sum()), float(w[~sig].sum())]
    else:
        row += [float(w.sum())]
    row.append(float(np.mean(w < 0)) if w.size else 0.0)
    return row


def _samples_table(y_tr: np.ndarray, w_tr: np.ndarray, y_te: np.ndarray, w_te: np.ndarray,
                   classifier: bool, test_fraction: float) -> str:
    """Events and summed weights of the training and test samples, as given."""
    scaled = " (the significance section scales it up)" if classifier else ""
    note = ("<p>Sums of the weights as given: the test sample carries the fraction "
            f"{test_fraction:.4g} of the whole sample's expected yield{scaled}; training "
            "weights may be normalised.</p>")
    if classifier:
        header = ["sample", "events", "signal events", "background events",
                  "signal sum of weights", "background sum of weights",
                  "fraction of negative weights"]
    else:
        header = ["sample", "events", "sum of weights", "fraction of negative weights"]
    return note + html_table(header, [_sample_rows("training", y_tr, w_tr, classifier),
                                      _sample_rows("test", y_te, w_te, classifier)], "samples")


def _ranking_section(out: _Sections, model: Any, X: np.ndarray, y: np.ndarray, w: np.ndarray,
                     names: list[str], n_repeats: int, random_state: int | None) -> None:
    out.heading("Variable ranking")
    ranking = None
    if hasattr(model, "forest_"):
        ranking = tmva_importance(model, names)
    perm = permutation_importance(model, X, y, w, n_repeats=n_repeats,
                                  random_state=random_state, feature_names=names)
    order = ranking.order() if ranking is not None else perm.order()
    rows = []
    for rank, i in enumerate(order, start=1):
        row: list[Any] = [rank, names[i]]
        if ranking is not None:
            row += [ranking.importance[i], ranking.split_count[i], ranking.total_gain[i],
                    ranking.cover[i]]
        row += [perm.importances_mean[i], perm.importances_std[i]]
        rows.append(row)
    header = ["rank", "variable"]
    if ranking is not None:
        header += ["importance (split gain)", "splits", "total gain", "cover"]
    header += [f"permutation ({perm.metric}) mean", "permutation spread"]
    out.html(html_table(header, rows, "ranking"))
    if ranking is not None:
        out.figure("fig-ranking", "Variable ranking from the split gains (TMVA style)",
                   lambda: plotting.plot_ranking(ranking))
    out.figure("fig-permutation", f"Permutation importance on the test sample "
               f"({n_repeats} repeats)", lambda: plotting.plot_ranking(perm))


def report(
    model: Any,
    train: Any,
    test: Any,
    path: str | os.PathLike[str],
    *,
    title: str = "hepbdt training report",
    signal_yield: float | None = None,
    background_yield: float | None = None,
    test_fraction: float | None = None,
    min_background_events: int = DEFAULT_MIN_BACKGROUND_EVENTS,
    n_repeats: int = 3,
    random_state: int | None = 0,
    sections: Sequence[Section] = (),
) -> Path:
    """Write a self-contained HTML report of a fitted model and return its path.

    Parameters
    ----------
    model : fitted ``BDTClassifier`` or ``BDTRegressor``
    train, test : ``Dataset`` (``X``, ``y``, ``w``, ``feature_names``) or ``(X, y[, w])``
    path : the HTML file to write (written to a temporary name, then renamed)
    signal_yield, background_yield : expected events before the cut for the significance
        scan (default: the test sample's summed weights x 1 / ``test_fraction``)
    test_fraction : the fraction of the whole sample's expected yield that the test
        weights carry (1 - train_fraction for a split, 1 for an independent test sample
        or all events of a k-fold training). None: estimated from the event counts,
        n_test / (n_train + n_test), as for a train/test split of one sample. The report
        states which.
    min_background_events : a best cut of the significance scan must leave at least this
        many background MC events (unweighted test events) and B > 0
    n_repeats, random_state : for the permutation importance on the test sample
    sections : the caller's own sections, shown first (e.g. the per-fold results of a
        k-fold training)
    """
    X_tr, y_tr, w_tr, names = unpack_dataset(train, "train")
    X_te, y_te, w_te, names_te = unpack_dataset(test, "test")
    if X_te.shape[1] != X_tr.shape[1]:
        raise ValueError(f"train has {X_tr.shape[1]} features but test has {X_te.shape[1]}")
    if all(n.startswith("x") for n in names) and hasattr(model, "feature_names_in_"):
        names = [str(n) for n in model.feature_names_in_]
    classifier = is_classifier(model)
    yields = _YieldBasis.of(test_fraction, y_tr.size, y_te.size, signal_yield,
                            background_yield, min_background_events)
    out = _Sections()
    for section in sections:
        out.heading(section.heading)
        if section.html:
            out.html(section.html)
        for fig_id, caption, draw in section.figures:
            out.figure(fig_id, caption, draw)

    out.heading("Options")
    out.html(_options_table(model))
    out.heading("Samples")
    out.html(_samples_table(y_tr, w_tr, y_te, w_te, classifier, yields.test_fraction))

    if classifier:
        _classification_sections(out, model, X_tr, y_tr, w_tr, X_te, y_te, w_te, yields)
    else:
        _regression_sections(out, model, X_tr, y_tr, w_tr, X_te, y_te, w_te)

    _ranking_section(out, model, X_te, y_te, w_te, names, n_repeats, random_state)
    out.heading("Correlations")
    out.figure("fig-correlation", "Weighted linear correlation of the input variables "
               "(training sample)",
               lambda: plotting.plot_correlation_matrices(
                   X_tr, y_tr if classifier else None, w_tr, names))
    out.heading("Learning curve")
    curve = learning_curve(model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te))
    out.figure("fig-learning-curve", "Loss against the number of trees",
               lambda: plotting.plot_learning_curve(curve))

    atomic_write_text(path, _document(title, model, out))
    return Path(path)


def _classification_sections(out: _Sections, model: Any, X_tr: np.ndarray, y_tr: np.ndarray,
                             w_tr: np.ndarray, X_te: np.ndarray, y_te: np.ndarray,
                             w_te: np.ndarray, yields: _YieldBasis) -> None:
    s_tr = np.asarray(model.decision_function(X_tr), dtype=np.float64)
    s_te = np.asarray(model.decision_function(X_te), dtype=np.float64)

    out.heading("Efficiencies")
    eff_te = efficiency_table(y_te, s_te, w_te)
    eff_tr = efficiency_table(y_tr, s_tr, w_tr)
    rows = [(label, v_te, v_tr)
            for (label, v_te), (_, v_tr) in zip(eff_te.rows(), eff_tr.rows(), strict=True)]
    out.html("<p>TMVA's table: signal efficiency at fixed background efficiency and "
             "background rejection (1 - eff_B) at fixed signal efficiency; the training "
             "sample's values are there to spot overtraining.</p>")
    out.html(html_table(["", "test sample", "training sample"], rows, "efficiency-table"))
    out.figure("fig-roc", "ROC curve: background rejection against signal efficiency",
               lambda: plotting.plot_roc(y_te, s_te, w_te, train=(y_tr, s_tr, w_tr)))
    out.figure("fig-scores", "Score distributions (test sample)",
               lambda: plotting.plot_score_distributions(y_te, s_te, w_te))

    out.heading("Overtraining check")
    result = overtraining_test(s_tr, y_tr, w_tr, s_te, y_te, w_te)
    rows = [(name, part.ks_statistic, part.ks_pvalue, part.chi2, part.ndf, part.chi2_pvalue,
             part.verdict) for name, part in (("signal", result.signal),
                                              ("background", result.background))]
    out.html(f'<p>Verdict: <span class="verdict-{result.verdict}" id="verdict">'
             f"{html.escape(result.verdict)}</span> (p-value below {result.pvalue_fail:g}: "
             f"overtrained, below {result.pvalue_warn:g}: warning).</p>")
    out.html(html_table(["class", "KS statistic", "KS p-value", "chi2", "ndf", "chi2 p-value",
                     "verdict"], rows, "overtraining-table"))
    out.figure("fig-overtraining", "Overtraining check: test (filled) against training "
               "(points)", lambda: plotting.plot_overtraining(s_tr, y_tr, w_tr, s_te, y_te,
                                                              w_te, result=result))

    out.heading("Significance")
    scan = significance_scan(y_te, s_te, w_te, yields.signal_yield, yields.background_yield,
                             yield_scale=1.0 / yields.test_fraction,
                             min_background_events=yields.min_background_events)
    out.html(f'<p id="significance-yields">{html.escape(yields.describe())}</p>')
    out.html(significance_table(scan, "significance-table"))
    out.figure("fig-significance", "Significance against the cut on the score (test sample, "
               "yields of the whole sample)", lambda: plotting.plot_significance_scan(scan))


@dataclass(frozen=True)
class _YieldBasis:
    """How the significance scan turns test weights into expected yields."""

    test_fraction: float
    estimated: str  # "" when given, else how it was estimated
    signal_yield: float | None
    background_yield: float | None
    min_background_events: int

    @classmethod
    def of(cls, test_fraction: float | None, n_train: int, n_test: int,
           signal_yield: float | None, background_yield: float | None,
           min_background_events: int) -> _YieldBasis:
        """Check the options; estimate the test fraction from the event counts if None."""
        estimated = ""
        if test_fraction is None:
            test_fraction = n_test / (n_train + n_test) if n_train + n_test else 1.0
            estimated = (f"estimated from the event counts, n_test / (n_train + n_test) = "
                         f"{n_test} / {n_train + n_test}")
        if not 0.0 < float(test_fraction) <= 1.0:
            raise ValueError(f"test_fraction must lie in (0, 1], not {test_fraction!r}")
        # significance_scan checks min_background_events
        return cls(float(test_fraction), estimated, signal_yield, background_yield,
                   min_background_events)

    def describe(self) -> str:
        """The sentence the report shows above the significance table."""
        source = self.estimated or "as given"
        scaled = f"{yield_note(self.test_fraction)} (test fraction {source})"
        if self.signal_yield is None and self.background_yield is None:
            text = f"S and B: {scaled}."
        else:
            given = [f"{name} = {value:g} events before the cut x its efficiency"
                     for name, value in (("S", self.signal_yield), ("B", self.background_yield))
                     if value is not None]
            rest = [name for name, value in (("S", self.signal_yield),
                                             ("B", self.background_yield)) if value is None]
            text = "; ".join(given) + (f"; {rest[0]}: {scaled}" if rest else "") + "."
        return (text + " Stat. unc.: sqrt(sum of w^2) of the test events passing the cut, "
                "scaled as the yields. MC events: test events passing the cut, unweighted. "
                f"A best cut leaves at least {self.min_background_events} background MC "
                "events and B > 0.")


def _regression_sections(out: _Sections, model: Any, X_tr: np.ndarray, y_tr: np.ndarray,
                         w_tr: np.ndarray, X_te: np.ndarray, y_te: np.ndarray,
                         w_te: np.ndarray) -> None:
    p_tr = np.asarray(model.predict(X_tr), dtype=np.float64)
    p_te = np.asarray(model.predict(X_te), dtype=np.float64)
    out.heading("Regression quality")
    m_te = regression_metrics(y_te, p_te, w_te)
    m_tr = regression_metrics(y_tr, p_tr, w_tr)
    fields = [("RMSE", "rmse"), ("mean absolute error", "mae"), ("bias", "bias"),
              ("resolution (IQR / 1.349)", "resolution_iqr"),
              ("resolution (truncated RMS, 90%)", "resolution_trms")]
    rows = [(label, getattr(m_te, key), getattr(m_tr, key)) for label, key in fields]
    out.html(html_table(["", "test sample", "training sample"], rows, "regression-table"))
    binned = resolution_vs_target(y_te, p_te, w_te)
    out.figure("fig-predicted-vs-true", "Predicted against true target (test sample)",
               lambda: plotting.plot_predicted_vs_true(y_te, p_te, w_te))
    out.figure("fig-resolution", "Bias and resolution in bins of the true target (test "
               "sample)", lambda: plotting.plot_resolution(binned))


def _document(title: str, model: Any, out: _Sections) -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>{html.escape(type(model).__name__)}, written {stamp}. Figures: "
        f"{len(out.figures)}.</p>"
        + "\n".join(out.parts)
        + '<div id="render-check" data-images-shown="-1">not rendered</div>'
        f"<script>{_RENDER_CHECK}</script></body></html>\n"
    )


class _CallableModule(types.ModuleType):
    """Lets ``hepbdt.report(...)`` work even when ``hepbdt.report`` is this module.

    Importing ``hepbdt.report`` binds the submodule to the package attribute of the same
    name, so ``hepbdt.report`` can be either the module or the function.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Path:
        return report(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
