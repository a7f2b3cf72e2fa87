"""Overtraining check: compare training and test score distributions, with weights.

For signal and background separately, the training and test scores are compared with a
weighted two-sample Kolmogorov-Smirnov test and a chi2 test of the normalised weighted
histograms on a common binning. Signed weights are allowed.

Weighted KS: the statistic is ``D = max |F_1(x) - F_2(x)|`` over all observed ``x``, with
``F`` the weighted empirical CDFs (cumulative weight over total weight; with negative
weights they need not be monotone). The p-value is the one of
``scipy.stats.ks_2samp(method="asymp")`` with the sample sizes replaced by effective ones:
``kstwo.sf(D, round(m1 m2 / (m1 + m2)))``, ``m`` Kish's ``(sum w)^2 / sum w^2`` where the
weights do not depend on the score and smaller where they do (``weighted_ks_2samp``); NaN
when a sample has less than one effective event (Kish's) or that rounded size is 0 (one
event against one). With unit weights it reproduces scipy exactly (events of weight 0,
no events, left out). The chi2 test pools both samples' events for each bin's variance
and counts the normalisation's spread
(``chi2_test``); with unit weights it is Pearson's chi2 of the 2 x K table. Both were
checked by simulation on identical samples (unit, lognormal, heavy, signed and
score-dependent weights, sizes 12 to 5,000, k-fold): P(p < a) at most about a.

Verdict: a sample (signal or background) is "overtrained" when its smaller p-value (KS or
chi2) is below :data:`PVALUE_FAIL` (0.01), a "warning" below :data:`PVALUE_WARN` (0.05),
else "ok"; "undetermined" when neither test has a p-value; the overall verdict is the worse
of the two. The check gives no p-value (NaN) where its training or test events of a class
are fewer than :data:`MIN_EFFECTIVE_EVENTS` (10) effective events: both tests'
approximations fail there (one test event above every one of 60 training scores had a KS
p-value of 0, where the exact test gives 2/61 = 0.033; the chi2 bins hold fewer than the
10 events a sample it asks for), as on the tiny folds of a k-fold training. Small p-values
on large samples can come from tiny but real differences: look at the plot too. Scores
must be finite and each sample's net weight positive: anything else is refused, not tested.

k-fold: the k models are checked one by one, each on its own training events against
its own test events (independent samples); :func:`combined_over_folds` makes one check of
them, each p-value the smallest of the k folds' times k (Bonferroni). Pooling the folds
would compare every event with itself (each training copy and its out-of-fold score are
the same event), which is not a two-sample test.

Drawing is in :func:`hepbdt.plotting.plot_overtraining`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.special import chdtrc
from scipy.stats import kstwo

from hepbdt._util import weight_exponent
from hepbdt.evaluation._data import as_1d, check_labels, check_weights
from hepbdt.evaluation._hist import weighted_histogram

__all__ = [
    "MIN_EFFECTIVE_EVENTS",
    "PVALUE_FAIL",
    "PVALUE_WARN",
    "Chi2Result",
    "KSResult",
    "OvertrainingResult",
    "SampleComparison",
    "chi2_test",
    "combined_over_folds",
    "effective_sample_size",
    "overtraining_test",
    "weighted_ks_2samp",
]

PVALUE_FAIL = 0.01
PVALUE_WARN = 0.05
MIN_EFFECTIVE_EVENTS = 10.0  # of a class's training and of its test events, for a p-value


def effective_sample_size(weights: Any) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` (``n`` for equal weights);
    only the weights' ratios matter (they are scaled by a power of two first). NaN or
    infinite weights are refused (ValueError), as in every other check."""
    w = np.asarray(weights, dtype=np.float64)
    w = check_weights(w.reshape(-1), w.size, "weights")
    w = np.ldexp(w, -weight_exponent(w))
    sum_w2 = float(np.sum(w * w))
    return float(np.sum(w) ** 2 / sum_w2) if sum_w2 > 0 else 0.0


@dataclass(frozen=True)
class KSResult:
    """Weighted two-sample KS test: statistic, asymptotic p-value, effective sizes."""

    statistic: float
    pvalue: float
    n_eff_1: float
    n_eff_2: float


def _weighted_ecdf(sorted_values: np.ndarray, cum_fraction: np.ndarray, at: np.ndarray
                   ) -> np.ndarray:
    idx = np.searchsorted(sorted_values, at, side="right")
    return np.where(idx > 0, cum_fraction[np.maximum(idx - 1, 0)], 0.0)


def weighted_ks_2samp(
    x1: Any,
    x2: Any,
    w1: Any = None,
    w2: Any = None,
    effective_size: Literal["kish", "sum"] = "kish",
) -> KSResult:
    """Weighted two-sample Kolmogorov-Smirnov test (two-sided, asymptotic p-value).

    The arguments go value, value, weight, weight (``chi2_test`` takes each sample's values
    and weights together).

    Parameters
    ----------
    x1, x2 : arrays of shape (n1,), (n2,)
    w1, w2 : weights of the same shapes, or None for unit weights; signed weights allowed;
        events of weight 0 are left out (no events: weights of 0 and 1 give scipy's test
        of the events of weight 1)
    effective_size : "kish" (for Monte Carlo weights) gives the p-value each sample's size
        ``n`` times the smallest, over the pooled scores' quartiles t, of ``F(t) (1 - F(t))``
        over the variance of an event's ``u (1{x <= t} - F(t))`` (``u``: its weight over its
        sample's mean weight; the pooled events' shape, each sample's own mean ``u^2``):
        Kish's ``(sum w)^2 / sum w^2`` where the weights do not depend on the score, and
        smaller where they do (weights exp(1.5 x) made p < 0.01 in 6 % of identical samples
        with Kish's sizes). ``n_eff_1``, ``n_eff_2`` stay Kish's. "sum" uses ``sum w`` (for
        frequency weights, where a weight of k means k identical events: then the result
        equals the unweighted test on the data with events repeated).
    """
    a, wa = _sample(x1, w1, "x1", "w1")
    b, wb = _sample(x2, w2, "x2", "w2")
    # an event of weight 0 is no event: kept, it made the weights unequal and moved the
    # sizes of the p-value (half of x1 at weight 0 gave p 0.0196 where the events of
    # weight 1 alone, scipy's test, give 0.0155)
    (a, wa), (b, wb) = ((x[w != 0], w[w != 0]) for x, w in ((a, wa), (b, wb)))
    oa = np.argsort(a, kind="stable")
    ob = np.argsort(b, kind="stable")
    sa, sb = a[oa], b[ob]
    # the ECDFs in units of a power of two of each sample's weights (exact; weights of 1e306
    # gave infinite sums and a NaN p-value), each ending at exactly 1
    ca = np.cumsum(np.ldexp(wa, -weight_exponent(wa))[oa])
    cb = np.cumsum(np.ldexp(wb, -weight_exponent(wb))[ob])
    ca, cb = ca / ca[-1], cb / cb[-1]
    pooled = np.concatenate([sa, sb])
    diff = _weighted_ecdf(sa, ca, pooled) - _weighted_ecdf(sb, cb, pooled)
    statistic = float(np.max(np.abs(diff)))
    if effective_size == "kish":
        n1, n2 = effective_sample_size(wa), effective_sample_size(wb)
        m1, m2 = _ks_sizes(sa, wa[oa], sb, wb[ob], (n1, n2))
    elif effective_size == "sum":
        n1, n2 = m1, m2 = float(wa.sum()), float(wb.sum())
    else:
        raise ValueError(f"effective_size must be 'kish' or 'sum', got {effective_size!r}")
    pvalue = np.nan  # below one effective event in a sample the test says nothing
    # scipy's convention: kstwo with round(n1 n2 / (n1 + n2)) events, which is 1 (not
    # below) for one event against several; the tolerance keeps a single event of any
    # weight, whose Kish size is 1 up to rounding, at one event
    one = 1.0 - 1e-9
    if n1 >= one and n2 >= one:
        en = float(np.round(m1 * m2 / (m1 + m2)))
        if en >= 1.0:
            pvalue = float(np.clip(kstwo.sf(statistic, en), 0.0, 1.0))
    return KSResult(statistic, pvalue, n1, n2)


def _unit_weights(w: np.ndarray) -> np.ndarray:
    """Each event's weight over its sample's mean weight (computed from the weights over a
    power of two, so that their squares neither under- nor overflow)."""
    w = np.ldexp(w, -weight_exponent(w))
    return w * (w.size / float(w.sum()))


