"""Ledger endpoints in-process (TestClient), on SQLite and on PostgreSQL (TEST_POSTGRES_URL).

Admission is checked against an independent computation with the accountant's conversion, so a
wrong policy, a wrong sum or a partial charge makes these tests fail.
"""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import text

from tests.helpers import ledger as ls
from tests.helpers.ledger import ADMIN, ORDERS, PIPE, VIEW, curve, eps_declared, filter_B, shuffle

# fixtures
db_url, db, client = ls.db_url, ls.db, ls.client


def put(client, uid, eps=8.0, delta=1e-6, **kw):
    return client.put(
        f"/v1/users/{uid}", json={"budget": {"epsilon": eps, "delta": delta}, **kw}, headers=ADMIN
    )


def charge(client, users=None, event=None, key=None, cohort=None, headers=PIPE):
    body = {"event": event or shuffle()}
    if users is not None:
        body["users"] = users
    if cohort is not None:
        body["cohort"] = cohort
    if key is not None:
        body["idempotency_key"] = key
    return client.post("/v1/charges", json=body, headers=headers)


# ---------------------------------------------------------------------------------------------- users


def test_put_creates_then_updates_and_get_has_the_contract_fields(client):
    r = put(client, "u1")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["user_id"] == "u1" and body["policy"] == "declared"
    assert body["budget"] == {"epsilon": 8.0, "delta": 1e-6}
    r = put(client, "u1", eps=9.0)
    assert r.status_code == 200 and r.json()["budget"]["epsilon"] == 9.0
    g = client.get("/v1/users/u1", headers=VIEW)
    assert g.status_code == 200
    g = g.json()
    for field in ("user_id", "budget", "spent", "remaining_epsilon", "charges"):
        assert field in g
    assert set(g["spent"]) == {"epsilon", "order"}
    assert g["spent"]["epsilon"] == 0.0 and g["remaining_epsilon"] == 9.0 and g["charges"] == 0
    assert client.get("/v1/users/nobody", headers=VIEW).status_code == 404


def test_spent_is_epsilon_of_the_composed_curve(client):
    put(client, "a")
    ev1, ev2 = shuffle(10000, 1.0, 5), {"mechanism": "gaussian", "noise_multiplier": 3.0, "count": 2}
    assert charge(client, ["a"], ev1).status_code == 201
    assert charge(client, ["a"], ev2).status_code == 201
    g = client.get("/v1/users/a", headers=VIEW).json()
    expected = eps_declared(curve(ev1) + curve(ev2), 1e-6)
    assert g["spent"]["epsilon"] == pytest.approx(expected, rel=1e-12)
    assert g["remaining_epsilon"] == pytest.approx(8.0 - expected, rel=1e-12)
    assert g["charges"] == 2
    assert g["spent"]["order"] in ORDERS.tolist()


def test_declared_admits_exactly_up_to_the_budget(client):
    put(client, "a", eps=2.0)
    count = 1
    while eps_declared(curve(shuffle(10000, 1.0, count)), 1e-6) < 0.3:  # ~ 10–40 charges fit
        count *= 2
    ev = shuffle(10000, 1.0, count)
    c = curve(ev)
    total = np.zeros_like(c)
    admitted = 0
    for _ in range(200):
        r = charge(client, ["a"], ev)
        fits = eps_declared(total + c, 1e-6) <= 2.0
        if fits:
            assert r.status_code == 201, r.text
            total = total + c
            admitted += 1
        else:
            assert r.status_code == 409 and r.json()["status"] == "refused"
            assert r.json()["refused_users"] == ["a"]
            break
    else:
        pytest.fail("budget never ran out")
    assert admitted > 0
    g = client.get("/v1/users/a", headers=VIEW).json()
    assert g["charges"] == admitted and g["spent"]["epsilon"] <= 2.0


