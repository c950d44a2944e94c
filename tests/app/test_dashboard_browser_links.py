"""The dashboard's deep links, chart legends and time axes in a real browser (Debian's chromium
through Playwright, as in test_dashboard_browser.py) against a real ``serve``:

* a link to a user's page that carries the key (``#/users/<id>?key=…``) opens that page signed in,
  and the key leaves the address bar; a route opened without a key survives the sign-in form;
* chart legends show the latest point before anything is hovered, and again after the cursor
  leaves the chart;
* the time axis of a user's history ticks in minutes, hours or days by the span of its charges —
  never in seconds (the charges' times are set in the database to span hours or days).
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
from datetime import datetime, timedelta, timezone

import pytest

from privacy_accountant import AccountantClient
from tests.app.test_dashboard_browser import CHROMIUM, LAUNCH_ARGS
from tests.helpers.server import start_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is absent (apt-get install -y chromium)"
    ),
]

ADMIN, PIPE, VIEWER = "links-admin-key-1", "links-pipeline-key-1", "links-viewer-key-1"
EVENT = {"mechanism": "gaussian", "noise_multiplier": 6.0}
#: user → the offsets (seconds before now) its charges are moved to in the database
SPANS = {"quick": None, "hours": [6 * 3600, 4 * 3600, 2 * 3600, 0], "days": [9 * 86400, 5 * 86400, 86400, 0]}
SECONDS = re.compile(r"\d:\d\d:\d\d")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("links") / "links.db"
    env = {
        "DATABASE_URL": f"sqlite:///{db}",
        "ACCOUNTANT_API_KEYS": f"{ADMIN}:admin,{PIPE}:pipeline,{VIEWER}:viewer",
    }
    with (
        start_server(env) as srv,
        AccountantClient(srv.url, api_key=ADMIN) as admin,
        AccountantClient(srv.url, api_key=PIPE) as pipe,
    ):
        for uid, offsets in SPANS.items():
            admin.put_user(uid, budget={"epsilon": 10.0, "delta": 1e-6})
            ids = [pipe.charge(EVENT, [uid]).charge_id for _ in offsets or [0, 0, 0]]
            if offsets:
                _move_charges(db, ids, offsets)
        srv.sdk = AccountantClient(srv.url, api_key=VIEWER)
        yield srv
        srv.sdk.close()


def _move_charges(db, ids: list[str], offsets: list[int]) -> None:
    """Set the charges' times to ``offsets`` seconds before now (the ledger stores UTC, naive on
    SQLite). Charges are immutable (a trigger refuses updates): the test lifts it for this one
    transaction and puts it back."""
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with sqlite3.connect(db) as con:
        guard = "ledger_charges_no_update"
        (sql,) = con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (guard,)).fetchone()
        con.execute(f"DROP TRIGGER {guard}")
        for cid, off in zip(ids, offsets):
            ts = (now - timedelta(seconds=off)).strftime("%Y-%m-%d %H:%M:%S.%f")
            assert (
                con.execute("UPDATE ledger_charges SET created_at = ? WHERE id = ?", (ts, int(cid))).rowcount
                == 1
            )
        con.execute(sql)


@pytest.fixture(scope="module")
def context(server):  # noqa: ARG001  (the server first)
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="dashboard-links-")
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=LAUNCH_ARGS,
            viewport={"width": 1280, "height": 900},
        )
        ctx.set_default_timeout(20_000)
        try:
            yield ctx
        finally:
            ctx.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(context):
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    pg.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def _ready(page) -> None:
    page.wait_for_selector("#view[data-ready='1']")


def _legend(page, box_id: str) -> list[str]:
    """The legend's value cells of the chart in ``#box_id`` (x first), as shown."""
    return page.locator(f"#{box_id} .u-legend .u-value").all_inner_texts()


def _axis(page, box_id: str) -> dict:
    return page.evaluate(
        """id => ({ unit: document.getElementById(id).getAttribute('data-time-unit'),
                    labels: (window.dashboardCharts[id].axes[0]._values || []).filter(v => v !== null) })""",
        box_id,
    )


