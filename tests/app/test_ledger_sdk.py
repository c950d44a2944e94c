"""The SDK's ledger methods against a real ``serve`` process (SQLite): typed results and refusals,
automatic idempotency keys, cohorts and dashboards, the async client, the deprecated call forms."""

from __future__ import annotations

import asyncio
import math

import pytest

from privacy_accountant import (
    AccountantClient,
    AsyncAccountantClient,
    BudgetExceeded,
    Conflict,
    Forbidden,
    NotFound,
    Unauthorized,
)
from privacy_accountant import models as m
from tests.helpers import ledger as ls
from tests.helpers.ledger import KEYS_ENV
from tests.helpers.server import start_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("sdk")
    env = {
        "DATABASE_URL": f"sqlite:///{d}/sdk.db",
        "ACCOUNTANT_API_KEYS": KEYS_ENV,
        "ACCOUNTANT_LOG_LEVEL": "DEBUG",
    }
    with start_server(env) as srv:
        yield srv


def test_sdk_ledger_round_trip(server):
    admin = AccountantClient(server.url, api_key="admin-key-0123456789")
    pipe = AccountantClient(server.url, api_key="pipeline-key-0123456789")
    viewer = AccountantClient(server.url, api_key="viewer-key-0123456789")
    try:
        created = admin.put_user("a", budget={"epsilon": 1.0, "delta": 1e-6})
        assert isinstance(created, m.User) and created.budget.epsilon == 1.0 and created.charges == 0
        admin.put_user("b", budget={"epsilon": 50.0, "delta": 1e-6}, policy="declared")
        ev = {"mechanism": "gaussian", "noise_multiplier": 8.0}
        first = pipe.charge(ev, ["a", "b"])
        assert isinstance(first, m.Charge) and first.users == 2 and first.event.noise_multiplier == 8.0
        assert first["status"] == "admitted" and first["idempotency_key"].startswith("sdk-")
        again = pipe.charge(ev, ["a", "b"], idempotency_key=first["idempotency_key"])
        assert again["charge_id"] == first["charge_id"] and again["replayed"]
        with pytest.raises(BudgetExceeded) as exc:
            for _ in range(50):
                pipe.charge(ev, ["a", "b"])
        assert exc.value.refused_users == ["a"] and exc.value.status_code == 409
        with pytest.raises(Conflict) as exc2:
            pipe.charge(
                {"mechanism": "pure_dp", "epsilon": 0.1}, ["b"], idempotency_key=first["idempotency_key"]
            )
        assert not isinstance(exc2.value, BudgetExceeded)
        with pytest.raises(NotFound):
            pipe.charge(ev, ["ghost"])
        with pytest.raises(Forbidden):
            viewer.charge(ev, ["b"])

        budget = {"epsilon": 8.0, "delta": 1e-6}
        assert admin.bulk_create_users(budget=budget, id_prefix="dev-", count=50).created == 50
        more = admin.bulk_create_users(
            budget=budget, id_range={"prefix": "dev-", "start": 0, "count": 60}, on_conflict="skip"
        )
        assert (more.created, more.skipped) == (10, 50)
        admin.create_cohort("pop", "test population")
        assert admin.add_members("pop", id_prefix="dev-", count=60)["added"] == 60
        assert admin.add_members("pop", ["dev-1"])["already_members"] == 1
        r = pipe.charge_cohort({"mechanism": "gaussian", "noise_multiplier": 10.0}, "pop")
        assert r["users"] == 60 and r["cohort_round"] == 1
        assert admin.remove_members("pop", ["dev-1"])["removed"] == 1
        assert viewer.get_cohort("pop")["members"] == 59
        assert viewer.get_user("dev-1")["charges"] == 1
        assert viewer.user_cohorts("dev-1")["memberships"][0]["left_after_round"] == 1
        assert len(viewer.cohort_members("pop", history=True, limit=1000)["members"]) == 60
        assert viewer.cohort_history("pop")["rounds"] == 1
        assert viewer.user_history("a")["charges"] == viewer.get_user("a")["charges"]
        assert viewer.user_audit("a")["running_not_below_recomputed"]
        assert viewer.nearest_exhaustion(1)["users"][0]["user_id"] == "a"
        assert len(viewer.user_charges("b")["charges"]) == viewer.get_user("b")["charges"]
    finally:
        for c in (admin, pipe, viewer):
            c.close()


def test_no_api_key_in_the_server_log(server):
    bad = AccountantClient(server.url, api_key="wrong-secret-key-42")
    try:
        with pytest.raises(Unauthorized):
            bad.get_user("a")
    finally:
        bad.close()
    with AccountantClient(server.url, api_key="admin-key-0123456789") as c:
        c.put_user("log-check", budget={"epsilon": 1.0, "delta": 1e-6})
        c.get_user("log-check")
        with pytest.raises(NotFound):
            c.get_user("nobody")
    log = server.log_text()
    for key in (
        "admin-key-0123456789",
        "pipeline-key-0123456789",
        "viewer-key-0123456789",
        "wrong-secret-key-42",
    ):
        assert key not in log


