"""Randomised model test of the ledger's budget classes against a naive per-user reference.

The ledger groups users into classes, splits and merges them on explicit charges, budget changes
and cohort joins/leaves, and charges cohorts per class. The reference keeps a plain list of charge
curves per user and decides admission from scratch. Every decision (admitted / refused, and who
was refused) and every final spent ε must agree; the class bookkeeping must stay consistent.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from sqlalchemy import text

from app.ledger import service as svc
from tests.helpers import ledger as ls
from tests.helpers.ledger import ORDERS, curve, eps_declared, filter_B

db_url, db = ls.db_url, ls.db  # fixtures

ACTOR = svc.Actor("test", "pipeline")
EVENTS = [
    {"mechanism": "shuffle", "n": 2000, "epsilon0": 1.0, "count": 3},
    {"mechanism": "subsampled_shuffle", "n": 1000, "k": 100, "epsilon0": 1.5, "count": 5},
    {"mechanism": "gaussian", "noise_multiplier": 2.0, "count": 4},
    {"mechanism": "pure_dp", "epsilon": 0.3},
]
BUDGETS = [(2.0, 1e-6), (4.0, 1e-6), (3.0, 1e-5)]
FILTER_ORDERS = [8.0, 16.0, 32.0]


class Ref:
    def __init__(self):
        self.users: dict[str, dict] = {}
        self.cohorts: dict[str, set[str]] = {}

    def spent(self, u):
        return np.sum(self.users[u]["curves"], axis=0) if self.users[u]["curves"] else np.zeros(ORDERS.size)

    def margin(self, u, cost):
        """>0: fits with room; <0: does not fit."""
        d = self.users[u]
        after = self.spent(u) + cost
        if d["policy"] == "filter":
            i = int(np.where(d["order"] == ORDERS)[0][0])
            return filter_B(d["eps"], d["delta"], d["order"]) - after[i]
        return d["eps"] - eps_declared(after, d["delta"])


def _decide(ref, users, cost):
    margins = {u: ref.margin(u, cost) for u in users}
    if any(abs(m) < 1e-9 for m in margins.values()):
        return None  # too close to the boundary for float-exact comparison
    return sorted(u for u, m in margins.items() if m < 0)


def _create_user(db, ref: Ref, rng: random.Random, uid: str) -> None:
    """A new user with a random budget (declared, or a filter at one order), in both ledgers."""
    eps, delta = rng.choice(BUDGETS)
    if rng.random() < 0.3:
        order = rng.choice(FILTER_ORDERS)
        b = svc.make_budget(eps, delta, "filter", order, None)
        ref.users[uid] = {
            "eps": eps,
            "delta": delta,
            "policy": "filter",
            "order": order,
            "curves": [],
        }
    else:
        b = svc.make_budget(eps, delta, "declared", None, None)
        ref.users[uid] = {"eps": eps, "delta": delta, "policy": "declared", "curves": []}
    created, _ = svc.put_user(db, uid, b)
    assert created


def _charge(db, ref: Ref, rng: random.Random, op: str) -> bool:
    """A random event charged to random users (``op`` "charge") or to a cohort; the refused users
    must be the reference's. Returns whether the decision was compared (not too close to call)."""
    ev = rng.choice(EVENTS)
    cost = curve(ev)
    if op == "charge":
        targets = rng.sample(sorted(ref.users), k=min(len(ref.users), rng.randint(1, 6)))
        kwargs = {"users": targets}
    else:
        c = rng.choice(sorted(ref.cohorts))
        targets = sorted(ref.cohorts[c])
        kwargs = {"cohort": c}
    expected = _decide(ref, targets, cost)
    try:
        res = svc.charge(db, event=ev, actor=ACTOR, **kwargs)
        outcome = []
        assert res.users == len(targets)
    except svc.Refused as e:
        outcome = sorted(e.extra["refused_users"])
    if expected is not None:
        assert outcome == expected, (op, targets, ev)
    if not outcome:
        for u in targets:
            ref.users[u]["curves"].append(cost)
    return expected is not None


