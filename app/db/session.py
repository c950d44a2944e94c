"""Engines and sessions for the ledger, with the concurrency settings ledger.md asks for.

SQLite (default, ``sqlite:///./accountant.db``):
  * WAL journal, ``busy_timeout`` 30 s, ``synchronous=FULL`` (a committed charge survives a
    process kill and a power cut), foreign keys on;
  * pysqlite's own implicit transaction handling is switched off and the ``begin`` event emits
    the BEGIN itself: ``BEGIN IMMEDIATE`` for write units (the database write lock is taken
    before the first read, so no two writers can interleave read-check-write), plain ``BEGIN``
    for read units.

PostgreSQL (``postgresql+psycopg://...``): READ COMMITTED; write units take row locks with
``SELECT … FOR UPDATE`` / ``FOR SHARE`` in a fixed order (see :mod:`app.ledger.locking`), and a
unit that hits a deadlock, a serialization failure or a lost optimistic check is retried whole.

Use :meth:`Database.write` / :meth:`Database.read` (context managers yielding a Session that
commits on success and rolls back on error) or :meth:`Database.run_write` (retrying).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

T = TypeVar("T")

RETRYABLE_PG_CODES = {"40001", "40P01", "55P03"}  # serialization failure, deadlock, lock not available


class RetryTransaction(Exception):
    """Raised inside a write unit when an optimistic check failed: roll back and run it again."""


def normalize_url(url: str) -> str:
    """Accept ``postgresql://`` and ``postgres://`` as PostgreSQL via psycopg 3."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def make_engine(url: str) -> Engine:
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"timeout": 30, "check_same_thread": False},
            pool_size=8,
            max_overflow=16,
            pool_timeout=60,
        )

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_conn, _record):  # pragma: no cover - trivial
            dbapi_conn.isolation_level = None  # we emit BEGIN ourselves (see _sqlite_begin)
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn):
            if conn.get_execution_options().get("ledger_write"):
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                conn.exec_driver_sql("BEGIN")

        return engine
    # ≤ 20 connections per process: several serve processes stay under PostgreSQL's default
    # max_connections (100); requests beyond that wait for a pooled connection.
    return create_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True, pool_timeout=60)


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, RetryTransaction):
        return True
    if isinstance(exc, IntegrityError):
        return False
    if isinstance(exc, DBAPIError):
        code = getattr(getattr(exc, "orig", None), "sqlstate", None)
        if code in RETRYABLE_PG_CODES:
            return True
        msg = str(getattr(exc, "orig", exc)).lower()
        return "database is locked" in msg or "deadlock" in msg or "could not serialize" in msg
    return False


class Database:
    """One database: an engine, a write engine view, and session factories."""

    def __init__(self, url: str, engine: Engine | None = None):
        self.url = normalize_url(url)
        self.engine = engine or make_engine(self.url)
        self.dialect = self.engine.dialect.name
        self.is_sqlite = self.dialect == "sqlite"
        self.write_engine = self.engine.execution_options(ledger_write=True)
        self._read_factory = sessionmaker(bind=self.engine, expire_on_commit=False, autoflush=False)
        self._write_factory = sessionmaker(bind=self.write_engine, expire_on_commit=False, autoflush=False)

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._read_factory() as s:
            try:
                yield s
            finally:
                s.rollback()

    @contextmanager
    def write(self) -> Iterator[Session]:
        with self._write_factory() as s:
            try:
                yield s
                s.commit()
            except BaseException:
                s.rollback()
                raise

    def run_write(
        self,
        fn: Callable[[Session], T],
        attempts: int = 50,
        *,
        on_integrity_error: Callable[[IntegrityError], T | None] | None = None,
        integrity_attempts: int = 8,
    ) -> T:
        """Run ``fn(session)`` in a write unit (one transaction), running the whole unit again when
        it failed for a reason that a rerun can fix:

        * a transient failure (deadlock, serialization failure, lock not available, SQLite busy, a
          failed optimistic check raising :class:`RetryTransaction`): jittered exponential backoff,
          at most ``attempts`` runs;
        * a unique-constraint violation (a racing writer inserted the same key first), only when
          ``on_integrity_error`` is given: it is called with the error after the rollback and
          returns the answer (e.g. what the racing writer committed), raises, or returns ``None``
          to run the unit again (at most ``integrity_attempts`` times).
        """
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
                if not is_retryable(exc) or transient >= attempts:
                    raise
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.25)

    def dispose(self) -> None:
        self.engine.dispose()


_databases: dict[str, Database] = {}
_lock = threading.Lock()


def get_database(url: str) -> Database:
    """The process-wide :class:`Database` of ``url`` (created on first use)."""
    url = normalize_url(url)
    with _lock:
        db = _databases.get(url)
        if db is None:
            db = _databases[url] = Database(url)
        return db


def reset_databases() -> None:
    """Dispose every cached engine (tests)."""
    with _lock:
        for db in _databases.values():
            db.dispose()
        _databases.clear()
