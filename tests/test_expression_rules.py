"""Model files record the expression rules their features were computed by
(``hepbdt._version.EXPRESSION_RULES``): ``apply`` refuses a computed feature that a file's
rules may compute otherwise than today's, newer rules than it knows included, and reads
branches as they are under any rules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hepbdt
from hepbdt._version import EXPRESSION_RULES
from hepbdt.model import ModelFormatError
from hepbdt.scoring import ApplyOptionError, apply

from .test_audit_branch_types import _write_flags


def _model(folder: Path, kind: str, features: list[str]) -> tuple[Path, np.ndarray]:
    """A model of ``features`` trained on a file whose list branch ``flags`` is ``kind``,
    saved; (its file, the ones each event's flags hold)."""
    ones = _write_flags(folder / "train.root", kind)
    source = f"{folder / 'train.root'}:Events"
    samples = [hepbdt.Sample("s", source, cut="label == 1", label=1),
               hepbdt.Sample("b", source, cut="label == 0", label=0)]
    data = hepbdt.read(samples, features, progress=False)
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2, random_state=0).fit(
        data.X, data.y, data.w)
    model.save(folder / "model.json")
    return folder / "model.json", ones


def _edit(path: Path, **changes) -> None:
    """Set (None: delete) top-level fields of a model file."""
    doc = json.loads(path.read_text())
    for key, value in changes.items():
        doc.pop(key, None) if value is None else doc.__setitem__(key, value)
    path.write_text(json.dumps(doc))


def test_a_saved_model_records_todays_rules_and_keeps_them(tmp_path):
    path, _ = _model(tmp_path, "uint8", ["x", "~sum(flags)"])
    doc = json.loads(path.read_text())
    assert (doc["expression_rules"], doc["constants"]) == (EXPRESSION_RULES, "bare")
    hepbdt.load_model(path).save(tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text())["expression_rules"] == EXPRESSION_RULES


def test_newer_rules_are_refused_for_computed_features_only(tmp_path):
    """A file from a hepbdt with newer rules: this one cannot know what its expressions
    gave, so a computed feature is refused and no output is written; plain branches are
    read as they are."""
    path, _ = _model(tmp_path, "uint8", ["x", "~sum(flags)"])
    _edit(path, expression_rules=EXPRESSION_RULES + 1)
    with pytest.raises(ApplyOptionError, match=f"expression rules {EXPRESSION_RULES + 1}, newer"):
        apply(path, tmp_path / "train.root", tmp_path / "scores.root", tree="Events")
    assert not (tmp_path / "scores.root").exists()
    plain, _ = _model(tmp_path, "uint8", ["x"])
    _edit(plain, expression_rules=EXPRESSION_RULES + 1)
    apply(plain, tmp_path / "train.root", tmp_path / "scores.root", tree="Events")
    assert (tmp_path / "scores.root").exists()


def test_rules_one_refuse_a_sum_of_narrow_unsigned_integers(tmp_path):
    """Under rules 1 (2026-12-04) ~sum(flags) of UChar_t flags was 2**64 - 1 - n, where it
    is -1 - n now (numpy's int64 ~ of the count of ones): such a file is refused; a sum of
    a float list, which both rules compute alike, is scored."""
    path, ones = _model(tmp_path, "uint8", ["x", "~sum(flags)"])
    scored = hepbdt.read([hepbdt.Sample("all", f"{tmp_path / 'train.root'}:Events")],
                         ["~sum(flags)"], progress=False).X[:, 0]
    np.testing.assert_array_equal(scored, np.invert(ones.astype(np.int64)).astype(np.float32))
    _edit(path, expression_rules=None)  # saved on 2026-12-04: "constants": "bare" alone
    with pytest.raises(ApplyOptionError, match="sums or multiplies 'flags'.* rules 1"):
        apply(path, tmp_path / "train.root", tmp_path / "scores.root", tree="Events")
    floats, _ = _model(tmp_path, "float32", ["x", "sum(flags)"])
    _edit(floats, expression_rules=None)
    apply(floats, tmp_path / "train.root", tmp_path / "scores.root", tree="Events")
    assert (tmp_path / "scores.root").exists()


@pytest.mark.parametrize("value", ["2", 0, True, 2.0])
def test_an_expression_rules_field_that_is_no_version_is_refused(tmp_path, value):
    path, _ = _model(tmp_path, "float32", ["x"])
    _edit(path, expression_rules=value)
    with pytest.raises(ModelFormatError, match="expression_rules"):
        hepbdt.load_model(path)


def test_python_scoring_of_a_read_refuses_what_apply_refuses(tmp_path):
    """A model file of older rules scoring a ``hepbdt.read`` in Python: the read computes
    ~sum(flags) by today's rules (-1 - n, numpy's int64 ~ of the count of ones), where a
    rules-1 file's trees saw 2**64 - 1 - n, so the scores were wrong without a word; a
    rules-0 file's computed feature likewise. Refused as apply refuses them; a plain array of
    the numbers, which no read computed, is the caller's to vouch for."""
    from hepbdt.io import SavedRulesError

    path, ones = _model(tmp_path, "uint8", ["x", "~sum(flags)"])
    source = f"{tmp_path / 'train.root'}:Events"
    data = hepbdt.read([hepbdt.Sample("all", source)], ["x", "~sum(flags)"], progress=False)
    np.testing.assert_array_equal(data.X[:, 1], np.invert(ones.astype(np.int64)))
    today = hepbdt.load_model(path).decision_function(data.X)
    for rules, words in ((None, "sums or multiplies 'flags'.* rules 1"),
                         (EXPRESSION_RULES + 1, f"expression rules {EXPRESSION_RULES + 1}, newer"),
                         (0, "computed by an expression.* saved before 2026-12-04")):
        if rules == 0:  # saved before 2026-12-04: neither rules, constants nor branch types
            _edit(path, expression_rules=None, constants=None, branch_types=None)
        else:
            _edit(path, expression_rules=rules)
        model = hepbdt.load_model(path)
        for score in (model.decision_function,
                      lambda X, m=model: hepbdt.KFoldModel(
                          [m, hepbdt.load_model(path)]).decision_function(X, np.arange(len(X))),
                      lambda X, m=model: hepbdt.interop.tmva_response(m, X)):
            with pytest.raises(SavedRulesError, match=words):
                score(data.X)
        unnamed = np.asarray(data.X)
        with pytest.warns(hepbdt.estimators.FeatureNamesWarning):
            np.testing.assert_array_equal(model.decision_function(unnamed), today)
