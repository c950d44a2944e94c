"""Reads and writes of ledger rows inside one unit of work (a :class:`Session`).

Every function takes the unit's session; none commits. Rows come back typed
(:class:`~app.ledger.records.ClassRow`, :class:`~app.ledger.records.CohortRow`); lock-taking
reads say so in their name or take ``lock=True`` (PostgreSQL row locks, :func:`app.ledger.sql.locked`).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import and_, bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.orm import Session

from app.db.models import (
    T_CHARGE_USERS,
    T_CHARGES,
    T_CLASS_COHORTS,
    T_CLASSES,
    T_COHORTS,
    T_MEMBERSHIPS,
    T_USERS,
)
from app.db.session import Database
from app.ledger import curves as cv
from app.ledger.records import Actor, ClassRow, CohortRow
from app.ledger.sql import chunks, ids, insert_rows, locked, update_rows


def now() -> datetime:
    return datetime.now(timezone.utc)


# ---------------------------------------------------------------------------------------------- users


def users_by_name(s: Session, names: Sequence[str]) -> dict[str, tuple[int, int]]:
    """External user id → (user pk, class id), for the names that exist."""
    out = {}
    q = select(T_USERS.c.id, T_USERS.c.user_id, T_USERS.c.class_id).where(T_USERS.c.user_id.in_(ids("ids")))
    for ch in chunks(list(names)):
        for r in s.execute(q, {"ids": list(ch)}):
            out[r.user_id] = (r.id, r.class_id)
    return out


def user_row(s: Session, user_id: str) -> Row[int, int] | None:
    """(id, class_id) of one user."""
    return s.execute(select(T_USERS.c.id, T_USERS.c.class_id).where(T_USERS.c.user_id == user_id)).first()


def classes_of_users(s: Session, pks: Sequence[int]) -> dict[int, int]:
    """User pk → class id, as currently stored."""
    out = {}
    q = select(T_USERS.c.id, T_USERS.c.class_id).where(T_USERS.c.id.in_(ids("ids")))
    for ch in chunks(sorted(pks), 5000):
        for r in s.execute(q, {"ids": list(ch)}):
            out[r.id] = r.class_id
    return out


def insert_user(s: Session, user_id: str, class_id: int) -> None:
    ts = now()
    s.execute(insert(T_USERS).values(user_id=user_id, class_id=class_id, created_at=ts, updated_at=ts))


def insert_users(s: Session, db: Database, names: Sequence[str], class_id: int) -> None:
    ts = now()
    insert_rows(
        s,
        db,
        T_USERS,
        ({"user_id": u, "class_id": class_id, "created_at": ts, "updated_at": ts} for u in names),
    )


def touch_user(s: Session, pk: int) -> None:
    s.execute(update(T_USERS).where(T_USERS.c.id == pk).values(updated_at=now()))


def move_users(s: Session, moves: dict[int, list[int]]) -> None:
    """Point the users ``moves[class_id]`` at ``class_id``."""
    singles: list[dict[str, int]] = []
    q = update(T_USERS).where(T_USERS.c.id.in_(ids("ids")))
    for tid, pks in moves.items():
        if len(pks) <= 8:
            singles.extend({"_pk": pk, "_cid": tid} for pk in pks)
            continue
        for ch in chunks(sorted(pks), 5000):
            s.execute(q.values(class_id=tid), {"ids": list(ch)})
    if singles:
        s.execute(
            update(T_USERS).where(T_USERS.c.id == bindparam("_pk")).values(class_id=bindparam("_cid")),
            singles,
        )


def user_names_in_classes(s: Session, class_ids: Sequence[int], limit: int) -> list[tuple[str, int]]:
    """(user id, class id) of the first ``limit`` users (by pk) of these classes."""
    rows = s.execute(
        select(T_USERS.c.user_id, T_USERS.c.class_id)
        .where(T_USERS.c.class_id.in_(list(class_ids)))
        .order_by(T_USERS.c.id)
        .limit(limit)
    )
    return [(r.user_id, r.class_id) for r in rows]


# ---------------------------------------------------------------------------------------------- classes


def cohorts_of(s: Session, class_ids: Iterable[int]) -> dict[int, set[int]]:
    """Class id → the cohort pks it is a member of."""
    out: dict[int, set[int]] = defaultdict(set)
    q = select(T_CLASS_COHORTS.c.class_id, T_CLASS_COHORTS.c.cohort_id).where(
        T_CLASS_COHORTS.c.class_id.in_(ids("ids"))
    )
    for ch in chunks(sorted(set(class_ids))):
        for r in s.execute(q, {"ids": list(ch)}):
            out[r.class_id].add(r.cohort_id)
    return out


def load_classes(s: Session, db: Database, class_ids: Iterable[int], *, lock: bool) -> dict[int, ClassRow]:
    """The classes by id (in id order, ``FOR UPDATE`` when ``lock``)."""
    out = {}
    q = select(T_CLASSES).where(T_CLASSES.c.id.in_(ids("ids"))).order_by(T_CLASSES.c.id)
    if lock:
        q = locked(q, db)
    for ch in chunks(sorted(set(class_ids))):
        for r in s.execute(q, {"ids": list(ch)}).mappings():
            out[r["id"]] = ClassRow.from_row(r)
    return out


def class_by_id(s: Session, class_id: int) -> ClassRow:
    return ClassRow.from_row(s.execute(select(T_CLASSES).where(T_CLASSES.c.id == class_id)).mappings().one())


def classes_by_signature(s: Session, db: Database, signatures: Iterable[str]) -> dict[str, ClassRow]:
    """The existing classes with these signatures, locked."""
    out = {}
    q = locked(select(T_CLASSES).where(T_CLASSES.c.signature.in_(ids("ids"))), db)
    for ch in chunks(sorted(signatures)):
        for r in s.execute(q, {"ids": list(ch)}).mappings():
            out[r["signature"]] = ClassRow.from_row(r)
    return out


def class_id_by_signature(s: Session, db: Database, signature: str) -> int | None:
    q = locked(select(T_CLASSES.c.id).where(T_CLASSES.c.signature == signature), db)
    return s.execute(q).scalar_one_or_none()


def classes_not_on_grid(s: Session, version: int) -> list[ClassRow]:
    rows = s.execute(select(T_CLASSES).where(T_CLASSES.c.grid_version != version)).mappings().all()
    return [ClassRow.from_row(r) for r in rows]


def insert_class(s: Session, row: ClassRow) -> int:
    pk: int = s.execute(insert(T_CLASSES).values(**row.columns()).returning(T_CLASSES.c.id)).scalar_one()
    return pk


def insert_classes(s: Session, rows: Sequence[ClassRow]) -> list[int]:
    """Insert classes; their new ids in the order given."""
    if not rows:
        return []
    stmt = insert(T_CLASSES).returning(T_CLASSES.c.id, sort_by_parameter_order=True)
    return list(s.execute(stmt, [r.columns() for r in rows]).scalars().all())


#: what a transition or a charge may change on a class
MUTABLE = (
    "signature",
    "epsilon",
    "delta",
    "policy",
    "filter_order",
    "filter_budget",
    "grid_version",
    "spent",
    "n_charges",
    "spent_epsilon",
    "spent_order",
    "remaining_epsilon",
    "remaining_fraction",
    "last_charge_at",
    "updated_at",
)


def update_classes(
    s: Session, db: Database, rows: Sequence[ClassRow], columns: Sequence[str] = MUTABLE
) -> None:
    """Write ``columns`` of each row's state to its class."""
    out = []
    for r in rows:
        vals = r.columns()
        out.append({"_id": r.id, **{c: vals[c] for c in columns}})
    update_rows(s, db, T_CLASSES, out)


