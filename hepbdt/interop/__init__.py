"""Interoperability: TMVA XML (export and import), ONNX and C++ (export), XGBoost JSON (import).

- :func:`to_tmva_xml` writes a fitted model as a ``MethodBDT`` weight file for
  ``TMVA::Reader``; :func:`tmva_response` is what the Reader returns for it
  (:mod:`hepbdt.interop.tmva_export`).
- :func:`to_onnx` writes an ONNX model (``ai.onnx.ml`` TreeEnsembleRegressor) for
  onnxruntime (:mod:`hepbdt.interop.onnx_export`); :func:`to_cpp` a dependency-free C++
  header with the forest as arrays (:mod:`hepbdt.interop.cpp_export`).
- :func:`from_tmva_xml` and :func:`from_xgboost_json` read other tools' models into fitted
  hepbdt estimators (fast prediction, rankings, plots, JSON save/load).

Files are parsed as data (``xml.etree``, ``json``); nothing is executed or unpickled. The
names are imported lazily: the exporters sit below the estimators in the layering (their
``save_tmva`` uses it) and the readers above them (they build estimators), so importing
this package must not import both at once.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_LAZY = {
    "to_tmva_xml": "hepbdt.interop.tmva_export",
    "tmva_response": "hepbdt.interop.tmva_export",
    "TMVAExportError": "hepbdt.interop.tmva_export",
    "to_onnx": "hepbdt.interop.onnx_export",
    "ONNXExportError": "hepbdt.interop.onnx_export",
    "to_cpp": "hepbdt.interop.cpp_export",
    "CppExportError": "hepbdt.interop.cpp_export",
    "from_tmva_xml": "hepbdt.interop.tmva",
    "TMVAFormatError": "hepbdt.interop.tmva",
    "from_xgboost_json": "hepbdt.interop.xgboost",
    "XGBoostFormatError": "hepbdt.interop.xgboost",
}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
