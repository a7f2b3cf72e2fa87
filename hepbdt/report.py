"""The training report: one self-contained HTML file, read top-down as a physicist would.

:func:`report` evaluates a fitted classifier or regressor on its training and test
samples (:mod:`hepbdt.evaluation`), draws the figures (:mod:`hepbdt.plotting`) and writes
a single HTML file: figures embedded as base64 PNG, tables as HTML tables, no external
resources. The summary comes first (overtraining verdict, ROC AUC, signal efficiencies at
standard background efficiencies, ROC and score plots; for a regression RMSE, bias and
resolution), then the caller's sections, the samples, the detailed checks, the rankings,
correlations and learning curve, the provenance (:class:`Provenance`: version, command,
configuration, input files, model hash) and, folded away, the options that act on the
chosen algorithm. A small inline script records in the hidden ``<div id="render-check">``
how many images the browser decoded and how many table cells are filled, so a headless
browser can check the rendered page.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import html
import io
import os
import platform
import re
import sys
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from hepbdt import plotting
from hepbdt._sklearn import fitted_params
from hepbdt._util import (
    MissingValueWarning,
    atomic_write_text,
    cut_text,
    is_classifier,
    percent_text,
    pvalue_text,
    requested_percent,
    setting_text,
    shown_alike,
    unseen_missing_counts,
    unseen_missing_text,
    user_stacklevel,
    weight_exponent,
)
from hepbdt._version import __version__
from hepbdt.binned import MISSING_CODE, BinnedMatrix
from hepbdt.estimators import acting_options, growth_text, tree_unit
from hepbdt.evaluation import curves
from hepbdt.evaluation._data import class_codes, in_model_order, unpack_dataset
from hepbdt.evaluation.curves import LearningCurve
from hepbdt.evaluation.metrics import (
    DEFAULT_MIN_BACKGROUND_EVENTS,
    SPLIT_YIELD_NOTE,
    EfficiencyTable,
    SignificanceScan,
    SplitYields,
    best_at_background_efficiency,
    best_cut_rule,
    efficiency_slack,
    efficiency_table,
    regression_metrics,
    resolution_vs_target,
    roc_curve,
    signal_efficiency_at,
    significance_scan,
    split_yields,
    yield_note,
)
from hepbdt.evaluation.multiclass import (
    class_mix_weights,
    confusion_matrix,
    multiclass_overtraining_test,
    one_vs_rest_auc,
    per_class_permutation_importance,
)
from hepbdt.evaluation.overtraining import OvertrainingResult, overtraining_test
from hepbdt.evaluation.ranking import TMVA_RANKING, permutation_importance, tmva_importance

__all__ = ["report", "Section", "Provenance", "SampleProvenance", "InputFile", "html_table",
           "significance_table"]

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222;
       line-height: 1.4; padding: 0 1em; }
h1 { border-bottom: 2px solid #3f90da; margin-bottom: 0.3em; }
h2 { border-bottom: 1px solid #ccd; margin-top: 1.6em; }
h3 { font-size: 1.05em; margin: 1em 0 0.2em; }
nav { font-size: 0.9em; margin: 0.5em 0 1em; } nav a { margin-right: 0.8em; }
.subtitle { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #eef3fa; }
td.text { text-align: left; font-family: monospace; word-break: break-all; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; }
figure img { max-width: 520px; border: 1px solid #ddd; }
figure img.wide { max-width: 100%; }
figcaption { font-size: 0.9em; color: #555; max-width: 520px; }
figure:has(img.wide) { display: block; } figure:has(img.wide) figcaption { max-width: none; }
.row { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
.key-numbers { flex: 1 1 420px; }
.key-numbers table { font-size: 1.05em; }
.verdict-line { font-size: 1.15em; }
.verdict-ok { color: #1a7f37; font-weight: bold; } .verdict-warning { color: #b58900; font-weight: bold; }
.verdict-undetermined { color: #555555; font-weight: bold; }
.verdict-overtrained { color: #c0392b; font-weight: bold; }
details { margin: 0.6em 0; } summary { cursor: pointer; color: #1f5fa8; }
pre { background: #f6f8fa; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
.note { color: #555; font-size: 0.92em; }
.warning { color: #c0392b; }
"""