def update_class(s: Session, row: ClassRow, columns: Sequence[str]) -> None:
    """Write ``columns`` of one class's state (a plain UPDATE)."""
    vals = row.columns()
    s.execute(update(T_CLASSES).where(T_CLASSES.c.id == row.id).values({c: vals[c] for c in columns}))


def add_class_sizes(s: Session, deltas: dict[int, int]) -> None:
    rows = [{"_id": cid, "_d": d} for cid, d in deltas.items() if d]
    if rows:
        s.execute(
            update(T_CLASSES)
            .where(T_CLASSES.c.id == bindparam("_id"))
            .values(n_users=T_CLASSES.c.n_users + bindparam("_d")),
            rows,
        )


def delete_classes(s: Session, class_ids: Iterable[int]) -> None:
    for cid in class_ids:
        s.execute(delete(T_CLASS_COHORTS).where(T_CLASS_COHORTS.c.class_id == cid))
        s.execute(delete(T_CLASSES).where(T_CLASSES.c.id == cid))


def link_class_cohorts(s: Session, pairs: Sequence[tuple[int, int]]) -> None:
    if pairs:
        s.execute(insert(T_CLASS_COHORTS), [{"class_id": c, "cohort_id": co} for c, co in pairs])


def unlink_class_cohorts(s: Session, pairs: Sequence[tuple[int, int]]) -> None:
    for cid, co in pairs:
        s.execute(
            delete(T_CLASS_COHORTS).where(
                and_(T_CLASS_COHORTS.c.class_id == cid, T_CLASS_COHORTS.c.cohort_id == co)
            )
        )


