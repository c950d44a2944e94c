"""Cursor pages are consistent while the ledger changes (a real ``serve`` process, SQLite and
PostgreSQL): following ``next_cursor`` through ``GET /v1/users`` (every sort), a cohort's members
and a user's charges lists every row that existed when the walk started exactly once, in the
listing's order, while users, members and charges are inserted between the pages — before and
after the walk's position. An ``offset`` walk under the same inserts repeats rows (why the cursor
exists)."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers import ledger as ls
from tests.helpers.ledger import ADMIN, KEYS_ENV, PIPE, VIEW
from tests.helpers.server import start_server

SORTS = ["user_id", "remaining", "-remaining", "spent", "-spent", "last_charge", "-last_charge"]
CHEAP = {"mechanism": "gaussian", "noise_multiplier": 30.0}
BUDGET = {"epsilon": 8.0, "delta": 1e-6}


def ok(r: httpx.Response, code: int = 200) -> dict:
    assert r.status_code == code, r.text
    return r.json()


@pytest.fixture(scope="module", params=ls.BACKENDS)
def server(request, tmp_path_factory):
    if request.param == "sqlite":
        db_url = f"sqlite:///{tmp_path_factory.mktemp('paging')}/ledger.db"
    else:
        db_url = ls.pg_test_url()
        ls.truncate_pg(db_url)
    env = {"DATABASE_URL": db_url, "ACCOUNTANT_API_KEYS": KEYS_ENV, "ACCOUNTANT_LOG_LEVEL": "WARNING"}
    with start_server(env) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        # m-000…m-119 in one class; a few in classes of their own (charged, other budgets)
        ok(
            c.post(
                "/v1/users/bulk",
                json={"id_range": {"prefix": "m-", "start": 100, "count": 120}, "budget": BUDGET},
                headers=ADMIN,
            ),
            201,
        )
        for i in range(8):
            ok(
                c.put(
                    f"/v1/users/m-{100 + 15 * i}-own",
                    json={"budget": {"epsilon": 2.0 + i, "delta": 1e-6}},
                    headers=ADMIN,
                ),
                201,
            )
            ok(
                c.post(
                    "/v1/charges", json={"users": [f"m-{100 + 15 * i}-own"], "event": CHEAP}, headers=PIPE
                ),
                201,
            )
        ok(c.post("/v1/cohorts", json={"cohort_id": "walk"}, headers=ADMIN), 201)
        ok(
            c.post(
                "/v1/cohorts/walk/members", json={"users": [f"m-{i}" for i in range(100, 160)]}, headers=ADMIN
            )
        )
        for _ in range(12):
            ok(c.post("/v1/charges", json={"cohort": "walk", "event": CHEAP}, headers=PIPE), 201)
        yield c


def _key(item: dict, sort: str):
    k = sort.lstrip("-")
    if k == "user_id":
        return item["user_id"]
    return {
        "remaining": item["remaining_epsilon"],
        "spent": item["spent"]["epsilon"],
        "last_charge": item["last_charge_at"],
    }[k]


def _walk(c: httpx.Client, path: str, field: str, between, **params) -> list[dict]:
    got, cursor, i = [], None, 0
    while True:
        body = ok(c.get(path, params={**params, **({"cursor": cursor} if cursor else {})}, headers=VIEW))
        got += body[field]
        cursor = body["next_cursor"]
        if cursor is None:
            return got
        between(i)
        i += 1


@pytest.mark.parametrize("sort", SORTS)
def test_user_pages_list_every_user_once_in_order_across_inserts(server, sort):
    c = server
    before = {i["user_id"] for i in ok(c.get("/v1/users", params={"limit": 500}, headers=VIEW))["items"]}
    tag = sort.replace("-", "d")

    def insert(i: int) -> None:  # new users around the walk's position: ids before and after, same class
        names = [f"m-{100 + 7 * i}-{tag}", f"m-{199 - 5 * i}-{tag}", f"a-{tag}-{i}", f"z-{tag}-{i}"]
        ok(
            c.post(
                "/v1/users/bulk",
                json={"users": names, "budget": BUDGET, "on_conflict": "skip"},
                headers=ADMIN,
            ),
            201,
        )

    items = _walk(c, "/v1/users", "items", insert, limit=9, sort=sort)
    ids = [i["user_id"] for i in items]
    assert len(ids) == len(set(ids)), "a user listed twice"
    assert before <= set(ids), f"users skipped: {sorted(before - set(ids))[:5]}"
    keys = [_key(i, sort) for i in items]
    if sort.lstrip("-") != "last_charge":
        assert keys == sorted(keys, reverse=sort.startswith("-"))
    else:  # never-charged users last
        charged = [k for k in keys if k is not None]
        assert keys[: len(charged)] == charged and charged == sorted(charged, reverse=sort.startswith("-"))


def test_an_offset_walk_under_the_same_inserts_lists_users_twice(server):
    c = server
    seen, offset = [], 0
    while True:
        items = ok(c.get("/v1/users", params={"limit": 9, "offset": offset}, headers=VIEW))["items"]
        if not items:
            break
        seen += [i["user_id"] for i in items]
        ok(
            c.post("/v1/users/bulk", json={"users": [f"a-offset-{offset}"], "budget": BUDGET}, headers=ADMIN),
            201,
        )
        offset += 9
    assert len(seen) > len(set(seen))  # what the cursor prevents


def test_member_and_charge_pages_across_inserts(server):
    c = server
    members = ok(c.get("/v1/cohorts/walk/members", params={"limit": 1000}, headers=VIEW))["members"]
    charges = ok(c.get("/v1/users/m-100/charges", params={"limit": 1000}, headers=VIEW))["charges"]
    n = iter(range(160, 220))

    def join_and_charge(_i: int) -> None:
        ok(c.post("/v1/cohorts/walk/members", json={"users": [f"m-{next(n)}"]}, headers=ADMIN))
        ok(c.post("/v1/charges", json={"cohort": "walk", "event": CHEAP}, headers=PIPE), 201)

    walked = _walk(c, "/v1/cohorts/walk/members", "members", join_and_charge, limit=7)
    assert walked[: len(members)] == members  # every member once, in join order, then the new ones
    names = [m["user_id"] for m in walked]
    assert len(names) == len(set(names)) and len(walked) > len(members)
    walked = _walk(c, "/v1/users/m-100/charges", "charges", join_and_charge, limit=2)
    assert walked[: len(charges)] == charges and len(walked) > len(charges)
    ids = [int(x["charge_id"]) for x in walked]
    assert ids == sorted(set(ids))
