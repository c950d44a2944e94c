"""In-process (TestClient) tests of the computation endpoints' details, and the odd inputs a new user
sends: each must be a clear 4xx with a JSON ``detail``, never a 5xx, a NaN or a hang."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient

import accountant
from app.core import compute
from app.main import create_app

SHUFFLE = {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100}
SMALL = {"mechanism": "shuffle", "n": 1000, "epsilon0": 1.0, "count": 10}  # exact clone bound: fast


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(), raise_server_exceptions=False) as c:
        yield c


def _no_nan(text: str):
    def bad(c):
        raise AssertionError(f"{c} in response: {text[:300]}")

    return json.loads(text, parse_constant=bad)


def _clear_4xx(r, status=None):
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:500])
    if status is not None:
        assert r.status_code == status, (r.status_code, r.text[:500])
    body = _no_nan(r.text)
    assert body["detail"], body
    return body


# ------------------------------------------------------------------------------------- odd inputs
ODD_JSON = [
    ("string for n", "/v1/rdp", {"event": {"mechanism": "shuffle", "n": "1000", "epsilon0": 1.0}}, 422),
    (
        "string for epsilon0",
        "/v1/rdp",
        {"event": {"mechanism": "shuffle", "n": 1000, "epsilon0": "0.5"}},
        422,
    ),
    ("string for delta", "/v1/epsilon", {"events": [SMALL], "delta": "1e-8"}, 422),
    ("boolean for n", "/v1/rdp", {"event": {"mechanism": "shuffle", "n": True, "epsilon0": 1.0}}, 422),
    ("n = 0", "/v1/rdp", {"event": {"mechanism": "shuffle", "n": 0, "epsilon0": 1.0}}, 422),
    ("n = 1e15", "/v1/rdp", {"event": {"mechanism": "shuffle", "n": 10**15, "epsilon0": 1.0}}, 422),
    (
        "n = 1e15 as a float",
        "/v1/epsilon",
        {"events": [{"mechanism": "shuffle", "n": 1e15, "epsilon0": 1.0}], "delta": 1e-6},
        422,
    ),
    (
        "k = 1e15",
        "/v1/rdp",
        {"event": {"mechanism": "subsampled_shuffle", "n": 10**12, "k": 10**15, "epsilon0": 1}},
        422,
    ),
    ("n = 1e300", "/v1/rdp", {"event": {"mechanism": "shuffle", "n": 1e300, "epsilon0": 1.0}}, 422),
    ("n fractional", "/v1/rdp", {"event": {"mechanism": "shuffle", "n": 10.5, "epsilon0": 1.0}}, 422),
    ("epsilon0 = 1e308", "/v1/rdp", {"event": {"mechanism": "shuffle", "n": 1000, "epsilon0": 1e308}}, 422),
    ("epsilon0 < 0", "/v1/rdp", {"event": {"mechanism": "shuffle", "n": 1000, "epsilon0": -1}}, 422),
    ("orders [1]", "/v1/rdp", {"event": SMALL, "orders": [1]}, 422),
    ("orders [0.5]", "/v1/rdp", {"event": SMALL, "orders": [0.5]}, 422),
    ("orders empty", "/v1/rdp", {"event": SMALL, "orders": []}, 422),
    ("orders too many", "/v1/rdp", {"event": SMALL, "orders": [2.0] * 1001}, 422),
    ("orders nested", "/v1/rdp", {"event": SMALL, "orders": [[2, 3]]}, 422),
    ("orders 1e7", "/v1/rdp", {"event": SMALL, "orders": [1e7]}, 422),
    ("empty events", "/v1/epsilon", {"events": [], "delta": 1e-8}, 422),
    ("too many events", "/v1/epsilon", {"events": [SMALL] * 1001, "delta": 1e-8}, 422),
    ("delta = 0", "/v1/epsilon", {"events": [SMALL], "delta": 0}, 422),
    ("delta = 1", "/v1/epsilon", {"events": [SMALL], "delta": 1}, 422),
    ("delta < 0", "/v1/epsilon", {"events": [SMALL], "delta": -1e-6}, 422),
    ("epsilon < 0", "/v1/delta", {"events": [SMALL], "epsilon": -1}, 422),
    (
        "unknown mechanism",
        "/v1/rdp",
        {"event": {"mechanism": "poisson_shuffle", "n": 10, "epsilon0": 1}},
        422,
    ),
    ("no mechanism", "/v1/rdp", {"event": {"n": 10, "epsilon0": 1}}, 422),
    ("unknown field", "/v1/rdp", {"event": {**SMALL, "users": 5}}, 422),
    ("unknown top-level field", "/v1/rdp", {"event": SMALL, "order": [2]}, 422),
    (
        "k > n",
        "/v1/rdp",
        {"event": {"mechanism": "subsampled_shuffle", "n": 10, "k": 11, "epsilon0": 1}},
        400,
    ),
    (
        "poisson sampling",
        "/v1/rdp",
        {"event": {"mechanism": "subsampled_shuffle", "n": 10, "k": 5, "epsilon0": 1, "sampling": "poisson"}},
        422,
    ),
    ("unknown bound", "/v1/rdp", {"event": SMALL, "bound": "tightest"}, 422),
    ("count = 0", "/v1/rdp", {"event": {**SMALL, "count": 0}}, 422),
    (
        "curve lengths differ",
        "/v1/rdp",
        {"event": {"mechanism": "rdp_curve", "orders": [2, 3], "rdp": [0.1]}},
        400,
    ),
    ("negative rdp", "/v1/rdp", {"event": {"mechanism": "rdp_curve", "orders": [2], "rdp": [-0.1]}}, 422),
    ("event is a list", "/v1/rdp", {"event": [SMALL]}, 422),
    ("body is a list", "/v1/rdp", [SMALL], 422),
    ("body is a number", "/v1/epsilon", 3, 422),
    (
        "calibrate: target delta 1",
        "/v1/calibrate",
        {"solve_for": "count", "target": {"epsilon": 1, "delta": 1}, "event": SMALL},
        422,
    ),
    (
        "calibrate: target epsilon 0",
        "/v1/calibrate",
        {
            "solve_for": "count",
            "target": {"epsilon": 0, "delta": 1e-6},
            "event": {"mechanism": "shuffle", "n": 10, "epsilon0": 1},
        },
        422,
    ),
    (
        "calibrate: unknown unknown",
        "/v1/calibrate",
        {"solve_for": "delta", "target": {"epsilon": 1, "delta": 1e-6}, "event": SMALL},
        422,
    ),
    (
        "calibrate: k for shuffle",
        "/v1/calibrate",
        {
            "solve_for": "k",
            "target": {"epsilon": 1, "delta": 1e-6},
            "event": {"mechanism": "shuffle", "n": 100, "epsilon0": 1},
        },
        400,
    ),
]


@pytest.mark.parametrize("_name, path, body, status", ODD_JSON, ids=[x[0] for x in ODD_JSON])
def test_odd_input_is_a_clear_4xx(client, _name, path, body, status):
    t0 = time.monotonic()
    r = client.post(path, json=body)
    _clear_4xx(r, status)
    assert time.monotonic() - t0 < 10


ODD_RAW = [
    ("NaN", b'{"event": {"mechanism": "shuffle", "n": 100, "epsilon0": NaN}}'),
    ("Infinity", b'{"event": {"mechanism": "shuffle", "n": 100, "epsilon0": Infinity}}'),
    (
        "-Infinity in orders",
        b'{"event": {"mechanism": "shuffle", "n": 100, "epsilon0": 1}, "orders": [-Infinity]}',
    ),
    (
        "overflowing exponent",
        b'{"event": {"mechanism": "shuffle", "n": 100, "epsilon0": 1}, "orders": [1e999]}',
    ),
    ("truncated JSON", b'{"event": {"mechanism": "shuffle", "n": 100'),
    ("not JSON", b"hello"),
    ("empty body", b""),
    ("invalid UTF-8", b'{"event": {"mechanism": "\xff\xfe"}}'),
    ("deep nesting", b"[" * 100000 + b"]" * 100000),
]


@pytest.mark.parametrize("_name, raw", ODD_RAW, ids=[x[0] for x in ODD_RAW])
def test_odd_raw_body_is_a_clear_4xx(client, _name, raw):
    r = client.post("/v1/rdp", content=raw, headers={"content-type": "application/json"})
    _clear_4xx(r)


def test_wrong_content_type_is_a_4xx(client):
    _clear_4xx(
        client.post("/v1/rdp", content=json.dumps({"event": SMALL}), headers={"content-type": "text/plain"})
    )


def test_body_over_the_cap_is_413(client):
    r = client.post(
        "/v1/rdp", content=b"[" + b"1," * 600_000 + b"1]", headers={"content-type": "application/json"}
    )
    body = _clear_4xx(r, 413)
    assert "at most" in body["detail"]


def test_validation_errors_are_bounded_and_json_safe(client):
    """Thousands of bad items do not echo back a megabyte; non-finite inputs never reach the JSON."""
    r = client.post(
        "/v1/epsilon",
        json={
            "events": [{"mechanism": "shuffle", "n": -i, "epsilon0": 1} for i in range(900)],
            "delta": 1e-8,
        },
    )
    body = _clear_4xx(r, 422)
    assert len(body["detail"]) == 20 and body["errors_omitted"] == 880
    assert len(r.content) < 20_000


def test_work_limit_is_a_400_that_says_what_to_change(client):
    r = client.post("/v1/rdp", json={"event": SHUFFLE, "orders": [999_999.0 - i for i in range(1000)]})
    body = _clear_4xx(r, 400)
    assert "fewer or smaller orders" in body["detail"] and body["error"] == "WorkLimitExceeded"


def test_composition_time_limit_stops_and_caches():
    """Many distinct expensive events: stop at the time limit with a 400 that says to retry."""
    evs = [{"mechanism": "shuffle", "n": 2000 + i, "epsilon0": 1.0 + i / 1000} for i in range(40)]
    t0 = time.monotonic()
    with pytest.raises(compute.WorkLimitExceeded, match="send the same request again"):
        compute.epsilon_result(evs, 1e-6, time_limit=0.05)
    assert time.monotonic() - t0 < 30


# ----------------------------------------------------------------------------------------- answers
def test_rdp_sources_and_notes(client):
    body = _no_nan(client.post("/v1/rdp", json={"event": SHUFFLE, "orders": [2, 3, 10.5]}).text)
    assert len(body["sources"]) == 3 and all(isinstance(s, str) and s for s in body["sources"])
    d = accountant.shuffle_upper_detail(10000, 1.0, [2, 3, 10.5])
    assert body["sources"] == d.sources and body["notes"] == d.notes


def test_rdp_named_bound_matches_the_accountant(client):
    for bound in ("u1", "u2", "cap", "lower"):
        body = client.post("/v1/rdp", json={"event": SHUFFLE, "orders": [2, 5, 9], "bound": bound}).json()
        assert body["rdp"] == pytest.approx(
            accountant.event_rdp(SHUFFLE, [2, 5, 9], bound).tolist(), rel=1e-12
        )
        assert body["sources"] == [bound] * 3


def test_rdp_subsampled_clones_named_bound_and_default_source(client):
    """`bound: "subsampled_clones"` (bounds.md §9) answers with the accountant's curve at real orders;
    the default names it where it is the tightest."""
    sub = {"mechanism": "subsampled_shuffle", "n": 10**6, "k": 1000, "epsilon0": 2.0, "count": 10}
    body = client.post(
        "/v1/rdp", json={"event": sub, "orders": [1.5, 2, 7.25], "bound": "subsampled_clones"}
    ).json()
    assert body["bound"] == "subsampled_clones" and body["sources"] == ["subsampled_clones"] * 3
    want = accountant.event_rdp(sub, [1.5, 2, 7.25], "subsampled_clones")
    assert body["rdp"] == pytest.approx(want.tolist(), rel=1e-12)
    default = client.post("/v1/rdp", json={"event": sub, "orders": [1.5, 2, 7.25]}).json()
    assert "subsampled_clones" in default["sources"]
    assert all(d <= w for d, w in zip(default["rdp"], body["rdp"]))


def test_rdp_curve_above_its_largest_order_is_null_not_infinity(client):
    r = client.post(
        "/v1/rdp",
        json={
            "event": {"mechanism": "rdp_curve", "orders": [2, 4], "rdp": [0.1, 0.2]},
            "orders": [3, 4, 100],
        },
    )
    body = _no_nan(r.text)
    assert body["rdp"][2] is None and body["rdp"][1] == pytest.approx(0.2)
    assert any("unknown above" in n for n in body["notes"])


def test_huge_parameters_give_finite_numbers(client):
    """n = 10¹² and count = 10¹² are allowed and must give finite curves (the pure-DP cap exists)."""
    body = _no_nan(
        client.post(
            "/v1/rdp", json={"event": {"mechanism": "shuffle", "n": 10**12, "epsilon0": 50, "count": 10**12}}
        ).text
    )
    assert all(x is not None and math.isfinite(x) for x in body["rdp"])
    r = client.post(
        "/v1/epsilon",
        json={"events": [{"mechanism": "pure_dp", "epsilon": 50, "count": 10**12}], "delta": 1e-300},
    )
    assert r.status_code in (200, 400)
    _no_nan(r.text)


def test_epsilon_sources_name_the_bound_of_each_event(client):
    sub = {"mechanism": "subsampled_shuffle", "n": 10**6, "k": 1000, "epsilon0": 2.0, "count": 1000}
    g = {"mechanism": "gaussian", "noise_multiplier": 2.0, "count": 10}
    body = client.post("/v1/epsilon", json={"events": [SMALL, sub, g], "delta": 1e-6}).json()
    assert [s["mechanism"] for s in body["sources"]] == ["shuffle", "subsampled_shuffle", "gaussian"]
    assert "gaussian" in body["sources"][2]["bound"]


def test_calibrated_n_above_the_cap_is_infeasible(client):
    r = client.post(
        "/v1/calibrate",
        json={
            "solve_for": "n",
            "target": {"epsilon": 1e-5, "delta": 1e-12},
            "event": {"mechanism": "shuffle", "epsilon0": 1.0, "count": 10},
            "accounting": "rdp",  # (the PLD route meets this target with n ≈ 5.8·10¹⁰)
        },
    )
    body = _clear_4xx(r, 422)
    assert body["error"] == "InfeasibleTarget" and body["best_epsilon"] > 1e-5


def test_delta_zero_epsilon_is_allowed(client):
    body = client.post("/v1/delta", json={"events": [SMALL], "epsilon": 0}).json()
    assert 0 < body["delta"] <= 1


def test_repeated_request_is_served_from_the_cache(client):
    client.app.state.services.compute.cache.clear()
    req = {"event": {"mechanism": "shuffle", "n": 1234, "epsilon0": 0.77}, "orders": [2, 3]}
    a = client.post("/v1/rdp", json=req)
    t0 = time.perf_counter()
    b = client.post("/v1/rdp", json=req)
    assert a.content == b.content and time.perf_counter() - t0 < 0.5
    metrics = client.get("/metrics").text
    assert 'accountant_compute_cache_total{endpoint="rdp",result="hit"}' in metrics


def test_cache_key_is_the_canonical_request(client):
    """Field order and whitespace do not matter; a different value does."""
    a = client.post(
        "/v1/rdp",
        content=b'{"orders":[2],"event":{"epsilon0":0.5,"n":999,"mechanism":"shuffle"}}',
        headers={"content-type": "application/json"},
    ).json()
    b = client.post(
        "/v1/rdp", json={"event": {"mechanism": "shuffle", "n": 999, "epsilon0": 0.5}, "orders": [2]}
    ).json()
    c = client.post(
        "/v1/rdp", json={"event": {"mechanism": "shuffle", "n": 998, "epsilon0": 0.5}, "orders": [2]}
    ).json()
    assert a == b and a != c


def test_unknown_path_and_method_are_json(client):
    assert client.get("/v1/nope").json()["detail"] == "Not Found"
    r = client.get("/v1/rdp")
    assert r.status_code == 405 and r.json()["detail"]


def test_every_error_carries_the_request_id(client):
    r = client.post(
        "/v1/rdp", json={"event": SMALL, "orders": [2.5], "bound": "u1"}, headers={"X-Request-ID": "req-42"}
    )
    assert (
        r.status_code == 400 and r.json()["request_id"] == "req-42" and r.headers["x-request-id"] == "req-42"
    )


def test_health_is_static_liveness(client):
    """``/health`` is liveness only: the same small answer every time, no database involved (that
    is ``/health/ready``; its latency is measured in bench/, not timed here)."""
    answers = [client.get("/health").json() for _ in range(20)]
    assert all(a == answers[0] for a in answers) and answers[0]["status"] == "ok"
    assert "database" not in answers[0]


def test_infeasible_n_reports_the_best_epsilon_within_the_http_cap(client):
    """Regression (red-team): when no n ≤ 10¹⁵ (the accountant's cap) met the target, the 422 quoted the
    accountant's best ε at n = 10¹⁵ — an n the HTTP API refuses (n ≤ 10¹²) — as 'the best achievable'."""
    event = {"mechanism": "shuffle", "epsilon0": 5.0, "count": 10**6}
    r = client.post(
        "/v1/calibrate", json={"solve_for": "n", "target": {"epsilon": 0.01, "delta": 1e-12}, "event": event}
    )
    body = _clear_4xx(r, 422)
    at_cap = client.post("/v1/epsilon", json={"events": [{**event, "n": 10**12}], "delta": 1e-12}).json()[
        "epsilon"
    ]
    assert body["error"] == "InfeasibleTarget"
    assert body["best_epsilon"] == pytest.approx(at_cap, rel=1e-9)
    assert "1e+12" in body["detail"] and "1,000,000,000,000,000" not in body["detail"]


@pytest.mark.parametrize("content_type", [None, "application/x-www-form-urlencoded", "text/plain"])
def test_a_json_body_without_the_json_content_type_says_so(client, content_type):
    """Regression (red-team): `curl -d '{...}'` (a form content type by default) got 'Input should be a
    valid dictionary', which does not say what to change."""
    headers = {} if content_type is None else {"content-type": content_type}
    r = client.post(
        "/v1/epsilon", content=json.dumps({"events": [SMALL], "delta": 1e-6}).encode(), headers=headers
    )
    body = _clear_4xx(r, 422)
    assert "Content-Type: application/json" in body["detail"][0]["msg"], body


# -------------------------------------------------------------------------------------- accounting
def test_epsilon_names_the_route_and_every_route_tried(client):
    """A pure ε-DP release at ε = 1 costs 1 over HTTP (the pure route), with every route's answer."""
    body = {"events": [{"mechanism": "pure_dp", "epsilon": 1.0}], "delta": 1e-8}
    r = client.post("/v1/epsilon", json=body)
    assert r.status_code == 200, r.text
    got = _no_nan(r.text)
    assert got["epsilon"] <= 1.0 and got["route"] in ("pure", "pld")
    routes = {v["route"]: v for v in got["routes"]}
    assert set(routes) == {"rdp", "pld", "pure"}
    assert routes["pure"]["epsilon"] == 1.0 and routes["rdp"]["epsilon"] > 1.0 and got["order"] > 1.0
    rdp_only = _no_nan(client.post("/v1/epsilon", json={**body, "accounting": "rdp"}).text)
    assert rdp_only["route"] == "rdp" and rdp_only["epsilon"] == routes["rdp"]["epsilon"]
    d = _no_nan(client.post("/v1/delta", json={"events": body["events"], "epsilon": 1.0}).text)
    assert d["delta"] == 0.0 and d["route"] in ("pure", "pld")


def test_unknown_accounting_is_a_422(client):
    r = client.post("/v1/epsilon", json={"events": [SMALL], "delta": 1e-6, "accounting": "fastest"})
    _clear_4xx(r, 422)


def test_calibrate_reports_its_accounting_and_route(client):
    body = {
        "solve_for": "count",
        "target": {"epsilon": 1.0, "delta": 1e-9},
        "event": {"mechanism": "pure_dp", "epsilon": 0.1},
    }
    best = _no_nan(client.post("/v1/calibrate", json=body).text)
    rdp = _no_nan(client.post("/v1/calibrate", json={**body, "accounting": "rdp"}).text)
    assert best["accounting"] == "best" and rdp["accounting"] == "rdp" and rdp["route"] == "rdp"
    assert best["value"] >= rdp["value"] and best["epsilon"] <= 1.0


def test_epsilon_above_the_grid_says_so(client):
    """One round of n = 10⁷, ε0 = 0.5: the default grid's optimum is its last order, the answer
    comes from the orders above it, the response says so and its source is found (from cache)."""
    ev = {"mechanism": "shuffle", "n": 10**7, "epsilon0": 0.5, "count": 1}
    body = client.post("/v1/epsilon", json={"events": [ev], "delta": 1e-8, "accounting": "rdp"}).json()
    assert body["order"] > 10_000 and body["default_orders"] is True
    assert any("above the grid's last order" in note for note in body["notes"])
    assert body["epsilon"] == accountant.epsilon_guarantee([ev], 1e-8).epsilon
    assert body["sources"][0]["bound"] in {"clones", "convex hull", "cap", "u1/u2 interpolated", "u2", "u1"}
    given = client.post(
        "/v1/epsilon", json={"events": [ev], "delta": 1e-8, "orders": [2, 100, 10_000], "accounting": "rdp"}
    ).json()
    assert given["order"] <= 12_500 and given["epsilon"] > body["epsilon"]


def test_the_extension_is_left_out_rather_than_refused_when_the_budget_is_tight():
    from app.core.compute import epsilon_result, work_estimate

    ev = {"mechanism": "shuffle", "n": 10**7, "epsilon0": 0.5, "count": 1}
    mass, _ = work_estimate([accountant.event_from_dict(ev)], np.asarray(accountant.DEFAULT_ORDERS), True)
    tight = epsilon_result([ev], 1e-8, max_mass=mass * 1.01, accounting="rdp")
    assert tight["order"] <= 12_500 and not any("above the grid" in n for n in tight["notes"])
    assert tight["epsilon"] == accountant.epsilon_guarantee([ev], 1e-8, extend=False).epsilon
    assert epsilon_result([ev], 1e-8, accounting="rdp")["epsilon"] < tight["epsilon"]
