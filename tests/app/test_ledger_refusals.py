"""Refusals over real HTTP (a ``serve`` process), on SQLite and PostgreSQL: the 409 body says what
the charge would have cost and what each refused user has left; each refused request is recorded
for the summary and its timeline, never as a charge, and a failure to record it does not change
the refusal. The SDK's list/summary methods and ``BudgetExceeded`` fields. Listing speed at 10⁴ users.

Expected costs are computed here from the accountant's curves (tests/helpers/ledger.py), not by the ledger.
"""

from __future__ import annotations

import math
import random
import time

import httpx
import numpy as np
import pytest
from sqlalchemy import create_engine, text

from accountant.conversion import epsilon_vector
from app.db.session import normalize_url
from privacy_accountant import AccountantClient, BudgetExceeded
from tests.helpers import ledger as ls
from tests.helpers.ledger import ADMIN, KEYS_ENV, ORDERS, PIPE, VIEW, curve, eps_declared
from tests.helpers.server import start_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=ls.BACKENDS)
def server(request, tmp_path_factory):
    if request.param == "sqlite":
        db_url = f"sqlite:///{tmp_path_factory.mktemp('refusals')}/ledger.db"
    else:
        db_url = ls.pg_test_url()
        ls.truncate_pg(db_url)
    env = {"DATABASE_URL": db_url, "ACCOUNTANT_API_KEYS": KEYS_ENV, "ACCOUNTANT_LOG_LEVEL": "WARNING"}
    with start_server(env) as srv:
        srv.db_url = db_url
        with httpx.Client(base_url=srv.url, timeout=120) as c:
            srv.http = c
            yield srv


def _put(c, uid, eps, delta, **kw):
    r = c.put(f"/v1/users/{uid}", json={"budget": {"epsilon": eps, "delta": delta}, **kw}, headers=ADMIN)
    assert r.status_code == 201, r.text


def _summary(c) -> dict:
    r = c.get("/v1/summary", headers=VIEW)
    assert r.status_code == 200, r.text
    return r.json()


def _filter_eps(curve_: np.ndarray, delta: float, alpha: float) -> float:
    i = int(np.where(alpha == ORDERS)[0][0])
    return max(0.0, float(epsilon_vector(ORDERS[i : i + 1], curve_[i : i + 1], delta)[0]))


def test_a_refusal_says_what_the_charge_costs_and_what_each_user_has_left(server):
    c = server.http
    _put(c, "r-d1", 1.0, 1e-6)
    _put(c, "r-d2", 2.0, 1e-9)
    _put(c, "r-f", 3.0, 1e-6, policy="filter", filter_order=16.0)
    _put(c, "r-rich", 1e5, 1e-6)
    small = {"mechanism": "gaussian", "noise_multiplier": 6.0}
    assert (
        c.post(
            "/v1/charges", json={"users": ["r-d1", "r-d2", "r-f"], "event": small}, headers=PIPE
        ).status_code
        == 201
    )
    before = {u: c.get(f"/v1/users/{u}", headers=VIEW).json() for u in ("r-d1", "r-d2", "r-f", "r-rich")}
    s0 = _summary(c)

    ev = {"mechanism": "gaussian", "noise_multiplier": 0.8, "count": 3}
    r = c.post("/v1/charges", json={"users": ["r-rich", "r-f", "r-d2", "r-d1"], "event": ev}, headers=PIPE)
    assert r.status_code == 409, r.text
    body = r.json()
    assert body["status"] == "refused" and body["refused_users"] == ["r-f", "r-d2", "r-d1"]
    assert body["refused_count"] == 3 and "nothing was recorded" in body["detail"]
    cost = curve(ev)
    expected = {
        "r-d1": eps_declared(cost, 1e-6),
        "r-d2": eps_declared(cost, 1e-9),
        "r-f": _filter_eps(cost, 1e-6, 16.0),
    }
    assert set(body["cost"]["by_user"]) == set(expected)
    for u, e in expected.items():
        assert body["cost"]["by_user"][u] == pytest.approx(e, rel=1e-12), u
        assert body["remaining"][u] == before[u]["remaining_epsilon"], u
        assert e > before[u]["remaining_epsilon"]  # why each one was refused
    assert body["cost"]["epsilon"] == max(body["cost"]["by_user"].values())
    assert set(body["remaining"]) == set(expected)

    # nothing was charged to anyone; the refused request was counted, not as a charge
    for u, v in before.items():
        assert c.get(f"/v1/users/{u}", headers=VIEW).json() == v
    s1 = _summary(c)
    assert s1["refusals"] == s0["refusals"] + 1 and s1["charges"] == s0["charges"]
    assert sum(b["refused"] for b in s1["timeline"]) == sum(b["refused"] for b in s0["timeline"]) + 1
    assert sum(b["admitted"] for b in s1["timeline"]) == sum(b["admitted"] for b in s0["timeline"])


