"""Budgets: validating a budget request, creating users, changing a user's budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

import accountant
from app.db.session import Database
from app.ledger import curves as cv
from app.ledger import queries as q
from app.ledger import repository as repo
from app.ledger.curves import Budget
from app.ledger.errors import Invalid, UsersExist
from app.ledger.locking import lock_users_classes
from app.ledger.records import BulkResult, ClassRow, UserStatus
from app.ledger.transitions import fresh_class, transition

FILTER_SIDE = (
    "the Rényi filter (policy 'filter') admits RDP charges only: this event carries an additive delta (zeta) or "
    "is an (epsilon, delta) release ('approx_dp'); charge it to users with a 'declared' budget"
)


def make_budget(
    epsilon: float,
    delta: float,
    policy: str,
    filter_order: float | None,
    planned_event: dict[str, Any] | None,
) -> Budget:
    """Validate a budget request and compute the filter's designated order and B(α_f).

    ``filter``: α_f is ``filter_order`` (a grid order) or the grid order minimising ε at δ of the
    planned event (:func:`app.ledger.curves.pick_filter_order`); the per-order budget
    B(α_f) = ε − (log(1/δ) + (α_f−1)·log(1−1/α_f) − log α_f)/(α_f−1) must be > 0."""
    if policy == "declared":
        if filter_order is not None or planned_event is not None:
            raise Invalid(
                "filter_order and planned_event apply to policy 'filter' only; drop them or "
                "set policy to 'filter'"
            )
        return Budget(float(epsilon), float(delta), "declared")
    if policy != "filter":
        raise Invalid(f"policy must be 'declared' or 'filter', got {policy!r}")
    if (filter_order is None) == (planned_event is None):
        raise Invalid(
            "policy 'filter' needs exactly one of filter_order (a Rényi order of the ledger's grid) "
            "or planned_event (the service picks the order minimising ε for it)"
        )
    order = _filter_order(filter_order, planned_event, delta)
    fb = cv.filter_budget(epsilon, delta, order)
    if not fb > 0:
        raise Invalid(
            f"the filter budget B(α_f) = ε − (log(1/δ) + (α_f−1)·log(1−1/α_f) − log α_f)/(α_f−1) "
            f"is {fb:.6g} ≤ 0 at α_f = {order:g} for ε = {epsilon:g}, δ = {delta:g}: raise ε or δ, "
            f"or choose another order"
        )
    return Budget(float(epsilon), float(delta), "filter", order, fb)


def _filter_order(filter_order: float | None, planned_event: dict[str, Any] | None, delta: float) -> float:
    if filter_order is not None:
        i = cv.grid_index(filter_order)
        if i is None:
            raise Invalid(
                f"filter_order {filter_order!r} is not an order of the ledger's grid (version "
                f"{cv.GRID_VERSION}); choose one of {cv.ORDERS.tolist()}"
            )
        return float(cv.ORDERS[i])
    if planned_event is None:
        raise Invalid("policy 'filter' needs filter_order or planned_event")
    cost = event_cost(planned_event)
    if cv.has_side(cost):
        raise Invalid(FILTER_SIDE)
    try:
        return cv.pick_filter_order(cost, delta)
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def event_cost(event: dict[str, Any]) -> np.ndarray:
    """The event's cost vector on the ledger grid (:mod:`app.ledger.curves`): its RDP curve
    (× count), then its additive δ and (ε, δ) statistics — the accountant's own summary
    (``accountant.account``); accountant errors become :class:`Invalid`."""
    try:
        ev = accountant.event_from_dict(event)
        cost = cv.vector_of(accountant.account([ev], cv.ORDERS))
    except accountant.AccountantError as exc:
        raise Invalid(str(exc)) from None
    curve = cv.rdp_part(cost)
    if np.any(np.isnan(cost)) or np.any(cost < 0) or (not np.any(np.isfinite(curve)) and not ev.APPROX):
        raise Invalid(
            "the event's RDP curve is unbounded at every order of the ledger's grid; it cannot be charged"
        )
    return cost


def _rerun(_exc: IntegrityError) -> None:
    """A unique-constraint race (two creators at once): run the unit again (it sees the other's row)."""
    return None


def put_user(db: Database, user_id: str, b: Budget) -> tuple[bool, UserStatus]:
    """Create the user (True) or change its budget (False; the spent curve is kept); its status after,
    read in the write's own transaction (the answer is what was committed: a read after the commit
    could fail and turn a committed write into a "nothing recorded" error)."""

    def unit(s: Session) -> tuple[bool, UserStatus]:
        return change(s), _status(s)

    def _status(s: Session) -> UserStatus:
        st = q.user_status(s, user_id)
        assert st is not None  # written just above, in this transaction
        return st

    def change(s: Session) -> bool:
        users = repo.users_by_name(s, [user_id])
        if not users:
            repo.insert_user(s, user_id, fresh_class(s, db, b, 1))
            return True
        locked = lock_users_classes(s, db, users)
        ((pk, cid),) = locked.class_of.items()
        if locked.classes[cid].budget == b:
            return False

        def rebudget(c: ClassRow) -> ClassRow:
            return c.with_budget(b)

        token = f"budget|{b.epsilon!r}|{b.delta!r}|{b.policy}|{b.filter_order!r}"
        transition(s, db, locked.classes, {cid: [pk]}, token, rebudget, locked.cohorts)
        repo.touch_user(s, pk)
        return False

    return db.run_write(unit, on_integrity_error=_rerun)


def bulk_create_users(
    db: Database, user_ids: Sequence[str], b: Budget, on_conflict: str = "error"
) -> BulkResult:
    """Create many users of one budget, all or nothing; they share one class."""
    names = list(dict.fromkeys(user_ids))

    def unit(s: Session) -> BulkResult:
        existing = repo.users_by_name(s, names)
        if existing and on_conflict == "error":
            raise UsersExist([u for u in names if u in existing])
        new = [u for u in names if u not in existing]
        if new:
            repo.insert_users(s, db, new, fresh_class(s, db, b, len(new)))
        return BulkResult(created=len(new), skipped=len(names) - len(new), requested=len(user_ids))

    return db.run_write(unit, on_integrity_error=_rerun)
