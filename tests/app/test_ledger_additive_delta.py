"""The ledger's budget check for charges with an additive δ (``zeta``) and (ε, δ) releases
(``approx_dp``), on SQLite and PostgreSQL.

Expected values are computed independently where a closed form exists (the RDP conversion at
δ_B − Σζ, basic composition) and otherwise with the accountant's one combination function on the
list of charged events — the ledger must answer exactly what ``/v1/epsilon`` answers for the same
events on its grid, since both call it.
"""

from __future__ import annotations

import numpy as np
import pytest

import accountant
from accountant.conversion import epsilon_from_rdp
from app.ledger import curves as cv
from tests.helpers import ledger as ls
from tests.helpers.ledger import ADMIN, ORDERS, PIPE, VIEW, curve

db_url, db, client = ls.db_url, ls.db, ls.client

DELTA = 1e-6


def put(client, uid, eps=8.0, delta=DELTA, **kw):
    r = client.put(f"/v1/users/{uid}", json={"budget": {"epsilon": eps, "delta": delta}, **kw}, headers=ADMIN)
    assert r.status_code in (200, 201), r.text
    return r


def charge(client, users=None, event=None, cohort=None):
    body = {"event": event}
    if users is not None:
        body["users"] = users
    if cohort is not None:
        body["cohort"] = cohort
    return client.post("/v1/charges", json=body, headers=PIPE)


def spent(client, u) -> float:
    return client.get(f"/v1/users/{u}", headers=VIEW).json()["spent"]["epsilon"]


def test_zeta_is_paid_in_delta_and_refused_when_it_reaches_delta(client):
    put(client, "z")
    ev = {"mechanism": "gaussian", "noise_multiplier": 4.0, "zeta": 2e-7}
    c = curve({"mechanism": "gaussian", "noise_multiplier": 4.0})
    for k in range(1, 5):
        assert charge(client, ["z"], ev).status_code == 201
        expected = epsilon_from_rdp(ORDERS, k * c, DELTA - k * 2e-7)[0]  # the conversion at δ − Σζ
        assert spent(client, "z") == pytest.approx(expected, rel=1e-9)
        assert spent(client, "z") >= expected * (1 - 1e-12)
    r = charge(client, ["z"], ev)  # Σζ would be 5 × 2e-7 = δ: no ε exists
    assert r.status_code == 409, r.text
    assert r.json()["cost"]["epsilon"] is not None  # the event alone (ζ = 2e-7 < δ) has a cost
    r = charge(client, ["z"], {**ev, "zeta": 1e-6})  # ζ alone reaches δ: refused, its cost has no ε
    assert r.status_code == 409 and r.json()["cost"]["epsilon"] is None
    assert client.get("/v1/users/z", headers=VIEW).json()["charges"] == 4


def test_approx_releases_match_the_accountant_and_basic_composition(client):
    put(client, "a", eps=20.0)
    events = [
        {"mechanism": "gaussian", "noise_multiplier": 3.0, "count": 5},
        {"mechanism": "approx_dp", "epsilon": 0.5, "delta": 1e-8, "count": 4},
        {"mechanism": "approx_dp", "epsilon": 0.1, "delta": 0.0, "count": 10},
        {"mechanism": "laplace", "scale": 5.0, "zeta": 1e-8},
    ]
    for i, ev in enumerate(events):
        assert charge(client, ["a"], ev).status_code == 201, ev
        got = spent(client, "a")
        same = accountant.epsilon_guarantee(events[: i + 1], DELTA, ORDERS, refine=False).epsilon
        assert got == pytest.approx(same, rel=1e-9)
    # never above basic composition of the parts (a valid bound the combination must beat)
    rdp = curve(events[0]) + curve({"mechanism": "laplace", "scale": 5.0})
    s_delta, s_eps = 4e-8, 0.5 * 4 + 0.1 * 10
    basic = epsilon_from_rdp(ORDERS, rdp, DELTA - 1e-8 - s_delta)[0] + s_eps
    assert spent(client, "a") <= basic * (1 + 1e-12)
    audit = client.get("/v1/users/a/audit", headers=VIEW).json()
    assert audit["running_not_below_recomputed"] and audit["charges_in_log"] == 4
    assert len(audit["running"]) == ORDERS.size  # reported on the grid


def test_the_filter_admits_rdp_charges_only(client):
    put(client, "f", eps=8.0, policy="filter", filter_order=16.0)
    put(client, "d")
    for ev in (
        {"mechanism": "approx_dp", "epsilon": 0.1, "delta": 1e-9},
        {"mechanism": "gaussian", "noise_multiplier": 3.0, "zeta": 1e-9},
    ):
        r = charge(client, ["d", "f"], ev)
        assert r.status_code == 422 and "filter" in r.json()["detail"]
    assert client.get("/v1/users/d", headers=VIEW).json()["charges"] == 0  # all or nothing
    r = client.put(
        "/v1/users/g",
        json={
            "budget": {"epsilon": 8.0, "delta": DELTA},
            "policy": "filter",
            "planned_event": {"mechanism": "approx_dp", "epsilon": 0.1, "delta": 1e-9},
        },
        headers=ADMIN,
    )
    assert r.status_code == 422 and "filter" in r.json()["detail"]


def test_cohort_rounds_with_approx_releases(client):
    for u in ("p", "q"):
        put(client, u, eps=5.0)
    assert client.post("/v1/cohorts", json={"cohort_id": "c"}, headers=ADMIN).status_code == 201
    client.post("/v1/cohorts/c/members", json={"users": ["p", "q"]}, headers=ADMIN)
    ev = {"mechanism": "approx_dp", "epsilon": 0.2, "delta": 1e-8, "count": 3}
    n = 0
    while charge(client, cohort="c", event=ev).status_code == 201:
        n += 1
        assert n < 100
    expected = accountant.epsilon_guarantee([{**ev, "count": 3 * n}], DELTA, ORDERS, refine=False).epsilon
    assert spent(client, "p") == pytest.approx(expected, rel=1e-9) and expected <= 5.0
    over = accountant.epsilon_guarantee([{**ev, "count": 3 * (n + 1)}], DELTA, ORDERS, refine=False).epsilon
    assert over > 5.0  # the refused round really did not fit


def test_stored_vectors_without_side_slots_read_as_zero():
    c = curve({"mechanism": "gaussian", "noise_multiplier": 2.0})
    v = cv.vector_from_bytes(cv.to_bytes(c))
    assert v.size == ORDERS.size + cv.SIDE and not cv.has_side(v) and np.array_equal(cv.rdp_part(v), c)
    acc = accountant.account([{"mechanism": "approx_dp", "epsilon": 0.3, "delta": 1e-9, "count": 2}], ORDERS)
    w = cv.vector_of(acc)
    assert cv.has_side(w)
    both = cv.add_up(cv.add_up(v, w), w)
    assert cv.account(both).approx.count == 4 and cv.account(both).approx.eps_max == 0.3
    assert cv.account(both).approx.eps_sum >= 1.2