# Runs on load, after the browser has decoded the images: a headless browser dumping the
# DOM then reads from the hidden element whether every figure and table cell made it.
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
});
"""

#: The background efficiencies of the summary (signal efficiency at each).
SUMMARY_BACKGROUND_EFFICIENCIES = (0.01, 0.1, 0.3)
#: The background efficiencies whose cuts the per-sample table applies.
SAMPLE_TABLE_BACKGROUND_EFFICIENCIES = (0.01, 0.1)
# Permutation tests shuffle at most this many test events (a random subset beyond): each of
# the features x repeats shuffles scores and sorts them all (13 s of a 1M-event report's 25).
PERMUTATION_EVENTS = 200_000
# The learning curve's stages x events, at most (fewer stages on large samples: each stage
# sorts every event for its AUC; 200 stages up to 1M events, 20 from 10M).
LEARNING_CURVE_EVENT_STAGES = 200_000_000


def _fmt(value: Any) -> str:
    """Table cell text: 4 significant digits for floats (more where that would show 0 or 1
    for a value that is not: an efficiency of 0.99996), 'n/a' for NaN / None."""
    if value is None:
        return "n/a"
    if isinstance(value, bool | str):
        return str(value)
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return "n/a" if not np.isfinite(value) else plotting.number_text(value)
    return str(value)


def _weight_sum(w: np.ndarray, power: int = 1) -> float | str:
    """The sum of ``w ** power`` (1 or 2), as a float where float64 holds it, else as its
    text: the weights are scaled by a power of two first (exact), so that the squares of
    weights of 1e-170 do not sum to 0 nor those of 1e170 to inf."""
    exponent = weight_exponent(w)
    scaled = float(np.sum(np.ldexp(w, -exponent) ** power))
    with np.errstate(over="ignore", under="ignore"):
        value = float(np.ldexp(scaled, power * exponent))
    if scaled == 0 or (np.isfinite(value) and abs(value) >= np.finfo(np.float64).tiny):
        return value
    exact = decimal.Context(prec=30).multiply(decimal.Decimal(scaled),
                                              decimal.Decimal(2) ** (power * exponent))
    return f"{exact:.4g}"


def _pvalue(p: float, check: Any) -> str:
    """A p-value cell, never rounded onto 0 or 1 or across the thresholds of ``check``,
    'n/a' for NaN."""
    return pvalue_text(p, (check.pvalue_fail, check.pvalue_warn))


def _percent(fraction: float) -> str:
    """0.01 -> "1 %"."""
    return requested_percent(fraction)[:-1] + " %"


@dataclass
class Section:
    """A section the caller adds to the report: a heading, HTML (paragraphs, tables made
    with :func:`html_table`) and figures as (element id, caption, function drawing it)."""

    heading: str
    html: str = ""
    figures: Sequence[tuple[str, str, Callable[[], Figure]]] = ()


@dataclass(frozen=True)
class InputFile:
    """One input tree: the file, the tree in it and its number of entries (None: unknown)."""

    path: str
    tree: str | None = None
    entries: int | None = None


@dataclass(frozen=True)
class SampleProvenance:
    """One sample as it was read: its class (or target), files, cut, weight and scale."""

    name: str
    role: str
    files: Sequence[InputFile] = ()
    cut: str | None = None
    weight: str | float | None = None
    scale: float = 1.0


@dataclass
class Provenance:
    """Where the report's model came from: the report's provenance block shows it.

    Every field is optional; :func:`report` adds what it knows itself (hepbdt version,
    date, model class and options, feature names). ``command`` is the command that made
    the model, ``config_path``/``config_text`` the configuration file (its text is shown
    folded), ``features`` maps each feature name to its expression, ``aliases`` each alias
    to its definition, ``split`` and ``training_weights`` say in words how the events were
    split and what the training weights are, ``model_files`` maps a model file's name to
    its SHA-256, ``notes`` holds further (label, text) rows.
    """

    command: str | None = None
    config_path: str | None = None
    config_text: str | None = None
    samples: Sequence[SampleProvenance] = ()
    features: Mapping[str, str] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    split: str | None = None
    training_weights: str | None = None
    model_files: Mapping[str, str] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, value: Provenance | Mapping[str, Any] | None) -> Provenance:
        """A Provenance from itself, None, or a mapping (keys that are no field become notes;
        samples and their files may be mappings too)."""
        if value is None:
            return cls()
        if isinstance(value, Provenance):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"provenance must be a Provenance or a mapping, not "
                            f"{type(value).__name__}")
        names = {f.name for f in fields(cls)}
        known = {k: v for k, v in value.items() if k in names}
        notes = {**dict(known.pop("notes", {}) or {}),
                 **{str(k): str(v) for k, v in value.items() if k not in names}}
        samples = [s if isinstance(s, SampleProvenance) else SampleProvenance(
            **{**s, "files": [f if isinstance(f, InputFile) else InputFile(**f)
                              for f in s.get("files", ())]})
            for s in known.pop("samples", ()) or ()]
        return cls(**known, samples=samples, notes=notes)


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], table_id: str,
               text_columns: Sequence[int] = ()) -> str:
    """An HTML table, cells formatted as everywhere in the report (4 significant digits);
    ``text_columns`` (indices) are left-aligned in a monospace font (expressions, paths).
    A header of empty strings gives a table without a header row."""
    def cell(i: int, value: Any) -> str:
        css = ' class="text"' if i in text_columns else ""
        return f"<td{css}>{html.escape(_fmt(value))}</td>"

    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    thead = f"<thead><tr>{head}</tr></thead>" if any(str(h) for h in header) else ""
    body = "".join("<tr>" + "".join(cell(i, c) for i, c in enumerate(row)) + "</tr>"
                   for row in rows)
    return f'<table id="{table_id}">{thead}<tbody>{body}</tbody></table>'



_FIGURE_OF_MERIT_LABELS = {"s_over_sqrt_b": "S/sqrt(B)", "s_over_sqrt_s_plus_b": "S/sqrt(S+B)",
                           "ams": "AMS"}
SIGNIFICANCE_HEADER = ["figure of merit", "best cut", "value", "other half", "S",
                       "S stat. unc.", "B", "B stat. unc.", "signal MC events",
                       "background MC events"]


def significance_table(scan: SignificanceScan, table_id: str) -> str:
    """The best cut of each figure of merit as an HTML table (its value, the other half's,
    S, B, their statistical uncertainties and MC counts), or "no cut leaves >= N
    background MC events (counted and effective)"."""
    rows: list[list[Any]] = []
    for key, label in _FIGURE_OF_MERIT_LABELS.items():
        if key == "ams":
            label += f" (b_reg = {setting_text(scan.b_reg)})"
        best = scan.best_cuts[key]
        if best.found:
            rows.append([label, scan.threshold_text(key), best.value,
                         scan.other_half.get(key, np.nan), best.signal, best.signal_error,
                         best.background, best.background_error, best.n_signal_mc,
                         best.n_background_mc])
        else:
            rows.append([label, f"no cut leaves >= {scan.min_background_events} background "
                         "MC events (counted and effective) with B > 0", *(["n/a"] * 8)])
    return html_table(SIGNIFICANCE_HEADER, rows, table_id)


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=72)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class _Sections:
    """Collects the report's sections (each a ``<section>`` with its heading) and figures."""

    def __init__(self, figure_files: Mapping[str, str | os.PathLike[str]] | None = None
                 ) -> None:
        self.figure_files = dict(figure_files or {})
        self.parts: list[str] = []
        self.figures: list[str] = []
        self.contents: list[tuple[str, str]] = []
        self.warnings: list[str] = []  # HTML shown above the sections
        self._open = False

    def heading(self, text: str, key: str | None = None) -> None:
        """Start a section; ``key`` (default: from the text) makes its id ``sec-<key>``."""
        key = key or re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
        if self._open:
            self.parts.append("</section>")
        self.parts.append(f'<section id="sec-{key}"><h2>{html.escape(text)}</h2>')
        self.contents.append((f"sec-{key}", text))
        self._open = True

    def html(self, text: str) -> None:
        """Add HTML to the current section."""
        self.parts.append(text)

    def figure(self, fig_id: str, caption: str, draw: Callable[[], Figure],
               wide: bool = False) -> None:
        """Draw a figure (or read its PNG from ``figure_files``) and embed it (``wide``: the
        page's full width); a figure that fails becomes a line saying so."""
        try:
            if fig_id in self.figure_files:
                data = base64.b64encode(Path(self.figure_files[fig_id]).read_bytes()).decode()
            else:
                data = _png(draw())
        except Exception as exc:  # a failing figure must not lose the rest of the report
            self.parts.append(f'<p class="error" id="{fig_id}-error">{html.escape(caption)}: '
                              f"could not be drawn ({html.escape(repr(exc))})</p>")
            return
        self.figures.append(fig_id)
        css = ' class="wide"' if wide else ""
        self.parts.append(
            f'<figure id="{fig_id}"><img alt="{html.escape(caption)}"{css} '
            f'src="data:image/png;base64,{data}"><figcaption>{html.escape(caption)}'
            f"</figcaption></figure>"
        )

    def body(self) -> str:
        """The sections' HTML, the last one closed."""
        return "\n".join(self.parts) + ("</section>" if self._open else "")


@dataclass
class _Events:
    """The training or the test sample as the report uses it: arrays, the model's score
    (decision function or prediction) and the physics samples as (name, role, mask)."""

    X: np.ndarray
    y: np.ndarray
    w: np.ndarray
    score: np.ndarray
    #: (sample name, class, positions of its events) per physics sample (or class).
    groups: list[tuple[str, str, np.ndarray]]
    #: (n, K) class probabilities of a multi-class model (None otherwise).
    proba: np.ndarray | None = None
    #: The events before :meth:`without` left the held-out ones out (None: none left out).
    split: _Events | None = None

    @classmethod
    def of(cls, model: Any, data: Any, unpacked: tuple[Any, ...], classifier: bool,
           classes: Sequence[str] | None = None) -> _Events:
        """Score the events; group them by the Dataset's samples, else by class. With
        ``classes`` (a multi-class model) y holds class indices and ``proba`` is kept."""
        X, y, w, _ = unpacked
        if classes is not None:
            proba = np.asarray(model.predict_proba(X), dtype=np.float64)
            return cls(X, y, w, proba, _groups(data, y, classifier, classes), proba)
        score = model.decision_function(X) if classifier else model.predict(X)
        return cls(X, y, w, np.asarray(score, dtype=np.float64), _groups(data, y, classifier))

    def __len__(self) -> int:
        return self.y.size

    def without(self, left_out: np.ndarray | None) -> _Events:
        """These events without those of ``left_out`` (itself when None)."""
        if left_out is None or not left_out.any():
            return self
        kept = ~left_out
        position = np.cumsum(kept) - 1  # each kept event's position among the kept
        return _Events(self.X[kept], self.y[kept], self.w[kept], self.score[kept],
                       [(name, role, position[rows[kept[rows]]].astype(rows.dtype))
                        for name, role, rows in self.groups],
                       None if self.proba is None else self.proba[kept], self)

    @property
    def n_held_out(self) -> int:
        """The events :meth:`without` left out."""
        return 0 if self.split is None else len(self.split) - len(self)


def _training_count(tr: _Events) -> str:
    """E.g. "9,000 training events (1,000 more held out to choose the trees)"."""
    held = (f" ({tr.n_held_out:,} more held out to choose the number of trees)"
            if tr.n_held_out else "")
    return f"{len(tr):,} training events{held}"


