"""Pydantic response models of the ledger's reads over many records: budget histories, the
paged user and cohort listings, the summary, the exhaustion forecast and the audit check (the
dashboard's data). Built like :mod:`app.schemas.ledger_views`, whose single-record views they use.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.ledger import records as rec
from app.schemas.ledger_views import (
    NEXT_CURSOR,
    Budget,
    CohortView,
    FilterInfo,
    Spent,
    UserView,
    finite_list,
    iso,
    page_fields,
)


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
        return cls(
            charge_id=p.charge_id,
            at=iso(p.at),
            spent_epsilon=p.spent.epsilon,
            order=p.spent.order,
            charges=p.charges,
            round=p.round,
            remaining_epsilon=p.remaining_epsilon,
        )


class UserHistory(BaseModel):
    user_id: str
    budget: Budget
    policy: str
    charges: int
    points: list[HistoryPoint]

    @classmethod
    def of(cls, h: rec.UserHistory) -> UserHistory:
        return cls(
            user_id=h.user_id,
            budget=Budget.of(h.budget),
            policy=h.budget.policy,
            charges=h.charges,
            points=[HistoryPoint.of(p) for p in h.points],
        )


class CohortHistory(BaseModel):
    cohort_id: str
    delta: float
    rounds: int
    points: list[HistoryPoint]

    @classmethod
    def of(cls, h: rec.CohortHistory) -> CohortHistory:
        return cls(
            cohort_id=h.cohort_id,
            delta=h.delta,
            rounds=h.rounds,
            points=[HistoryPoint.of(p) for p in h.points],
        )


class UserListItem(UserView):
    last_charge_at: str | None = Field(
        description="when the last charge that reached the user was admitted (null: never charged)"
    )

    @classmethod
    def of(cls, u: rec.UserStatus) -> UserListItem:
        return cls(**UserView.fields_of(u), last_charge_at=iso(u.last_charge_at))


class UserPage(BaseModel):
    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "items": [
                        {
                            "user_id": "u1",
                            "budget": {"epsilon": 8.0, "delta": 1e-6},
                            "policy": "declared",
                            "spent": {"epsilon": 1.2, "order": 14.0},
                            "remaining_epsilon": 6.8,
                            "charges": 3,
                            "filter": None,
                            "grid_version": 1,
                            "created_at": "2025-01-01T00:00:00+00:00",
                            "updated_at": "2025-01-02T00:00:00+00:00",
                            "last_charge_at": "2025-01-02T00:00:00+00:00",
                        }
                    ],
                    "total": 1,
                    "limit": 50,
                    "offset": 0,
                    "next_cursor": None,
                }
            ]
        }
    }
    items: list[UserListItem]
    total: int = Field(description="users matching the filters (all pages)")
    limit: int
    offset: int
    next_cursor: str | None = NEXT_CURSOR

    @classmethod
    def of(cls, p: rec.Page[rec.UserStatus]) -> UserPage:
        return cls(items=[UserListItem.of(u) for u in p.items], **page_fields(p))


class CohortPage(BaseModel):
    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "items": [
                        {
                            "cohort_id": "population-eu",
                            "description": "EU devices",
                            "members": 1000000,
                            "rounds": 412,
                            "grid_version": 1,
                            "created_at": "2025-01-01T00:00:00+00:00",
                        }
                    ],
                    "total": 1,
                    "limit": 50,
                    "offset": 0,
                    "next_cursor": None,
                }
            ]
        }
    }
    items: list[CohortView]
    total: int = Field(description="cohorts matching the prefix (all pages)")
    limit: int
    offset: int
    next_cursor: str | None = NEXT_CURSOR

    @classmethod
    def of(cls, p: rec.Page[rec.CohortInfo]) -> CohortPage:
        return cls(items=[CohortView.of(c) for c in p.items], **page_fields(p))


class TimelineBucket(BaseModel):
    start: str = Field(description="start of the UTC hour or day (ISO 8601)")
    admitted: int = Field(description="charges admitted in the bucket")
    refused: int = Field(description="charge requests refused in the bucket")


class LedgerSummary(BaseModel):
    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "users": 1000002,
                    "cohorts": 3,
                    "charges": 4120,
                    "near_exhaustion": 17,
                    "near_exhaustion_fraction": 0.1,
                    "refusals": 9,
                    "bucket": "hour",
                    "timeline": [
                        {"start": "2025-01-02T10:00:00+00:00", "admitted": 12, "refused": 1},
                        {"start": "2025-01-02T11:00:00+00:00", "admitted": 9, "refused": 0},
                    ],
                }
            ]
        }
    }
    users: int
    cohorts: int
    charges: int = Field(description="admitted charges (explicit charges and cohort rounds)")
    near_exhaustion: int = Field(
        description="users whose remaining ε is below near_exhaustion_fraction × budget ε"
    )
    near_exhaustion_fraction: float
    refusals: int = Field(description="refused charge requests")
    bucket: Literal["hour", "day"]
    timeline: list[TimelineBucket] = Field(
        description="oldest first; the last bucket is the current, partial one"
    )

    @classmethod
    def of(cls, m: rec.Summary) -> LedgerSummary:
        return cls(
            users=m.users,
            cohorts=m.cohorts,
            charges=m.charges,
            near_exhaustion=m.near_exhaustion,
            near_exhaustion_fraction=m.near_exhaustion_fraction,
            refusals=m.refusals,
            bucket=m.bucket,
            timeline=[
                TimelineBucket(start=t.start.isoformat(), admitted=t.admitted, refused=t.refused)
                for t in m.timeline
            ],
        )


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
        return cls(
            user_id=e.user_id,
            budget=Budget.of(e.budget),
            policy=e.budget.policy,
            spent=Spent.of(e.spent),
            remaining_epsilon=e.remaining_epsilon,
            remaining_fraction=e.remaining_fraction,
            charges=e.charges,
        )


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
        return cls(
            user_id=a.user_id,
            orders=a.orders.tolist(),
            running=finite_list(a.running),
            recomputed=finite_list(a.recomputed),
            running_not_below_recomputed=a.running_not_below_recomputed,
            max_relative_excess=a.max_relative_excess,
            charges_in_log=a.charges_in_log,
            charges_counted=a.charges_counted,
            recomputed_spent=Spent.of(a.recomputed_spent),
            budget=Budget.of(a.budget),
            policy=a.budget.policy,
        )


class UserCurve(BaseModel):
    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "user_id": "u1",
                    "policy": "declared",
                    "budget": {"epsilon": 8.0, "delta": 1e-6},
                    "filter": None,
                    "grid_version": 1,
                    "orders": [2.0, 4.0, 8.0],
                    "spent": [0.05, 0.11, 0.24],
                    "budget_curve": [-5.12, 3.54, 6.41],
                    "epsilon": [13.17, 4.57, 1.83],
                    "spent_epsilon": 1.83,
                    "spent_order": 8.0,
                }
            ]
        }
    }
    user_id: str
    policy: str
    budget: Budget
    filter: FilterInfo | None = None
    grid_version: int
    orders: list[float] = Field(description="the Rényi orders α of the ledger's grid")
    spent: list[float | None] = Field(
        description="the user's spent RDP curve ε(α): the order-wise sum of every charge that reached "
        "the user, as admission uses it (null = unbounded)"
    )
    budget_curve: list[float | None] = Field(
        description="B(α) = ε_B − (log(1/δ_B) + (α−1)·log(1−1/α) − log α)/(α−1): the largest spent ε(α) "
        "whose conversion at α gives ε_B (null where α is too small to convert). Declared policy: the "
        "user can afford what keeps spent ≤ B at some order; filter policy: at α_f only"
    )
    epsilon: list[float | None] = Field(
        description="ε at δ_B when the spent curve is converted at each order (the conversion of "
        "bounds.md §4, before the minimum; null = unbounded or unusable)"
    )
    spent_epsilon: float = Field(description="as in GET /v1/users/{user_id}: the ε the policy reports")
    spent_order: float | None
