"""A private, throw-away PostgreSQL server for fault tests (freeze it, stop it, start it again)
without touching any server someone else uses.

    with private_postgres() as pg:        # initdb into a temp dir, listen on a free loopback port
        url = pg.url                      # postgresql+psycopg://accountant:accountant@127.0.0.1:<port>/accountant
        pg.freeze()                       # SIGSTOP the postmaster and every backend (a hung server)
        pg.thaw()                         # SIGCONT
        pg.stop(); pg.start()             # pg_ctl stop -m fast / start

Needs PostgreSQL's server binaries (``initdb``, ``pg_ctl``; found on PATH or under
``/usr/lib/postgresql/*/bin``); :func:`available` says whether they are there. Run as root, the
cluster is created and run as the ``postgres`` user (PostgreSQL refuses to run as root). Every
process signalled is one this helper started (the postmaster whose pid it recorded, and that
postmaster's children).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from .server import free_port

__all__ = ["PrivatePostgres", "available", "private_postgres"]


def _bindir() -> Path | None:
    exe = shutil.which("pg_ctl")
    if exe:
        return Path(os.path.realpath(exe)).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


def available() -> bool:
    b = _bindir()
    if b is None or not (b / "initdb").exists():
        return False
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return False
    return True


class PrivatePostgres:
    def __init__(self, fsync: bool = False) -> None:
        self.fsync = fsync
        bindir = _bindir()
        if bindir is None:
            raise RuntimeError("PostgreSQL server binaries not found")
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="accountant-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
        self.url = f"postgresql+psycopg://accountant:accountant@127.0.0.1:{self.port}/accountant"

    # -------------------------------------------------------------------------------- commands
    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, timeout=timeout, check=False, cwd=self.root)

    def _psql(self, sql: str, db: str = "postgres") -> None:
        r = self._run(
            "psql", "-h", str(self.root), "-p", str(self.port), "-U", "postgres", "-d", db, "-qtAc", sql
        )
        if r.returncode != 0:
            raise RuntimeError(f"psql failed: {r.stderr.decode(errors='replace')}")

    def init(self) -> PrivatePostgres:
        r = self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"
        )
        if r.returncode != 0:
            raise RuntimeError(f"initdb failed: {r.stderr.decode(errors='replace')}")
        conf = (
            f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{self.root}'\n"
            f"fsync = {'on' if self.fsync else 'off'}\nmax_connections = 60\nshared_buffers = 16MB\n"
        )
        with open(self.data / "postgresql.conf", "a") as f:
            f.write(conf)
        self.start()
        self._psql("CREATE ROLE accountant LOGIN PASSWORD 'accountant'")
        self._psql("CREATE DATABASE accountant OWNER accountant")
        return self

    def start(self) -> None:
        r = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60", "start")
        if r.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed: {r.stderr.decode(errors='replace')}\n{self.log()}")

    def stop(self, mode: str = "fast") -> None:
        self.thaw()
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def log(self) -> str:
        try:
            return (self.root / "log").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    # -------------------------------------------------------------------------------- signals
    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def pids(self) -> list[int]:
        """The postmaster and its children (the backends and auxiliary processes it started)."""
        pm = self.postmaster_pid()
        if pm is None:
            return []
        out = [pm]
        for stat in glob.glob("/proc/[0-9]*/stat"):
            try:
                fields = Path(stat).read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pm:
                out.append(int(stat.split("/")[2]))
        return out

    def _signal(self, sig: int) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def freeze(self) -> None:
        """Stop every process of this server (SIGSTOP): connections stay open, nothing answers."""
        self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        finally:
            pm = self.postmaster_pid()
            if pm is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pm, signal.SIGKILL)
            time.sleep(0.1)
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PrivatePostgres:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()


def private_postgres(fsync: bool = False) -> PrivatePostgres:
    """A new initialised and started private server (use as a context manager); ``fsync`` off by
    default (tests need no durability against power loss; benchmarks turn it on)."""
    pg = PrivatePostgres(fsync)
    try:
        return pg.init()
    except BaseException:
        pg.destroy()
        raise