def _checked_held_out(held_out: Any, n: int) -> np.ndarray | None:
    """``report``'s ``held_out`` as a bool array of the training events (ValueError else)."""
    if held_out is None:
        return None
    mask = np.asarray(held_out)
    if mask.shape != (n,) or mask.dtype.kind not in "bui":
        raise ValueError(f"held_out must be {n} booleans, one per training event; got an "
                         f"array of shape {mask.shape} and dtype {mask.dtype}")
    if mask.dtype.kind != "b" and not np.isin(mask, (0, 1)).all():
        raise ValueError("held_out must hold booleans (or 0 and 1)")
    return mask.astype(bool)


def _fit_held_out(model: Any, train: Any, n: int) -> np.ndarray | None:
    """The events of ``train`` (``n`` of them) that the model's fit held out to choose its
    number of trees, from the fit's record (``held_out_mask``): None where it held none out
    or keeps no record (a loaded model); ValueError where ``train`` cannot be the fit's
    events or lacks the event numbers that chose them."""
    draw = getattr(model, "__dict__", {}).get("validation_draw_")
    if draw is None:
        return None
    remedy = ("pass held_out=model.held_out_mask(event) for the events given to fit, or "
              "report on those events")
    if draw["n"] != n:
        raise ValueError(f"the model's fit held out a validation_fraction of its {draw['n']:,} "
                         f"events to choose the number of trees, and train has {n:,}: the "
                         f"report cannot tell which training events no tree trained on; {remedy}")
    if draw["state"] is not None:
        return model.held_out_mask()
    event = getattr(train, "event", None)
    if event is None:
        raise ValueError("the model's fit held out the events whose hashed event numbers fell "
                         "below validation_fraction, and train (X, y, w) has no event numbers: "
                         f"the report cannot tell which training events no tree trained on; {remedy}")
    return model.held_out_mask(np.asarray(event))


def _groups(data: Any, y: np.ndarray, classifier: bool, classes: Sequence[str] | None = None
            ) -> list[tuple[str, str, np.ndarray]]:
    """(sample name, class, its events' positions, increasing) per physics sample of a
    Dataset; per class for tuples. Positions, not masks: a mask a sample held one byte per
    event of every sample (300 samples of 1.5M events: 440 MB beside the estimate)."""
    index = getattr(data, "sample_index", None)
    names = getattr(data, "sample_names", None)
    if index is not None and names:
        index = np.asarray(index)
        members = _members(index, len(names))
        groups = []
        for name, rows in zip(names, members, strict=True):
            role = (", ".join(classes[int(c)] for c in np.unique(y[rows])) or "no events"
                    if classes is not None else _role(y[rows], classifier))
            groups.append((str(name), role, rows))
        return groups
    if classes is not None:
        members = _members(y.astype(np.int64), len(classes))
        return [(name, name, rows) for name, rows in zip(classes, members, strict=True)]
    if classifier:
        background, signal = _members(y.astype(np.int64), 2)
        return [("signal", "signal", signal), ("background", "background", background)]
    return [("all events", "target", np.arange(y.size, dtype=_position_dtype(y.size)))]


def _members(codes: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """The positions of the events of each code 0 .. n_groups - 1, increasing (int32 below
    2**31 events); codes outside that range belong to none."""
    order = np.argsort(codes, kind="stable").astype(_position_dtype(codes.size))
    counts = np.bincount(codes[(codes >= 0) & (codes < n_groups)], minlength=n_groups)
    first = np.searchsorted(codes[order], 0) if codes.size else 0
    return np.split(order[first:first + counts.sum()], np.cumsum(counts)[:-1])


def _position_dtype(n: int) -> type:
    """The dtype of positions among ``n`` events: int32 below 2**31."""
    return np.int32 if n < 2**31 else np.int64


def _role(y: np.ndarray, classifier: bool) -> str:
    """"signal", "background" or both for a sample's labels; "target" for a regression."""
    if not classifier:
        return "target"
    labels = set(np.unique(y).tolist())
    if not labels:
        return "no events"
    return {frozenset({1}): "signal", frozenset({0}): "background"}.get(
        frozenset(labels), "signal and background")


def _in_model_order(model: Any, X: Any, y: np.ndarray, w: np.ndarray, names: list[str]
                    ) -> tuple[Any, np.ndarray, np.ndarray, list[str]]:
    """An unpacked data set with its named columns in the model's feature order, so that
    the rankings name each column right (unnamed columns are the model's by position)."""
    X, ordered = in_model_order(model, X)
    return X, y, w, names if ordered is None else ordered


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
    provenance: Provenance | Mapping[str, Any] | None = None,
    label: str | None = None,
    learning_curve: LearningCurve | None = None,
    figure_files: Mapping[str, str | os.PathLike[str]] | None = None,
    held_out: np.ndarray | None = None,
    binned: bool | None = None,
    summary_verdict: tuple[Any, str] | None = None,
) -> Path:
    """Write a self-contained HTML report of a fitted model and return its path.

    A classifier of three or more classes (``classes_``) gets the multi-class report: the
    one-against-rest ROC and AUC of each class, the weighted confusion matrix, the
    overtraining check and the permutation ranking of each class; its ``y`` are the class
    indices (columns of ``predict_proba``).

    Parameters
    ----------
    model : fitted ``BDTClassifier`` or ``BDTRegressor``
    train, test : ``Dataset`` (``X``, ``y``, ``w``, ``feature_names``; ``sample_index`` and
        ``sample_names`` give the per-sample table a row per physics sample) or
        ``(X, y[, w])`` (a row per class)
    path : the HTML file to write (written to a temporary name, then renamed)
    signal_yield, background_yield : expected events before the cut for the significance
        scan (default: the test sample's weights scaled as ``test_fraction`` says)
    test_fraction : 1: the test weights are the whole sample's expected yield as they are
        (an independent test sample, or all events of a k-fold training). Below 1 (the
        nominal test fraction, 1 - train_fraction of a split) or None: the test events are
        a split of the training and test events together (``Dataset.split``, one fold of
        ``Dataset.kfold``), and each sample's test weights (each class's, within a sample,
        as the split draws them) are scaled by its events / its test events, its actual
        test fraction (:func:`~hepbdt.evaluation.metrics.split_yields`): a split rounds
        each sample's share, so that differs from the nominal fraction, most in small
        samples. A sample with events but none in the test set cannot be estimated: the
        samples table and the significance section name it. A value below 1 far from the
        test events' share of all events is an error. The report states which.
    min_background_events : a best cut of the significance scan must leave at least this
        many background MC events (unweighted test events), as many effective ones, and B > 0
    n_repeats, random_state : for the permutation importance on the test sample
    sections : the caller's own sections, shown after the summary (e.g. the per-fold
        results of a k-fold training)
    provenance : a :class:`Provenance` (or a mapping of its fields): command,
        configuration, input files, model hash; without it the provenance block shows what
        the report knows (version, date, model class, options, feature names)
    label : an experiment-style label drawn on every figure (e.g. "Simulation",
        "CMS Simulation"); none by default
    learning_curve : the learning curve of ``model`` on ``train`` and ``test`` when the
        caller has computed it already (it is computed otherwise)
    figure_files : PNG files the caller has drawn already of the same figures, by figure
        id (``"fig-roc"``, ``"fig-scores"``, ...): embedded instead of drawn again
    held_out : bool per training event: the events the fit held out to choose its number
        of trees (``model.held_out_mask(event)`` of ``n_trees="auto"``), on which no tree
        trained. They count in the samples table and the yields' factors (they are events
        of the split) and are left out of the overtraining check, the training metrics,
        curves and correlations. None: the model's own record (``held_out_mask``, with
        ``train.event`` where its fit held out by event number) when its fit held events
        out, so ``train`` must then be the events given to fit (ValueError otherwise);
        a loaded model keeps no record, and every training event counts as trained on.
    binned : True when the features are a binned read's (each value at its bin's lower
        edge, as the score trees of a binned training hold them); the correlation caption
        says so. None: True when ``train``'s X is a :class:`~hepbdt.binned.BinnedMatrix`.
    summary_verdict : (overtraining check, what it covers) for the summary's verdict line in
        place of this model's own check of ``train`` against ``test`` (a k-fold training's
        check of every fold's model, :func:`~hepbdt.evaluation.combined_over_folds`, as its
        summary.txt prints it); the overtraining section still shows this model's.
    """
    unpacked = [unpack_dataset(data, name) for data, name in ((train, "train"), (test, "test"))]
    unpacked = [_in_model_order(model, *u) for u in unpacked]
    if is_classifier(model):  # the model's labels as its classes (1 = signal for two)
        unpacked = [(X, class_codes(model, np.asarray(y)), *rest) for X, y, *rest in unpacked]
    X_tr, X_te = unpacked[0][0], unpacked[1][0]
    if X_te.shape[1] != X_tr.shape[1]:
        raise ValueError(f"train has {X_tr.shape[1]} features but test has {X_te.shape[1]}")
    names = unpacked[0][3]
    if all(n.startswith("x") for n in names) and hasattr(model, "feature_names_in_"):
        names = [str(n) for n in model.feature_names_in_]
    prov = Provenance.of(provenance)
    classifier = is_classifier(model)
    classes = _class_names(model) if classifier else None
    sample_names = getattr(test, "sample_names", None) or getattr(train, "sample_names", None)
    yields = _YieldBasis.of(test_fraction, _group_keys(train, unpacked[0][1], classifier),
                            _group_keys(test, unpacked[1][1], classifier), signal_yield,
                            background_yield, min_background_events,
                            _label_names(classifier, classes), sample_names,
                            weights=(unpacked[0][2], unpacked[1][2]))
    split = _Events.of(model, train, unpacked[0], classifier, classes)  # every event
    if held_out is None:  # the model's own record of the events its fit held out
        held_out = _fit_held_out(model, train, len(split))
    tr = split.without(_checked_held_out(held_out, len(split)))  # those trained on
    te = _Events.of(model, test, unpacked[1], classifier, classes)
    out = _Sections(figure_files)
    _note_unseen_missing(out, model, (("training sample", split.X), ("test sample", te.X)), names)
    with plotting.experiment_label(label):
        if classes is not None:
            _multiclass_sections(out, model, tr, te, classes, yields, sections, prov,
                                 summary_verdict)
            _multiclass_ranking_section(out, model, te, names, classes, n_repeats,
                                        random_state)
        elif classifier:
            _classifier_sections(out, model, tr, te, yields, sections, prov, summary_verdict)
        else:
            _regressor_sections(out, model, tr, te, yields, sections, prov)
        if classes is None:
            _ranking_section(out, model, te, names, n_repeats, random_state)
        if binned is None:
            binned = isinstance(tr.X, BinnedMatrix)
        _correlation_section(out, tr, te, names, classifier and classes is None, binned)
        _learning_curve_section(out, model, tr, te, learning_curve)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    _provenance_section(out, model, prov, names, stamp)
    _options_section(out, model)
    atomic_write_text(path, _document(title, _subtitle(model, prov, stamp), out))
    return Path(path)


