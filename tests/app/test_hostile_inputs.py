"""Small hostile inputs of issue 25 (each failed before its fix): framing of every page, ids that are
not valid UTF-8, mechanism parameters beyond the events' limits, randomize inputs of the wrong shape."""

from __future__ import annotations

import pytest

from tests.helpers import ledger as ls
from tests.helpers.ledger import ADMIN

# fixtures: the real app over a migrated SQLite file per test (and PostgreSQL when configured)
db_url, db, client = ls.db_url, ls.db, ls.client


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/openapi.json", "/health", "/dashboard", "/metrics"])
def test_no_page_can_be_framed(client, path):
    r = client.get(path)
    assert r.status_code == 200, (path, r.status_code)
    assert r.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


def test_errors_and_cached_answers_cannot_be_framed_either(client):
    body = {"events": [{"mechanism": "pure_dp", "epsilon": 1.0}], "delta": 1e-6}
    for _ in range(2):  # the second answer comes from the response cache's fast path
        r = client.post("/v1/epsilon", json=body)
        assert r.status_code == 200 and r.headers["x-frame-options"] == "DENY"
        assert r.headers["content-security-policy"] == "frame-ancestors 'none'"
    r = client.post("/v1/epsilon", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("raw", ["%ED%A0%80", "%FF", "abc%C3"])
def test_ids_that_are_not_utf8_are_refused(client, raw):
    """Before: PUT /v1/users/%ED%A0%80 created the user '\\ufffd\\ufffd\\ufffd' (several raw paths, one id)."""
    r = client.put(f"/v1/users/{raw}", json={"budget": {"epsilon": 1.0, "delta": 1e-6}}, headers=ADMIN)
    assert r.status_code == 400, r.text
    assert "UTF-8" in r.json()["detail"]
    listed = client.get("/v1/users", headers=ADMIN)
    assert listed.status_code == 200 and listed.json()["items"] == []


def test_a_valid_percent_encoded_id_still_works(client):
    r = client.put("/v1/users/caf%C3%A9", json={"budget": {"epsilon": 1.0, "delta": 1e-6}}, headers=ADMIN)
    assert r.status_code == 201, r.text
    assert client.get("/v1/users/café", headers=ADMIN).json()["user_id"] == "café"


@pytest.mark.parametrize(
    "name,params",
    [
        ("l2", {"epsilon0": 1.0, "d": 4, "n": 10**26}),
        ("user_mean", {"epsilon0": 1.0, "B": 1.0, "tau": 0.1, "n": 10**26}),
        ("winsorized_sgd", {"epsilon": 1.0, "T": 10, "d": 2, "G": 1.0, "tau": 0.1, "n": 10**26}),
    ],
)
def test_mechanism_populations_have_the_events_limit(client, name, params):
    r = client.post(f"/v1/mechanisms/{name}/parameters", json={"params": params})
    assert 400 <= r.status_code < 500, r.text
    assert "'n'" in r.text or '"n"' in r.text, r.text


@pytest.mark.parametrize(
    "name,params,inputs",
    [
        ("binary_rr", {"epsilon0": 1.0}, [[[[1]]]]),
        ("binary_rr", {"epsilon0": 1.0}, [[1], [0]]),
        ("kary_rr", {"epsilon0": 1.0, "k": 4}, [[[2]]]),
        ("hadamard_response", {"epsilon0": 1.0, "k": 4}, [[1]]),
    ],
)
def test_randomize_inputs_have_strict_shapes(client, name, params, inputs):
    r = client.post(f"/v1/mechanisms/{name}/randomize", json={"params": params, "inputs": inputs})
    assert r.status_code == 422, r.text
    assert "one number per client" in r.text