@pytest.mark.parametrize("seed", [1, 2])
def test_random_operations_agree_with_reference(db, seed):
    rng = random.Random(seed)
    ref = Ref()
    n_users = 0
    for c in ("c0", "c1", "c2"):
        svc.create_cohort(db, c, None)
        ref.cohorts[c] = set()
    checked = 0
    for _step in range(260):
        op = rng.choices(
            ["create", "bulk", "budget", "join", "leave", "charge", "cohort"], weights=[3, 1, 1, 3, 2, 6, 5]
        )[0]
        if op == "create" or not ref.users:
            _create_user(db, ref, rng, f"u{n_users}")
            n_users += 1
        elif op == "bulk":
            eps, delta = rng.choice(BUDGETS)
            ids = [f"u{n_users + i}" for i in range(rng.randint(2, 6))]
            n_users += len(ids)
            svc.bulk_create_users(db, ids, svc.make_budget(eps, delta, "declared", None, None))
            for u in ids:
                ref.users[u] = {"eps": eps, "delta": delta, "policy": "declared", "curves": []}
        elif op == "budget":
            u = rng.choice(sorted(ref.users))
            eps, delta = rng.choice(BUDGETS)
            svc.put_user(db, u, svc.make_budget(eps, delta, "declared", None, None))
            ref.users[u].update(eps=eps, delta=delta, policy="declared")
            ref.users[u].pop("order", None)
        elif op in ("join", "leave"):
            c = rng.choice(sorted(ref.cohorts))
            us = rng.sample(sorted(ref.users), k=min(len(ref.users), rng.randint(1, 5)))
            svc.change_members(db, c, us, join=op == "join")
            if op == "join":
                ref.cohorts[c] |= set(us)
            else:
                ref.cohorts[c] -= set(us)
        else:
            checked += _charge(db, ref, rng, op)
    assert checked > 100

    # final state: every user's spent ε and charge count match the reference
    for u, d in ref.users.items():
        view = svc.get_user(db, u)
        assert view.charges == len(d["curves"]), u
        total = ref.spent(u)
        if d["policy"] == "filter":
            i = int(np.where(d["order"] == ORDERS)[0][0])
            from accountant.conversion import epsilon_vector

            exp = max(0.0, float(epsilon_vector(ORDERS[i : i + 1], total[i : i + 1], d["delta"])[0]))
        else:
            exp = eps_declared(total, d["delta"])
        assert view.spent.epsilon == pytest.approx(exp, rel=1e-9, abs=1e-12), u
        audit = svc.recompute_user(db, u)
        assert audit.running_not_below_recomputed and audit.charges_in_log == len(d["curves"])
        assert audit.max_relative_excess < 1e-12
    # class bookkeeping: n_users matches, no empty classes, class cohorts == members' cohorts
    with db.read() as s:
        rows = s.execute(
            text(
                "SELECT c.id, c.n_users, (SELECT count(*) FROM ledger_users u WHERE u.class_id = c.id) "
                "FROM ledger_classes c"
            )
        ).all()
        assert all(n == actual and n > 0 for _, n, actual in rows)
        members = s.execute(
            text(
                "SELECT co.cohort_id, u.user_id FROM ledger_users u JOIN ledger_class_cohorts cc ON cc.class_id = u.class_id "
                "JOIN ledger_cohorts co ON co.id = cc.cohort_id"
            )
        ).all()
        active = s.execute(
            text(
                "SELECT co.cohort_id, u.user_id FROM ledger_memberships m JOIN ledger_users u ON u.id = m.user_pk "
                "JOIN ledger_cohorts co ON co.id = m.cohort_id WHERE m.leave_seq IS NULL"
            )
        ).all()
    assert sorted(members) == sorted(active) == sorted((c, u) for c, us in ref.cohorts.items() for u in us)
    assert len(rows) <= len(ref.users)