def test_cohort_refusal_lists_at_most_1000_users_and_counts_all(server):
    c = server.http
    budget = {"epsilon": 0.5, "delta": 1e-6}
    assert (
        c.post(
            "/v1/users/bulk",
            json={"id_range": {"prefix": "rc-", "count": 1500}, "budget": budget},
            headers=ADMIN,
        ).status_code
        == 201
    )
    assert c.post("/v1/cohorts", json={"cohort_id": "rc"}, headers=ADMIN).status_code == 201
    assert (
        c.post(
            "/v1/cohorts/rc/members", json={"id_range": {"prefix": "rc-", "count": 1500}}, headers=ADMIN
        ).status_code
        == 200
    )
    s0 = _summary(c)
    ev = {"mechanism": "gaussian", "noise_multiplier": 1.0}
    r = c.post("/v1/charges", json={"cohort": "rc", "event": ev}, headers=PIPE)
    assert r.status_code == 409, r.text
    body = r.json()
    assert body["refused_count"] == 1500 and len(body["refused_users"]) == 1000
    assert set(body["cost"]["by_user"]) == set(body["remaining"]) == set(body["refused_users"])
    e = eps_declared(curve(ev), 1e-6)
    assert all(v == pytest.approx(e, rel=1e-12) for v in body["cost"]["by_user"].values())
    assert body["cost"]["epsilon"] == pytest.approx(e, rel=1e-12)
    assert all(v == 0.5 for v in body["remaining"].values())
    s1 = _summary(c)
    assert s1["refusals"] == s0["refusals"] + 1 and s1["charges"] == s0["charges"]
    assert c.get("/v1/cohorts/rc", headers=VIEW).json()["rounds"] == 0


def test_conflicts_and_unknown_users_are_not_refusals(server):
    c = server.http
    _put(c, "k-1", 10.0, 1e-6)
    ev = {"mechanism": "gaussian", "noise_multiplier": 10.0}
    s0 = _summary(c)
    assert (
        c.post(
            "/v1/charges", json={"users": ["k-1"], "event": ev, "idempotency_key": "k-1-a"}, headers=PIPE
        ).status_code
        == 201
    )
    r = c.post(
        "/v1/charges",
        json={"users": ["k-1"], "event": {**ev, "count": 2}, "idempotency_key": "k-1-a"},
        headers=PIPE,
    )
    assert r.status_code == 409 and r.json()["status"] == "conflict" and r.json()["detail"]
    assert (
        c.post("/v1/charges", json={"users": ["k-1", "nobody"], "event": ev}, headers=PIPE).status_code == 404
    )
    s1 = _summary(c)
    assert s1["refusals"] == s0["refusals"] and s1["charges"] == s0["charges"] + 1


def test_a_refusal_that_cannot_be_recorded_is_still_the_same_refusal(server):
    """The refusals table made unusable underneath the running server: the 409 is unchanged and
    nothing is charged."""
    c = server.http
    _put(c, "x-1", 0.5, 1e-6)
    ev = {"mechanism": "gaussian", "noise_multiplier": 1.0}
    first = c.post("/v1/charges", json={"users": ["x-1"], "event": ev}, headers=PIPE)
    assert first.status_code == 409
    eng = create_engine(normalize_url(server.db_url))
    try:
        with eng.begin() as conn:
            conn.execute(text("ALTER TABLE ledger_refusals RENAME TO ledger_refusals_away"))
        try:
            r = c.post("/v1/charges", json={"users": ["x-1"], "event": ev}, headers=PIPE)
            assert r.status_code == 409, r.text
            strip = ("request_id",)
            assert {k: v for k, v in r.json().items() if k not in strip} == {
                k: v for k, v in first.json().items() if k not in strip
            }
            assert c.get("/v1/users/x-1", headers=VIEW).json()["charges"] == 0
        finally:
            with eng.begin() as conn:
                conn.execute(text("ALTER TABLE ledger_refusals_away RENAME TO ledger_refusals"))
    finally:
        eng.dispose()
    assert _summary(c)["refusals"] >= 1  # readable again


