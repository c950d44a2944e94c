"""The database-backed curve store (the clone curve is computed once per (n, ε0) and kept
in the database, so a restart or a second process does not recompute)."""

from __future__ import annotations

import sqlite3
import time

import httpx
import numpy as np
import pytest

import accountant
from accountant import bounds as B
from accountant import store
from app.db.curve_store import DatabaseCurveStore, install
from app.db.migrate import upgrade_to_head

from ..helpers.server import start_server


@pytest.fixture
def db_url(tmp_path):
    url = f"sqlite:///{tmp_path}/curves.db"
    upgrade_to_head(url)
    yield url
    store.set_store(None)


def test_writes_happen_behind_the_answer_and_flush_waits_for_them(db_url):
    """put() returns before the database write; the value is readable from memory at once and
    from the database after flush()."""
    import threading

    gate = threading.Event()

    class Slow(DatabaseCurveStore):
        def put(self, key, values):
            gate.wait(5)
            super().put(key, values)

    layered = store.LayeredStore(Slow(db_url))
    v = np.array([0.25, 0.5])
    layered.put("slow", v)  # returns although the backing write is blocked
    assert np.array_equal(layered.get("slow"), v)
    assert DatabaseCurveStore(db_url).get("slow") is None
    assert layered.flush(timeout=0.05) is False
    gate.set()
    assert layered.flush(timeout=5)
    assert np.array_equal(DatabaseCurveStore(db_url).get("slow"), v)


def test_round_trip_is_exact_and_insert_if_absent(db_url):
    s = DatabaseCurveStore(db_url)
    assert s.get("nope") is None
    v = np.array([1e-300, 0.1, np.nextafter(0.3, 1), 2.5e-17])
    s.put("k", v)
    s.put("k", v * 2)  # a second put of the same key keeps the first (values are identical in practice)
    got = s.get("k")
    assert got.dtype == np.float64 and np.array_equal(got, v)


def test_a_new_process_reuses_the_stored_clone_curve(db_url, monkeypatch):
    install(db_url)
    n, eps0 = 54321, 0.9
    first = accountant.shuffle_rdp(n, eps0, accountant.DEFAULT_ORDERS, bound="clones")
    # a "restart": a fresh in-process layer over the same database (installing it finishes the
    # pending background writes of the first), and no way to recompute
    install(db_url)

    def boom(*_args, **_kwargs):
        raise AssertionError("the clone curve was recomputed")

    monkeypatch.setattr(B, "clone_rdp", boom)
    again = accountant.shuffle_rdp(n, eps0, accountant.DEFAULT_ORDERS, bound="clones")
    assert np.array_equal(first, again)


def test_serve_keeps_curves_across_a_restart(tmp_path):
    """SQLite: the curves live in a file of their own (serve.curves.db), off the ledger's write lock."""
    ledger = tmp_path / "serve.db"
    db = tmp_path / "serve.curves.db"
    body = {"events": [{"mechanism": "shuffle", "n": 98765, "epsilon0": 0.8, "count": 100}], "delta": 1e-8}
    with start_server({"DATABASE_URL": f"sqlite:///{ledger}"}) as srv:
        r1 = httpx.post(srv.url + "/v1/epsilon", json=body, timeout=60).json()
        # curves are written behind the answer (a background thread): give it a moment
        deadline = time.monotonic() + 10
        while True:
            rows = sqlite3.connect(db).execute("select key from accountant_curve_cache").fetchall()
            if (
                any(k.startswith("clones/") and "n=98765" in k for (k,) in rows)
                or time.monotonic() > deadline
            ):
                break
            time.sleep(0.05)
        assert any(k.startswith("clones/") and "n=98765" in k for (k,) in rows), rows
        time.sleep(0.3)  # (the refinement's curve too)
        rows = sqlite3.connect(db).execute("select key from accountant_curve_cache").fetchall()
        srv.restart()
        r2 = httpx.post(srv.url + "/v1/epsilon", json=body, timeout=60).json()
    assert r2["epsilon"] == r1["epsilon"] and r2["order"] == r1["order"]
    rows2 = sqlite3.connect(db).execute("select count(*) from accountant_curve_cache").fetchone()[0]
    assert rows2 == len(rows)  # nothing recomputed and stored again
    assert sqlite3.connect(ledger).execute("select count(*) from accountant_curve_cache").fetchone()[0] == 0