def test_budget_exceeded_carries_each_refused_users_remaining_and_the_cost(server):
    with (
        AccountantClient(server.url, api_key="admin-key-0123456789") as admin,
        AccountantClient(server.url, api_key="pipeline-key-0123456789") as pipe,
    ):
        admin.put_user("r-small", budget={"epsilon": 1.0, "delta": 1e-6})
        admin.put_user("r-tiny", budget={"epsilon": 0.5, "delta": 1e-6})
        admin.put_user("r-big", budget={"epsilon": 100.0, "delta": 1e-6})
        ev = {"mechanism": "gaussian", "noise_multiplier": 1.0, "count": 2}
        with pytest.raises(BudgetExceeded) as exc:
            pipe.charge(ev, ["r-big", "r-small", "r-tiny"])
        e = exc.value
        assert e.refused_users == ["r-small", "r-tiny"] and e.refused_count == 2
        cost = ls.eps_declared(ls.curve(ev), 1e-6)  # independent: the event alone at δ = 1e-6
        assert e.cost.epsilon == pytest.approx(cost, rel=1e-12)
        assert [(r.user_id, r.remaining_epsilon) for r in e.refusals] == [("r-small", 1.0), ("r-tiny", 0.5)]
        assert all(r.cost_epsilon == pytest.approx(cost, rel=1e-12) for r in e.refusals)
        assert pipe.get_user("r-big").charges == 0  # nothing recorded


def test_a_budget_is_one_argument_in_the_body_shape(server):
    """``budget`` is one argument shaped like the JSON body (or an (ε, δ) pair); ε and δ as two
    positional arguments are a TypeError before any request."""
    with AccountantClient(server.url, api_key="admin-key-0123456789") as admin:
        u = admin.put_user("pair-1", (2.0, 1e-6))
        assert (u.budget.epsilon, u.budget.delta, u.policy) == (2.0, 1e-6, "declared")
        with pytest.raises(TypeError):
            admin.put_user("pair-2", 3.0, 1e-6)
        with pytest.raises(TypeError):
            admin.bulk_create_users(4.0, 1e-6, ["pair-3"])
        with pytest.raises(TypeError, match="budget"):
            admin.put_user("pair-4", {"epsilon": 1.0})


def test_async_client_round_trip(server):
    async def main():
        async with (
            AsyncAccountantClient(server.url, api_key="admin-key-0123456789") as admin,
            AsyncAccountantClient(server.url, api_key="pipeline-key-0123456789") as pipe,
        ):
            assert (await admin.health()).status == "ok"
            users = [f"async-{i}" for i in range(5)]
            created = await asyncio.gather(
                *(admin.put_user(u, budget={"epsilon": 1.0, "delta": 1e-6}) for u in users)
            )
            assert [c.user_id for c in created] == users
            ev = {"mechanism": "gaussian", "noise_multiplier": 8.0}
            charge = await pipe.charge(ev, users)
            assert isinstance(charge, m.Charge) and charge.users == 5
            page = await pipe.list_users(prefix="async-", sort="-spent", limit=10)
            assert page.total == 5 and {u.user_id for u in page.items} == set(users)
            assert all(u.charges == 1 and u.last_charge_at is not None for u in page.items)
            with pytest.raises(BudgetExceeded) as exc:
                for _ in range(100):
                    await pipe.charge(ev, users[:1])
            assert exc.value.refused_users == users[:1]
            with pytest.raises(NotFound):
                await pipe.get_user("async-nobody")
            curve = await pipe.user_curve(users[0])
            assert len(curve.orders) == len(curve.spent) == len(curve.budget_curve)
            eps = await pipe.epsilon([ev], delta=1e-6)
            assert math.isfinite(eps.epsilon)

    asyncio.run(main())


def test_listing_and_summary_results_are_typed(server):
    with AccountantClient(server.url, api_key="viewer-key-0123456789") as v:
        page = v.list_users(limit=2, sort="remaining")
        assert isinstance(page, m.UserPage) and len(page.items) == 2 and page.total >= 2
        assert page.items[0].remaining_epsilon <= page.items[1].remaining_epsilon
        s = v.summary()
        assert isinstance(s, m.LedgerSummary) and s.users == v.list_users(limit=1).total
        assert isinstance(v.list_cohorts(), m.CohortPage)


def test_iter_pages_follows_the_cursors_sync_and_async(server):
    with AccountantClient(server.url, api_key="admin-key-0123456789") as admin:
        admin.bulk_create_users(id_prefix="pg-", count=23, budget={"epsilon": 2.0, "delta": 1e-6})
        full = admin.list_users(prefix="pg-", limit=500, sort="-remaining")
        pages = list(admin.iter_pages(admin.list_users, prefix="pg-", limit=5, sort="-remaining"))
        assert [len(p.items) for p in pages] == [5, 5, 5, 5, 3] and pages[-1].next_cursor is None
        assert [u.user_id for p in pages for u in p.items] == [u.user_id for u in full.items]
        resumed = admin.list_users(prefix="pg-", limit=500, sort="-remaining", cursor=pages[1].next_cursor)
        assert [u.user_id for u in resumed.items] == [u.user_id for u in full.items][10:]
        with pytest.raises(Exception) as exc:
            admin.list_users(offset=10_001)
        assert "cursor" in str(exc.value)
        admin.create_cohort("pg-cohort")
        admin.add_members("pg-cohort", id_prefix="pg-", count=23)
        members = [
            x.user_id for p in admin.iter_pages(admin.cohort_members, "pg-cohort", limit=4) for x in p.members
        ]
        assert members == [f"pg-{i}" for i in range(23)]

    async def main():
        async with AsyncAccountantClient(server.url, api_key="viewer-key-0123456789") as v:
            return [
                u.user_id async for p in v.iter_pages(v.list_users, prefix="pg-", limit=6) for u in p.items
            ]

    assert asyncio.run(main()) == sorted(f"pg-{i}" for i in range(23))
