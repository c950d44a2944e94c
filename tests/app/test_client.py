"""The SDK's error types and retry rules, against a scripted transport (no server)."""

from __future__ import annotations

import httpx
import pytest

from privacy_accountant import (
    AccountantClient,
    AccountantHTTPError,
    BadRequest,
    BudgetExceeded,
    Conflict,
    Forbidden,
    InfeasibleTarget,
    NotFound,
    PayloadTooLarge,
    ServerError,
    TransportError,
    Unauthorized,
    ValidationFailed,
)

RDP_OK = {
    "orders": [2.0],
    "rdp": [0.1],
    "bound": "upper",
    "event": {"mechanism": "shuffle", "n": 10, "epsilon0": 1.0, "count": 1},
    "sources": ["u1"],
    "notes": [],
    "default_orders": False,
}
SHUFFLE = {"mechanism": "shuffle", "n": 10, "epsilon0": 1.0}
CHARGE_OK = {
    "charge_id": "1",
    "status": "admitted",
    "users": 1,
    "idempotency_key": "k",
    "event": SHUFFLE,
    "grid_version": 1,
    "charged_by": {"name": "pipeline-1", "role": "pipeline"},
    "created_at": "2025-01-01T00:00:00+00:00",
    "replayed": False,
}
USER_OK = {
    "user_id": "u",
    "budget": {"epsilon": 1.0, "delta": 1e-6},
    "policy": "declared",
    "spent": {"epsilon": 0.0, "order": None},
    "remaining_epsilon": 1.0,
    "charges": 0,
    "grid_version": 1,
}


