"""Small timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import platform
import statistics
import time
from pathlib import Path

import numpy as np


def timeit(fn, repeat: int = 30, warmup: int = 2) -> dict:
    """Median/min/p90 wall time of fn() in milliseconds."""
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return {
        "median_ms": statistics.median(ts),
        "min_ms": min(ts),
        "p90_ms": float(np.percentile(ts, 90)),
        "n": repeat,
    }


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"


def write_results(name: str, title: str, lines: list[str]) -> Path:
    path = Path(__file__).with_name(name)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    path.write_text(f"# {title}\n\nMeasured {stamp} on {machine()}.\n\n" + "\n".join(lines) + "\n")
    return path


def section(text: str, heading: str) -> str | None:
    """The ``## heading`` section of a markdown ``text`` (up to the next ``## `` heading), or None."""
    import re

    m = re.search(rf"^## {re.escape(heading)}\n.*?(?=^## |\Z)", text, re.M | re.S)
    return m.group(0) if m else None


def replace_section(text: str, heading: str, new: str) -> str:
    """``text`` with its ``## heading`` section replaced by ``new`` (appended if it has none)."""
    old = section(text, heading)
    if old is None:
        return text.rstrip("\n") + "\n\n" + new
    return text.replace(old, new if new.endswith("\n\n") or text.endswith(old) else new + "\n", 1)
