"""Every cache is bounded (architecture.md "Caches"): the in-process caches by entries and bytes,
the response cache by bytes (large answers not kept at all), the shared curve store by rows
(oldest evicted) and in a file of its own on SQLite, so storing a curve never takes the ledger's
write lock."""

from __future__ import annotations

import sqlite3
import time

import numpy as np
import pytest

from accountant.store import BoundedCache, approx_size
from app.core.services import CACHEABLE_MAX_BYTES, ResponseCache
from app.db.curve_store import DatabaseCurveStore, curves_url
from app.db.migrate import upgrade_to_head


def test_bounded_cache_keeps_the_most_recent_within_entries_and_bytes():
    c: BoundedCache[int, np.ndarray] = BoundedCache(max_entries=100, max_bytes=10 * 8_000)
    for i in range(50):
        c.put(i, np.zeros(1000))  # ≈ 8 kB each: at most ~10 fit in the bytes bound
        c.get(0)  # keep the first one in use
    assert c.nbytes <= 10 * 8_000 and len(c) <= 10
    assert c.get(0) is not None and c.get(49) is not None  # used ones survive
    assert c.get(1) is None and c.evictions >= 40
    small: BoundedCache[int, int] = BoundedCache(max_entries=3)
    for i in range(10):
        small.put(i, i)
    assert len(small) == 3 and [small.get(i) for i in (7, 8, 9)] == [7, 8, 9]


def test_an_entry_larger_than_the_whole_cache_is_not_kept():
    c: BoundedCache[str, np.ndarray] = BoundedCache(max_entries=10, max_bytes=1000)
    c.put("big", np.zeros(1000))
    assert c.get("big") is None and len(c) == 0 and c.nbytes == 0
    assert approx_size(np.zeros(1000)) >= 8000


def test_the_response_cache_is_bounded_in_bytes_and_skips_large_answers():
    cache = ResponseCache(max_bytes=64 * 1024)
    for i in range(200):
        cache.put(("/v1/rdp", f"request-{i}".encode()), b"x" * 1000)
    assert cache.nbytes <= 64 * 1024 and 0 < len(cache) < 200
    assert cache.get(("/v1/rdp", b"request-199")) is not None
    cache.put(("/v1/rdp", b"huge"), b"y" * (CACHEABLE_MAX_BYTES + 1))
    assert cache.get(("/v1/rdp", b"huge")) is None


def test_the_curve_store_evicts_its_oldest_rows_beyond_its_bound(tmp_path):
    ledger = f"sqlite:///{tmp_path}/ledger.db"
    url = curves_url(ledger)
    assert url is not None and "ledger.curves.db" in url  # a file of its own
    upgrade_to_head(url)
    s = DatabaseCurveStore(url, max_rows=100)
    for i in range(130):
        s.put(f"k{i:03d}", np.array([float(i)]))
    s.evict()
    with sqlite3.connect(tmp_path / "ledger.curves.db") as con:
        (rows,) = con.execute("SELECT count(*) FROM accountant_curve_cache").fetchone()
    assert rows <= 100
    assert s.get("k000") is None  # the oldest went first
    got = s.get("k129")
    assert got is not None and got[0] == 129.0


def test_storing_curves_never_waits_for_the_ledgers_write_lock(tmp_path):
    """Another process holds the ledger file's write lock; the curve store (its own file) still
    stores and answers at once."""
    ledger_file = tmp_path / "ledger.db"
    ledger = f"sqlite:///{ledger_file}"
    upgrade_to_head(ledger)
    url = curves_url(ledger)
    assert url is not None
    upgrade_to_head(url)
    holder = sqlite3.connect(ledger_file, isolation_level=None, timeout=1)
    holder.execute("BEGIN IMMEDIATE")  # the ledger's write lock, held
    try:
        s = DatabaseCurveStore(url)
        t0 = time.monotonic()
        s.put("while-locked", np.array([0.5, 1.5]))
        got = s.get("while-locked")
        assert time.monotonic() - t0 < 2.0
        assert got is not None and np.array_equal(got, [0.5, 1.5])
        other = sqlite3.connect(ledger_file, isolation_level=None, timeout=0.1)
        with pytest.raises(sqlite3.OperationalError):  # the ledger itself is indeed locked
            other.execute("BEGIN IMMEDIATE")
        other.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_rdp_curve_events_count_in_the_work_estimate():
    """Cheap events still cost per event, point and order: 1,000 custom curves of 1,000 points on
    1,000 orders are refused by a limit that a handful passes, and the refusal says what to cut."""
    from accountant import event_from_dict
    from app.core.compute import WorkLimitExceeded, check_work, work_estimate

    orders = np.linspace(1.5, 500.0, 1000)

    def curves(k: int) -> list:
        pts = np.linspace(1.1, 1000.0, 1000)
        return [
            event_from_dict(
                {"mechanism": "rdp_curve", "orders": pts.tolist(), "rdp": (0.001 * (i + 1) * pts).tolist()}
            )
            for i in range(k)
        ]

    few, many = curves(3), curves(1000)
    small, _ = work_estimate(few, orders, convert=True)
    large, heavy = work_estimate(many, orders, convert=True)
    assert heavy == 0 and large > 300 * small
    check_work(few, orders, max_mass=2 * small, convert=True)
    with pytest.raises(WorkLimitExceeded, match="1000 events × 1000 orders. Ask for fewer orders"):
        check_work(many, orders, max_mass=2 * small, convert=True)
