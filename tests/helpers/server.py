"""Start a real ``privacy-accountant serve`` subprocess for tests over real HTTP.

    from tests.helpers.server import start_server

    with start_server({"DATABASE_URL": f"sqlite:///{tmp_path}/a.db"}) as srv:
        httpx.get(srv.url + "/health")

``start_server(env, port=None, workers=1, ...)`` picks a free loopback port (unless given),
starts the process with ``env`` added to the current environment, waits until ``GET /health``
answers 200 (or raises ``ServerStartError`` with the process's output), and returns a
:class:`ServerHandle`. ``handle.stop()`` sends SIGTERM (then SIGKILL after a grace period);
``handle.kill()`` is ``kill -9`` (crash tests); ``handle.restart()`` starts it again on the same
port with the same environment. The handle is a context manager and stops on exit. The server's
stdout/stderr go to ``handle.log_path`` (a temp file) so a busy server never blocks on a pipe.
The process imports the checkout this helper belongs to (its root and ``client/`` lead ``PYTHONPATH``), not
whichever checkout the ``privacy-accountant`` command was installed from.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

__all__ = ["ServerHandle", "ServerStartError", "free_port", "shared_server", "start_server"]


#: the checkout these helpers belong to: the servers they start import its packages
ROOT = Path(__file__).resolve().parents[2]


class ServerStartError(RuntimeError):
    pass


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _command() -> list[str]:
    exe = shutil.which("privacy-accountant")
    if exe:
        return [exe]
    return [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main())"]


class ServerHandle:
    def __init__(self, env: dict, port: int, host: str, workers: int, extra_args: list[str], timeout: float):
        self.env = dict(env)
        self.port = port
        self.host = host
        self.workers = workers
        self.extra_args = list(extra_args)
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        fd, name = tempfile.mkstemp(prefix=f"accountant-serve-{port}-", suffix=".log")
        os.close(fd)
        self.log_path = Path(name)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def start(self) -> ServerHandle:
        env = {**os.environ, **{k: str(v) for k, v in self.env.items()}}
        env.setdefault("PYTHONUNBUFFERED", "1")
        roots = [str(ROOT), str(ROOT / "client")]  # the service's packages and the SDK's
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [*roots, env.get("PYTHONPATH")]))
        cmd = [
            *_command(),
            "serve",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
            *self.extra_args,
        ]
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the process
        try:
            # own process group, so stop() reaches uvicorn's worker processes too
            self.proc = subprocess.Popen(
                cmd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerStartError(
                    f"serve exited with status {self.proc.returncode} before /health answered:\n{self.log_text()[-4000:]}"
                )
            try:
                r = httpx.get(self.url + "/health", timeout=1.0)
                if r.status_code == 200:
                    return
                last = f"status {r.status_code}"
            except httpx.HTTPError as exc:
                last = repr(exc)
            time.sleep(0.05)
        self.kill()
        raise ServerStartError(
            f"/health did not answer within {self.timeout} s ({last}):\n{self.log_text()[-4000:]}"
        )

    def _signal_group(self, sig: int) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)  # the group we created: this server and its workers only
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)

    def stop(self, grace: float = 10.0) -> int | None:
        """SIGTERM (graceful), then SIGKILL after ``grace`` seconds. Returns the exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self._signal_group(signal.SIGTERM)
        try:
            return self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self._signal_group(signal.SIGKILL)
            return self.proc.wait(5)

    def kill(self) -> int | None:
        """``kill -9`` the server (and its workers): a crash."""
        if self.proc is None:
            return None
        self._signal_group(signal.SIGKILL)
        try:
            return self.proc.wait(5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            return None

    def restart(self) -> ServerHandle:
        self.stop()
        return self.start()

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __del__(self):  # best effort: never leave a server behind
        try:
            if self.proc is not None and self.proc.poll() is None:
                self._signal_group(signal.SIGKILL)
        except Exception:
            pass


def start_server(
    env: dict | None = None,
    port: int | None = None,
    *,
    host: str = "127.0.0.1",
    workers: int = 1,
    extra_args: list[str] | None = None,
    timeout: float = 60.0,
) -> ServerHandle:
    """Start ``privacy-accountant serve`` with ``env`` (added to os.environ) and wait for /health.

    Give ``env["DATABASE_URL"]`` (e.g. a temp SQLite file) so tests never touch ./accountant.db.
    """
    env = dict(env or {})
    if "DATABASE_URL" not in env:
        d = tempfile.mkdtemp(prefix="accountant-test-")
        env["DATABASE_URL"] = f"sqlite:///{d}/accountant.db"
    for attempt in range(3):
        p = port if port is not None else free_port()
        handle = ServerHandle(env, p, host, workers, extra_args or [], timeout)
        try:
            return handle.start()
        except ServerStartError as exc:
            # another process may have taken the port between free_port() and bind: retry
            if port is not None or "address already in use" not in str(exc).lower() or attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


_SHARED: ServerHandle | None = None


def shared_server() -> ServerHandle:
    """One server per test process (temp SQLite database, no API keys set unless
    ``ACCOUNTANT_API_KEYS`` is in the environment), started on first use and stopped at exit.
    For tests that only read or compute; tests that need their own settings use start_server."""
    global _SHARED
    if _SHARED is None or _SHARED.proc is None or _SHARED.proc.poll() is not None:
        import atexit

        _SHARED = start_server({})
        atexit.register(_SHARED.stop)
    return _SHARED
