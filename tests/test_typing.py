"""Static typing is enforced in CI: ``mypy --strict`` must pass on the modules listed under
``[tool.mypy] files`` in pyproject.toml (the typed part of ``accountant/`` and ``mechanisms/``), and
plain ``mypy`` (its default, non-strict checks: the ``app.*``/``privacy_accountant.*`` override of
pyproject.toml) on the service ``app/`` and the SDK ``client/privacy_accountant/``."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _mypy_config() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def test_config_is_strict_and_names_its_modules():
    config = _mypy_config()
    assert config["strict"] is True
    assert config["files"], "[tool.mypy] files must list the modules checked"
    for entry in config["files"]:
        assert (ROOT / entry).exists(), f"[tool.mypy] files lists {entry}, which does not exist"


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


def test_service_config_is_checked_not_ignored():
    """The service's override turns strictness off; it must not silence mypy (``ignore_errors``)."""
    overrides = [o for o in _mypy_config().get("overrides", []) if "app.*" in o["module"]]
    assert len(overrides) == 1
    assert "privacy_accountant.*" in overrides[0]["module"]
    assert not overrides[0].get("ignore_errors", False)


@pytest.mark.slow
def test_mypy_service_and_sdk():
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "app", "client/privacy_accountant"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
