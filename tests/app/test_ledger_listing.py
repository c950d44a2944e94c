"""GET /v1/users, GET /v1/cohorts and GET /v1/summary over real HTTP (a ``serve`` process), on
SQLite and on PostgreSQL (TEST_POSTGRES_URL).

One seeded ledger per backend (module scope; these tests only read it): bulk users in one class,
users with their own budgets and policies, ids at the edges of code-point order, cohorts with
rounds and a late joiner, explicit charges splitting classes, a user charged until refused.

Expected values never come from the listing code: every item must equal the user's own
``GET /v1/users/{id}`` view, ``last_charge_at`` must equal the newest entry of the user's charge
log (``GET /v1/users/{id}/charges``), filters are checked against Python over those views, and
orders against Python's code-point sort.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta
from urllib.parse import quote

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import create_engine, text

from app.ledger.paging import MAX_OFFSET
from app.ledger.sql import prefix_successor
from tests.helpers import ledger as ls
from tests.helpers.ledger import ADMIN, KEYS_ENV, PIPE, VIEW
from tests.helpers.server import start_server

CHEAP = {"mechanism": "gaussian", "noise_multiplier": 12.0}
STEP = {"mechanism": "gaussian", "noise_multiplier": 20.0}
EDGE_IDS = [
    "a",
    "ab",
    "a\U0010ffffb",
    "a\U0010ffff",
    "\U0010ffff",
    "\ud7ffx",
    "\ue000y",
    "\uffff",
    "é1",
    "é2",
    "z",
]
SORTS = ["user_id", "remaining", "-remaining", "spent", "-spent", "last_charge", "-last_charge"]


class Seeded:
    def __init__(self, url: str, db_url: str):
        self.url = url
        self.db_url = db_url
        self.admitted = 0
        self.refused = 0
        self.views: dict[str, dict] = {}
        self.last_charge: dict[str, str | None] = {}
        self.history: dict[str, tuple[str, ...]] = {}  # the charge ids that reached each user


def _seed(c: httpx.Client, seeded: Seeded) -> None:
    def ok(r, code=200):
        assert r.status_code == code, r.text
        return r.json()

    def charge(body):
        r = c.post("/v1/charges", json=body, headers=PIPE)
        assert r.status_code in (201, 409), r.text
        if r.status_code == 201:
            seeded.admitted += 1
        else:
            assert r.json()["status"] == "refused"
            seeded.refused += 1
        return r

    budget = {"epsilon": 8.0, "delta": 1e-6}
    ok(
        c.post(
            "/v1/users/bulk",
            json={"id_range": {"prefix": "dev-", "start": 100, "count": 30}, "budget": budget},
            headers=ADMIN,
        ),
        201,
    )
    ok(
        c.post(
            "/v1/users/bulk",
            json={"users": EDGE_IDS, "budget": {"epsilon": 4.0, "delta": 1e-5}},
            headers=ADMIN,
        ),
        201,
    )
    for i in range(1, 6):
        ok(
            c.put(f"/v1/users/p-{i}", json={"budget": {"epsilon": float(i), "delta": 1e-6}}, headers=ADMIN),
            201,
        )
    for i in (1, 2):
        ok(
            c.put(
                f"/v1/users/f-{i}",
                json={"budget": {"epsilon": 6.0, "delta": 1e-6}, "policy": "filter", "filter_order": 16.0},
                headers=ADMIN,
            ),
            201,
        )
    for cid, members in (("pop", range(100, 115)), ("pop-b", range(110, 120)), ("other", [])):
        ok(c.post("/v1/cohorts", json={"cohort_id": cid}, headers=ADMIN), 201)
        if members:
            ok(
                c.post(
                    f"/v1/cohorts/{cid}/members", json={"users": [f"dev-{i}" for i in members]}, headers=ADMIN
                )
            )
    for _ in range(2):
        charge({"cohort": "pop", "event": CHEAP})
    charge({"cohort": "pop-b", "event": CHEAP})
    ok(c.post("/v1/cohorts/pop/members", json={"users": ["dev-129", "a"]}, headers=ADMIN))  # late joiners
    charge({"users": ["dev-101", "dev-120", "p-2", "f-1", "é1"], "event": CHEAP})
    charge({"users": ["dev-102", "p-3"], "event": {**CHEAP, "count": 5}})
    charge({"cohort": "pop", "event": CHEAP})
    # p-1 (ε = 1) charged in small steps until refused: ends near exhaustion
    while charge({"users": ["p-1"], "event": STEP}).status_code == 201:
        pass
    charge({"users": ["p-4", "f-2"], "event": {"mechanism": "gaussian", "noise_multiplier": 0.3}})  # refused
    names = (
        [f"dev-{i}" for i in range(100, 130)] + EDGE_IDS + [f"p-{i}" for i in range(1, 6)] + ["f-1", "f-2"]
    )
    for u in names:
        seeded.views[u] = ok(c.get(f"/v1/users/{quote(u, safe='')}", headers=VIEW))
        log = ok(c.get(f"/v1/users/{quote(u, safe='')}/charges", params={"limit": 10000}, headers=VIEW))
        assert log["total"] == seeded.views[u]["charges"]
        seeded.history[u] = tuple(x["charge_id"] for x in log["charges"])
        seeded.last_charge[u] = max(
            (x["created_at"] for x in log["charges"]), default=None, key=lambda s: datetime.fromisoformat(s)
        )


@pytest.fixture(scope="module", params=ls.BACKENDS)
def seeded(request, tmp_path_factory):
    if request.param == "sqlite":
        db_url = f"sqlite:///{tmp_path_factory.mktemp('listing')}/ledger.db"
    else:
        db_url = ls.pg_test_url()
        ls.truncate_pg(db_url)
    env = {"DATABASE_URL": db_url, "ACCOUNTANT_API_KEYS": KEYS_ENV, "ACCOUNTANT_LOG_LEVEL": "WARNING"}
    with start_server(env) as srv:
        s = Seeded(srv.url, db_url)
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            _seed(c, s)
        yield s


def _get(seeded: Seeded, path: str, headers=VIEW, **params) -> httpx.Response:
    return httpx.get(seeded.url + path, params=params, headers=headers, timeout=60)


def _all(seeded: Seeded, sort: str, **filters) -> list[dict]:
    r = _get(seeded, "/v1/users", limit=500, sort=sort, **filters)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["total"] == len(body["items"]) and body["limit"] == 500 and body["offset"] == 0
    return body["items"]


def _key(item: dict, sort: str):
    k = sort.lstrip("-")
    return {
        "remaining": item["remaining_epsilon"],
        "spent": item["spent"]["epsilon"],
        "last_charge": item["last_charge_at"] and datetime.fromisoformat(item["last_charge_at"]),
    }.get(k)


# ---------------------------------------------------------------------------------------------- users


def test_every_item_is_the_users_own_view_plus_its_last_charge(seeded):
    items = _all(seeded, "user_id")
    assert [i["user_id"] for i in items] == sorted(seeded.views)  # Python sorts by code point
    for item in items:
        u = item["user_id"]
        expected_last = seeded.last_charge[u]
        last = item.pop("last_charge_at")
        assert item == seeded.views[u], u
        assert (last is None) == (expected_last is None), u
        if last is not None:
            assert datetime.fromisoformat(last) == datetime.fromisoformat(expected_last), u
    # the seed reached every kind of history
    assert seeded.last_charge["dev-129"] is not None and seeded.last_charge["dev-128"] is None
    assert seeded.views["dev-129"]["charges"] == 1 and seeded.views["dev-100"]["charges"] == 3


@pytest.mark.parametrize("sort", SORTS[1:])
def test_sorted_by_a_class_key(seeded, sort):
    items = _all(seeded, sort)
    assert sorted(i["user_id"] for i in items) == sorted(seeded.views)
    keys = [_key(i, sort) for i in items]
    charged = [k for k in keys if k is not None]
    assert keys[: len(charged)] == charged  # never-charged users (last_charge null) come last
    assert charged == sorted(charged, reverse=sort.startswith("-"))
    # users sharing budget and charge history (one budget class in this seed) are listed together,
    # by user id (reversed for a descending sort)
    runs: list[tuple[tuple, list[str]]] = []
    for i in items:
        sig = (i["budget"]["epsilon"], i["budget"]["delta"], i["policy"], seeded.history[i["user_id"]])
        if runs and runs[-1][0] == sig:
            runs[-1][1].append(i["user_id"])
        else:
            runs.append((sig, [i["user_id"]]))
    assert len({sig for sig, _ in runs}) == len(runs)  # contiguous
    for _, ids in runs:
        assert ids == sorted(ids, reverse=sort.startswith("-"))
    assert max(len(ids) for _, ids in runs) >= 5


@pytest.mark.parametrize("key", ["remaining", "spent", "last_charge"])
def test_a_descending_sort_is_the_ascending_one_reversed(seeded, key):
    up = [i["user_id"] for i in _all(seeded, key)]
    down = [i["user_id"] for i in _all(seeded, "-" + key)]
    if key != "last_charge":
        assert down == up[::-1]
    else:
        never = sum(1 for u in up if seeded.last_charge[u] is None)
        assert never > 0
        assert down[:-never] == up[:-never][::-1] and down[-never:] == up[-never:][::-1]


@pytest.mark.parametrize("sort", SORTS)
def test_pages_concatenate_to_the_full_listing(seeded, sort):
    full = [i["user_id"] for i in _all(seeded, sort)]
    for filters in ({}, {"prefix": "dev-1"}):
        expected = [u for u in full if u.startswith(filters.get("prefix", ""))]
        got, offset = [], 0
        while True:
            r = _get(seeded, "/v1/users", limit=7, offset=offset, sort=sort, **filters).json()
            assert r["total"] == len(expected) and r["limit"] == 7 and r["offset"] == offset
            if not r["items"]:
                break
            got += [i["user_id"] for i in r["items"]]
            offset += 7
        assert got == expected and offset >= len(expected)


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "dev-",
        "dev-12",
        "dev-129",
        "p-",
        "a",
        "a\U0010ffff",
        "\U0010ffff",
        "\ud7ff",
        "\ue000",
        "é",
        "\uffff",
        "zz",
        "ä",
    ],
)
def test_prefix_filter_is_exact_at_code_point_edges(seeded, prefix):
    for sort in ("user_id", "remaining"):
        items = _all(seeded, sort, prefix=prefix)
        assert sorted(i["user_id"] for i in items) == sorted(u for u in seeded.views if u.startswith(prefix))


def test_policy_and_remaining_filters_alone_and_combined(seeded):
    v = seeded.views
    cases = [
        ({"policy": "filter"}, lambda x: x["policy"] == "filter"),
        ({"policy": "declared"}, lambda x: x["policy"] == "declared"),
        ({"remaining_below": 3.5}, lambda x: x["remaining_epsilon"] < 3.5),
        ({"remaining_below": 0.0}, lambda x: x["remaining_epsilon"] < 0.0),
        (
            {"remaining_below": 7.9, "prefix": "dev-1"},
            lambda x: x["remaining_epsilon"] < 7.9 and x["user_id"].startswith("dev-1"),
        ),
        (
            {"policy": "filter", "remaining_below": 6.0},
            lambda x: x["policy"] == "filter" and x["remaining_epsilon"] < 6,
        ),
    ]
    for filters, pred in cases:
        expected = sorted(u for u, x in v.items() if pred(x))
        for sort in ("user_id", "-spent", "last_charge"):
            got = [i["user_id"] for i in _all(seeded, sort, **filters)]
            assert sorted(got) == expected, (filters, sort)
            if sort == "user_id":  # sparse filters take another query plan: same order
                assert got == expected
                for offset in range(0, len(expected), 3):
                    page = _get(seeded, "/v1/users", limit=3, offset=offset, **filters).json()
                    assert [i["user_id"] for i in page["items"]] == expected[offset : offset + 3]
                    assert page["total"] == len(expected)
    assert any(x["remaining_epsilon"] < 3.5 for x in v.values())  # the filters select something


def test_every_role_may_list_and_a_missing_key_may_not(seeded):
    for h in (VIEW, PIPE, ADMIN):
        for path in ("/v1/users", "/v1/cohorts", "/v1/summary"):
            assert _get(seeded, path, headers=h).status_code == 200, (path, h)
    for path in ("/v1/users", "/v1/cohorts", "/v1/summary"):
        assert _get(seeded, path, headers={}).status_code == 401
        assert _get(seeded, path, headers={"Authorization": "Bearer nope"}).status_code == 401


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 501},
        {"offset": -1},
        {"sort": "remaining_epsilon"},
        {"sort": "-user_id"},
        {"policy": "other"},
        {"remaining_below": "nan"},
        {"remaining_below": "inf"},
        {"remaining_below": "x"},
        {"prefix": "a\x00"},
        {"prefix": "x" * 257},
        {"remaining": 1.0},
        {"": "x"},
    ],
)
def test_invalid_listing_parameters_are_422(seeded, params):
    r = _get(seeded, "/v1/users", **params)
    assert r.status_code == 422, (params, r.text)
    assert r.json()["detail"]


def test_defaults_and_an_offset_past_the_end(seeded):
    r = _get(seeded, "/v1/users").json()
    assert r["limit"] == 50 and r["offset"] == 0 and len(r["items"]) == min(50, len(seeded.views))
    assert r["next_cursor"] is None  # one page holds the whole seed
    for sort in SORTS:
        r = _get(seeded, "/v1/users", offset=MAX_OFFSET, sort=sort).json()
        assert r["items"] == [] and r["total"] == len(seeded.views) and r["next_cursor"] is None


@pytest.mark.parametrize(
    "path", ["/v1/users", "/v1/cohorts", "/v1/users/dev-100/charges", "/v1/cohorts/pop/members"]
)
def test_an_offset_above_the_maximum_is_a_400_saying_to_use_the_cursor(seeded, path):
    for offset in (MAX_OFFSET + 1, 3_500_000, 10**12):
        r = _get(seeded, path, offset=offset)
        assert r.status_code == 400, r.text
        detail = r.json()["detail"]
        assert f"maximum {MAX_OFFSET}" in detail and "next_cursor" in detail and "cursor" in detail


@pytest.mark.parametrize("sort", SORTS)
def test_cursor_pages_concatenate_to_the_full_listing(seeded, sort):
    full = [i["user_id"] for i in _all(seeded, sort)]
    for filters in ({}, {"prefix": "dev-1"}, {"remaining_below": 7.9}, {"policy": "filter"}, {"prefix": "a"}):
        expected = [i["user_id"] for i in _all(seeded, sort, **filters)]
        assert [u for u in full if u in set(expected)] == expected
        for limit in (1, 3, 7):
            got, cursor, pages = [], None, 0
            while True:
                params = {"limit": limit, "sort": sort, **filters, **({"cursor": cursor} if cursor else {})}
                r = _get(seeded, "/v1/users", **params)
                assert r.status_code == 200, r.text
                body = r.json()
                assert body["total"] == len(expected) and body["offset"] == 0 and len(body["items"]) <= limit
                got += [i["user_id"] for i in body["items"]]
                pages += 1
                cursor = body["next_cursor"]
                if cursor is None:
                    break
                assert len(body["items"]) == limit
            assert got == expected, (sort, filters, limit)
            assert pages == max(1, -(-len(expected) // limit))  # the last full page says there is no next


def test_an_offset_page_hands_out_a_cursor_to_continue_from(seeded):
    full = [i["user_id"] for i in _all(seeded, "-remaining")]
    first = _get(seeded, "/v1/users", limit=5, offset=10, sort="-remaining").json()
    rest = _get(seeded, "/v1/users", limit=500, sort="-remaining", cursor=first["next_cursor"]).json()
    assert [i["user_id"] for i in first["items"] + rest["items"]] == full[10:]


def _cursor(listing: str, values: list) -> str:
    raw = json.dumps({"k": listing, "v": values}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "x",
        "!!!!",
        "e30",  # {}
        base64.urlsafe_b64encode(b"not json").decode(),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        _cursor("users:remaining", [1.0, 1, "a"]),  # another sort's
        _cursor("cohorts", ["a"]),  # another listing's
        _cursor("users:user_id", [1]),
        _cursor("users:user_id", ["a", "b"]),
        _cursor("users:user_id", []),
        "A" * 5000,
        base64.urlsafe_b64encode(b"[" * 3000).decode(),  # nesting deeper than the parser's recursion
        base64.urlsafe_b64encode(b'{"k": "users:user_id", "v": ["\\ud800"]}').decode(),  # a lone surrogate
        base64.urlsafe_b64encode(b'{"k": "users:user_id", "v": ["a\\u0000"]}').decode(),  # NUL: no id
    ],
)
def test_a_cursor_this_listing_did_not_hand_out_is_a_400(seeded, cursor):
    r = _get(seeded, "/v1/users", cursor=cursor)
    assert r.status_code == 400, r.text
    assert "cursor" in r.json()["detail"] and "next_cursor" in r.json()["detail"]


@pytest.mark.parametrize(
    "sort, values",
    [
        ("remaining", ["x", 1, "a"]),
        ("remaining", [1.0, True, "a"]),
        ("spent", [None, 1, "a"]),
        ("last_charge", ["not a time", 1, "a"]),
        ("last_charge", [1.5, 1, "a"]),
        ("remaining", [1.0, 2**70, "a"]),
    ],
)
def test_a_cursor_with_values_of_the_wrong_type_is_a_400(seeded, sort, values):
    r = _get(seeded, "/v1/users", sort=sort, cursor=_cursor(f"users:{sort}", values))
    assert r.status_code == 400, r.text
    assert "cursor" in r.json()["detail"]


def test_a_cursor_and_an_offset_together_are_a_400(seeded):
    page = _get(seeded, "/v1/users", limit=2).json()
    r = _get(seeded, "/v1/users", limit=2, offset=2, cursor=page["next_cursor"])
    assert r.status_code == 400 and "not both" in r.json()["detail"]


def test_charges_members_and_cohorts_follow_their_cursors(seeded):
    def walk(path, field, **params):
        got, cursor = [], None
        while True:
            r = _get(seeded, path, **params, **({"cursor": cursor} if cursor else {}))
            assert r.status_code == 200, r.text
            got += r.json()[field]
            cursor = r.json()["next_cursor"]
            if cursor is None:
                return got

    charges = _get(seeded, "/v1/users/dev-100/charges", limit=1000).json()["charges"]
    assert len(charges) >= 3 and walk("/v1/users/dev-100/charges", "charges", limit=1) == charges
    for history in ("false", "true"):
        members = _get(seeded, "/v1/cohorts/pop/members", limit=1000, history=history).json()["members"]
        assert len(members) >= 16
        assert walk("/v1/cohorts/pop/members", "members", limit=4, history=history) == members
    cohorts = _get(seeded, "/v1/cohorts", limit=500).json()["items"]
    assert walk("/v1/cohorts", "items", limit=1) == cohorts
    # a members cursor with history is not one without
    c = _get(seeded, "/v1/cohorts/pop/members", limit=1, history="true").json()["next_cursor"]
    r = _get(seeded, "/v1/cohorts/pop/members", limit=1, cursor=c)
    assert r.status_code == 400 and "another listing" in r.json()["detail"]


# ---------------------------------------------------------------------------------------------- cohorts


def test_cohort_listing(seeded):
    r = _get(seeded, "/v1/cohorts").json()
    assert [c["cohort_id"] for c in r["items"]] == ["other", "pop", "pop-b"] and r["total"] == 3
    for c in r["items"]:
        assert c == _get(seeded, f"/v1/cohorts/{c['cohort_id']}").json()
    assert {c["cohort_id"]: c["members"] for c in r["items"]} == {"other": 0, "pop": 17, "pop-b": 10}
    r = _get(seeded, "/v1/cohorts", prefix="pop").json()
    assert [c["cohort_id"] for c in r["items"]] == ["pop", "pop-b"] and r["total"] == 2
    r = _get(seeded, "/v1/cohorts", prefix="pop", limit=1, offset=1).json()
    assert [c["cohort_id"] for c in r["items"]] == ["pop-b"] and r["total"] == 2
    assert _get(seeded, "/v1/cohorts", prefix="nope").json() == {
        "items": [],
        "total": 0,
        "limit": 50,
        "offset": 0,
        "next_cursor": None,
    }
    assert _get(seeded, "/v1/cohorts", limit=0).status_code == 422
    assert _get(seeded, "/v1/cohorts", prefx="pop").status_code == 422


# ---------------------------------------------------------------------------------------------- summary


def test_summary_counts_what_happened(seeded):
    s = _get(seeded, "/v1/summary").json()
    near = [u for u, x in seeded.views.items() if x["remaining_epsilon"] < 0.1 * x["budget"]["epsilon"]]
    assert "p-1" in near
    assert s["users"] == len(seeded.views) and s["cohorts"] == 3
    assert s["charges"] == seeded.admitted and s["refusals"] == seeded.refused >= 2
    assert s["near_exhaustion"] == len(near) and s["near_exhaustion_fraction"] == 0.1
    assert s["bucket"] == "hour" and len(s["timeline"]) == 48
    starts = [datetime.fromisoformat(b["start"]) for b in s["timeline"]]
    assert all(b - a == timedelta(hours=1) for a, b in zip(starts, starts[1:]))
    assert all(t.minute == t.second == t.microsecond == 0 and t.utcoffset() == timedelta(0) for t in starts)
    assert sum(b["admitted"] for b in s["timeline"]) == seeded.admitted
    assert sum(b["refused"] for b in s["timeline"]) == seeded.refused
    d = _get(seeded, "/v1/summary", bucket="day", buckets=30).json()
    assert d["bucket"] == "day" and len(d["timeline"]) == 30
    starts = [datetime.fromisoformat(b["start"]) for b in d["timeline"]]
    assert all(b - a == timedelta(days=1) for a, b in zip(starts, starts[1:])) and starts[-1].hour == 0
    assert sum(b["admitted"] for b in d["timeline"]) == seeded.admitted
    assert sum(b["refused"] for b in d["timeline"]) == seeded.refused
    assert len(_get(seeded, "/v1/summary", bucket="day").json()["timeline"]) == 30
    for bad in ({"bucket": "week"}, {"buckets": 0}, {"buckets": 1001}, {"bucktes": 3}):
        assert _get(seeded, "/v1/summary", **bad).status_code == 422


def test_postgres_ids_collate_by_code_point(seeded):
    if seeded.db_url.startswith("sqlite"):
        pytest.skip("SQLite compares text by its UTF-8 bytes, i.e. by code point")
    eng = create_engine(seeded.db_url)
    try:
        with eng.connect() as c:
            rows = dict(
                c.execute(
                    text(
                        "SELECT table_name, collation_name FROM information_schema.columns WHERE table_schema = "
                        "current_schema() AND ((table_name = 'ledger_users' AND column_name = 'user_id') OR "
                        "(table_name = 'ledger_cohorts' AND column_name = 'cohort_id'))"
                    )
                ).all()
            )
    finally:
        eng.dispose()
    assert rows == {"ledger_users": "C", "ledger_cohorts": "C"}


# ---------------------------------------------------------------------------------------------- prefix rule


@given(st.text(max_size=4), st.text(max_size=6))
def test_prefix_range_successor_matches_startswith(prefix, s):
    """prefix ≤ s < successor(prefix) ⇔ s starts with prefix (code-point order; stored text has no surrogates)."""
    prefix = "".join(ch for ch in prefix if not 0xD800 <= ord(ch) <= 0xDFFF)
    s = "".join(ch for ch in s if not 0xD800 <= ord(ch) <= 0xDFFF)
    for cand in (s, prefix + s, prefix[:-1] + s):
        hi = prefix_successor(prefix)
        inside = prefix <= cand and (hi is None or cand < hi)
        assert inside == cand.startswith(prefix), (prefix, cand, hi)
