"""The mechanisms package stays safe to change: ``mypy --strict`` covers every module of it (none is
exempted by an ``ignore_errors`` override), ruff lints it with no per-file exemption, and no function
in it has a cyclomatic complexity above 10 (radon's rank B at most; ruff's C90 caps the whole tree
at 15)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "mechanisms"
MAX_COMPLEXITY = 10


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_package_has_modules():
    assert len(_modules()) >= 10


def test_mypy_checks_every_module():
    files = [ROOT / entry for entry in _pyproject()["tool"]["mypy"]["files"]]
    unchecked = [
        str(path.relative_to(ROOT))
        for path in _modules()
        if not any(path == entry or entry in path.parents for entry in files)
    ]
    assert not unchecked, f"[tool.mypy] files does not cover {unchecked}"


def test_no_module_is_exempt_from_mypy():
    overrides = _pyproject()["tool"]["mypy"].get("overrides", [])
    exempt = [
        module
        for override in overrides
        if override.get("ignore_errors")
        for module in (override["module"] if isinstance(override["module"], list) else [override["module"]])
        if module == "mechanisms" or module.startswith("mechanisms.")
    ]
    assert not exempt, f"mypy ignores errors in {exempt}"


def test_no_module_is_exempt_from_ruff():
    ignores = _pyproject()["tool"]["ruff"]["lint"].get("per-file-ignores", {})
    exempt = [pattern for pattern in ignores if pattern.startswith("mechanisms")]
    assert not exempt, f"ruff per-file-ignores exempt {exempt}"


def test_no_function_is_too_complex():
    visitors = pytest.importorskip("radon.visitors")
    too_complex = [
        f"{path.relative_to(ROOT)}:{block.lineno} {block.name} ({block.complexity})"
        for path in _modules()
        for block in visitors.ComplexityVisitor.from_code(path.read_text(encoding="utf-8")).blocks
        if block.complexity > MAX_COMPLEXITY
    ]
    assert not too_complex, f"cyclomatic complexity above {MAX_COMPLEXITY}: {too_complex}"
