"""The budget dashboard in a real browser: a real ``serve`` with a seeded ledger, driven in headless
Chromium (Debian's ``chromium`` package, which ``.ci/run`` installs) through Playwright for Python
pointed at that executable — no browser is downloaded.

Every number the tests compare is read from the page and checked against the SDK's answer for the
same thing; every request the pages make is recorded and must stay on the service's own origin.

``DASHBOARD_SCREENSHOTS=docs/img python -m pytest tests/app/test_dashboard_browser.py -k screenshot``
rewrites the README's screenshots.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from datetime import datetime
from pathlib import Path

import pytest

from privacy_accountant import AccountantClient
from tests.helpers.seed import seed_ledger
from tests.helpers.server import start_server

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM),
        reason=f"{CHROMIUM} is absent: install Debian's chromium package (apt-get install -y chromium); "
        ".ci/run installs it",
    ),
]

ADMIN, PIPE, VIEWER = "dash-admin-key-1", "dash-pipeline-key-1", "dash-viewer-key-1"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("dashboard")
    env = {
        "DATABASE_URL": f"sqlite:///{d}/dash.db",
        "ACCOUNTANT_API_KEYS": f"{ADMIN}:admin,{PIPE}:pipeline,{VIEWER}:viewer",
    }
    with start_server(env) as srv:
        srv.facts = seed_ledger(srv.url, ADMIN, PIPE)
        yield srv


@pytest.fixture(scope="module")
def sdk(server):
    with AccountantClient(server.url, api_key=VIEWER) as c:
        yield c


@pytest.fixture(scope="module")
def browser_context(server):
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="dashboard-chromium-")
    with sync_playwright() as p:
        # a fresh profile per run (launch_persistent_context passes it as --user-data-dir)
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=LAUNCH_ARGS,
            viewport={"width": 1280, "height": 900},
        )
        ctx.set_default_timeout(20_000)
        ctx.requests = []  # type: ignore[attr-defined]
        ctx.foreign = []  # type: ignore[attr-defined]
        ctx.origins = [server.url]  # type: ignore[attr-defined]  (a test may add a server of its own)

        def guard(route):
            url = route.request.url
            ctx.requests.append(url)
            if url.startswith((*ctx.origins, "data:", "blob:")):
                route.continue_()
            else:
                ctx.foreign.append(url)
                route.abort()

        ctx.route("**/*", guard)
        try:
            yield ctx
        finally:
            ctx.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser_context):
    pg = browser_context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.errors = errors  # type: ignore[attr-defined]
    yield pg
    pg.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
    assert not browser_context.foreign, f"requests to other hosts: {browser_context.foreign}"


def _ready(page) -> None:
    page.wait_for_selector("#view[data-ready='1']")


def _login(page, server, view: str = "") -> None:
    page.goto(f"{server.url}/dashboard#key={VIEWER}")
    _ready(page)
    if view:
        page.evaluate(
            "v => { document.getElementById('view').removeAttribute('data-ready'); location.hash = v; }", view
        )
        _ready(page)


def _stat(page, label: str) -> str:
    return page.locator(f"[data-stat='{label}'] .value").inner_text().strip()


def _chart(page, box_id: str) -> dict:
    """What the uPlot chart in ``#box_id`` draws: its data, axis labels and series labels."""
    return page.evaluate(
        """id => { const p = window.dashboardCharts[id];
                   return { data: p.data.map(s => Array.from(s)), labels: p.axes.map(a => a.label),
                            series: p.series.map(s => s.label) }; }""",
        box_id,
    )


def _num(text: str) -> float:
    return float(text.replace(",", "").replace("e", "e"))


# ------------------------------------------------------------------------------------------ login
def test_login_by_fragment_shows_the_overview_and_forgets_the_link(page, server, sdk, browser_context):
    page.goto(f"{server.url}/dashboard#key={VIEWER}")
    _ready(page)
    summary = sdk.summary()
    assert _num(_stat(page, "Users")) == summary.users == server.facts["users"]
    assert _num(_stat(page, "Cohorts")) == summary.cohorts == 2
    assert _num(_stat(page, "Charges refused")) == summary.refusals == len(server.facts["refused"]) > 0
    assert _num(_stat(page, "Near exhaustion")) == summary.near_exhaustion
    assert page.locator("#timeline-chart canvas").count() == 1
    # the key left the address bar at once, lives in this tab's sessionStorage, and no request URL held it
    assert "key=" not in page.url
    assert page.evaluate("Object.values(sessionStorage)") == [VIEWER]
    assert not [u for u in browser_context.requests if VIEWER in u]
    nearest = [u.user_id for u in sdk.nearest_exhaustion(10).users]
    assert page.locator("#near-table tbody tr td:first-child").all_inner_texts() == nearest


