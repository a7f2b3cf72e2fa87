"""Deprecated: TMVA option strings moved to :mod:`hepbdt.tmva_options`, the TOML analysis
configuration to :mod:`hepbdt.analysis`. These names keep working until hepbdt 0.3, with
a warning."""

from __future__ import annotations

from typing import Any

_HOMES = {
    **dict.fromkeys(["TMVAOptionError", "parse_tmva_options", "to_tmva_options", "TMVA_OPTIONS",
                     "TMVA_NAMES"], "hepbdt.tmva_options"),
    **dict.fromkeys(["ConfigError", "AnalysisConfig", "SampleConfig", "SplitConfig",
                     "OutputConfig", "load_config", "apply_overrides"], "hepbdt.analysis.config"),
    "check_inputs": "hepbdt.analysis.inputs",
}


def __getattr__(name: str) -> Any:
    # old names only: imported when one is used
    from ._lazy import moved

    return moved(__name__, name, _HOMES)
