"""The ``hepbdt`` command: ``train``, ``apply``, ``export``, ``inspect``, ``report`` and ``demo``.

Each subcommand is a thin layer over :mod:`hepbdt.analysis` (the TOML configuration,
training and outputs), :mod:`hepbdt.scoring` and :mod:`hepbdt.persistence`; this module
parses arguments and dispatches, nothing more. The package is imported inside the command
functions, so that ``hepbdt --help`` answers without importing Numba and matplotlib.
Errors the user can fix (a mistake in the configuration, a missing file or branch, a bad
model file) are printed as ``hepbdt: error: ...`` with exit status 2, without a traceback.
Progress lines go to stderr only when it is a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from hepbdt._version import __version__

__all__ = ["main", "demo_config_path"]

EXAMPLES = """\
examples:
  hepbdt demo                                   train the shipped demo into ./hepbdt-demo
  hepbdt train analysis.toml --output results   train an analysis
  hepbdt train analysis.toml --set method.n_trees=500 --set split.kfold=5
  hepbdt apply results/model.json 'ntuples/*.root' --output scores.root --event event
  hepbdt export results/model.json --onnx model.onnx --cpp model.h
  hepbdt inspect results/model.json
  hepbdt report results/model.json results/scores.root --output report.html
"""


class UserError(Exception):
    """A problem the user can fix; printed without a traceback."""


def demo_config_path(echo: Any = None) -> Path:
    """The demo configuration ``hepbdt demo`` trains.

    In a checkout of the hepbdt repository (an editable install, with ``analyses/`` and
    ``data/`` beside the package): ``analyses/demo.toml``, which reads ``data/*.root``.
    Anywhere else (an installed wheel): the package's copy, ``hepbdt/demo/demo.toml``,
    beside the three ntuples in the demo folder of hepbdt's cache (``$HEPBDT_CACHE``, else
    ``$XDG_CACHE_HOME/hepbdt``, else ``~/.cache/hepbdt``), which
    :func:`hepbdt.demo_data.demo_folder` makes on first use and reuses afterwards. ``echo``
    is told, in one line, when the ntuples are being generated.
    """
    # imported when the demo runs, so that --help stays fast
    from hepbdt.demo_data import DEMO_CONFIG, FILE_NAMES, demo_folder

    root = Path(__file__).resolve().parent.parent
    checkout = root / "analyses" / "demo.toml"
    if checkout.is_file() and all((root / "data" / name).is_file() for name in FILE_NAMES.values()):
        return checkout
    try:
        return demo_folder(echo=echo) / DEMO_CONFIG
    except OSError as exc:
        where = exc.filename or "the cache folder"
        raise UserError(
            f"cannot write the demo ntuples into {where}: {exc.strerror or exc}; set "
            "HEPBDT_CACHE to a folder you can write"
        ) from exc


class _Parser(argparse.ArgumentParser):
    """argparse with a usage mistake as one ``hepbdt: error:`` line (exit status 2), as every
    other mistake; the usage itself is in ``--help``. Subcommands' parsers are of this class
    too (argparse makes them of the parser's own class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in (None, "store"):  # every option taking one value (None: the default)
            self.register("action", name, _Once)

    def error(self, message: str) -> NoReturn:
        """Print the one line and exit with status 2."""
        command = self.prog.removeprefix("hepbdt").strip()
        text = " ".join(message.split())
        self.exit(2, f"hepbdt: error: {command + ': ' if command else ''}{text} (see "
                     f"'{self.prog} --help')\n")


def _count(text: str) -> int:
    """An argparse type: a whole number in [0, 2**63 - 1] written in ASCII digits (Python's
    ``int`` also reads ``1_0`` as 10, ``' 3'`` and other scripts' digits)."""
    if not re.fullmatch(r"\+?[0-9]+", text):
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}; expected an integer "
                                         ">= 0 in the digits 0-9")
    if int(text) > 2**63 - 1:
        raise argparse.ArgumentTypeError(f"{text} is beyond 2**63 - 1; expected an integer "
                                         "in [0, 2**63 - 1]")
    return int(text)


class _Once(argparse.Action):
    """argparse's store, refusing a second value of the option: argparse keeps the last, so
    ``--onnx a.onnx --onnx b.onnx`` wrote b.onnx alone and ``--output a --output b`` forgot
    a, without a word."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        """Store ``values``; a usage error when the option was given before."""
        given = namespace.__dict__.setdefault("_given_once", set())
        if self.dest in given:
            parser.error(f"argument {'/'.join(self.option_strings)}: given twice "
                         f"({getattr(namespace, self.dest)!r}, then {values!r}); give it once")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def _nonempty(what: str) -> Any:
    """An argparse type that refuses an empty value (``--cpp ''`` wrote nothing and
    ``--output-tree ''`` took the input tree's name, each without a word), naming ``what``
    is expected instead."""
    def given(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(
                f"{text!r} is {'blank' if text else 'empty'}; give {what}")
        return text
    given.__name__ = "value"  # argparse names the type in its own messages
    return given


_FILE, _FOLDER, _NAME = _nonempty("a file name"), _nonempty("a folder name"), _nonempty("a name")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="hepbdt", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Boosted decision trees for particle physics: train on ROOT ntuples from "
                    "a TOML analysis configuration, apply models to ntuples, inspect models "
                    "and write reports.",
        epilog=EXAMPLES)
    parser.add_argument("--version", action="version", version=f"hepbdt {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of every error (for bug reports)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    parser.set_defaults(commands=commands.choices)  # the subcommands' parsers, for main
    for add in (_train_parser, _apply_parser, _export_parser, _inspect_parser, _report_parser,
                _demo_parser):
        add(commands)
    return parser


def _progress_options(sub: argparse.ArgumentParser) -> None:
    group = sub.add_mutually_exclusive_group()
    group.add_argument("--progress", dest="progress", action="store_const", const=True,
                       default=None, help="show progress lines on stderr (default: only "
                       "when stderr is a terminal)")
    group.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                       help="never show progress lines")


def _train_parser(commands: Any) -> None:
    train = commands.add_parser(
        "train", help="train an analysis from its TOML configuration",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Read the samples, split them (or train k folds by event number), fit the "
                    "model and write into the output folder: model.json (k-fold: one model "
                    "per fold and a manifest), model.weights.xml (TMVA), scores.root "
                    "(TrainTree, TestTree), figures/, report.html and summary.txt. The "
                    "configuration, its files and its branches are checked before any work "
                    "starts.",
        epilog="--set takes a dotted key and a TOML value, e.g. --set method.n_trees=500, "
               "--set split.kfold=5, --set samples.signal.cut='nJet >= 3', "
               "--set 'features=[\"HT\", \"MET_pt\"]'.")
    train.add_argument("config", type=_nonempty("the .toml file"), help="the analysis configuration (.toml)")
    train.add_argument("--set", dest="overrides", action="append", default=[],
                       metavar="KEY=VALUE", help="override a configuration key (repeatable)")
    train.add_argument("--output", "-o", type=_FOLDER, help="output folder (default: [output] directory, "
                       "else ./hepbdt-<config name>)")
    train.add_argument("--check", action="store_true", help="check the configuration, the "
                       "files and the branches, then stop")
    _progress_options(train)


def _apply_parser(commands: Any) -> None:
    apply = commands.add_parser(
        "apply", help="score ntuples with a model; write a friend tree",
        description="Evaluate a model on every entry of the input trees and write a friend "
                    "tree (same entries, same order) with the score and the event identifier. "
                    "A k-fold manifest scores each event with the model that did not train on "
                    "it, by event number.")
    apply.add_argument("model", type=_FILE, help="model.json (a model or a k-fold manifest)")
    apply.add_argument("inputs", nargs="+", metavar="INPUT",
                       type=_nonempty("a ROOT file, a glob or file.root:tree"),
                       help="input ROOT files: paths, globs or file.root:tree")
    apply.add_argument("--output", "-o", required=True, type=_FILE, help="output ROOT file; {stem}, "
                       "{name}, {tree} give one file per input")
    apply.add_argument("--tree", type=_NAME, help="input tree name (default: the file's only tree)")
    apply.add_argument("--branch", type=_NAME, default="bdt_score", help="score branch name "
                       "(default: bdt_score)")
    apply.add_argument("--probability-branch", type=_NAME, help="prefix of the "
                       "per-class probability branches of a multi-class model (default: "
                       "bdt_prob; its raw scores are <branch>_<class>)")
    apply.add_argument("--event", type=_nonempty("an expression"), help="event-number "
                       "expression written beside the score (default: the k-fold "
                       "manifest's, else the entry number)")
    apply.add_argument("--inf-as-missing", action="store_true", help="treat +-inf in a "
                       "feature as missing (NaN) instead of an error, as a training with "
                       "inf_as_missing = true does")
    apply.add_argument("--output-tree", type=_NAME,
                       help="output tree name (default: the input tree's)")
    apply.add_argument("--scheduler", metavar="ADDRESS",
                       type=_nonempty("'local' or an address such as tcp://host:8786"),
                       help="score on a Dask cluster: a scheduler address (tcp://host:8786) "
                       "or 'local'; each output file is "
                       "written by one worker (pip install 'hepbdt[dask]')")
    _progress_options(apply)


def _export_parser(commands: Any) -> None:
    export = commands.add_parser(
        "export", help="write a model as ONNX, a C++ header or TMVA XML",
        description="Write a model for other software: --onnx (an ai.onnx.ml "
                    "TreeEnsembleRegressor graph for onnxruntime, as used in CMSSW and Athena), "
                    "--cpp (one dependency-free C++ header with an evaluate(const float*) "
                    "function), --tmva (a MethodBDT weight file for TMVA::Reader). Each file "
                    "scores as the model does; a model a format cannot express is refused. "
                    "A k-fold manifest gives one file per fold (NAME_fold0.onnx, ...): fold i "
                    "scores the events with event number % k == i.",
        epilog="The inputs are the model's features in its order (`hepbdt inspect` lists "
               "them). pip install 'hepbdt[onnx]' for --onnx.")
    export.add_argument("model", type=_FILE, help="model.json (a model or a k-fold manifest)")
    export.add_argument("--onnx", type=_FILE, metavar="FILE", help="write an ONNX model (.onnx)")
    export.add_argument("--cpp", type=_FILE, metavar="FILE",
                        help="write a C++ header (.h)")
    export.add_argument("--tmva", type=_FILE, metavar="FILE",
                        help="write a TMVA weight file (.weights.xml)")
    export.add_argument("--namespace", type=_NAME, help="C++ namespace of --cpp (default: "
                        "from the file name; "
                        "a k-fold model's fold i adds _fold<i>)")
    export.add_argument("--missing", choices=("auto", "exact", "none"),
                        help="NaN branches in --tmva (default auto: for regressors and "
                        "multi-class models; TMVA::Reader returns -999 for a two-class "
                        "classifier's NaN events)")


def _inspect_parser(commands: Any) -> None:
    inspect = commands.add_parser(
        "inspect", help="print a model's options, features, trees and ranking",
        description="Print the estimator, its options (and the TMVA option string when there "
                    "is one), the features, the trees and a text ranking of the variables.")
    inspect.add_argument("model", type=_FILE, help="model.json (a model or a k-fold manifest)")
    inspect.add_argument("--tree", type=_count, action="append", default=[], metavar="N",
                         help="also print tree N as text (repeatable)")


def _report_parser(commands: Any) -> None:
    report = commands.add_parser(
        "report", help="write the HTML report again from a model and its score trees",
        description="Rebuild report.html from a model file and the scores.root that "
                    "`hepbdt train` wrote (TrainTree and TestTree with their features).")
    report.add_argument("model", type=_FILE, help="model.json (a model or a k-fold manifest)")
    report.add_argument("scores", type=_FILE, help="scores.root written by hepbdt train")
    report.add_argument("--output", "-o", type=_FILE, default="report.html", help="HTML file to write "
                        "(default: report.html)")
    report.add_argument("--title", type=_nonempty("a title"), help="title of the report")
    report.add_argument("--min-background-events", type=_count, default=None, metavar="N",
                        help="background MC events a best cut keeps at least, counted and "
                        "effective (default: the training's, as its output set records it, "
                        "else 10)")


def _demo_parser(commands: Any) -> None:
    demo = commands.add_parser(
        "demo", help="train the demo analysis (X(125) -> bb on toy ntuples) into ./hepbdt-demo",
        description="Train the demo analysis (X(125) -> bb against QCD and ttbar on toy "
                    "ntuples) and write everything into ./hepbdt-demo. In a checkout of the "
                    "hepbdt repository it trains analyses/demo.toml on data/*.root; "
                    "elsewhere, the package's demo.toml on ntuples generated on first use "
                    "into hepbdt's cache ($HEPBDT_CACHE, else $XDG_CACHE_HOME/hepbdt, else "
                    "~/.cache/hepbdt) and reused afterwards.")
    demo.add_argument("--output", "-o", type=_FOLDER, default=None, help="output folder (default: "
                      "./hepbdt-demo)")
    demo.add_argument("--set", dest="overrides", action="append", default=[],
                      metavar="KEY=VALUE", help="override a configuration key (repeatable)")
    _progress_options(demo)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hepbdt`` command line; returns the exit status.

    A mistake the user can fix is one ``hepbdt: error:`` line naming the file, key or
    entry: exit status 2 for usage and configuration mistakes, 1 for failures while running
    (bad data in a file, a training that cannot be done, an output that cannot be
    written), 130 for an interrupt, 143 for SIGTERM (both clean up first). Anything else
    is a bug in hepbdt and shows its traceback, as every error does with ``--debug``.
    """
    args, extra = _parser().parse_known_args(argv)
    if extra:  # named by the subcommand that does not take them (argparse: by "hepbdt")
        args.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    _outputs_in_place()  # forget an earlier command's, in the same process
    _util_call("forget_signals")
    try:
        with _sigterm_interrupts():
            status = _COMMANDS[args.command](args)
            _util_call("raise_lost_signals")  # one whose exception was lost
            return status
    except KeyboardInterrupt as exc:
        _util_call("forget_signals")
        terminated = isinstance(exc, _Terminated)
        done = _outputs_in_place()
        # a signal held back until the outputs were in place: they are this run's, whole
        after = (f" after its outputs were in place ({', '.join(done)}: they hold this run's "
                 "results)") if done else ""
        print(f"hepbdt: {'terminated' if terminated else 'interrupted'}{after}", file=sys.stderr)
        return 143 if terminated else 130
    except BrokenPipeError:  # e.g. `hepbdt inspect model.json | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        status = _status_of(exc)
        if status is None or args.debug:
            raise
        print(f"hepbdt: error: {_message(exc)}", file=sys.stderr)
        return status


def _outputs_in_place() -> list[str]:
    """The outputs the command put in place for good (``_util.note_in_place``), forgotten
    once read."""
    return _util_call("outputs_in_place", True) or []


def _util_call(name: str, *args: Any) -> Any:
    """``hepbdt._util.<name>(*args)`` when a command imported ``_util``, else None: the
    command line imports nothing a command does not need (so ``--help`` stays fast)."""
    util = sys.modules.get("hepbdt._util")
    return None if util is None else getattr(util, name)(*args)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised like an interrupt so that temporaries and staging folders are
    removed on the way out (exit status 143)."""


@contextlib.contextmanager
def _sigterm_interrupts() -> Any:
    """While a command runs (in the main thread), SIGTERM raises :class:`_Terminated` and
    SIGINT KeyboardInterrupt, each noted too (``_util.note_signal``), so that one whose
    exception a callback from compiled code swallowed is delivered again before any output
    is put in place."""
    import signal

    if not _in_main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield  # another thread, or a handler someone else set: left as it is
        return

    def terminate(number: int, _frame: Any) -> None:
        _util_call("note_signal", number)
        raise _Terminated

    def interrupt(number: int, _frame: Any) -> None:
        _util_call("note_signal", number)
        raise KeyboardInterrupt

    ours = {signal.SIGTERM: terminate}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        ours[signal.SIGINT] = interrupt
    previous = {number: signal.signal(number, handler) for number, handler in ours.items()}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _in_main_thread() -> bool:
    """Whether this is the main thread (only it may set signal handlers)."""
    import threading

    return threading.current_thread() is threading.main_thread()


def _status_of(exc: BaseException) -> int | None:
    """2 for a usage or configuration mistake, 1 for a failure while running, None for a bug."""
    if isinstance(exc, MemoryError):  # before the imports, which may need memory too
        return 1
    # imported when an error is reported, so that --help stays fast
    from hepbdt.analysis.config import ConfigError
    from hepbdt.analysis.workflow import TrainingError
    from hepbdt.estimators import ParameterError
    from hepbdt.io.errors import (
        ExpressionError,
        InputError,
        MissingBranchError,
        MissingFileError,
        MissingTreeError,
    )
    from hepbdt.model import ModelFormatError
    from hepbdt.output_set import OutputSetError
    from hepbdt.tmva_options import TMVAOptionError

    usage = (UserError, ConfigError, ParameterError, TMVAOptionError, ModelFormatError,
             OutputSetError, MissingFileError, MissingTreeError, MissingBranchError,
             ExpressionError, FileNotFoundError, IsADirectoryError, NotADirectoryError)
    scoring = sys.modules.get("hepbdt.scoring")  # imported when apply ran, else not needed
    if scoring is not None:
        usage += (scoring.ApplyOptionError,)
    if isinstance(exc, usage):
        return 2
    if isinstance(exc, InputError | TrainingError | OSError):
        return 1
    return None


def _message(exc: BaseException) -> str:
    """The one line (with the problem lines of a configuration) shown for a user error."""
    problems = getattr(exc, "problems", None)
    if problems and len(problems) > 1:
        return f"{len(problems)} problems in the configuration:\n  " + "\n  ".join(problems)
    if isinstance(exc, MemoryError):
        return "not enough memory for this configuration (try fewer events, features or folds)"
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    if problems:
        return str(exc)
    return " ".join(str(exc).split()) or type(exc).__name__  # one line, whatever the library wrote


def _train(args: argparse.Namespace, config_path: str | os.PathLike | None = None) -> int:
    # What the configuration or the training warns about (max_leaves beyond max_depth, few
    # events a decorrelation cell, ...) as 'hepbdt: note:' lines, as export and apply do.
    with warnings.catch_warnings():  # restores showwarning afterwards
        warnings.showwarning = _notes(warnings.showwarning, Warning)
        return _train_noted(args, config_path)


def _train_noted(args: argparse.Namespace, config_path: str | os.PathLike | None) -> int:
    # imported when the command runs, so that --help stays fast
    from hepbdt.analysis import check_inputs, default_output_dir, load_config, train
    from hepbdt.analysis.estimate import check_memory, estimate_lines
    from hepbdt.output_set import check_output_folder

    config = load_config(config_path or args.config, args.overrides,
                         output=getattr(args, "output", None))
    check_inputs(config)
    check_memory(config)  # too large for the stated memory: an error before any work
    if getattr(args, "check", False):
        check_output_folder(default_output_dir(config))  # as train checks it, nothing written
        task = (f"{config.task} of {len(config.classes)} classes: {', '.join(config.classes)}"
                if config.multiclass else config.task)
        print(f"{config.path}: OK ({len(config.samples)} samples, {len(config.features)} "
              f"features, {task}); outputs would go to {default_output_dir(config)}/")
        print(*estimate_lines(config), sep="\n")
        return 0
    result = train(config, progress=args.progress, echo=_echo(args.progress))
    try:
        print(result.summary, flush=True)
    except BrokenPipeError:
        raise
    except OSError as exc:  # a full disk under a job's stdout: the run itself succeeded
        print(f"hepbdt: warning: could not write the summary to standard output "
              f"({exc.strerror or exc}); the outputs are in place in {result.output_dir}/",
              file=sys.stderr)
    return 0


def _echo(progress: bool | None) -> Any:
    """Progress text to stderr when it is shown, else nowhere."""
    show = progress if progress is not None else sys.stderr.isatty()
    if not show:
        return None
    return lambda text: print(text, file=sys.stderr, flush=True)


def _demo(args: argparse.Namespace) -> int:
    if args.output is None:
        args.output = "hepbdt-demo"

    def note(text: str) -> None:
        print(f"hepbdt: note: {text}", file=sys.stderr, flush=True)

    return _train(args, demo_config_path(echo=note))


def _load(path: str) -> Any:
    """The model of a file, refused when its output set records another file."""
    # imported when the command runs, so that --help stays fast
    from hepbdt.output_set import check_model_files
    from hepbdt.persistence import load_model

    model = load_model(path)
    check_model_files(path)
    return model


def _apply(args: argparse.Namespace) -> int:
    # imported when the command runs, so that --help stays fast
    from hepbdt.scoring import FoldExpressionWarning, apply

    # The model goes as its path: apply checks it against its output set, refuses an output
    # that is one of its files and records its SHA-256 in every output. A k-fold model goes
    # whole: apply scores it by its folds' event expression unless --event gives another,
    # which it warns about (shown here as a note, when it happens), as any other warning.
    model = args.model
    with warnings.catch_warnings():  # restores showwarning and the filters afterwards
        warnings.simplefilter("always", FoldExpressionWarning)
        warnings.showwarning = _notes(warnings.showwarning, Warning)
        if args.scheduler:
            # the optional Dask extra, imported only when asked for a cluster
            from hepbdt.dask import apply as apply_on_cluster
            from hepbdt.dask import connect

            client = connect(args.scheduler)
            try:
                written = apply_on_cluster(
                    model, list(args.inputs), args.output, branch=args.branch, tree=args.tree,
                    event_branch=args.event, output_tree=args.output_tree,
                    inf_as_missing=args.inf_as_missing,
                    probability_branch=args.probability_branch, client=client)
            finally:
                # the client first, as the training does: closing the cluster under a
                # client still holding the tasks' results logged a scheduler WARNING per
                # worker ("caused the cluster to lose already computed task(s)")
                cluster = client.cluster if args.scheduler == "local" else None
                client.close()
                if cluster is not None:
                    cluster.close()
        else:
            written = apply(model, list(args.inputs), args.output, branch=args.branch,
                            tree=args.tree, event_branch=args.event,
                            output_tree=args.output_tree, inf_as_missing=args.inf_as_missing,
                            progress=args.progress, probability_branch=args.probability_branch)
    for path in written:
        print(f"wrote {path}")
    return 0


def _notes(show: Any, category: type[Warning]) -> Any:
    """``warnings.showwarning`` that prints warnings of ``category`` as ``hepbdt: note:``
    lines and passes the others to ``show``."""
    def show_or_note(message: Any, kind: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(kind, category):
            print(f"hepbdt: note: {message}", file=sys.stderr, flush=True)
        else:
            show(message, kind, *args, **kwargs)
    return show_or_note


def _export(args: argparse.Namespace) -> int:
    # imported when the command runs, so that --help stays fast
    from hepbdt._util import DeferredSignals, atomic_path
    from hepbdt.interop import to_cpp, to_onnx, to_tmva_xml
    from hepbdt.kfold import KFoldModel
    from hepbdt.output_set import hold_outputs

    targets = [(fmt, path) for fmt, path in (("onnx", args.onnx), ("cpp", args.cpp),
                                            ("tmva", args.tmva)) if path]
    if not targets:
        raise UserError("export: say what to write: --onnx FILE, --cpp FILE and/or --tmva FILE")
    if args.namespace and not args.cpp:
        raise UserError("export: --namespace is an option of --cpp")
    if args.missing and not args.tmva:  # it would change no file written
        raise UserError("export: --missing is an option of --tmva")
    model = _load(args.model)
    models = model.models if isinstance(model, KFoldModel) else [model]
    # the files written: a k-fold model's fold files (NAME_fold0.onnx, ...) are checked too
    outputs = [path if len(models) == 1 else _fold_path(path, i)
               for _, path in targets for i in range(len(models))]
    _check_outputs("export", outputs, [args.model])
    if len(models) > 1:
        for _, path in targets:
            _check_no_more_folds(path, len(models))
    writers = {
        "onnx": lambda m, path, where, fold: to_onnx(m, path),
        # the namespace (and include guard) from the file's own name, not its temporary's;
        # a k-fold model's headers each their own, so that one program can hold them all
        "cpp": lambda m, path, where, fold: to_cpp(m, path, namespace=_cpp_namespace(
            args.namespace, where, fold if len(models) > 1 else None),
            file_name=Path(where).name),
        "tmva": lambda m, path, where, fold: to_tmva_xml(m, path, missing=args.missing or "auto"),
    }
    done = []
    # Every file is written to its temporary first and renamed when all are written, so a
    # model one format cannot express leaves no other file behind; SIGINT and SIGTERM wait
    # for the renames to end (the stack's exits), so an interrupt leaves the old files or
    # the new ones. What a format warns about (NaN inputs the Reader answers -999 for, ...)
    # is a note line, not a source line.
    with contextlib.ExitStack() as stack:
        stack.enter_context(hold_outputs(outputs, "export"))
        held = stack.enter_context(DeferredSignals(done=", ".join(outputs)))
        stack.enter_context(warnings.catch_warnings())
        warnings.showwarning = _notes(warnings.showwarning, Warning)
        for fmt, path in targets:
            for i, fold_model in enumerate(models):
                where = path if len(models) == 1 else _fold_path(path, i)
                temporary = stack.enter_context(atomic_path(where))
                try:
                    info = writers[fmt](fold_model, temporary, where, i)
                except ValueError as exc:  # the format cannot express this model
                    raise UserError(f"{where}: {exc}") from None
                done.append(f"wrote {where} ({info['n_trees']} trees, {info['n_nodes']} nodes)")
        held.hold()
    print(*done, sep="\n")
    if isinstance(model, KFoldModel):
        print(f"k-fold model: file i scores the events with {model.by} % {model.k} == i")
    return 0


def _cpp_namespace(given: str | None, where: str, fold: int | None) -> str:
    """``--cpp``'s namespace: ``--namespace`` (with ``_fold<i>`` for a k-fold model's fold),
    else one from the name of the header written (a fold's ``_fold<i>`` kept)."""
    # imported when the command runs, so that --help stays fast
    from hepbdt.interop.cpp_export import namespace_for

    if fold is None:
        return namespace_for(given, where)  # checked, or from the name
    if given is not None:
        return f"{namespace_for(given, where)}_fold{fold}"
    # The derived namespace stops at the name's first dot, so model.v2_fold0.h gave
    # namespace model for every fold, one include guard: a program including all the
    # folds' headers scored every fold with fold 0's trees. The tag goes before that dot.
    tag = f"_fold{fold}"
    name = Path(where).name
    cut = name.rfind(tag)
    name = name[:cut] + name[cut + len(tag):]
    stem = name.split(".")[0]
    return namespace_for(None, stem + tag + name[len(stem):])


def _check_no_more_folds(path: str, k: int) -> None:
    """UserError when fold files of ``path`` numbered k or more lie beside it (an earlier
    export of more folds): with the new k files they would look like one set of k-fold
    models made of two trainings."""
    first = Path(_fold_path(path, 0))
    stem, suffix = first.name.split("_fold0", 1)
    pattern = re.compile(re.escape(stem) + r"_fold(\d+)" + re.escape(suffix))
    extra = sorted((int(m.group(1)), name) for name in os.listdir(first.parent)
                   if (m := pattern.fullmatch(name)) and int(m.group(1)) >= k)
    if extra:
        raise UserError(f"export: {first.parent / extra[0][1]} (fold {extra[0][0]}) lies beside "
                        f"the {k} fold files this {k}-fold model writes: with them it would "
                        "look like one set of more folds from two trainings; remove the old "
                        "fold files, or export into another folder")


def _fold_path(path: str, fold: int) -> str:
    """``model.onnx`` -> ``model_fold0.onnx`` (``.weights.xml`` kept whole)."""
    base = Path(path)
    suffix = ".weights.xml" if base.name.endswith(".weights.xml") else base.suffix
    stem = base.name[: len(base.name) - len(suffix)] if suffix else base.name
    return str(base.with_name(f"{stem}_fold{fold}{suffix}"))


def _inspect(args: argparse.Namespace) -> int:
    # imported when the command runs, so that --help stays fast
    from hepbdt.estimators import tree_unit
    from hepbdt.kfold import KFoldModel

    model = _load(args.model)
    if isinstance(model, KFoldModel):
        print(f"{args.model}: k-fold model, k = {model.k}, folds by {model.by!r} % {model.k}")
        for i, fold in enumerate(model.models):
            print(f"  fold {i}: {type(fold).__name__}, {fold.n_trees_} {tree_unit(fold)}, "
                  f"{fold.forest_.n_nodes} nodes")
        print()
        print(describe_model(model.models[0], args.tree, "fold 0: "))
    else:
        print(describe_model(model, args.tree, f"{args.model}: "))
    return 0


def describe_model(model: Any, trees: Sequence[int] = (), prefix: str = "") -> str:
    """Options, features, trees and ranking of a fitted estimator, as text."""
    # imported when the command runs, so that --help stays fast
    from hepbdt._sklearn import fitted_params, is_auto
    from hepbdt._util import feature_names_of, number_text, setting_text
    from hepbdt.estimators import growth_text
    from hepbdt.evaluation import TMVA_RANKING, tmva_importance
    from hepbdt.model import tree_text

    forest = model.forest_
    names = feature_names_of(model, forest.n_features)
    lines = [f"{prefix}{type(model).__name__}"]
    lines.append("Options:")
    for key, value in sorted(fitted_params(model).items()):
        lines.append(f"  {key:24} {value!r}")
    try:
        lines.append(f"TMVA options: {model.to_tmva()}")
    except ValueError as exc:
        lines.append(f"TMVA options: none ({exc})")
    lines.append(f"Features ({len(names)}):")
    definitions = getattr(model, "feature_definitions_", None) or {}
    lines += [f"  {i:3d}  {name}" + (f" = {definitions[name]}" if name in definitions else "")
              for i, name in enumerate(names)]
    if forest.n_classes > 1:
        rounds = forest.n_rounds
        lines.append(f"Classes ({forest.n_classes}): "
                     + ", ".join(f"{c} (trees {k * rounds}-{(k + 1) * rounds - 1}, base score "
                                 f"{float(b)!r})" for k, (c, b) in enumerate(
                                     zip(model.classes_, forest.extra["base_scores"], strict=True))))
        how = (f"{rounds} SAMME trees, each kept once a class with its votes"
               if forest.extra.get("algorithm") == "SAMME" else f"{rounds} rounds of one tree a class")
        lines.append(f"Trees: {forest.n_trees} ({how}), {forest.n_nodes} nodes, depth up to "
                     f"{forest.max_depth}")
    else:
        steps = forest.extra["uboost"]["step_trees"] if forest.aggregation == "uboost" else []
        lines.append(f"Trees: {forest.n_trees}"
                     + (f" (uBoost: {len(steps)} efficiency steps of {steps} trees)" if steps
                        else "")
                     + f", {forest.n_nodes} nodes, depth up to {forest.max_depth}, aggregation "
                     f"{forest.aggregation}, base score {float(forest.base_score)!r}")
    if getattr(model, "n_trees_reason_", None):
        lines.append(f"Tree count: {model.n_trees_reason_}")
    if hasattr(model, "max_leaves_") and any(map(is_auto, (model.max_depth, model.max_leaves,
                                                            model.learning_rate))):
        growth = growth_text({"max_depth": model.max_depth_, "max_leaves": model.max_leaves_})
        lines.append(f"Tree growth ('auto'): {growth}, learning rate "
                     f"{number_text(model.learning_rate_)}")
    mapping = forest.extra.get("decorrelation_map")
    if mapping is not None:
        feature = mapping.get("feature")
        source = (f"read from feature {names[feature]}" if feature is not None else
                  "not a feature: hepbdt apply refuses this model")
        lines.append(f"Score map: DDT, the {mapping.get('target', 'background')} score CDF in "
                     f"{len(mapping['centres'])} bins of the decorrelation variable ({source})")
    ranking = tmva_importance(model, names, quadrature=True)
    lines.append(f"Ranking ({TMVA_RANKING}):")
    top = max(float(ranking.importance.max()), 1e-300) if ranking.importance.size else 1.0
    # whole names, aligned up to 40 characters: two cut at 40 could read the same
    width = min(40, max((len(name) for name in names), default=0))
    for rank, i in enumerate(ranking.order(), start=1):
        bar = "#" * int(round(40 * ranking.importance[i] / top))
        lines.append(f"  {rank:3d}. {names[i]:{width}} "
                     f"{number_text(ranking.importance[i], fixed=True)} "
                     f"({int(ranking.split_count[i])} splits) {bar}")
    for t in trees:
        if not 0 <= t < forest.n_trees:
            raise UserError(f"--tree {t}: the model has trees 0..{forest.n_trees - 1}")
        lines.append(f"Tree {t} (weight {setting_text(forest.tree_weights[t])}):")
        lines += tree_text(forest, t, names)
    return "\n".join(lines)


def _check_outputs(command: str, outputs: list[str], inputs: list[str]) -> None:
    """UserError, before any work, for an output that is one of the inputs (a k-fold
    model's fold files too) or given twice; OutputSetError for one that cannot be written."""
    from hepbdt.output_set import check_writable, glob_escape  # with the command, as the rest

    read = {os.path.realpath(p) for p in inputs}
    for model in inputs[:1]:  # the model: its fold files are read too
        stem = Path(model).stem
        folds = Path(model).parent.glob(f"{glob_escape(stem)}_fold*.json")
        read |= {os.path.realpath(p) for p in folds}
    seen: set[str] = set()
    for out in outputs:
        real = os.path.realpath(out)
        if real in read:
            raise UserError(f"{command}: the output {out} is one of the inputs; write it to a "
                            "new file")
        if real in seen:
            raise UserError(f"{command}: {out} is given as two outputs; give each its own file")
        seen.add(real)
        if _is_root_file(out):  # an ntuple, whatever its name: never replaced by a model
            raise UserError(f"{command}: the output {out} exists and is a ROOT file, which "
                            f"{command} never replaces; give a new file name, or remove it "
                            "first")
        check_writable(out)


def _is_root_file(path: str) -> bool:
    """Whether ``path`` is a regular file that starts as every ROOT file does."""
    if not os.path.isfile(path):  # never opened: a FIFO would block
        return False
    try:
        with open(path, "rb") as file:
            return file.read(4) == b"root"
    except OSError:
        return False


def _report(args: argparse.Namespace) -> int:
    # imported when the command runs, so that --help stays fast
    from hepbdt.analysis import report_from_scores
    from hepbdt.output_set import hold_outputs

    for path, what in ((args.model, "the model file (model.json)"),
                       (args.scores, "the scores file (scores.root)")):
        if os.path.isdir(path):
            raise UserError(f"{path}: is a folder; give {what} in it")
        if not os.path.isfile(path):
            raise UserError(f"{path}: " + ("is not a regular file" if os.path.exists(path)
                                           else "no such file") + f"; give {what}")
    _check_outputs("report", [args.output], [args.model, args.scores])
    # the lock apply and export take: a second run writing the same file fails at once, and
    # the temporary a killed run left beside it goes (it stayed for good)
    with hold_outputs([args.output], "report"):
        try:
            path = report_from_scores(args.model, args.scores, args.output, title=args.title,
                                      min_background_events=args.min_background_events)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    print(f"wrote {path}")
    return 0


_COMMANDS = {"train": _train, "apply": _apply, "export": _export, "inspect": _inspect,
             "report": _report, "demo": _demo}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
