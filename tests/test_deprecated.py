"""Old import paths keep working for one release, each with a DeprecationWarning that
names the new path, and give the same objects as the new paths."""

from __future__ import annotations

import importlib

import pytest

MOVED = [
    ("hepbdt.config", "load_config", "hepbdt.analysis.config"),
    ("hepbdt.config", "check_inputs", "hepbdt.analysis.inputs"),
    ("hepbdt.config", "ConfigError", "hepbdt.analysis.config"),
    ("hepbdt.config", "parse_tmva_options", "hepbdt.tmva_options"),
    ("hepbdt.config", "TMVAOptionError", "hepbdt.tmva_options"),
    ("hepbdt.workflow", "train", "hepbdt.analysis"),
    ("hepbdt.workflow", "KFoldModel", "hepbdt.kfold"),
    ("hepbdt.workflow", "report_from_scores", "hepbdt.analysis"),
    ("hepbdt.model", "load_model", "hepbdt.persistence"),
    ("hepbdt.model", "atomic_write_text", "hepbdt._util"),
    ("hepbdt.io", "apply", "hepbdt.scoring"),
    ("hepbdt.estimators", "estimator_from_dict", "hepbdt.persistence"),
    ("hepbdt.engine", "warmup", "hepbdt.estimators"),
]


@pytest.mark.parametrize("old, name, new", MOVED)
def test_old_path_warns_and_gives_the_new_object(old: str, name: str, new: str) -> None:
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=f"{new}.{name}"):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)


def test_input_checks_are_still_importable_from_the_estimators() -> None:
    from hepbdt._util import check_weights, check_X
    from hepbdt.estimators import check_weights as old_check_weights
    from hepbdt.estimators import check_X as old_check_X

    assert old_check_X is check_X and old_check_weights is check_weights


def test_workflow_load_is_load_model() -> None:
    import hepbdt.workflow
    from hepbdt.persistence import load_model

    with pytest.warns(DeprecationWarning, match="hepbdt.persistence.load_model") as caught:
        assert hepbdt.workflow.load is load_model
    # the warning names the path the caller used (it named hepbdt.workflow.load_model,
    # which never existed)
    assert str(caught[0].message).startswith("hepbdt.workflow.load has moved to ")


def test_unknown_names_are_still_attribute_errors() -> None:
    import hepbdt.config

    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        hepbdt.config.nothing  # noqa: B018


def test_public_names_of_the_readme() -> None:
    import hepbdt

    for name in ("BDTClassifier", "BDTRegressor", "Sample", "read", "Dataset", "load_model",
                 "apply", "report", "load_config", "train", "KFoldModel", "warmup", "Forest"):
        assert callable(getattr(hepbdt, name)), name
    assert hepbdt.apply.__module__ == "hepbdt.scoring"
    assert hepbdt.load_model.__module__ == "hepbdt.persistence"
