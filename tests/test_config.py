"""The TOML analysis configuration: every kind of mistake is reported with the file, the key
and what would be valid, before any work starts; overrides, aliases and defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hepbdt.analysis import ConfigError, apply_overrides, check_inputs, load_config

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
DEMO = ROOT / "analyses" / "demo.toml"

BASE = f"""
event = "event"
tree = "Events"
weight = "genWeight * xsec * lumi / sumGenWeight"
features = ["HT", "MET_pt", "lead_pt"]

[aliases]
lead_pt = "Jet_pt[:, 0]"

[samples.signal]
files = "{DATA / 'signal.root'}"
label = "signal"

[samples.qcd]
files = "{DATA / 'background_qcd.root'}"
label = "background"
"""


def write(tmp_path: Path, text: str, name: str = "analysis.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems(path: Path, overrides: tuple[str, ...] = (), inputs: bool = False) -> str:
    with pytest.raises(ConfigError) as info:
        config = load_config(path, overrides)
        if inputs:
            check_inputs(config)
    return str(info.value)


def test_demo_config_is_valid_and_expanded():
    config = load_config(DEMO)
    check_inputs(config)
    assert config.task == "classification"
    assert [s.name for s in config.samples] == ["signal", "qcd", "ttbar"]
    assert all(Path(f).is_file() for s in config.samples for f in s.files)
    assert config.features[-1] == "mjj" and "Jet_phi[:, 0]" in config.feature_expressions[-1]
    assert config.feature_expressions[4] == "Jet_pt[:, 0]"  # an alias alone is not parenthesised
    assert config.samples[0].cut == "nJet >= 2" and config.samples[0].label == 1
    assert config.make_estimator().get_params()["n_trees"] == config.params["n_trees"]


def test_base_config_and_overrides(tmp_path):
    path = write(tmp_path, BASE)
    config = load_config(path, ["method.n_trees=7", "split.mode=alternate",
                                "samples.qcd.cut='nJet >= 3'", "output.figures=false"])
    assert config.params == {"n_trees": 7}
    assert config.split.mode == "alternate" and config.split.kfold is None
    assert config.samples[1].cut == "nJet >= 3"
    assert config.output.figures is False
    assert config.feature_expressions == ["HT", "MET_pt", "Jet_pt[:, 0]"]


def test_set_kfold_replaces_the_files_split(tmp_path):
    path = write(tmp_path, BASE + '\n[split]\nmode = "random"\ntrain_fraction = 0.6\n')
    assert load_config(path, ["split.kfold=3"]).split.kfold == 3
    kfold = write(tmp_path, BASE + "\n[split]\nkfold = 3\n", "kfold.toml")
    assert load_config(kfold, ["split.mode=block"]).split.kfold is None
    # the seed belongs to a random split: set over by kfold or a mode without a draw, it
    # goes with it (a seed given for them changed nothing, and the summary showed it)
    seeded = write(tmp_path, BASE + '\n[split]\nmode = "random"\nseed = 5\n', "seeded.toml")
    assert load_config(seeded, ["split.kfold=3"]).split.kfold == 3
    assert load_config(seeded, ["split.mode=block"]).split.mode == "block"
    assert load_config(seeded, ["split.mode=random"]).split.seed == 5
    for overrides in (["split.kfold=3", "split.seed=2"], ["split.mode=alternate", "split.seed=2"]):
        with pytest.raises(ConfigError, match="seed draws the random split only"):
            load_config(seeded, overrides)
    with pytest.raises(ConfigError, match="kfold .by event number. takes no random draw"):
        load_config(kfold, ["split.seed=2"])  # a seed does not switch k-fold to a split


@pytest.mark.parametrize("text, expected", [
    ("titel = 'x'", "analysis.toml: titel: unknown key; did you mean 'title'?"),
    ("title = 3", "analysis.toml: title: expected a string, got an integer (3)"),
    ("features = 'HT'", "features: expected a non-empty list of strings"),
    ("[split]\nmode = 'randm'", "[split] mode: 'randm' is not a split mode; valid: random, "
                                "alternate, block"),
    ("[split]\ntrain_fraction = 1.5", "[split] train_fraction: 1.5 is not in (0, 1)"),
    ("[split]\nnorm = 'equal'", "[split] norm: 'equal' is not a normalisation; valid: none, "
                                "num_events, equal_num_events"),
    ("[split]\nNormMode = 'NumEvents'", "[split] NormMode: unknown key; NormMode is TMVA's "
                                        "option; here write norm = \"num_events\""),
    ("[split]\nnTrain_Signal = 1000", "[split] nTrain_Signal: unknown key; nTrain_Signal is "
                                      "TMVA's option; here write train_fraction = ..."),
    ("[split]\nnTest_ttbar = 500", "[split] nTest_ttbar: unknown key; nTest_ttbar is "
                                   "TMVA's option; here write train_fraction = ..."),
    ("[method]\ntmva_options = 'NTrees=10:SplitMode=Random'",
     "[method] tmva_options: TMVA option 'SplitMode' is DataLoader::PrepareTrainingAndTestTree's, "
     "not the BDT method's; in a configuration the [split] table takes its place, write mode = "
     "\"random\", \"alternate\" or \"block\""),
    ("[split]\nkfold = 3\nmode = 'random'", "[split] kfold: kfold splits by event number; "
                                            "remove mode"),
    ("[split]\nkfold = 1", "[split] kfold: 1 folds: k-fold needs k >= 2"),
    ("[method]\nn_tress = 10", "[method] n_tress: unknown option of BDTClassifier; did you "
                               "mean 'n_trees'"),
    ("[method]\nNTrees = 10", "[method] NTrees: unknown option of BDTClassifier; NTrees is "
                              "TMVA's name: write n_trees = ..."),
    ("[method]\nn_trees = '10'", "[method] n_trees: n_trees='10' is not valid; expected 'auto' or an "
     "integer in [1, 100000]"),
    ("[method]\nlearning_rate = -1.0", "[method] learning_rate: learning_rate=-1.0 is not "
                                       "valid; expected a number in (0, 10]"),
    ("[method]\nboosting = 'xgboost'", "[method] boosting: boosting='xgboost' is not valid; "
                                       "expected one of"),
    ("[method]\nloss = 'squared'", "[method] loss: loss 'squared' is not a classification loss"),
    ("[method]\ntmva_options = 'NTrees=10:PruneMethod=CostComplexity'",
     "[method] tmva_options: TMVA option PruneMethod='CostComplexity': pruning is not "
     "implemented"),
    ("[output]\nfigure_formats = ['gif']", "[output] figure_formats: valid formats: png, pdf"),
    ("[output]\nscore_branch = 'bdt score'", "[output] score_branch: 'bdt score' is not a valid "
                                             "branch name"),
    ("[output]\nscore_branch = 'bdt_\u00e9'", "[output] score_branch: 'bdt_\u00e9' is not a "
                                             "valid branch name (letters, digits and _"),
    ("[output]\nprobability_branch = '2p'", "[output] probability_branch: '2p' is not a valid "
                                            "branch name"),
    ("[output]\nscore_branch = 'event'", "[output] score_branch: 'event' is a branch the score "
                                        "trees already have"),
    ("[output]\nscore_branch = 'fold'", "[output] score_branch: 'fold' is a branch the score "
                                       "trees already have"),
    # any name is a class (three or more make a multi-class training); an integer other
    # than 1 and 0, or a name that cannot be part of a branch name, is not
    ("[samples.tt]\nfiles = 'x.root'\nlabel = 2", "[samples.tt] label: 2 is not a class; "
                                                  "valid: 'signal'"),
    ("[samples.tt]\nfiles = 'x.root'\nlabel = 'no ise'", "[samples.tt] label: 'no ise' cannot "
                                                         "name a class"),
    ("[samples.tt]\nfiles = 'x.root:Other'\ntree = 'Events'\nlabel = 0",
     "[samples.tt] tree: 'Events' is the tree of none of the files: each names its own"),
    ("[samples.tt]\nfiles = 'x.root'\nlabel = 0\nscale = 0.0",
     "[samples.tt] scale: 0 makes every weight of the sample 0"),
    ("[samples.tt]\nlabel = 'background'", "[samples.tt] files: missing"),
    ("[samples.tt]\nfiles = 'x.root'\nwieght = 'w'", "[samples.tt] wieght: unknown key; did you "
                                                     "mean 'weight'?"),
    ("[samples.tt]\nfiles = 'x.root'", "[samples.tt] give label = 'signal' or 'background'"),
    ("[samples.tt]\nfiles = 'x.root'\ntarget = 'true_mass'", "samples ['tt'] have a target but "
                                                             "['signal', 'qcd'] do not"),
    ("[samples.tt]\nfiles = 'x.root'\nlabel = 0\ncut = 'nJet >='",
     "[samples.tt] cut: cut expression 'nJet >=' does not parse"),
])
def test_each_mistake_names_file_key_and_what_is_valid(tmp_path, text, expected):
    base = BASE
    if not text.startswith("["):  # top-level keys go before the tables
        base = text + "\n" + BASE
        text = ""
    if "features = 'HT'" in base:
        base = base.replace('features = ["HT", "MET_pt", "lead_pt"]\n', "")
    message = problems(write(tmp_path, base + "\n" + text + "\n"))
    assert expected in message, message


def test_all_mistakes_are_reported_together(tmp_path):
    text = BASE + "\n[method]\nn_tress = 10\nmax_dpeth = 3\n[output]\nreprot = true\n"
    message = problems(write(tmp_path, text))
    assert len(message.splitlines()) == 3
    assert all(line.startswith(f"{tmp_path / 'analysis.toml'}: ") for line in message.splitlines())


def test_file_level_mistakes(tmp_path):
    assert "not valid TOML" in problems(write(tmp_path, "features = [\n"))
    assert "does not exist" in problems(tmp_path / "nothing.toml")
    empty = problems(write(tmp_path, "title = 'x'\n"))
    assert "features: missing" in empty and "samples: missing" in empty
    only_signal = BASE.split("[samples.qcd]")[0]
    assert "no background sample" in problems(write(tmp_path, only_signal))
    kfold_without_event = BASE.replace('event = "event"\n', "") + "\n[split]\nkfold = 3\n"
    assert "[split] kfold: k-fold training assigns events to folds by event number" in problems(
        write(tmp_path, kfold_without_event))
    cycle = BASE.replace('lead_pt = "Jet_pt[:, 0]"', 'lead_pt = "2 * x"\nx = "lead_pt"')
    assert "refers to itself" in problems(write(tmp_path, cycle))
    function = BASE.replace('lead_pt = "Jet_pt[:, 0]"', 'lead_pt = "Jet_pt[:, 0]"\nsqrt = "HT"')
    assert "[aliases] sqrt: an alias cannot have the name of a function" in problems(
        write(tmp_path, function))


def test_overrides_are_marked_and_checked(tmp_path):
    path = write(tmp_path, BASE)
    message = problems(path, ("method.n_tres=5",))
    assert "[method] n_tres (from --set): unknown option" in message
    assert "expected key=value" in problems(path, ("method.n_trees",))
    assert "is not a table" in problems(path, ("event.x=1",))
    document = {"method": {}}
    assert apply_overrides(document, ["method.n_trees=5", "split.mode=random",
                                      "features=[\"a\", \"b\"]"]) == {
        "method.n_trees", "split.mode", "features"}
    assert document == {"method": {"n_trees": 5}, "split": {"mode": "random"},
                        "features": ["a", "b"]}


def test_inputs_missing_files_trees_and_branches(tmp_path):
    text = BASE.replace("background_qcd.root", "background_qcdd.root")
    text = text.replace('"HT", "MET_pt"', '"HT", "MET_ptt"')
    text += f"""
