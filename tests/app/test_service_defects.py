"""Regression tests of the small defects found by trying the service as an attacker and as an
operator would: lone surrogates, log levels, idempotency scope and equivalent bodies, the 409
schema, uvicorn's settings."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from app.cli import uvicorn_options
from app.core.config import Settings
from app.main import create_app
from tests.helpers import ledger as ls
from tests.helpers.ledger import ADMIN, PIPE, VIEW, shuffle

db_url, db, client = ls.db_url, ls.db, ls.client

LONE = '"\\ud800"'  # a JSON escape of a lone high surrogate
PAIR = '"\\ud83d\\ude00"'  # a valid pair (one emoji)


@pytest.fixture(scope="module")
def compute_client():
    with TestClient(create_app(Settings()), raise_server_exceptions=False) as c:
        yield c


def _post_raw(c, path, text, headers=None):
    return c.post(
        path, content=text.encode(), headers={"content-type": "application/json", **(headers or {})}
    )


@pytest.mark.parametrize(
    "path,body",
    [
        ("/v1/rdp", '{"event": {"mechanism": LONE, "n": 100, "epsilon0": 1}}'),
        ("/v1/rdp", '{"event": {"mechanism": "shuffle", "n": 100, "epsilon0": 1}, "bound": LONE}'),
        (
            "/v1/epsilon",
            '{"events": [{"mechanism": "shuffle", "n": 100, "epsilon0": 1}], "delta": 1e-6, LONE: 1}',
        ),
        ("/v1/mechanisms/kary_rr/parameters", '{"params": {"epsilon0": 1, "k": 3, LONE: 1}}'),
        ("/v1/mechanisms/kary_rr/parameters", '{"params": {"epsilon0": LONE, "k": 3}}'),
    ],
)
def test_a_lone_surrogate_anywhere_is_a_422_that_says_so(compute_client, path, body):
    r = _post_raw(compute_client, path, body.replace("LONE", LONE))
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert "surrogate" in json.dumps(detail)


def test_a_surrogate_pair_is_text_and_passes_the_check(compute_client):
    r = _post_raw(
        compute_client,
        "/v1/rdp",
        '{"event": {"mechanism": PAIR, "n": 100, "epsilon0": 1}}'.replace("PAIR", PAIR),
    )
    assert r.status_code == 422  # an unknown mechanism, said by the validation
    assert "surrogate" not in r.text and r.json()["detail"][0]["type"] != "string_unicode"


def test_a_lone_surrogate_in_a_ledger_id_or_key_is_a_422(client):
    ls_put = client.put("/v1/users/a", json={"budget": {"epsilon": 8.0, "delta": 1e-6}}, headers=ADMIN)
    assert ls_put.status_code == 201
    for body in (
        '{"users": [LONE], "event": {"mechanism": "shuffle", "n": 100, "epsilon0": 1}}',
        '{"users": ["a"], "idempotency_key": LONE, "event": {"mechanism": "shuffle", "n": 100, "epsilon0": 1}}',
    ):
        r = _post_raw(client, "/v1/charges", body.replace("LONE", LONE), PIPE)
        assert r.status_code == 422, r.text
    assert client.get("/v1/users/a", headers=VIEW).json()["charges"] == 0


def test_an_unknown_log_level_is_a_clear_error_without_a_traceback(tmp_path):
    env = {
        "ACCOUNTANT_LOG_LEVEL": "TRACE",
        "DATABASE_URL": f"sqlite:///{tmp_path}/x.db",
        "PYTHONUNBUFFERED": "1",
    }
    code = "import sys; from app.cli import main; sys.exit(main(['serve', '--port', '1']))"
    p = subprocess.run(
        [sys.executable, "-c", code], env={**__import__("os").environ, **env}, capture_output=True, timeout=60
    )
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert "log level must be one of" in err and "TRACE" in err
    assert "Traceback" not in err
    assert not (tmp_path / "x.db").exists()  # refused before touching the database


def test_idempotency_keys_are_scoped_to_the_callers_api_key(client):
    client.put("/v1/users/u", json={"budget": {"epsilon": 8.0, "delta": 1e-6}}, headers=ADMIN)
    body = {"users": ["u"], "event": shuffle(), "idempotency_key": "job-1"}
    by_pipeline = client.post("/v1/charges", json=body, headers=PIPE)
    assert by_pipeline.status_code == 201
    # the admin's key names a charge of its own: not the pipeline's stored answer
    by_admin = client.post("/v1/charges", json=body, headers=ADMIN)
    assert by_admin.status_code == 201 and not by_admin.json()["replayed"]
    assert by_admin.json()["charge_id"] != by_pipeline.json()["charge_id"]
    # each caller replays its own
    again = client.post("/v1/charges", json=body, headers=PIPE)
    assert again.json()["replayed"] and again.json()["charge_id"] == by_pipeline.json()["charge_id"]
    assert client.get("/v1/users/u", headers=VIEW).json()["charges"] == 2
    # a different body under the admin's key is a conflict for the admin only
    other = {**body, "event": shuffle(eps0=0.5)}
    assert client.post("/v1/charges", json=other, headers=ADMIN).status_code == 409
    # the log shows the key as sent
    keys = {c["idempotency_key"] for c in client.get("/v1/users/u/charges", headers=VIEW).json()["charges"]}
    assert keys == {"job-1"}


def test_a_long_idempotency_key_is_scoped_and_shown_as_sent(client):
    client.put("/v1/users/v", json={"budget": {"epsilon": 8.0, "delta": 1e-6}}, headers=ADMIN)
    key = "k" * 256
    body = {"users": ["v"], "event": shuffle(), "idempotency_key": key}
    first = client.post("/v1/charges", json=body, headers=PIPE)
    assert first.status_code == 201 and first.json()["idempotency_key"] == key
    assert client.post("/v1/charges", json=body, headers=PIPE).json()["replayed"]
    assert [
        c["idempotency_key"] for c in client.get("/v1/users/v/charges", headers=VIEW).json()["charges"]
    ] == [key]


def test_bodies_that_mean_the_same_replay_instead_of_conflicting(client):
    for u in ("a", "b"):
        client.put(f"/v1/users/{u}", json={"budget": {"epsilon": 8.0, "delta": 1e-6}}, headers=ADMIN)
    ev = {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0}
    first = client.post(
        "/v1/charges", json={"users": ["a", "b"], "event": ev, "idempotency_key": "same"}, headers=PIPE
    )
    assert first.status_code == 201
    for users, event in (
        (["a", "b"], {**ev, "count": 1}),  # an explicit default
        (["b", "a"], ev),  # another order
        (["a", "b", "a"], ev),  # a user listed twice
        (["b", "a", "b"], {"epsilon0": 1.0, "count": 1, "n": 10000, "mechanism": "shuffle"}),
    ):
        r = client.post(
            "/v1/charges", json={"users": users, "event": event, "idempotency_key": "same"}, headers=PIPE
        )
        assert r.status_code == 201 and r.json()["replayed"], (users, event, r.text)
        assert r.json()["charge_id"] == first.json()["charge_id"]
    assert client.get("/v1/users/a", headers=VIEW).json()["charges"] == 1
    # and something that means another charge still conflicts
    r = client.post(
        "/v1/charges", json={"users": ["a"], "event": ev, "idempotency_key": "same"}, headers=PIPE
    )
    assert r.status_code == 409 and r.json()["status"] == "conflict"


def test_the_409_schema_covers_refusal_and_conflict(client):
    doc = client.get("/openapi.json").json()
    schema = doc["paths"]["/v1/charges"]["post"]["responses"]["409"]["content"]["application/json"]["schema"]
    refs = {x["$ref"].rsplit("/", 1)[-1] for x in schema.get("anyOf", schema.get("oneOf", []))}
    assert {"ChargeRefused", "IdempotencyConflict"} <= refs
    conflict = doc["components"]["schemas"]["IdempotencyConflict"]
    assert (
        conflict["properties"]["status"].get("const", conflict["properties"]["status"].get("enum", [None])[0])
        == "conflict"
    )


def test_uvicorn_settings_are_set_on_purpose():
    s = Settings(limit_concurrency=321, keepalive_timeout=7.5)
    o = uvicorn_options(s, "INFO")
    assert o["limit_concurrency"] == 321 and o["timeout_keep_alive"] == 7.5
    assert o["h11_max_incomplete_event_size"] == 16 * 1024 and o["backlog"] == 2048
    assert o["access_log"] is False and o["server_header"] is False and o["timeout_graceful_shutdown"] == 10
    from app.core.protocol import BoundedHttpToolsProtocol

    assert o["http"] is BoundedHttpToolsProtocol


def test_the_sdk_retries_a_503_with_the_same_key_after_retry_after(monkeypatch):
    """What README "Operating it" tells a pipeline to do, done by the SDK: a 503 with Retry-After is
    retried after (at least) that many seconds, with the same idempotency key."""
    import time

    import httpx

    from privacy_accountant import client as sdk

    sent, slept = [], []
    answers = [
        httpx.Response(503, json={"detail": "the database is unavailable"}, headers={"Retry-After": "3"}),
        httpx.Response(201, json={"status": "admitted"}),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return answers.pop(0)

    monkeypatch.setattr(time, "sleep", slept.append)  # the SDK waits with time.sleep
    c = sdk.AccountantClient("http://test", api_key="k", transport=httpx.MockTransport(handler), backoff=0.0)
    c.request("POST", "/v1/charges", json={"idempotency_key": "job-1", "users": ["a"]}, retry=True)
    assert [b["idempotency_key"] for b in sent] == ["job-1", "job-1"]
    assert slept and slept[0] >= 3
