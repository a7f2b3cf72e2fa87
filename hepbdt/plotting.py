"""Figures for a trained BDT: ROC, scores, overtraining, rankings, curves, regression.

One function per figure. Each returns a :class:`matplotlib.figure.Figure` drawn in the
mplhep ROOT style (without touching the global matplotlib style) and, when ``path`` is
given, saves it as ``<path>.png`` and ``<path>.pdf`` (a ``.png``/``.pdf`` suffix on
``path`` is dropped). ``exp_label="Simulation"`` (or ``"CMS Simulation"``, or every figure
drawn inside ``with experiment_label(...)``) draws an experiment-style label with mplhep
above the plot. Figures are not registered with pyplot, so nothing needs closing.
Histograms use boost-histogram's weighted storage: error bars are ``sqrt(sum w^2)``,
scaled as the bin where the histogram is normalised (the normalisation's own uncertainty
left out).
The numbers come from :mod:`hepbdt.evaluation`; this module only draws, and gives the
text of a number as the figures, the report and the summary show it (:func:`number_text`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import matplotlib as mpl
import mplhep
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import AutoLocator, MaxNLocator, NullLocator

from hepbdt._util import (
    atomic_path,
    number_text,
    percent_text,
    pvalue_text,
    requested_percent,
    setting_text,
    shown_alike,
    weight_exponent,
)
from hepbdt.evaluation._data import (
    beyond_tolerance,
    check_classification,
    check_regression_pair,
    check_weights,
    column_names,
    named_array,
)
from hepbdt.evaluation._hist import common_edges, weighted_histogram
from hepbdt.evaluation.curves import LearningCurve
from hepbdt.evaluation.decorrelation import DecorrelationMeasures
from hepbdt.evaluation.metrics import BinnedRegressionMetrics, SignificanceScan, roc_auc, roc_curve
from hepbdt.evaluation.multiclass import one_vs_rest_auc, one_vs_rest_roc
from hepbdt.evaluation.overtraining import OvertrainingResult, overtraining_test
from hepbdt.evaluation.ranking import FeatureRanking, PermutationImportance, weighted_correlations

__all__ = [
    "experiment_label",
    "number_text",
    "plot_background_rejection",
    "plot_correlation_matrices",
    "plot_decorrelation_front",
    "plot_learning_curve",
    "plot_mass_sculpting",
    "plot_multiclass_roc",
    "plot_overtraining",
    "plot_predicted_vs_true",
    "plot_ranking",
    "plot_resolution",
    "plot_roc",
    "plot_roc_and_rejection",
    "plot_roc_curves",
    "plot_score_distributions",
    "plot_significance_scan",
    "plain_text",
    "save_figure",
]

SIGNAL_COLOR = "#3f90da"
BACKGROUND_COLOR = "#e42536"
PathLike = str | os.PathLike[str]


def save_figure(fig: Figure, path: PathLike, formats: Sequence[str] = ("png", "pdf")
                ) -> list[Path]:
    """Save ``fig`` as ``<path>.<fmt>`` for each format; write to a temporary name, rename."""
    base = Path(path)
    if base.suffix.lower() in {".png", ".pdf", ".svg"}:
        base = base.with_suffix("")
    base.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        target = base.parent / f"{base.name}.{fmt}"
        with atomic_path(target) as temporary, open(temporary, "wb") as handle:
            fig.savefig(handle, format=fmt, dpi=100)
        written.append(target)
    return written


_EXPERIMENT_LABEL: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "hepbdt_experiment_label", default=None)
_EXPERIMENTS = ("ATLAS", "CMS", "LHCb", "ALICE", "Belle II", "Belle", "BaBar", "CDF", "D0")


@contextlib.contextmanager
def experiment_label(text: str | None) -> Iterator[None]:
    """Draw ``text`` (e.g. "Simulation", "CMS Simulation") on every figure drawn inside."""
    token = _EXPERIMENT_LABEL.set(text or None)
    try:
        yield
    finally:
        _EXPERIMENT_LABEL.reset(token)


def _draw_experiment_label(fig: Figure, text: str) -> None:
    """The label above each top panel (not on colour bars), as mplhep draws it: a leading
    experiment name in bold, the rest in italics."""
    exp = next((name for name in _EXPERIMENTS if text == name or text.startswith(name + " ")),
               "")
    rest = text[len(exp):].strip()
    if not hasattr(fig.canvas, "get_renderer"):  # mplhep 0.3.40 measures text with it
        FigureCanvasAgg(fig)
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        if hasattr(ax, "_colorbar") or (spec is not None and not spec.is_first_row()):
            continue
        mplhep.label.exp_text(exp=exp, text=rest, loc=0, ax=ax, fontsize=18)


def _fit_axes(fig: Figure) -> None:
    """Break each axes title and x label into lines that fit its axes (one line ran off
    the figure: the ranking's x label lost its start), and space a linear x axis's ticks
    for labels of six characters (the style's large tick labels of a score axis ran into
    each other: "-1.25-1.00-0.75")."""
    tick_size = mpl.font_manager.FontProperties(
        size=mpl.rcParams["xtick.labelsize"]).get_size_in_points()
    for ax in fig.axes:
        width = ax.get_position().width * fig.get_figwidth() * 72.0
        for text in (ax.title, ax.xaxis.label):
            if text.get_text():
                text.set_text(_fitted(text.get_text(), width, text.get_fontsize()))
        if ax.get_xscale() == "linear" and type(ax.xaxis.get_major_locator()) is AutoLocator:
            ax.xaxis.set_major_locator(MaxNLocator(
                nbins=max(3, int(width / (6 * 0.6 * tick_size))), steps=[1, 2, 2.5, 5, 10]))


def _fitted(text: str, width: float, fontsize: float) -> str:
    """``text`` broken into lines of at most ``width`` points. An estimate from the font
    size (a character about 0.55 of it wide), so that no renderer is needed before the
    layout; math text is left as it is."""
    if "$" in text:
        return text
    return textwrap.fill(text, max(20, int(width / (0.55 * fontsize))))


def plain_text(name: Any) -> str:
    """A user's name (feature, class, sample, variable) as matplotlib shows it as written.

    Every '$' is escaped, so that '$x_1^2$' is not drawn as math text and '$\\frac{$' is no
    parse error (matplotlib turns each '\\$' back into '$' outside math, and inside it).
    Callers building a label from a name (``xlabel=f"P({plain_text(name)})"``) use it.
    """
    return str(name).replace("$", "\\$")



def _fix_math_font(fig: Figure) -> None:
    """Math text (the subscripts of the labels) in STIX sans, which ships with matplotlib:
    figures are often saved outside the ROOT style, where the default math fonts would be
    looked up (and a missing 'cursive' family warned about)."""
    texts = list(fig.texts)
    for ax in fig.axes:  # not fig.findobj: walking every artist would build the ticks
        legend = ax.get_legend()
        texts += [ax.xaxis.label, ax.yaxis.label, ax.title, *ax.texts,
                  *(legend.get_texts() if legend is not None else ())]
        # tick labels unconditionally: their text (a log axis's $\mathdefault{10^{2}}$) is
        # set when the figure is drawn, maybe outside the style, and the ticks made then
        # copy the first tick's font
        for axis in (ax.xaxis, ax.yaxis):
            for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                tick.label1.set_math_fontfamily("stixsans")
                tick.label2.set_math_fontfamily("stixsans")
    for text in texts:
        if "$" in text.get_text():
            text.set_math_fontfamily("stixsans")


def _figure(figure: Callable[..., Figure]) -> Callable[..., Figure]:
    """Draw inside the mplhep ROOT style, with the experiment label (``exp_label``, else
    :func:`experiment_label`'s), a line above the whole figure when the call passes
    ``suptitle`` (whose events or models it shows), and save when it passes ``path``.
    Titles wider than their axes (or the figure) are wrapped onto more lines."""

    @functools.wraps(figure)
    def wrapper(*args: Any, path: PathLike | None = None, exp_label: str | None = None,
                suptitle: str | None = None, **kwargs: Any) -> Figure:
        with mpl.style.context(mplhep.style.ROOT), mpl.rc_context({"figure.figsize": (9, 7)}):
            fig = figure(*args, **kwargs)
            text = exp_label if exp_label is not None else _EXPERIMENT_LABEL.get()
            if text:
                _draw_experiment_label(fig, text)
            if suptitle:
                fig.suptitle(_fitted(suptitle, 0.95 * fig.get_figwidth() * 72.0, 14), fontsize=14)
            _fit_axes(fig)
            _fix_math_font(fig)
            fig.tight_layout()
            # tight_layout leaves a placeholder layout engine, for which every savefig
            # draws the whole figure once more before drawing it: the same pixels, a
            # tenth more time
            fig.set_layout_engine(None)
            if path is not None:
                save_figure(fig, path)
        return fig

    return wrapper


def _normalised(values: np.ndarray, weights: np.ndarray, edges: np.ndarray, what: str
                ) -> tuple[np.ndarray, np.ndarray]:
    """Density (unit area) and its error from a weighted histogram; ValueError naming
    ``what`` when there is no positive net weight to normalise (no events, or weights
    that sum to zero or less). The weights are first scaled by a power of two (exact), so
    that sum w^2 neither underflows (1e-170) nor overflows (1e170)."""
    if values.size == 0:
        raise ValueError(f"no {what} events: a distribution normalised to unit area needs "
                         "events")
    exponent = weight_exponent(weights)
    sumw, sumw2 = weighted_histogram(values, np.ldexp(weights, -exponent), edges)
    total = float(sumw.sum())
    if not total > 0:
        raise ValueError(f"the {what} weights sum to {np.ldexp(total, exponent):g}: a "
                         "distribution normalised to unit area needs a positive net weight")
    scale = 1.0 / (total * np.diff(edges))
    return sumw * scale, np.sqrt(sumw2) * scale


def _counted(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The values of the events of non-zero weight (all of them where every weight is 0):
    what a figure's bins span. An event of weight 0 is no event: a regression row of weight
    0 with target -999 stretched the 50 bins of the predicted-against-true figure over
    [-999, 3], leaving every weighted event in 2 of its cells."""
    counted = weights != 0
    return values[counted] if counted.any() else values


def _outside_note(scores: np.ndarray, weights: np.ndarray) -> str | None:
    """The legend's note on the scores outside the edges (which span the finite scores):
    the infinite ones of events of non-zero weight, counted in the first or last bin; None
    when there are none (an event of weight 0 is none: three at +inf were said to be in the
    last bin, which they left empty)."""
    scores = scores[weights != 0]
    low, high = int(np.sum(scores == -np.inf)), int(np.sum(scores == np.inf))
    if not low and not high:
        return None
    parts = [f"{n} at {sign}inf in the {where} bin"
             for n, sign, where in ((low, "-", "first"), (high, "+", "last")) if n]
    return "scores " + ", ".join(parts)


_RocCurve = tuple[str, np.ndarray, np.ndarray, float, str]
# The Greek letter in the text font, only the subscript in mathtext: mathtext's own epsilon
# would fall back to a font the ROOT style does not name (and warn on every run).
_EPS_S = r"Signal efficiency ε$_\mathrm{S}$"


def _roc_curves(y: Any, score: Any, sample_weight: Any, label: str,
                train: tuple[Any, Any, Any] | None) -> list[_RocCurve]:
    """(name, eff_S, eff_B, AUC, line style) of the sample and, dashed, the training one."""
    curves = [(label, y, score, sample_weight, "-")]
    if train is not None:
        curves.append(("train", *train, "--"))
    out = []
    for name, yy, ss, ww, style in curves:
        eff_s, eff_b, _ = roc_curve(yy, ss, ww)
        out.append((name, eff_s, eff_b, roc_auc(yy, ss, ww), style))
    return out


#: Bins a side of a 2-d histogram, at most: its cells are the square (20,000 asked for two
#: 3 GiB arrays of 1,000 events); 1-d histograms take evaluation's MAX_BINS (10,000).
MAX_2D_BINS = 1_000
MAX_LINE_POINTS = 5_000  # a curve of more points is drawn through about twice this many


def _thin(n: int, keep: Any = ()) -> Any:
    """The points of an n-point curve to draw: all of them up to 2 x MAX_LINE_POINTS, else
    MAX_LINE_POINTS spaced evenly in index and as many spaced geometrically (dense at the
    start, where a ROC curve's highest rejections are), the first, the last and ``keep``
    (e.g. a maximum) among them: the same line to the eye, without a vertex per event."""
    if n <= 2 * MAX_LINE_POINTS:
        return slice(None)
    even = np.linspace(0, n - 1, MAX_LINE_POINTS).astype(np.int64)
    geometric = np.geomspace(1, n, MAX_LINE_POINTS).astype(np.int64) - 1
    return np.unique(np.r_[even, geometric, 0, n - 1, np.asarray(keep, np.int64)])


_OUTSIDE_MARK = " *"
_OUTSIDE_NOTE = "* efficiencies beyond [0, 1] at some cuts:\nnegative weights"


def _roc_label(name: str, eff_s: np.ndarray, eff_b: np.ndarray, auc: float) -> str:
    """A curve's legend entry: its AUC, marked (``_OUTSIDE_MARK``, which the legend's title
    explains: ``_roc_legend``) where signed weights took an efficiency out of [0, 1] (a net
    weight passing a cut above the class's total)."""
    outside = bool(np.any((eff_s < 0) | (eff_s > 1) | (eff_b < 0) | (eff_b > 1)))
    return f"{name} (AUC = {number_text(auc, fixed=True)})" + (_OUTSIDE_MARK if outside else "")


def _roc_legend(ax: Any, **options: Any) -> None:
    """The legend of ROC curves, titled with the note on efficiencies beyond [0, 1] in small
    type when a curve is marked so (a note in each entry made it wider than the figure)."""
    marked = any(line.get_label().endswith(_OUTSIDE_MARK) for line in ax.lines)
    ax.legend(**options, title=_OUTSIDE_NOTE if marked else None, title_fontsize="x-small")


def _span(arrays: Iterable[np.ndarray], low: float, high: float) -> tuple[float, float]:
    """[low, high] widened to every finite value of ``arrays``, so that no point is drawn
    outside the axes."""
    for values in arrays:
        values = values[np.isfinite(values)]
        if values.size:
            low, high = min(low, float(values.min())), max(high, float(values.max()))
    return low, high


def _efficiency_limits(ax: Any, eff: list[np.ndarray], rejection: list[np.ndarray]) -> None:
    """Linear axes of [0, 1] efficiency and [0, 1.05] rejection (1 - efficiency), widened
    where signed weights take an efficiency beyond [0, 1]."""
    ax.set_xlim(*_span(eff, 0.0, 1.0))
    y_low, y_high = _span(rejection, 0.0, 1.0)
    ax.set_ylim(y_low - (0.05 if y_low < 0 else 0.0), y_high + 0.05)


def _draw_linear_roc(ax: Any, curves: list[_RocCurve]) -> None:
    """TMVA's ROC: 1 - eff_B against eff_S, linear axes (widened where signed weights give
    efficiencies outside [0, 1])."""
    for name, eff_s, eff_b, auc, style in curves:
        at = _thin(eff_s.size)
        ax.plot(eff_s[at], 1.0 - eff_b[at], style,
                label=_roc_label(plain_text(name), eff_s, eff_b, auc))
    ax.plot([0, 1], [1, 0], ":", color="grey", label="random")
    _efficiency_limits(ax, [c[1] for c in curves], [1.0 - c[2] for c in curves])
    ax.set_xlabel(_EPS_S)
    ax.set_ylabel(r"Background rejection 1 − ε$_\mathrm{B}$")
    _roc_legend(ax, loc="lower left")


def _draw_rejection(ax: Any, curves: list[_RocCurve]) -> None:
    """The HEP papers' ROC: 1 / eff_B on a log scale against eff_S (points with eff_B > 0;
    below a rejection of 1 too, where signed weights give eff_B > 1)."""
    top, bottom = 10.0, 1.0
    for name, eff_s, eff_b, auc, style in curves:
        keep = (eff_b > 0) & (eff_s > 0)
        rejection = 1.0 / eff_b[keep]
        at = _thin(rejection.size, keep=[np.argmax(rejection)] if rejection.size else [])
        ax.plot(eff_s[keep][at], rejection[at], style,
                label=_roc_label(plain_text(name), eff_s, eff_b, auc))
        if rejection.size:
            top = max(top, float(rejection.max()))
            bottom = min(bottom, float(rejection.min()))
    grid = np.linspace(0.01, 1.0, 100)
    ax.plot(grid, 1.0 / grid, ":", color="grey", label="random")
    ax.set_yscale("log")
    # Plain numbers: the default 10^n labels are math text, drawn with the math fonts of
    # whatever style is active when the figure is saved.
    ax.yaxis.set_major_formatter(mpl.ticker.FuncFormatter(lambda v, _: _rejection_tick(v)))
    ax.yaxis.set_minor_formatter(mpl.ticker.NullFormatter())
    ax.set_xlim(*_span([c[1][c[1] > 0] for c in curves], 0.0, 1.0))
    ax.set_ylim(bottom if bottom == 1.0 else bottom / 1.1, top * 3)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_xlabel(_EPS_S)
    ax.set_ylabel(r"Background rejection 1/ε$_\mathrm{B}$")
    _roc_legend(ax, loc="upper right")


def _rejection_tick(value: float) -> str:
    """A log rejection axis's tick label: whole numbers from 1 ("1,000"), the digits below
    1 ("0.1", "0.01": signed weights give rejections below 1, whose ticks read "0")."""
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


@_figure
def plot_roc(
    y: Any,
    score: Any,
    sample_weight: Any = None,
    *,
    label: str = "test",
    train: tuple[Any, Any, Any] | None = None,
) -> Figure:
    """Background rejection (1 - eff_B) against signal efficiency, TMVA style.

    ``train`` is an optional ``(y, score, w)`` of the training sample, drawn dashed.
    Save with ``path=...``.
    """
    fig = Figure()
    _draw_linear_roc(fig.add_subplot(), _roc_curves(y, score, sample_weight, label, train))
    return fig


@_figure
def plot_roc_curves(samples: Sequence[tuple[str, Any, Any, Any, str]], *,
                    title: str | None = None) -> Figure:
    """TMVA-style ROC curves (1 - eff_B against eff_S) of several samples, each given as
    ``(name, y, score, sample_weight, line style)`` (e.g. the folds of a k-fold training)."""
    curves = [(name, *roc_curve(y, score, w)[:2], roc_auc(y, score, w), style)
              for name, y, score, w, style in samples]
    fig = Figure()
    ax = fig.add_subplot()
    _draw_linear_roc(ax, curves)
    if title:
        ax.set_title(title, fontsize=16)
    return fig


@_figure
def plot_background_rejection(
    y: Any,
    score: Any,
    sample_weight: Any = None,
    *,
    label: str = "test",
    train: tuple[Any, Any, Any] | None = None,
) -> Figure:
    """Background rejection 1/eff_B on a log scale against signal efficiency (HEP style).

    Cuts that keep no background weight (eff_B <= 0) have no finite rejection and are not
    drawn, nor those that keep no signal weight (eff_S <= 0). ``train`` is an optional
    ``(y, score, w)`` of the training sample, drawn dashed.
    """
    fig = Figure()
    _draw_rejection(fig.add_subplot(), _roc_curves(y, score, sample_weight, label, train))
    return fig


@_figure
def plot_roc_and_rejection(
    y: Any,
    score: Any,
    sample_weight: Any = None,
    *,
    label: str = "test",
    train: tuple[Any, Any, Any] | None = None,
) -> Figure:
    """Both ROC views side by side: 1/eff_B on a log scale (HEP papers) and 1 - eff_B (TMVA)."""
    curves = _roc_curves(y, score, sample_weight, label, train)
    fig = Figure(figsize=(16, 7))
    left, right = fig.subplots(1, 2)
    _draw_rejection(left, curves)
    _draw_linear_roc(right, curves)
    return fig


@_figure
def plot_score_distributions(
    y: Any,
    score: Any,
    sample_weight: Any = None,
    *,
    bins: int = 40,
    xlabel: str = "BDT score",
) -> Figure:
    """Signal and background score distributions, each normalised to unit area.

    ``bins`` equal-width bins span the finite scores of the events of non-zero weight (an
    event of weight 0 is none); infinite scores count in the first or last bin, and the
    legend says how many. Errors are ``sqrt(sum w^2)`` scaled as the bin (the
    normalisation's own uncertainty left out); a bin of negative net weight is drawn
    below 0. A class without events or with a net weight <= 0 is refused.
    """
    is_signal, s, w = check_classification(y, score, sample_weight)
    edges = common_edges(_counted(s, w), bins)
    fig = Figure()
    ax = fig.add_subplot()
    for mask, name, color in ((is_signal, "signal", SIGNAL_COLOR),
                              (~is_signal, "background", BACKGROUND_COLOR)):
        density, error = _normalised(s[mask], w[mask], edges, name)
        mplhep.histplot(density, edges, yerr=error, ax=ax, histtype="step", color=color,
                        label=name, linewidth=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Normalised events / bin width")
    ax.legend(title=_outside_note(s, w))
    return fig


@_figure
def plot_overtraining(
    train_scores: Any,
    train_y: Any,
    train_w: Any,
    test_scores: Any,
    test_y: Any,
    test_w: Any,
    *,
    bins: int = 40,
    result: OvertrainingResult | None = None,
    xlabel: str = "BDT score",
    class_names: tuple[str, str] = ("signal", "background"),
    title: str | None = None,
) -> Figure:
    """TMVA's overtraining plot: test as filled histograms, training as points with errors.

    The KS p-values (of :func:`hepbdt.evaluation.overtraining_test`, computed unless
    ``result`` is given) are printed on the figure. ``class_names``: the words for label 1
    and label 0 (e.g. ``("ttbar", "other classes")`` for one class against the rest).
    ``title``: what the events are (e.g. "fold 0 of 3"), above the axes.
    Each histogram is normalised to unit area on ``bins`` equal-width bins spanning the
    finite scores of both samples' events of non-zero weight, as
    :func:`plot_score_distributions` (infinite scores in the end bins, said in the legend;
    errors ``sqrt(sum w^2)`` scaled as the bin).
    """
    tr_sig, tr_s, tr_w = check_classification(train_y, train_scores, train_w, "train_scores")
    te_sig, te_s, te_w = check_classification(test_y, test_scores, test_w, "test_scores")
    if result is None:
        result = overtraining_test(tr_s, tr_sig, tr_w, te_s, te_sig, te_w)
    edges = common_edges(np.concatenate([_counted(tr_s, tr_w), _counted(te_s, te_w)]), bins)
    centers = 0.5 * (edges[1:] + edges[:-1])
    fig = Figure()
    ax = fig.add_subplot()
    lowest = 0.0
    for sig, name, color in ((True, class_names[0], SIGNAL_COLOR),
                             (False, class_names[1], BACKGROUND_COLOR)):
        te_mask = te_sig if sig else ~te_sig
        tr_mask = tr_sig if sig else ~tr_sig
        density, _ = _normalised(te_s[te_mask], te_w[te_mask], edges, f"{name} test")
        mplhep.histplot(density, edges, ax=ax, histtype="fill", color=color, alpha=0.35,
                        label=f"{plain_text(name)} (test sample)")
        lowest = min(lowest, float(density.min()))
        density, error = _normalised(tr_s[tr_mask], tr_w[tr_mask], edges, f"{name} training")
        ax.errorbar(centers, density, yerr=error, fmt="o", color=color, markersize=4,
                    label=f"{plain_text(name)} (training sample)")
        lowest = min(lowest, float(np.min(density - error)))
    shown = (plain_text(class_names[0]), plain_text(class_names[1]))
    ax.text(0.03, 0.97, _overtraining_text(result, shown), transform=ax.transAxes,
            va="top", fontsize=15)
    top = ax.get_ylim()[1]
    ax.set_ylim(1.1 * lowest, top + 0.6 * (top - 1.1 * lowest))  # bins below 0 stay in view
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Normalised events / bin width")
    ax.legend(loc="upper right", fontsize=15,
              title=_outside_note(np.concatenate([tr_s, te_s]), np.concatenate([tr_w, te_w])),
              title_fontsize=13)
    if title:
        ax.set_title(title, fontsize=14)
    return fig


def _overtraining_text(result: OvertrainingResult, class_names: tuple[str, str]) -> str:
    """The p-values the verdict comes from (KS and chi2 of each class: the smallest
    decides), never rounded onto 0 or 1 or across a threshold; "n/a" where a test had none."""
    def pvalue(p: float) -> str:
        return pvalue_text(p, (result.pvalue_fail, result.pvalue_warn), 3)

    lines = ["Kolmogorov-Smirnov p-value", "/ chi2 p-value"]
    lines += [f"{name}: {pvalue(part.ks_pvalue)} / {pvalue(part.chi2_pvalue)}"
              for name, part in zip(class_names, (result.signal, result.background),
                                    strict=True)]
    return "\n".join([*lines, f"verdict: {result.verdict}"])


@_figure
def plot_multiclass_roc(
    y: Any,
    proba: Any,
    sample_weight: Any = None,
    *,
    class_names: Sequence[str] | None = None,
    train: tuple[Any, Any, Any] | None = None,
) -> Figure:
    """One-against-rest ROC curve of each class: the rejection of the other classes
    (1 - their efficiency) against the class's efficiency, cutting on its probability.

    ``y`` holds class indices, ``proba`` the (n, K) probabilities; ``train`` an optional
    ``(y, proba, w)`` of the training sample, drawn dashed in the same colour."""
    samples = [("test", y, proba, sample_weight, "-")]
    if train is not None:
        samples.append(("train", *train, "--"))
    fig = Figure()
    ax = fig.add_subplot()
    colors = mpl.rcParams["axes.prop_cycle"].by_key().get("color", [SIGNAL_COLOR])
    drawn: list[tuple[np.ndarray, np.ndarray]] = []
    for name, yy, pp, ww, style in samples:
        aucs = one_vs_rest_auc(yy, pp, ww)
        k = len(aucs)
        names = ([plain_text(n) for n in class_names] if class_names is not None
                 else [str(j) for j in range(k)])
        if len(names) != k:
            raise ValueError(f"{len(names)} class names for the {k} columns of the {name} "
                             "probabilities: one name per class, in column order")
        for j, (eff, eff_rest, _) in enumerate(one_vs_rest_roc(yy, pp, ww)):
            at = _thin(eff.size)
            ax.plot(eff[at], 1.0 - eff_rest[at], style, color=colors[j % len(colors)],
                    label=_roc_label(f"{names[j]}, {name}", eff, eff_rest, aucs[j]))
            drawn.append((eff, 1.0 - eff_rest))
    ax.plot([0, 1], [1, 0], ":", color="grey", label="random")
    _efficiency_limits(ax, [d[0] for d in drawn], [d[1] for d in drawn])
    ax.set_xlabel("Efficiency of the class")
    ax.set_ylabel("Rejection of the other classes")
    _roc_legend(ax, loc="lower left", fontsize=13)
    return fig


@_figure
def plot_ranking(ranking: FeatureRanking | PermutationImportance, *, title: str | None = None
                 ) -> Figure:
    """Horizontal bars of feature importance, most important on top (errors: repeat spread)."""
    order = ranking.order()
    names = [plain_text(ranking.feature_names[i]) for i in order]
    if isinstance(ranking, PermutationImportance):
        values = ranking.importances_mean[order]
        errors = ranking.importances_std[order]
        xlabel = {"roc_auc": "Drop in ROC AUC when shuffled",
                  "mse": "Rise in mean squared error when shuffled"}.get(ranking.metric,
                                                                         ranking.metric)
        if ranking.metric.startswith("roc_auc, "):  # one class against the rest, named
            xlabel = f"Drop in ROC AUC ({plain_text(ranking.metric[9:])}) when shuffled"
        title = title or "Permutation importance"
    else:
        values, errors = ranking.importance[order], None
        xlabel = ("TMVA importance (squared split gains per tree, square root, normalised)"
                  if ranking.quadrature else "Importance (summed split gain, normalised)")
        title = title or "Variable ranking (split gain)"
    fig = Figure(figsize=(9, max(4.0, 1.0 + 0.5 * len(names))))
    ax = fig.add_subplot()
    pos = np.arange(len(names))[::-1]
    ax.barh(pos, values, xerr=errors, color=SIGNAL_COLOR, capsize=3)
    ax.set_yticks(pos, names)
    ax.yaxis.set_minor_locator(NullLocator())  # minor ticks between names mean nothing
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=16)
    return fig


#: Correlation matrices of up to this many variables have their values written in the
#: cells; larger ones show the colour scale alone.
MAX_ANNOTATED_VARIABLES = 20


def _draw_matrix(fig: Figure, ax: Any, corr: np.ndarray, names: list[str], title: str,
                 cell_points: float) -> None:
    """One matrix in percent, the values in the cells when there are few enough variables;
    text sizes follow the cell size (``cell_points``, in points). An undefined correlation
    (NaN: a variable without spread, or a pair with no events in common) is a grey cell,
    "n/a": white would read as 0 %."""
    cmap = mpl.colormaps["RdBu_r"].with_extremes(bad="lightgrey")
    image = ax.imshow(100 * corr, cmap=cmap, vmin=-100, vmax=100)
    ticks = np.arange(len(names))
    tick_size = min(16.0, 0.6 * cell_points)
    ax.set_xticks(ticks, names, rotation=60, ha="right", rotation_mode="anchor",
                  fontsize=tick_size)
    ax.set_yticks(ticks, names, fontsize=tick_size)
    ax.minorticks_off()
    if len(names) <= MAX_ANNOTATED_VARIABLES:
        size = min(16.0, 0.42 * cell_points)
        for i in ticks:
            for j in ticks:
                ax.text(j, i, _percent_text(corr[i, j]), ha="center", va="center",
                        fontsize=size, color="white" if abs(corr[i, j]) > 0.6 else "black")
    ax.set_title(title, fontsize=18)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="Correlation (%)")


def _percent_text(value: float) -> str:
    """A correlation in whole percent; "n/a" for NaN; a correlation short of +-1 never
    shows as +-100 (99.6 %, not 100 %: that would say the variables are one)."""
    if np.isnan(value):
        return "n/a"
    text = str(int(round(100 * value)))
    if abs(value) < 1 and text.lstrip("-") == "100":
        return number_text(100 * value, 1, fixed=True, marks=(0.0, 100.0, -100.0))
    return text


@_figure
def plot_correlation_matrices(
    X: Any,
    y: Any = None,
    sample_weight: Any = None,
    feature_names: Sequence[str] | None = None,
) -> Figure:
    """Weighted linear correlation matrices in percent: signal and background side by side.

    With ``y=None`` (regression) a single matrix of all events is drawn. Up to
    ``MAX_ANNOTATED_VARIABLES`` variables the values are written in the cells; beyond, the
    colour scale alone shows them. The variables are named by ``feature_names`` (one a
    column), else by X's own names (a data frame's, a dict's, a FeatureMatrix's), else
    x0, x1, ...; ``feature_names`` that are X's own names in another order find each
    column by its name (others label the columns in X's order).
    """
    if hasattr(X, "shape"):  # arrays and BinnedMatrix are read block by block; a dict or
        given = column_names(X)  # list as the estimators read it (np.asarray: a 0-d object)
    else:
        X, given = named_array(X)
    names, order = _matrix_labels(given, feature_names, X.shape[-1])
    n = X.shape[0]
    if y is None:
        titles = ["Correlation (all events)"]
        matrices = weighted_correlations(X, sample_weight)
    else:
        is_signal, _, _ = check_classification(y, np.zeros(n), None)
        titles = ["Correlation (signal)", "Correlation (background)"]
        background, signal = weighted_correlations(X, sample_weight, is_signal, 2)
        matrices = [signal, background]
    matrices = [matrix[np.ix_(order, order)] for matrix in matrices]
    side = min(14.0, max(7.0, 0.5 * len(names) + 3))  # beyond ~20 variables: no numbers
    fig = Figure(figsize=(side * len(titles) + 1, side))
    for k, (title, matrix) in enumerate(zip(titles, matrices, strict=True), start=1):
        ax = fig.add_subplot(1, len(titles), k)
        _draw_matrix(fig, ax, matrix, names, title, 0.7 * side * 72 / max(1, len(names)))
    return fig


def _matrix_labels(given: list[str] | None, feature_names: Sequence[str] | None, m: int
                   ) -> tuple[list[str], list[int]]:
    """The correlation matrix's variable names as drawn and the column of X each shows:
    ``feature_names`` that are X's own names (``given``) in another order taken by name (a
    dict of columns c, a, b with feature_names a, b, c drew corr(c, a) = -5 % as that of
    a and b, 96 %), other ones by position, one a column of the ``m``."""
    names = given if feature_names is None else [str(name) for name in feature_names]
    if names is None:
        return [f"x{i}" for i in range(m)], list(range(m))
    if len(names) != m:
        raise ValueError(f"feature_names has {len(names)} names for the {m} columns of X: "
                         "one name a column, in X's order")
    order = list(range(m))
    if given is not None and len(set(given)) == m and sorted(names) == sorted(given):
        order = [given.index(name) for name in names]
    return [plain_text(name) for name in names], order


@_figure
def plot_learning_curve(curve: LearningCurve, *, title: str | None = None) -> Figure:
    """Training and test loss (and ROC AUC) against the number of trees; early stop marked;
    ``title`` says whose curve it is where that is not the only model's (k-fold)."""
    with_auc = curve.test_auc is not None
    fig = Figure(figsize=(9, 9 if with_auc else 6.5))
    axes = fig.subplots(2 if with_auc else 1, 1, sharex=True, squeeze=False)[:, 0]
    if title:
        axes[0].set_title(title, fontsize=16)
    axes[0].plot(curve.n_trees, curve.train_loss, label="training", color=SIGNAL_COLOR)
    axes[0].plot(curve.n_trees, curve.test_loss, label="test", color=BACKGROUND_COLOR)
    trees = "trees before the DDT map" if curve.before_map else ""
    axes[0].set_ylabel(f"Loss ({curve.loss_name}{', ' + trees if trees else ''})")
    if with_auc:
        axes[1].plot(curve.n_trees, curve.train_auc, label="training", color=SIGNAL_COLOR)
        axes[1].plot(curve.n_trees, curve.test_auc, label="test", color=BACKGROUND_COLOR)
        axes[1].set_ylabel(f"ROC AUC ({trees})" if trees else "ROC AUC")
    for ax in axes:
        if curve.best_n_trees is not None:
            ax.axvline(curve.best_n_trees, ls="--", color="grey",
                       label=f"early stop ({curve.best_n_trees} {curve.unit})")
        ax.legend(fontsize=16)
    axes[-1].set_xlabel(f"Number of {curve.unit}")
    return fig


@_figure
def plot_significance_scan(scan: SignificanceScan, *, xlabel: str = "Cut on BDT score"
                           ) -> Figure:
    """S/sqrt(B), S/sqrt(S+B) and AMS against the cut, with the best cuts marked and the
    cuts that may not be best (too few background MC events, counted or effective, or
    B <= 0) shaded."""
    fig = Figure()
    ax = fig.add_subplot()
    curves = (("s_over_sqrt_b", "S/√B", scan.s_over_sqrt_b),
              ("s_over_sqrt_s_plus_b", "S/√(S+B)", scan.s_over_sqrt_s_plus_b),
              ("ams", rf"AMS (b$_\mathrm{{reg}}$ = {setting_text(scan.b_reg)})", scan.ams))
    finite = [np.flatnonzero(np.isfinite(v)) for _, _, v in curves]
    maxima = [f[np.argmax(v[f])] for (_, _, v), f in zip(curves, finite, strict=True) if f.size]
    best = [np.flatnonzero(scan.thresholds == b.threshold)[:1] for b in scan.best_cuts.values()
            if b.found]  # the best qualifying cuts the legend quotes, on the line
    at = _thin(scan.thresholds.size, keep=np.concatenate([maxima, *best]))
    thresholds = scan.thresholds[at]
    for key, label, values in curves:
        best = scan.best_cuts[key]
        text = (f"max {best.value:.3g} at {scan.threshold_text(key)}" if best.found
                else "no cut qualifies")
        (line,) = ax.plot(thresholds, values[at], label=f"{label}: {text}")
        if best.found:
            ax.axvline(best.threshold, ls=":", color=line.get_color())
    if not scan.qualifies.all():
        ax.fill_between(thresholds, 0, 1, where=~scan.qualifies[at], step="mid",
                        transform=ax.get_xaxis_transform(), color="grey", alpha=0.2, lw=0,
                        label=f"< {scan.min_background_events} background MC events "
                        "(counted or effective) or B ≤ 0")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Significance")
    ax.legend(fontsize=13)
    return fig


@_figure
def plot_predicted_vs_true(
    y_true: Any, y_pred: Any, sample_weight: Any = None, *, bins: int = 50,
    label: str = "target",
) -> Figure:
    """Weighted 2-d histogram of the predicted against the true target, with the diagonal.

    ``bins`` equal-width bins a side (at most ``MAX_2D_BINS``, 1,000) span both, over the
    events of non-zero weight (an event of weight 0 is none); a bin without events is
    blank, one of negative net weight (signed weights) is coloured by its value, the
    colour scale reaching below 0. Targets or predictions that are NaN or infinite are
    refused: they lie in no bin.
    """
    t, p = check_regression_pair(y_true, y_pred)
    w = check_weights(sample_weight, t.shape[0])
    edges = common_edges(np.concatenate([_counted(t, w), _counted(p, w)]), bins,
                         limit=MAX_2D_BINS)  # bins^2 cells
    counts, _, _ = np.histogram2d(t, p, bins=[edges, edges], weights=w)
    events, _, _ = np.histogram2d(t, p, bins=[edges, edges], weights=(w != 0).astype(float))
    fig = Figure()
    ax = fig.add_subplot()
    masked = np.ma.masked_where(events.T == 0, counts.T)
    mesh = ax.pcolormesh(edges, edges, masked, cmap="viridis")
    fig.colorbar(mesh, ax=ax, label="Weighted events")
    ax.plot(edges[[0, -1]], edges[[0, -1]], "--", color="red", label="prediction = truth")
    ax.set_xlabel(f"True {label}")
    ax.set_ylabel(f"Predicted {label}")
    ax.legend(loc="upper left")
    return fig


@_figure
def plot_resolution(binned: BinnedRegressionMetrics, *, label: str = "target") -> Figure:
    """Bias and resolution (IQR and the RMS of the central residuals) of the regression in
    bins of the target."""
    fig = Figure()
    ax = fig.add_subplot()
    xerr = 0.5 * np.diff(binned.edges)
    ax.errorbar(binned.centers, binned.bias, xerr=xerr, fmt="o", label="bias (mean residual)")
    ax.errorbar(binned.centers, binned.resolution_iqr, xerr=xerr, fmt="s",
                label="resolution (IQR / 1.349)")
    ax.errorbar(binned.centers, binned.resolution_trms, xerr=xerr, fmt="^",
                label=f"resolution (RMS of the central {requested_percent(binned.truncation)})")
    ax.errorbar(binned.centers, binned.rmse, xerr=xerr, fmt="v", label="RMSE")
    ax.axhline(0.0, color="grey", lw=1)
    ax.set_xlabel(f"True {label}")
    ax.set_ylabel(f"Predicted - true {label}")
    ax.legend(fontsize=13)
    return fig


@_figure
def plot_decorrelation_front(measures: dict[str, DecorrelationMeasures], *,
                             efficiency: float | None = 0.5) -> Figure:
    """Background rejection against 1/JSD of the background mass, one marker line per
    model (label -> measures): at every measured signal efficiency, or with
    ``efficiency`` only that one (one point per model: a front across models).

    A point without a finite, positive rejection and 1/JSD (a cut that keeps no
    background: rejection and 1/JSD infinite or undefined; a row not measured) has no
    place on the log axes: it is not drawn, and its model's legend entry says so."""
    fig = Figure()
    ax = fig.add_subplot()
    any_drawn = False
    for label, m in measures.items():
        names = _efficiency_labels(m)
        rejection, inverse_jsd = m.background_rejection, m.inverse_jsd
        rows = list(range(len(names)))
        if efficiency is not None:
            m.at(efficiency)  # refuses an efficiency that was not measured
            rows = [int(np.argmin(np.abs(m.signal_efficiency - efficiency)))]
        drawn = [k for k in rows if _drawable(rejection[k], inverse_jsd[k])]
        left_out = [names[k].split(" ")[0] for k in rows if k not in drawn]
        text = label + (f" (not drawn at {', '.join(left_out)}: rejection or 1/JSD "
                        "infinite or not measured)" if left_out else "")
        achieved = m.achieved_signal_efficiency
        if efficiency is not None and drawn and achieved is not None and (
                not shown_alike(achieved[drawn[0]], efficiency)):  # the axis says 50 %
            text += (f" (its cut keeps {percent_text(achieved[drawn[0]])} of the signal: "
                     "tied scores)")
        ax.plot(inverse_jsd[drawn], rejection[drawn], "o-" if efficiency is None else "o",
                label=text)
        any_drawn = any_drawn or bool(drawn)
        if efficiency is None:
            for k in drawn:
                ax.annotate(names[k].split(" (")[0], (inverse_jsd[k], rejection[k]),
                            fontsize=10, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    if not any_drawn:  # log axes need limits of their own when no point gives them
        ax.set_xlim(1, 10)
        ax.set_ylim(1, 10)
    ax.set_xlabel("1 / JSD (background mass before and after the cut)")
    where = "" if efficiency is None else f" at {requested_percent(efficiency)} signal efficiency"
    ax.set_ylabel("Background rejection" + where)
    ax.legend(fontsize=12)
    return fig


@_figure
def plot_mass_sculpting(measures: DecorrelationMeasures, *, title: str | None = None
                        ) -> Figure:
    """The background (left) and signal (right) mass shapes before any cut and after the
    cuts at each measured signal efficiency, each normalised to unit area: the shapes of
    :func:`~hepbdt.evaluation.decorrelation.decorrelation_measures`, whose masses outside
    the edges count in the first or last bin and whose bins of negative net weight count
    as empty. A row not measured (NaN shape) has its legend entry and no line."""
    fig = Figure(figsize=(14, 6))
    axes = fig.subplots(1, 2)
    edges = measures.mass_edges
    widths = np.diff(edges)
    for ax, all_shape, shapes, name in (
            (axes[0], measures.background_shape_all, measures.background_shapes, "Background"),
            (axes[1], measures.signal_shape_all, measures.signal_shapes, "Signal")):
        ax.stairs(all_shape / widths, edges, color="black", lw=2, label="no cut")
        for e, shape, jsd in zip(_efficiency_labels(measures), shapes,
                                 measures.background_jsd if name == "Background"
                                 else measures.signal_jsd, strict=True):
            ax.stairs(shape / widths, edges, label=f"ε_S = {e} (1/JSD {_inverse(jsd)})")
        ax.set_xlabel(plain_text(measures.variable))
        ax.set_ylabel("Normalised to unit area")
        ax.set_title(name if title is None else f"{title}: {name.lower()}", fontsize=16)
        ax.legend(fontsize=10, title_fontsize=10,
                  title="outside the range: in the first or last bin")
    return fig


def _drawable(rejection: float, inverse_jsd: float) -> bool:
    """Whether a (rejection, 1/JSD) point has a place on log axes: both finite and > 0."""
    return bool(np.isfinite(rejection) and np.isfinite(inverse_jsd) and rejection > 0
                and inverse_jsd > 0)


def _inverse(jsd: float) -> str:
    """1/JSD as the legends show it: "n/a" where the JSD is not measured (NaN)."""
    if np.isnan(jsd):
        return "n/a"
    return "∞" if jsd <= 0 else f"{1.0 / jsd:.3g}"


def _efficiency_labels(measures: DecorrelationMeasures) -> list[str]:
    """The signal efficiency of each row, as its cut keeps it: tied scores make a cut keep
    more than requested, "50 % (requested 45 %)"; "requested 10 %, not reachable" for a
    row that is not measured (its cut keeps too much more)."""
    achieved = measures.achieved_signal_efficiency
    if achieved is None:
        return [requested_percent(e) for e in measures.signal_efficiency]
    labels = []
    for e, a in zip(measures.signal_efficiency, achieved, strict=True):
        if beyond_tolerance(a, e):
            labels.append(f"{requested_percent(e)} requested, not reachable (cut keeps "
                          f"{percent_text(a)})")
        elif shown_alike(a, e):
            labels.append(requested_percent(e))
        else:
            labels.append(f"{percent_text(a)} (requested {requested_percent(e)})")
    return labels
