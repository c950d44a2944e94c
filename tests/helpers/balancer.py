"""A real haproxy (Debian's package) in front of ``serve`` replicas, for tests and benchmarks.

    with start_balancer([srv1.port, srv2.port, srv3.port]) as lb:
        lb.url                                   # http://127.0.0.1:<port>: the API, balanced
        lb.stats()                               # per replica: status (UP/DOWN/…), sessions, errors
        lb.wait_status({"r2": "DOWN"}, 10)       # until haproxy's health checks say so

The configuration is the shipped ``deploy/haproxy.cfg`` (the one ``compose.yaml`` runs) with only
its addresses changed (:func:`config`): the ``resolvers`` section (Docker's DNS) goes, the
``bind`` lines listen on free loopback ports, and the ``server-template`` line becomes one
``server rN 127.0.0.1:<port>`` line per replica. haproxy runs in the foreground (``-db``) in its
own process group; its log goes to ``handle.log_path``. :func:`haproxy` says whether the binary is
there (``.ci/install-haproxy.sh`` installs it).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from .server import ROOT, free_port

__all__ = ["CONFIG", "Balancer", "config", "haproxy", "start_balancer"]

#: the shipped configuration
CONFIG = ROOT / "deploy" / "haproxy.cfg"


def haproxy() -> str | None:
    """The haproxy binary (on PATH, or Debian's /usr/sbin/haproxy), or None."""
    exe = shutil.which("haproxy")
    if exe:
        return exe
    return "/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None


def config(replica_ports: list[int], port: int, stats_port: int, text: str | None = None) -> str:
    """``deploy/haproxy.cfg`` with loopback addresses: the API on ``port``, the stats page on
    ``stats_port``, replicas ``r1``, ``r2``, … on ``replica_ports``."""
    text = CONFIG.read_text() if text is None else text
    out: list[str] = []
    done: set[str] = set()
    in_resolvers = False
    for line in text.splitlines():
        s = line.strip()
        if line[:1] not in ("", " ", "\t", "#"):  # a section starts
            in_resolvers = s.startswith("resolvers ")
        if in_resolvers:
            done.add("resolvers")
            continue
        if s.startswith("bind :8000"):
            out.append(f"    bind 127.0.0.1:{port}")
            done.add("api")
        elif s.startswith("bind :8404"):
            out.append(f"    bind 127.0.0.1:{stats_port}")
            done.add("stats")
        elif s.startswith("server-template "):
            out += [f"    server r{i} 127.0.0.1:{p}" for i, p in enumerate(replica_ports, 1)]
            done.add("servers")
        else:
            out.append(line)
    missing = {"resolvers", "api", "stats", "servers"} - done
    if missing:
        raise ValueError(f"{CONFIG} no longer has the lines the tests replace: {sorted(missing)}")
    return "\n".join(out) + "\n"


def check_config(path: Path) -> None:
    """``haproxy -c``: raise with haproxy's own message unless ``path`` is a valid configuration."""
    exe = haproxy()
    assert exe is not None, "haproxy not found"
    r = subprocess.run([exe, "-c", "-f", str(path)], capture_output=True, timeout=30, check=False)
    if r.returncode != 0:
        raise ValueError(f"haproxy -c {path}: {(r.stdout + r.stderr).decode(errors='replace')}")


class Balancer:
    def __init__(self, replica_ports: list[int], timeout: float = 20.0) -> None:
        self.replica_ports = list(replica_ports)
        self.port = free_port()
        self.stats_port = free_port()
        self.timeout = timeout
        self.root = Path(tempfile.mkdtemp(prefix="accountant-haproxy-"))
        self.cfg_path = self.root / "haproxy.cfg"
        self.cfg_path.write_text(config(self.replica_ports, self.port, self.stats_port))
        self.log_path = self.root / "haproxy.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def stats_url(self) -> str:
        return f"http://127.0.0.1:{self.stats_port}/stats"

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def start(self) -> Balancer:
        exe = haproxy()
        if exe is None:
            raise RuntimeError("haproxy not found (bash .ci/install-haproxy.sh installs Debian's)")
        check_config(self.cfg_path)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [exe, "-db", "-f", str(self.cfg_path)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            self.wait_status({f"r{i}": "UP" for i in range(1, len(self.replica_ports) + 1)}, self.timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stats(self) -> dict[str, dict[str, str]]:
        """haproxy's statistics of each replica (``r1``, …): ``status``, ``scur`` (sessions now),
        ``stot``, ``econ``/``eresp`` (connection/response errors), ``wretr``/``wredis`` (retries,
        redispatches), ``hrsp_5xx``, ``chkfail``, …"""
        r = httpx.get(self.stats_url + ";csv", timeout=5)
        r.raise_for_status()
        rows = csv.DictReader(io.StringIO(r.text.lstrip("# ")))
        return {
            row["svname"]: row
            for row in rows
            if row["pxname"] == "replicas" and row["svname"].startswith("r")
        }

    def wait_status(self, want: dict[str, str], seconds: float) -> None:
        """Until each named replica has the given status (``UP``, ``DOWN``) by haproxy's checks."""
        deadline = time.monotonic() + seconds
        seen: dict[str, str] = {}
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(
                    f"haproxy exited with status {self.proc.returncode}:\n{self.log_text()[-3000:]}"
                )
            with contextlib.suppress(httpx.HTTPError):
                seen = {k: v["status"] for k, v in self.stats().items()}
                if all(seen.get(k, "").startswith(v) for k, v in want.items()):
                    return
            time.sleep(0.1)
        raise AssertionError(f"haproxy: wanted {want} within {seconds} s, last seen {seen}")

    def stop(self) -> None:
        """SIGTERM (haproxy stops at once), SIGKILL if it has not within 5 s; the temp files go."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Balancer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_balancer(replica_ports: list[int], timeout: float = 20.0) -> Balancer:
    """haproxy in front of ``replica_ports`` (loopback), started and with every replica UP."""
    return Balancer(replica_ports, timeout).start()