def _ks_sizes(a: np.ndarray, wa: np.ndarray, b: np.ndarray, wb: np.ndarray,
              kish: tuple[float, float]) -> tuple[float, float]:
    """The sample sizes of the weighted KS p-value (see ``weighted_ks_2samp``): Kish's
    where every weight of both samples is equal, else each sample's size times the
    smallest F (1 - F) / var(u (1{x <= t} - F)) over the pooled scores' quartiles. Given
    each sample sorted, the pooled sort is one merge of two runs (timsort)."""
    if np.ptp(wa) == 0 and np.ptp(wb) == 0:
        return kish
    ua, ub = _unit_weights(wa), _unit_weights(wb)
    x = np.concatenate([a, b])
    order = np.argsort(x, kind="stable")
    u = np.concatenate([ua, ub])[order]
    n = u.size
    below = np.cumsum(u)  # pooled: F(t) = below / n at each event
    below2 = np.cumsum(u * u)
    total2 = float(below2[-1])
    ends = np.append(np.flatnonzero(np.diff(x[order]) != 0), n - 1)  # each score's last
    cdf = below[ends] / n
    ratio = np.inf
    for level in (0.25, 0.5, 0.75):  # at deciles, the noisier minimum was too conservative
        k = ends[int(np.argmin(np.abs(cdf - level)))]
        f = below[k] / n
        if not 0.0 < f < 1.0:
            continue
        var = ((1 - f) ** 2 * below2[k] + f * f * (total2 - below2[k])) / n
        ratio = min(ratio, f * (1 - f) / var)
    if not np.isfinite(ratio):
        return kish
    mean2 = total2 / n  # each sample's own mean u^2 against the pooled one
    return (a.size * ratio * mean2 / float(np.mean(ua * ua)),
            b.size * ratio * mean2 / float(np.mean(ub * ub)))


def _sample(x: Any, w: Any, x_name: str, w_name: str) -> tuple[np.ndarray, np.ndarray]:
    """One sample's scores and weights: non-empty, finite scores, a positive net weight."""
    a = as_1d(x, x_name)
    if a.size == 0:
        raise ValueError(f"{x_name} is empty: a two-sample test needs events in each sample")
    bad = ~np.isfinite(a)
    if bad.any():
        raise ValueError(f"{x_name} has NaN or infinite scores (first at event "
                         f"{int(np.flatnonzero(bad)[0])})")
    weights = check_weights(w, a.size, w_name)
    if not float(np.ldexp(weights, -weight_exponent(weights)).sum()) > 0:  # no overflow
        with np.errstate(over="ignore"):
            total = float(weights.sum())
        raise ValueError(f"{w_name} sums to {total:g}: a distribution needs a positive net "
                         "weight")
    return a, weights


@dataclass(frozen=True)
class Chi2Result:
    """Chi2 comparison of two normalised weighted histograms."""

    chi2: float
    ndf: int
    pvalue: float


def chi2_test(x1: Any, w1: Any, x2: Any, w2: Any, edges: Any) -> Chi2Result:
    """Chi2 test that two weighted samples have the same shape on the binning ``edges``.

    The arguments go value, weight, value, weight (``weighted_ks_2samp`` takes both samples'
    values first, then both weights). Values below the first edge count in the first bin
    and values above the last edge in the last bin; drop them first to test the shape
    inside the edges only.

    Each histogram is normalised to unit sum, ``p_i = h_i / W``. Under the hypothesis the
    two samples are draws of the same events and weights (up to the weights' scale), so
    the covariance of ``p`` is one matrix over the sample size: that of the events'
    ``u (1_i - q_i)``, with ``u`` each event's weight over its sample's mean weight and
    ``q`` the shape, both samples' events pooled. ``chi2`` is the difference ``p1 - p2``
    against that covariance times ``1/n1 + 1/n2`` (the bins but the last, whose share the
    others fix; bins without events left out), ``ndf`` those bins. Pooled, not each
    sample's own: where the smaller sample fluctuates low its own variance is too small
    too (5,000 against 200 events, unit weights: p < 0.01 in 10 % of identical samples
    with each bin's own variances, 0.9 % pooled). With unit weights this is Pearson's chi2
    of the 2 x K table. The normalisation's own spread is in it: where a few heavy events
    carry much of a sample's weight, every bin's share moves with them.
    """
    e = as_1d(edges, "edges")
    a, wa = _sample(x1, w1, "x1", "w1")
    b, wb = _sample(x2, w2, "x2", "w2")
    (a, wa), (b, wb) = ((x[w != 0], w[w != 0]) for x, w in ((a, wa), (b, wb)))  # 0: no event
    n1, n2 = a.size, b.size
    (h1, v1), (h2, v2) = (weighted_histogram(x, _unit_weights(w), e) for x, w in ((a, wa), (b, wb)))
    t1, t2 = h1.sum(), h2.sum()
    if not (t1 > 0 and t2 > 0):
        raise ValueError(f"chi2_test: the histograms' net weights are {t1:g} and {t2:g}; "
                         "each sample needs a positive net weight inside the edges")
    n = n1 + n2
    q, s = (h1 + h2) / n, (v1 + v2) / n  # the pooled shape and each bin's mean u^2
    used = np.flatnonzero(s > 0)
    ndf = used.size - 1
    if ndf < 1:
        return Chi2Result(0.0, max(ndf, 0), np.nan)
    q, s, d = q[used[:-1]], s[used[:-1]], (h1 / t1 - h2 / t2)[used[:-1]]
    total_s = float((v1 + v2).sum()) / n
    cov = (np.diag(s) - np.outer(q, s) - np.outer(s, q) + np.outer(q, q) * total_s)
    cov *= 1.0 / n1 + 1.0 / n2
    try:
        chi2 = float(d @ np.linalg.solve(cov, d))
    except np.linalg.LinAlgError:
        return Chi2Result(np.nan, ndf, np.nan)
    return Chi2Result(chi2, ndf, float(chdtrc(ndf, chi2)))


