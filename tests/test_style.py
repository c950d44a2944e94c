"""The code style is enforced in CI: `ruff check` (lint rules in pyproject.toml) and
`ruff format --check` must pass on the whole tree."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("ruff")
    cmd = [exe] if exe else [sys.executable, "-m", "ruff"]
    return subprocess.run([*cmd, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [("check", "."), ("format", "--check", ".")])
def test_ruff(args):
    r = _ruff(*args)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
