"""The SDK's ledger methods against a real ``serve`` process (SQLite): typed refusals, automatic
idempotency keys, cohorts and dashboards."""

from __future__ import annotations

import pytest

from app.client import AccountantClient, BudgetExceeded, Conflict, Forbidden, NotFound, Unauthorized
from tests.app.ledger_support import KEYS_ENV
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
        admin.put_user("a", 1.0, 1e-6)
        admin.put_user("b", 50.0, 1e-6)
        ev = {"mechanism": "gaussian", "noise_multiplier": 8.0}
        first = pipe.charge(ev, ["a", "b"])
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

        assert admin.bulk_create_users(8.0, 1e-6, id_prefix="dev-", count=50)["created"] == 50
        assert (
            admin.bulk_create_users(8.0, 1e-6, id_prefix="dev-", count=60, on_conflict="skip")["created"]
            == 10
        )
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
        c.put_user("log-check", 1.0, 1e-6)
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