def _note_unseen_missing(out: _Sections, model: Any, samples: Sequence[tuple[str, Any]],
                         names: Sequence[str]) -> None:
    """Say, atop the report and as a MissingValueWarning, which events of ``samples``
    ((label, X) pairs) hold a missing value where the model's training had none: they were
    scored on every split's default side, as ``hepbdt apply`` and Python scoring note."""
    forest = getattr(model, "forest_", None)
    texts = []
    for label, X in samples:
        binned = isinstance(X, BinnedMatrix)
        counts = unseen_missing_counts(forest, X.codes if binned else np.asarray(X),
                                       MISSING_CODE if binned else None)
        if counts is not None:
            texts.append(f"{label}: {unseen_missing_text(zip(names, counts.tolist(), strict=True))}")
    if texts:
        warnings.warn(". ".join(texts), MissingValueWarning, stacklevel=user_stacklevel())
        out.warnings.append('<p class="warning" id="unseen-missing"><strong>Warning:</strong> '
                            f"{html.escape('. '.join(texts))}.</p>")


def _learning_curve_section(out: _Sections, model: Any, tr: _Events, te: _Events,
                            curve: LearningCurve | None) -> None:
    """The learning curve, computed unless the caller has (one staged pass per sample); a
    classifier's training events weighed to the test sample's class mix."""
    out.heading("Learning curve")
    if curve is None and "fig-learning-curve" not in out.figure_files:
        curve = curves.learning_curve(model, (tr.X, _labels(model, tr.y), tr.w),
                                      (te.X, _labels(model, te.y), te.w),
                                      max_event_stages=LEARNING_CURVE_EVENT_STAGES)
    # a caller's figure without its curve is learning_curve's default: matched for classifiers
    matched = (curve.train_class_factors is not None if curve is not None
               else is_classifier(model))
    mix = ("; the training weights rescaled per class to the test sample's class mix, so "
           "that both losses are at one class mix (a log loss depends on it)" if matched else "")
    out.figure("fig-learning-curve", "Loss (and ROC AUC) against the number of trees, "
               f"training and test sample{mix}", lambda: plotting.plot_learning_curve(curve))


def _caller_sections(out: _Sections, sections: Sequence[Section]) -> None:
    for section in sections:
        out.heading(section.heading)
        if section.html:
            out.html(section.html)
        for fig_id, caption, draw in section.figures:
            out.figure(fig_id, caption, draw)


def _describe_model(model: Any, n_features: int) -> str:
    """E.g. "BDTClassifier, gradient boosting: 300 trees (depth 3) on 11 variables", or
    "50 rounds of 4 trees" for a multi-class model."""
    params = fitted_params(model)
    text = type(model).__name__
    if "boosting" in params:
        trees = getattr(model, "n_trees_", params.get("n_trees"))
        text += (f", {params['boosting']} boosting: {trees} {tree_unit(model)} "
                 f"({growth_text(params, is_classifier(model))})")
    return f"{text} on {n_features} variables"


def _cuts_at(te: _Events, background_effs: Sequence[float], tr: _Events | None = None
             ) -> list[tuple[float, float, str, float]]:
    """(background efficiency, cut, its text, the background efficiency it keeps): the cut
    ``score >= cut`` of the highest signal efficiency among those keeping at most that
    background efficiency (test sample), and the cut as text that selects the same events
    of the test and the training sample ``tr`` (``_util.cut_text``: never at or below the
    next lower score of either)."""
    eff_s, eff_b, thresholds = roc_curve(te.y, te.score, te.w)
    slack = efficiency_slack(te.w[np.asarray(te.y) != 1])
    scores = te.score if tr is None else np.concatenate([te.score, tr.score])
    cuts = []
    for target in background_effs:
        k = best_at_background_efficiency(eff_s, eff_b, target, slack)
        lower = scores[scores < thresholds[k]]
        below = float(lower.max()) if lower.size else None
        cuts.append((float(target), float(thresholds[k]), cut_text(thresholds[k], below),
                     float(eff_b[k])))
    return cuts


def _class_names(model: Any) -> list[str] | None:
    """The class names of a model of three or more classes, else None."""
    classes = getattr(model, "classes_", None)
    return [str(c) for c in classes] if classes is not None and len(classes) > 2 else None