# ------------------------------------------------------------------------------------------ deep links
def test_a_link_with_the_key_opens_the_users_page_signed_in(page, server):
    page.goto(f"{server.url}/dashboard#/users/hours?key={VIEWER}")
    _ready(page)
    assert page.locator("#user-title").inner_text().startswith("hours")
    assert page.url.endswith("#/users/hours") and "key=" not in page.url
    assert page.evaluate("Object.values(sessionStorage)") == [VIEWER]
    # a route with its own query keeps it; the bare key link still opens the overview
    page.goto(f"{server.url}/dashboard#/users?sort=-spent&key={VIEWER}&limit=10")
    page.wait_for_selector("#users-table")
    assert page.url.endswith("#/users?sort=-spent&limit=10")
    assert page.locator("#users-table").is_visible()
    page.goto(f"{server.url}/dashboard#key={VIEWER}")
    page.wait_for_selector("#stats")
    assert page.url.endswith("#/") and "key=" not in page.url


def test_a_route_opened_signed_out_survives_the_sign_in_form(page, server):
    page.goto(f"{server.url}/dashboard#/users/days")
    page.wait_for_selector("#login-form")
    assert page.locator("#login").is_visible()
    page.fill("#api-key", VIEWER)
    page.click("#login-submit")
    _ready(page)
    assert page.locator("#user-title").inner_text().startswith("days")
    assert page.url.endswith("#/users/days")


# ------------------------------------------------------------------------------------------ legends
def test_legends_show_the_latest_point_without_hovering(page, server):
    page.goto(f"{server.url}/dashboard#/users/hours?key={VIEWER}")
    _ready(page)
    page.wait_for_selector("#history-chart canvas")
    hist = server.sdk.user_history("hours").points
    u = server.sdk.get_user("hours")

    def shown() -> list[str]:
        values = _legend(page, "history-chart")
        assert len(values) == 3 and all(v.strip() not in ("--", "–", "") for v in values), values
        return values

    values = shown()
    assert float(values[1].replace(",", "")) == pytest.approx(hist[-1].spent_epsilon, rel=1e-3)
    assert float(values[2].replace(",", "")) == pytest.approx(u.budget.epsilon)
    # hover the first point, then leave the chart: the legend returns to the latest point
    box = page.locator("#history-chart .u-over").bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + box["height"] / 2)
    assert float(_legend(page, "history-chart")[1].replace(",", "")) == pytest.approx(
        hist[0].spent_epsilon, rel=1e-3
    )
    page.mouse.move(5, 5)
    assert float(shown()[1].replace(",", "")) == pytest.approx(hist[-1].spent_epsilon, rel=1e-3)
    # the RDP curve's legend rests at the order the spent ε is read at
    curve = _legend(page, "curve-chart")
    assert curve[0].startswith("α = "), curve
    assert all(v.strip() not in ("--", "–", "") for v in curve), curve
    # the overview's timeline too: the current bucket
    page.evaluate("location.hash = '#/'")
    page.wait_for_selector("#timeline-chart canvas")
    assert all(v.strip() not in ("--", "–", "") for v in _legend(page, "timeline-chart"))


# ------------------------------------------------------------------------------------------ time axes
@pytest.mark.parametrize(("user", "unit"), [("quick", "minute"), ("hours", "hour"), ("days", "day")])
def test_the_time_axis_ticks_by_the_span_never_seconds(page, server, user, unit):
    page.goto(f"{server.url}/dashboard#/users/{user}?key={VIEWER}")
    _ready(page)
    page.wait_for_selector("#history-chart canvas")
    axis = _axis(page, "history-chart")
    assert axis["unit"] == unit and axis["labels"], axis
    assert not [v for v in axis["labels"] if SECONDS.search(v)], axis
    form = {"minute": r"^\d\d:\d\d$", "hour": r"^\d\d-\d\d \d\d:00$", "day": r"^\d{4}-\d\d-\d\d$"}[unit]
    assert all(re.match(form, v) for v in axis["labels"]), axis
    if unit != "minute":
        assert len(set(axis["labels"])) == len(axis["labels"]) >= 2, axis
