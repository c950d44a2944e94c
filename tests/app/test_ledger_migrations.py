"""The Alembic migrations match the SQLAlchemy models, apply from the installed package, and can
be rolled back and re-applied; concurrent migrators are safe (both at head, one schema)."""

from __future__ import annotations

import subprocess
import sys

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from app.db.migrate import alembic_config, current_revision, head_revision, upgrade_to_head
from app.db.models import Base
from app.db.session import Database
from tests.helpers import ledger as ls

db_url = ls.db_url  # fixture (migrated SQLite file, or the PostgreSQL test database)


def test_models_and_migrations_agree(db_url):
    db = Database(db_url)
    try:
        with db.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert diff == []
        assert current_revision(db_url) == head_revision()
    finally:
        db.dispose()


def test_downgrade_and_upgrade_again(tmp_path):
    url = f"sqlite:///{tmp_path}/roundtrip.db"
    upgrade_to_head(url)
    command.downgrade(alembic_config(url), "base")
    db = Database(url)
    assert not [t for t in inspect(db.engine).get_table_names() if t.startswith("ledger_")]
    db.dispose()
    upgrade_to_head(url)
    assert current_revision(url) == head_revision()


def test_concurrent_migrations_on_a_new_sqlite_file(tmp_path):
    """Several processes (like several ``serve`` processes starting at once) migrate one new file."""
    url = f"sqlite:///{tmp_path}/race.db"
    code = "import sys; from app.db.migrate import upgrade_to_head; upgrade_to_head(sys.argv[1])"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=120)[0].decode(errors="replace") for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    assert current_revision(url) == head_revision()


def test_upgrade_fills_each_users_last_charge_from_the_charge_log(db_url):
    """Migration 0003 adds ``last_charge_at`` to budget classes and fills it from the charge log: after
    a downgrade and upgrade every user's last charge is what the log says (explicit charges, cohort
    rounds after a late join, none after leaving, never charged)."""
    from app.ledger import service as svc

    db = Database(db_url)
    try:
        actor = svc.Actor("t", "pipeline")
        ev = {"mechanism": "gaussian", "noise_multiplier": 10.0}
        svc.bulk_create_users(
            db, [f"m{i}" for i in range(6)], svc.make_budget(8.0, 1e-6, "declared", None, None)
        )
        svc.create_cohort(db, "c", None)
        svc.change_members(db, "c", ["m0", "m1", "m2"], join=True)
        svc.charge(db, event=ev, actor=actor, cohort="c")
        svc.charge(db, event=ev, actor=actor, users=["m2", "m3"])
        svc.change_members(db, "c", ["m4"], join=True)
        svc.charge(db, event=ev, actor=actor, cohort="c")
        svc.change_members(db, "c", ["m0"], join=False)
        svc.charge(db, event=ev, actor=actor, users=["m1"])
        svc.charge(db, event=ev, actor=actor, cohort="c")

        def listed() -> dict:
            page = svc.list_users(db, svc.UserFilter(), "user_id", 500, 0)
            return {u.user_id: u.last_charge_at for u in page.items}

        before = listed()
        from_log = {
            u: max((c.created_at for c in svc.list_user_charges(db, u, 1000).items), default=None)
            for u in before
        }
        assert before == from_log and from_log["m5"] is None and from_log["m0"] < from_log["m1"]
        command.downgrade(alembic_config(db_url), "0002_curve_cache")
        db.dispose()
        upgrade_to_head(db_url)
        assert listed() == from_log
    finally:
        db.dispose()