def _multiclass_sections(out: _Sections, model: Any, tr: _Events, te: _Events,
                         classes: list[str], yields: _YieldBasis, sections: Sequence[Section],
                         prov: Provenance, summary_verdict: tuple[Any, str] | None) -> None:
    """Summary (per-class AUC, overtraining verdict, ROC curves), caller sections, samples,
    the confusion matrix and the per-class overtraining check."""
    assert tr.proba is not None and te.proba is not None
    # training against test at one class mix, the test sample's: the rest's score
    # distribution and a one-against-rest AUC change with per-class weight factors (norm)
    w_tr = class_mix_weights(tr.y, tr.w, te.y, te.w)
    auc_te, auc_tr = one_vs_rest_auc(te.y, te.proba, te.w), one_vs_rest_auc(tr.y, tr.proba, w_tr)
    check = multiclass_overtraining_test(tr.proba, tr.y, tr.w, te.proba, te.y, te.w, classes)
    out.heading("Summary")
    out.html('<div class="row"><div class="key-numbers">')
    out.html(f"<p>{html.escape(_describe_model(model, tr.X.shape[1]))}; {len(classes)} "
             f"classes; {_training_count(tr)} and {len(te):,} test events.</p>")
    headline, scope = summary_verdict or (check, "below")
    out.html(f'<p class="verdict-line">Overtraining check: <span class="verdict-'
             f'{headline.verdict}" id="summary-verdict">{html.escape(headline.verdict)}</span> '
             f"(the worst of the classes' checks, {html.escape(scope)})</p>")
    rows = [(name, a_te, a_tr) for name, a_te, a_tr in zip(classes, auc_te, auc_tr, strict=True)]
    rows.append(("mean", float(auc_te.mean()), float(auc_tr.mean())))
    out.html('<p class="note">ROC AUC of each class against the rest, cutting on its '
             "probability (weighted; the training weights rescaled per class to the test "
             "sample's class mix).</p>")
    out.html(html_table(["class", "test AUC", "training AUC"], rows, "summary-table"))
    out.html("</div>")
    out.figure("fig-roc", "ROC curve of each class against the rest: the rejection of the "
               "other classes against the class's efficiency, cutting on its probability; "
               "test (solid) and training (dashed)",
               lambda: plotting.plot_multiclass_roc(te.y, te.proba, te.w, class_names=classes,
                                                    train=(tr.y, tr.proba, w_tr)))
    out.html("</div>")
    _caller_sections(out, sections)
    _samples_section(out, tr, te, False, yields, prov.training_weights)
    out.heading("Confusion matrix")
    matrix = confusion_matrix(te.y, te.proba, te.w, classes)
    out.html('<p class="note">Test events by true class (rows) and predicted class (columns, '
             "the most probable). First the fraction of each true class's weight, then the "
             f"summed weights. Weighted accuracy: {_fmt(matrix.accuracy)}.</p>")
    header = ["true \u2193 / predicted \u2192", *classes]
    out.html(html_table(header, [[name, *row] for name, row in zip(
        classes, matrix.fractions(), strict=True)], "confusion-fractions"))
    out.html(html_table(header, [[name, *row] for name, row in zip(
        classes, matrix.weights, strict=True)], "confusion-weights"))
    out.heading("Overtraining check")
    out.html(f'<p>Verdict: <span class="verdict-{check.verdict}" id="verdict">'
             f"{html.escape(check.verdict)}</span> (p-value below {setting_text(check.pvalue_fail)}: "
             f"overtrained, below {setting_text(check.pvalue_warn)}: warning). Each class's probability, "
             "training against test, for the class's own events and for the other "
             "classes' events; the training weights rescaled per class to the test sample's "
             "class mix, so that the other classes are mixed alike in both.</p>")
    rows = [(name, events, part.ks_statistic, _pvalue(part.ks_pvalue, check), part.chi2,
             part.ndf, _pvalue(part.chi2_pvalue, check), part.verdict)
            for name, result in zip(classes, check.per_class, strict=True)
            for events, part in ((name, result.signal), ("other classes", result.background))]
    out.html(html_table(["probability of", "events", "KS statistic", "KS p-value", "chi2",
                         "ndf", "chi2 p-value", "verdict"], rows, "overtraining-table"))
    for k, name in enumerate(classes):
        out.figure(f"fig-overtraining-{k}", f"Overtraining check of P({name}): test (filled) "
                   "against training (points)",
                   lambda k=k, name=name: plotting.plot_overtraining(
                       tr.proba[:, k], tr.y == k, w_tr, te.proba[:, k], te.y == k, te.w,
                       result=check.per_class[k], xlabel=f"P({plotting.plain_text(name)})",
                       class_names=(name, "other classes")))


def _multiclass_ranking_section(out: _Sections, model: Any, te: _Events, names: list[str],
                                classes: list[str], n_repeats: int,
                                random_state: int | None) -> None:
    """The split-gain ranking of all trees and the permutation ranking of each class."""
    out.heading("Variable ranking")
    ranking = (tmva_importance(model, names, quadrature=True) if hasattr(model, "forest_")
               else None)
    perms = per_class_permutation_importance(model, te.X, te.y, te.w, n_repeats=n_repeats,
                                             random_state=random_state, feature_names=names,
                                             max_samples=PERMUTATION_EVENTS)
    mean_drop = np.mean([p.importances_mean for p in perms], axis=0)
    order = ranking.order() if ranking is not None else np.argsort(-mean_drop, kind="stable")
    header = ["rank", "variable"] + (["TMVA importance (all trees)"] if ranking is not None else [])
    header += [f"AUC drop ({name})" for name in classes] + ["mean AUC drop"]
    rows = []
    for rank, i in enumerate(order, start=1):
        row: list[Any] = [rank, names[i]]
        if ranking is not None:
            row.append(ranking.importance[i])
        row += [p.importances_mean[i] for p in perms] + [mean_drop[i]]
        rows.append(row)
    out.html(f'<p class="note">Permutation importance of each class: the drop in its '
             f"one-against-rest ROC AUC on the test sample when the variable is shuffled "
             f"({n_repeats} repeats{_subset_text(perms[0].n_events, te.w)}).</p>")
    out.html(html_table(header, rows, "ranking"))
    if ranking is not None:
        out.figure("fig-ranking", "Variable ranking from the split gains of every class's "
                   f"trees ({TMVA_RANKING})", lambda: plotting.plot_ranking(ranking))


def _classifier_sections(out: _Sections, model: Any, tr: _Events, te: _Events,
                         yields: _YieldBasis, sections: Sequence[Section],
                         prov: Provenance, summary_verdict: tuple[Any, str] | None) -> None:
    """Summary, caller sections, samples, efficiencies, overtraining and significance."""
    eff_te = efficiency_table(te.y, te.score, te.w)
    eff_tr = efficiency_table(tr.y, tr.score, tr.w)
    check = overtraining_test(tr.score, tr.y, tr.w, te.score, te.y, te.w)
    _classifier_summary(out, model, tr, te, eff_te, eff_tr,
                        summary_verdict or (check, ""))
    _caller_sections(out, sections)
    _samples_section(out, tr, te, True, yields, prov.training_weights)

    out.heading("Efficiencies")
    rows = [(label, v_te, v_tr)
            for (label, v_te), (_, v_tr) in zip(eff_te.rows(), eff_tr.rows(), strict=True)]
    out.html('<p class="note">TMVA\'s table: signal efficiency at fixed background efficiency '
             "and background rejection (1 - eff_B) at fixed signal efficiency; the training "
             "sample's values are there to spot overtraining. The ROC curves are in the "
             "summary.</p>")
    out.html(html_table(["", "test sample", "training sample"], rows, "efficiency-table"))
    _overtraining_section(out, tr, te, check)
    _significance_section(out, te, yields)


