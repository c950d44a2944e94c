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

import contextlib
import contextvars
import errno
import math
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

from app.db.faults import DatabaseUnavailable, RetryTransaction, classify, is_retryable
from app.db.limits import WATCHDOG, FifoGate, Op

T = TypeVar("T")


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


# ---------------------------------------------------------------------------------------------- the current operation
_local = threading.local()
#: an outer deadline (``time.monotonic()``) for the operations of the current request: time spent
#: waiting before the operation started (e.g. in the write queue of the event loop) counts
operation_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("db_deadline", default=None)


def _current_op() -> Op | None:
    return getattr(_local, "op", None)


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
        def _sqlite_connect(
            dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry
        ) -> None:  # pragma: no cover - trivial
            dbapi_conn.isolation_level = None  # we emit BEGIN ourselves (see _sqlite_begin)
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout={int(t * 1000)}")
            mode = cur.execute("PRAGMA journal_mode").fetchone()
            if not mode or str(mode[0]).lower() != "wal":
                # a read-only file keeps its mode; reads still work
                with contextlib.suppress(Exception):
                    cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "checkout")
        def _sqlite_checkout(
            dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry, _proxy: PoolProxiedConnection
        ) -> None:
            # the busy handler waits no longer than the operation has left
            op = _current_op()
            remaining = t if op is None else max(0.0, op.deadline - time.monotonic())
            dbapi_conn.execute(f"PRAGMA busy_timeout={int(remaining * 1000)}")

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn: Connection) -> None:
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
    def _watch_checkout(
        dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry, _proxy: PoolProxiedConnection
    ) -> None:
        op = _current_op()
        fd = _pg_fd(dbapi_conn)
        if op is not None and fd is not None:
            WATCHDOG.add_fd(op, fd)

    @event.listens_for(engine, "checkin")
    def _watch_checkin(dbapi_conn: DBAPIConnection | None, _record: ConnectionPoolEntry) -> None:
        op = _current_op()
        fd = _pg_fd(dbapi_conn)
        if op is not None and fd is not None:
            WATCHDOG.remove_fd(op, fd)

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
    def _operation(self, timeout: float | None = None) -> Iterator[Op]:
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
        op = Op(deadline=time.monotonic() + timeout)
        if not self.gate.acquire(timeout):
            raise DatabaseUnavailable(
                "busy", "no database slot became free within the time limit", retry_after=1
            )
        _local.op = op
        if self._watch:
            WATCHDOG.watch(op)
        try:
            yield op
        except (SQLAlchemyError, OSError) as exc:
            unavailable = classify(exc, op)
            if unavailable is None:
                raise
            raise unavailable from exc
        finally:
            WATCHDOG.finish(op)
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
                with contextlib.suppress(SQLAlchemyError):  # the connection is gone; it is discarded
                    s.rollback()
                raise

    @contextmanager
    def _write_turn(self, op: Op) -> Iterator[None]:
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
                    pause = _retry_pause(op, exc, transient >= attempts, delay)
                    if pause is None:
                        raise
                    time.sleep(pause)
                    delay = min(delay * 2, 0.25)

    # -------------------------------------------------------------------------------- readiness
    def check(self, timeout: float = 2.0) -> dict[str, Any]:
        """Reachability and writability, for ``/health/ready``: ``{"reachable", "writes", "detail"}``
        where ``writes`` is ``ok``, ``busy`` (this process's writes are queued), ``locked`` (another
        process holds the write lock), ``read_only`` (a read-only or immutable SQLite file or mount, a
        PostgreSQL standby or read-only default transactions), ``disk_full`` (SQLite) or ``unknown``."""
        out: dict[str, Any] = {"dialect": self.dialect, "reachable": False, "writes": "unknown"}
        try:
            with self.read(timeout) as s:
                s.execute(text("SELECT 1"))
                out["reachable"] = True
                if not self.is_sqlite:
                    ro = s.execute(
                        text(
                            "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' "
                            "OR current_setting('default_transaction_read_only') = 'on'"
                        )
                    ).scalar()
                    out["writes"] = "read_only" if ro else "ok"
            if self.is_sqlite:
                out["writes"] = self._sqlite_write_probe(timeout)
                if out["writes"] in _STORAGE_DETAIL:
                    out["detail"] = _STORAGE_DETAIL[out["writes"]]
        except DatabaseUnavailable as exc:
            out["detail"] = exc.reason
            if exc.cause == "read_only":
                out["writes"] = "read_only"
        return out

    def _sqlite_write_probe(self, timeout: float) -> str:
        """Whether the file can take writes: its storage (:func:`sqlite_storage`: a read-only or
        immutable file, a full disk), then the write lock within ``timeout`` (``BEGIN IMMEDIATE``),
        a write that changes nothing, rolled back. Writes no user data."""
        storage = sqlite_storage(self.engine.url.database)
        if storage != "ok":
            return storage
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