def test_login_by_form_refuses_a_wrong_key_then_accepts_a_viewer_key(page, server):
    page.goto(f"{server.url}/dashboard")
    page.wait_for_selector("#login-form")
    assert page.locator("#login").is_visible() and not page.locator("#nav").is_visible()
    page.fill("#api-key", "not-a-key")
    page.click("#login-submit")
    page.wait_for_selector("#login-error:not([hidden])")
    assert "not accepted" in page.locator("#login-error").inner_text()
    assert not page.locator("#login-nokeys").is_visible()  # this service has keys
    page.fill("#api-key", VIEWER)
    page.click("#login-submit")
    _ready(page)
    assert page.locator("#stats").is_visible() and not page.locator("#login").is_visible()
    page.click("#logout")
    page.wait_for_selector("#login-form")
    assert page.evaluate("sessionStorage.length") == 0


def test_sign_in_says_when_the_service_has_no_keys(browser_context, tmp_path):
    env = {"DATABASE_URL": f"sqlite:///{tmp_path}/keyless.db", "ACCOUNTANT_API_KEYS": ""}
    with start_server(env) as keyless:
        browser_context.origins.append(keyless.url)
        pg = browser_context.new_page()
        try:
            pg.goto(f"{keyless.url}/dashboard")
            pg.wait_for_selector("#login-nokeys:not([hidden])")
            assert "started without API keys" in pg.locator("#login-nokeys").inner_text()
            pg.fill("#api-key", "any-key")
            pg.click("#login-submit")
            pg.wait_for_selector("#login-error:not([hidden])")
            assert pg.locator("#login-nokeys").is_visible()
        finally:
            pg.close()
            browser_context.origins.remove(keyless.url)


# ------------------------------------------------------------------------------------------ users
def _rows(page) -> list[str]:
    return page.locator("#users-table tbody tr").evaluate_all("rs => rs.map(r => r.dataset.user)")


def _go(page, action) -> None:
    page.evaluate("document.getElementById('view').removeAttribute('data-ready')")
    action()
    _ready(page)


def test_users_list_shows_the_seeded_users_pages_and_sorts(page, server, sdk):
    _login(page, server, "#/users")
    first = sdk.list_users(limit=25)
    assert _rows(page) == [u.user_id for u in first.items]
    assert page.locator("#page-info").inner_text() == f"Showing 1–25 of {server.facts['users']}"
    for name in server.facts["people"][:4]:
        assert name in _rows(page)
    alice = next(u for u in first.items if u.user_id == "alice")
    cells = page.locator("#users-table tr[data-user='alice'] td").all_inner_texts()
    assert _num(cells[4]) == pytest.approx(alice.spent.epsilon, rel=1e-3)
    assert _num(cells[5]) == pytest.approx(alice.remaining_epsilon, rel=1e-3)
    assert _num(cells[6]) == alice.charges

    _go(page, lambda: page.select_option("#page-size", "10"))
    _go(page, lambda: page.click("#next-page"))
    assert page.locator("#page-info").inner_text() == f"Showing 11–20 of {server.facts['users']}"
    assert _rows(page) == [u.user_id for u in sdk.list_users(limit=10, offset=10).items]
    assert "cursor=" in page.url and "offset=" not in page.url  # the next page follows the cursor
    _go(page, lambda: page.click("#prev-page"))
    assert _rows(page) == [u.user_id for u in sdk.list_users(limit=10).items]

    _go(page, lambda: page.click("th[data-sort='remaining']"))
    assert _rows(page) == [u.user_id for u in sdk.list_users(limit=10, sort="remaining").items]
    assert _rows(page)[0] == "bob"  # the seeded user closest to exhaustion
    assert page.locator("th[data-sort='remaining']").get_attribute("aria-sort") == "ascending"
    _go(page, lambda: page.click("th[data-sort='remaining']"))
    assert page.locator("th[data-sort='remaining']").get_attribute("aria-sort") == "descending"
    assert _rows(page) == [u.user_id for u in sdk.list_users(limit=10, sort="-remaining").items]
    _go(page, lambda: page.click("th[data-sort='last_charge']"))
    assert _rows(page) == [u.user_id for u in sdk.list_users(limit=10, sort="last_charge").items]


def test_search_and_filters(page, server, sdk):
    _login(page, server, "#/users")
    _go(page, lambda: page.fill("#user-search", "device-1"))
    expected = sdk.list_users(prefix="device-1", limit=25)
    assert expected.total == 11  # device-1, device-10 … device-19
    assert _rows(page) == [u.user_id for u in expected.items]
    assert page.locator("#page-info").inner_text() == "Showing 1–11 of 11"
    _go(page, lambda: page.fill("#user-search", ""))
    _go(page, lambda: page.select_option("#policy-filter", "filter"))
    assert _rows(page) == ["frank"]
    _go(page, lambda: page.select_option("#policy-filter", ""))
    _go(page, lambda: (page.fill("#remaining-below", "0.5"), page.press("#remaining-below", "Enter")))
    assert _rows(page) == [u.user_id for u in sdk.list_users(remaining_below=0.5, limit=25).items] == ["bob"]


