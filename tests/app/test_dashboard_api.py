"""``GET /v1/users/{user_id}/curve`` (the dashboard's RDP chart) and the dashboard's pages as HTTP
answers: the spent curve is the one admission reads, the budget curve is the conversion solved for
ε(α) (checked in mpmath), and every page references only the service's own origin."""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser

import mpmath as mp
import numpy as np
import pytest

from tests.helpers import ledger as ls
from tests.helpers.ledger import ADMIN, PIPE, VIEW, client, db, db_url  # noqa: F401


def _mp_budget(eps: float, delta: float, alpha: float) -> float:
    """B(α) = ε_B − (log(1/δ) + (α−1)·log(1−1/α) − log α)/(α−1), in 50-digit arithmetic."""
    with mp.workdps(50):
        a = mp.mpf(alpha)
        d = mp.mpf(delta)
        return float(mp.mpf(eps) - (mp.log(1 / d) + (a - 1) * mp.log(1 - 1 / a) - mp.log(a)) / (a - 1))


def test_declared_user_curve(client):  # noqa: F811
    r = client.put("/v1/users/ann", json={"budget": {"epsilon": 6.0, "delta": 1e-6}}, headers=ADMIN)
    assert r.status_code == 201
    events = [{"mechanism": "gaussian", "noise_multiplier": 3.0, "count": 2}, ls.shuffle(20000, 1.0, 3)]
    for i, ev in enumerate(events):
        r = client.post(
            "/v1/charges", json={"users": ["ann"], "event": ev, "idempotency_key": f"c{i}"}, headers=PIPE
        )
        assert r.status_code == 201, r.text
    body = client.get("/v1/users/ann/curve", headers=VIEW).json()
    user = client.get("/v1/users/ann", headers=VIEW).json()
    orders = np.asarray(body["orders"])
    assert orders.tolist() == ls.ORDERS.tolist()
    spent = np.asarray(body["spent"], dtype=float)
    # the running sum of the charge curves (outward rounded: never below the exact sum)
    exact = ls.curve(events[0]) + ls.curve(events[1])
    assert np.all(spent >= exact) and np.allclose(spent, exact, rtol=1e-12, atol=0)
    for a, b in zip(orders, body["budget_curve"]):
        if a <= 1.01:
            assert b is None
        else:
            assert b == pytest.approx(_mp_budget(6.0, 1e-6, a), rel=1e-12, abs=1e-12)
    # ε at each order; its minimum is the spent ε the user view reports, at the order it reports
    eps = np.array([math.inf if e is None else e for e in body["epsilon"]])
    i = int(np.argmin(eps))
    assert eps[i] == pytest.approx(user["spent"]["epsilon"], rel=1e-12)
    assert orders[i] == user["spent"]["order"] == body["spent_order"]
    assert body["spent_epsilon"] == user["spent"]["epsilon"]
    # spent ≤ B exactly at the orders whose ε is within the budget
    usable = orders > 1.01
    within = spent[usable] <= np.asarray(body["budget_curve"], dtype=float)[usable]
    assert np.array_equal(within, eps[usable] <= 6.0) and within.any()


def test_filter_user_curve_marks_the_filter_order(client):  # noqa: F811
    body = {"budget": {"epsilon": 5.0, "delta": 1e-6}, "policy": "filter", "filter_order": 8.0}
    assert client.put("/v1/users/flo", json=body, headers=ADMIN).status_code == 201
    c = client.get("/v1/users/flo/curve", headers=VIEW).json()
    assert c["policy"] == "filter" and c["filter"]["order"] == 8.0
    i = c["orders"].index(8.0)
    assert c["budget_curve"][i] == pytest.approx(c["filter"]["order_budget"], rel=1e-12)
    assert c["budget_curve"][i] == pytest.approx(ls.filter_B(5.0, 1e-6, 8.0), rel=1e-12)
    assert c["spent"] == [0.0] * len(c["orders"]) and c["spent_epsilon"] == 0.0


def test_curve_errors(client):  # noqa: F811
    r = client.get("/v1/users/nobody/curve", headers=VIEW)
    assert r.status_code == 404 and "nobody" in r.json()["detail"]
    assert client.get("/v1/users/nobody/curve").status_code == 401


# ------------------------------------------------------------------------------------------ pages
class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        del tag  # HTMLParser's signature: only the attributes matter here
        for k, v in attrs:
            if k in ("src", "href", "action") and v:
                self.refs.append(v)


def _external(refs: list[str]) -> list[str]:
    return [r for r in refs if re.match(r"^[a-z][a-z0-9+.-]*:|^//", r, re.I) and not r.startswith("data:")]


@pytest.mark.parametrize("path", ["/dashboard", "/docs", "/redoc"])
def test_pages_reference_no_other_host(client, path):  # noqa: F811
    r = client.get(path)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    p = _Refs()
    p.feed(r.text)
    assert p.refs and not _external(p.refs), _external(p.refs)
    assert not re.search(r"https?://", r.text.replace("http://www.w3.org/2000/svg", "")), (
        "an absolute URL in the page"
    )
    for ref in p.refs:  # every asset it loads is served
        if ref.startswith("/static/"):
            assert client.get(ref).status_code == 200, ref


def test_dashboard_assets_name_no_other_host(client):  # noqa: F811
    for path in (
        "/static/dashboard/dashboard.js",
        "/static/dashboard/dashboard.css",
        "/static/dashboard/favicon.svg",
    ):
        text = client.get(path).text
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), path


def test_dashboard_page_headers(client):  # noqa: F811
    r = client.get("/dashboard")
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert r.headers["referrer-policy"] == "no-referrer"
    r = client.get("/dashboard/", follow_redirects=False)
    assert r.status_code == 308 and r.headers["location"] == "/dashboard"


def test_vendored_libraries_keep_their_licences():
    from app.api.routes.dashboard import STATIC_DIR

    vendor = STATIC_DIR / "vendor"
    for lib, marker in (("uplot", "MIT"), ("swagger-ui", "Apache"), ("redoc", "MIT")):
        assert marker in (vendor / lib / "LICENSE").read_text(), lib
    assert "cdn.redoc.ly" not in (vendor / "redoc" / "redoc.standalone.js").read_text()