#: free bytes below which a SQLite file's disk counts as full: a write needs a few pages of WAL
MIN_FREE_BYTES = 1 << 20
_STORAGE_DETAIL = {
    "read_only": "the database file (or its -wal/-shm file, or its mount) cannot be written: read-only or "
    "immutable; writes are refused with 503",
    "disk_full": f"the disk of the database file has less than {MIN_FREE_BYTES >> 20} MiB free (or refused a "
    "4 KiB write): writes would fail; free some space",
}


def sqlite_storage(path: str | None) -> str:
    """``ok``, ``read_only`` or ``disk_full`` for a SQLite database file, checked without touching
    it: the file and its ``-wal``/``-shm`` companions must be writable (``access(2)`` also refuses
    an immutable file, root included); the disk must have ``MIN_FREE_BYTES`` free (what this
    process may use: the reserved blocks count for root); and, when the directory is writable, a
    4 KiB scratch file written, synced and removed there must succeed (a full disk or quota, a
    read-only mount surface as ``ENOSPC``/``EDQUOT``/``EROFS``). A rolled-back write to the
    database itself proves none of this: in WAL mode it never reaches the disk."""
    if not path or path == ":memory:" or path.startswith("file:"):
        return "ok"  # an in-memory or URI-named database: its mode is the URI's (checked by SQLite)
    full = os.path.abspath(path)
    folder = os.path.dirname(full)
    for f in (full, full + "-wal", full + "-shm"):
        if os.path.exists(f) and not os.access(f, os.W_OK):
            return "read_only"
    try:
        st = os.statvfs(folder)
    except OSError:
        return "ok"
    free = (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize
    if free < MIN_FREE_BYTES:
        return "disk_full"
    if not os.access(folder, os.W_OK):
        return "ok"  # nothing more to learn without writing into the file itself
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".ready-probe-")
        try:
            os.write(fd, b"\0" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(tmp)
    except OSError as exc:
        return "disk_full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "read_only"
    return "ok"


_databases: dict[tuple[str, DbOptions], Database] = {}


def _retry_pause(op: Op, exc: Exception, out_of_attempts: bool, delay: float) -> float | None:
    """The jittered pause before a failed write unit runs again, or None when it must not: the
    commit was sent, the failure is not one a rerun can fix, no attempts are left, or the pause
    would reach the operation's deadline."""
    if op.in_commit or not is_retryable(exc) or out_of_attempts:
        return None
    pause = delay * (0.5 + random.random())
    if time.monotonic() + pause >= op.deadline:
        return None
    return pause


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


__all__ = [
    "Database",
    "DatabaseUnavailable",
    "DbOptions",
    "FifoGate",
    "RetryTransaction",
    "classify",
    "get_database",
    "is_retryable",
    "make_engine",
    "normalize_url",
    "operation_deadline",
    "reset_databases",
]