# ---------------------------------------------------------------------------------------------- cohorts


def cohort_by_name(s: Session, db: Database, cohort_id: str, *, lock: bool = False) -> CohortRow | None:
    q = select(T_COHORTS).where(T_COHORTS.c.cohort_id == cohort_id)
    if lock:
        q = locked(q, db)
    r = s.execute(q).mappings().first()
    return CohortRow.from_row(r) if r is not None else None


def cohort_pk(s: Session, cohort_id: str) -> int | None:
    return s.execute(select(T_COHORTS.c.id).where(T_COHORTS.c.cohort_id == cohort_id)).scalar_one_or_none()


def lock_cohort_rows(s: Session, db: Database, exclusive: set[int], shared: set[int]) -> None:
    """Lock cohorts in id order (``FOR UPDATE`` for ``exclusive``, ``FOR SHARE`` for the others)."""
    if db.is_sqlite:
        return
    for cid in sorted(exclusive | shared):
        s.execute(
            locked(select(T_COHORTS.c.id).where(T_COHORTS.c.id == cid), db, shared=cid not in exclusive)
        ).all()


def cohort_classes(s: Session, db: Database, cohort_pk_: int) -> list[ClassRow]:
    """The classes of a cohort in id order, locked."""
    q = (
        select(T_CLASSES)
        .join(T_CLASS_COHORTS, T_CLASS_COHORTS.c.class_id == T_CLASSES.c.id)
        .where(T_CLASS_COHORTS.c.cohort_id == cohort_pk_)
        .order_by(T_CLASSES.c.id)
    )
    return [ClassRow.from_row(r) for r in s.execute(locked(q, db, of=T_CLASSES)).mappings()]


def insert_cohort(s: Session, cohort_id: str, description: str | None) -> None:
    s.execute(
        insert(T_COHORTS).values(
            cohort_id=cohort_id,
            description=description,
            seq=0,
            grid_version=cv.GRID_VERSION,
            cumulative=cv.to_bytes(cv.zeros()),
            n_members=0,
            created_at=now(),
        )
    )


def advance_cohort(s: Session, cohort: CohortRow, seq: int, cumulative: Any) -> None:
    s.execute(
        update(T_COHORTS)
        .where(T_COHORTS.c.id == cohort.id)
        .values(seq=seq, cumulative=cv.to_bytes(cumulative))
    )


def add_cohort_members_count(s: Session, cohort_pk_: int, delta: int) -> None:
    s.execute(
        update(T_COHORTS).where(T_COHORTS.c.id == cohort_pk_).values(n_members=T_COHORTS.c.n_members + delta)
    )


def update_cohort_curves(s: Session, cohort: CohortRow, cumulative: Any) -> None:
    s.execute(
        update(T_COHORTS)
        .where(T_COHORTS.c.id == cohort.id)
        .values(cumulative=cv.to_bytes(cumulative), grid_version=cv.GRID_VERSION)
    )


def cohorts_not_on_grid(s: Session, version: int) -> list[CohortRow]:
    rows = s.execute(select(T_COHORTS).where(T_COHORTS.c.grid_version != version)).mappings().all()
    return [CohortRow.from_row(r) for r in rows]


