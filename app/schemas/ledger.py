"""Pydantic models of the ledger endpoints (api.md "Budget ledger", ledger.md).

Request models validate what comes in; view models shape what goes out, each built from the
typed records of :mod:`app.ledger.records` by its ``of`` constructor (times as ISO 8601 strings,
curve values +∞ as ``null``).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, Field, model_validator

from app.ledger import curves as cv
from app.ledger import records as rec
from app.schemas.events import Event, Int, Num, StrictModel

#: ids are 1–256 characters without control characters (NUL cannot be stored by PostgreSQL)
ID_PATTERN = r"^[^\x00-\x1f\x7f]+$"
UserId = Annotated[str, Field(min_length=1, max_length=256, pattern=ID_PATTERN,
                              description="a user (data subject) id")]
CohortId = Annotated[str, Field(min_length=1, max_length=256, pattern=ID_PATTERN, description="a cohort id")]
#: ids being created must also be addressable as one path segment (/v1/users/{user_id}): no '/'
#: (ids that already exist keep working wherever they are referenced in a body)
NEW_ID_PATTERN = r"^[^\x00-\x1f\x7f/]+$"
NewUserId = Annotated[str, Field(min_length=1, max_length=256, pattern=NEW_ID_PATTERN,
                                 description="a new user id: 1–256 characters, no control characters, no '/'")]
NewCohortId = Annotated[str, Field(min_length=1, max_length=256, pattern=NEW_ID_PATTERN,
                                   description="a new cohort id: 1–256 characters, no control characters, no '/'")]
MAX_LIST = 100_000
MAX_RANGE = 2_000_000


class BudgetIn(StrictModel):
    epsilon: Num = Field(gt=0, le=1e6, description="ε_B: the user's total ε at δ_B")
    delta: Num = Field(gt=0, lt=1, description="δ_B")


def iso(ts: datetime | None) -> str | None:
    return ts.isoformat() if ts is not None else None


def finite_list(a: np.ndarray) -> list[float | None]:
    """A curve as JSON numbers, +∞ as ``null``."""
    return [float(x) if math.isfinite(x) else None for x in a]


class Budget(BaseModel):
    epsilon: float
    delta: float

    @classmethod
    def of(cls, b: cv.Budget) -> Budget:
        return cls(epsilon=b.epsilon, delta=b.delta)


class UserPut(StrictModel):
    """Create or update a user's budget.

    ``policy``: ``declared`` (default) admits iff ε_{δ_B}(spent + cost) ≤ ε_B minimised over the
    grid — standard RDP accounting, for releases whose parameters are fixed in advance; not proven
    safe for adaptively chosen releases. ``filter`` is a Rényi filter (Feldman & Zrnic), safe under
    adaptive choice: one designated order α_f (``filter_order``, an order of the ledger's grid, or
    picked as the ε-minimising order of ``planned_event``) with per-order budget
    B(α_f) = ε_B − (log(1/δ_B) + (α_f−1)·log(1−1/α_f) − log α_f)/(α_f−1) > 0; a charge is admitted iff
    spent(α_f) + cost(α_f) ≤ B(α_f).
    """

    model_config = StrictModel.model_config | {
        "json_schema_extra": {"examples": [
            {"budget": {"epsilon": 8.0, "delta": 1e-6}, "policy": "declared"},
            {"budget": {"epsilon": 4.0, "delta": 1e-6}, "policy": "filter",
             "planned_event": {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100}},
        ]}
    }
    budget: BudgetIn
    policy: Literal["declared", "filter"] = "declared"
    filter_order: Num | None = Field(None, gt=1, description="filter policy: the designated order α_f (a grid order)")
    planned_event: Event | None = Field(
        None, description="filter policy: pick α_f as the order minimising ε at δ_B for this event")


class Spent(BaseModel):
    epsilon: float = Field(description="ε at the budget's δ of everything charged so far (filter: at α_f)")
    order: float | None = Field(description="the order achieving it (null while nothing is spent)")

    @classmethod
    def of(cls, s: rec.Spent) -> Spent:
        return cls(epsilon=s.epsilon, order=s.order)


class FilterInfo(BaseModel):
    order: float = Field(description="α_f")
    order_budget: float = Field(description="B(α_f)")


class UserView(BaseModel):
    model_config = {"json_schema_extra": {"examples": [{
        "user_id": "u1", "budget": {"epsilon": 8.0, "delta": 1e-6}, "policy": "declared",
        "spent": {"epsilon": 1.2, "order": 14.0}, "remaining_epsilon": 6.8, "charges": 3, "grid_version": 1,
        "created_at": "2025-01-01T00:00:00+00:00", "updated_at": "2025-01-01T00:00:00+00:00"}]}}
    user_id: str
    budget: Budget
    policy: Literal["declared", "filter"]
    spent: Spent
    remaining_epsilon: float
    charges: int = Field(description="number of charges that reached this user")
    filter: FilterInfo | None = None
    grid_version: int
    created_at: str | None = None
    updated_at: str | None = None

    @classmethod
    def fields_of(cls, u: rec.UserStatus) -> dict[str, Any]:
        b = u.budget
        return dict(user_id=u.user_id, budget=Budget.of(b), policy=b.policy, spent=Spent.of(u.spent),
                    remaining_epsilon=u.remaining_epsilon, charges=u.charges,
                    filter=FilterInfo(order=b.filter_order, order_budget=b.filter_budget) if b.policy == "filter"
                    else None, grid_version=u.grid_version, created_at=iso(u.created_at),
                    updated_at=iso(u.updated_at))

    @classmethod
    def of(cls, u: rec.UserStatus) -> UserView:
        return cls(**cls.fields_of(u))


class IdRange(StrictModel):
    """Ids ``f"{prefix}{i}"`` for i in [start, start + count) — large populations without a huge body."""

    prefix: str = Field("", max_length=200, pattern=r"^[^\x00-\x1f\x7f/]*$", description="no control characters, no '/'")
    start: Int = Field(0, ge=0, le=10**12)
    count: Int = Field(ge=1, le=MAX_RANGE)

    def ids(self) -> list[str]:
        return [f"{self.prefix}{i}" for i in range(self.start, self.start + self.count)]


class _UserSet(StrictModel):
    users: list[UserId] | None = Field(None, max_length=MAX_LIST, description="explicit user ids")
    id_range: IdRange | None = Field(None, description="or a generated range of ids")

    @model_validator(mode="after")
    def _one(self):
        if (self.users is None) == (self.id_range is None):
            raise ValueError("give exactly one of 'users' or 'id_range'")
        return self

    def all_ids(self) -> list[str]:
        return list(self.users) if self.users is not None else self.id_range.ids()


class BulkUsersRequest(_UserSet):
    """Create many users with one budget (all or nothing)."""

    model_config = StrictModel.model_config | {"json_schema_extra": {"examples": [
        {"id_range": {"prefix": "device-", "start": 0, "count": 100000},
         "budget": {"epsilon": 8.0, "delta": 1e-6}, "policy": "declared", "on_conflict": "skip"}]}}
    users: list[NewUserId] | None = Field(None, max_length=MAX_LIST, description="explicit user ids")
    budget: BudgetIn
    policy: Literal["declared", "filter"] = "declared"
    filter_order: Num | None = Field(None, gt=1)
    planned_event: Event | None = None
    on_conflict: Literal["error", "skip"] = Field(
        "error", description="'error': 409 if any id exists (nothing created); 'skip': create only new ids")


class BulkUsersResult(BaseModel):
    created: int
    skipped: int
    requested: int

    @classmethod
    def of(cls, r: rec.BulkResult) -> BulkUsersResult:
        return cls(created=r.created, skipped=r.skipped, requested=r.requested)


class ChargeRequest(StrictModel):
    """Charge one event to a set of users (``users``) or to every current member of a cohort
    (``cohort``), all or nothing."""

    model_config = StrictModel.model_config | {"json_schema_extra": {"examples": [
        {"idempotency_key": "job-17-round-3", "users": ["u1", "u2"],
         "event": {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 1}},
        {"idempotency_key": "fl-job-9-round-412", "cohort": "population-eu",
         "event": {"mechanism": "subsampled_shuffle", "n": 1000000, "k": 1000, "epsilon0": 2.0, "count": 1}},
    ]}}
    idempotency_key: str | None = Field(
        None, min_length=1, max_length=256, pattern=ID_PATTERN,
        description="same key + same body → the original result, not charged again; same key + different "
                    "body → 409. Strongly recommended (the SDK sets one automatically).")
    users: list[UserId] | None = Field(None, min_length=1, max_length=MAX_LIST)
    cohort: CohortId | None = None
    event: Event

    @model_validator(mode="after")
    def _target(self):
        if (self.users is None) == (self.cohort is None):
            raise ValueError("give exactly one of 'users' (a list of user ids) or 'cohort' (a cohort id)")
        return self


class Actor(BaseModel):
    name: str = Field(description="the API key's name (role-position in ACCOUNTANT_API_KEYS), never the key")
    role: str

    @classmethod
    def of(cls, a: rec.Actor) -> Actor:
        return cls(name=a.name, role=a.role)


class ChargeAdmitted(BaseModel):
    model_config = {"json_schema_extra": {"examples": [{
        "charge_id": "17", "status": "admitted", "users": 2, "cohort": None, "idempotency_key": "job-17-round-3",
        "event": {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 1}, "grid_version": 1,
        "charged_by": {"name": "pipeline-2", "role": "pipeline"}, "created_at": "2025-01-01T00:00:00+00:00",
        "replayed": False}]}}
    charge_id: str
    status: Literal["admitted"]
    users: int = Field(description="number of users charged")
    cohort: str | None = None
    cohort_round: int | None = Field(None, description="cohort charges: the cohort's round number")
    idempotency_key: str | None = None
    event: dict[str, Any] = Field(description="the event as received")
    grid_version: int
    charged_by: Actor
    created_at: str
    replayed: bool = Field(description="true when this is the stored result of an earlier request with the same key")

    @classmethod
    def of(cls, r: rec.ChargeResult) -> ChargeAdmitted:
        return cls(charge_id=r.charge_id, status="admitted", users=r.users, cohort=r.cohort,
                   cohort_round=r.cohort_round, idempotency_key=r.idempotency_key, event=r.event,
                   grid_version=r.grid_version, charged_by=Actor.of(r.charged_by), created_at=iso(r.created_at),
                   replayed=r.replayed)


class ChargeRefused(BaseModel):
    model_config = {"json_schema_extra": {"examples": [{
        "status": "refused", "refused_users": ["u2"], "refused_count": 1,
        "detail": "charge refused: 1 user(s) cannot afford this event within their budget; nothing was recorded."}]}}
    status: Literal["refused"]
    refused_users: list[str] = Field(description="refused users (at most 1000 listed)")
    refused_count: int
    detail: str


class ErrorBody(BaseModel):
    detail: Any


class UnknownUsers(BaseModel):
    detail: str
    unknown_users: list[str] | None = None
    unknown_count: int | None = None


class ChargeRecord(BaseModel):
    charge_id: str
    event: dict[str, Any]
    idempotency_key: str | None
    cohort: str | None
    cohort_round: int | None
    users: int
    grid_version: int
    charged_by: Actor
    created_at: str | None

    @classmethod
    def of(cls, c: rec.ChargeEntry) -> ChargeRecord:
        return cls(charge_id=c.charge_id, event=c.event, idempotency_key=c.idempotency_key, cohort=c.cohort,
                   cohort_round=c.cohort_round, users=c.users, grid_version=c.grid_version,
                   charged_by=Actor.of(c.charged_by), created_at=iso(c.created_at))


class ChargeList(BaseModel):
    user_id: str
    total: int
    limit: int
    offset: int
    charges: list[ChargeRecord]

    @classmethod
    def of(cls, user_id: str, page: rec.Page[rec.ChargeEntry]) -> ChargeList:
        return cls(user_id=user_id, total=page.total, limit=page.limit, offset=page.offset,
                   charges=[ChargeRecord.of(c) for c in page.items])


class CohortCreate(StrictModel):
    model_config = StrictModel.model_config | {"json_schema_extra": {"examples": [
        {"cohort_id": "population-eu", "description": "EU devices of the keyboard model"}]}}
    cohort_id: NewCohortId
    description: str | None = Field(None, max_length=2000, pattern=r"^[^\x00]*$")


class CohortView(BaseModel):
    cohort_id: str
    description: str | None
    members: int
    rounds: int = Field(description="cohort charges so far")
    grid_version: int
    created_at: str | None

    @classmethod
    def fields_of(cls, c: rec.CohortInfo) -> dict[str, Any]:
        return dict(cohort_id=c.cohort_id, description=c.description, members=c.members, rounds=c.rounds,
                    grid_version=c.grid_version, created_at=iso(c.created_at))

    @classmethod
    def of(cls, c: rec.CohortInfo) -> CohortView:
        return cls(**cls.fields_of(c))


class MembersRequest(_UserSet):
    model_config = StrictModel.model_config | {"json_schema_extra": {"examples": [
        {"users": ["u1", "u2"]}, {"id_range": {"prefix": "device-", "start": 0, "count": 100000}}]}}


class MembersChanged(BaseModel):
    cohort: CohortView
    added: int | None = None
    already_members: int | None = None
    removed: int | None = None
    not_members: int | None = None

    @classmethod
    def of(cls, m: rec.MembersChange) -> MembersChanged:
        counts = ({"added": m.changed, "already_members": m.unchanged} if m.joined
                  else {"removed": m.changed, "not_members": m.unchanged})
        return cls(cohort=CohortView.of(m.cohort), **counts)


class Member(BaseModel):
    user_id: str
    joined_after_round: int
    left_after_round: int | None
    joined_at: str | None
    left_at: str | None

    @classmethod
    def of(cls, m: rec.Membership) -> Member:
        return cls(user_id=m.user_id, joined_after_round=m.joined_after_round, left_after_round=m.left_after_round,
                   joined_at=iso(m.joined_at), left_at=iso(m.left_at))


class MemberList(BaseModel):
    cohort_id: str
    limit: int
    offset: int
    members: list[Member]

    @classmethod
    def of(cls, p: rec.MemberPage) -> MemberList:
        return cls(cohort_id=p.cohort_id, limit=p.limit, offset=p.offset, members=[Member.of(m) for m in p.members])


class MembershipView(BaseModel):
    cohort_id: str
    joined_after_round: int = Field(description="the member is charged for the rounds after this one …")
    left_after_round: int | None = Field(description="… up to and including this one (null: still a member)")
    joined_at: str | None
    left_at: str | None
    active: bool

    @classmethod
    def of(cls, m: rec.Membership) -> MembershipView:
        return cls(cohort_id=m.cohort_id, joined_after_round=m.joined_after_round,
                   left_after_round=m.left_after_round, joined_at=iso(m.joined_at), left_at=iso(m.left_at),
                   active=m.active)


class UserCohorts(BaseModel):
    user_id: str
    memberships: list[MembershipView]

    @classmethod
    def of(cls, user_id: str, ms: list[rec.Membership]) -> UserCohorts:
        return cls(user_id=user_id, memberships=[MembershipView.of(m) for m in ms])


class HistoryPoint(BaseModel):
    charge_id: str
    at: str | None
    spent_epsilon: float
    order: float | None
    charges: int | None = None
    round: int | None = None
    remaining_epsilon: float | None = None

    @classmethod
    def of(cls, p: rec.HistoryPoint) -> HistoryPoint:
        return cls(charge_id=p.charge_id, at=iso(p.at), spent_epsilon=p.spent.epsilon, order=p.spent.order,
                   charges=p.charges, round=p.round, remaining_epsilon=p.remaining_epsilon)


class UserHistory(BaseModel):
    user_id: str
    budget: Budget
    policy: str
    charges: int
    points: list[HistoryPoint]

    @classmethod
    def of(cls, h: rec.UserHistory) -> UserHistory:
        return cls(user_id=h.user_id, budget=Budget.of(h.budget), policy=h.budget.policy, charges=h.charges,
                   points=[HistoryPoint.of(p) for p in h.points])


class CohortHistory(BaseModel):
    cohort_id: str
    delta: float
    rounds: int
    points: list[HistoryPoint]

    @classmethod
    def of(cls, h: rec.CohortHistory) -> CohortHistory:
        return cls(cohort_id=h.cohort_id, delta=h.delta, rounds=h.rounds, points=[HistoryPoint.of(p) for p in h.points])


class ExhaustionEntry(BaseModel):
    user_id: str
    budget: Budget
    policy: str
    spent: Spent
    remaining_epsilon: float
    remaining_fraction: float
    charges: int

    @classmethod
    def of(cls, e: rec.ExhaustionEntry) -> ExhaustionEntry:
        return cls(user_id=e.user_id, budget=Budget.of(e.budget), policy=e.budget.policy, spent=Spent.of(e.spent),
                   remaining_epsilon=e.remaining_epsilon, remaining_fraction=e.remaining_fraction, charges=e.charges)


class ExhaustionList(BaseModel):
    users: list[ExhaustionEntry]

    @classmethod
    def of(cls, es: list[rec.ExhaustionEntry]) -> ExhaustionList:
        return cls(users=[ExhaustionEntry.of(e) for e in es])


class Audit(BaseModel):
    user_id: str
    orders: list[float]
    running: list[float | None]
    recomputed: list[float | None]
    running_not_below_recomputed: bool
    max_relative_excess: float
    charges_in_log: int
    charges_counted: int
    recomputed_spent: Spent
    budget: Budget
    policy: str

    @classmethod
    def of(cls, a: rec.Audit) -> Audit:
        return cls(user_id=a.user_id, orders=a.orders.tolist(), running=finite_list(a.running),
                   recomputed=finite_list(a.recomputed), running_not_below_recomputed=a.running_not_below_recomputed,
                   max_relative_excess=a.max_relative_excess, charges_in_log=a.charges_in_log,
                   charges_counted=a.charges_counted, recomputed_spent=Spent.of(a.recomputed_spent),
                   budget=Budget.of(a.budget), policy=a.budget.policy)
