"""Admission of charges, all or nothing, idempotent.

A charge reaches the users named (explicit) or every current member of a cohort. For each budget
class reached, ``after = spent ⊕ cost`` (added and rounded outward, :func:`app.ledger.curves.add_up`)
must be admitted by the class's policy (:func:`app.ledger.curves.evaluate`); otherwise the unit
raises :class:`Refused` and nothing is written. Locks: :mod:`app.ledger.locking`.

Idempotency: a key belongs to the API key that sent it (its scope, :attr:`Actor.idempotency_scope`):
the same key sent with two API keys names two charges. It is stored as
:func:`app.ledger.repository.scoped_key` and is unique among charges. It is checked at the start
and again once the locks are held; a racing duplicate that still reaches the insert fails on the
unique constraint and is answered with the stored result (``replayed``). The same key with a body
that means something else is an :class:`IdempotencyConflict`; bodies that mean the same compare
equal (:func:`request_hash` hashes the normal form: the accountant's form of the event, the users
sorted without repeats). Charges recorded before keys were scoped keep their bare key, which every
caller still finds.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

import accountant
from app.db.session import Database
from app.ledger import curves as cv
from app.ledger import repository as repo
from app.ledger.budgets import FILTER_SIDE, event_cost
from app.ledger.errors import MAX_LISTED, IdempotencyConflict, Invalid, NotFound, Refused, UnknownUsers
from app.ledger.locking import LockedUsers, lock_cohort, lock_cohort_classes, lock_users_classes
from app.ledger.records import Actor, ChargeResult, ClassRow, CohortRow, utc
from app.ledger.refusals import record_refusal
from app.ledger.transitions import transition

#: columns a charge changes on a class
CHARGED = (
    "spent",
    "n_charges",
    "spent_epsilon",
    "spent_order",
    "remaining_epsilon",
    "remaining_fraction",
    "last_charge_at",
    "updated_at",
)


def request_hash(users: list[str] | None, cohort: str | None, event: dict[str, Any]) -> str:
    """The hash of what a charge request means: the event in the accountant's normal form (defaults
    filled in, optional defaults dropped, e.g. an explicit ``"count": 1``), the users sorted and
    without repeats (a charge reaches each named user once), the cohort."""
    normal = accountant.event_from_dict(event).to_dict()
    names = sorted(set(users)) if users is not None else None
    return _hash(names, cohort, normal)


def _hash(users: list[str] | None, cohort: str | None, event: dict[str, Any]) -> str:
    text = json.dumps(
        {"users": users, "cohort": cohort, "event": event}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------- stored result


def _stored(r: ChargeResult) -> dict[str, Any]:
    """The result as stored with the charge (replayed verbatim for a repeated key)."""
    out = {
        "status": "admitted",
        "users": r.users,
        "cohort": r.cohort,
        "idempotency_key": r.idempotency_key,
        "event": r.event,
        "grid_version": r.grid_version,
        "charged_by": {"name": r.charged_by.name, "role": r.charged_by.role},
        "created_at": r.created_at.isoformat(),
    }
    if r.cohort_round is not None:
        out["cohort_round"] = r.cohort_round
    return out


def _replayed(charge_id: int, stored: str) -> ChargeResult:
    d = json.loads(stored)
    return ChargeResult(
        charge_id=str(charge_id),
        users=int(d["users"]),
        cohort=d.get("cohort"),
        cohort_round=d.get("cohort_round"),
        idempotency_key=d.get("idempotency_key"),
        event=d["event"],
        grid_version=int(d["grid_version"]),
        charged_by=Actor(d["charged_by"]["name"], d["charged_by"]["role"]),
        created_at=utc(datetime.fromisoformat(d["created_at"])),
        replayed=True,
    )


# ---------------------------------------------------------------------------------------------- charge


class _Request:
    """One charge request: what to charge, to whom, under which key."""

    def __init__(
        self,
        event: dict[str, Any],
        cost_event: dict[str, Any],
        cost: np.ndarray,
        actor: Actor,
        users: list[str] | None,
        cohort: str | None,
        key: str | None,
    ):
        self.event, self.cost, self.actor, self.cohort, self.key = event, cost, actor, cohort, key
        self.users = list(dict.fromkeys(users)) if users is not None else None
        self.hash = request_hash(users, cohort, cost_event)
        self.stored_key = None if key is None else repo.scoped_key(actor.idempotency_scope, key)

    def prior(self, s: Session) -> ChargeResult | None:
        """The stored result under this request's key (None: not charged yet)."""
        if self.key is None or self.stored_key is None:  # a stored key exactly when a key was given
            return None
        row = repo.charge_by_key(s, self.stored_key, self.key)  # scoped, or stored before scoping
        if row is None:
            return None
        if row.request_hash != self.hash:
            raise IdempotencyConflict(self.key)
        return _replayed(row.id, row.response)

    def result(
        self, charge_id: int, n_users: int, ts: datetime, cohort_round: int | None = None
    ) -> ChargeResult:
        return ChargeResult(
            charge_id=str(charge_id),
            users=n_users,
            cohort=self.cohort,
            cohort_round=cohort_round,
            idempotency_key=self.key,
            event=self.event,
            grid_version=cv.GRID_VERSION,
            charged_by=self.actor,
            created_at=ts,
        )

    def record(self, s: Session, r: ChargeResult, n_users: int, ts: datetime, **cohort: Any) -> int:
        return repo.insert_charge(
            s,
            key=self.stored_key,
            req_hash=self.hash,
            event=self.event,
            cost=self.cost,
            n_users=n_users,
            actor=self.actor,
            ts=ts,
            response=_stored(r),
            **cohort,
        )