[samples.tt]
files = "{DATA}/nothing_*.root"
label = "background"

[samples.other]
files = "{DATA / 'signal.root'}"
tree = "Evnts"
label = "background"
"""
    message = problems(write(tmp_path, text), inputs=True)
    assert "[samples.qcd] files: file" in message and "did you mean 'background_qcd.root'" in message
    assert "[samples.tt] files: the pattern" in message and "matches no file" in message
    assert "[samples.other] tree:" in message and "'Events'" in message
    assert "features: 'MET_ptt' uses 'MET_ptt', which is not a branch of tree 'Events'" in message
    assert "did you mean 'MET_pt'" in message


def test_inputs_alias_and_weight_branches(tmp_path):
    text = BASE.replace('lead_pt = "Jet_pt[:, 0]"', 'lead_pt = "Jet_ptt[:, 0]"\nHT = "1"')
    text = text.replace('label = "background"', 'label = "background"\nweight = "genWeigth"')
    message = problems(write(tmp_path, text), inputs=True)
    assert "features: 'lead_pt' (= 'Jet_ptt[:, 0]') uses 'Jet_ptt'" in message
    assert "[samples.qcd] weight: 'genWeigth' uses 'genWeigth'" in message
    assert "did you mean 'genWeight'" in message
    assert "[aliases] HT: is also a branch" in message


def test_regression_and_tmva_options(tmp_path):
    text = BASE.replace('label = "signal"', 'target = "true_mass"')
    text = text.replace('label = "background"', 'target = "true_mass"')
    config = load_config(write(tmp_path, text + "\n[method]\nloss = 'huber'\n"))
    assert config.task == "regression"
    assert type(config.make_estimator()).__name__ == "BDTRegressor"
    message = problems(write(tmp_path, text + "\n[split]\nnorm = 'equal_num_events'\n", "r.toml"))
    assert "equal_num_events balances classes" in message
    tmva = write(tmp_path, BASE + "\n[method]\ntmva_options = 'NTrees=12:BoostType=Grad'\n"
                 "random_state = 3\n", "t.toml")
    config = load_config(tmva)
    assert config.params["n_trees"] == 12 and config.params["boosting"] == "gradient"
    assert config.params["random_state"] == 3
    assert load_config(write(tmp_path, BASE + "\n[split]\nnorm = 'NumEvents'\n", "n.toml")
                       ).split.norm == "num_events"


def test_two_samples_reading_the_same_events_are_refused(tmp_path):
    """The same file, tree and cut as two samples (a copy, or the signal file also listed as
    a background) counted its events twice in the yields; --check and the reader refuse it.
    The same file split by different cuts stays allowed."""
    import hepbdt
    from hepbdt.io.errors import InputError

    text = (ROOT / "analyses" / "demo.toml").read_text().replace('"../data/', f'"{ROOT}/data/')
    twice = text.replace("[split]", f'[samples.signal_again]\nfiles = "{ROOT}/data/./signal.root"\n'
                                    'label = "background"\n\n[split]')
    path = tmp_path / "twice.toml"
    path.write_text(twice)
    with pytest.raises(ConfigError, match="samples 'signal' and 'signal_again' both read tree"):
        check_inputs(load_config(path))
    split = twice.replace('label = "background"\n\n[split]',
                          'label = "background"\ncut = "MET_pt > 100"\n\n[split]')
    path.write_text(split)
    check_inputs(load_config(path))
    signal = hepbdt.Sample("a", ROOT / "data" / "signal.root", label="signal")
    with pytest.raises(InputError, match="samples 'a' and 'b' both read tree 'Events'"):
        hepbdt.read([signal, hepbdt.Sample("b", ROOT / "data" / "signal.root",
                                           label="background")], ["MET_pt"], progress=False)
    # the same cut spelled otherwise (the end-to-end audit: only blanks were compared)
    for first, again in (("MET_pt > 100", "MET_pt>100"), ("MET_pt > 100", "(MET_pt > 100)"),
                         ("nJet >= 2 && HT > 50", "nJet >= 2 and (HT > 50)")):
        with pytest.raises(InputError, match="samples 'a' and 'b' both read tree 'Events'"):
            hepbdt.read([hepbdt.Sample("a", ROOT / "data" / "signal.root", label="signal",
                                       cut=first),
                         hepbdt.Sample("b", ROOT / "data" / "signal.root", label="background",
                                       cut=again)], ["MET_pt"], progress=False)


def test_an_alias_nothing_uses_is_checked_too(tmp_path):
    """"Everything is checked": an unused alias that does not parse passed unparsed."""
    path = write(tmp_path, BASE.replace('lead_pt = "Jet_pt[:, 0]"',
                                        'lead_pt = "Jet_pt[:, 0]"\nunused = "Jet_pt[:, 0"'))
    with pytest.raises(ConfigError, match=r"\[aliases\] unused: expression 'Jet_pt\[:, 0' does "
                       "not parse"):
        load_config(path)


def test_a_configuration_without_random_state_seeds_its_estimator(tmp_path):
    # the reproducibility audit: two runs of one configuration with row subsampling and no
    # random_state trained different models (all 30,626 test scores moved, up to 0.435)
    path = write(tmp_path, BASE)
    assert load_config(path, ["method.subsample=0.5"]).make_estimator().random_state == 0
    given = load_config(path, ["method.random_state=7"])
    assert given.make_estimator().random_state == 7 and given.params["random_state"] == 7


def test_unknown_option_hints_name_only_what_a_configuration_takes(tmp_path):
    # the documentation audit: the hint suggested signal_label (always refused in a
    # configuration), left out decorrelate (accepted), and sent a regression's
    # SigToBkgFraction to tmva_options, which then refused it
    path = write(tmp_path, BASE + "\n[method]\nsignal_lable = 1\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "signal_label" not in message.replace("signal_lable", "")
    assert "decorrelate," in message
    text = BASE.replace('label = "signal"', 'target = "true_mass"')
    text = text.replace('label = "background"', 'target = "true_mass"')
    path = write(tmp_path, text + "\n[method]\nSigToBkgFraction = 2.0\n", "reg.toml")
    with pytest.raises(ConfigError, match="option of classification") as info:
        load_config(path)
    assert "tmva_options" not in str(info.value).split("SigToBkgFraction is")[1]


def test_a_default_tree_no_file_of_a_sample_takes_is_not_a_mistake(tmp_path):
    # the top-level tree is a default: a sample whose files name their trees keeps them
    text = BASE.replace(f"files = \"{DATA / 'background_qcd.root'}\"",
                        f"files = \"{DATA / 'background_qcd.root'}:Events\"")
    config = load_config(write(tmp_path, text))
    qcd = next(s for s in config.samples if s.name == "qcd")
    assert qcd.tree is None and qcd.files[0].endswith("background_qcd.root:Events")
    check_inputs(config)


def test_a_sample_tree_that_every_file_overrides_is_refused_in_python_too(tmp_path):
    from hepbdt.io import InputError, Sample, read

    path = f"{DATA / 'signal.root'}:Events"
    assert len(read(Sample("s", path, tree="Events", label=1), ["HT"])) > 0  # the same tree
    with pytest.raises(InputError, match="tree 'Other' is the tree of none of the files"):
        read(Sample("s", path, tree="Other", label=1), ["HT"])


def test_check_refuses_an_expression_that_gives_a_list_per_event(tmp_path):
    """`hepbdt train --check` said OK for a feature that is a jagged branch; the read then
    stopped (exit 2) after the files were opened: the branches' types say so at once."""
    path = write(tmp_path, BASE.replace('"lead_pt"]', '"lead_pt", "Jet_eta"]')
                 + 'cut = "Jet_pt > 30"\n')
    message = problems(path, inputs=True)
    assert "features:" in message and "'Jet_eta' gives a list per event" in message
    assert "cut:" in message and "'Jet_pt > 30' gives a list per event" in message
    assert "any(...)" in message  # a cut's hint
    assert message.count("gives a list per event") == 2  # once per key, not per sample
    mixed = write(tmp_path, BASE.replace('"lead_pt"]', '"lead_pt", "ifmixed"]')
                  .replace('lead_pt = ', 'ifmixed = "HT if nJet > 2 else Jet_pt"\nlead_pt = '),
                  "mixed.toml")
    # element by element, as ROOT's nJet > 2 ? HT : Jet_pt: a list per event
    assert "'HT if nJet > 2 else Jet_pt' gives a list per event" in problems(mixed, inputs=True)
    # a reduction or a subscript of a flat branch: the read's own refusal, at --check
    flat = write(tmp_path, BASE.replace('"lead_pt"]', '"lead_pt", "max(HT)", "MET_pt[:, 0]"]'),
                 "flat.toml")
    message = problems(flat, inputs=True)
    assert "'max(HT)': max() reduces each event's list" in message
    assert "'MET_pt[:, 0]': a subscript selects within each event's list" in message
    check_inputs(load_config(write(tmp_path, BASE.replace(
        '"lead_pt"]', '"lead_pt", "num(Jet_eta)", "max(Jet_pt)", "sum(Jet_pt > 30)"]'),
        "reduced.toml")))