def test_filter_policy_uses_one_order_and_its_budget(client):
    # planned event → α_f is the ε-minimising order of that event at δ_B
    planned = shuffle(10000, 1.0, 50)
    r = put(client, "f", eps=3.0, delta=1e-6, policy="filter", planned_event=planned)
    assert r.status_code == 201, r.text
    info = r.json()["filter"]
    from accountant.conversion import epsilon_vector

    alpha = float(ORDERS[int(np.argmin(epsilon_vector(ORDERS, curve(planned), 1e-6)))])
    assert info["order"] == alpha
    assert info["order_budget"] == pytest.approx(filter_B(3.0, 1e-6, alpha), rel=1e-12)
    i = int(np.where(alpha == ORDERS)[0][0])
    # an event costing almost nothing at α_f but a lot elsewhere is admitted (only α_f counts) ...
    cheap_at_f = {
        "mechanism": "rdp_curve",
        "orders": ORDERS.tolist(),
        "rdp": [1e-9 if j == i else 50.0 for j in range(ORDERS.size)],
    }
    assert charge(client, ["f"], cheap_at_f).status_code == 201
    # ... and one exceeding B(α_f) at α_f is refused even though every other order has room
    B = info["order_budget"]
    over = {
        "mechanism": "rdp_curve",
        "orders": ORDERS.tolist(),
        "rdp": [B * 1.01 if j == i else 1e-6 for j in range(ORDERS.size)],
    }
    r = charge(client, ["f"], over)
    assert r.status_code == 409 and r.json()["refused_users"] == ["f"]
    # filling up to exactly B at α_f is admitted
    rest = {
        "mechanism": "rdp_curve",
        "orders": ORDERS.tolist(),
        "rdp": [B * 0.999 if j == i else 0.0 for j in range(ORDERS.size)],
    }
    assert charge(client, ["f"], rest).status_code == 201
    g = client.get("/v1/users/f", headers=VIEW).json()
    assert g["spent"]["order"] == alpha
    assert g["remaining_epsilon"] <= 3.0 - (3.0 - B) - B * 0.999 + 1e-9


def test_filter_with_given_order_and_invalid_budgets(client):
    r = put(client, "g", eps=4.0, policy="filter", filter_order=16.0)
    assert r.status_code == 201 and r.json()["filter"]["order"] == 16.0
    assert put(client, "h", policy="filter", filter_order=16.5).status_code == 422  # not a grid order
    r = put(client, "h", eps=0.1, delta=1e-10, policy="filter", filter_order=2.0)
    assert r.status_code == 422 and "B(α_f)" in r.json()["detail"]
    assert put(client, "h", policy="filter").status_code == 422  # neither order nor planned event
    assert put(client, "h", policy="declared", filter_order=16.0).status_code == 422
    assert put(client, "h", eps=-1.0).status_code == 422
    assert put(client, "h", delta=1.0).status_code == 422


# ---------------------------------------------------------------------------------------------- charges


def test_all_or_nothing_refusal_records_nothing(client):
    put(client, "rich", eps=50.0)
    put(client, "poor", eps=0.05)
    r = charge(client, ["rich", "poor"], shuffle(1000, 2.0, 10), key="k-1")
    assert r.status_code == 409
    body = r.json()
    assert body["status"] == "refused" and body["refused_users"] == ["poor"] and "detail" in body
    for u in ("rich", "poor"):
        g = client.get(f"/v1/users/{u}", headers=VIEW).json()
        assert g["charges"] == 0 and g["spent"]["epsilon"] == 0.0
        assert client.get(f"/v1/users/{u}/charges", headers=VIEW).json()["charges"] == []
    # a refused key is not burnt: after a budget raise the same request is admitted
    put(client, "poor", eps=50.0)
    assert charge(client, ["rich", "poor"], shuffle(1000, 2.0, 10), key="k-1").status_code == 201


def test_unknown_users_are_a_404_naming_them(client):
    put(client, "a")
    r = charge(client, ["a", "ghost1", "ghost2"])
    assert r.status_code == 404
    assert r.json()["unknown_users"] == ["ghost1", "ghost2"] and "ghost1" in r.json()["detail"]
    assert client.get("/v1/users/a", headers=VIEW).json()["charges"] == 0
    assert charge(client, cohort="no-such-cohort").status_code == 404