def charge(
    db: Database,
    *,
    event: dict[str, Any],
    actor: Actor,
    users: list[str] | None = None,
    cohort: str | None = None,
    idempotency_key: str | None = None,
    cost_event: dict[str, Any] | None = None,
    cost: np.ndarray | None = None,
) -> ChargeResult:
    """Admit and record a charge, all or nothing; raises Refused/NotFound/IdempotencyConflict/Invalid.

    ``event`` is stored as received; ``cost_event`` (default: ``event``) is the accountant's form;
    ``cost`` its cost vector when the caller computed it already (the service does, before its
    write turn), else computed here."""
    if (users is None) == (cohort is None):
        raise Invalid("give exactly one of 'users' (a list of user ids) or 'cohort' (a cohort id)")
    cost_event = cost_event if cost_event is not None else event
    req = _Request(
        event,
        cost_event,
        event_cost(cost_event) if cost is None else cost,
        actor,
        users,
        cohort,
        idempotency_key,
    )

    def unit(s: Session) -> ChargeResult:
        prior = req.prior(s)
        if prior is not None:
            return prior
        return _charge_cohort(s, db, req) if req.cohort is not None else _charge_users(s, db, req)

    def lost_key_race(_exc: IntegrityError) -> ChargeResult | None:
        """The unique key lost a race: the other request committed first — answer with its result."""
        with db.read() as s:
            return req.prior(s)

    try:
        return db.run_write(unit, on_integrity_error=lost_key_race)
    except Refused as refusal:
        record_refusal(
            db,
            actor,
            cohort,
            len(req.users) if req.users is not None else None,
            refusal.extra["refused_count"],
        )
        raise


def _evaluate(classes: list[ClassRow], cost: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[cv.Status]]:
    """(admitted per class, spent curves after, their statuses) — vectorised over the classes.

    A charge with an additive δ or (ε, δ) parts reaching a class under the Rényi filter is
    :class:`Invalid` (the filter's guarantee covers RDP charges only; nothing is charged)."""
    if cv.has_side(cost) and any(c.policy == "filter" for c in classes):
        raise Invalid(FILTER_SIDE)
    after = cv.add_up(np.vstack([c.spent for c in classes]), cost[None, :])
    ok, statuses = cv.evaluate([c.budget for c in classes], after)
    return ok, after, statuses


def _charge_users(s: Session, db: Database, req: _Request) -> ChargeResult:
    assert req.users is not None
    users = repo.users_by_name(s, req.users)
    missing = [u for u in req.users if u not in users]
    if missing:
        raise UnknownUsers(missing, "nothing was charged. ", "Create them first (PUT /v1/users/{user_id})")
    locked = lock_users_classes(s, db, users)
    prior = req.prior(s)
    if prior is not None:
        return prior
    groups = locked.groups()
    cids = list(locked.classes)
    ok, after, statuses = _evaluate([locked.classes[cid] for cid in cids], req.cost)
    if not np.all(ok):
        raise _users_refusal(req.users, users, locked, cids, ok, req.cost)
    ts = repo.now()
    result = req.result(0, len(req.users), ts)
    charge_id = req.record(s, result, len(req.users), ts)
    repo.insert_charge_users(s, db, charge_id, locked.class_of)
    new_state = {cid: (after[k], statuses[k]) for k, cid in enumerate(cids)}

    def charged(c: ClassRow) -> ClassRow:
        spent, st = new_state[c.id]
        return c.with_spent(spent, st, n_charges=c.n_charges + 1, last_charge_at=ts)

    transition(s, db, locked.classes, groups, f"charge|{charge_id}", charged, locked.cohorts)
    return _with_id(result, charge_id)


