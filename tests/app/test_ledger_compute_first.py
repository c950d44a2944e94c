"""Issue 25 item 1: a charge computes its event's cost before its write turn, under the computations'
admission, work limit and deadline — the write turn only compares and records.

Before: ``POST /v1/charges`` computed a never-seen heavy event's curve with no work limit while
holding the ledger's write slot (27–71 % of light charges then waited past the database limit)."""

from __future__ import annotations

import time

import pytest

from app.api.routes import ledger as routes
from tests.helpers import ledger as ls
from tests.helpers.ledger import ADMIN, PIPE, shuffle

db_url, db, client = ls.db_url, ls.db, ls.client

HEAVY = {
    "mechanism": "subsampled",
    "n": 10**12,
    "k": 10**8,
    "inner": [{"mechanism": "shuffle", "epsilon0": 0.5 + i / 1000} for i in range(100)],
}


def _user(client, uid="alice"):
    r = client.put(f"/v1/users/{uid}", json={"budget": {"epsilon": 50.0, "delta": 1e-6}}, headers=ADMIN)
    assert r.status_code in (200, 201), r.text


def test_a_too_heavy_charge_is_a_fast_400_naming_the_limit(client):
    _user(client)
    t0 = time.monotonic()
    r = client.post("/v1/charges", json={"users": ["alice"], "event": HEAVY}, headers=PIPE)
    assert r.status_code == 400, r.text
    assert "work estimate" in r.json()["detail"] and "limit" in r.json()["detail"]
    assert time.monotonic() - t0 < 5.0
    # nothing was recorded
    assert client.get("/v1/users/alice/charges", headers=ADMIN).json()["total"] == 0


def test_the_cost_is_computed_before_the_write_turn(client, db, monkeypatch):
    """While the event's cost is computed, the ledger's write gate is free (no write turn held)."""
    _user(client)
    gate = client.app.state.services.write_gate(db)
    held_while_computing: list[int] = []
    real = routes.event_cost

    def spy(event, max_mass):
        held_while_computing.append(gate.held)
        return real(event, max_mass)

    monkeypatch.setattr(routes, "event_cost", spy)
    r = client.post("/v1/charges", json={"users": ["alice"], "event": shuffle(count=3)}, headers=PIPE)
    assert r.status_code == 201, r.text
    assert held_while_computing == [0]


@pytest.mark.parametrize("planned", [True, False])
def test_a_planned_budget_is_computed_before_the_write_turn_too(client, db, monkeypatch, planned):
    gate = client.app.state.services.write_gate(db)
    seen: list[int] = []
    real = routes._make_budget

    def spy(*args):
        seen.append(gate.held)
        return real(*args)

    monkeypatch.setattr(routes, "_make_budget", spy)
    body = {"budget": {"epsilon": 4.0, "delta": 1e-6}, "policy": "filter"}
    body.update({"planned_event": shuffle(count=10)} if planned else {"filter_order": 8.0})
    r = client.put("/v1/users/bob", json=body, headers=ADMIN)
    assert r.status_code == 201, r.text
    assert seen == [0]
