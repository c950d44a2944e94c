"""Typed results of the SDK: one pydantic model per JSON answer of the service.

The models mirror the response schemas of the service's OpenAPI document (``/openapi.json``;
``tests/app/test_sdk_package.py`` checks that every field here is one the service documents and
that every field the service always sends is here). They are lenient where the SDK must outlive
the server version it was written for: a field the service adds later is kept (``extra="allow"``,
reachable as an attribute), never an error.

Each model also answers ``result["field"]`` and ``result.get("field")``, so code written when the
ledger methods returned plain dicts keeps working; ``to_dict()`` gives the JSON form back.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Model",
    "EventData",
    "HealthResponse",
    "RdpResponse",
    "EventSource",
    "RouteResult",
    "GuaranteeResponse",
    "EpsilonResponse",
    "DeltaResponse",
    "Target",
    "CalibrateResponse",
    "Budget",
    "Spent",
    "FilterInfo",
    "User",
    "UserListItem",
    "UserPage",
    "BulkUsersResult",
    "Actor",
    "Charge",
    "ChargeRecord",
    "ChargeList",
    "ChargePage",
    "RefusalCost",
    "Refusal",
    "Cohort",
    "CohortPage",
    "MembersChanged",
    "Member",
    "MemberList",
    "Membership",
    "UserCohorts",
    "HistoryPoint",
    "UserHistory",
    "CohortHistory",
    "UserCurve",
    "TimelineBucket",
    "LedgerSummary",
    "ExhaustionEntry",
    "ExhaustionList",
    "Audit",
]


class Model(BaseModel):
    """Base of every result: attribute access, plus mapping-style reads (``r["status"]``)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (
            key in type(self).model_fields or key in (self.__pydantic_extra__ or {})
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (as the service sent it, times as ISO 8601 strings)."""
        return self.model_dump(mode="json")


class EventData(Model):
    """An event as the service echoes it (``mechanism`` and that mechanism's fields, as attributes)."""

    mechanism: str


# ------------------------------------------------------------------------------------- computation
class HealthResponse(Model):
    status: Literal["ok"]
    version: str
    calibration: bool
    default_orders: int
    grid_version: int
    #: whether the service has API keys (ACCOUNTANT_API_KEYS); None from a service that does not say
    api_keys_configured: bool | None = None


class RdpResponse(Model):
    """``POST /v1/rdp``: ε(α) (× count) at each order; ``None`` where no finite bound exists."""

    orders: list[float]
    rdp: list[float | None]
    bound: str
    event: EventData
    sources: list[str]
    notes: list[str]
    default_orders: bool
    grid_version: int | None = None


class EventSource(Model):
    event: int
    mechanism: str
    bound: str


class RouteResult(Model):
    """One route's answer (``epsilon``/``delta`` None where the route does not apply)."""

    route: str
    epsilon: float | None = None
    delta: float | None = None
    note: str = ""


class GuaranteeResponse(Model):
    """``route`` names the proof that gave ``epsilon``/``delta`` (``rdp``, ``pld`` or ``pure``);
    ``routes`` every route tried; ``order`` the RDP route's optimal order (None with ``pld``)."""

    epsilon: float
    delta: float
    route: str = "rdp"
    routes: list[RouteResult] = []
    order: float | None
    orders: list[float]
    rdp: list[float | None]
    sources: list[EventSource]
    notes: list[str]
    default_orders: bool
    grid_version: int | None = None


class EpsilonResponse(GuaranteeResponse):
    """``POST /v1/epsilon``."""


class DeltaResponse(GuaranteeResponse):
    """``POST /v1/delta``."""


class Target(Model):
    epsilon: float
    delta: float


class CalibrateResponse(Model):
    """``POST /v1/calibrate``: ``event`` completed with ``value``; ``epsilon`` is recomputed for it."""

    event: EventData
    epsilon: float
    delta: float
    order: float
    accounting: str = "best"
    route: str = "rdp"
    solve_for: str
    value: float | int
    target: Target
    default_orders: bool
    grid_version: int | None = None
    direction: Literal["largest", "smallest"] | None = None
    at_limit: bool | None = None
    notes: list[str] | None = None
    evaluations: int | None = None


# ------------------------------------------------------------------------------------------ ledger
class Budget(Model):
    epsilon: float
    delta: float


class Spent(Model):
    epsilon: float = Field(description="ε at the budget's δ of everything charged so far")
    order: float | None = Field(description="the Rényi order achieving it (None while nothing is spent)")


class FilterInfo(Model):
    order: float = Field(description="the filter's order α_f")
    order_budget: float = Field(description="B(α_f)")


class User(Model):
    """``GET/PUT /v1/users/{user_id}``."""

    user_id: str
    budget: Budget
    policy: Literal["declared", "filter"]
    spent: Spent
    remaining_epsilon: float
    charges: int
    filter: FilterInfo | None = None
    grid_version: int
    created_at: datetime | None = None
    updated_at: datetime | None = None


class UserListItem(User):
    last_charge_at: datetime | None = None


class UserPage(Model):
    """``GET /v1/users``: one page; ``total`` counts every match."""

    items: list[UserListItem]
    total: int
    limit: int
    offset: int
    next_cursor: str | None = Field(
        None, description="pass as cursor= for the next page; None on the last page"
    )


class BulkUsersResult(Model):
    created: int
    skipped: int
    requested: int


class Actor(Model):
    name: str
    role: str


class Charge(Model):
    """``POST /v1/charges`` admitted (``replayed``: the stored answer to an earlier request with this key)."""

    charge_id: str
    status: Literal["admitted"]
    users: int
    cohort: str | None = None
    cohort_round: int | None = None
    idempotency_key: str | None = None
    event: EventData
    grid_version: int
    charged_by: Actor
    created_at: datetime
    replayed: bool


class ChargeRecord(Model):
    charge_id: str
    event: EventData
    idempotency_key: str | None
    cohort: str | None
    cohort_round: int | None
    users: int
    grid_version: int
    charged_by: Actor
    created_at: datetime | None


class ChargePage(Model):
    """``GET /v1/charges``: the ledger's charges, oldest first."""

    total: int
    limit: int
    offset: int
    next_cursor: str | None = Field(
        None, description="pass as cursor= for the next page; None on the last page"
    )
    charges: list[ChargeRecord]


class ChargeList(ChargePage):
    """``GET /v1/users/{user_id}/charges``: oldest first."""

    user_id: str


class RefusalCost(Model):
    epsilon: float | None = Field(
        description="largest ε of the event alone over the refused users (None: unbounded)"
    )
    by_user: dict[str, float | None]


class Refusal(Model):
    """One refused user of a ``409``: what it has left and what the event alone would have cost it."""

    user_id: str
    remaining_epsilon: float | None
    cost_epsilon: float | None


class Cohort(Model):
    cohort_id: str
    description: str | None
    members: int
    rounds: int
    grid_version: int
    created_at: datetime | None


class CohortPage(Model):
    items: list[Cohort]
    total: int
    limit: int
    offset: int
    next_cursor: str | None = Field(
        None, description="pass as cursor= for the next page; None on the last page"
    )


class MembersChanged(Model):
    cohort: Cohort
    added: int | None = None
    already_members: int | None = None
    removed: int | None = None
    not_members: int | None = None


class Member(Model):
    user_id: str
    joined_after_round: int
    left_after_round: int | None
    joined_at: datetime | None
    left_at: datetime | None


class MemberList(Model):
    cohort_id: str
    limit: int
    offset: int
    next_cursor: str | None = Field(
        None, description="pass as cursor= for the next page; None on the last page"
    )
    members: list[Member]


class Membership(Model):
    cohort_id: str
    joined_after_round: int
    left_after_round: int | None
    joined_at: datetime | None
    left_at: datetime | None
    active: bool


class UserCohorts(Model):
    user_id: str
    memberships: list[Membership]


class HistoryPoint(Model):
    charge_id: str
    at: datetime | None
    spent_epsilon: float
    order: float | None
    charges: int | None = None
    round: int | None = None
    remaining_epsilon: float | None = None


class UserHistory(Model):
    """``GET /v1/users/{user_id}/history``: spent ε after each charge (evenly subsampled)."""

    user_id: str
    budget: Budget
    policy: str
    charges: int
    points: list[HistoryPoint]


class CohortHistory(Model):
    cohort_id: str
    delta: float
    rounds: int
    points: list[HistoryPoint]


class UserCurve(Model):
    """``GET /v1/users/{user_id}/curve``: the spent RDP curve against the budget, order by order."""

    user_id: str
    policy: Literal["declared", "filter"]
    budget: Budget
    filter: FilterInfo | None = None
    grid_version: int
    orders: list[float]
    spent: list[float | None]
    budget_curve: list[float | None]
    epsilon: list[float | None]
    spent_epsilon: float
    spent_order: float | None


class TimelineBucket(Model):
    start: datetime
    admitted: int
    refused: int


class LedgerSummary(Model):
    """``GET /v1/summary``: the dashboard's overview."""

    users: int
    cohorts: int
    charges: int
    near_exhaustion: int
    near_exhaustion_fraction: float
    refusals: int
    bucket: Literal["hour", "day"]
    timeline: list[TimelineBucket]


class ExhaustionEntry(Model):
    user_id: str
    budget: Budget
    policy: str
    spent: Spent
    remaining_epsilon: float
    remaining_fraction: float
    charges: int


class ExhaustionList(Model):
    users: list[ExhaustionEntry]


class Audit(Model):
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