class Script:
    """Answers requests from a list of (status, json) or exceptions; records what was sent."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        a = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(a, Exception):
            raise a
        if isinstance(a, httpx.Response):
            return a
        status, body = a
        return httpx.Response(status, json=body, headers={"x-request-id": "rid-1"})


def client(script: Script, **kw) -> AccountantClient:
    return AccountantClient("http://test", transport=httpx.MockTransport(script), backoff=0.0, **kw)


@pytest.mark.parametrize(
    "status, body, cls",
    [
        (
            400,
            {"detail": "bound 'u1' holds only at integer orders", "error": "BoundNotApplicable"},
            BadRequest,
        ),
        (401, {"detail": "missing API key"}, Unauthorized),
        (403, {"detail": "viewer may not charge"}, Forbidden),
        (404, {"detail": "unknown users: ['x']"}, NotFound),
        (409, {"detail": "idempotency key reused with another body"}, Conflict),
        (409, {"status": "refused", "refused_users": ["u2"], "detail": "over budget"}, BudgetExceeded),
        (413, {"detail": "request body too large"}, PayloadTooLarge),
        (
            422,
            {"detail": [{"loc": ["body", "event", "n"], "msg": "too small", "type": "x"}]},
            ValidationFailed,
        ),
        (
            422,
            {"detail": "no epsilon0 meets", "error": "InfeasibleTarget", "best_epsilon": 1.5},
            InfeasibleTarget,
        ),
        (500, {"detail": "internal error"}, ServerError),
    ],
)
def test_typed_errors_carry_detail(status, body, cls):
    c = client(Script((status, body)), retries=0)
    with pytest.raises(cls) as exc:
        c.rdp(SHUFFLE)
    e = exc.value
    assert type(e) is cls and isinstance(e, AccountantHTTPError)
    assert e.status_code == status and e.detail == body["detail"] and e.request_id == "rid-1"
    if cls is BudgetExceeded:
        assert e.refused_users == ["u2"]
    if cls is InfeasibleTarget:
        assert e.best_epsilon == 1.5
    if cls is ValidationFailed:
        assert "event.n: too small" in str(e)


def test_pure_compute_post_is_retried_on_transient_failures():
    s = Script(httpx.ConnectError("refused"), (503, {"detail": "busy"}), (200, RDP_OK))
    r = client(s, retries=2).rdp(SHUFFLE, orders=[2])
    assert r.rdp == [0.1] and len(s.requests) == 3


def test_retries_are_bounded():
    s = Script(httpx.ConnectError("refused"))
    with pytest.raises(TransportError):
        client(s, retries=2).epsilon([SHUFFLE], 1e-6)
    assert len(s.requests) == 3


def test_4xx_is_never_retried():
    s = Script((400, {"detail": "no"}), (200, RDP_OK))
    with pytest.raises(BadRequest):
        client(s, retries=3).rdp(SHUFFLE)
    assert len(s.requests) == 1


def test_a_non_idempotent_write_is_not_retried():
    s = Script(httpx.ReadTimeout("slow"), (201, {"cohort_id": "c"}))
    with pytest.raises(TransportError):
        client(s, retries=3).create_cohort("c")
    assert len(s.requests) == 1


def test_charges_are_retried_with_the_same_idempotency_key():
    s = Script(httpx.ReadTimeout("slow"), (502, {"detail": "bad gateway"}), (201, CHARGE_OK))
    client(s, retries=3).charge(SHUFFLE, ["u1"])
    keys = {__import__("json").loads(r.content)["idempotency_key"] for r in s.requests}
    assert len(s.requests) == 3 and len(keys) == 1 and next(iter(keys)).startswith("sdk-")


def test_api_key_and_timeouts():
    s = Script(
        (200, {"status": "ok", "version": "0", "calibration": True, "default_orders": 81, "grid_version": 1})
    )
    c = client(s, api_key="k-123", timeout=3.0)
    assert c.health().status == "ok"
    req = s.requests[0]
    assert req.headers["authorization"] == "Bearer k-123"
    assert req.extensions["timeout"]["read"] == 3.0


def test_calibrate_uses_the_longer_timeout():
    body = {
        "event": {"mechanism": "gaussian", "noise_multiplier": 3.0, "count": 5},
        "epsilon": 1.0,
        "delta": 1e-6,
        "order": 10.0,
        "solve_for": "count",
        "value": 5,
        "target": {"epsilon": 1.0, "delta": 1e-6},
        "default_orders": True,
    }
    s = Script((200, body))
    r = client(s, timeout=2.0, calibrate_timeout=77.0).calibrate(
        {"mechanism": "gaussian", "noise_multiplier": 3.0}, "count", 1.0, 1e-6
    )
    assert r.value == 5 and s.requests[0].extensions["timeout"]["read"] == 77.0


def test_accountant_event_objects_are_accepted():
    import accountant

    s = Script((200, RDP_OK))
    client(s).rdp(accountant.ShuffleEvent(n=10, epsilon0=1.0))
    assert __import__("json").loads(s.requests[0].content)["event"]["mechanism"] == "shuffle"


@pytest.mark.parametrize(
    "user_id, path",
    [
        ("..", "/v1/users/%2E%2E"),
        (".", "/v1/users/%2E"),
        ("a.b c", "/v1/users/a%2Eb%20c"),
        ("x/y", "/v1/users/x%2Fy"),
    ],
)
def test_user_ids_are_sent_as_one_path_segment(user_id, path):
    """Regression (red-team): '.' and '..' were sent literally and removed as dot segments by httpx
    (GET /v1/users/.. became GET /v1 → 404 'Not Found' for a user that exists)."""
    script = Script((200, {**USER_OK, "user_id": user_id}))
    client(script).get_user(user_id)
    assert script.requests[0].url.raw_path.decode() == path


def test_the_async_client_follows_the_same_retry_rules(monkeypatch):
    """Same policy as the sync client: transient failures and 429/503 are retried after at least
    the server's Retry-After; retries are bounded and end in a TransportError naming the cause."""
    import asyncio

    from privacy_accountant import AsyncAccountantClient
    from privacy_accountant import aio as sdk_aio

    slept: list[float] = []

    async def no_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(sdk_aio.asyncio, "sleep", no_sleep)

    async def run() -> tuple:
        s = Script(
            httpx.ConnectError("refused"),
            httpx.Response(429, json={"detail": "busy"}, headers={"Retry-After": "4"}),
            (200, RDP_OK),
        )
        async with AsyncAccountantClient(
            "http://test", transport=httpx.MockTransport(s), backoff=0.0, retries=2
        ) as c:
            r = await c.rdp(SHUFFLE, orders=[2])
        down = Script(httpx.ConnectError("refused"))
        async with AsyncAccountantClient(
            "http://test", transport=httpx.MockTransport(down), backoff=0.0, retries=2
        ) as c:
            with pytest.raises(TransportError) as exc:
                await c.epsilon([SHUFFLE], 1e-6)
        return r, s, down, exc.value

    r, s, down, err = asyncio.run(run())
    assert r.rdp == [0.1] and len(s.requests) == 3
    assert slept[1] >= 4  # the wait before the third attempt honours Retry-After
    assert len(down.requests) == 3 and isinstance(err.__cause__, httpx.ConnectError)
