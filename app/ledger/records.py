"""Typed rows and results of the ledger.

Rows (:class:`ClassRow`, :class:`CohortRow`) are what the repository reads and writes; results
are what the operations of :mod:`app.ledger.service` return. None of them knows a transport:
the JSON shapes live in :mod:`app.schemas.ledger_views`. Times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Generic, Literal, TypeVar, overload

import numpy as np

from app.ledger import curves as cv
from app.ledger.curves import Budget, Status

T = TypeVar("T")


#: the timeline buckets of the summary
Bucket = Literal["hour", "day"]


@overload
def utc(ts: datetime) -> datetime: ...
@overload
def utc(ts: None) -> None: ...
@overload
def utc(ts: datetime | None) -> datetime | None: ...


def utc(ts: datetime | None) -> datetime | None:
    """``ts`` as an aware UTC datetime (SQLite returns naive datetimes; every stored time is UTC)."""
    if ts is None:
        return None
    return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts


@dataclass(frozen=True)
class Actor:
    """Who acted: the API key's name (never the key) and its role. ``scope``: the idempotency
    scope of the key (a digest, see :func:`app.core.services.idempotency_scope`); empty for
    callers without a key (the command line, tests), whose scope is then the name."""

    name: str
    role: str
    scope: str = ""

    @property
    def idempotency_scope(self) -> str:
        return self.scope or f"name:{self.name}"


@dataclass(frozen=True)
class Spent:
    """ε at the budget's δ of a spent curve and the order achieving it (``None`` while nothing is spent)."""

    epsilon: float
    order: float | None


# ---------------------------------------------------------------------------------------------- rows


@dataclass(frozen=True, eq=False)
class ClassRow:
    """A budget class: users with identical budget, policy and history share its spent curve.

    ``spent_epsilon`` … ``remaining_fraction`` cache :func:`app.ledger.curves.status` of ``spent``;
    ``last_charge_at`` is the time of the last charge that reached its users (the same for all of
    them: they share their whole history)."""

    id: int
    signature: str
    epsilon: float
    delta: float
    policy: str
    filter_order: float | None
    filter_budget: float | None
    grid_version: int
    spent: np.ndarray
    n_charges: int
    n_users: int
    spent_epsilon: float
    spent_order: float | None
    remaining_epsilon: float
    remaining_fraction: float
    last_charge_at: datetime | None
    updated_at: datetime

    @classmethod
    def from_row(cls, m: Mapping[Any, Any]) -> ClassRow:
        vals = {f.name: m[f.name] for f in dataclasses.fields(cls)}
        vals["spent"] = cv.vector_from_bytes(m["spent"])
        vals["n_charges"], vals["n_users"] = int(m["n_charges"]), int(m["n_users"])
        vals["last_charge_at"], vals["updated_at"] = utc(m["last_charge_at"]), utc(m["updated_at"])
        return cls(**vals)

    def columns(self) -> dict[str, Any]:
        """Column values (without ``id``), curves as stored bytes."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "id"}
        out["spent"] = cv.to_bytes(self.spent)
        return out

    @property
    def budget(self) -> Budget:
        return Budget(self.epsilon, self.delta, self.policy, self.filter_order, self.filter_budget)

    def with_spent(self, spent: np.ndarray, st: Status, **changes: Any) -> ClassRow:
        """This class after its spent curve became ``spent`` (with status ``st``)."""
        return dataclasses.replace(
            self,
            spent=spent,
            spent_epsilon=st.spent_epsilon,
            spent_order=st.spent_order,
            remaining_epsilon=st.remaining_epsilon,
            remaining_fraction=st.remaining_fraction,
            **changes,
        )

    def with_budget(self, b: Budget) -> ClassRow:
        """This class under budget ``b`` (same spent curve, status recomputed)."""
        moved = dataclasses.replace(
            self,
            epsilon=b.epsilon,
            delta=b.delta,
            policy=b.policy,
            filter_order=b.filter_order,
            filter_budget=b.filter_budget,
        )
        return moved.with_spent(self.spent, cv.status(b, self.spent))


@dataclass(frozen=True, eq=False)
class CohortRow:
    id: int
    cohort_id: str
    description: str | None
    seq: int
    grid_version: int
    cumulative: np.ndarray
    n_members: int
    created_at: datetime

    @classmethod
    def from_row(cls, m: Mapping[Any, Any]) -> CohortRow:
        return cls(
            id=m["id"],
            cohort_id=m["cohort_id"],
            description=m["description"],
            seq=int(m["seq"]),
            grid_version=m["grid_version"],
            cumulative=cv.vector_from_bytes(m["cumulative"]),
            n_members=int(m["n_members"]),
            created_at=utc(m["created_at"]),
        )


# ---------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing: ``total`` items match, ``items`` are those at [offset, offset + limit)
    (or the ``limit`` after a cursor); ``next_cursor`` names the last item when more follow
    (:mod:`app.ledger.paging`), else None."""

    items: list[T]
    total: int
    limit: int
    offset: int
    next_cursor: str | None = None