def test_check_refuses_what_the_fit_would_refuse_after_the_read(tmp_path):
    """`--check` passed early_stopping_rounds with an integer n_trees (a configuration has
    no eval_set) and the Dask fit's own refusals under [dask]; train refused them after
    reading the events (and starting the cluster). The sibling audit, 2026-12-04."""
    rounds = write(tmp_path, BASE + "\n[method]\nn_trees = 20\nearly_stopping_rounds = 5\n")
    message = problems(rounds)
    assert "[method] early_stopping_rounds: early_stopping_rounds=5 stops on the loss of an "\
        "eval_set" in message
    dask = BASE + '\n[method]\nboosting = "newton"\nquantised_histograms = false\n' \
        '\n[dask]\nscheduler = "local"\nworkers = 1\n'
    message = problems(write(tmp_path, dask, "dask.toml"))
    assert "[method] quantised_histograms: quantised_histograms=False: the Dask fit" in message
    deep = dask.replace("quantised_histograms = false", "max_depth = 13")
    assert "[method] max_depth: max_depth=13" in problems(write(tmp_path, deep, "deep.toml"))
    load_config(write(tmp_path, dask.replace("quantised_histograms = false", "max_depth = 6"),
                      "fine.toml"))


def test_options_that_do_nothing_with_the_boosting_are_named(tmp_path):
    """learning_rate with adaboost and min_child_weight with gradient passed --check
    without a word (the report lists them as left out); written in [method], they warn."""
    import warnings

    from hepbdt.estimators import IdleOptionWarning

    idle = write(tmp_path, BASE + '\n[method]\nboosting = "adaboost"\nlearning_rate = 0.01\n'
                 'beta = 0.5\n')
    with pytest.warns(IdleOptionWarning, match=r"\[method\] learning_rate: does nothing with "
                      r"boosting='adaboost'"):
        load_config(idle)
    both = write(tmp_path, BASE + "\n[method]\nmin_child_weight = 50\nbeta = 0.5\n", "b.toml")
    with pytest.warns(IdleOptionWarning, match=r"beta, min_child_weight: do nothing with "
                      r"boosting='gradient'"):
        load_config(both)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdleOptionWarning)
        load_config(write(tmp_path, BASE + '\n[method]\nboosting = "newton"\n'
                          "min_child_weight = 50\nlearning_rate = 0.2\n", "c.toml"))
        load_config(DEMO)


