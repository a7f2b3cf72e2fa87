"""Faults of the configuration's limits: alias bombs and cycles, deep and huge expressions,
resource options set by mistake, event numbers that are not integers, paths that are not
files, and messages in TOML's spelling."""

from __future__ import annotations

import os
from pathlib import Path

from tests.faults import DATA, Fault, tiny_config


def _check(path: Path) -> list[str]:
    return ["train", str(path), "--check"]


def _alias_bomb(folder: Path) -> list[str]:
    bomb = 'a0 = "HT"\n' + "".join(f'a{i} = "a{i - 1} + a{i - 1}"\n' for i in range(1, 41))
    return _check(tiny_config(folder, features='["HT", "a40"]', aliases=bomb))


def _alias_cycle(folder: Path) -> list[str]:
    return _check(tiny_config(folder, aliases='pt1 = "2 * x"\nx = "y"\ny = "pt1"'))


def _alias_chain(folder: Path) -> list[str]:
    chain = 'b0 = "HT"\n' + "".join(f'b{i} = "b{i - 1} + 1"\n' for i in range(1, 151))
    return _check(tiny_config(folder, features='["HT", "b150"]', aliases=chain))


def _nested_cut(folder: Path) -> list[str]:
    cut = "(" * 10000 + "HT > 0" + ")" * 10000
    return _check(tiny_config(folder, top=f'preselection = "{cut}"'))


def _huge_expression(folder: Path) -> list[str]:
    cut = "HT + " * 2_000_000 + "HT > 0"  # 10 MB
    return _check(tiny_config(folder, top=f'preselection = "{cut}"'))


def _huge_n_trees(folder: Path) -> list[str]:
    return _check(tiny_config(folder, method="n_trees = 9223372036854775807"))


def _tmva_ntrees(folder: Path) -> list[str]:
    return _check(tiny_config(folder, method='tmva_options = "NTrees=1e23:MaxDepth=2"'))


def _huge_kfold(folder: Path) -> list[str]:
    return _check(tiny_config(folder, split="kfold = 100000"))


def _negative_seed(folder: Path) -> list[str]:
    return _check(tiny_config(folder, split="train_fraction = 0.5\nseed = -1"))


def _negative_random_state(folder: Path) -> list[str]:
    return _check(tiny_config(folder, method="n_trees = 3\nrandom_state = -1"))


def _event(expression: str):
    def setup(folder: Path) -> list[str]:
        path = tiny_config(folder, method="n_trees = 2\nmax_depth = 2")
        path.write_text(path.read_text().replace('event = "event"', f'event = "{expression}"'))
        # --check reads no event: train for real; reading stops at the first chunk, and bad
        # data found while reading is exit status 1 (a failure while running)
        return ["train", str(path)]
    return setup


def _sample_path(kind: str):
    def setup(folder: Path) -> list[str]:
        path = folder / "ntuples.root"
        if kind == "directory":
            path.mkdir()
        else:
            os.mkfifo(path)
        config = tiny_config(folder)
        config.write_text(config.read_text().replace(str(DATA / "signal.root"), str(path)))
        return _check(config)
    return setup


def _config_directory(folder: Path) -> list[str]:
    (folder / "a.toml").mkdir()
    return _check(folder / "a.toml")


def _infinite_feature(folder: Path) -> list[str]:
    return ["train", str(tiny_config(folder, features='["HT", "1 / (HT - HT)"]',
                                     method="n_trees = 2"))]


FAULTS = [
    Fault("alias-bomb", _alias_bomb, r"a\.toml: \[aliases\] a14: expands to 147,449 "
          r"characters, more than the 100,000"),
    Fault("alias-cycle", _alias_cycle, r"\[aliases\] pt1: alias 'pt1' refers to itself "
          r"\(pt1 -> x -> y -> pt1\)"),
    Fault("alias-chain-deep", _alias_chain, r"\[aliases\] b100: nests 101 aliases deep "
          r"\(b100 -> b99 -> \.\.\. -> b0\), more than the 100 allowed"),
    Fault("nested-cut", _nested_cut, r"a\.toml: preselection: cut expression '\(\(\(.*"
          r"\(20,006 characters\): nested 10000 parentheses or brackets deep.*at most 200"),
    Fault("ten-megabyte-expression", _huge_expression, r"preselection: cut expression 'HT \+ "
          r".*\(10,000,006 characters\): 10,000,006 characters, more than the 100,000"),
    Fault("n-trees-huge", _huge_n_trees, r"\[method\] n_trees: n_trees=9223372036854775807 is "
          r"not valid; expected 'auto' or an integer in \[1, 100000\]"),
    Fault("tmva-ntrees-1e23", _tmva_ntrees, r"\[method\] tmva_options: option NTrees='1e23': "
          r"expected an integer written in digits"),
    Fault("kfold-huge", _huge_kfold, r"\[split\] kfold: 100000 folds: k-fold needs k >= 2 and "
          r"k <= 100"),
    Fault("negative-seed", _negative_seed, r"\[split\] seed: -1 is not a seed; expected an "
          r"integer >= 0"),
    Fault("negative-random-state", _negative_random_state, r"\[method\] random_state: "
          r"random_state=-1 is not valid; expected a seed, an integer in \[0, 2\*\*63 - 1\]"),
    Fault("event-nan", _event("HT / 0 * 0"), r"sample 'signal': file .*signal\.root', tree "
          r"'Events': event expression 'HT / 0 \* 0' is not an integer event number .* for "
          r"25000 event\(s\) of the 25000 read .*the first, entry 0, is nan", status=1),
    Fault("event-fraction", _event("event + 0.5"), r"event expression 'event \+ 0\.5' is not "
          r"an integer event number .*the first, entry 0, is 1000001\.5", status=1),
    Fault("sample-file-is-a-directory", _sample_path("directory"), r"\[samples\.signal\] files: "
          r"'.*ntuples\.root' is a directory, not a ROOT file"),
    Fault("sample-file-is-a-fifo", _sample_path("fifo"), r"\[samples\.signal\] files: "
          r"'.*ntuples\.root' is not a regular file \(a FIFO \(named pipe\)\)"),
    Fault("config-is-a-directory", _config_directory, r"a\.toml: is a directory, not a "
          r"configuration file"),
    Fault("infinite-feature", _infinite_feature, r"feature '1 / \(HT - HT\)' is infinite .*set "
          r"inf_as_missing = true at the top of the configuration", status=1),
]