def open_memberships(s: Session, db: Database, cohort_pk_: int, user_pks: Sequence[int], seq: int) -> None:
    ts = now()
    rows = ({"cohort_id": cohort_pk_, "user_pk": pk, "join_seq": seq, "joined_at": ts} for pk in user_pks)
    insert_rows(s, db, T_MEMBERSHIPS, rows)


def close_memberships(s: Session, cohort_pk_: int, user_pks: Sequence[int], seq: int) -> None:
    m, ts = T_MEMBERSHIPS, now()
    for ch in chunks(list(user_pks), 5000):
        s.execute(
            update(m)
            .where(and_(m.c.cohort_id == cohort_pk_, m.c.user_pk.in_(ch), m.c.leave_seq.is_(None)))
            .values(leave_seq=seq, left_at=ts)
        )


# ---------------------------------------------------------------------------------------------- charges


#: between an idempotency key's scope and the key in the stored column (ids never hold control
#: characters, so the separator is unambiguous)
SCOPE_SEP = "\x1f"


def scoped_key(scope: str, key: str) -> str:
    """The stored form of ``key`` sent by the API key of ``scope``: ``scope␟key``, or, when that
    would not fit the 256-character column, ``scope␟␟sha256(key)`` (the key itself stays in the
    stored response)."""
    s = scope[:32]
    out = f"{s}{SCOPE_SEP}{key}"
    if len(out) <= 256:
        return out
    return f"{s}{SCOPE_SEP}{SCOPE_SEP}{hashlib.sha256(key.encode()).hexdigest()}"


def visible_key(stored: str | None, response: str | None = None) -> str | None:
    """The key as its sender wrote it, from the stored column (and the stored response for a hashed
    long key)."""
    if stored is None or SCOPE_SEP not in stored:
        return stored
    key = stored.split(SCOPE_SEP, 1)[1]
    if key.startswith(SCOPE_SEP):
        return json.loads(response).get("idempotency_key") if response else None
    return key


def charge_by_key(s: Session, key: str, *others: str) -> Row[int, str, str, str | None] | None:
    """(id, request_hash, response) of the charge recorded under an idempotency key (the first of
    ``key, *others`` that has one)."""
    keys = [key, *others]
    rows = s.execute(
        select(
            T_CHARGES.c.id, T_CHARGES.c.request_hash, T_CHARGES.c.response, T_CHARGES.c.idempotency_key
        ).where(T_CHARGES.c.idempotency_key.in_(keys))
    ).all()
    by_key = {r.idempotency_key: r for r in rows}
    return next((by_key[k] for k in keys if k in by_key), None)


def insert_charge(
    s: Session,
    *,
    key: str | None,
    req_hash: str,
    event: dict[str, Any],
    cost: Any,
    n_users: int,
    actor: Actor,
    ts: datetime,
    response: dict[str, Any],
    cohort: CohortRow | None = None,
    cohort_seq: int | None = None,
    cumulative: Any = None,
) -> int:
    """Record an admitted charge (immutable); its id."""
    pk: int = s.execute(
        insert(T_CHARGES)
        .values(
            idempotency_key=key,
            request_hash=req_hash,
            event=json.dumps(event, sort_keys=True),
            grid_version=cv.GRID_VERSION,
            curve=cv.to_bytes(cost),
            cohort_id=cohort.id if cohort else None,
            cohort_seq=cohort_seq,
            cohort_cumulative=cv.to_bytes(cumulative) if cumulative is not None else None,
            n_users=n_users,
            actor_name=actor.name,
            actor_role=actor.role,
            created_at=ts,
            response=json.dumps(response),
        )
        .returning(T_CHARGES.c.id)
    ).scalar_one()
    return pk


def insert_charge_users(s: Session, db: Database, charge_id: int, user_pks: Iterable[int]) -> None:
    insert_rows(s, db, T_CHARGE_USERS, ({"charge_id": charge_id, "user_pk": pk} for pk in sorted(user_pks)))


def count(s: Session, table: Any) -> int:
    return int(s.execute(select(func.count()).select_from(table)).scalar_one())
