"""The package's layering: no import cycle, each room imports only the rooms below it.

Imports are read with ``ast`` from every module, at module level and inside functions,
so a cycle cannot hide behind a function-local import. Package ``__init__`` files only
re-export (eagerly or lazily) and are left out as importers. docs/design-notes.md draws
the same layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hepbdt"

# Lowest first: a module may import modules of its own rank or below, never above.
LAYERS = [
    ["hepbdt._version", "hepbdt._lazy"],
    ["hepbdt.engine"],
    ["hepbdt._util", "hepbdt._sklearn", "hepbdt.binned"],
    ["hepbdt.kfold", "hepbdt.model", "hepbdt.tmva_options", "hepbdt.demo_data", "hepbdt.output_set"],
    ["hepbdt.boosting", "hepbdt.interop.tmva_export", "hepbdt.interop.onnx_export",
     "hepbdt.interop.cpp_export"],
    ["hepbdt.estimators"],
    ["hepbdt.persistence", "hepbdt.interop"],  # the interop exporters sit lower
    ["hepbdt.io"],
    ["hepbdt.scoring", "hepbdt.evaluation"],
    ["hepbdt.dask"],  # the optional Dask extra: estimators and apply on a cluster
    ["hepbdt.plotting"],
    ["hepbdt.report"],
    ["hepbdt.analysis"],
    ["hepbdt.cli"],
    ["hepbdt.__main__"],  # python -m hepbdt
    ["hepbdt.config", "hepbdt.workflow"],  # deprecated aliases, resolved lazily
]


def _modules() -> dict[str, tuple[Path, bool]]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        modules[".".join(parts)] = (path, is_package)
    return modules


MODULES = _modules()


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The hepbdt modules an import statement names (``from a import b`` names a.b when
    b is a module, else a)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix
                 for a in node.names]
    return [n for n in names if n in MODULES]


def _imports() -> dict[str, list[tuple[str, ast.stmt, bool]]]:
    """module -> [(imported module, the statement, whether it is inside a function)]."""
    found: dict[str, list[tuple[str, ast.stmt, bool]]] = {}
    for module, (path, is_package) in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        top_level = {id(node) for node in tree.body}
        found[module] = [(target, node, id(node) not in top_level)
                         for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
                         for target in _targets(module, is_package, node) if target != module]
    return found


IMPORTS = _imports()


def _graph() -> dict[str, set[str]]:
    return {module: {target for target, _, _ in edges}
            for module, edges in IMPORTS.items() if not MODULES[module][1]}


def _rank(module: str) -> int:
    if module == "hepbdt":  # the package's face: lazy re-exports of every layer
        return len(LAYERS)
    for rank, rooms in enumerate(LAYERS):
        if any(module == room or module.startswith(room + ".") for room in rooms):
            return rank
    raise AssertionError(f"{module} is in no layer of LAYERS; add it where it belongs")


def test_the_import_graph_has_no_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycle = [*path[path.index(target):], target] if target in path else [module, target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        _rank(module)


def test_imports_go_down_the_layers() -> None:
    upward = [f"{module} (layer {_rank(module)}) imports {target} (layer {_rank(target)})"
              for module, targets in _graph().items() for target in targets
              if _rank(target) > _rank(module)]
    assert not upward, "\n".join(upward)


def _import_runs(tree: ast.AST) -> dict[int, tuple[int, int]]:
    """For each import statement (by its line), the lines of the run of consecutive imports it is
    in: a comment on the line before the run, or on any of its lines, covers the run."""
    runs: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                _collect_runs(body, runs)
    return runs


def _collect_runs(body: list[ast.stmt], runs: dict[int, tuple[int, int]]) -> None:
    run: list[ast.stmt] = []
    for stmt in [*body, None]:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            run.append(stmt)
            continue
        for member in run:
            runs[member.lineno] = (run[0].lineno - 1, run[-1].end_lineno or run[-1].lineno)
        run = []


def test_function_local_imports_say_why() -> None:
    """An import inside a function is there for import time only, and a comment says so."""
    silent = []
    for module, edges in IMPORTS.items():
        text = MODULES[module][0].read_text()
        lines = text.splitlines()
        runs = _import_runs(ast.parse(text))
        for target, node, local in edges:
            if not local:
                continue
            first, last = runs[node.lineno]
            if not any("#" in lines[i] for i in range(max(0, first - 1), last)):
                silent.append(f"{module}:{node.lineno} imports {target} inside a function "
                              "without a comment saying why")
    assert not silent, "\n".join(silent)


def test_the_layer_table_is_in_the_design_notes() -> None:
    notes = (PACKAGE.parent / "docs" / "design-notes.md").read_text()
    for rooms in LAYERS:
        for room in rooms:
            name = room.removeprefix("hepbdt.")
            assert f"`{name}`" in notes, f"docs/design-notes.md does not place `{name}`"
