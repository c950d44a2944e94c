"""The admission control of computations (app.core.admission) and how the endpoints use it: slots
per class of caller, keyed requests first and never shut out, bounded queues with Retry-After,
deadlines that count queue time, a time limit for /v1/calibrate, key-required mode."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from fastapi.testclient import TestClient

from app.core.admission import Admission, DeadlineExceeded, Overloaded, checkpoint
from app.core.config import Settings
from app.main import create_app
from tests.helpers.ledger import KEYS_ENV

PIPE = {"Authorization": "Bearer pipeline-key-0123456789"}


def _admission(**kw) -> Admission:
    args = {
        "slots": 2,
        "reserved": 1,
        "anonymous_queue": 2,
        "keyed_queue": 4,
        "queue_timeout": 5,
        "time_limit": 30,
    }
    return Admission(**{**args, **kw})


def _blocker():
    """A computation that runs until released (and the event that releases it)."""
    gate = threading.Event()

    def fn() -> str:
        assert gate.wait(10)
        return "done"

    return gate, fn


def test_anonymous_requests_never_take_the_reserved_slot_and_keyed_ones_go_first():
    async def scenario():
        adm = _admission()
        gate, fn = _blocker()
        order: list[str] = []

        async def run(kind, tag):
            await adm.run(kind, fn)
            order.append(tag)

        a1 = asyncio.ensure_future(run("anonymous", "a1"))  # takes the one anonymous slot
        await asyncio.sleep(0.05)
        a2 = asyncio.ensure_future(run("anonymous", "a2"))  # waits: the other slot is reserved
        await asyncio.sleep(0.05)
        assert adm.running == {"keyed": 0, "anonymous": 1} and len(adm.waiting["anonymous"]) == 1
        k1 = asyncio.ensure_future(run("keyed", "k1"))  # the reserved slot: runs at once
        await asyncio.sleep(0.05)
        assert adm.running == {"keyed": 1, "anonymous": 1}
        k2 = asyncio.ensure_future(run("keyed", "k2"))  # waits, ahead of a2
        await asyncio.sleep(0.05)
        gate.set()
        await asyncio.gather(a1, a2, k1, k2)
        assert order.index("k2") < order.index("a2")
        assert adm.running == {"keyed": 0, "anonymous": 0} and not any(adm.waiting.values())

    asyncio.run(scenario())


def test_full_queues_are_refused_with_retry_after_429_anonymous_503_keyed():
    async def scenario():
        adm = _admission(anonymous_queue=1, keyed_queue=0, slots=2, reserved=1)
        gate, fn = _blocker()
        running = [
            asyncio.ensure_future(adm.run("anonymous", fn)),
            asyncio.ensure_future(adm.run("keyed", fn)),
        ]
        waiting = asyncio.ensure_future(adm.run("anonymous", fn))
        await asyncio.sleep(0.05)
        with pytest.raises(Overloaded) as anon:
            await adm.run("anonymous", fn)
        assert anon.value.status == 429 and anon.value.retry_after >= 1 and "API key" in anon.value.detail
        with pytest.raises(Overloaded) as keyed:
            await adm.run("keyed", fn)
        assert keyed.value.status == 503 and keyed.value.retry_after >= 1
        gate.set()
        await asyncio.gather(*running, waiting)

    asyncio.run(scenario())


def test_a_deadline_counts_the_time_spent_waiting():
    async def scenario():
        adm = _admission(time_limit=0.3, queue_timeout=10)
        gate, fn = _blocker()
        first = asyncio.ensure_future(adm.run("anonymous", fn))
        await asyncio.sleep(0.05)
        t0 = time.monotonic()
        with pytest.raises(Overloaded) as exc:  # no slot before its deadline: 503, not a 10 s wait
            await adm.run("anonymous", fn)
        assert exc.value.status == 503 and time.monotonic() - t0 < 1.0
        assert not adm.waiting["anonymous"]
        gate.set()
        await first

    asyncio.run(scenario())


def test_a_running_computation_stops_at_its_next_checkpoint_when_its_time_is_up():
    def work() -> None:
        for _ in range(200):
            time.sleep(0.01)
            checkpoint()  # as the accountant does at every curve it is about to compute

    async def scenario():
        adm = _admission(time_limit=0.2)
        t0 = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            await adm.run("keyed", work)
        assert time.monotonic() - t0 < 1.0
        assert adm.running == {"keyed": 0, "anonymous": 0}

    asyncio.run(scenario())


def test_calibrate_has_a_time_limit():
    body = {
        "solve_for": "k",
        "target": {"epsilon": 2.0, "delta": 1e-9},
        "event": {"mechanism": "subsampled_shuffle", "n": 10**7, "epsilon0": 4.0, "count": 10**5},
    }
    with TestClient(create_app(Settings(compute_time_limit=0.2))) as c:
        t0 = time.monotonic()
        r = c.post("/v1/calibrate", json=body)
    assert r.status_code == 400 and r.json()["error"] == "TimeLimitExceeded", r.text
    assert "send the same request again" in r.json()["detail"]
    assert time.monotonic() - t0 < 5


def test_key_required_mode_and_invalid_keys_on_computations():
    ev = {"event": {"mechanism": "gaussian", "noise_multiplier": 2.0}, "orders": [2, 3]}
    with TestClient(
        create_app(Settings(accountant_api_keys=KEYS_ENV, anonymous_compute="key-required"))
    ) as c:
        r = c.post("/v1/rdp", json=ev)
        assert r.status_code == 401 and "API key" in r.json()["detail"]
        assert c.post("/v1/rdp", json=ev, headers=PIPE).status_code == 200
        # the cached answer is not a way around the key either
        assert c.post("/v1/rdp", json=ev).status_code == 401
    with TestClient(create_app(Settings(accountant_api_keys=KEYS_ENV))) as c:
        assert c.post("/v1/rdp", json=ev).status_code == 200  # open: no key needed
        r = c.post("/v1/rdp", json=ev, headers={"Authorization": "Bearer not-a-key"})
        assert r.status_code == 401 and r.json()["detail"].startswith("invalid API key")


def test_admission_metrics_are_exported():
    with TestClient(create_app(Settings())) as c:
        c.post("/v1/rdp", json={"event": {"mechanism": "gaussian", "noise_multiplier": 3.0}, "orders": [2]})
        text = c.get("/metrics").text
    assert 'accountant_admissions_total{caller="anonymous",outcome="admitted"}' in text
    assert 'accountant_computations_total{caller="anonymous",outcome="completed"}' in text
    assert "accountant_cache_bytes" in text and 'cache="responses"' in text
