"""The ledger-wide charge listing ``GET /v1/charges`` against a real ``serve`` process (SQLite, and
PostgreSQL when configured): every charge exactly once in charge-id order when following
``next_cursor`` while charges are added between the pages; the filters (user — explicit charges
and cohort rounds —, cohort, since/until) against the rows they must select; bad filters a 400
naming what to write; the SDK (sync and async, ``iter_pages``) and ``privacy-accountant charges
list`` without a user."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import httpx
import pytest

from app.cli import main
from privacy_accountant import AccountantClient, AsyncAccountantClient
from privacy_accountant import models as m
from tests.helpers import ledger as ls
from tests.helpers.ledger import ADMIN, KEYS_ENV, PIPE, VIEW
from tests.helpers.server import start_server

pytestmark = pytest.mark.slow

CHEAP = {"mechanism": "gaussian", "noise_multiplier": 30.0}
BUDGET = {"epsilon": 8.0, "delta": 1e-6}


def ok(r: httpx.Response, code: int = 200) -> dict:
    assert r.status_code == code, r.text
    return r.json()


def charge(c: httpx.Client, **body) -> dict:
    return ok(c.post("/v1/charges", json={"event": CHEAP, **body}, headers=PIPE), 201)


@pytest.fixture(scope="module", params=ls.BACKENDS)
def server(request, tmp_path_factory):
    if request.param == "sqlite":
        db_url = f"sqlite:///{tmp_path_factory.mktemp('charges')}/ledger.db"
    else:
        db_url = ls.pg_test_url()
        ls.truncate_pg(db_url)
    env = {"DATABASE_URL": db_url, "ACCOUNTANT_API_KEYS": KEYS_ENV, "ACCOUNTANT_LOG_LEVEL": "WARNING"}
    with start_server(env) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        for u in ("ann", "bob", "cy"):
            ok(c.put(f"/v1/users/{u}", json={"budget": BUDGET}, headers=ADMIN), 201)
        ok(c.post("/v1/cohorts", json={"cohort_id": "crowd"}, headers=ADMIN), 201)
        ok(c.post("/v1/cohorts/crowd/members", json={"users": ["bob", "cy"]}, headers=ADMIN))
        charge(c, users=["ann"])  # 1
        charge(c, users=["ann", "bob"])  # 2
        charge(c, cohort="crowd")  # 3: bob, cy
        charge(c, users=["cy"])  # 4
        ok(c.post("/v1/cohorts/crowd/members/remove", json={"users": ["bob"]}, headers=ADMIN))
        charge(c, cohort="crowd")  # 5: cy only
        charge(c, users=["bob"])  # 6
        srv.http = c
        yield srv


def listing(c: httpx.Client, **params) -> dict:
    return ok(c.get("/v1/charges", params=params, headers=VIEW))


def walk(c: httpx.Client, **params) -> list[dict]:
    out, page = [], listing(c, **params)
    while True:
        out += page["charges"]
        if page["next_cursor"] is None:
            return out
        page = listing(c, **params, cursor=page["next_cursor"])


def ids(charges: list[dict]) -> list[int]:
    return [int(ch["charge_id"]) for ch in charges]


def test_every_charge_once_oldest_first_while_charges_arrive(server):
    c = server.http
    everything = listing(c, limit=10_000)
    before = ids(everything["charges"])
    assert everything["total"] == len(before) >= 6 and before == sorted(before)
    assert everything["next_cursor"] is None
    seen, page = [], listing(c, limit=2)
    assert page["total"] == len(before) and page["next_cursor"] is not None
    while True:
        seen += ids(page["charges"])
        charge(c, users=["ann"])  # a new charge after every page: listed after the walk's position
        if page["next_cursor"] is None:
            break
        page = listing(c, limit=2, cursor=page["next_cursor"])
    assert seen == sorted(set(seen)), "a charge was listed twice or out of order"
    assert set(before) <= set(seen), "a charge that existed when the walk started was skipped"
    # the offset pages agree with the cursor pages on a quiet ledger
    now = ids(listing(c, limit=10_000)["charges"])
    assert ids(listing(c, limit=3, offset=3)["charges"]) == now[3:6]


def test_filters_select_exactly_their_charges(server):
    c = server.http
    base = walk(c, limit=100)[:6]  # the fixture's charges, in order
    first = ids(base)[0]
    for ch in base:
        ch["n"] = int(ch["charge_id"]) - first + 1
    by_user = {u: [ch["charge_id"] for ch in walk(c, user=u, limit=2)] for u in ("bob", "cy")}
    assert by_user["bob"][:3] == [
        str(first + 1),
        str(first + 2),
        str(first + 5),
    ]  # explicit, round 1, explicit
    assert by_user["cy"][:3] == [str(first + 2), str(first + 3), str(first + 4)]  # round 1, explicit, round 2
    # the user filter agrees with the user's own listing
    own = ok(c.get("/v1/users/cy/charges", params={"limit": 1000}, headers=VIEW))["charges"]
    assert [ch["charge_id"] for ch in own] == [ch["charge_id"] for ch in walk(c, user="cy", limit=1)]
    crowd = walk(c, cohort="crowd", limit=1)
    assert ids(crowd) == [first + 2, first + 4] and [ch["cohort_round"] for ch in crowd] == [1, 2]
    assert listing(c, cohort="crowd", user="cy")["total"] == 2
    assert listing(c, cohort="crowd", user="ann")["total"] == 0
    # time range: [since, until) by created_at, inclusive at since, exclusive at until
    t2, t5 = base[1]["created_at"], base[4]["created_at"]
    ranged = walk(c, since=t2, until=t5, limit=2)
    assert ids(ranged)[0] == first + 1 and first + 4 not in ids(ranged)
    assert all(t2 <= ch["created_at"] < t5 for ch in ranged)
    late = listing(c, since=base[5]["created_at"], limit=10_000)
    assert ids(late["charges"])[0] == first + 5 and late["total"] == len(late["charges"])
    # an offset, a naive time (UTC) and a date name the same instants
    t = datetime.fromisoformat(t5)
    naive = t.replace(tzinfo=None).isoformat()
    assert listing(c, until=naive)["total"] == listing(c, until=t5)["total"] == 4
    shifted = (t + timedelta(hours=2)).replace(tzinfo=None).isoformat() + "+02:00"
    assert listing(c, until=shifted)["total"] == 4
    assert listing(c, since="2000-01-01", until="2000-01-02")["total"] == 0


@pytest.mark.parametrize(
    ("params", "status", "says"),
    [
        ({"since": "yesterday"}, 400, "since='yesterday' is not an ISO 8601"),
        ({"until": "2025-13-01"}, 400, "until='2025-13-01' is not an ISO 8601"),
        ({"since": "2025-02-01", "until": "2025-01-01"}, 400, "must be before until"),
        ({"since": "0001-01-01T00:00:00+14:00"}, 400, "is not an ISO 8601"),  # before the year 1 in UTC
        ({"offset": 10_001}, 400, "page with the cursor"),
        ({"cursor": "bm9wZQ"}, 400, "cursor"),
        ({"user": "nobody"}, 404, "unknown user 'nobody'"),
        ({"cohort": "nowhere"}, 404, "unknown cohort 'nowhere'"),
        ({"users": "ann"}, 422, "users"),
        ({"limit": 0}, 422, "limit"),
    ],
)
def test_bad_filters_say_what_to_change(server, params, status, says):
    r = server.http.get("/v1/charges", params=params, headers=VIEW)
    assert r.status_code == status, r.text
    assert says in str(r.json()["detail"])


def test_a_cursor_of_another_listing_is_refused(server):
    c = server.http
    cur = ok(c.get("/v1/cohorts/crowd/members", params={"limit": 1, "history": True}, headers=VIEW))
    r = c.get("/v1/charges", params={"cursor": cur["next_cursor"]}, headers=VIEW)
    assert r.status_code == 400 and "another listing" in r.json()["detail"]


def test_sdk_sync_and_async(server):
    with AccountantClient(server.url, api_key="viewer-key-0123456789") as client:
        page = client.list_charges(2, cohort="crowd")
        assert isinstance(page, m.ChargePage) and page.total == 2 and page.charges[0].cohort == "crowd"
        pages = list(client.iter_pages(client.list_charges, limit=2, user="bob"))
        assert len(pages) >= 2 and pages[-1].next_cursor is None
        bob = [ch.charge_id for p in pages for ch in p.charges]
        assert bob == [ch.charge_id for ch in client.user_charges("bob", 1000).charges]
        every = client.list_charges(1)
        since = every.charges[0].created_at + timedelta(microseconds=1)  # a datetime, sent as ISO 8601
        assert client.list_charges(1, since=since).total == every.total - 1

    async def run() -> list[str]:
        async with AsyncAccountantClient(server.url, api_key="viewer-key-0123456789") as client:
            return [ch.charge_id async for p in client.iter_pages(client.list_charges, limit=2, user="bob") for ch in p.charges]  # fmt: skip

    assert asyncio.run(run()) == bob


def test_cli_charges_list_ledger_wide(server, monkeypatch, capsys):
    monkeypatch.setenv("ACCOUNTANT_URL", server.url)
    monkeypatch.setenv("ACCOUNTANT_API_KEY", "viewer-key-0123456789")
    assert main(["charges", "list", "--cohort", "crowd", "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "cohort crowd round 1" in out and "1–1 of 2" in out and "--cursor " in out
    cursor = out.rsplit("--cursor ", 1)[1].rstrip(")\n ")
    assert main(["charges", "list", "--cohort", "crowd", "--limit", "1", "--cursor", cursor]) == 0
    assert "cohort crowd round 2" in capsys.readouterr().out
    assert main(["charges", "list", "--json", "--limit", "1000"]) == 0
    everything = capsys.readouterr().out
    assert '"total"' in everything and '"user_id"' not in everything
    assert main(["charges", "list", "--since", "not-a-time"]) != 0
    assert "ISO 8601" in capsys.readouterr().err