def _classifier_summary(out: _Sections, model: Any, tr: _Events, te: _Events,
                        eff_te: EfficiencyTable, eff_tr: EfficiencyTable,
                        verdict: tuple[OvertrainingResult, str]) -> None:
    """The verdict (an overtraining check, and what it covers when not this model's check
    below), AUC and signal efficiencies at 1/10/30 % background, ROC and scores."""
    check, scope = verdict
    out.heading("Summary")
    out.html('<div class="row"><div class="key-numbers">')
    out.html(f"<p>{html.escape(_describe_model(model, tr.X.shape[1]))}; {_training_count(tr)} "
             f"and {len(te):,} test events.</p>")
    out.html(f'<p class="verdict-line">Overtraining check: <span class="verdict-'
             f'{check.verdict}" id="summary-verdict">{html.escape(check.verdict)}</span> '
             f"({html.escape(scope + '; ' if scope else '')}the smallest p-value of training "
             "against test decides; Kolmogorov-Smirnov / "
             f"chi2 p-value: signal {_pvalue(check.signal.ks_pvalue, check)} / "
             f"{_pvalue(check.signal.chi2_pvalue, check)}, background "
             f"{_pvalue(check.background.ks_pvalue, check)} / "
             f"{_pvalue(check.background.chi2_pvalue, check)})</p>")
    sig_te = signal_efficiency_at(te.y, te.score, te.w, SUMMARY_BACKGROUND_EFFICIENCIES)
    sig_tr = signal_efficiency_at(tr.y, tr.score, tr.w, SUMMARY_BACKGROUND_EFFICIENCIES)
    rows: list[tuple[Any, ...]] = [("ROC AUC", eff_te.roc_auc, eff_tr.roc_auc)]
    rows += [(f"signal efficiency at {_percent(target)} background efficiency", v_te, v_tr)
             for target, v_te, v_tr in zip(SUMMARY_BACKGROUND_EFFICIENCIES, sig_te, sig_tr,
                                           strict=True)]
    out.html(html_table(["", "test sample", "training sample"], rows, "summary-table"))
    out.html("</div>")
    out.figure("fig-scores", "Score distributions of the test sample, each class normalised "
               "to unit area", lambda: plotting.plot_score_distributions(te.y, te.score, te.w))
    out.html("</div>")
    out.figure("fig-roc", "ROC curves of the test (solid) and training (dashed) samples: "
               "background rejection (1 / background efficiency) on a log scale, as HEP "
               "papers show it (left), and TMVA's 1 - background efficiency (right), against "
               "the signal efficiency",
               lambda: plotting.plot_roc_and_rejection(te.y, te.score, te.w,
                                                       train=(tr.y, tr.score, tr.w)),
               wide=True)


def _samples_section(out: _Sections, tr: _Events, te: _Events, classifier: bool,
                     yields: _YieldBasis, training_weights: str | None) -> None:
    """Per physics sample of each set: events, sum of weights and of squared weights, the
    fraction of negative weights, the factor that makes a test weight an expected yield of
    the whole sample and (classifier) the efficiency of the standard cuts."""
    out.heading("Samples")
    cuts = _cuts_at(te, SAMPLE_TABLE_BACKGROUND_EFFICIENCIES, tr) if classifier else []
    weights = training_weights or ("as passed to the report: hepbdt's training normalises "
                                   "them per class when the split's norm is not none")
    held = (f" The training rows are the events the trees trained on: {tr.n_held_out:,} more "
            "were held out (validation_fraction) to choose the number of trees; they count "
            "among the events of the factors." if tr.n_held_out else "")
    out.html(f'<p class="note">Test weights as read; {html.escape(yields.factor_note())} '
             f"Training weights: {html.escape(weights)}.{held}"
             + (" The cuts are those of the test sample's ROC curve at the background "
                "efficiency given; the efficiency is the weighted fraction of each sample's "
                "events that pass." if cuts else "") + "</p>")
    header = ["sample", "class", "set", "events", "sum of weights", "sum of squared weights",
              "fraction of negative weights", YIELD_FACTOR_HEADER]
    header += [_cut_header(*cut) for cut in cuts]
    rows = []
    training_rows = {name: rows for name, _, rows in (tr.split or tr).groups}  # the factors'
    for set_name, events in (("test", te), ("training", tr)):
        for name, role, members in events.groups:
            w = events.w[members]
            factor = (yields.factor_text(members, training_rows.get(name))
                      if set_name == "test" else None)
            row: list[Any] = [name, role, set_name, int(members.size), _weight_sum(w),
                              _weight_sum(w, 2), float(np.mean(w < 0)) if w.size else 0.0,
                              factor]
            for _, cut, _, _ in cuts:
                passed = float(w[events.score[members] >= cut].sum())
                row.append(passed / float(w.sum()) if w.sum() != 0 else None)
            rows.append(row)
    out.html(html_table(header, rows, "samples"))


def _cut_header(background_eff: float, cut: float, text: str, kept: float) -> str:
    """The samples table's header of the efficiency of one cut (``text``: as printed; it
    keeps ``kept`` of the test background); the cut that keeps nothing (no cut on the score
    keeps so little background) says so, and one that keeps less than asked (tied scores
    jump over it) says how much."""
    if np.isinf(cut):
        return (f"efficiency at {_percent(background_eff)} background efficiency: no event "
                "passes (no cut on the score keeps that little background)")
    less = ("" if shown_alike(kept, background_eff) else
            f": it keeps {percent_text(kept, 2)} of the test background, the cut of the "
            "highest signal efficiency keeping at most that")
    return (f"efficiency of score \u2265 {text} (cut at {_percent(background_eff)} "
            f"background efficiency{less})")


def _overtraining_section(out: _Sections, tr: _Events, te: _Events,
                          check: OvertrainingResult) -> None:
    out.heading("Overtraining check")
    rows = [(name, part.ks_statistic, _pvalue(part.ks_pvalue, check), part.chi2, part.ndf,
             _pvalue(part.chi2_pvalue, check), part.verdict)
            for name, part in (("signal", check.signal), ("background", check.background))]
    out.html(f'<p>Verdict: <span class="verdict-{check.verdict}" id="verdict">'
             f"{html.escape(check.verdict)}</span> (p-value below {setting_text(check.pvalue_fail)}: "
             f"overtrained, below {setting_text(check.pvalue_warn)}: warning).</p>")
    out.html(html_table(["class", "KS statistic", "KS p-value", "chi2", "ndf", "chi2 p-value",
                         "verdict"], rows, "overtraining-table"))
    out.figure("fig-overtraining", "Overtraining check: test (filled) against training "
               "(points)", lambda: plotting.plot_overtraining(
                   tr.score, tr.y, tr.w, te.score, te.y, te.w, result=check))


def _significance_section(out: _Sections, te: _Events, yields: _YieldBasis) -> None:
    out.heading("Significance")
    scan = significance_scan(te.y, te.score, te.w, yields.signal_yield,
                             yields.background_yield, yield_scale=yields.split.scale,
                             min_background_events=yields.min_background_events)
    out.html(f'<p id="significance-yields">{html.escape(yields.describe())}</p>')
    if yields.split.missing:
        out.html('<p class="warning" id="significance-missing"><strong>Warning: S and B are '
                 f"incomplete.</strong> {html.escape(yields.missing_text())}</p>")
    out.html(significance_table(scan, "significance-table"))
    out.figure("fig-significance", "Significance against the cut on the score (test sample, "
               "yields of the whole sample)", lambda: plotting.plot_significance_scan(scan))


def _regressor_sections(out: _Sections, model: Any, tr: _Events, te: _Events,
                        yields: _YieldBasis, sections: Sequence[Section],
                        prov: Provenance) -> None:
    """Summary (RMSE, bias, resolution, predicted against true), caller sections, samples
    and the regression quality in detail."""
    m_te = regression_metrics(te.y, te.score, te.w)
    m_tr = regression_metrics(tr.y, tr.score, tr.w)
    out.heading("Summary")
    out.html('<div class="row"><div class="key-numbers">')
    out.html(f"<p>{html.escape(_describe_model(model, tr.X.shape[1]))}; {_training_count(tr)} "
             f"and {len(te):,} test events.</p>")
    rows = [(label, getattr(m_te, key), getattr(m_tr, key)) for label, key in (
        ("RMSE", "rmse"), ("bias (mean of predicted - true)", "bias"),
        ("resolution (IQR / 1.349 of predicted - true)", "resolution_iqr"))]
    out.html(html_table(["", "test sample", "training sample"], rows, "summary-table"))
    out.html("</div>")
    out.figure("fig-predicted-vs-true", "Predicted against true target (test sample)",
               lambda: plotting.plot_predicted_vs_true(te.y, te.score, te.w))
    out.html("</div>")
    _caller_sections(out, sections)
    _samples_section(out, tr, te, False, yields, prov.training_weights)
    out.heading("Regression quality")
    fields_ = [("RMSE", "rmse"), ("mean absolute error", "mae"), ("bias", "bias"),
               ("resolution (IQR / 1.349)", "resolution_iqr"),
               ("resolution (RMS of the central 90%)", "resolution_trms")]
    rows = [(label, getattr(m_te, key), getattr(m_tr, key)) for label, key in fields_]
    out.html(html_table(["", "test sample", "training sample"], rows, "regression-table"))
    binned = resolution_vs_target(te.y, te.score, te.w)
    out.figure("fig-resolution", "Bias and resolution in bins of the true target (test "
               "sample)", lambda: plotting.plot_resolution(binned))


