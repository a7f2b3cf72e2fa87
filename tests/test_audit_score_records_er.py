"""Audit ER: the records a score file keeps twice must agree when read back.

Each file here is written by uproot alone, in the layout README's outputs table gives for
``scores.root``: the tree title names the samples (and classes), ``<tree>_samples``,
``<tree>_classes`` and ``<tree>_features`` name them again, and ``classID`` is TMVA's
(``1 - label`` with two classes, else the label). A damaged copy whose records disagree
was read without a word (samples named the other way round, a swapped features record
reading var1 from var2's branch); now :func:`read_scores` refuses it naming the file, the
tree and both values.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import uproot

from hepbdt.io import InputError, read_class_names, read_scores

N = 40


def _tree(n_classes: int = 2) -> tuple[str, dict[str, np.ndarray]]:
    """A TestTree's title and branches as README describes them, built by hand."""
    rng = np.random.default_rng(5)
    label = rng.integers(0, n_classes, N).astype(np.int32)
    class_id = (1 - label) if n_classes == 2 else label.copy()
    arrays = {"var1": rng.normal(size=N).astype(np.float32),
              "var2": rng.normal(size=N).astype(np.float32) + 10,
              "classID": class_id.astype(np.int32), "label": label,
              "weight": rng.uniform(0.5, 2, N), "event": np.arange(N, dtype=np.int64),
              "sample": (label != 0).astype(np.int32), "bdt_score": rng.normal(size=N)}
    classes = "; class: 0=bg0;1=bg1;2=sig" if n_classes > 2 else ""
    return f"hepbdt scores; sample: 0=signal;1=qcd{classes}; weight: physical", arrays


def _write(path, trees: dict, objects: dict) -> str:
    """A score file of ``trees`` ({name: (title, arrays)}) and string ``objects``."""
    with uproot.recreate(path) as file:
        for key, text in objects.items():
            file[key] = text
        for name, (title, arrays) in trees.items():
            file.mktree(name, {b: a.dtype for b, a in arrays.items()}, title=title)
            file[name].extend(arrays)
    return str(path)


def _objects(tree: str = "TestTree", classes: bool = False) -> dict[str, str]:
    objects = {f"{tree}_samples": "0=signal;1=qcd", f"{tree}_features": "0=var1;1=var2"}
    if classes:
        objects[f"{tree}_classes"] = "0=bg0;1=bg1;2=sig"
    return objects


def test_an_intact_file_reads_as_written(tmp_path):
    title, arrays = _tree()
    path = _write(tmp_path / "s.root", {"TestTree": (title, arrays)}, _objects())
    data, scores = read_scores(path, "TestTree", ["var2", "var1"])
    np.testing.assert_array_equal(data.X[:, 0], arrays["var2"])
    np.testing.assert_array_equal(data.y, arrays["label"])
    assert data.sample_names == ["signal", "qcd"]
    np.testing.assert_array_equal(scores["bdt_score"], arrays["bdt_score"])


def test_samples_object_swapped_against_the_title_is_refused(tmp_path):
    title, arrays = _tree()
    objects = {**_objects(), "TestTree_samples": "0=qcd;1=signal"}
    path = _write(tmp_path / "s.root", {"TestTree": (title, arrays)}, objects)
    with pytest.raises(InputError, match=r"s\.root:TestTree: its title names the samples "
                       r"'0=signal;1=qcd' and TestTree_samples holds '0=qcd;1=signal'"):
        read_scores(path, "TestTree")


def test_class_names_object_against_the_title(tmp_path):
    title, arrays = _tree(3)
    objects = {**_objects(classes=True), "TestTree_classes": "0=sig;1=bg1;2=bg0"}
    path = _write(tmp_path / "s.root", {"TestTree": (title, arrays)}, objects)
    for read in (read_scores, read_class_names):
        with pytest.raises(InputError, match=r"s\.root:TestTree: its title names the classes "
                           r"'0=bg0;1=bg1;2=sig' and TestTree_classes holds '0=sig;1=bg1;2=bg0'"):
            read(path, "TestTree")


@pytest.mark.parametrize("n_classes", [2, 3])
def test_class_id_disagreeing_with_label_is_refused(tmp_path, n_classes):
    title, arrays = _tree(n_classes)
    assert read_scores(_write(tmp_path / "ok.root", {"TestTree": (title, arrays)},
                              _objects(classes=n_classes > 2)), "TestTree")[0].y.size == N
    arrays["classID"] = (arrays["label"] + 1) % n_classes  # neither 1 - label nor the label
    if n_classes == 2:
        arrays["classID"] = arrays["label"].copy()  # the label itself: not TMVA's 0 signal
    path = _write(tmp_path / "s.root", {"TestTree": (title, arrays)},
                  _objects(classes=n_classes > 2))
    with pytest.raises(InputError, match=rf"s\.root:TestTree: classID and label disagree in "
                       rf"{N} of {N} events \(entry 0: classID"):
        read_scores(path, "TestTree")


def test_empty_samples_object_names_the_file(tmp_path):
    title, arrays = _tree()
    path = _write(tmp_path / "s.root", {"TestTree": (title, arrays)},
                  {**_objects(), "TestTree_samples": ""})
    with pytest.raises(InputError, match=r"s\.root: TestTree_samples is ''"):
        read_scores(path, "TestTree")
    result = subprocess.run([sys.executable, "-c", "import sys; from hepbdt.io import "
                             "read_scores; read_scores(sys.argv[1], 'TestTree')", path],
                            capture_output=True, text=True)
    assert "sample_index must lie" not in result.stderr