@dataclass(frozen=True)
class SampleComparison:
    """Training-vs-test comparison for one class (signal or background)."""

    ks_statistic: float
    ks_pvalue: float
    chi2: float
    ndf: int
    chi2_pvalue: float
    n_eff_train: float
    n_eff_test: float
    bin_edges: np.ndarray
    verdict: str


@dataclass(frozen=True)
class OvertrainingResult:
    """Result of :func:`overtraining_test`; ``verdict`` is "ok", "warning" or "overtrained"."""

    signal: SampleComparison
    background: SampleComparison
    verdict: str
    pvalue_fail: float
    pvalue_warn: float

    @property
    def passed(self) -> bool:
        """True unless the verdict is "overtrained"."""
        return self.verdict != "overtrained"


_SEVERITY = {"ok": 0, "undetermined": 1, "warning": 2, "overtrained": 3}


def _verdict(pvalues: list[float], fail: float, warn: float) -> str:
    finite = [p for p in pvalues if np.isfinite(p)]
    if not finite:
        return "undetermined"
    worst = min(finite)
    return "overtrained" if worst < fail else "warning" if worst < warn else "ok"


def _quantile_edges(values: np.ndarray, n_bins: int) -> np.ndarray:
    edges = np.unique(np.quantile(values, np.linspace(0.0, 1.0, n_bins + 1)))
    if edges.size < 2:
        edges = np.array([values[0] - 0.5, values[0] + 0.5])
    return edges


def _compare(train_s: np.ndarray, train_w: np.ndarray, test_s: np.ndarray,
             test_w: np.ndarray, bins: int, fail: float, warn: float, what: str
             ) -> SampleComparison:
    # an event of weight 0 is none: it moved the bins' quantiles, the chi2's event counts
    # and the KS test's branch (unit weights or not)
    train_s, train_w = train_s[train_w != 0], train_w[train_w != 0]
    test_s, test_w = test_s[test_w != 0], test_w[test_w != 0]
    if train_s.size == 0 or test_s.size == 0:
        raise ValueError(f"overtraining_test: no {what} events in the training or test sample")
    ks = weighted_ks_2samp(train_s, test_s, train_w, test_w)
    # Equal-count bins of the pooled scores, at least ~10 effective events per sample per
    # bin, so the chi2 approximation holds (rows would overcount weighted events).
    n_bins = int(np.clip(np.floor(min(ks.n_eff_1, ks.n_eff_2) / 10 + 1e-9), 2, bins))
    edges = _quantile_edges(np.concatenate([train_s, test_s]), n_bins)
    chi = chi2_test(train_s, train_w, test_s, test_w, edges)
    # below MIN_EFFECTIVE_EVENTS the tests' approximations fail: no p-value, not a wrong one
    enough = min(ks.n_eff_1, ks.n_eff_2) >= MIN_EFFECTIVE_EVENTS
    ks_p, chi_p = (ks.pvalue, chi.pvalue) if enough else (np.nan, np.nan)
    return SampleComparison(
        ks_statistic=ks.statistic,
        ks_pvalue=ks_p,
        chi2=chi.chi2,
        ndf=chi.ndf,
        chi2_pvalue=chi_p,
        n_eff_train=ks.n_eff_1,
        n_eff_test=ks.n_eff_2,
        bin_edges=edges,
        verdict=_verdict([ks_p, chi_p], fail, warn),
    )