#: The samples table's column of the factor on each sample's test weights.
YIELD_FACTOR_HEADER = "yield = test weights x"


def _labels(model: Any, y: np.ndarray) -> np.ndarray:
    """A two-class classifier's labels of the report's class codes (1 = signal), which the
    evaluation functions read as the model's labels (``evaluation._data.class_codes``)."""
    classes = getattr(model, "classes_", None)
    if classes is None or len(classes) != 2 or not is_classifier(model):
        return y
    return np.asarray(classes)[np.asarray(y, np.int64)]


def _group_keys(data: Any, y: np.ndarray, classifier: bool) -> tuple[np.ndarray, np.ndarray]:
    """(sample index, label) of each event, the groups a split draws from: a Dataset's
    samples (one sample for tuples) and, for a classifier, the class within each."""
    n = np.asarray(y).shape[0]
    index = getattr(data, "sample_index", None)
    sample = np.zeros(n, np.int64) if index is None else np.asarray(index, dtype=np.int64)
    label = np.asarray(y).astype(np.int64) if classifier else np.zeros(n, np.int64)
    return sample, label


def _label_names(classifier: bool, classes: list[str] | None) -> list[str]:
    """The names of the labels of :func:`_group_keys`, by label."""
    if not classifier:
        return ["target"]
    return list(classes) if classes is not None else ["background", "signal"]


@dataclass(frozen=True)
class _YieldBasis:
    """How the significance scan turns test weights into expected yields: the factor of
    each test event (``split.scale``), from ``test_fraction`` as given (None: not given)."""

    test_fraction: float | None
    split: SplitYields
    train_keys: tuple[np.ndarray, np.ndarray]
    sample_names: list[str]
    label_names: list[str]
    signal_yield: float | None
    background_yield: float | None
    min_background_events: int

    @classmethod
    def of(cls, test_fraction: float | None, train_keys: tuple[np.ndarray, np.ndarray],
           test_keys: tuple[np.ndarray, np.ndarray], signal_yield: float | None,
           background_yield: float | None, min_background_events: int,
           label_names: list[str], sample_names: list[str] | None = None,
           weights: tuple[Any, Any] = (None, None)) -> _YieldBasis:
        """Check the options; the factors: 1 with a test fraction of 1, else each group's
        events / its test events (the test events a split of training and test events;
        ``weights``: the training and test weights, whose events of weight 0 are none)."""
        train_w, test_w = weights
        if test_fraction is not None:
            if not 0.0 < float(test_fraction) <= 1.0:
                raise ValueError(f"test_fraction must lie in (0, 1], not {test_fraction!r}")
            test_fraction = float(test_fraction)
        if test_fraction == 1.0:
            split = split_yields(*test_keys, test_weight=test_w)
        else:
            split = split_yields(*test_keys, *train_keys, test_weight=test_w,
                                 other_weight=train_w)
            if test_fraction is not None:
                _check_split_fraction(test_fraction, train_keys[0].size, test_keys[0].size,
                                      len(split.groups))
        # significance_scan checks min_background_events
        return cls(test_fraction, split, train_keys, list(sample_names or []), label_names,
                   signal_yield, background_yield, min_background_events)

    def _scaled(self) -> str:
        """How the test weights are scaled, in words."""
        if self.test_fraction == 1.0:
            return (f"{yield_note(1.0)} (test fraction as given: the test weights are the "
                    "whole sample's yield)")
        source = (f"nominal test fraction {self.test_fraction:.4g} as given" if
                  self.test_fraction is not None else "test fraction not given")
        uniform = self.split.uniform
        common = f", x {uniform:.6g} for every sample" if uniform is not None else ""
        return (f"{SPLIT_YIELD_NOTE}{common} (the test events a split of the training and "
                f"test events, {source}; the factors are in the samples table)")

    def factor_note(self) -> str:
        """The samples section's sentence on the factor column (the significance scan's
        factor for two classes; a regression or three or more classes have no scan)."""
        scan = " in the significance scan" if len(self.label_names) == 2 else ""
        return (f"the column \"{YIELD_FACTOR_HEADER}\" gives the factor that makes them "
                f"expected yields of the whole sample{scan}: {self._scaled()}.")

    def factor_text(self, test_rows: np.ndarray, train_rows: np.ndarray | None) -> str:
        """The factor(s) of one row of the samples table (its test and training events'
        positions): its test events' factors, and "none: no test event" for its groups
        with events but no test event."""
        values = np.unique(self.split.scale[test_rows])
        text = ", ".join(f"{v:.6g}" for v in values)
        missing = {(g.sample, g.label) for g in self.split.missing}
        if missing and train_rows is not None and train_rows.size:
            sample, label = (k[train_rows] for k in self.train_keys)
            lost = sorted({key for key in zip(sample.tolist(), label.tolist(), strict=True)
                           if key in missing})
            if lost:
                names = ", ".join(self._label(label) for _, label in lost)
                text = (text + "; " if text else "") + f"none: {names} without a test event"
        return text or "n/a"

    def _label(self, label: int) -> str:
        names = self.label_names
        return names[label] if 0 <= label < len(names) else f"label {label}"

    def missing_text(self) -> str:
        """The sentence on the groups that have events but no test event."""
        parts = []
        for g in self.split.missing:
            count = f"{g.n_events} event{'' if g.n_events == 1 else 's'}"
            name = (self.sample_names[g.sample] if 0 <= g.sample < len(self.sample_names)
                    else "")
            parts.append(f"{name} ({self._label(g.label)}, {count})" if name
                         else f"{self._label(g.label)} ({count})")
        return (f"{len(parts)} sample(s) have events but none in the test set, so their yield "
                "after a cut cannot be estimated and S and B leave them out: "
                + "; ".join(parts) + " (rows with \"none\" in the samples table). Use a "
                "smaller training fraction, more events or k-fold.")

    def describe(self) -> str:
        """The sentence the report shows above the significance table."""
        scaled = self._scaled()
        unc = "sqrt(sum of (w x factor)^2) of the test events passing the cut, scaled as the yields"
        if self.signal_yield is None and self.background_yield is None:
            text = f"S and B: {scaled}."
        else:
            unc += ("; a given yield's: the yield x its efficiency's, sqrt((1 - e)^2 sum_pass "
                    "w^2 + e^2 sum_fail w^2) / sum w")
            given = [f"{name} = {setting_text(value)} events before the cut x its efficiency"
                     for name, value in (("S", self.signal_yield), ("B", self.background_yield))
                     if value is not None]
            rest = [name for name, value in (("S", self.signal_yield),
                                             ("B", self.background_yield)) if value is None]
            text = "; ".join(given) + (f"; {rest[0]}: {scaled}" if rest else "") + "."
        return (text + f" Stat. unc.: {unc}. MC events: test events passing the cut, "
                f"unweighted. A{best_cut_rule(self.min_background_events)[1:]}.")


