"""Boosting loops: each booster says what the grower fits (channels, criterion, leaves)."""

from __future__ import annotations

from .gradient import GradientBooster
from .losses import get_loss
from .newton import NewtonBooster

__all__ = ["GradientBooster", "NewtonBooster", "get_loss"]