@pytest.mark.parametrize("text", ["0=signal;2=qcd", "0=signal;0=qcd", "signal;qcd"])
def test_samples_object_without_indices_0_1_is_refused(tmp_path, text):
    title, arrays = _tree()
    path = _write(tmp_path / "s.root", {"TestTree": (title.replace("0=signal;1=qcd", text),
                                                     arrays)}, {**_objects(),
                                                                "TestTree_samples": text})
    with pytest.raises(InputError, match=rf"s\.root: TestTree_samples is '{text}', not the "):
        read_scores(path, "TestTree")


def test_sample_index_beyond_the_names_is_refused(tmp_path):
    title, arrays = _tree()
    arrays["sample"][3] = 2  # a third sample, unnamed by title and object
    path = _write(tmp_path / "s.root", {"TestTree": (title, arrays)}, _objects())
    with pytest.raises(InputError, match=r"s\.root:TestTree: its sample branch holds indices "
                       r"0\.\.2 and TestTree_samples names 2"):
        read_scores(path, "TestTree")


def test_label_beyond_the_class_names_is_refused(tmp_path):
    title, arrays = _tree(3)
    arrays["label"][0] = arrays["classID"][0] = 3
    path = _write(tmp_path / "s.root", {"TestTree": (title, arrays)}, _objects(classes=True))
    with pytest.raises(InputError, match=r"s\.root:TestTree: its label branch holds indices "
                       r"0\.\.3 and TestTree_classes names 3"):
        read_scores(path, "TestTree")


def test_features_object_swapped_against_the_branches_is_refused(tmp_path):
    title, arrays = _tree()
    path = _write(tmp_path / "s.root", {"TestTree": (title, arrays)},
                  {**_objects(), "TestTree_features": "0=var2;1=var1"})
    with pytest.raises(InputError, match=r"s\.root:TestTree: TestTree_features records the "
                       r"features \['var2', 'var1'\] and the tree's feature branches are "
                       r"\['var1', 'var2'\]"):
        read_scores(path, "TestTree", ["var1", "var2"])  # read var1 from var2's branch


def test_features_object_of_another_count_is_refused(tmp_path):
    title, arrays = _tree()
    path = _write(tmp_path / "s.root", {"TestTree": (title, arrays)},
                  {**_objects(), "TestTree_features": "0=var1"})
    with pytest.raises(InputError, match="TestTree_features records the features"):
        read_scores(path, "TestTree", ["var1", "var2"])


def test_features_named_by_the_rule_before_2026_12_04_still_read(tmp_path):
    """Files of 2026-11-27 to 12-04 record features whose branches dropped operators."""
    title, arrays = _tree()
    arrays = {"nj": arrays.pop("var1"), **arrays}  # '-nj' written as nj then
    path = _write(tmp_path / "s.root", {"TestTree": (title, arrays)},
                  {**_objects(), "TestTree_features": "0=-nj;1=var2"})
    data, _ = read_scores(path, "TestTree", ["-nj", "var2"])
    np.testing.assert_array_equal(data.X[:, 0], arrays["nj"])


@pytest.mark.parametrize("what", ["samples", "classes"])
def test_train_and_test_tree_names_must_agree(tmp_path, what):
    title, arrays = _tree(3)
    objects = {**_objects("TrainTree", True), **_objects("TestTree", True)}
    old = objects[f"TrainTree_{what}"]
    new = "0=qcd;1=signal" if what == "samples" else "0=sig;1=bg1;2=bg0"
    objects[f"TrainTree_{what}"] = new
    trees = {"TrainTree": (title.replace(old, new), arrays), "TestTree": (title, arrays)}
    path = _write(tmp_path / "s.root", trees, objects)
    for tree, mine, theirs in (("TestTree", old, new), ("TrainTree", new, old)):
        sibling = "TrainTree" if tree == "TestTree" else "TestTree"
        with pytest.raises(InputError, match=rf"s\.root: {tree}_{what} holds '{mine}' and "
                           rf"{sibling}_{what} '{theirs}'"):
            read_scores(path, tree)



def test_a_tree_copied_without_its_records_takes_the_title_names(tmp_path):
    """TTree::CloneTree into a new file keeps the title and drops the string objects."""
    title, arrays = _tree(3)
    trees = {"TrainTree": (title, arrays), "TestTree": (title, arrays)}
    path = _write(tmp_path / "s.root", trees, {})
    data, _ = read_scores(path, "TestTree")
    assert data.sample_names == ["signal", "qcd"]
    assert read_class_names(path, "TrainTree") == ["bg0", "bg1", "sig"]
    objects = {"TrainTree_samples": "0=qcd;1=signal"}  # and the other tree's disagrees
    path = _write(tmp_path / "t.root", trees, objects)
    with pytest.raises(InputError, match=r"t\.root:TrainTree: its title names the samples "
                       r"'0=signal;1=qcd' and TrainTree_samples holds '0=qcd;1=signal'"):
        read_scores(path, "TestTree")


def test_a_two_class_label_beyond_signal_is_refused_naming_the_file(tmp_path):
    """A two-class tree records no class names: its labels are 0 (background) and 1
    (signal). A label of 2, without classID to disagree with, was refused later by the
    report's label check, which named no file."""
    title, arrays = _tree()
    arrays = {k: v for k, v in arrays.items() if k != "classID"}
    arrays["label"] = arrays["label"].copy()
    arrays["label"][3] = 2
    path = _write(tmp_path / "s.root", {"TestTree": (title, arrays)}, _objects())
    with pytest.raises(InputError, match=r"s\.root:TestTree: its label branch holds indices "
                                         r"0\.\.2 and a two-class tree names 2"):
        read_scores(path, "TestTree")
