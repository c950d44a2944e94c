"""Engines and sessions for the ledger: concurrency settings, time limits, and database faults as
fast, explicit errors.

SQLite (default, ``sqlite:///./accountant.db``):
  * WAL journal (readers never wait for the writer), ``synchronous=FULL`` (a committed charge
    survives a process kill and a power cut), foreign keys on;
  * pysqlite's own implicit transaction handling is switched off and the ``begin`` event emits
    the BEGIN itself: ``BEGIN IMMEDIATE`` for write units (the database write lock is taken
    before the first read, so no two writers can interleave read-check-write), plain ``BEGIN``
    for read units;
  * the busy timeout is the operation time limit: SQLite's busy handler sleeps and polls, so
    writers of one process never meet there — they queue on the in-process FIFO below instead.

PostgreSQL (``postgresql+psycopg://...``): READ COMMITTED; write units take row locks with
``SELECT … FOR UPDATE`` / ``FOR SHARE`` in a fixed order (see :mod:`app.ledger.locking`), and a
unit that hits a deadlock, a serialization failure or a lost optimistic check is retried whole.
``connect_timeout``, ``statement_timeout`` and ``lock_timeout`` are the operation time limit; a
server that stops answering altogether (a frozen process keeps the TCP connection open, so no
server-side timeout fires) is cut off by the client-side watchdog, which shuts the connection's
socket down when an operation outlives its deadline.

Every operation (:meth:`Database.read`, :meth:`Database.write`, :meth:`Database.run_write`) has a
deadline of ``DbOptions.timeout`` seconds, waiting included:

* write units of one process queue on one FIFO (:class:`FifoGate`) before they take a
  connection, so they reach the database in arrival order — on SQLite one at a time, with no
  busy-handler sleeps; on PostgreSQL at most ``write_lanes`` at once (few deadlocks, few
  retries);
* at most ``DbOptions.concurrency`` operations use the database at once; at most
  ``DbOptions.queue`` wait;
* a database that is unreachable, frozen, locked by another process beyond the deadline, or
  read-only raises :class:`DatabaseUnavailable` (the service answers ``503`` with
  ``Retry-After``), never a hang and never an internal error. ``in_commit`` says whether the
  failure happened while the commit was on its way (then the outcome is unknown: retrying with
  the same idempotency key is safe, a key is charged at most once).
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import math
import os
import random
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

T = TypeVar("T")

RETRYABLE_PG_CODES = {"40001", "40P01", "55P03"}  # serialization failure, deadlock, lock not available
READ_ONLY_PG_CODES = {"25006"}  # read_only_sql_transaction
TIMEOUT_PG_CODES = {"57014"}  # query_canceled (statement_timeout)


class RetryTransaction(Exception):
    """Raised inside a write unit when an optimistic check failed: roll back and run it again."""


class DatabaseUnavailable(Exception):
    """The database cannot serve this operation now (``cause``: timeout, locked, read_only,
    connection, busy). Nothing was recorded — unless ``in_commit``, when the commit was sent and
    its outcome is unknown."""

    def __init__(self, cause: str, reason: str, in_commit: bool = False, retry_after: int = 2):
        self.cause = cause
        self.reason = reason
        self.in_commit = in_commit
        self.retry_after = retry_after
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        if self.cause == "read_only":
            return (
                f"the database is read-only ({self.reason}): nothing was recorded; reads keep working. "
                "Retry once the operator has made it writable again"
            )
        outcome = (
            "the commit was sent but not confirmed, so the outcome is unknown: retry with the same "
            "idempotency key (a key is charged at most once)"
            if self.in_commit
            else "nothing was recorded; retry (with the same idempotency key, for a charge)"
        )
        return f"the database is unavailable ({self.reason}); {outcome}"


@dataclass(frozen=True)
class DbOptions:
    """Time limit (seconds) of one operation, waiting included; operations at once; operations
    that may wait; write units at once on PostgreSQL (SQLite: always one)."""

    timeout: float = 5.0
    concurrency: int = 16
    queue: int = 256
    write_lanes: int = 4

    @classmethod
    def from_settings(cls, settings: Any) -> DbOptions:
        return cls(settings.db_timeout, settings.db_concurrency, settings.db_queue, settings.db_write_lanes)


def normalize_url(url: str) -> str:
    """Accept ``postgresql://`` and ``postgres://`` as PostgreSQL via psycopg 3."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


