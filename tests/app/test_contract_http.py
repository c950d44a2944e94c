"""Contract tests: every api.md example of the computation endpoints, over REAL HTTP against a real
``privacy-accountant serve`` process (tests/helpers/server.py), plus what only a real server shows:
the start command, migrations at start, huge bodies on the wire, responsiveness during a long
calibration, request ids, metrics, the SDK."""

from __future__ import annotations

import json
import math
import threading
import time

import httpx
import pytest

import accountant

from ..helpers.server import shared_server, start_server

SHUFFLE = {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100}
SUBSAMPLED = {"mechanism": "subsampled_shuffle", "n": 1000000, "k": 1000, "epsilon0": 2.0, "count": 100000}
CURVE = {"mechanism": "rdp_curve", "orders": [2, 4, 8], "rdp": [0.01, 0.03, 0.09], "count": 1}
API_MD_EVENTS = [SHUFFLE, SUBSAMPLED, CURVE]

SHUFFLE_BOUNDS = ["upper", "u1", "u1_simplified", "u2", "cap", "lower", "lower_simplified", "efm19", "fmt23"]
SUBSAMPLED_BOUNDS = ["upper", "su", "subsampled_clones", "cap", "lower"]


@pytest.fixture(scope="module")
def http():
    srv = shared_server()
    with httpx.Client(base_url=srv.url, timeout=300) as c:  # generous: CI machines are shared
        yield c


def _finite_json(obj) -> None:
    """No NaN/Infinity anywhere (Python's json would have parsed them)."""
    if isinstance(obj, float):
        assert math.isfinite(obj), obj
    elif isinstance(obj, dict):
        for v in obj.values():
            _finite_json(v)
    elif isinstance(obj, list):
        for v in obj:
            _finite_json(v)


def _strict_json(r: httpx.Response):
    def bad(c):
        raise AssertionError(f"{c} in response")

    assert r.headers["content-type"].startswith("application/json")
    body = json.loads(r.content, parse_constant=bad)
    _finite_json(body)
    return body


# ------------------------------------------------------------------------------------------- health
def test_health_is_ok(http):
    r = http.get("/health")
    assert r.status_code == 200
    body = _strict_json(r)
    assert body["status"] == "ok"
    assert body["calibration"] is True


# ------------------------------------------------------------------------------------------ /v1/rdp
@pytest.mark.parametrize("event", API_MD_EVENTS, ids=["shuffle", "subsampled_shuffle", "rdp_curve"])
def test_rdp_api_md_example(http, event):
    req = {"event": event, "orders": [2, 3, 10.5], "bound": "upper"}
    r = http.post("/v1/rdp", json=req)
    assert r.status_code == 200, r.text
    body = _strict_json(r)
    assert body["orders"] == [2, 3, 10.5]
    assert body["bound"] == "upper"
    assert body["event"] == accountant.event_from_dict(event).to_dict()
    assert len(body["rdp"]) == 3 and len(body["sources"]) == 3
    assert isinstance(body["notes"], list)
    expected = accountant.event_rdp(event, [2, 3, 10.5], "upper")
    for got, want in zip(body["rdp"], expected):
        if math.isfinite(want):
            assert got == pytest.approx(want, rel=1e-12)
        else:
            assert got is None  # rdp_curve above its largest order: no finite bound → null


def test_rdp_is_multiplied_by_count(http):
    one = http.post("/v1/rdp", json={"event": {**SHUFFLE, "count": 1}, "orders": [2, 8]}).json()["rdp"]
    hundred = http.post("/v1/rdp", json={"event": SHUFFLE, "orders": [2, 8]}).json()["rdp"]
    assert hundred == pytest.approx([100 * x for x in one], rel=1e-12)


def test_rdp_default_orders_are_reported(http):
    body = _strict_json(http.post("/v1/rdp", json={"event": SHUFFLE}))
    assert body["orders"] == pytest.approx(accountant.DEFAULT_ORDERS.tolist())
    assert body["default_orders"] is True and body["grid_version"] == accountant.DEFAULT_GRID_VERSION