def overtraining_test(
    train_scores: Any,
    train_y: Any,
    train_w: Any,
    test_scores: Any,
    test_y: Any,
    test_w: Any,
    bins: int = 20,
    pvalue_fail: float = PVALUE_FAIL,
    pvalue_warn: float = PVALUE_WARN,
) -> OvertrainingResult:
    """Compare training and test scores for signal and background separately.

    Parameters
    ----------
    train_scores, test_scores : arrays of shape (n_train,), (n_test,)
    train_y, test_y : labels, 1 = signal, 0 = background
    train_w, test_w : event weights or None
    bins : at most this many equal-count bins (of the pooled scores) for the chi2 test; fewer
        where the smaller sample has under 10 effective events a bin (at least 2 bins)

    Returns
    -------
    OvertrainingResult with ``.signal`` and ``.background`` (:class:`SampleComparison`:
    ``ks_statistic``, ``ks_pvalue``, ``chi2``, ``ndf``, ``chi2_pvalue``) and ``.verdict``.
    """
    tr_s = as_1d(train_scores, "train_scores")
    te_s = as_1d(test_scores, "test_scores")
    for name, scores in (("train_scores", tr_s), ("test_scores", te_s)):
        bad = ~np.isfinite(scores)
        if bad.any():
            raise ValueError(f"{name} has NaN or infinite scores (first at event "
                             f"{int(np.flatnonzero(bad)[0])})")
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins < 2:
        # 0 dropped the chi2 test silently, 2.5 was taken, -3 failed inside numpy
        raise ValueError(f"bins={bins!r}: expected a whole number of chi2 bins >= 2")
    tr_y = check_labels(train_y, "train_y")
    te_y = check_labels(test_y, "test_y")
    if tr_y.size != tr_s.size:
        raise ValueError(f"train_y has {tr_y.size} entries but train_scores has {tr_s.size}")
    if te_y.size != te_s.size:
        raise ValueError(f"test_y has {te_y.size} entries but test_scores has {te_s.size}")
    tr_w = check_weights(train_w, tr_s.size, "train_w")
    te_w = check_weights(test_w, te_s.size, "test_w")
    signal = _compare(tr_s[tr_y], tr_w[tr_y], te_s[te_y], te_w[te_y], bins,
                      pvalue_fail, pvalue_warn, "signal")
    background = _compare(tr_s[~tr_y], tr_w[~tr_y], te_s[~te_y], te_w[~te_y], bins,
                          pvalue_fail, pvalue_warn, "background")
    verdict = max(signal.verdict, background.verdict, key=_SEVERITY.__getitem__)
    return OvertrainingResult(signal, background, verdict, pvalue_fail, pvalue_warn)


def _smallest(parts: Sequence[SampleComparison], pvalue: str) -> SampleComparison:
    """The comparison whose ``pvalue`` attribute is smallest (NaN counts as largest)."""
    return min(parts, key=lambda part: np.nan_to_num(getattr(part, pvalue), nan=np.inf))


def _bonferroni(parts: Sequence[SampleComparison], fail: float, warn: float
                ) -> SampleComparison:
    """One comparison of the folds' ``parts``: each test's smallest p-value times their
    number (at most 1; NaN where no fold has one), with that fold's statistic."""
    ks, chi = _smallest(parts, "ks_pvalue"), _smallest(parts, "chi2_pvalue")
    ks_p = float(np.minimum(1.0, len(parts) * ks.ks_pvalue))
    chi_p = float(np.minimum(1.0, len(parts) * chi.chi2_pvalue))
    return SampleComparison(
        ks_statistic=ks.ks_statistic, ks_pvalue=ks_p, chi2=chi.chi2, ndf=chi.ndf,
        chi2_pvalue=chi_p, n_eff_train=ks.n_eff_train, n_eff_test=ks.n_eff_test,
        bin_edges=chi.bin_edges, verdict=_verdict([ks_p, chi_p], fail, warn))


def combined_over_folds(checks: Sequence[OvertrainingResult]) -> OvertrainingResult:
    """One check of k fold models, each of ``checks`` comparing a model's own training and
    test events: per class and test, the smallest of the k p-values times k, at most 1
    (Bonferroni: below a threshold only with probability at most the threshold when no
    model is overtrained), with the statistic of the fold that gave it."""
    if not checks:
        raise ValueError("combined_over_folds: no fold checks given")
    fail, warn = checks[0].pvalue_fail, checks[0].pvalue_warn
    signal = _bonferroni([c.signal for c in checks], fail, warn)
    background = _bonferroni([c.background for c in checks], fail, warn)
    verdict = max(signal.verdict, background.verdict, key=_SEVERITY.__getitem__)
    return OvertrainingResult(signal, background, verdict, fail, warn)