def test_a_score_branch_named_as_a_feature_is_refused(tmp_path):
    """score_branch = "HT" took branch HT in the score trees and moved the feature to HT_2
    (TestTree->Draw("HT") plotted the score); refused with the feature it would take."""
    path = write(tmp_path, BASE + '[output]\nscore_branch = "HT"\n')
    assert "the score branch 'HT' is also the branch of feature 'HT'" in problems(path)
    load_config(path, ("output.score_features=false",))  # no feature branches: no clash


@pytest.mark.parametrize("target", ["HT", "(HT)", "Jet_pt[:,0]", "lead_pt"])
def test_a_target_that_is_a_feature_is_refused(tmp_path, target):
    """A regression of a feature copied its input: RMSE 0.03 for a target of spread 1, with
    no word. Refused however the target spells the feature (aliases, parentheses)."""
    text = BASE.replace('label = "signal"', f'target = "{target}"')
    text = text.replace('label = "background"', 'target = "true_mass"')
    assert re.search(r"\[samples\.signal\] target: .* is also the feature '(HT|lead_pt)'",
                     problems(write(tmp_path, text)))
    load_config(write(tmp_path, text.replace(f'target = "{target}"', 'target = "HT * 2"'),
                      "other.toml"))


def test_a_configuration_with_a_byte_order_mark_is_read(tmp_path):
    """Windows editors start a UTF-8 file with a byte-order mark: it read as "Invalid
    statement (at line 1, column 1)"."""
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + BASE.encode("utf-8"))
    assert load_config(path).features == ["HT", "MET_pt", "lead_pt"]


