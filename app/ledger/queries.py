"""Read-only SQL of the ledger's views: user status, charge logs, memberships, cohort rounds.

Every function takes a read session and returns typed records (:mod:`app.ledger.records`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Subquery, and_, func, or_, select, union_all
from sqlalchemy.engine import RowMapping
from sqlalchemy.orm import Session

from app.db.models import T_CHARGE_USERS, T_CHARGES, T_COHORTS, T_MEMBERSHIPS, T_USERS
from app.db.models import T_CLASSES as C
from app.ledger import curves as cv
from app.ledger.curves import Budget
from app.ledger.grid import project_curve, stored_grids
from app.ledger.records import (
    Actor,
    ChargeEntry,
    CohortInfo,
    CohortRow,
    ExhaustionEntry,
    Membership,
    Spent,
    UserStatus,
    utc,
)
from app.ledger.repository import visible_key as repo_visible_key

# ---------------------------------------------------------------------------------------------- users

USER_STATUS_COLS = (
    T_USERS.c.user_id,
    T_USERS.c.created_at,
    T_USERS.c.updated_at,
    C.c.epsilon,
    C.c.delta,
    C.c.policy,
    C.c.filter_order,
    C.c.filter_budget,
    C.c.spent_epsilon,
    C.c.spent_order,
    C.c.remaining_epsilon,
    C.c.n_charges,
    C.c.grid_version,
    C.c.last_charge_at,
)


def budget_of(r: RowMapping | Any) -> Budget:
    return Budget(r["epsilon"], r["delta"], r["policy"], r["filter_order"], r["filter_budget"])


def user_status_of(r: RowMapping) -> UserStatus:
    """A row of :data:`USER_STATUS_COLS` (users joined with their classes) as a status."""
    return UserStatus(
        user_id=r["user_id"],
        budget=budget_of(r),
        spent=Spent(r["spent_epsilon"], r["spent_order"]),
        remaining_epsilon=r["remaining_epsilon"],
        charges=int(r["n_charges"]),
        grid_version=r["grid_version"],
        created_at=utc(r["created_at"]),
        updated_at=utc(r["updated_at"]),
        last_charge_at=utc(r["last_charge_at"]),
    )


def user_status(s: Session, user_id: str) -> UserStatus | None:
    r = (
        s.execute(
            select(*USER_STATUS_COLS)
            .join(C, C.c.id == T_USERS.c.class_id)
            .where(T_USERS.c.user_id == user_id)
        )
        .mappings()
        .first()
    )
    return user_status_of(r) if r is not None else None


def exhaustion(s: Session, limit: int) -> list[ExhaustionEntry]:
    """The users of the classes with the smallest remaining fraction, at most ``limit``."""
    out: list[ExhaustionEntry] = []
    classes = (
        s.execute(select(C).where(C.c.n_users > 0).order_by(C.c.remaining_fraction, C.c.id).limit(limit))
        .mappings()
        .all()
    )
    for c in classes:
        if len(out) >= limit:
            break
        names = (
            s.execute(
                select(T_USERS.c.user_id)
                .where(T_USERS.c.class_id == c["id"])
                .order_by(T_USERS.c.id)
                .limit(limit - len(out))
            )
            .scalars()
            .all()
        )
        out += [
            ExhaustionEntry(
                user_id=n,
                budget=budget_of(c),
                spent=Spent(c["spent_epsilon"], c["spent_order"]),
                remaining_epsilon=c["remaining_epsilon"],
                remaining_fraction=c["remaining_fraction"],
                charges=int(c["n_charges"]),
            )
            for n in names
        ]
    return out


# ---------------------------------------------------------------------------------------------- charges


def user_charges_subquery(user_pk: int, cols: Sequence[Any]) -> Subquery:
    """The charges that reached a user: explicit charges naming it, and the cohort rounds in
    (join_seq, leave_seq] of each of its memberships."""
    explicit = (
        select(*cols)
        .select_from(T_CHARGES.join(T_CHARGE_USERS, T_CHARGE_USERS.c.charge_id == T_CHARGES.c.id))
        .where(T_CHARGE_USERS.c.user_pk == user_pk)
    )
    m = T_MEMBERSHIPS
    via_cohort = (
        select(*cols)
        .select_from(
            T_CHARGES.join(
                m,
                and_(
                    m.c.cohort_id == T_CHARGES.c.cohort_id,
                    T_CHARGES.c.cohort_seq > m.c.join_seq,
                    or_(m.c.leave_seq.is_(None), T_CHARGES.c.cohort_seq <= m.c.leave_seq),
                ),
            )
        )
        .where(m.c.user_pk == user_pk)
    )
    return union_all(explicit, via_cohort).subquery()


#: the columns of a listed charge (:class:`~app.ledger.records.ChargeEntry`)
CHARGE_COLS = (
    T_CHARGES.c.id,
    T_CHARGES.c.idempotency_key,
    T_CHARGES.c.event,
    T_CHARGES.c.grid_version,
    T_CHARGES.c.cohort_id,
    T_CHARGES.c.cohort_seq,
    T_CHARGES.c.n_users,
    T_CHARGES.c.actor_name,
    T_CHARGES.c.actor_role,
    T_CHARGES.c.created_at,
    T_CHARGES.c.response,
)


@dataclass(frozen=True)
class ChargeFilter:
    """Charges that reached the user ``user_pk``, of the cohort ``cohort_pk``, created in
    [``since``, ``until``) (aware UTC datetimes); ``None``: no condition."""

    user_pk: int | None = None
    cohort_pk: int | None = None
    since: datetime | None = None
    until: datetime | None = None


def charges(
    s: Session, f: ChargeFilter, limit: int, offset: int, after: int | None = None
) -> tuple[int, list[ChargeEntry]]:
    """(total, the charges at [offset, offset + limit) — of those after the charge id ``after``)
    matching ``f``, oldest first (by charge id)."""
    src: Any = T_CHARGES if f.user_pk is None else user_charges_subquery(f.user_pk, CHARGE_COLS)
    conds = []
    if f.cohort_pk is not None:
        conds.append(src.c.cohort_id == f.cohort_pk)
    if f.since is not None:
        conds.append(src.c.created_at >= f.since)
    if f.until is not None:
        conds.append(src.c.created_at < f.until)
    total = s.execute(select(func.count()).select_from(src).where(*conds)).scalar_one()
    cols = [src.c[c.name] for c in CHARGE_COLS]
    page = select(*cols).where(*conds).order_by(src.c.id).limit(limit).offset(offset)
    if after is not None:
        page = page.where(src.c.id > after)
    rows = s.execute(page).mappings().all()
    cids = {r["cohort_id"] for r in rows if r["cohort_id"] is not None}
    names = (
        dict(s.execute(select(T_COHORTS.c.id, T_COHORTS.c.cohort_id).where(T_COHORTS.c.id.in_(cids))).all())
        if cids
        else {}
    )
    return int(total), [
        ChargeEntry(
            charge_id=str(r["id"]),
            event=json.loads(r["event"]),
            idempotency_key=repo_visible_key(r["idempotency_key"], r["response"]),
            cohort=names.get(r["cohort_id"]),
            cohort_round=r["cohort_seq"],
            users=int(r["n_users"]),
            grid_version=r["grid_version"],
            charged_by=Actor(r["actor_name"], r["actor_role"]),
            created_at=utc(r["created_at"]),
        )
        for r in rows
    ]


def user_curves(s: Session, user_pk: int) -> list[tuple[int, Any, np.ndarray]]:
    """(charge id, time, curve) of the user's charges, oldest first, on the current grid (older
    grids projected upward, :func:`app.ledger.grid.project_curve`)."""
    c = T_CHARGES.c
    sq = user_charges_subquery(user_pk, (c.id, c.created_at, c.curve, c.grid_version))
    rows = s.execute(select(sq).order_by(sq.c.id)).all()
    grids = stored_grids(s) if any(r.grid_version != cv.GRID_VERSION for r in rows) else {}
    return [
        (
            r.id,
            utc(r.created_at),
            cv.vector_from_bytes(r.curve)
            if r.grid_version == cv.GRID_VERSION
            else project_curve(grids[r.grid_version], cv.from_bytes(r.curve)),
        )
        for r in rows
    ]


def cohort_rounds(s: Session, cohort_pk: int) -> list[Any]:
    """(id, cohort_seq, created_at, cohort_cumulative) of a cohort's rounds in order."""
    return list(
        s.execute(
            select(
                T_CHARGES.c.id, T_CHARGES.c.cohort_seq, T_CHARGES.c.created_at, T_CHARGES.c.cohort_cumulative
            )
            .where(T_CHARGES.c.cohort_id == cohort_pk)
            .order_by(T_CHARGES.c.cohort_seq)
        ).all()
    )