def test_user_page_shows_the_charts_and_the_charge_history(page, server, sdk):
    _login(page, server, "#/users")
    _go(page, lambda: page.click("#users-table a:text-is('alice')"))
    assert page.url.endswith("#/users/alice")
    page.wait_for_selector("#history-chart canvas")
    page.wait_for_selector("#curve-chart canvas")
    u = sdk.get_user("alice")
    assert page.locator("#user-title").inner_text().startswith("alice")
    assert _num(_stat(page, "Spent ε")) == pytest.approx(u.spent.epsilon, rel=1e-3)
    assert _num(_stat(page, "Remaining ε")) == pytest.approx(u.remaining_epsilon, rel=1e-3)
    assert _num(_stat(page, "Budget ε")) == u.budget.epsilon
    charges = sdk.user_charges("alice").charges
    rows = page.locator("#charges-table tbody tr")
    assert rows.count() == len(charges) == u.charges == 7
    assert rows.locator("td:first-child").all_inner_texts() == [c.charge_id for c in charges]
    assert "keyboard-us" in rows.nth(0).inner_text()  # the cohort rounds came first
    assert "gaussian" in rows.nth(len(charges) - 1).inner_text()
    # the charts draw the endpoints' numbers as served (nothing recomputed in the page)
    hist = sdk.user_history("alice").to_dict()
    drawn = _chart(page, "history-chart")
    assert drawn["data"][1] == [p["spent_epsilon"] for p in hist["points"]] and len(hist["points"]) == 7
    times = [datetime.fromisoformat(p["at"]).timestamp() for p in hist["points"]]
    assert drawn["data"][0] == pytest.approx(times, abs=1e-3)  # the browser keeps milliseconds
    assert set(drawn["data"][2]) == {u.budget.epsilon}
    assert drawn["labels"] == ["Time (UTC)", "ε at δ = 1.0e-6"]
    assert drawn["series"] == ["Time (UTC)", "spent ε", "budget ε"]
    curve = sdk.user_curve("alice").to_dict()
    drawn = _chart(page, "curve-chart")
    assert drawn["data"] == [curve["orders"], curve["spent"], curve["budget_curve"]]
    assert drawn["labels"] == ["Rényi order α", "RDP ε(α)"]


def test_filter_user_and_cohort_pages(page, server, sdk):
    _login(page, server, "#/users/frank")
    assert _num(_stat(page, "Filter order α_f")) == pytest.approx(
        sdk.get_user("frank").filter.order, rel=1e-3
    )
    assert "Rényi filter" in page.locator("#view").inner_text()
    _go(page, lambda: page.click("a[data-nav='cohorts']"))
    assert page.locator("#cohorts-table tbody tr").count() == 2
    _go(page, lambda: page.click("#cohorts-table a:text-is('keyboard-eu')"))
    page.wait_for_selector("#cohort-chart canvas")
    c = sdk.get_cohort("keyboard-eu")
    assert _num(_stat(page, "Members")) == c.members == 40
    assert _num(_stat(page, "Rounds charged")) == c.rounds == 4
    assert page.locator("#members-table tbody tr").count() == 25
    _go(page, lambda: page.click("#next-page"))
    assert page.locator("#members-table tbody tr").count() == 15


def test_an_expired_key_returns_to_the_login_form(page, server):
    page.goto(f"{server.url}/dashboard#key=no-longer-valid")
    page.wait_for_selector("#login-error:not([hidden])")
    assert "sign in again" in page.locator("#login-error").inner_text()
    assert page.evaluate("sessionStorage.length") == 0


# ------------------------------------------------------------------------------------------ API docs
def test_swagger_ui_and_redoc_render_from_the_service_itself(page, server, browser_context):
    before = len(browser_context.requests)
    page.goto(f"{server.url}/docs")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "Privacy accountant" in page.locator(".swagger-ui .info .title").inner_text()
    page.wait_for_selector(".opblock-summary-path[data-path='/v1/users/{user_id}/curve']")
    page.goto(f"{server.url}/redoc")
    page.wait_for_selector("h1:has-text('Privacy accountant')")
    loaded = browser_context.requests[before:]
    assert any(u.endswith("/static/vendor/swagger-ui/swagger-ui-bundle.js") for u in loaded)
    assert any(u.endswith("/static/vendor/redoc/redoc.standalone.js") for u in loaded)


# ------------------------------------------------------------------------------------------ screenshots
def test_screenshots(page, server, tmp_path):
    """Screenshots of the overview and of a user page (into $DASHBOARD_SCREENSHOTS when set)."""
    out = Path(os.environ.get("DASHBOARD_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    _login(page, server)
    page.wait_for_selector("#timeline-chart canvas")
    page.wait_for_timeout(300)
    page.screenshot(path=str(out / "dashboard_overview.png"), full_page=True)
    _go(page, lambda: page.evaluate("location.hash = '#/users/alice'"))
    page.wait_for_selector("#curve-chart canvas")
    page.wait_for_timeout(300)
    page.screenshot(path=str(out / "dashboard_user.png"), full_page=True)
    for name in ("dashboard_overview.png", "dashboard_user.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
        assert re.search(rb"IHDR\x00\x00\x05\x00", data[:32])  # 1280 px wide