@pytest.mark.parametrize("bound", SHUFFLE_BOUNDS)
def test_rdp_every_shuffle_bound_name(http, bound):
    r = http.post(
        "/v1/rdp",
        json={
            "event": {"mechanism": "shuffle", "n": 10**8, "epsilon0": 0.5},
            "orders": [2, 3, 10],
            "bound": bound,
        },
    )
    assert r.status_code == 200, r.text
    body = _strict_json(r)
    assert body["bound"] == bound and all(x is not None and x >= 0 for x in body["rdp"])
    assert body["sources"] == [bound] * 3 or bound == "upper"


@pytest.mark.parametrize("bound", SUBSAMPLED_BOUNDS)
def test_rdp_every_subsampled_bound_name(http, bound):
    r = http.post("/v1/rdp", json={"event": SUBSAMPLED, "orders": [2, 3, 10], "bound": bound})
    assert r.status_code == 200, r.text
    assert _strict_json(r)["bound"] == bound


@pytest.mark.parametrize(
    "req, words",
    [
        ({"event": SHUFFLE, "orders": [2, 3, 10.5], "bound": "u1"}, ["integer", "10.5"]),
        (
            {
                "event": {"mechanism": "subsampled_shuffle", "n": 1000, "k": 1, "epsilon0": 1.0},
                "orders": [2, 3],
                "bound": "su",
            },
            ["k >= 2"],
        ),
        (
            {
                "event": {"mechanism": "shuffle", "n": 100, "epsilon0": 3.0},
                "orders": [2, 30],
                "bound": "u1_simplified",
            },
            ["u1_simplified"],
        ),
        ({"event": {**SHUFFLE, "output": "continuous"}, "orders": [2, 3], "bound": "u2"}, ["discrete"]),
        ({"event": SUBSAMPLED, "orders": [2, 3], "bound": "u1"}, ["unknown bound", "subsampled_shuffle"]),
        ({"event": CURVE, "orders": [2, 3], "bound": "cap"}, ["upper"]),
    ],
    ids=["u1-noninteger", "su-k1", "u1s-condition", "continuous-u2", "wrong-model", "curve-cap"],
)
def test_rdp_bound_outside_validity_is_400_with_reason(http, req, words):
    r = http.post("/v1/rdp", json=req)
    assert r.status_code == 400, r.text
    body = _strict_json(r)
    assert isinstance(body["detail"], str)
    for w in words:
        assert w in body["detail"]


# ------------------------------------------------------------------------------ /v1/epsilon, /v1/delta
def test_epsilon_api_md_example(http):
    req = {"events": [SHUFFLE, SUBSAMPLED], "delta": 1e-8}
    r = http.post("/v1/epsilon", json=req)
    assert r.status_code == 200, r.text
    body = _strict_json(r)
    assert {"epsilon", "delta", "order", "orders", "rdp", "sources", "notes"} <= set(body)
    assert body["delta"] == 1e-8
    g = accountant.epsilon_routed([SHUFFLE, SUBSAMPLED], 1e-8)
    assert body["epsilon"] == pytest.approx(g.epsilon, rel=1e-12) and body["route"] == g.route
    assert body["order"] == pytest.approx(g.order)
    assert len(body["orders"]) == len(body["rdp"]) == len(accountant.DEFAULT_ORDERS)
    assert [s["event"] for s in body["sources"]] == [0, 1]


def test_epsilon_worked_example_value(http):
    """The api.md headline: n = 10⁶, ε0 = 0.5, T = 10⁵, δ = 10⁻⁸ → ε = 1.64 with the thesis bounds;
    the default (tightest valid) bound can only be at or below that."""
    ev = {"mechanism": "shuffle", "n": 1000000, "epsilon0": 0.5, "count": 100000}
    body = _strict_json(http.post("/v1/epsilon", json={"events": [ev], "delta": 1e-8}))
    assert 0 < body["epsilon"] <= 1.645
    assert body["epsilon"] == pytest.approx(accountant.epsilon_routed([ev], 1e-8).epsilon, rel=1e-12)