def _users_refusal(
    names: list[str],
    users: dict[str, tuple[int, int]],
    locked: LockedUsers,
    cids: list[int],
    ok: np.ndarray,
    cost: np.ndarray,
) -> Refused:
    """The refusal of a charge to ``names``: every user whose budget class (``cids[k]``, admitted
    when ``ok[k]``) the event would take over its budget."""
    refused = {cid: locked.classes[cid] for k, cid in enumerate(cids) if not ok[k]}
    named = [
        (u, refused[locked.class_of[users[u][0]]]) for u in names if locked.class_of[users[u][0]] in refused
    ]
    return _refusal(named, len(named), refused.values(), cost)


def _charge_cohort(s: Session, db: Database, req: _Request) -> ChargeResult:
    assert req.cohort is not None
    co = lock_cohort(s, db, req.cohort)
    if co is None:
        raise NotFound(f"unknown cohort {req.cohort!r}; nothing was charged. Create it with POST /v1/cohorts")
    prior = req.prior(s)
    if prior is not None:
        return prior
    classes = lock_cohort_classes(s, db, co)
    updated: list[ClassRow] = []
    if classes:
        ok, after, statuses = _evaluate(classes, req.cost)
        refused = [c for c, good in zip(classes, ok) if not good]
        if refused:
            raise _cohort_refusal(s, refused, req.cost)
        updated = [
            c.with_spent(a, st, n_charges=c.n_charges + 1) for c, a, st in zip(classes, after, statuses)
        ]
    return _record_round(s, db, req, co, updated)


def _record_round(
    s: Session, db: Database, req: _Request, co: CohortRow, updated: list[ClassRow]
) -> ChargeResult:
    ts = repo.now()
    seq = co.seq + 1
    cum = cv.add_up(co.cumulative, req.cost)
    result = req.result(0, co.n_members, ts, cohort_round=seq)
    charge_id = req.record(s, result, co.n_members, ts, cohort=co, cohort_seq=seq, cumulative=cum)
    repo.advance_cohort(s, co, seq, cum)
    repo.update_classes(s, db, [_stamped(c, ts) for c in updated], CHARGED)
    return _with_id(result, charge_id)


def _stamped(c: ClassRow, ts: datetime) -> ClassRow:
    return replace(c, last_charge_at=ts, updated_at=ts)


def _with_id(r: ChargeResult, charge_id: int) -> ChargeResult:
    return replace(r, charge_id=str(charge_id))


# ---------------------------------------------------------------------------------------------- refusals


def _refusal(
    named: list[tuple[str, ClassRow]], n: int, classes: Iterable[ClassRow], cost: np.ndarray
) -> Refused:
    """The refusal of ``n`` users, ``named`` (user, class) being the first of them: what the event
    alone costs each listed user (ε at their budget's δ under their policy, ``null`` if unbounded),
    the largest such cost over every refused user, and what each listed user has left."""
    eps = {c.id: cv.epsilon_at(c.budget, cost)[0] for c in classes}
    listed = named[:MAX_LISTED]
    worst = max(eps.values(), default=0.0)
    return Refused(
        [u for u, _ in listed],
        n,
        cost={"epsilon": _json(worst), "by_user": {u: _json(eps[c.id]) for u, c in listed}},
        remaining={u: c.remaining_epsilon for u, c in listed},
    )


def _json(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _cohort_refusal(s: Session, refused: list[ClassRow], cost: np.ndarray) -> Refused:
    n = sum(c.n_users for c in refused)
    by_id = {c.id: c for c in refused}
    named = [(u, by_id[cid]) for u, cid in repo.user_names_in_classes(s, list(by_id), MAX_LISTED)]
    return _refusal(named, n, refused, cost)
