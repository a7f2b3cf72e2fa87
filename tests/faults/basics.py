"""Faults of the command line itself: files and options that are not there."""

from __future__ import annotations

from pathlib import Path

from tests.faults import Fault, tiny_config


def _missing_config(folder: Path) -> list[str]:
    return ["train", str(folder / "nothing.toml")]


def _unknown_key(folder: Path) -> list[str]:
    return ["train", str(tiny_config(folder, method="n_tress = 3")), "--check"]


FAULTS = [
    Fault("missing-config", _missing_config, r"nothing\.toml: the configuration file does not exist"),
    Fault("unknown-method-key", _unknown_key, r"\[method\] n_tress: unknown option"),
]
