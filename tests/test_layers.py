"""The layers of docs/architecture.md are enforced in CI: `lint-imports` checks the import-linter
contracts of pyproject.toml (``[tool.importlinter]``): ``app`` above ``mechanisms`` above
``accountant`` (never the other way, not even indirectly), the SDK ``privacy_accountant`` importing
none of them, the figure reproduction ``figures`` on top of ``accountant`` alone, and no import
cycles inside ``accountant/``, ``mechanisms/``, ``figures/`` or the service."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _contracts() -> list[dict]:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["importlinter"]["contracts"]


def test_the_contracts_name_the_layers():
    contracts = {c["type"]: c for c in _contracts()}
    assert contracts["layers"]["layers"] == ["app", "mechanisms", "accountant"]
    forbidden = {
        frozenset(c["source_modules"]): set(c["forbidden_modules"])
        for c in _contracts()
        if c["type"] == "forbidden"
    }
    assert forbidden[frozenset({"privacy_accountant"})] == {"app", "mechanisms", "accountant"}
    # the figure reproduction uses the accountant only, and nothing of the product uses it
    assert forbidden[frozenset({"figures"})] == {"app", "mechanisms"}
    assert forbidden[frozenset({"app", "mechanisms", "accountant", "privacy_accountant"})] == {"figures"}
    acyclic = {a for c in _contracts() if c["type"] == "acyclic_siblings" for a in c["ancestors"]}
    assert {"accountant", "mechanisms", "app", "figures"} <= acyclic


def test_lint_imports():
    exe = shutil.which("lint-imports")
    if exe is None:  # installed into this interpreter but not on PATH
        exe_dir = Path(sys.executable).parent
        exe = str(exe_dir / "lint-imports")
    r = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout
