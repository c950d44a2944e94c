"""Static typing is enforced in CI: one configuration, ``mypy --strict`` over every package (the
``[tool.mypy]`` table of pyproject.toml: ``accountant/``, ``mechanisms/``, the service ``app/`` and
the SDK ``client/privacy_accountant/``), with no per-module relaxation; an override may only say how
a third-party library without types is read."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PACKAGES = {"accountant", "mechanisms", "app", "client/privacy_accountant"}


def _mypy_config() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def test_config_is_strict_over_every_package():
    config = _mypy_config()
    assert config["strict"] is True
    assert set(config["files"]) == PACKAGES
    for entry in config["files"]:
        assert (ROOT / entry).is_dir(), f"[tool.mypy] files lists {entry}, which does not exist"
    assert "exclude" not in config, "nothing of the four packages is left out"


def test_no_module_of_ours_is_relaxed():
    for override in _mypy_config().get("overrides", []):
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        ours = [
            m for m in modules if m.split(".")[0] in ("accountant", "mechanisms", "app", "privacy_accountant")
        ]
        assert not ours, f"per-module relaxation of {ours}: annotate them instead"
        # a third-party library: only how its missing types are found may be set
        assert set(override) - {"module"} <= {"follow_untyped_imports", "ignore_missing_imports"}, modules


@pytest.mark.slow
def test_mypy_strict():
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