def test_sample_files_are_relative_to_the_folder_of_a_linked_configuration(tmp_path):
    """A campaign folder's link to a shared configuration reads the campaign's data/, the
    folder the configuration was given in, not the folder of the file it links to."""
    relative = BASE.replace(str(DATA / "signal.root"), "data/signal.root")
    for folder in ("shared", "campaign"):
        (tmp_path / folder / "data").mkdir(parents=True)
        (tmp_path / folder / "data" / "signal.root").write_bytes(b"")
    (tmp_path / "shared" / "analysis.toml").write_text(relative)
    (tmp_path / "campaign" / "analysis.toml").symlink_to(tmp_path / "shared" / "analysis.toml")
    config = load_config(tmp_path / "campaign" / "analysis.toml")
    assert Path(config.samples[0].files[0]) == tmp_path / "campaign" / "data" / "signal.root"


def test_decorrelation_options_that_do_nothing_are_named(tmp_path):
    """decorrelation_bins with the DDT map alone, decorrelation_steps with the flatness loss,
    a strength with no decorrelation: accepted in silence, though the models do not change
    with them (checked on fits); written in [method], they warn as the boosters' idle ones."""
    import warnings

    import numpy as np

    from hepbdt import BDTClassifier
    from hepbdt.demo_data import sculpting_arrays
    from hepbdt.estimators import IdleOptionWarning

    d = sculpting_arrays(600, 1200, seed=1)
    X = np.column_stack([d["mjj"], d["tau21"]])
    for options, idle in (({"decorrelation_map": "ddt"}, {"decorrelation_bins": (3, 40)}),
                          ({"decorrelation": "flatness"}, {"decorrelation_steps": (2, 9)})):
        (name, (a, b)), = idle.items()
        fits = [BDTClassifier(n_trees=5, max_depth=2, **options, **{name: v}).fit(
            X, d["label"], decorrelate=d["mjj"]).decision_function(X) for v in (a, b)]
        np.testing.assert_array_equal(*fits)
    table = '\n[method]\ndecorrelate = ["HT"]\n'
    cases = [(table + 'decorrelation_map = "ddt"\ndecorrelation_bins = 40\n',
              r"decorrelation_bins: does nothing with boosting='gradient', decorrelation=None, "
              r"decorrelation_map='ddt'"),
             (table + 'decorrelation = "flatness"\ndecorrelation_steps = 9\n',
              r"decorrelation_steps: does nothing with .*decorrelation='flatness'"),
             ('\n[method]\ndecorrelation_strength = 3.0\n',
              r"decorrelation_strength: does nothing with .*decorrelation=None")]
    for i, (method, match) in enumerate(cases):
        with pytest.warns(IdleOptionWarning, match=match):
            load_config(write(tmp_path, BASE + method, f"{i}.toml"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdleOptionWarning)
        load_config(write(tmp_path, BASE + table + 'decorrelation = "flatness"\n'
                          "decorrelation_bins = 20\ndecorrelation_strength = 0.5\n", "ok.toml"))


def test_sample_files_follow_dot_dot_as_the_file_system_does(tmp_path):
    """`link/../analysis.toml`, link a folder's link: the shell opens real/analysis.toml, and
    its data/ is real/data/ (a lexical '..' looked in the folder the link lies in)."""
    relative = BASE.replace(str(DATA / "signal.root"), "data/signal.root")
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "data").mkdir()
    (real / "data" / "signal.root").write_bytes(b"")
    (real / "analysis.toml").write_text(relative)
    (tmp_path / "link").symlink_to(real / "sub")
    config = load_config(tmp_path / "link" / ".." / "analysis.toml")
    assert Path(config.samples[0].files[0]) == real / "data" / "signal.root"


@pytest.mark.parametrize(("line", "hint"), [
    ("eta = 0.3", "eta is another library's name: write learning_rate = ..."),
    ("gamma = 1.0", "gamma is another library's name: write min_split_gain = ..."),
    ("num_leaves = 31", "write max_leaves = ..."),
    ("min_child_samples = 20", "write min_node_size = ... (a fraction of the training weight"),
    ("alpha = 0.5", "write reg_alpha = ... (XGBoost's L1 penalty) or huber_alpha = ..."),
    ("max_delta_step = 1", "max_delta_step is another library's option, which hepbdt does "
                           "not have"),
])
def test_a_peer_library_option_name_is_translated(tmp_path: Path, line: str, hint: str) -> None:
    """XGBoost's and LightGBM's names (a configuration copied from them) are named with
    hepbdt's; 'did you mean' offered AdaBoost's 'beta' for eta and 'max_depth' for
    max_delta_step."""
    text = problems(write(tmp_path, BASE + f"[method]\n{line}\n"))
    assert hint in text
    assert "did you mean" not in text


def test_a_files_own_tree_overrides_the_default_tree(tmp_path):
    # the top-level tree is a default: files that name their own tree (file.root:Events)
    # read that tree, and only a sample's own `tree` that no file takes is refused
    from .faults import tiny_config

    path = tiny_config(tmp_path)
    text = path.read_text().replace('tree = "Events"', 'tree = "NoSuchTree"')
    text = text.replace('.root"', '.root:Events"')
    path.write_text(text)
    config = load_config(path)
    assert [(s.tree, [str(f).rsplit(":", 1)[1] for f in s.files]) for s in config.samples] == \
        [(None, ["Events"]), (None, ["Events"])]
    check_inputs(config)  # uproot opens each file's Events tree