# ---------------------------------------------------------------------------------------------- gates
class FifoGate:
    """At most ``width`` holders, the rest served in arrival order; at most ``max_waiting`` wait.
    ``acquire`` returns False when ``timeout`` passes first, and raises :class:`DatabaseUnavailable`
    (busy) when the queue is full."""

    def __init__(self, width: int, max_waiting: int):
        self.width = max(1, int(width))
        self.max_waiting = int(max_waiting)
        self._lock = threading.Lock()
        self._held = 0
        self._waiters: deque[threading.Event] = deque()

    def acquire(self, timeout: float) -> bool:
        with self._lock:
            if self._held < self.width and not self._waiters:
                self._held += 1
                return True
            if len(self._waiters) >= self.max_waiting:
                raise DatabaseUnavailable("busy", "too many database operations are waiting", retry_after=1)
            ev = threading.Event()
            self._waiters.append(ev)
        if ev.wait(max(0.0, timeout)):
            return True
        with self._lock:
            if ev.is_set():  # handed over just as the wait ended
                return True
            self._waiters.remove(ev)
            return False

    def release(self) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().set()  # handed over: still held
            else:
                self._held -= 1

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def held(self) -> int:
        return self._held


# ---------------------------------------------------------------------------------------------- watchdog
@dataclass
class _Op:
    """One operation of one thread: its deadline, and the sockets of the connections it holds."""

    deadline: float
    fds: set[int] = field(default_factory=set)
    expired: bool = False
    done: bool = False
    in_commit: bool = False
    depth: int = 0


