"""Interoperability: TMVA XML weight files (export and import) and XGBoost JSON models (import).

- :func:`to_tmva_xml` writes a fitted model as a ``MethodBDT`` weight file for
  ``TMVA::Reader``; :func:`tmva_response` is what the Reader returns for it.
- :func:`from_tmva_xml` and :func:`from_xgboost_json` read other tools' models into fitted
  hepbdt estimators (fast prediction, rankings, plots, JSON save/load).

Files are parsed as data (``xml.etree``, ``json``); nothing is executed or unpickled.
"""

from __future__ import annotations

from .tmva import TMVAExportError, TMVAFormatError, from_tmva_xml, tmva_response, to_tmva_xml
from .xgboost import XGBoostFormatError, from_xgboost_json

__all__ = ["to_tmva_xml", "tmva_response", "from_tmva_xml", "from_xgboost_json",
           "TMVAFormatError", "TMVAExportError", "XGBoostFormatError"]