# ---------------------------------------------------------------------------------------------- cohorts


def cohort_info(co: CohortRow) -> CohortInfo:
    return CohortInfo(
        cohort_id=co.cohort_id,
        description=co.description,
        members=co.n_members,
        rounds=co.seq,
        grid_version=co.grid_version,
        created_at=co.created_at,
    )


def members(
    s: Session,
    cohort_pk: int,
    cohort_id: str,
    limit: int,
    offset: int,
    history: bool,
    after: int | None = None,
) -> list[tuple[int, Membership]]:
    """(membership id, membership) of a cohort's members by membership id (after ``after``): the
    (cohort, id) index range."""
    m = T_MEMBERSHIPS
    q = (
        select(m.c.id, T_USERS.c.user_id, m.c.join_seq, m.c.leave_seq, m.c.joined_at, m.c.left_at)
        .join(T_USERS, T_USERS.c.id == m.c.user_pk)
        .where(m.c.cohort_id == cohort_pk)
    )
    if not history:
        q = q.where(m.c.leave_seq.is_(None))
    if after is not None:
        q = q.where(m.c.id > after)
    rows = s.execute(q.order_by(m.c.id).limit(limit).offset(offset)).all()
    return [(r.id, _membership(r, r.user_id, cohort_id)) for r in rows]


def _membership(r: Any, user_id: str, cohort_id: str) -> Membership:
    return Membership(
        user_id=user_id,
        cohort_id=cohort_id,
        joined_after_round=r.join_seq,
        left_after_round=r.leave_seq,
        joined_at=utc(r.joined_at),
        left_at=utc(r.left_at),
    )


def memberships_of(s: Session, user_pk: int, user_id: str) -> list[Membership]:
    m = T_MEMBERSHIPS
    rows = s.execute(
        select(T_COHORTS.c.cohort_id, m.c.join_seq, m.c.leave_seq, m.c.joined_at, m.c.left_at)
        .join(T_COHORTS, T_COHORTS.c.id == m.c.cohort_id)
        .where(m.c.user_pk == user_pk)
        .order_by(m.c.id)
    ).all()
    return [_membership(r, user_id, r.cohort_id) for r in rows]
