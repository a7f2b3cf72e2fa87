"""Analysis 4: k-fold cross-training, then ``hepbdt apply`` of the k models by event number.

Trains ``kfold.toml`` (k models and the manifest ``model.json``), runs
``hepbdt apply model.json data/*.root`` to write a friend tree with a score for every entry
of the three ntuples (into ``DIR-friends/``, beside the output set), and checks, by event number, that

- no event was scored (in TestTree, or by apply) by a model that trained on it: the
  events in model i's training sample (TrainTree, ``fold == i``) all have
  ``event % k != i``, and model i (TestTree, ``fold == i``) scored exactly the events with
  ``event % k == i``, none of them in its training sample;
- ``hepbdt apply`` gives every selected event exactly its TestTree score.

    python analyses/kfold/kfold_apply.py [--output DIR] [--quick]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import uproot

from hepbdt.analysis import check_inputs, load_config, train
from hepbdt.cli import main as hepbdt
from hepbdt.kfold import KFoldModel
from hepbdt.persistence import load_model as load

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "kfold.toml"
DATA = HERE.parents[1] / "data"
QUICK = ["method.n_trees=30", "output.report=false", "output.figures=false"]


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default="hepbdt-kfold", help="output folder")
    parser.add_argument("--quick", action="store_true", help="reduced settings")
    args = parser.parse_args(argv)
    out = Path(args.output)
    config = load_config(CONFIG, QUICK if args.quick else [], output=out)
    check_inputs(config)
    result = train(config)
    print(result.summary)

    # the friend trees beside the output set, not in it: a second run replaces the set
    friend = Path(f"{out}-friends") / "friend_{stem}.root"
    inputs = [str(DATA / name) for name in
              ("signal.root", "background_qcd.root", "background_ttbar.root")]
    status = hepbdt(["apply", str(out / "model.json"), *inputs, "--output", str(friend),
                     "--no-progress"])
    if status != 0:
        raise SystemExit(status)

    model = load(out / "model.json")
    assert isinstance(model, KFoldModel)
    k = model.k
    with uproot.open(out / "scores.root") as file:
        train_tree = file["TrainTree"].arrays(["event", "fold"], library="np")
        test_tree = file["TestTree"].arrays(["event", "bdt_score", "fold"], library="np")
    leaks = 0
    for i in range(k):  # "fold": the model that trained on (TrainTree) or scored (TestTree) it
        trained_on = train_tree["event"][train_tree["fold"] == i]
        scored = test_tree["event"][test_tree["fold"] == i]
        leaks += int(np.count_nonzero(np.mod(trained_on, k) == i))
        leaks += int(np.count_nonzero(np.mod(scored, k) != i))
        leaks += int(np.isin(scored, trained_on).sum())
    applied_event, applied_score = [], []
    for path in inputs:
        stem = Path(path).stem
        with uproot.open(str(friend).format(stem=stem)) as file:
            arrays = file["Events"].arrays(["event", "bdt_score"], library="np")
        applied_event.append(arrays["event"])
        applied_score.append(arrays["bdt_score"])
    applied = dict(zip(np.concatenate(applied_event).tolist(),
                       np.concatenate(applied_score).tolist(), strict=True))
    differences = sum(applied[int(e)] != s
                      for e, s in zip(test_tree["event"], test_tree["bdt_score"], strict=True))
    checks = {"k": k, "events scored": len(test_tree["event"]),
              "entries applied": len(applied), "leaks": leaks,
              "apply differs from TestTree": differences}
    print("\nchecks by event number:")
    for key, value in checks.items():
        print(f"  {key}: {value}")
    if leaks or differences:
        raise SystemExit("k-fold check failed")
    return checks


if __name__ == "__main__":
    main()
