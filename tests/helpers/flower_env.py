"""A Python that has Flower, for the end-to-end Flower tests.

Flower 1.42 pins older FastAPI/Starlette/uvicorn than the service (client/constraints-flower.txt),
so it cannot join the test environment (the ``[test]`` extra). A training project installs only the
client with it; so do these tests: :func:`flower_python` returns this interpreter when it already
has ``flwr``, else a venv built once per version of the pins under the user's cache directory with
``pip install -c client/constraints-flower.txt './client[flower]' scikit-learn`` (≈ 500 MB, a minute
the first time; PyPI needed, as for tests/app/test_distributions.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PINS = ROOT / "client" / "constraints-flower.txt"


def _sklearn_pin() -> str:
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.startswith("scikit-learn=="):
            return line.strip()
    return "scikit-learn"


def flower_python() -> str:
    """Path of a Python interpreter with flwr[simulation] and this checkout's client installed."""
    if importlib.util.find_spec("flwr") is not None:
        return sys.executable
    digest = hashlib.sha256(PINS.read_bytes() + _sklearn_pin().encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "privacy-accountant-tests"
    venv = cache / f"flower-{digest}"
    python = venv / "bin" / "python"
    if (venv / "ready").exists():
        return str(python)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    install = [str(python), "-m", "pip", "install", "-q", "-c", str(PINS)]
    subprocess.run(install + [f"{ROOT / 'client'}[flower]", _sklearn_pin()], check=True, timeout=900)
    (venv / "ready").write_text("ok\n")
    return str(python)
