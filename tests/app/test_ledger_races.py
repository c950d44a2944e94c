"""Races between every kind of ledger write (service layer, 8 threads, one database).

Joins, leaves, budget changes, explicit charges and cohort rounds run at once on overlapping users
and cohorts; classes split, merge and move in and out of cohorts meanwhile. Afterwards the stored
state must be exactly what the charge log implies: every user's running curve is the outward-
rounded sum of the charges that reached them (membership windows included), the charge counts
match, class bookkeeping and class cohorts agree with the users and the membership history, and
no user is over budget by recomputation.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
from sqlalchemy import text

from app.ledger import service as svc
from tests.helpers import ledger as ls

db_url, db = ls.db_url, ls.db  # fixtures
pytestmark = pytest.mark.slow

ACTOR = svc.Actor("race", "pipeline")
EVENTS = [
    {"mechanism": "gaussian", "noise_multiplier": 6.0},
    {"mechanism": "gaussian", "noise_multiplier": 9.0},
    {"mechanism": "pure_dp", "epsilon": 0.05},
]


def test_all_writes_racing_keep_the_ledger_consistent(db):
    users = [f"u{i}" for i in range(24)]
    budgets = {u: 2.0 + (i % 3) for i, u in enumerate(users)}
    svc.bulk_create_users(db, users, svc.make_budget(2.0, 1e-6, "declared", None, None))
    for u in users:
        svc.put_user(db, u, svc.make_budget(budgets[u], 1e-6, "declared", None, None))
    cohorts = ["c0", "c1", "c2"]
    for c in cohorts:
        svc.create_cohort(db, c, None)
        svc.change_members(db, c, users[: len(users) // 2], join=True)
    deadline = time.monotonic() + 6
    errors: list[BaseException] = []
    counts = {"admitted": 0, "refused": 0, "ops": 0}
    lock = threading.Lock()

    def worker(tid: int):
        rng = random.Random(tid)
        try:
            while time.monotonic() < deadline:
                op = rng.choices(["join", "leave", "charge", "cohort", "budget"], weights=[3, 2, 5, 5, 1])[0]
                if op in ("join", "leave"):
                    svc.change_members(
                        db, rng.choice(cohorts), rng.sample(users, rng.randint(1, 4)), join=op == "join"
                    )
                elif op == "budget":
                    u = rng.choice(users)
                    budgets_now = budgets[
                        u
                    ]  # unchanged value: exercises the no-op path and the lock protocol
                    svc.put_user(db, u, svc.make_budget(budgets_now, 1e-6, "declared", None, None))
                else:
                    kw = (
                        {"users": rng.sample(users, rng.randint(1, 5))}
                        if op == "charge"
                        else {"cohort": rng.choice(cohorts)}
                    )
                    try:
                        svc.charge(db, event=rng.choice(EVENTS), actor=ACTOR, **kw)
                        with lock:
                            counts["admitted"] += 1
                    except svc.Refused:
                        with lock:
                            counts["refused"] += 1
                with lock:
                    counts["ops"] += 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    print("counts", counts)

    for u in users:
        audit = svc.recompute_user(db, u)
        assert audit.running_not_below_recomputed, u
        assert audit.max_relative_excess < 1e-12, u
        assert audit.charges_in_log == audit.charges_counted, u
        assert audit.recomputed_spent.epsilon <= budgets[u] + 1e-12, u
    with db.read() as s:
        classes = s.execute(
            text(
                "SELECT c.n_users, (SELECT count(*) FROM ledger_users u WHERE u.class_id = c.id) "
                "FROM ledger_classes c"
            )
        ).all()
        assert all(a == b and a > 0 for a, b in classes)
        by_class = sorted(
            s.execute(
                text(
                    "SELECT co.cohort_id, u.user_id FROM ledger_users u JOIN ledger_class_cohorts cc ON cc.class_id = u.class_id "
                    "JOIN ledger_cohorts co ON co.id = cc.cohort_id"
                )
            ).all()
        )
        by_history = sorted(
            s.execute(
                text(
                    "SELECT co.cohort_id, u.user_id FROM ledger_memberships m JOIN ledger_users u ON u.id = m.user_pk "
                    "JOIN ledger_cohorts co ON co.id = m.cohort_id WHERE m.leave_seq IS NULL"
                )
            ).all()
        )
        assert by_class == by_history
        members = dict(s.execute(text("SELECT cohort_id, n_members FROM ledger_cohorts")).all())
        for c in cohorts:
            assert members[c] == sum(1 for cc, _ in by_history if cc == c)
        rounds = s.execute(
            text(
                "SELECT co.seq, (SELECT count(*) FROM ledger_charges c WHERE c.cohort_id = co.id) "
                "FROM ledger_cohorts co"
            )
        ).all()
        assert all(a == b for a, b in rounds)
    assert counts["admitted"] > 10 and counts["ops"] > 50, counts  # the races did happen