def _check_split_fraction(test_fraction: float, n_train: int, n_test: int,
                          n_groups: int) -> None:
    """A test fraction below 1 says the test events are a split of the training and test
    events: refuse one that their counts cannot come from (beyond each group's rounding
    and five binomial standard deviations), rather than scale by the wrong events."""
    n_all = n_train + n_test
    expected = test_fraction * n_all
    slack = 0.5 * n_groups + 5.0 * np.sqrt(n_all * test_fraction * (1.0 - test_fraction)) + 1.0
    if abs(n_test - expected) > slack:
        raise ValueError(
            f"test_fraction={setting_text(test_fraction)}, but the test set holds {n_test} of the "
            f"{n_all} training and test events ({n_test / n_all:.4g}): below 1, "
            "test_fraction says the test events are a split of the training and test events, "
            "and each sample's test weights are scaled by its events / its test events. For "
            "an independent test sample give test_fraction=1 (its weights are the yields) or "
            "signal_yield and background_yield")


def _ranking_section(out: _Sections, model: Any, te: _Events, names: list[str],
                     n_repeats: int, random_state: int | None) -> None:
    out.heading("Variable ranking")
    ranking = None
    if hasattr(model, "forest_"):
        ranking = tmva_importance(model, names, quadrature=True)
    perm = permutation_importance(model, te.X, _labels(model, te.y), te.w, n_repeats=n_repeats,
                                  random_state=random_state, feature_names=names,
                                  max_samples=PERMUTATION_EVENTS)
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
        header += ["TMVA importance", "splits", "total gain", "cover"]
    header += [f"permutation ({perm.metric}) mean", "permutation spread"]
    out.html(html_table(header, rows, "ranking"))
    if ranking is not None:
        out.figure("fig-ranking", f"Variable ranking from the split gains ({TMVA_RANKING})",
                   lambda: plotting.plot_ranking(ranking))
    out.figure("fig-permutation", f"Permutation importance on the test sample "
               f"({n_repeats} repeats{_subset_text(perm.n_events, te.w)})",
               lambda: plotting.plot_ranking(perm))


def _subset_text(used: int | None, w: np.ndarray) -> str:
    """", on N of the M test events, drawn at random" when a permutation test used fewer
    than the M test events of non-zero weight ``w`` (those of weight 0 are none to it)."""
    total = int(np.count_nonzero(w))
    if used is None or used >= total:
        return ""
    return f", on {used:,} of the {total:,} test events, drawn at random"


def _correlation_section(out: _Sections, tr: _Events, te: _Events, names: list[str],
                         classifier: bool, binned: bool) -> None:
    """Signal and background correlations of a two-class model, else those of all events;
    a multi-class model's training events weighed to the test sample's class mix (the
    per-class normalised training weights would give the matrix an artificial mix)."""
    out.heading("Correlations")
    what = "signal (left) and background (right)" if classifier else "all events"
    weights = tr.w
    if tr.proba is not None:  # several classes in one matrix: their mix matters
        weights = class_mix_weights(tr.y, tr.w, te.y, te.w)
        what = ("all events, the training weights rescaled per class to the test sample's "
                "(physical) class mix")
    values = ("values in percent in the cells" if len(names) <= plotting.MAX_ANNOTATED_VARIABLES
              else "the colour scale gives the value")
    if binned:  # what a binned read keeps of each value
        values += ("; a binned read: each value at its bin's lower edge, so a correlation "
                   "of the bins, not of the values")
    out.figure("fig-correlation", f"Weighted linear correlation of the input variables, "
               f"training sample, {what}; {values}",
               lambda: plotting.plot_correlation_matrices(
                   tr.X, tr.y if classifier else None, weights, names), wide=True)


def _options_section(out: _Sections, model: Any) -> None:
    """The options that act on the chosen algorithm, folded away."""
    params = fitted_params(model)
    acting, idle = acting_options(params)
    rows: list[tuple[str, Any]] = [(name, repr(value)) for name, value in sorted(acting.items())]
    kept = getattr(model, "n_trees_", None)
    rows.append(("trees kept (n_trees_)", kept if kept is None or tree_unit(model) == "trees"
                 else f"{kept} {tree_unit(model)}"))
    rows.append(("how (n_trees_reason_)", getattr(model, "n_trees_reason_", None)))
    rows.append(("best iteration (best_iteration_)", getattr(model, "best_iteration_", None)))
    boosting = params.get("boosting")
    scope = f" that act on boosting={boosting!r}" if boosting is not None else ""
    left_out = (f'<p class="note">Left out, as they do nothing with boosting={boosting!r}: '
                f"{html.escape(', '.join(idle))}.</p>" if idle else "")
    out.heading("Options")
    out.html(f'<details id="options-details"><summary>{len(acting)} options of '
             f"{html.escape(type(model).__name__)}{html.escape(scope)} (click to show)"
             f"</summary>{html_table(['option', 'value'], rows, 'options')}{left_out}"
             "</details>")


def _provenance_section(out: _Sections, model: Any, prov: Provenance, names: list[str],
                        stamp: str) -> None:
    """Version, date, model, command, configuration (folded), inputs, features, aliases."""
    out.heading("Provenance")
    out.html('<p class="note">What it takes to make this model again: this hepbdt version, '
             "the command (or the configuration file, whose text is below) and the input "
             "files with the entry counts listed.</p>")
    rows: list[tuple[str, Any]] = [
        ("hepbdt version", f"{__version__} (Python {platform.python_version()}, numpy "
                           f"{np.__version__})"),
        ("written", stamp), ("model", _describe_model(model, len(names)))]
    rows += [(key, value) for key, value in (
        ("command", prov.command), ("configuration file", prov.config_path),
        ("split", prov.split), ("training weights", prov.training_weights)) if value]
    rows += [(f"SHA-256 of {name}", digest) for name, digest in prov.model_files.items()]
    rows += list(prov.notes.items())
    out.html("<h3>Run</h3>" + html_table(["", ""], rows, "provenance-table", text_columns=(1,)))
    if prov.config_text is not None:
        out.html(f'<details id="config-text"><summary>Text of the configuration file '
                 f"{html.escape(prov.config_path or '')}</summary>"
                 f"<pre>{html.escape(prov.config_text)}</pre></details>")
    if prov.samples:
        rows = [(s.name, s.role, f.path, f.tree or "its only tree", f.entries,
                 s.cut or "none", s.weight if s.weight is not None else 1, s.scale)
                for s in prov.samples for f in (s.files or [InputFile("n/a")])]
        out.html("<h3>Input files and selection</h3>" + html_table(
            ["sample", "class", "file", "tree", "entries", "cut", "weight", "scale"], rows,
            "provenance-samples", text_columns=(2, 5, 6)))
    definitions = dict(prov.features) or {
        name: dict(getattr(model, "feature_definitions_", None) or {}).get(name, name)
        for name in names}
    out.html("<h3>Features</h3>" + html_table(["feature", "expression"],
                                              list(definitions.items()),
                                              "provenance-features", text_columns=(1,)))
    if prov.aliases:
        out.html("<h3>Aliases</h3>" + html_table(["alias", "definition"],
                                                 list(prov.aliases.items()),
                                                 "provenance-aliases", text_columns=(1,)))


def _subtitle(model: Any, prov: Provenance, stamp: str) -> str:
    """The line under the title: model class, date, version, configuration, model hash."""
    parts = [f"{type(model).__name__}, written {stamp} by hepbdt {__version__}"]
    if prov.config_path:
        parts.append(f"configuration {prov.config_path}")
    for name, digest in list(prov.model_files.items())[:1]:
        parts.append(f"{name} SHA-256 {digest[:16]}...")
    return (html.escape("; ".join(parts))
            + ' (<a href="#sec-provenance">provenance</a>)')


def _document(title: str, subtitle: str, out: _Sections) -> str:
    contents = " ".join(f'<a href="#{key}">{html.escape(text)}</a>'
                        for key, text in out.contents)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f'<h1>{html.escape(title)}</h1><p class="subtitle" id="subtitle">{subtitle}. '
        f"</p><nav id=\"contents\">{contents}</nav>"
        + "".join(out.warnings)
        + out.body()
        + '<div id="render-check" hidden data-images-shown="-1"></div>'
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
