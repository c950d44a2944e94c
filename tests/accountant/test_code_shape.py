"""Size and complexity limits of the accountant: no module over 600 lines, no function over
cyclomatic complexity 15 (radon), no import of the clone engines' package from the kernels it
is built on (no cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

radon_complexity = pytest.importorskip("radon.complexity")

ROOT = Path(__file__).resolve().parents[2] / "accountant"
CHECKED = sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_size_and_complexity(path):
    text = path.read_text()
    assert len(text.splitlines()) <= 600
    worst = [(b.name, b.complexity) for b in radon_complexity.cc_visit(text) if b.complexity > 15]
    assert not worst, worst


@pytest.mark.parametrize("name", ["_numerics.py", "_binomial.py"])
def test_shared_kernels_do_not_import_the_engines(name):
    tree = ast.parse((ROOT / name).read_text())
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not any("clones" in m for m in mods)