def test_delta_api_md_example(http):
    ev = {"mechanism": "shuffle", "n": 1000000, "epsilon0": 0.5, "count": 100000}
    r = http.post("/v1/delta", json={"events": [ev], "epsilon": 1.64})
    assert r.status_code == 200, r.text
    body = _strict_json(r)
    assert {"epsilon", "delta", "order", "orders", "rdp"} <= set(body)
    assert body["epsilon"] == 1.64
    assert 0 < body["delta"] <= 1.05e-8  # the inverse of the ε example
    assert body["delta"] == pytest.approx(accountant.delta_guarantee([ev], 1.64).delta, rel=1e-12)


def test_custom_orders_are_used_and_reported(http):
    body = _strict_json(
        http.post("/v1/epsilon", json={"events": [SHUFFLE], "delta": 1e-6, "orders": [2, 4, 8, 16]})
    )
    assert body["orders"] == [2, 4, 8, 16] and body["default_orders"] is False


# ------------------------------------------------------------------------------------- /v1/calibrate
def test_calibrate_api_md_example(http):
    req = {
        "solve_for": "epsilon0",
        "target": {"epsilon": 4.0, "delta": 1e-5},
        "event": {"mechanism": "subsampled_shuffle", "n": 100000, "k": 1000, "count": 1000},
    }
    r = http.post("/v1/calibrate", json=req)
    assert r.status_code == 200, r.text
    body = _strict_json(r)
    ev = body["event"]
    assert (
        ev["mechanism"] == "subsampled_shuffle"
        and ev["n"] == 100000
        and ev["k"] == 1000
        and ev["count"] == 1000
    )
    assert 0 < ev["epsilon0"] <= 50
    assert body["delta"] == 1e-5 and body["epsilon"] <= 4.0 and body["order"] > 1
    # the reported guarantee is the recomputed one, and one nudge up misses the target
    again = _strict_json(http.post("/v1/epsilon", json={"events": [ev], "delta": 1e-5}))
    assert again["epsilon"] == pytest.approx(body["epsilon"], rel=1e-12) and again["epsilon"] <= 4.0
    nudged = {**ev, "epsilon0": ev["epsilon0"] * (1 + 1e-5)}
    assert _strict_json(http.post("/v1/epsilon", json={"events": [nudged], "delta": 1e-5}))["epsilon"] > 4.0


@pytest.mark.parametrize(
    "solve_for, event",
    [
        ("count", {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0}),
        ("n", {"mechanism": "shuffle", "epsilon0": 1.0, "count": 100}),
        ("k", {"mechanism": "subsampled_shuffle", "n": 100000, "epsilon0": 1.0, "count": 1000}),
        ("count", {"mechanism": "gaussian", "noise_multiplier": 5.0}),
    ],
)
def test_calibrate_each_unknown(http, solve_for, event):
    r = http.post(
        "/v1/calibrate",
        json={"solve_for": solve_for, "target": {"epsilon": 4.0, "delta": 1e-5}, "event": event},
    )
    assert r.status_code == 200, r.text
    body = _strict_json(r)
    assert body["solve_for"] == solve_for and body["event"][solve_for] == body["value"]
    assert body["epsilon"] <= 4.0
    if solve_for == "k":
        assert body["direction"] == "largest"


def test_calibrate_infeasible_is_422_with_best_epsilon(http):
    r = http.post(
        "/v1/calibrate",
        json={
            "solve_for": "epsilon0",
            "target": {"epsilon": 1e-6, "delta": 1e-10},
            "event": {"mechanism": "shuffle", "n": 100, "count": 10**6},
        },
    )
    assert r.status_code == 422, r.text
    body = _strict_json(r)
    assert isinstance(body["detail"], str) and body["error"] == "InfeasibleTarget"
    assert body["best_epsilon"] is None or body["best_epsilon"] > 1e-6


def test_calibrate_with_the_unknown_given_is_400(http):
    r = http.post(
        "/v1/calibrate",
        json={"solve_for": "epsilon0", "target": {"epsilon": 4.0, "delta": 1e-5}, "event": SHUFFLE},
    )
    assert r.status_code == 400 and "leave out" in r.json()["detail"]


