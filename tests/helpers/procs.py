"""Probes of a running server process (Linux ``/proc``) and the load the fault tests and the
reliability benchmark share."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB (VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def abandoned_request(url: str, i: int, timeout: float = 0.5) -> None:
    """Ask ``url`` for many seconds of new clone curves (40 fresh shuffle events, distinct per
    ``i``) and give up after ``timeout`` seconds, as a client that went away."""
    evs = [
        {"mechanism": "shuffle", "n": 20_000 + 97 * i + 7 * j, "epsilon0": 1.0 + j / 100} for j in range(40)
    ]
    with contextlib.suppress(httpx.TimeoutException):
        httpx.post(url + "/v1/epsilon", json={"events": evs, "delta": 1e-8}, timeout=timeout)


_HOLD = """
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
c.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()
c.execute("ROLLBACK")
"""


@contextlib.contextmanager
def sqlite_write_lock_held(path: str | Path) -> Iterator[None]:
    """Another process holds the write lock of the SQLite file ``path`` for the ``with`` block."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