class _Watchdog:
    """Shuts down the sockets of operations that outlive their deadline (PostgreSQL: a frozen
    server keeps the connection open and answers nothing; the blocked read then fails at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._heap: list[tuple[float, int, _Op]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, op: _Op) -> None:
        with self._cond:
            heapq.heappush(self._heap, (op.deadline, next(self._seq), op))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="db-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()

    def add_fd(self, op: _Op, fd: int) -> None:
        with self._lock:
            if not op.done:
                op.fds.add(fd)

    def remove_fd(self, op: _Op, fd: int) -> None:
        with self._lock:
            op.fds.discard(fd)

    def finish(self, op: _Op) -> None:
        with self._lock:
            op.done = True
            op.fds.clear()

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                while self._heap and (self._heap[0][2].done or self._heap[0][0] <= now):
                    _, _, op = heapq.heappop(self._heap)
                    if not op.done:
                        op.expired = True
                        for fd in list(op.fds):
                            _shutdown(fd)
                wait = self._heap[0][0] - now if self._heap else 60.0
                self._cond.wait(timeout=max(0.01, wait))


def _shutdown(fd: int) -> None:
    try:
        s = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        s.close()  # closes the duplicate only; the connection's own descriptor is left to its owner


_WATCHDOG = _Watchdog()
_local = threading.local()
#: an outer deadline (``time.monotonic()``) for the operations of the current request: time spent
#: waiting before the operation started (e.g. in the write queue of the event loop) counts
operation_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("db_deadline", default=None)


def _current_op() -> _Op | None:
    return getattr(_local, "op", None)


# ---------------------------------------------------------------------------------------------- errors
def _message(exc: BaseException) -> str:
    return (
        str(getattr(exc, "orig", None) or exc).strip().splitlines()[0][:200]
        if str(exc)
        else type(exc).__name__
    )


def classify(exc: BaseException, op: _Op | None = None) -> DatabaseUnavailable | None:
    """The :class:`DatabaseUnavailable` an exception stands for, or None (a bug, an integrity
    error: not an availability problem)."""
    if isinstance(exc, DatabaseUnavailable):
        return exc
    in_commit = bool(op and op.in_commit)
    if op is not None and op.expired:
        return DatabaseUnavailable("timeout", "no answer within the time limit", in_commit)
    if isinstance(exc, PoolTimeout):
        return DatabaseUnavailable("busy", "no database connection free within the time limit", in_commit, 1)
    if isinstance(exc, IntegrityError) or not isinstance(exc, DBAPIError):
        return None
    orig = getattr(exc, "orig", None)
    code = getattr(orig, "sqlstate", None)
    msg = _message(exc).lower()
    if code in READ_ONLY_PG_CODES or "readonly" in msg or "read-only" in msg:
        return DatabaseUnavailable("read_only", _message(exc), in_commit)
    if code in TIMEOUT_PG_CODES or "timeout" in msg or "timed out" in msg:
        return DatabaseUnavailable("timeout", "a statement exceeded the time limit", in_commit)
    if code in RETRYABLE_PG_CODES or "database is locked" in msg or "database is busy" in msg:
        return DatabaseUnavailable("locked", "the database stayed locked by another writer", in_commit)
    if exc.connection_invalidated or type(exc).__name__ in ("OperationalError", "InterfaceError"):
        return DatabaseUnavailable("connection", _message(exc), in_commit)
    if code is not None and code[:2] in ("08", "53", "57", "58"):  # connection, resources, operator, system
        return DatabaseUnavailable("connection", _message(exc), in_commit)
    return None


def is_retryable(exc: BaseException) -> bool:
    """A failure a rerun of the whole unit can fix: a lost optimistic check, a deadlock, a
    serialization failure, a lock not available, SQLite busy, or a connection that broke before
    the commit was sent (a stale pooled connection after a server restart)."""
    if isinstance(exc, RetryTransaction):
        return True
    if isinstance(exc, IntegrityError):
        return False
    if isinstance(exc, DBAPIError):
        code = getattr(getattr(exc, "orig", None), "sqlstate", None)
        if code in RETRYABLE_PG_CODES:
            return True
        msg = str(getattr(exc, "orig", exc)).lower()
        if "database is locked" in msg or "deadlock" in msg or "could not serialize" in msg:
            return True
        return bool(exc.connection_invalidated)
    return False


# ---------------------------------------------------------------------------------------------- engines
def make_engine(url: str, options: DbOptions | None = None) -> Engine:
    options = options or DbOptions()
    url = normalize_url(url)
    t = options.timeout
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"timeout": t, "check_same_thread": False},
            pool_size=min(8, options.concurrency),
            max_overflow=max(0, options.concurrency + 8 - min(8, options.concurrency)),
            pool_timeout=t,
        )

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_conn, _record):  # pragma: no cover - trivial
            dbapi_conn.isolation_level = None  # we emit BEGIN ourselves (see _sqlite_begin)
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout={int(t * 1000)}")
            mode = cur.execute("PRAGMA journal_mode").fetchone()
            if not mode or str(mode[0]).lower() != "wal":
                try:
                    cur.execute("PRAGMA journal_mode=WAL")
                except Exception:  # noqa: BLE001 - a read-only file keeps its mode; reads still work
                    pass
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "checkout")
        def _sqlite_checkout(dbapi_conn, _record, _proxy):
            # the busy handler waits no longer than the operation has left
            op = _current_op()
            remaining = t if op is None else max(0.0, op.deadline - time.monotonic())
            dbapi_conn.execute(f"PRAGMA busy_timeout={int(remaining * 1000)}")

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn):
            if conn.get_execution_options().get("ledger_write"):
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                conn.exec_driver_sql("BEGIN")

        return engine
    ms = int(t * 1000)
    # ≤ 20 connections per process: several serve processes stay under PostgreSQL's default
    # max_connections (100); operations beyond that wait (DbOptions.concurrency) or are refused.
    size = min(10, options.concurrency)
    engine = create_engine(
        url,
        pool_size=size,
        max_overflow=max(0, min(20, options.concurrency) - size),
        pool_timeout=t,
        pool_pre_ping=False,  # a stale connection fails its first statement and the unit is rerun
        connect_args={
            "connect_timeout": max(1, math.ceil(t)),
            "options": f"-c statement_timeout={ms} -c lock_timeout={ms}",
            "keepalives": 1,
            "keepalives_idle": 10,
            "keepalives_interval": 5,
            "keepalives_count": 3,
        },
    )

    @event.listens_for(engine, "checkout")
    def _watch_checkout(dbapi_conn, _record, _proxy):
        op = _current_op()
        fd = _pg_fd(dbapi_conn)
        if op is not None and fd is not None:
            _WATCHDOG.add_fd(op, fd)

    @event.listens_for(engine, "checkin")
    def _watch_checkin(dbapi_conn, _record):
        op = _current_op()
        fd = _pg_fd(dbapi_conn)
        if op is not None and fd is not None:
            _WATCHDOG.remove_fd(op, fd)

    return engine


def _pg_fd(dbapi_conn: Any) -> int | None:
    try:
        fd = dbapi_conn.pgconn.socket
    except Exception:  # noqa: BLE001 - closed or broken connection
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


# ---------------------------------------------------------------------------------------------- database
class Database:
    """One database: an engine, a write engine view, session factories, and the operation gates."""

    def __init__(self, url: str, engine: Engine | None = None, options: DbOptions | None = None):
        self.url = normalize_url(url)
        self.options = options or DbOptions()
        self.engine = engine or make_engine(self.url, self.options)
        self.dialect = self.engine.dialect.name
        self.is_sqlite = self.dialect == "sqlite"
        self.write_engine = self.engine.execution_options(ledger_write=True)
        self._read_factory = sessionmaker(bind=self.engine, expire_on_commit=False, autoflush=False)
        self._write_factory = sessionmaker(bind=self.write_engine, expire_on_commit=False, autoflush=False)
        # SQLite has one writer at a time anyway; PostgreSQL locks rows, so a few units may overlap
        self.writes = FifoGate(1 if self.is_sqlite else self.options.write_lanes, self.options.queue)
        self.gate = FifoGate(self.options.concurrency, self.options.queue)
        self._watch = not self.is_sqlite

    # -------------------------------------------------------------------------------- operations
    @contextmanager
    def _operation(self, timeout: float | None = None) -> Iterator[_Op]:
        """The current operation of this thread, or a new one (deadline, concurrency slot, and for
        PostgreSQL the watchdog); database failures leave it as :class:`DatabaseUnavailable`."""
        op = _current_op()
        if op is not None:
            op.depth += 1
            try:
                yield op
            finally:
                op.depth -= 1
            return
        timeout = self.options.timeout if timeout is None else timeout
        outer = operation_deadline.get()
        if outer is not None:
            timeout = min(timeout, outer - time.monotonic())
        if timeout <= 0:
            raise DatabaseUnavailable(
                "busy", "the request's time for the database ran out while it waited", retry_after=1
            )
        op = _Op(deadline=time.monotonic() + timeout)
        if not self.gate.acquire(timeout):
            raise DatabaseUnavailable(
                "busy", "no database slot became free within the time limit", retry_after=1
            )
        _local.op = op
        if self._watch:
            _WATCHDOG.watch(op)
        try:
            yield op
        except (SQLAlchemyError, OSError) as exc:
            unavailable = classify(exc, op)
            if unavailable is None:
                raise
            raise unavailable from exc
        finally:
            _WATCHDOG.finish(op)
            _local.op = None
            self.gate.release()

    @contextmanager
    def read(self, timeout: float | None = None) -> Iterator[Session]:
        with self._operation(timeout), self._read_factory() as s:
            try:
                yield s
            finally:
                s.rollback()

    @contextmanager
    def write(self) -> Iterator[Session]:
        """One write unit: waits its turn on the process's write FIFO, commits on success."""
        with self._operation() as op, self._write_turn(op), self._write_factory() as s:
            try:
                yield s
                op.in_commit = True
                s.commit()
                op.in_commit = False
            except BaseException:
                try:
                    s.rollback()
                except SQLAlchemyError:
                    pass  # the connection is gone; it is discarded with the session
                raise

    @contextmanager
    def _write_turn(self, op: _Op) -> Iterator[None]:
        if getattr(_local, "write_turn", False):  # nested (run_write holds the turn for its unit)
            yield
            return
        if not self.writes.acquire(op.deadline - time.monotonic()):
            raise DatabaseUnavailable(
                "busy",
                "the writes queued ahead of this one did not finish within the time limit",
                retry_after=1,
            )
        _local.write_turn = True
        try:
            yield
        finally:
            _local.write_turn = False
            self.writes.release()

    def run_write(
        self,
        fn: Callable[[Session], T],
        attempts: int = 50,
        *,
        on_integrity_error: Callable[[IntegrityError], T | None] | None = None,
        integrity_attempts: int = 8,
    ) -> T:
        """Run ``fn(session)`` in a write unit (one transaction), running the whole unit again when
        it failed for a reason that a rerun can fix — within the operation's deadline:

        * a transient failure (deadlock, serialization failure, lock not available, SQLite busy, a
          connection that broke before the commit was sent, a failed optimistic check raising
          :class:`RetryTransaction`): jittered exponential backoff, at most ``attempts`` runs;
        * a unique-constraint violation (a racing writer inserted the same key first), only when
          ``on_integrity_error`` is given: it is called with the error after the rollback and
          returns the answer (e.g. what the racing writer committed), raises, or returns ``None``
          to run the unit again (at most ``integrity_attempts`` times).
        """
        with self._operation() as op, self._write_turn(op):
            delay, transient, races = 0.002, 0, 0
            while True:
                try:
                    with self.write() as s:
                        return fn(s)
                except IntegrityError as exc:
                    if on_integrity_error is None:
                        raise
                    answer = on_integrity_error(exc)
                    if answer is not None:
                        return answer
                    races += 1
                    if races >= integrity_attempts:
                        raise
                except Exception as exc:
                    transient += 1
                    if op.in_commit or not is_retryable(exc) or transient >= attempts:
                        raise
                    pause = delay * (0.5 + random.random())
                    if time.monotonic() + pause >= op.deadline:
                        raise
                    time.sleep(pause)
                    delay = min(delay * 2, 0.25)

    # -------------------------------------------------------------------------------- readiness
    def check(self, timeout: float = 2.0) -> dict[str, Any]:
        """Reachability and writability, for ``/health/ready``: ``{"reachable", "writes", "detail"}``
        where ``writes`` is ``ok``, ``busy`` (this process's writes are queued), ``locked`` (another
        process holds the write lock), ``read_only`` or ``unknown``."""
        out: dict[str, Any] = {"dialect": self.dialect, "reachable": False, "writes": "unknown"}
        try:
            with self.read(timeout) as s:
                s.execute(text("SELECT 1"))
                out["reachable"] = True
                if not self.is_sqlite:
                    ro = s.execute(
                        text("SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'")
                    ).scalar()
                    out["writes"] = "read_only" if ro else "ok"
            if self.is_sqlite:
                out["writes"] = self._sqlite_write_probe(timeout)
        except DatabaseUnavailable as exc:
            out["detail"] = exc.reason
            if exc.cause == "read_only":
                out["writes"] = "read_only"
        return out

    def _sqlite_write_probe(self, timeout: float) -> str:
        """Take the write lock within ``timeout`` (``BEGIN IMMEDIATE``), write nothing new, and roll back."""
        if self.writes.waiting or not self.writes.acquire(0.0):
            return "busy"
        try:
            raw = self.engine.raw_connection()
            try:
                cur = raw.cursor()
                cur.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
                try:
                    cur.execute("BEGIN IMMEDIATE")
                    try:  # a write that changes nothing, rolled back: refused on a read-only file
                        version = cur.execute("PRAGMA user_version").fetchone()[0]
                        cur.execute(f"PRAGMA user_version = {int(version)}")
                    finally:
                        cur.execute("ROLLBACK")
                    return "ok"
                except Exception as exc:  # noqa: BLE001 - classified below
                    msg = str(exc).lower()
                    if "readonly" in msg or "read-only" in msg:
                        return "read_only"
                    if "locked" in msg or "busy" in msg:
                        return "locked"
                    return "unknown"
                finally:
                    cur.execute(f"PRAGMA busy_timeout={int(self.options.timeout * 1000)}")
                    cur.close()
            finally:
                raw.close()
        except Exception:  # noqa: BLE001 - cannot even open a connection
            return "unknown"
        finally:
            self.writes.release()

    def dispose(self) -> None:
        self.engine.dispose()


_databases: dict[tuple[str, DbOptions], Database] = {}
_lock = threading.Lock()


def get_database(url: str, options: DbOptions | None = None) -> Database:
    """The process-wide :class:`Database` of ``url`` (created on first use)."""
    key = (normalize_url(url), options or DbOptions())
    with _lock:
        db = _databases.get(key)
        if db is None:
            db = _databases[key] = Database(key[0], options=key[1])
        return db


def reset_databases() -> None:
    """Dispose every cached engine (tests)."""
    with _lock:
        for db in _databases.values():
            db.dispose()
        _databases.clear()