# ----------------------------------------------------------------------------- what only HTTP shows
def test_ten_megabyte_body_is_413_without_reading_it_all(http):
    big = (
        b'{"event": {"mechanism": "shuffle", "n": 10, "epsilon0": 1}, "orders": ['
        + b"2," * (5 * 2**20)
        + b"2]}"
    )
    t0 = time.monotonic()
    r = http.post("/v1/rdp", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert "too large" in _strict_json(r)["detail"]
    assert time.monotonic() - t0 < 10


def test_chunked_body_over_the_limit_is_413(http):
    def gen():
        yield b'{"events": ['
        for _ in range(3000):
            yield b'{"mechanism": "shuffle", "n": 10, "epsilon0": 1.0, "count": 1},' * 10
        yield b'{"mechanism": "shuffle", "n": 10, "epsilon0": 1.0}], "delta": 1e-6}'

    r = http.post("/v1/epsilon", content=gen(), headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_million_orders_is_a_clear_4xx(http):
    body = json.dumps({"event": SHUFFLE, "orders": [2.0] * 10**6}).encode()
    r = http.post("/v1/rdp", content=body, headers={"content-type": "application/json"})
    assert r.status_code in (413, 422)
    assert "detail" in _strict_json(r)


def test_nan_and_infinity_on_the_wire_are_422(http):
    for raw in (
        b'{"event": {"mechanism": "shuffle", "n": 10, "epsilon0": NaN}}',
        b'{"event": {"mechanism": "shuffle", "n": 10, "epsilon0": Infinity}}',
        b'{"event": {"mechanism": "shuffle", "n": 10, "epsilon0": -Infinity}}',
        b'{"event": {"mechanism": "shuffle", "n": 10, "epsilon0": 1e400}}',
        b'{"events": [{"mechanism": "shuffle", "n": 10, "epsilon0": 1}], "delta": NaN}',
    ):
        path = "/v1/epsilon" if b"events" in raw else "/v1/rdp"
        r = http.post(path, content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 422, (raw, r.text)
        _strict_json(r)


def test_request_id_is_echoed_and_generated(http):
    r = http.get("/health", headers={"X-Request-ID": "trace-abc-123"})
    assert r.headers["x-request-id"] == "trace-abc-123"
    r2 = http.post("/v1/rdp", json={"event": {"mechanism": "shuffle", "n": 0, "epsilon0": 1}})
    assert r2.status_code == 422 and len(r2.headers["x-request-id"]) >= 16
    assert r2.json()["request_id"] == r2.headers["x-request-id"]
    bad = http.get("/health", headers={"X-Request-ID": "bad id with spaces"})
    assert bad.headers["x-request-id"] != "bad id with spaces"  # not a safe token: replaced


def test_metrics_count_requests_latency_and_errors_by_endpoint(http):
    http.post("/v1/rdp", json={"event": SHUFFLE, "orders": [2]})
    http.post("/v1/rdp", json={"event": SHUFFLE, "orders": [2.5], "bound": "u1"})  # 400
    r = http.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'accountant_http_requests_total{endpoint="/v1/rdp",method="POST",status="200"}' in text
    assert 'accountant_http_errors_total{endpoint="/v1/rdp",method="POST",status="400"}' in text
    assert 'accountant_http_request_duration_seconds_bucket{endpoint="/v1/rdp"' in text


def test_health_stays_fast_during_a_long_calibration():
    """Two slow calibrations (each evaluation a new ε0 ⇒ a new clone-bound curve, seconds of CPU)
    run in worker threads while /health is polled: it must keep answering in milliseconds."""
    srv = start_server({})
    c = httpx.Client(base_url=srv.url, timeout=300)
    try:
        started, finished = {}, {}

        def run(i):
            body = {
                "solve_for": "epsilon0",
                "target": {"epsilon": 1.0 + i / 100, "delta": 1e-9},
                "event": {"mechanism": "shuffle", "n": 10**8 - 7 * i, "count": 1000},
            }
            started[i] = time.monotonic()
            try:
                r = c.post("/v1/calibrate", json=body)
                finished[i] = (r.status_code, time.monotonic() - started[i])
            except httpx.HTTPError:
                pass  # the server is killed at the end of the test

        threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(2)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        latencies = []
        t_end = time.monotonic() + 4.0
        while time.monotonic() < t_end and any(t.is_alive() for t in threads):
            t0 = time.monotonic()
            assert c.get("/health").status_code == 200
            latencies.append(time.monotonic() - t0)
            time.sleep(0.02)
        still_running = sum(t.is_alive() for t in threads)
        slow_done = [d for _, d in finished.values() if d > 1.0]
        assert still_running or slow_done, (
            f"calibrations too fast to test anything: {finished} {srv.log_text()[-3000:]}"
        )
        assert all(status in (200, 422) for status, _ in finished.values()), (
            finished,
            srv.log_text()[-3000:],
        )
        assert len(latencies) >= 10
        latencies.sort()
        assert latencies[len(latencies) // 2] < 0.05, latencies
        assert latencies[int(0.95 * len(latencies))] < 0.25, latencies
    finally:
        c.close()
        srv.kill()


def test_serve_migrates_the_database_before_serving(tmp_path):
    db = tmp_path / "fresh.db"
    with start_server({"DATABASE_URL": f"sqlite:///{db}"}) as srv:
        assert httpx.get(srv.url + "/health").status_code == 200
        assert db.exists() and db.stat().st_size > 0
        log = srv.log_text()
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert any(rec.get("msg") == "database at head" for rec in lines)
    # the access log is JSON with a request id, and never contains an Authorization header
    access = [rec for rec in lines if rec.get("logger") == "app.access"]
    assert access and all("request_id" in rec and "duration_ms" in rec for rec in access)


def test_serve_refuses_a_malformed_api_key_setting(tmp_path):
    from ..helpers.server import ServerStartError

    with pytest.raises(ServerStartError) as exc:
        start_server(
            {"DATABASE_URL": f"sqlite:///{tmp_path}/x.db", "ACCOUNTANT_API_KEYS": "s3cr3t-key:superuser"},
            timeout=20,
        )
    assert "unknown role" in str(exc.value)
    assert "s3cr3t-key" not in str(exc.value)


# ---------------------------------------------------------------------------------------------- SDK
def test_sdk_against_the_real_server():
    from privacy_accountant import AccountantClient, BadRequest, InfeasibleTarget, ValidationFailed

    with AccountantClient(shared_server().url) as c:
        assert c.health().status == "ok"
        r = c.rdp(SHUFFLE, orders=[2, 3, 10.5])
        assert r.orders == [2, 3, 10.5] and len(r.rdp) == 3
        e = c.epsilon([SHUFFLE, SUBSAMPLED], delta=1e-8)
        assert e.epsilon > 0 and e.order > 1
        d = c.delta([SHUFFLE], epsilon=e.epsilon)
        assert 0 < d.delta < 1
        cal = c.calibrate(
            {"mechanism": "subsampled_shuffle", "n": 100000, "k": 1000, "count": 1000}, "epsilon0", 4.0, 1e-5
        )
        assert cal.epsilon <= 4.0 and cal.event.epsilon0 == cal.value
        with pytest.raises(BadRequest) as exc:
            c.rdp(SHUFFLE, orders=[10.5], bound="u1")
        assert "integer" in exc.value.detail
        with pytest.raises(ValidationFailed) as exc:
            c.rdp({"mechanism": "shuffle", "n": 0, "epsilon0": 1.0})
        assert isinstance(exc.value.detail, list) and "n" in exc.value.message
        with pytest.raises(InfeasibleTarget) as exc:
            c.calibrate({"mechanism": "gaussian", "noise_multiplier": 0.5}, "count", 0.1, 1e-5)
        assert exc.value.best_epsilon > 0.1


def test_two_workers_share_one_metrics_view(tmp_path):
    """`serve --workers 2`: requests land on either worker; /metrics aggregates both."""
    with (
        start_server({"DATABASE_URL": f"sqlite:///{tmp_path}/w.db"}, workers=2) as srv,
        httpx.Client(base_url=srv.url, timeout=30) as c,
    ):
        for _ in range(30):
            with httpx.Client(base_url=srv.url) as fresh:  # new connections spread over the workers
                assert fresh.post("/v1/rdp", json={"event": SHUFFLE, "orders": [2]}).status_code == 200
        text = c.get("/metrics").text
    line = next(
        x
        for x in text.splitlines()
        if x.startswith('accountant_http_requests_total{endpoint="/v1/rdp",method="POST",status="200"}')
    )
    assert float(line.rsplit(" ", 1)[1]) == 30