def test_idempotency_same_body_replays_different_body_conflicts(client):
    put(client, "a")
    put(client, "b")
    r1 = charge(client, ["a", "b"], shuffle(), key="job-17-round-3")
    assert r1.status_code == 201 and r1.json()["status"] == "admitted" and r1.json()["users"] == 2
    r2 = charge(client, ["a", "b"], shuffle(), key="job-17-round-3")
    assert (
        r2.status_code == 201 and r2.json()["charge_id"] == r1.json()["charge_id"] and r2.json()["replayed"]
    )
    assert client.get("/v1/users/a", headers=VIEW).json()["charges"] == 1
    r3 = charge(client, ["a"], shuffle(), key="job-17-round-3")
    assert r3.status_code == 409 and r3.json()["status"] == "conflict"
    assert client.get("/v1/users/a", headers=VIEW).json()["charges"] == 1


def test_charge_log_oldest_first_with_event_as_received_and_who(client):
    put(client, "a")
    evs = [shuffle(10000, 1.0, 1), {"mechanism": "laplace", "scale": 4.0}, shuffle(5000, 0.5, 2)]
    ids = [charge(client, ["a"], e, key=f"log-{i}").json()["charge_id"] for i, e in enumerate(evs)]
    body = client.get("/v1/users/a/charges", headers=VIEW).json()
    assert [c["charge_id"] for c in body["charges"]] == ids
    assert [c["event"] for c in body["charges"]] == evs
    assert all(c["charged_by"] == {"name": "pipeline-2", "role": "pipeline"} for c in body["charges"])
    assert "pipeline-key" not in str(body)
    page = client.get("/v1/users/a/charges?limit=1&offset=1", headers=VIEW).json()
    assert [c["charge_id"] for c in page["charges"]] == ids[1:2] and page["total"] == 3


def test_charge_records_are_immutable_in_the_database(client, db):
    put(client, "a")
    charge(client, ["a"])
    for stmt in ("UPDATE ledger_charges SET n_users = 5", "DELETE FROM ledger_charges"):
        with pytest.raises(Exception, match="immutable"), db.write() as s:
            s.execute(text(stmt))
    with db.read() as s:
        assert s.execute(text("SELECT n_users FROM ledger_charges")).scalar_one() == 1


def test_malformed_charges_are_422(client):
    put(client, "a")
    bad = [
        {"users": ["a"]},
        {"users": ["a"], "cohort": "c", "event": shuffle()},
        {"event": shuffle()},
        {"users": [], "event": shuffle()},
        {"users": ["a"], "event": {"mechanism": "shuffle", "n": "10", "epsilon0": 1.0}},
        {"users": ["a"], "event": {"mechanism": "warp", "n": 10}},
        {"users": ["a"], "event": shuffle(), "extra": 1},
    ]
    for b in bad:
        r = client.post("/v1/charges", json=b, headers=PIPE)
        assert r.status_code == 422, (b, r.text)
        assert "detail" in r.json()
    r = client.post(
        "/v1/charges",
        content=b'{"users": ["a"], "event": {"mechanism": "shuffle", "n": 10, "epsilon0": NaN}}',
        headers={**PIPE, "content-type": "application/json"},
    )
    assert r.status_code == 422
    assert client.get("/v1/users/a", headers=VIEW).json()["charges"] == 0


# ---------------------------------------------------------------------------------------------- auth


