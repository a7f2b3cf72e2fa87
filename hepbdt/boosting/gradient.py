"""First-order gradient boosting (Friedman): trees fit pseudo-residuals by variance reduction.

Channel A = w * r (r = -dL/dF), channel B = w. Leaves: one Newton step
sum w r / sum w h for the deviance (= sum r / sum |r|(2-|r|)) and squared error (the mean);
the weighted median of the residuals for absolute error; Friedman's M-TreeBoost step for
Huber. (TMVA's GradBoost divides by sum w^2 |r|(1-|r|): the same leaves at unit weights,
but its leaves shrink when every weight is scaled up; these do not.) Denominators that
are not positive (negative weights), or below 1e-12 of the mean event weight, give a zero
leaf: the guard scales with the weights, so cross-section weights of 1e-15 train as
weights of 1 do.
"""

from __future__ import annotations

import numpy as np

from ..engine._types import CHANNEL_DTYPE, VARIANCE
from ._exact_rounds import RATIO_LEAF
from ._loop import cancelled, leaf_quantile
from .losses import Absolute, Huber, Loss

__all__ = ["GradientBooster"]

MIN_RELATIVE_DENOMINATOR = 1e-12  # times the mean |event weight|


class GradientBooster:
    """What the grower fits in first-order gradient boosting."""

    criterion = VARIANCE

    def __init__(self, loss: Loss, learning_rate: float):
        self.loss = loss
        self.learning_rate = learning_rate
        self._tiny_of: tuple[np.ndarray, float] | None = None  # (weights, their guard)
        self._max_w_of: tuple[np.ndarray, float] | None = None  # (weights, max |weight|)

    def _tiny(self, w: np.ndarray) -> float:
        """MIN_RELATIVE_DENOMINATOR times the mean |w|, computed again only for new weights
        (every tree of a fit without subsampling has the same)."""
        if self._tiny_of is None or self._tiny_of[0] is not w:
            self._tiny_of = (w, MIN_RELATIVE_DENOMINATOR * float(np.mean(np.abs(w), dtype=np.float64)))
        return self._tiny_of[1]

    def channels(self, wg, wh, w, overwrite=False):
        """A = w * pseudo-residual = -w g, B = w (``overwrite``: A in wg's storage)."""
        return np.negative(wg, out=wg if overwrite else None), w.astype(CHANNEL_DTYPE, copy=False)

    def channel_max_abs(self, maxima, w) -> tuple[float, float]:
        """(max |A|, max |B|) from the loss's (max |w g|, max |w h|): B is the weight, whose
        maximum is found once for the weights every tree of a fit has."""
        if self._max_w_of is None or self._max_w_of[0] is not w:
            self._max_w_of = (w, float(np.max(np.abs(w.astype(CHANNEL_DTYPE, copy=False)))))
        return float(maxima[0]), self._max_w_of[1]

    def exact_leaf_rule(self, w) -> tuple | None:
        """``leaf_values`` for ``ExactRounds`` (A = -w g, B = w; see NewtonBooster's); None
        for the absolute and Huber losses (medians a leaf)."""
        if isinstance(self.loss, (Absolute, Huber)):
            return None
        return (RATIO_LEAF, True, True, 0.0, 0.0, self._tiny(w), float(self.learning_rate))

    def leaf_values(self, tree, y, w, score, sums):
        """Leaf values times the learning rate (0 on internal nodes), from the exact
        per-node sums (w g, w h, w[, |w| h with negative weights]) of ``leaf_sums`` where the
        loss needs sums; a leaf whose weights cancel (``cancelled``) gets 0."""
        leaves = tree.is_leaf
        tiny = self._tiny(w)
        if isinstance(self.loss, Absolute):
            value = leaf_quantile(tree, y - score, w, 0.5)
        elif isinstance(self.loss, Huber):
            residual = y - score
            median = leaf_quantile(tree, residual, w, 0.5)
            value = np.zeros(tree.n_nodes)
            d = self.loss.delta
            for k in np.flatnonzero(leaves):
                idx = tree.partition[tree.start[k]:tree.stop[k]]
                dev = residual[idx] - median[k]
                total = float(np.sum(w[idx], dtype=np.float64))
                step = np.sum(w[idx] * np.sign(dev) * np.minimum(d, np.abs(dev)))
                absolute = float(np.sum(np.abs(w[idx]), dtype=np.float64))
                usable = total > tiny and not cancelled(np.float64(total), np.float64(absolute))
                value[k] = median[k] + (step / total if usable else 0.0)
        else:
            num = -sums[0]
            den = sums[1]
            keep = (den > tiny) & ~cancelled(den, sums[3] if len(sums) > 3 else None)
            value = np.where(keep, num / np.where(den > 0, den, 1), 0.0)
        return np.where(leaves, value * self.learning_rate, 0.0)
