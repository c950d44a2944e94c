"""Cohorts: named populations charged as one. A member's share of a cohort is the rounds in
(join round, leave round]; joining and leaving are class transitions (:mod:`app.ledger.transitions`)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.session import Database
from app.ledger import curves as cv
from app.ledger import paging
from app.ledger import queries as q
from app.ledger import repository as repo
from app.ledger.curves import Budget
from app.ledger.errors import Conflict, NotFound, UnknownUsers
from app.ledger.locking import lock_cohort, lock_users_classes
from app.ledger.reads import subsample
from app.ledger.records import (
    CohortHistory,
    CohortInfo,
    HistoryPoint,
    MemberPage,
    MembersChange,
    Membership,
    Spent,
    utc,
)
from app.ledger.transitions import CohortChange, transition, unchanged


def _unknown(cohort_id: str) -> NotFound:
    return NotFound(f"unknown cohort {cohort_id!r}")


def _pk(s: Session, cohort_id: str) -> int:
    pk = repo.cohort_pk(s, cohort_id)
    if pk is None:
        raise _unknown(cohort_id)
    return pk


def get_cohort(db: Database, cohort_id: str) -> CohortInfo:
    with db.read() as s:
        return _info(s, db, cohort_id)


def create_cohort(db: Database, cohort_id: str, description: str | None) -> CohortInfo:
    def exists() -> Conflict:
        return Conflict(f"cohort {cohort_id!r} already exists")

    def unit(s: Session) -> CohortInfo:
        if repo.cohort_pk(s, cohort_id) is not None:
            raise exists()
        repo.insert_cohort(s, cohort_id, description)
        return _info(s, db, cohort_id)

    def created_meanwhile(_exc: IntegrityError) -> None:
        raise exists()

    return db.run_write(unit, on_integrity_error=created_meanwhile)


def _info(s: Session, db: Database, cohort_id: str) -> CohortInfo:
    """The cohort as this transaction sees it (a write's answer is read in the write's own
    transaction: what was committed, never a read after the commit that could fail)."""
    co = repo.cohort_by_name(s, db, cohort_id)
    if co is None:
        raise _unknown(cohort_id)
    return q.cohort_info(co)


def change_members(db: Database, cohort_id: str, user_ids: Sequence[str], join: bool) -> MembersChange:
    """Add (``join``) or remove members, all or nothing; already-members / non-members are skipped."""
    names = list(dict.fromkeys(user_ids))

    def unit(s: Session) -> tuple[int, CohortInfo]:
        pk = _pk(s, cohort_id)
        users = repo.users_by_name(s, names)
        missing = [u for u in names if u not in users]
        if missing:
            raise UnknownUsers(missing, "no membership was changed")
        locked = lock_users_classes(s, db, users, exclusive_cohort=pk)
        cohort = lock_cohort(s, db, cohort_id)
        if cohort is None:  # cohorts are never deleted; the row was read above
            raise _unknown(cohort_id)
        seq = cohort.seq
        groups: dict[int, list[int]] = {}
        for upk, cid in locked.class_of.items():
            if (pk in locked.cohorts.get(cid, set())) != join:
                groups.setdefault(cid, []).append(upk)
        affected = sorted(upk for g in groups.values() for upk in g)
        kind, change = ("join", CohortChange(add=pk)) if join else ("leave", CohortChange(remove=pk))
        transition(s, db, locked.classes, groups, f"{kind}|{pk}|{seq}", unchanged, locked.cohorts, change)
        if join:
            repo.open_memberships(s, db, pk, affected, seq)
        else:
            repo.close_memberships(s, pk, affected, seq)
        repo.add_cohort_members_count(s, pk, len(affected) if join else -len(affected))
        return len(affected), _info(s, db, cohort_id)

    changed, info = db.run_write(unit)
    return MembersChange(cohort=info, joined=join, changed=changed, unchanged=len(names) - changed)


def list_members(
    db: Database,
    cohort_id: str,
    limit: int = 100,
    offset: int = 0,
    history: bool = False,
    cursor: str | None = None,
) -> MemberPage:
    """A cohort's members (``history``: past memberships too) in the order they joined: at
    ``offset`` or after ``cursor``."""
    listing = "members:history" if history else "members"
    paging.check(offset, cursor)
    after = paging.decode(cursor, listing, ("int",))[0] if cursor is not None else None
    with db.read() as s:
        rows = q.members(s, _pk(s, cohort_id), cohort_id, limit + 1, offset, history, after)
    nxt = paging.encode(listing, [rows[limit - 1][0]]) if len(rows) > limit else None
    members = [m for _, m in rows[:limit]]
    return MemberPage(cohort_id=cohort_id, limit=limit, offset=offset, members=members, next_cursor=nxt)


def user_cohorts(db: Database, user_id: str) -> list[Membership]:
    with db.read() as s:
        r = repo.user_row(s, user_id)
        if r is None:
            raise NotFound(f"unknown user {user_id!r}")
        return q.memberships_of(s, r.id, user_id)


def cohort_history(db: Database, cohort_id: str, delta: float, limit: int = 500) -> CohortHistory:
    """ε at ``delta`` of the cohort's cumulative curve after each round (for a member present from
    the start; later joiners have spent the difference of two points)."""
    with db.read() as s:
        rows = q.cohort_rounds(s, _pk(s, cohort_id))
    b = Budget(1.0, delta)
    points = []
    for i in subsample(len(rows), limit):
        r = rows[i]
        st = cv.status(b, cv.vector_from_bytes(r.cohort_cumulative))
        points.append(
            HistoryPoint(
                charge_id=str(r.id),
                round=r.cohort_seq,
                at=utc(r.created_at),
                spent=Spent(st.spent_epsilon, st.spent_order),
            )
        )
    return CohortHistory(cohort_id=cohort_id, delta=delta, rounds=len(rows), points=points)
