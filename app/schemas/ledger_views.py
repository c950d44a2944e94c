"""Pydantic response models of the ledger endpoints: each view is built from a typed record of
:mod:`app.ledger.records` by its ``of`` constructor (times as ISO 8601 strings, curve values +∞
as ``null``); error bodies of the ledger's domain errors. The views of reads over many records
(histories, listings, summary) are in :mod:`app.schemas.ledger_reads`.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from app.ledger import curves as cv
from app.ledger import records as rec


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


class Spent(BaseModel):
    epsilon: float = Field(description="ε at the budget's δ of everything charged so far (filter: at α_f)")
    order: float | None = Field(description="the order achieving it (null while nothing is spent)")

    @classmethod
    def of(cls, s: rec.Spent) -> Spent:
        return cls(epsilon=s.epsilon, order=s.order)


class FilterInfo(BaseModel):
    order: float = Field(description="α_f")
    order_budget: float = Field(description="B(α_f)")

    @classmethod
    def of(cls, b: cv.Budget) -> FilterInfo:
        if b.filter_budget is None:
            raise ValueError("a declared budget has no filter")
        return cls(order=b.alpha_f, order_budget=b.filter_budget)


class UserView(BaseModel):
    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "user_id": "u1",
                    "budget": {"epsilon": 8.0, "delta": 1e-6},
                    "policy": "declared",
                    "spent": {"epsilon": 1.2, "order": 14.0},
                    "remaining_epsilon": 6.8,
                    "charges": 3,
                    "grid_version": 1,
                    "created_at": "2025-01-01T00:00:00+00:00",
                    "updated_at": "2025-01-01T00:00:00+00:00",
                }
            ]
        }
    }
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
        return dict(
            user_id=u.user_id,
            budget=Budget.of(b),
            policy=b.policy,
            spent=Spent.of(u.spent),
            remaining_epsilon=u.remaining_epsilon,
            charges=u.charges,
            filter=FilterInfo.of(b) if b.policy == "filter" else None,
            grid_version=u.grid_version,
            created_at=iso(u.created_at),
            updated_at=iso(u.updated_at),
        )

    @classmethod
    def of(cls, u: rec.UserStatus) -> UserView:
        return cls(**cls.fields_of(u))


class BulkUsersResult(BaseModel):
    created: int
    skipped: int
    requested: int

    @classmethod
    def of(cls, r: rec.BulkResult) -> BulkUsersResult:
        return cls(created=r.created, skipped=r.skipped, requested=r.requested)


class Actor(BaseModel):
    name: str = Field(description="the API key's name (role-position in ACCOUNTANT_API_KEYS), never the key")
    role: str

    @classmethod
    def of(cls, a: rec.Actor) -> Actor:
        return cls(name=a.name, role=a.role)


class ChargeAdmitted(BaseModel):
    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "charge_id": "17",
                    "status": "admitted",
                    "users": 2,
                    "cohort": None,
                    "idempotency_key": "job-17-round-3",
                    "event": {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 1},
                    "grid_version": 1,
                    "charged_by": {"name": "pipeline-2", "role": "pipeline"},
                    "created_at": "2025-01-01T00:00:00+00:00",
                    "replayed": False,
                }
            ]
        }
    }
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
    replayed: bool = Field(
        description="true when this is the stored result of an earlier request with the same key"
    )

    @classmethod
    def of(cls, r: rec.ChargeResult) -> ChargeAdmitted:
        return cls(
            charge_id=r.charge_id,
            status="admitted",
            users=r.users,
            cohort=r.cohort,
            cohort_round=r.cohort_round,
            idempotency_key=r.idempotency_key,
            event=r.event,
            grid_version=r.grid_version,
            charged_by=Actor.of(r.charged_by),
            created_at=r.created_at.isoformat(),
            replayed=r.replayed,
        )


class RefusalCost(BaseModel):
    epsilon: float | None = Field(
        description="the largest, over every refused user, ε of this event alone at the "
        "user's budget δ (declared: minimised over the grid; filter: at "
        "α_f); null if unbounded"
    )
    by_user: dict[str, float | None] = Field(description="the same for each listed refused user")


class ChargeRefused(BaseModel):
    """A refused charge: nothing was recorded. ``cost`` is what the event alone would have cost the
    refused users and ``remaining`` what each listed refused user has left (ε at its budget's δ);
    at most 1000 users are listed, ``refused_count`` is exact."""

    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "status": "refused",
                    "refused_users": ["u2"],
                    "refused_count": 1,
                    "detail": "charge refused: 1 user(s) cannot afford this event within their budget; nothing was recorded.",
                    "cost": {"epsilon": 0.42, "by_user": {"u2": 0.42}},
                    "remaining": {"u2": 0.13},
                }
            ]
        }
    }
    status: Literal["refused"]
    refused_users: list[str] = Field(
        description="refused users (at most 1000 listed; explicit charges: in request order)"
    )
    refused_count: int
    detail: str
    cost: RefusalCost
    remaining: dict[str, float] = Field(
        description="each listed refused user's remaining ε before this charge"
    )


class IdempotencyConflict(BaseModel):
    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "status": "conflict",
                    "detail": "idempotency key 'job-17-round-3' was already used for a different request; "
                    "nothing was charged. Use a new key for a new charge",
                }
            ]
        }
    }
    status: Literal["conflict"]
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
        return cls(
            charge_id=c.charge_id,
            event=c.event,
            idempotency_key=c.idempotency_key,
            cohort=c.cohort,
            cohort_round=c.cohort_round,
            users=c.users,
            grid_version=c.grid_version,
            charged_by=Actor.of(c.charged_by),
            created_at=iso(c.created_at),
        )


#: the ``next_cursor`` field of every page (app.ledger.paging)
NEXT_CURSOR: Any = Field(
    None, description="pass as `cursor` to get the next page (opaque); null on the last page"
)


def page_fields(p: rec.Page[Any]) -> dict[str, Any]:
    """The paging fields of a page's view."""
    return {"total": p.total, "limit": p.limit, "offset": p.offset, "next_cursor": p.next_cursor}


class ChargePage(BaseModel):
    """``GET /v1/charges``: charges of the whole ledger, oldest first."""

    total: int
    limit: int
    offset: int
    next_cursor: str | None = NEXT_CURSOR
    charges: list[ChargeRecord]

    @classmethod
    def of(cls, page: rec.Page[rec.ChargeEntry]) -> ChargePage:
        return cls(charges=[ChargeRecord.of(c) for c in page.items], **page_fields(page))


class ChargeList(ChargePage):
    """``GET /v1/users/{user_id}/charges``: the charges that reached a user, oldest first."""

    user_id: str

    @classmethod
    def of_user(cls, user_id: str, page: rec.Page[rec.ChargeEntry]) -> ChargeList:
        return cls(user_id=user_id, **dict(ChargePage.of(page)))


class CohortView(BaseModel):
    cohort_id: str
    description: str | None
    members: int
    rounds: int = Field(description="cohort charges so far")
    grid_version: int
    created_at: str | None

    @classmethod
    def fields_of(cls, c: rec.CohortInfo) -> dict[str, Any]:
        return dict(
            cohort_id=c.cohort_id,
            description=c.description,
            members=c.members,
            rounds=c.rounds,
            grid_version=c.grid_version,
            created_at=iso(c.created_at),
        )

    @classmethod
    def of(cls, c: rec.CohortInfo) -> CohortView:
        return cls(**cls.fields_of(c))


class MembersChanged(BaseModel):
    cohort: CohortView
    added: int | None = None
    already_members: int | None = None
    removed: int | None = None
    not_members: int | None = None

    @classmethod
    def of(cls, m: rec.MembersChange) -> MembersChanged:
        counts = (
            {"added": m.changed, "already_members": m.unchanged}
            if m.joined
            else {"removed": m.changed, "not_members": m.unchanged}
        )
        return cls(cohort=CohortView.of(m.cohort), **counts)


class Member(BaseModel):
    user_id: str
    joined_after_round: int
    left_after_round: int | None
    joined_at: str | None
    left_at: str | None

    @classmethod
    def of(cls, m: rec.Membership) -> Member:
        return cls(
            user_id=m.user_id,
            joined_after_round=m.joined_after_round,
            left_after_round=m.left_after_round,
            joined_at=iso(m.joined_at),
            left_at=iso(m.left_at),
        )


class MemberList(BaseModel):
    cohort_id: str
    limit: int
    offset: int
    next_cursor: str | None = NEXT_CURSOR
    members: list[Member]

    @classmethod
    def of(cls, p: rec.MemberPage) -> MemberList:
        return cls(
            cohort_id=p.cohort_id,
            limit=p.limit,
            offset=p.offset,
            next_cursor=p.next_cursor,
            members=[Member.of(m) for m in p.members],
        )


class MembershipView(BaseModel):
    cohort_id: str
    joined_after_round: int = Field(description="the member is charged for the rounds after this one …")
    left_after_round: int | None = Field(description="… up to and including this one (null: still a member)")
    joined_at: str | None
    left_at: str | None
    active: bool

    @classmethod
    def of(cls, m: rec.Membership) -> MembershipView:
        return cls(
            cohort_id=m.cohort_id,
            joined_after_round=m.joined_after_round,
            left_after_round=m.left_after_round,
            joined_at=iso(m.joined_at),
            left_at=iso(m.left_at),
            active=m.active,
        )


class UserCohorts(BaseModel):
    user_id: str
    memberships: list[MembershipView]

    @classmethod
    def of(cls, user_id: str, ms: list[rec.Membership]) -> UserCohorts:
        return cls(user_id=user_id, memberships=[MembershipView.of(m) for m in ms])
