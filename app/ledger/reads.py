"""Read operations on users: status, charge log, audit against the log, spent-over-time history."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import numpy as np
from sqlalchemy.orm import Session

from accountant.conversion import MIN_CONVERSION_ORDER, epsilon_vector
from app.db.session import Database
from app.ledger import curves as cv
from app.ledger import paging
from app.ledger import queries as q
from app.ledger import repository as repo
from app.ledger.errors import BadQuery, NotFound
from app.ledger.grid import stored_grids
from app.ledger.records import (
    Audit,
    ChargeEntry,
    ExhaustionEntry,
    HistoryPoint,
    Page,
    Spent,
    UserCurve,
    UserHistory,
    UserStatus,
)


def _unknown_user(user_id: str) -> NotFound:
    return NotFound(f"unknown user {user_id!r}; create it with PUT /v1/users/{{user_id}}")


def get_user(db: Database, user_id: str) -> UserStatus:
    with db.read() as s:
        st = q.user_status(s, user_id)
    if st is None:
        raise _unknown_user(user_id)
    return st


def _user_pk_class(s: Session, user_id: str) -> tuple[int, int]:
    r = repo.user_row(s, user_id)
    if r is None:
        raise NotFound(f"unknown user {user_id!r}")
    return r.id, r.class_id


def list_user_charges(
    db: Database, user_id: str, limit: int = 100, offset: int = 0, cursor: str | None = None
) -> Page[ChargeEntry]:
    """The charges that reached a user, oldest first (by charge id): at ``offset`` or after ``cursor``."""
    return list_charges(db, limit, offset, cursor, user_id=user_id)


def list_charges(
    db: Database,
    limit: int = 100,
    offset: int = 0,
    cursor: str | None = None,
    *,
    user_id: str | None = None,
    cohort_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Page[ChargeEntry]:
    """The charges of the ledger, oldest first (by charge id), at ``offset`` or after ``cursor``:
    those that reached ``user_id`` (explicitly or as a cohort member), of the cohort ``cohort_id``,
    created at or after ``since`` and before ``until`` (aware UTC datetimes, :func:`parse_instant`). An unknown user or
    cohort is a :class:`NotFound`; ``since`` not before ``until`` an :class:`BadQuery`."""
    paging.check(offset, cursor)
    if since is not None and until is not None and since >= until:
        raise BadQuery(
            f"since ({since.isoformat()}) must be before until ({until.isoformat()}): the range "
            "[since, until) is empty; swap them or widen the range"
        )
    after = paging.decode(cursor, "charges", ("int",))[0] if cursor is not None else None
    with db.read() as s:
        user_pk = _user_pk_class(s, user_id)[0] if user_id is not None else None
        cohort_pk = repo.cohort_pk(s, cohort_id) if cohort_id is not None else None
        if cohort_id is not None and cohort_pk is None:
            raise NotFound(f"unknown cohort {cohort_id!r}; list the cohorts with GET /v1/cohorts")
        f = q.ChargeFilter(user_pk=user_pk, cohort_pk=cohort_pk, since=since, until=until)
        total, items = q.charges(s, f, limit + 1, offset, after)
    return paging.page(items, total, limit, offset, "charges", lambda c: [int(c.charge_id)])


def parse_instant(name: str, text: str | None) -> datetime | None:
    """The query parameter ``name`` = ``text`` (ISO 8601; without an offset: UTC) as an aware
    datetime; unreadable text is a :class:`BadQuery` naming the parameter and the form to use."""
    if text is None:
        return None
    try:
        ts = datetime.fromisoformat(text.strip())
        ts = ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts.astimezone(timezone.utc)
    except (ValueError, OverflowError):  # OverflowError: an offset that leaves the years 1–9999
        raise BadQuery(
            f"{name}={text[:64]!r} is not an ISO 8601 date or date-time in the years 1–9999 UTC: write e.g. 2025-01-31 or "
            "2025-01-31T12:00:00Z (without an offset the time is UTC)",
            parameter=name,
        ) from None
    return ts


def recompute_user(db: Database, user_id: str) -> Audit:
    """The running spent curve against the exactly rounded recomputation from the charge log.

    The running curve must never be below the recomputation (it is summed with outward rounding,
    :func:`app.ledger.curves.add_up`; the log is summed exactly, :func:`app.ledger.curves.exact_sum`)."""
    with db.read() as s:
        pk, cid = _user_pk_class(s, user_id)
        c = repo.class_by_id(s, cid)
        curves = q.user_curves(s, pk)
    running = c.spent
    recomputed = cv.exact_sum([x[2] for x in curves])
    ok = bool(np.all((running >= recomputed) | (np.isinf(running) & np.isinf(recomputed))))  # side slots too
    st = cv.status(c.budget, recomputed)
    running, recomputed = cv.rdp_part(running), cv.rdp_part(recomputed)  # reported on the grid
    with np.errstate(invalid="ignore"):
        rel = np.where(recomputed > 0, (running - recomputed) / np.where(recomputed > 0, recomputed, 1), 0.0)
    excess = float(np.nanmax(np.where(np.isfinite(rel), rel, 0.0))) if rel.size else 0.0
    return Audit(
        user_id=user_id,
        orders=cv.ORDERS.copy(),
        running=running,
        recomputed=recomputed,
        running_not_below_recomputed=ok,
        max_relative_excess=excess,
        charges_in_log=len(curves),
        charges_counted=c.n_charges,
        recomputed_spent=Spent(st.spent_epsilon, st.spent_order),
        budget=c.budget,
    )


def subsample(n: int, limit: int) -> list[int]:
    """At most ``limit`` indices of ``range(n)``, evenly spread, first and last included."""
    if n <= limit:
        return list(range(n))
    picked: list[int] = np.unique(np.round(np.linspace(0, n - 1, limit)).astype(int)).tolist()
    return picked


def user_history(db: Database, user_id: str, limit: int = 500) -> UserHistory:
    """Spent ε at the budget's δ after each charge (at most ``limit`` points)."""
    with db.read() as s:
        pk, cid = _user_pk_class(s, user_id)
        b = repo.class_by_id(s, cid).budget
        curves = q.user_curves(s, pk)
    run = cv.zeros()
    cum = []
    for _, _, curve in curves:
        run = cv.add_up(run, curve)
        cum.append(run)
    points = []
    for i in subsample(len(curves), limit):
        st = cv.status(b, cum[i])
        points.append(
            HistoryPoint(
                charge_id=str(curves[i][0]),
                at=curves[i][1],
                charges=i + 1,
                spent=Spent(st.spent_epsilon, st.spent_order),
                remaining_epsilon=st.remaining_epsilon,
            )
        )
    return UserHistory(user_id=user_id, budget=b, charges=len(curves), points=points)