def test_sdk_lists_summarises_and_reports_refusal_costs(server):
    admin = AccountantClient(server.url, api_key="admin-key-0123456789")
    viewer = AccountantClient(server.url, api_key="viewer-key-0123456789")
    try:
        admin.put_user("sdk-a", {"epsilon": 0.3, "delta": 1e-6})
        admin.put_user("sdk-b", {"epsilon": 100.0, "delta": 1e-6})
        ev = {"mechanism": "gaussian", "noise_multiplier": 2.0}
        with pytest.raises(BudgetExceeded) as exc:
            admin.charge(ev, ["sdk-a", "sdk-b"])
        e = exc.value
        assert e.refused_users == ["sdk-a"] and e.refused_count == 1 and e.remaining == {"sdk-a": 0.3}
        assert e.cost["by_user"]["sdk-a"] == pytest.approx(eps_declared(curve(ev), 1e-6), rel=1e-12)
        page = viewer.list_users(prefix="sdk-", sort="-remaining", limit=1)
        assert page["total"] == 2 and [u["user_id"] for u in page["items"]] == ["sdk-b"]
        assert viewer.list_users(prefix="sdk-", offset=1)["items"][0]["user_id"] == "sdk-b"
        assert viewer.list_users(policy="filter", prefix="sdk-")["total"] == 0
        assert viewer.list_users(prefix="sdk-", remaining_below=1.0)["items"][0]["user_id"] == "sdk-a"
        admin.create_cohort("sdk-c")
        assert [co["cohort_id"] for co in viewer.list_cohorts(prefix="sdk-")["items"]] == ["sdk-c"]
        s = viewer.summary()
        assert s["refusals"] >= 1 and len(s["timeline"]) == 48
        assert len(viewer.summary(bucket="day", buckets=7)["timeline"]) == 7
    finally:
        admin.close()
        viewer.close()


def test_listing_ten_thousand_users_stays_fast(server):
    """Sanity, not a benchmark: 10⁴ users fragmented into many budget classes by explicit charges;
    every sort and filter answers a deep page quickly and consistently."""
    c = server.http
    n = 10_000
    budget = {"epsilon": 8.0, "delta": 1e-6}
    assert (
        c.post(
            "/v1/users/bulk",
            json={"id_range": {"prefix": "big-", "count": n}, "budget": budget},
            headers=ADMIN,
        ).status_code
        == 201
    )
    rng = random.Random(7)
    ev = {"mechanism": "gaussian", "noise_multiplier": 30.0}
    for _ in range(40):
        users = [f"big-{i}" for i in rng.sample(range(n), 60)]
        assert c.post("/v1/charges", json={"users": users, "event": ev}, headers=PIPE).status_code == 201
    timings = {}
    for sort in ("user_id", "remaining", "-remaining", "spent", "-spent", "last_charge", "-last_charge"):
        for params in ({}, {"prefix": "big-5"}, {"remaining_below": 7.99}):
            best = math.inf
            for _ in range(2):
                t0 = time.perf_counter()
                r = c.get(
                    "/v1/users", params={"sort": sort, "limit": 100, "offset": 900, **params}, headers=VIEW
                )
                best = min(best, time.perf_counter() - t0)
                assert r.status_code == 200, r.text
            body = r.json()
            if not params:
                assert body["total"] >= n and len(body["items"]) == 100
            timings[(sort, tuple(params))] = best
    print("listing timings (s):", {f"{k[0]}{list(k[1])}": round(v, 4) for k, v in timings.items()})
    assert max(timings.values()) < 2.0, timings
