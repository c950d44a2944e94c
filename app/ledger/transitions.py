"""Class transitions: moving some users of budget classes through one event of their history.

A class's ``signature`` is a hash chain: its budget at creation (:func:`fresh_signature`), then
every non-cohort transition — explicit charge, join/leave of a cohort after a round, budget
change (:func:`child_signature`). Cohort rounds are implied by the join/leave rounds, so two
classes with one signature have bit-identical spent curves.

A transition ``token`` applied to users ``groups[class_id]`` of each class either
* moves them to the existing class with the child signature (users with the same history
  converge to one class; an emptied class is deleted), or
* updates the class in place when every user of it is affected, or
* splits them off into a new class (a copy of the old one in its new state).
The caller holds the locks of every class involved (:mod:`app.ledger.locking`); the child
classes looked up here are locked too.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session

from app.db.session import Database
from app.ledger import curves as cv
from app.ledger import repository as repo
from app.ledger.curves import Budget
from app.ledger.records import ClassRow

Mutation = Callable[[ClassRow], ClassRow]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def fresh_signature(b: Budget) -> str:
    return _sha(f"new|{b.epsilon!r}|{b.delta!r}|{b.policy}|{b.filter_order!r}|{cv.GRID_VERSION}")


def child_signature(sig: str, token: str) -> str:
    return _sha(f"{sig}|{token}")


def unchanged(c: ClassRow) -> ClassRow:
    """The mutation of a join or leave: the curve does not change, only the history."""
    return c


@dataclass(frozen=True)
class CohortChange:
    """The cohort a join (``add``) or leave (``remove``) transition changes, if any."""

    add: int | None = None
    remove: int | None = None

    def after(self, cohorts: set[int]) -> set[int]:
        out = set(cohorts)
        if self.add is not None:
            out.add(self.add)
        if self.remove is not None:
            out.discard(self.remove)
        return out

    def links(self, cid: int, cohorts: set[int]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """(class, cohort) links to add and to remove for a class updated in place."""
        add = [(cid, self.add)] if self.add is not None and self.add not in cohorts else []
        rem = [(cid, self.remove)] if self.remove is not None and self.remove in cohorts else []
        return add, rem


@dataclass
class Plan:
    """What a transition writes."""

    in_place: list[ClassRow] = field(default_factory=list)
    splits: list[tuple[int, ClassRow, list[int]]] = field(
        default_factory=list
    )  # (from class, new row, users)
    moves: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))  # target class → users
    size_delta: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    deleted: list[int] = field(default_factory=list)
    link: list[tuple[int, int]] = field(default_factory=list)
    unlink: list[tuple[int, int]] = field(default_factory=list)


def plan(
    classes: dict[int, ClassRow],
    groups: dict[int, list[int]],
    targets: dict[int, str],
    existing: dict[str, ClassRow],
    cohort_map: dict[int, set[int]],
    mutate: Mutation,
    change: CohortChange,
    ts: datetime,
) -> Plan:
    """Decide, per class, whether its affected users move, the class changes in place, or they split off."""
    p = Plan()
    for cid, upks in groups.items():
        c, k, sig = classes[cid], len(upks), targets[cid]
        target = existing.get(sig)
        if target is not None and target.id not in groups:
            p.moves[target.id].extend(upks)
            p.size_delta[target.id] += k
            p.size_delta[cid] -= k
            if c.n_users == k:
                p.deleted.append(cid)
        elif k == c.n_users:
            p.in_place.append(dataclasses.replace(mutate(c), signature=sig, updated_at=ts))
            add, rem = change.links(cid, cohort_map.get(cid, set()))
            p.link += add
            p.unlink += rem
        else:
            p.splits.append(
                (cid, dataclasses.replace(mutate(c), signature=sig, n_users=k, updated_at=ts), upks)
            )
            p.size_delta[cid] -= k
    return p


def apply(s: Session, db: Database, p: Plan, cohort_map: dict[int, set[int]], change: CohortChange) -> None:
    """Write a plan: in-place updates, new classes and their cohorts, user moves, sizes, deletions."""
    repo.update_classes(s, db, p.in_place)
    new_ids = repo.insert_classes(s, [row for _, row, _ in p.splits])
    for new_id, (cid, _row, upks) in zip(new_ids, p.splits):
        p.link += [(new_id, co) for co in sorted(change.after(cohort_map.get(cid, set())))]
        p.moves[new_id].extend(upks)
    repo.link_class_cohorts(s, p.link)
    repo.unlink_class_cohorts(s, p.unlink)
    repo.move_users(s, p.moves)
    repo.add_class_sizes(s, {cid: d for cid, d in p.size_delta.items() if cid not in p.deleted})
    repo.delete_classes(s, p.deleted)


def transition(
    s: Session,
    db: Database,
    classes: dict[int, ClassRow],
    groups: dict[int, list[int]],
    token: str,
    mutate: Mutation,
    cohort_map: dict[int, set[int]] | None = None,
    change: CohortChange = CohortChange(),
) -> None:
    """Apply one transition (``token``) to the users ``groups[class_id]`` of each (locked) class."""
    if not groups:
        return
    targets = {cid: child_signature(classes[cid].signature, token) for cid in groups}
    existing = repo.classes_by_signature(s, db, targets.values())
    if cohort_map is None:
        cohort_map = repo.cohorts_of(s, groups)
    p = plan(classes, groups, targets, existing, cohort_map, mutate, change, repo.now())
    apply(s, db, p, cohort_map, change)


def fresh_class(s: Session, db: Database, b: Budget, n: int) -> int:
    """Id of the history-less class of budget ``b``, with ``n`` more users counted in it."""
    sig = fresh_signature(b)
    cid = repo.class_id_by_signature(s, db, sig)
    if cid is not None:
        repo.add_class_sizes(s, {cid: n})
        return cid
    spent = cv.zeros()
    st = cv.status(b, spent)
    return repo.insert_class(
        s,
        ClassRow(
            id=0,
            signature=sig,
            epsilon=b.epsilon,
            delta=b.delta,
            policy=b.policy,
            filter_order=b.filter_order,
            filter_budget=b.filter_budget,
            grid_version=cv.GRID_VERSION,
            spent=spent,
            n_charges=0,
            n_users=n,
            spent_epsilon=st.spent_epsilon,
            spent_order=st.spent_order,
            remaining_epsilon=st.remaining_epsilon,
            remaining_fraction=st.remaining_fraction,
            last_charge_at=None,
            updated_at=repo.now(),
        ),
    )
