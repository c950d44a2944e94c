"""Listings of users and cohorts (dashboards), fast at 10⁶ users.

Remaining and spent ε and the last charge are properties of budget classes (every user of a
class shares them, :mod:`app.ledger.transitions`). A listing sorted by one of them therefore walks
the classes in that order — (key, class id), an index scan that stops once the page is covered —
and takes the users of each class by id (index (class_id, user_id)): the page [offset, offset +
limit) costs O(classes before it + limit), never a sort of the users. Sorting by user id walks
the unique index of ids. Ids compare by code point on both databases, so an id prefix is an index
range (:func:`app.ledger.sql.prefix_range`).

Order: the sort key, then the class, then the user id; a descending sort reverses all three.
Users never charged come last when sorting by last charge, in both directions. The total counts
every matching user: Σ users over the matching classes, or a count of the prefix's id range.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Literal, get_args

from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.orm import Session

from app.db.models import T_CLASSES as C
from app.db.models import T_COHORTS as CO
from app.db.models import T_USERS as U
from app.db.session import Database
from app.ledger import queries as q
from app.ledger.records import CohortInfo, CohortRow, Page, UserStatus
from app.ledger.sql import prefix_range, snapshot, unindexed

#: sort names → the class column they order by (``user_id`` orders the users themselves)
CLASS_KEYS = {
    "remaining": C.c.remaining_epsilon,
    "spent": C.c.spent_epsilon,
    "last_charge": C.c.last_charge_at,
}
Sort = Literal["user_id", "remaining", "-remaining", "spent", "-spent", "last_charge", "-last_charge"]
SORTS: tuple[str, ...] = get_args(Sort)


@dataclass(frozen=True)
class UserFilter:
    """Users whose id starts with ``prefix``, of ``policy``, with remaining ε < ``remaining_below``."""

    prefix: str = ""
    policy: str | None = None
    remaining_below: float | None = None

    def on_classes(self) -> list[ColumnElement[bool]]:
        conds = [C.c.n_users > 0]
        if self.policy is not None:
            conds.append(C.c.policy == self.policy)
        if self.remaining_below is not None:
            conds.append(C.c.remaining_epsilon < self.remaining_below)
        return conds

    def on_users(self) -> ColumnElement[bool]:
        return prefix_range(U.c.user_id, self.prefix)


def _statuses(s: Session, stmt: Select) -> list[UserStatus]:
    return [q.user_status_of(r) for r in s.execute(stmt).mappings()]


def _base(f: UserFilter) -> Select:
    return select(*q.USER_STATUS_COLS).join(C, C.c.id == U.c.class_id).where(f.on_users())


def _total(s: Session, f: UserFilter, *, on_classes: bool = True) -> int:
    """Users matching ``f`` (``on_classes=False``: matching its prefix only)."""
    conds = f.on_classes() if on_classes else [C.c.n_users > 0]
    if f.prefix:
        stmt = select(func.count()).select_from(U.join(C, C.c.id == U.c.class_id)).where(f.on_users(), *conds)
    else:
        stmt = select(func.coalesce(func.sum(C.c.n_users), 0)).where(*conds)
    return int(s.execute(stmt).scalar_one())


#: a class filter keeping fewer than 1/SPARSE of the users is applied first (see _by_user_id)
SPARSE = 20


def list_users(
    db: Database, f: UserFilter, sort: str = "user_id", limit: int = 50, offset: int = 0
) -> Page[UserStatus]:
    """One page of the users matching ``f`` in the order ``sort`` (one of :data:`SORTS`)."""
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {SORTS}")
    desc, key = sort.startswith("-"), sort.lstrip("-")
    with db.read() as s:
        snapshot(s, db)
        if key == "user_id":
            total = _total(s, f)
            items = _by_user_id(s, f, total, limit, offset)
        elif f.prefix:  # the prefix's users counted per class once, for the window and the total
            classes = list(_classes_in_order(s, f, CLASS_KEYS[key], desc))
            total = sum(n for _, n in classes)
            items = _users_of(s, f, _window(classes, limit, offset), desc)
        else:
            with closing(_classes_in_order(s, f, CLASS_KEYS[key], desc)) as stream:
                window = _window(stream, limit, offset)
            items = _users_of(s, f, window, desc)
            total = _total(s, f)
        return Page(items=items, total=total, limit=limit, offset=offset)


def _by_user_id(s: Session, f: UserFilter, total: int, limit: int, offset: int) -> list[UserStatus]:
    """Users in id order. Walking the id index and skipping the users whose class does not match
    costs O(scanned users); when the class filters keep few users (fewer than 1/:data:`SPARSE` of
    those with the prefix) the matching classes' users are fetched through the (class, id) index
    and sorted instead (:func:`app.ledger.sql.unindexed`)."""
    stmt = _base(f).limit(limit).offset(offset)
    filtered = f.policy is not None or f.remaining_below is not None
    if filtered and total * SPARSE < _total(s, f, on_classes=False):
        matching = select(C.c.id).where(*f.on_classes())
        return _statuses(s, stmt.where(U.c.class_id.in_(matching)).order_by(unindexed(U.c.user_id)))
    return _statuses(s, stmt.where(*f.on_classes()).order_by(U.c.user_id))


def _classes_in_order(
    s: Session, f: UserFilter, key: Any, desc: bool
) -> Generator[tuple[int, int], None, None]:
    """(class id, matching users) of the matching classes in listing order, streamed."""
    if f.prefix:
        counts = (
            select(U.c.class_id, func.count().label("n"))
            .where(f.on_users())
            .group_by(U.c.class_id)
            .subquery()
        )
        stmt = select(C.c.id, counts.c.n).join(counts, counts.c.class_id == C.c.id)
    else:
        stmt = select(C.c.id, C.c.n_users)
    order = key.desc() if desc else key.asc()
    if key is C.c.last_charge_at:
        order = order.nulls_last()
    stmt = stmt.where(*f.on_classes()).order_by(order, C.c.id.desc() if desc else C.c.id)
    result = s.execute(stmt, execution_options={"yield_per": 1000})
    try:
        for cid, n in result:
            yield cid, int(n)
    finally:
        result.close()


@dataclass(frozen=True)
class _Slice:
    class_id: int
    skip: int
    take: int
    size: int

    @property
    def whole(self) -> bool:
        return self.skip == 0 and self.take == self.size


def _window(classes: Iterable[tuple[int, int]], limit: int, offset: int) -> list[_Slice]:
    """The classes' users at positions [offset, offset + limit) of the listing: a class of n users
    holds positions [seen, seen + n)."""
    out, seen, end = [], 0, offset + limit
    for cid, n in classes:
        lo, hi = max(seen, offset), min(seen + n, end)
        if lo < hi:
            out.append(_Slice(cid, lo - seen, hi - lo, n))
        seen += n
        if seen >= end:
            break
    return out


def _users_of(s: Session, f: UserFilter, window: list[_Slice], desc: bool) -> list[UserStatus]:
    """The users of a window, in order: whole classes in one statement, the (at most two)
    partial ones by offset within their class."""
    order = U.c.user_id.desc() if desc else U.c.user_id
    whole = [w.class_id for w in window if w.whole]
    by_class: dict[int, list[UserStatus]] = {}
    if whole:
        rows = s.execute(
            _base(f).add_columns(U.c.class_id).where(U.c.class_id.in_(whole)).order_by(U.c.class_id, order)
        ).mappings()
        for r in rows:
            by_class.setdefault(r["class_id"], []).append(q.user_status_of(r))
    for w in window:
        if not w.whole:
            stmt = _base(f).where(U.c.class_id == w.class_id).order_by(order).limit(w.take).offset(w.skip)
            by_class[w.class_id] = _statuses(s, stmt)
    return [u for w in window for u in by_class.get(w.class_id, [])]


def list_cohorts(db: Database, prefix: str = "", limit: int = 50, offset: int = 0) -> Page[CohortInfo]:
    """Cohorts whose id starts with ``prefix``, by id."""
    cond = prefix_range(CO.c.cohort_id, prefix)
    with db.read() as s:
        snapshot(s, db)
        rows = s.execute(
            select(CO).where(cond).order_by(CO.c.cohort_id).limit(limit).offset(offset)
        ).mappings()
        items = [q.cohort_info(CohortRow.from_row(r)) for r in rows]
        total = int(s.execute(select(func.count()).select_from(CO).where(cond)).scalar_one())
    return Page(items=items, total=total, limit=limit, offset=offset)
