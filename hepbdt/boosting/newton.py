"""Regularised second-order boosting (XGBoost's objective).

Channel A = w * g, channel B = w * h; gain = G_L^2/(H_L+lambda) + G_R^2/(H_R+lambda)
- G^2/(H+lambda) with L1 soft-thresholding of G by alpha (XGBoost's loss change; the
formula's factor 1/2 is left out, as XGBoost compares gamma = ``min_split_gain`` to it);
leaf = -T_alpha(G)/(H+lambda) times the learning rate. Absolute error takes the weighted
median of the residuals in each leaf, as XGBoost's reg:absoluteerror. A node whose
H + lambda is not positive gets a zero leaf.
"""

from __future__ import annotations

import numpy as np

from ..engine._types import NEWTON
from ._exact_rounds import NEWTON_LEAF
from ._loop import cancelled, leaf_quantile
from .losses import Absolute, Loss

__all__ = ["NewtonBooster"]


class NewtonBooster:
    """What the grower fits in regularised second-order boosting."""

    criterion = NEWTON

    def __init__(self, loss: Loss, learning_rate: float, reg_lambda: float, reg_alpha: float):
        self.loss = loss
        self.learning_rate = learning_rate
        self.reg_lambda = reg_lambda
        self.reg_alpha = reg_alpha

    def channels(self, wg, wh, w, overwrite=False):
        """A = w * g, B = w * h (the arrays themselves)."""
        return wg, wh

    def channel_max_abs(self, maxima, w) -> tuple[float, float]:
        """(max |A|, max |B|) from the loss's (max |w g|, max |w h|)."""
        return float(maxima[0]), float(maxima[1])

    def exact_leaf_rule(self, w) -> tuple | None:
        """``leaf_values`` for ``ExactRounds`` (with A = w g, B = w h): its kind, whether A
        is -w g, whether B is the weight, alpha, lambda, the floor of the denominator and
        the learning rate; None for the absolute error (a median a leaf)."""
        if isinstance(self.loss, Absolute):
            return None
        return (NEWTON_LEAF, False, False, float(self.reg_alpha), float(self.reg_lambda), 0.0,
                float(self.learning_rate))

    def leaf_values(self, tree, y, w, score, sums):
        """Leaf values times the learning rate (0 on internal nodes), from the exact
        per-node sums (w g, w h, w[, |w| h with negative weights]) of ``leaf_sums``; a leaf
        whose weights cancel (``cancelled``) gets 0."""
        if isinstance(self.loss, Absolute):
            value = leaf_quantile(tree, y - score, w, 0.5)
        else:
            g = sums[0]
            t = np.sign(g) * np.maximum(np.abs(g) - self.reg_alpha, 0.0)
            den = sums[1] + self.reg_lambda
            absolute = sums[3] + self.reg_lambda if len(sums) > 3 else None
            keep = (den > 0) & ~cancelled(den, absolute)
            value = np.where(keep, -t / np.where(den > 0, den, 1.0), 0.0)
        return np.where(tree.is_leaf, value * self.learning_rate, 0.0)