@dataclass(frozen=True)
class UserStatus:
    user_id: str
    budget: Budget
    spent: Spent
    remaining_epsilon: float
    charges: int
    grid_version: int
    created_at: datetime | None
    updated_at: datetime | None
    last_charge_at: datetime | None = None


@dataclass(frozen=True)
class BulkResult:
    created: int
    skipped: int
    requested: int


@dataclass(frozen=True)
class ChargeResult:
    """An admitted charge (``replayed``: the stored result of an earlier request with the same key)."""

    charge_id: str
    users: int
    cohort: str | None
    cohort_round: int | None
    idempotency_key: str | None
    event: dict[str, Any]
    grid_version: int
    charged_by: Actor
    created_at: datetime
    replayed: bool = False


@dataclass(frozen=True)
class ChargeEntry:
    """A charge as listed for a user."""

    charge_id: str
    event: dict[str, Any]
    idempotency_key: str | None
    cohort: str | None
    cohort_round: int | None
    users: int
    grid_version: int
    charged_by: Actor
    created_at: datetime | None


@dataclass(frozen=True)
class Audit:
    """A user's running spent curve against its exactly rounded recomputation from the charge log."""

    user_id: str
    orders: np.ndarray
    running: np.ndarray
    recomputed: np.ndarray
    running_not_below_recomputed: bool
    max_relative_excess: float
    charges_in_log: int
    charges_counted: int
    recomputed_spent: Spent
    budget: Budget


@dataclass(frozen=True)
class HistoryPoint:
    """Spent ε after a charge (users: ``charges`` so far; cohorts: ``round``)."""

    charge_id: str
    at: datetime | None
    spent: Spent
    charges: int | None = None
    round: int | None = None
    remaining_epsilon: float | None = None


@dataclass(frozen=True)
class UserHistory:
    user_id: str
    budget: Budget
    charges: int
    points: list[HistoryPoint]


@dataclass(frozen=True)
class UserCurve:
    """A user's running spent RDP curve on its class's order grid, with the budget curve B(α) and the
    ε each order converts to (NaN/inf where unbounded or not convertible)."""

    user_id: str
    budget: Budget
    grid_version: int
    orders: np.ndarray
    spent: np.ndarray
    budget_curve: np.ndarray
    epsilon: np.ndarray
    spent_epsilon: float
    spent_order: float | None


@dataclass(frozen=True)
class CohortHistory:
    cohort_id: str
    delta: float
    rounds: int
    points: list[HistoryPoint]


@dataclass(frozen=True)
class CohortInfo:
    cohort_id: str
    description: str | None
    members: int
    rounds: int
    grid_version: int
    created_at: datetime | None


@dataclass(frozen=True)
class MembersChange:
    """Result of adding (``joined``) or removing members: ``changed`` did, ``unchanged`` already were/weren't."""

    cohort: CohortInfo
    joined: bool
    changed: int
    unchanged: int


@dataclass(frozen=True)
class Membership:
    """One membership of a user in a cohort: the rounds it covers are (``joined_after_round``,
    ``left_after_round``]."""

    user_id: str
    cohort_id: str
    joined_after_round: int
    left_after_round: int | None
    joined_at: datetime | None
    left_at: datetime | None

    @property
    def active(self) -> bool:
        return self.left_after_round is None


@dataclass(frozen=True)
class ExhaustionEntry:
    user_id: str
    budget: Budget
    spent: Spent
    remaining_epsilon: float
    remaining_fraction: float
    charges: int


@dataclass(frozen=True)
class MemberPage:
    cohort_id: str
    limit: int
    offset: int
    members: list[Membership] = field(default_factory=list)
    next_cursor: str | None = None


@dataclass(frozen=True)
class TimelineBucket:
    """Admitted charges and refused charge requests in [start, start + one bucket)."""

    start: datetime
    admitted: int
    refused: int


@dataclass(frozen=True)
class Summary:
    users: int
    cohorts: int
    charges: int
    near_exhaustion: int
    near_exhaustion_fraction: float
    refusals: int
    bucket: Bucket
    timeline: list[TimelineBucket]
