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
from itertools import chain
from typing import Any, Literal, get_args

from sqlalchemy import ColumnElement, and_, bindparam, func, or_, select, tuple_
from sqlalchemy.orm import Session

from app.db.models import T_CLASSES as C
from app.db.models import T_COHORTS as CO
from app.db.models import T_USERS as U
from app.db.session import Database
from app.ledger import paging
from app.ledger import queries as q
from app.ledger.records import CohortInfo, CohortRow, Page, UserStatus
from app.ledger.sql import AnySelect, prefix_range, snapshot, unindexed

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


def _statuses(s: Session, stmt: AnySelect) -> list[UserStatus]:
    return [q.user_status_of(r) for r in s.execute(stmt).mappings()]


def _base(f: UserFilter) -> AnySelect:
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
    db: Database,
    f: UserFilter,
    sort: str = "user_id",
    limit: int = 50,
    offset: int = 0,
    cursor: str | None = None,
) -> Page[UserStatus]:
    """One page of the users matching ``f`` in the order ``sort`` (one of :data:`SORTS`): at
    ``offset`` (≤ :data:`~app.ledger.paging.MAX_OFFSET`) or after ``cursor``."""
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {SORTS}")
    paging.check(offset, cursor)
    desc, key = sort.startswith("-"), sort.lstrip("-")
    listing = f"users:{sort}"
    with db.read() as s:
        snapshot(s, db)
        if key == "user_id":
            after = paging.decode(cursor, listing, ("str",))[0] if cursor is not None else None
            total = _total(s, f)
            placed = [(0, None, u) for u in _by_user_id(s, f, total, limit + 1, offset, after)]
        else:
            at = (
                tuple(paging.decode(cursor, listing, (KINDS[key], "int", "str")))
                if cursor is not None
                else None
            )
            total, placed = _by_class(s, f, CLASS_KEYS[key], desc, limit + 1, offset, at)
    nxt = None
    if len(placed) > limit:
        cid, k, last = placed[limit - 1]
        nxt = paging.encode(listing, [last.user_id] if key == "user_id" else [k, cid, last.user_id])
    items = [u for _, _, u in placed[:limit]]
    return Page(items=items, total=total, limit=limit, offset=offset, next_cursor=nxt)


#: the cursor value kind of each class sort key (:func:`app.ledger.paging.decode`)
KINDS = {"remaining": "float", "spent": "float", "last_charge": "time?"}

#: (class id, its sort key, a user of it) — a listed user with its position in a class sort
Placed = tuple[int, Any, UserStatus]


def _by_user_id(
    s: Session, f: UserFilter, total: int, limit: int, offset: int, after: str | None
) -> list[UserStatus]:
    """Users in id order (after the id ``after``). Walking the id index and skipping the users
    whose class does not match costs O(scanned users); when the class filters keep few users
    (fewer than 1/:data:`SPARSE` of those with the prefix) the matching classes' users are
    fetched through the (class, id) index and sorted instead (:func:`app.ledger.sql.unindexed`)."""
    stmt = _base(f).limit(limit).offset(offset)
    if after is not None:
        stmt = stmt.where(U.c.user_id > after)
    filtered = f.policy is not None or f.remaining_below is not None
    if filtered and total * SPARSE < _total(s, f, on_classes=False):
        matching = select(C.c.id).where(*f.on_classes())
        return _statuses(s, stmt.where(U.c.class_id.in_(matching)).order_by(unindexed(U.c.user_id)))
    return _statuses(s, stmt.where(*f.on_classes()).order_by(U.c.user_id))


def _by_class(
    s: Session, f: UserFilter, key: Any, desc: bool, limit: int, offset: int, at: tuple[Any, int, str] | None
) -> tuple[int, list[Placed]]:
    """(total, the page) of a listing sorted by a class column: at ``offset``, or after the
    position ``at`` = (key, class id, user id) of a cursor — the rest of that class (if it is still
    at that key), then the classes after it."""
    if at is None and f.prefix:  # the prefix's users counted per class once, for the window and the total
        classes = list(_classes_in_order(s, f, key, desc))
        return sum(n for _, n, _ in classes), _users_of(s, f, _window(classes, limit, offset), desc)
    total = _total(s, f)
    if at is None:
        with closing(_classes_in_order(s, f, key, desc)) as stream:
            window = _window(stream, limit, offset)
        return total, _users_of(s, f, window, desc)
    k, cid, uid = at
    with closing(_classes_in_order(s, f, key, desc, start=(k, cid))) as stream:
        first = next(stream, None)
        placed: list[Placed] = []
        rest: Iterable[tuple[int, int, Any]] = stream
        if first is not None and first[0] == cid:
            order, beyond = (
                (U.c.user_id.desc(), U.c.user_id < uid) if desc else (U.c.user_id, U.c.user_id > uid)
            )
            stmt = _base(f).where(U.c.class_id == cid, beyond).order_by(order).limit(limit)
            placed = [(cid, first[2], u) for u in _statuses(s, stmt)]
        elif first is not None:
            rest = chain([first], stream)
        window = _window(rest, limit - len(placed), 0)
    return total, placed + _users_of(s, f, window, desc)