def test_roles_and_keys(client):
    assert client.get("/v1/users/x").status_code == 401
    r = client.get("/v1/users/x", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401 and "wrong" not in r.text
    assert client.get("/v1/users/x", headers={"Authorization": "Basic abc"}).status_code == 401
    body = {"budget": {"epsilon": 1.0, "delta": 1e-6}}
    assert client.put("/v1/users/x", json=body, headers=PIPE).status_code == 403
    assert client.put("/v1/users/x", json=body, headers=VIEW).status_code == 403
    assert client.put("/v1/users/x", json=body, headers=ADMIN).status_code == 201
    for h in (ADMIN, PIPE, VIEW):
        assert client.get("/v1/users/x", headers=h).status_code == 200
        assert client.get("/v1/users/x/charges", headers=h).status_code == 200
        assert client.get("/v1/dashboard/nearest-exhaustion", headers=h).status_code == 200
    assert charge(client, ["x"], headers=VIEW).status_code == 403
    assert charge(client, ["x"], headers=PIPE).status_code == 201
    assert charge(client, ["x"], headers=ADMIN).status_code == 201
    assert client.post("/v1/cohorts", json={"cohort_id": "c"}, headers=PIPE).status_code == 403
    assert client.post("/v1/cohorts", json={"cohort_id": "c"}, headers=VIEW).status_code == 403
    assert client.post("/v1/cohorts", json={"cohort_id": "c"}, headers=ADMIN).status_code == 201
    assert client.post("/v1/cohorts/c/members", json={"users": ["x"]}, headers=PIPE).status_code == 403
    assert (
        client.post(
            "/v1/users/bulk", json={"users": ["y"], "budget": body["budget"]}, headers=PIPE
        ).status_code
        == 403
    )
    assert client.get("/v1/cohorts/c", headers=VIEW).status_code == 200
    # the compute endpoints need no key
    assert client.post("/v1/epsilon", json={"events": [shuffle()], "delta": 1e-6}).status_code == 200


# ---------------------------------------------------------------------------------------------- cohorts


def test_cohort_join_leave_windows(client):
    for u in ("early", "late", "leaver"):
        put(client, u, eps=20.0)
    assert client.post("/v1/cohorts", json={"cohort_id": "pop"}, headers=ADMIN).status_code == 201
    assert client.post("/v1/cohorts", json={"cohort_id": "pop"}, headers=ADMIN).status_code == 409
    r = client.post("/v1/cohorts/pop/members", json={"users": ["early", "leaver"]}, headers=ADMIN)
    assert r.status_code == 200 and r.json()["added"] == 2
    ev = {"mechanism": "subsampled_shuffle", "n": 1000, "k": 50, "epsilon0": 1.0, "count": 10}
    c = curve(ev)
    r = charge(client, cohort="pop", event=ev, key="round-1")
    assert r.status_code == 201 and r.json()["users"] == 2 and r.json()["cohort_round"] == 1
    client.post("/v1/cohorts/pop/members", json={"users": ["late"]}, headers=ADMIN)
    assert charge(client, cohort="pop", event=ev).json()["users"] == 3
    client.post("/v1/cohorts/pop/members/remove", json={"users": ["leaver"]}, headers=ADMIN)
    assert charge(client, cohort="pop", event=ev).json()["users"] == 2
    expected = {"early": 3, "late": 2, "leaver": 2}
    for u, n in expected.items():
        g = client.get(f"/v1/users/{u}", headers=VIEW).json()
        assert g["charges"] == n, u
        assert g["spent"]["epsilon"] == pytest.approx(eps_declared(n * c, 1e-6), rel=1e-9)
        log = client.get(f"/v1/users/{u}/charges", headers=VIEW).json()
        assert len(log["charges"]) == n and all(x["cohort"] == "pop" for x in log["charges"])
        audit = client.get(f"/v1/users/{u}/audit", headers=VIEW).json()
        assert audit["running_not_below_recomputed"] and audit["charges_in_log"] == n
        assert audit["max_relative_excess"] < 1e-12
    # rejoin: charged again from the next round on, history kept
    client.post("/v1/cohorts/pop/members", json={"users": ["leaver"]}, headers=ADMIN)
    charge(client, cohort="pop", event=ev)
    assert client.get("/v1/users/leaver", headers=VIEW).json()["charges"] == 3
    hist = client.get("/v1/users/leaver/cohorts", headers=VIEW).json()["memberships"]
    assert [(m["joined_after_round"], m["left_after_round"]) for m in hist] == [(0, 2), (3, None)]
    members = client.get("/v1/cohorts/pop/members?history=true", headers=VIEW).json()["members"]
    assert len(members) == 4
    h = client.get("/v1/cohorts/pop/history?delta=1e-6", headers=VIEW).json()
    assert h["rounds"] == 4 and h["points"][-1]["spent_epsilon"] == pytest.approx(eps_declared(4 * c, 1e-6))


def test_cohort_charge_is_all_or_nothing(client):
    put(client, "big", eps=100.0)
    put(client, "small", eps=0.3)
    client.post("/v1/cohorts", json={"cohort_id": "c"}, headers=ADMIN)
    client.post("/v1/cohorts/c/members", json={"users": ["big", "small"]}, headers=ADMIN)
    r = charge(client, cohort="c", event=shuffle(1000, 2.0, 5))
    assert r.status_code == 409 and r.json()["refused_users"] == ["small"] and r.json()["refused_count"] == 1
    assert client.get("/v1/cohorts/c", headers=VIEW).json()["rounds"] == 0
    assert client.get("/v1/users/big", headers=VIEW).json()["charges"] == 0


def test_large_cohort_is_one_class(client, db):
    budget = {"epsilon": 8.0, "delta": 1e-6}
    r = client.post(
        "/v1/users/bulk", json={"id_range": {"prefix": "d", "count": 5000}, "budget": budget}, headers=ADMIN
    )
    assert r.status_code == 201 and r.json()["created"] == 5000
    r = client.post("/v1/users/bulk", json={"users": ["d1", "new1"], "budget": budget}, headers=ADMIN)
    assert r.status_code == 409 and r.json()["existing_users"] == ["d1"]
    r = client.post(
        "/v1/users/bulk",
        json={"users": ["d1", "new1"], "budget": budget, "on_conflict": "skip"},
        headers=ADMIN,
    )
    assert r.json() == {"created": 1, "skipped": 1, "requested": 2}
    client.post("/v1/cohorts", json={"cohort_id": "pop"}, headers=ADMIN)
    client.post("/v1/cohorts/pop/members", json={"id_range": {"prefix": "d", "count": 5000}}, headers=ADMIN)
    for _ in range(3):
        assert charge(client, cohort="pop", event=shuffle(5000, 1.0)).json()["users"] == 5000
    with db.read() as s:
        n_classes = s.execute(text("SELECT count(*) FROM ledger_classes")).scalar_one()
        n_charge_users = s.execute(text("SELECT count(*) FROM ledger_charge_users")).scalar_one()
    assert n_classes == 2  # the 5,000 members, and new1 (the class of the joined users moved in place)
    assert n_charge_users == 0  # cohort rounds write no per-user rows
    assert client.get("/v1/users/d4321", headers=VIEW).json()["charges"] == 3
    assert client.get("/v1/users/new1", headers=VIEW).json()["charges"] == 0


def test_nearest_exhaustion_and_history(client):
    put(client, "a", eps=1.0)
    put(client, "b", eps=10.0)
    put(client, "c", eps=5.0)
    for _ in range(3):
        charge(client, ["a", "b", "c"], shuffle(10000, 1.0, 2))
    users = client.get("/v1/dashboard/nearest-exhaustion?limit=2", headers=VIEW).json()["users"]
    assert [u["user_id"] for u in users] == ["a", "c"]
    h = client.get("/v1/users/a/history", headers=VIEW).json()
    eps = [p["spent_epsilon"] for p in h["points"]]
    assert len(eps) == 3 and eps == sorted(eps)
    assert eps[-1] == pytest.approx(client.get("/v1/users/a", headers=VIEW).json()["spent"]["epsilon"])


def test_openapi_documents_the_ledger(client):
    spec = client.get("/openapi.json").json()
    for path in (
        "/v1/users/{user_id}",
        "/v1/charges",
        "/v1/users/{user_id}/charges",
        "/v1/cohorts",
        "/v1/cohorts/{cohort_id}/members",
        "/v1/users/bulk",
        "/v1/dashboard/nearest-exhaustion",
    ):
        assert path in spec["paths"], path
    post = spec["paths"]["/v1/charges"]["post"]
    assert {"201", "401", "403", "404", "409", "422"} <= set(post["responses"])
    assert "leak nothing" in post["description"].lower()


def test_a_new_order_grid_carries_running_sums_over_as_upper_bounds(client, db, monkeypatch):
    from app.ledger import curves as cv
    from app.ledger.service import ensure_grid

    put(client, "a", eps=8.0)
    put(client, "f", eps=8.0, policy="filter", filter_order=16.0)
    ev = {"mechanism": "gaussian", "noise_multiplier": 3.0}
    assert charge(client, ["a", "f"], ev).status_code == 201
    old = {u: client.get(f"/v1/users/{u}", headers=VIEW).json() for u in ("a", "f")}
    new_orders = np.unique(np.concatenate([ORDERS[::3], [16.0, 10000.0]]))
    monkeypatch.setattr(cv, "ORDERS", new_orders)
    monkeypatch.setattr(cv, "GRID_VERSION", 2)
    db.run_write(ensure_grid)
    for u in ("a", "f"):
        g = client.get(f"/v1/users/{u}", headers=VIEW).json()
        assert g["grid_version"] == 2 and g["charges"] == 1
        assert g["spent"]["epsilon"] >= old[u]["spent"]["epsilon"] - 1e-12  # coarser grid: never less
        assert g["spent"]["epsilon"] <= old[u]["spent"]["epsilon"] * 1.2
    assert charge(client, ["a", "f"], ev).status_code == 201
    with db.read() as s:
        assert s.execute(text("SELECT count(*) FROM ledger_order_grids")).scalar_one() == 2
        assert sorted(s.execute(text("SELECT grid_version FROM ledger_charges")).scalars()) == [1, 2]
    audit = client.get("/v1/users/a/audit", headers=VIEW).json()
    assert audit["running_not_below_recomputed"] and audit["charges_in_log"] == 2


def test_ids_that_could_not_be_addressed_in_a_path_are_refused_on_creation(client):
    """Regression (red-team): bulk creation and POST /v1/cohorts accepted ids with '/', which no
    /v1/users/{user_id} or /v1/cohorts/{cohort_id} request can name (404 'Not Found' forever)."""
    budget = {"epsilon": 8.0, "delta": 1e-6}
    for body in (
        {"users": ["ok", "s/l"], "budget": budget},
        {"id_range": {"prefix": "a/", "count": 2}, "budget": budget},
    ):
        r = client.post("/v1/users/bulk", json=body, headers=ADMIN)
        assert r.status_code == 422, r.text
    assert client.get("/v1/users/ok", headers=VIEW).status_code == 404  # nothing was created
    r = client.post("/v1/cohorts", json={"cohort_id": "c/d"}, headers=ADMIN)
    assert r.status_code == 422, r.text
    # every id that can be created can be read back through its path
    odd = ["a b", "😀", "a?b#c", "..", "x" * 256]  # ("%2F" works over HTTP; TestClient decodes paths twice)
    r = client.post("/v1/users/bulk", json={"users": odd, "budget": budget}, headers=ADMIN)
    assert r.status_code == 201, r.text
    from urllib.parse import quote

    for uid in odd:
        g = client.get("/v1/users/" + quote(uid, safe="").replace(".", "%2E"), headers=VIEW)
        assert g.status_code == 200 and g.json()["user_id"] == uid, (uid, g.text)


def test_filter_planned_event_that_costs_nothing_picks_an_order_with_room(client):
    """Regression (red-team): a planned event with a zero curve (pure_dp ε = 0) tied at ε = 0 on every
    order, the first grid order (1.1) won and its B(α_f) < 0 made PUT a 422 that told the user to
    'choose another order' although they had not chosen one."""
    r = put(
        client,
        "z",
        eps=4.0,
        delta=1e-6,
        policy="filter",
        planned_event={"mechanism": "pure_dp", "epsilon": 0.0},
    )
    assert r.status_code == 201, r.text
    info = r.json()["filter"]
    assert info["order_budget"] == max(filter_B(4.0, 1e-6, a) for a in ORDERS)


def test_a_fresh_filter_user_has_spent_nothing_even_at_a_tiny_delta(client):
    """Regression (red-team): with δ_B = 1e-300 a filter user with no charges showed spent.epsilon ≈ 6904."""
    r = put(client, "t", eps=1e6, delta=1e-300, policy="filter", filter_order=1.1)
    assert r.status_code == 201, r.text
    for body in (r.json(), client.get("/v1/users/t", headers=VIEW).json()):
        assert body["spent"]["epsilon"] == 0.0 and body["remaining_epsilon"] == 1e6
