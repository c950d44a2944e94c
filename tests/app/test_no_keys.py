"""A service started without ``ACCOUNTANT_API_KEYS`` says so: a warning at start (stderr and the
logs), ``api_keys_configured: false`` on ``GET /health`` (the dashboard's sign-in shows a notice from
it: test_dashboard_browser.py), and a refused key is told why and what to set."""

from __future__ import annotations

import httpx
import pytest

from app.cli.serve import NO_KEYS_WARNING
from tests.helpers.server import start_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def keyless(tmp_path_factory):
    db = tmp_path_factory.mktemp("keyless") / "k.db"
    with start_server({"DATABASE_URL": f"sqlite:///{db}", "ACCOUNTANT_API_KEYS": ""}) as srv:
        yield srv


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    db = tmp_path_factory.mktemp("keyed") / "k.db"
    with start_server({"DATABASE_URL": f"sqlite:///{db}", "ACCOUNTANT_API_KEYS": "admin-k:admin"}) as srv:
        yield srv


def test_serve_warns_at_start_without_keys(keyless, keyed):
    assert NO_KEYS_WARNING in keyless.log_text()
    assert "ACCOUNTANT_API_KEYS is not set" not in keyed.log_text()
    assert "ACCOUNTANT_API_KEYS is not set" in NO_KEYS_WARNING


def test_health_says_whether_keys_are_configured(keyless, keyed):
    assert httpx.get(keyless.url + "/health").json()["api_keys_configured"] is False
    assert httpx.get(keyed.url + "/health").json()["api_keys_configured"] is True


@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/users"), ("POST", "/v1/epsilon")])
def test_a_refused_key_is_told_that_the_service_has_none(keyless, method, path):
    body = {"events": [{"mechanism": "gaussian", "noise_multiplier": 2.0}], "delta": 1e-6}
    r = httpx.request(
        method,
        keyless.url + path,
        headers={"Authorization": "Bearer some-key"},
        json=body if method == "POST" else None,
    )
    assert r.status_code == 401
    detail = r.json()["detail"]
    assert detail.startswith("invalid API key") and "has no API keys" in detail
    assert "ACCOUNTANT_API_KEYS='key:role" in detail


def test_with_keys_a_wrong_key_is_only_invalid(keyed):
    r = httpx.get(keyed.url + "/v1/users", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401 and "has no API keys" not in r.json()["detail"]
