"""The SDK's mechanism methods (``mechanism_catalog``, ``mechanism_parameters``) against a real
server, sync and async: a calibrated answer the accountant confirms independently."""

from __future__ import annotations

import asyncio

import pytest

from accountant import epsilon_guarantee, event_from_dict
from privacy_accountant import AccountantClient, ValidationFailed
from privacy_accountant.aio import AsyncAccountantClient
from tests.helpers.server import shared_server


def test_catalog_and_a_count_calibration_through_the_sdk():
    with AccountantClient(shared_server().url) as c:
        names = {m["name"] for m in c.mechanism_catalog()["mechanisms"]}
        assert {"binary_rr", "gaussian", "kary_rr"} <= names
        r = c.mechanism_parameters(
            "binary_rr",
            {"epsilon0": 1.0},
            accounting={"n": 10**5},
            calibrate={"epsilon": 1.0, "delta": 1e-8, "solve_for": "count"},
        )
    assert r["solve_for"] == "count" and not r["at_limit"]
    count = int(r["value"])
    # the events it returns meet the target; one more round misses (checked here, by the accountant)
    events = [event_from_dict(e) for e in r["events"]]
    assert epsilon_guarantee(events, 1e-8).epsilon <= 1.0
    more = [e.with_count(count + 1) for e in events]
    assert epsilon_guarantee(more, 1e-8).epsilon > 1.0


def test_the_async_client_answers_the_same_and_a_bad_request_says_what_to_change():
    async def run() -> dict:
        async with AsyncAccountantClient(shared_server().url) as c:
            return await c.mechanism_parameters(
                "gaussian",
                {"noise_multiplier": 10.0},
                calibrate={"epsilon": 2.0, "delta": 1e-6, "solve_for": "count"},
            )

    r = asyncio.run(run())
    assert (r["solve_for"], r["value"]) == ("count", 17)  # docs/api.md's figure, also checked in test_http
    with AccountantClient(shared_server().url) as c, pytest.raises(ValidationFailed, match="solve_for"):
        c.mechanism_parameters(
            "gaussian",
            {"noise_multiplier": 10.0},
            calibrate={"epsilon": 2.0, "delta": 1e-6, "solve_for": "bogus"},
        )
