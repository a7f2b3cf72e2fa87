"""Faults of the command line itself: files and options that are not there."""

from __future__ import annotations

import json
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


def _manifest_lists_itself(folder: Path) -> list[str]:
    manifest = {"format": "hepbdt-kfold", "format_version": 1, "kind": "kfold", "k": 2,
                "by": "event", "models": ["m.json", "m.json"], "features": ["x"]}
    (folder / "m.json").write_text(json.dumps(manifest))
    return ["inspect", str(folder / "m.json")]


def _manifests_in_a_cycle(folder: Path) -> list[str]:
    for name, other in (("a.json", "b.json"), ("b.json", "a.json")):
        manifest = {"format": "hepbdt-kfold", "format_version": 1, "kind": "kfold", "k": 2,
                    "by": "event", "models": [other, other], "features": ["x"]}
        (folder / name).write_text(json.dumps(manifest))
    return ["apply", str(folder / "a.json"), "whatever.root", "--output", str(folder / "o.root")]


FAULTS += [
    Fault("kfold-manifest-lists-itself", _manifest_lists_itself, r"is itself a k-fold manifest"),
    Fault("kfold-manifests-in-a-cycle", _manifests_in_a_cycle, r"is itself a k-fold manifest"),
]
