"""The locking protocol of ledger writes.

PostgreSQL (READ COMMITTED). Global lock order: cohorts (by id) → classes (by id). A user changes
class only under the lock of its class (every transition locks the classes it moves users out
of and into), so class locks also pin their users.

* cohort charge: the cohort ``FOR UPDATE``, then its classes ``FOR UPDATE``
  (:func:`lock_cohort`, :func:`lock_cohort_classes`);
* explicit charge / budget change: the cohorts of the users' classes ``FOR SHARE``, then the
  classes ``FOR UPDATE``; then re-check that no user changed class and no class gained a cohort
  between the first read and the locks, else the unit is retried (:func:`lock_users_classes`);
* join/leave: the cohort ``FOR UPDATE`` and the other cohorts of the users' classes ``FOR SHARE``
  (in id order), then the classes as above (``lock_users_classes(…, exclusive_cohort=…)``).

The set of classes in a cohort can only change under that cohort's lock (a split of a class in
C holds C in share mode; a join/leave holds C exclusively), so a cohort round sees every member.

SQLite: every write unit starts with ``BEGIN IMMEDIATE`` (one writer at a time); the row locks
are no-ops and the re-checks always pass.

Deadlocks, serialization failures and failed re-checks (:class:`RetryTransaction`) roll the
unit back and run it again (:meth:`app.db.session.Database.run_write`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from app.db.session import Database, RetryTransaction
from app.ledger import repository as repo
from app.ledger.records import ClassRow, CohortRow


@dataclass(frozen=True)
class LockedUsers:
    """Users and their classes, valid under the locks of the unit."""

    class_of: dict[int, int]  # user pk → class id
    classes: dict[int, ClassRow]  # class id → row (locked)
    cohorts: dict[int, set[int]]  # class id → cohort pks

    def groups(self) -> dict[int, list[int]]:
        """Class id → its users among the locked ones."""
        out: dict[int, list[int]] = {}
        for pk, cid in self.class_of.items():
            out.setdefault(cid, []).append(pk)
        return out


def lock_users_classes(
    s: Session, db: Database, users: dict[str, tuple[int, int]], exclusive_cohort: int | None = None
) -> LockedUsers:
    """Lock the classes of ``users`` (external id → (pk, class id) as first read) and their cohorts.

    PostgreSQL: the cohorts of the users' classes are locked (share; ``exclusive_cohort``
    exclusively), then the classes ``FOR UPDATE`` in id order. A user moves between classes only
    under the lock of its class, so once the classes are locked, re-reading the users' classes
    either confirms the first read or shows a move committed meanwhile (then the unit is retried).
    """
    class_of = {pk: cid for pk, cid in users.values()}
    if db.is_sqlite:
        classes = repo.load_classes(s, db, class_of.values(), lock=False)
        return LockedUsers(class_of, classes, repo.cohorts_of(s, classes))
    seen = set(class_of.values())
    cohorts = set().union(*repo.cohorts_of(s, seen).values()) if seen else set()
    exclusive = {exclusive_cohort} if exclusive_cohort is not None else set()
    repo.lock_cohort_rows(s, db, exclusive, cohorts - exclusive)
    classes = repo.load_classes(s, db, seen, lock=True)
    if len(classes) != len(seen):
        raise RetryTransaction("a class vanished before the lock")
    if repo.classes_of_users(s, list(class_of)) != class_of:
        raise RetryTransaction("a user changed class before the lock")
    cmap = repo.cohorts_of(s, seen)
    now_cohorts = set().union(*cmap.values()) if cmap else set()
    if not now_cohorts <= (cohorts | exclusive):
        raise RetryTransaction("a class joined a cohort before the lock")
    return LockedUsers(class_of, classes, cmap)


def lock_cohort(s: Session, db: Database, cohort_id: str) -> CohortRow | None:
    """A cohort ``FOR UPDATE`` (first step of a cohort round and of a join/leave), or None."""
    return repo.cohort_by_name(s, db, cohort_id, lock=True)


def lock_cohort_classes(s: Session, db: Database, cohort: CohortRow) -> list[ClassRow]:
    """The classes of a cohort whose row the unit has locked, ``FOR UPDATE`` in id order."""
    return repo.cohort_classes(s, db, cohort.id)
