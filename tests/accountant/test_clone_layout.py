"""The shape of the accountant's import graph: no cycle anywhere in ``accountant/``, counting every
import — at module level, inside functions and under ``if TYPE_CHECKING:`` (import-linter, in
tests/test_layers.py, ignores the last) — and the clone engine's stages importing only the stages
above them (accountant/clones/__init__.py lists them), so that a reader can follow them one at a
time from :mod:`accountant.clones.reference` to the compiled kernels."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "accountant"

#: The clone engine's stages, first to last: a module of a stage imports only its own stage and
#: earlier ones (the package's ``__init__`` is the public entry and may import every stage).
STAGES = (
    ("types", "reference"),
    ("closed_form",),
    ("compiled",),
    ("grid",),
    ("exact", "histogram"),
    ("routing",),
)


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.ImportFrom, here: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules of ``modules`` one ``from … import …`` statement imports (a name that is a
    submodule counts as that submodule, any other name as the module it is taken from)."""
    if node.level:
        base = here.split(".") if is_package else here.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    out = set()
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        if sub in modules:
            out.add(sub)
        elif source in modules:
            out.add(source)
    return out


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module → the modules of the package it imports, by every import statement in its source."""
    paths = {_module_name(p, package.parent): p for p in package.rglob("*.py")}
    modules = set(paths)
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                edges |= _targets(node, name, path.name == "__init__.py", modules)
            elif isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in modules}
        graph[name] = edges - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_the_accountant_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_type_only_cycle(tmp_path):
    pkg = tmp_path / "accountant"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n")
    (pkg / "c.py").write_text("def f():\n    from .a import x\n")
    (pkg / "d.py").write_text("from .a import x\n")
    assert cycles(import_graph(pkg)) == [["accountant.a", "accountant.b", "accountant.c"]]


def _stage(module: str) -> int | None:
    rest = module.removeprefix("accountant.clones.")
    if rest == module:
        return None
    top = rest.split(".")[0]
    for i, names in enumerate(STAGES):
        if top in names:
            return i
    raise AssertionError(f"{module} is in no stage of STAGES")


def test_each_clone_stage_imports_only_earlier_stages():
    graph = import_graph()
    wrong = []
    for module, targets in graph.items():
        here = _stage(module)
        if here is None:
            continue
        for target in targets:
            there = _stage(target)
            if target == "accountant.clones" or (there is not None and there > here):
                wrong.append((module, target))
            elif there == here and module.split(".")[2] != target.split(".")[2]:
                wrong.append((module, target))  # two engines of one stage are independent
    assert wrong == []


@pytest.mark.parametrize(
    "package", ["accountant", "mechanisms", "app", "client/privacy_accountant", "figures"]
)
def test_no_package_has_an_import_cycle(package):
    """The whole product's graph (issue 27: no cycle, type-only imports and imports inside functions
    included) — app.db.faults ↔ limits and the SDK's version import were the last ones."""
    assert cycles(import_graph(ROOT / package)) == []
