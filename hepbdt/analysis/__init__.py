"""An analysis from its TOML configuration: configuration, input checks, training, outputs.

:func:`load_config` reads and checks the configuration, :func:`check_inputs` its ROOT
files, :func:`train` reads, fits and writes every output (:class:`TrainResult`), and
:func:`report_from_scores` writes the report again from a model and its score trees.
This is the top layer below the command line; nothing else in hepbdt imports it.
"""

from __future__ import annotations

from .config import AnalysisConfig, ConfigError, apply_overrides, load_config
from .inputs import check_inputs
from .outputs import report_from_scores
from .result import TrainResult
from .workflow import TrainingError, default_output_dir, train

__all__ = ["AnalysisConfig", "ConfigError", "TrainResult", "apply_overrides", "check_inputs",
           "default_output_dir", "load_config", "report_from_scores", "train", "TrainingError"]
