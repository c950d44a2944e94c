"""Database-backed :class:`accountant.store.CurveStore`: expensive curves (the clone bound, one per
(n, ε0); its cost is measured in bench/results_clones.md) are computed once and reused by every
``serve`` process and after restarts.

Where: PostgreSQL keeps them in the ledger database's ``accountant_curve_cache`` table (inserts
there take no lock any ledger row needs). SQLite has one write lock per file, so the curves live
in a file of their own next to the ledger (``accountant.db`` → ``accountant.curves.db``): storing
a curve never waits for, or delays, a charge.

Bounded: at most ``max_rows`` curves (each at most ~8 KB: ≤ 1,024 orders); past that the oldest
tenth is deleted. Values are stored as the exact float64 bytes; writes are insert-if-absent (two
processes that compute the same curve store it once; the values are identical by construction).
Reads and writes have a short time limit, and after a failure the store is skipped for a while
(a curve not found is only recomputed, never wrong).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from pathlib import Path
from typing import cast

import numpy as np
from sqlalchemy import Table, delete, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError

from app.db.models import CurveCacheEntry
from app.db.session import Database, DbOptions, get_database, normalize_url

#: seconds a curve lookup may take (a slow store costs less than recomputing, up to this)
READ_TIMEOUT = 0.5
#: seconds the store is skipped after a failure
BACKOFF = 10.0
#: inserts between two checks of the row bound
CHECK_EVERY = 100


def curves_url(database_url: str) -> str | None:
    """Where the curves of ``database_url`` are kept: the same database for PostgreSQL, a file of
    their own for SQLite (None for an in-memory SQLite database: memory only)."""
    url = normalize_url(database_url)
    if not url.startswith("sqlite"):
        return url
    u = make_url(url)
    if not u.database or u.database == ":memory:" or u.query.get("mode") == "memory":
        return None
    p = Path(u.database)
    return str(u.set(database=str(p.with_name(p.stem + ".curves" + (p.suffix or ".db")))))


class DatabaseCurveStore:
    """Curves in the ``accountant_curve_cache`` table, through SQLAlchemy Core (one statement per
    call; no ORM session: these calls sit on the answer's path)."""

    def __init__(self, database_url: str, max_rows: int = 50_000):
        self.database_url = normalize_url(database_url)
        self.max_rows = int(max_rows)
        self._table = cast(Table, CurveCacheEntry.__table__)
        self._inserts = 0
        self._down_until = 0.0
        self._lock = threading.Lock()
        self._db: Database | None = None
        if self.database_url.startswith("sqlite"):
            self._table.create(self.db().engine, checkfirst=True)

    def db(self) -> Database:
        if self._db is None:
            self._db = get_database(self.database_url, DbOptions(timeout=2.0, concurrency=4, queue=64))
        return self._db

    def _available(self) -> bool:
        return time.monotonic() >= self._down_until

    def _failed(self) -> None:
        self._down_until = time.monotonic() + BACKOFF

    def get(self, key: str) -> np.ndarray | None:
        if not self._available():
            return None
        t = self._table
        try:
            with self.db().read(READ_TIMEOUT) as s:
                row = s.execute(select(t.c.curve_values, t.c.n_values).where(t.c.key == key)).first()
        except Exception:
            self._failed()
            raise
        if row is None:
            return None
        values = np.frombuffer(row[0], dtype="<f8")
        return values if values.size == row[1] else None

    def put(self, key: str, values: np.ndarray) -> None:
        if not self._available():
            return
        arr = np.ascontiguousarray(values, dtype="<f8")
        row = {
            "key": key,
            "n_values": int(arr.size),
            "curve_values": arr.tobytes(),
            "created_at": dt.datetime.now(dt.timezone.utc),
        }
        try:
            with self.db().write() as s:
                s.execute(self._table.insert().values(**row))
        except IntegrityError:
            return  # another process (or an earlier put) stored the same curve first
        except Exception:
            self._failed()
            raise
        with self._lock:
            self._inserts += 1
            check = self._inserts % CHECK_EVERY == 0
        if check:
            self.evict()

    def evict(self) -> int:
        """Delete the oldest curves beyond ``max_rows`` (down to 90% of it); how many."""
        t = self._table
        with self.db().read() as s:
            n = int(s.execute(select(func.count()).select_from(t)).scalar() or 0)
        excess = n - int(self.max_rows * 0.9) if n > self.max_rows else 0
        if excess <= 0:
            return 0
        oldest = select(t.c.key).order_by(t.c.created_at).limit(excess).scalar_subquery()
        with self.db().write() as s:
            s.execute(delete(t).where(t.c.key.in_(oldest)))
        return excess


def install(database_url: str, memory_bytes: int = 64 << 20, max_rows: int = 50_000) -> None:
    """Register the database store (behind a bounded in-process LRU) for this process; the memory
    store alone when the database cannot hold curves (in-memory SQLite)."""
    from accountant.store import LayeredStore, MemoryStore, set_store

    url = curves_url(database_url)
    memory = MemoryStore(memory_bytes)
    if url is None:
        set_store(memory)
        return
    try:
        backing = DatabaseCurveStore(url, max_rows)
    except Exception as exc:  # noqa: BLE001 - e.g. a read-only location: curves stay in memory
        logging.getLogger("app").warning(
            "the shared curve store is unavailable; curves are kept in this process only",
            extra={"error": f"{type(exc).__name__}: {exc}"[:300]},
        )
        set_store(memory)
        return
    set_store(LayeredStore(backing, memory))
