"""Database-backed :class:`accountant.store.CurveStore`: expensive curves (the clone bound costs
0.05–1 s per (n, ε0)) are computed once and reused by every ``serve`` process and after restarts.

Values are stored as the exact float64 bytes. Writes are insert-if-absent: two processes that
compute the same curve at once store it once (the values are identical by construction).
"""

from __future__ import annotations

import datetime as dt
from typing import cast

import numpy as np
from sqlalchemy import Table, select
from sqlalchemy.exc import IntegrityError

from app.db.models import CurveCacheEntry
from app.db.session import get_database


class DatabaseCurveStore:
    """Curves in the ``accountant_curve_cache`` table, through SQLAlchemy Core on the shared
    engine (one statement per call; no ORM session: these calls sit on the answer's path)."""

    def __init__(self, database_url: str):
        self.database_url = database_url
        self._table = cast(Table, CurveCacheEntry.__table__)

    def get(self, key: str) -> np.ndarray | None:
        db = get_database(self.database_url)
        t = self._table
        with db.engine.connect() as conn:
            row = conn.execute(select(t.c.curve_values, t.c.n_values).where(t.c.key == key)).first()
        if row is None:
            return None
        values = np.frombuffer(row[0], dtype="<f8")
        return values if values.size == row[1] else None

    def put(self, key: str, values: np.ndarray) -> None:
        arr = np.ascontiguousarray(values, dtype="<f8")
        db = get_database(self.database_url)
        try:
            with db.write_engine.begin() as conn:
                conn.execute(
                    self._table.insert().values(
                        key=key,
                        n_values=int(arr.size),
                        curve_values=arr.tobytes(),
                        created_at=dt.datetime.now(dt.timezone.utc),
                    )
                )
        except IntegrityError:
            pass  # another process (or an earlier put) stored the same curve first


def install(database_url: str) -> None:
    """Register the database store (behind the in-process LRU) for this process."""
    from accountant.store import LayeredStore, set_store

    set_store(LayeredStore(DatabaseCurveStore(database_url)))