def _from(key: Any, desc: bool, start: tuple[Any, int]) -> ColumnElement[bool]:
    """The classes at or after the position (key value, class id) in listing order (the
    ``(key, id)`` index range; never-charged classes come last when sorting by last charge)."""
    k, cid = start
    if k is None:  # only last_charge is nullable: the never-charged classes, by id
        return and_(key.is_(None), C.c.id <= cid if desc else C.c.id >= cid)
    here = tuple_(key, C.c.id)
    there = tuple_(bindparam("k", k, type_=key.type), bindparam("cid", cid, type_=C.c.id.type))
    cond = here <= there if desc else here >= there
    return or_(cond, key.is_(None)) if key is C.c.last_charge_at else cond


def _classes_in_order(
    s: Session, f: UserFilter, key: Any, desc: bool, start: tuple[Any, int] | None = None
) -> Generator[tuple[int, int, Any], None, None]:
    """(class id, matching users, sort key) of the matching classes in listing order (from the
    position ``start`` on), streamed."""
    if f.prefix:
        counts = (
            select(U.c.class_id, func.count().label("n"))
            .where(f.on_users())
            .group_by(U.c.class_id)
            .subquery()
        )
        stmt = select(C.c.id, counts.c.n, key).join(counts, counts.c.class_id == C.c.id)
    else:
        stmt = select(C.c.id, C.c.n_users, key)
    order = key.desc() if desc else key.asc()
    if key is C.c.last_charge_at:
        order = order.nulls_last()
    stmt = stmt.where(*f.on_classes()).order_by(order, C.c.id.desc() if desc else C.c.id)
    if start is not None:
        stmt = stmt.where(_from(key, desc, start))
    result = s.execute(stmt, execution_options={"yield_per": 1000})
    try:
        for cid, n, k in result:
            yield cid, int(n), k
    finally:
        result.close()


@dataclass(frozen=True)
class _Slice:
    class_id: int
    skip: int
    take: int
    size: int
    key: Any

    @property
    def whole(self) -> bool:
        return self.skip == 0 and self.take == self.size


def _window(classes: Iterable[tuple[int, int, Any]], limit: int, offset: int) -> list[_Slice]:
    """The classes' users at positions [offset, offset + limit) of the listing: a class of n users
    holds positions [seen, seen + n)."""
    out: list[_Slice] = []
    seen, end = 0, offset + limit
    if limit <= 0:
        return out
    for cid, n, k in classes:
        lo, hi = max(seen, offset), min(seen + n, end)
        if lo < hi:
            out.append(_Slice(cid, lo - seen, hi - lo, n, k))
        seen += n
        if seen >= end:
            break
    return out


def _users_of(s: Session, f: UserFilter, window: list[_Slice], desc: bool) -> list[Placed]:
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
    return [(w.class_id, w.key, u) for w in window for u in by_class.get(w.class_id, [])]


def list_cohorts(
    db: Database, prefix: str = "", limit: int = 50, offset: int = 0, cursor: str | None = None
) -> Page[CohortInfo]:
    """Cohorts whose id starts with ``prefix``, by id: at ``offset`` or after ``cursor``."""
    paging.check(offset, cursor)
    cond = prefix_range(CO.c.cohort_id, prefix)
    stmt = select(CO).where(cond).order_by(CO.c.cohort_id).limit(limit + 1).offset(offset)
    if cursor is not None:
        stmt = stmt.where(CO.c.cohort_id > paging.decode(cursor, "cohorts", ("str",))[0])
    with db.read() as s:
        snapshot(s, db)
        items = [q.cohort_info(CohortRow.from_row(r)) for r in s.execute(stmt).mappings()]
        total = int(s.execute(select(func.count()).select_from(CO).where(cond)).scalar_one())
    return paging.page(items, total, limit, offset, "cohorts", lambda c: [c.cohort_id])