def nearest_exhaustion(db: Database, limit: int = 20) -> list[ExhaustionEntry]:
    with db.read() as s:
        return q.exhaustion(s, limit)


def user_curve(db: Database, user_id: str) -> UserCurve:
    """The user's running spent curve (the one admission reads) with its budget curve."""
    with db.read() as s:
        row = repo.user_row(s, user_id)
        if row is None:
            raise _unknown_user(user_id)
        c = repo.class_by_id(s, row.class_id)
        orders = cv.ORDERS if c.grid_version == cv.GRID_VERSION else stored_grids(s)[c.grid_version]
    b = c.budget
    # B(α) = ε_B − conversion term: epsilon_vector(α) ≤ ε_B ⇔ spent(α) ≤ B(α) (orders that convert)
    budget_curve = np.array(
        [b.epsilon - cv.conversion_term(o, b.delta) if o > MIN_CONVERSION_ORDER else math.nan for o in orders]
    )
    # the RDP part of the stored vector (side slots — additive δ, (ε, δ) releases — follow it; the
    # policy's own ε, spent_epsilon, accounts for them)
    spent = cv.rdp_part(c.spent)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        eps = np.maximum(epsilon_vector(orders, spent, b.delta), 0.0)
    return UserCurve(
        user_id=user_id,
        budget=b,
        grid_version=c.grid_version,
        orders=np.asarray(orders, dtype=float),
        spent=spent,
        budget_curve=budget_curve,
        epsilon=eps,
        spent_epsilon=c.spent_epsilon,
        spent_order=c.spent_order,
    )
