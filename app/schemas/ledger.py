"""Pydantic request models of the ledger endpoints (api.md "Budget ledger", ledger.md): bodies and
query parameters. Unknown fields and unknown query parameters are refused. The response models
are in :mod:`app.schemas.ledger_views`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator
from typing_extensions import Self

from app.ledger.listing import Sort
from app.ledger.paging import MAX_OFFSET
from app.schemas.events import Event, Int, Num, StrictModel

#: ids are 1–256 characters without control characters (NUL cannot be stored by PostgreSQL)
ID_PATTERN = r"^[^\x00-\x1f\x7f]+$"
UserId = Annotated[
    str, Field(min_length=1, max_length=256, pattern=ID_PATTERN, description="a user (data subject) id")
]
CohortId = Annotated[str, Field(min_length=1, max_length=256, pattern=ID_PATTERN, description="a cohort id")]
#: ids being created must also be addressable as one path segment (/v1/users/{user_id}): no '/'
#: (ids that already exist keep working wherever they are referenced in a body)
NEW_ID_PATTERN = r"^[^\x00-\x1f\x7f/]+$"
NewUserId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=256,
        pattern=NEW_ID_PATTERN,
        description="a new user id: 1–256 characters, no control characters, no '/'",
    ),
]
NewCohortId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=256,
        pattern=NEW_ID_PATTERN,
        description="a new cohort id: 1–256 characters, no control characters, no '/'",
    ),
]
#: an id prefix in a query: any characters ids may contain (it may be empty)
PREFIX_PATTERN = r"^[^\x00-\x1f\x7f]*$"
MAX_LIST = 100_000
#: most ids one bulk creation or membership change may name (a list or a range): one request is one
#: all-or-nothing write, and this many fits in the database time limit (ACCOUNTANT_DB_TIMEOUT, 5 s)
#: on a loaded 2-core machine (≈ 3 s on SQLite); larger populations take several requests
MAX_RANGE = MAX_LIST


class BudgetIn(StrictModel):
    epsilon: Num = Field(gt=0, le=1e6, description="ε_B: the user's total ε at δ_B")
    delta: Num = Field(gt=0, lt=1, description="δ_B")


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
        "json_schema_extra": {
            "examples": [
                {"budget": {"epsilon": 8.0, "delta": 1e-6}, "policy": "declared"},
                {
                    "budget": {"epsilon": 4.0, "delta": 1e-6},
                    "policy": "filter",
                    "planned_event": {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100},
                },
            ]
        }
    }
    budget: BudgetIn
    policy: Literal["declared", "filter"] = "declared"
    filter_order: Num | None = Field(
        None, gt=1, description="filter policy: the designated order α_f (a grid order)"
    )
    planned_event: Event | None = Field(
        None, description="filter policy: pick α_f as the order minimising ε at δ_B for this event"
    )


class IdRange(StrictModel):
    """Ids ``f"{prefix}{i}"`` for i in [start, start + count) — large populations without a huge body."""

    prefix: str = Field(
        "", max_length=200, pattern=r"^[^\x00-\x1f\x7f/]*$", description="no control characters, no '/'"
    )
    start: Int = Field(0, ge=0, le=10**12)
    count: Int = Field(ge=1, le=MAX_RANGE)

    def ids(self) -> list[str]:
        return [f"{self.prefix}{i}" for i in range(self.start, self.start + self.count)]


class _UserSet(StrictModel):
    users: list[UserId] | None = Field(None, max_length=MAX_LIST, description="explicit user ids")
    id_range: IdRange | None = Field(None, description="or a generated range of ids")

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.users is None) == (self.id_range is None):
            raise ValueError("give exactly one of 'users' or 'id_range'")
        return self

    def all_ids(self) -> list[str]:
        if self.users is not None:
            return list(self.users)
        assert self.id_range is not None  # _one: exactly one of the two
        return self.id_range.ids()


class BulkUsersRequest(_UserSet):
    """Create many users with one budget (all or nothing)."""

    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [
                {
                    "id_range": {"prefix": "device-", "start": 0, "count": 100000},
                    "budget": {"epsilon": 8.0, "delta": 1e-6},
                    "policy": "declared",
                    "on_conflict": "skip",
                }
            ]
        }
    }
    users: list[NewUserId] | None = Field(None, max_length=MAX_LIST, description="explicit user ids")
    budget: BudgetIn
    policy: Literal["declared", "filter"] = "declared"
    filter_order: Num | None = Field(None, gt=1)
    planned_event: Event | None = None
    on_conflict: Literal["error", "skip"] = Field(
        "error", description="'error': 409 if any id exists (nothing created); 'skip': create only new ids"
    )


class ChargeRequest(StrictModel):
    """Charge one event to a set of users (``users``) or to every current member of a cohort
    (``cohort``), all or nothing."""

    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [
                {
                    "idempotency_key": "job-17-round-3",
                    "users": ["u1", "u2"],
                    "event": {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 1},
                },
                {
                    "idempotency_key": "fl-job-9-round-412",
                    "cohort": "population-eu",
                    "event": {
                        "mechanism": "subsampled_shuffle",
                        "n": 1000000,
                        "k": 1000,
                        "epsilon0": 2.0,
                        "count": 1,
                    },
                },
            ]
        }
    }
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        pattern=ID_PATTERN,
        description="same key + same body → the original result, not charged again; same key + different "
        "body → 409. Strongly recommended (the SDK sets one automatically).",
    )
    users: list[UserId] | None = Field(None, min_length=1, max_length=MAX_LIST)
    cohort: CohortId | None = None
    event: Event

    @model_validator(mode="after")
    def _target(self) -> Self:
        if (self.users is None) == (self.cohort is None):
            raise ValueError("give exactly one of 'users' (a list of user ids) or 'cohort' (a cohort id)")
        return self


class CohortCreate(StrictModel):
    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [{"cohort_id": "population-eu", "description": "EU devices of the keyboard model"}]
        }
    }
    cohort_id: NewCohortId
    description: str | None = Field(None, max_length=2000, pattern=r"^[^\x00]*$")


class MembersRequest(_UserSet):
    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [
                {"users": ["u1", "u2"]},
                {"id_range": {"prefix": "device-", "start": 0, "count": 100000}},
            ]
        }
    }


class _StrictQuery(BaseModel):
    """Query parameters; unknown ones are refused (a misspelt filter must not silently list everything)."""

    model_config = {"extra": "forbid"}


#: the ``cursor`` query parameter of the listings (app.ledger.paging)
CURSOR_FIELD: Any = Field(
    None,
    description="the `next_cursor` of the previous page (same sort and filters): the page after it, "
    "at any depth for the cost of the first page. Not with `offset`",
)
#: the ``offset`` query parameter of the listings: deeper than MAX_OFFSET is a 400 saying to use the cursor
OFFSET_DESC = f"items to skip, at most {MAX_OFFSET:,} (the database walks them); deeper: follow `next_cursor`"


class UserListQuery(_StrictQuery):
    limit: int = Field(50, ge=1, le=500, description="page size")
    offset: int = Field(0, ge=0, le=10**12, description=OFFSET_DESC)
    cursor: str | None = CURSOR_FIELD
    prefix: str = Field(
        "",
        max_length=256,
        pattern=PREFIX_PATTERN,
        description="user id prefix (empty: all)",
        examples=["device-"],
    )
    policy: Literal["declared", "filter"] | None = Field(None, description="only users with this policy")
    remaining_below: float | None = Field(
        None, allow_inf_nan=False, examples=[0.5], description="only users whose remaining ε is below this"
    )
    sort: Sort = Field(
        "user_id",
        examples=["-last_charge", "remaining"],
        description="`user_id` (code-point order), remaining or spent ε, or last charge; `-` descending",
    )


class CohortListQuery(_StrictQuery):
    limit: int = Field(50, ge=1, le=500, description="page size")
    offset: int = Field(0, ge=0, le=10**12, description=OFFSET_DESC)
    cursor: str | None = CURSOR_FIELD
    prefix: str = Field(
        "",
        max_length=256,
        pattern=PREFIX_PATTERN,
        description="cohort id prefix (empty: all)",
        examples=["population-"],
    )


#: a ``since``/``until`` query parameter: ISO 8601 text, parsed by app.ledger.reads.parse_instant (a 400 names it)
_TIME_DESC = (
    "ISO 8601 date or date-time, e.g. `2025-01-31` or `2025-01-31T12:00:00Z`; without an offset it is UTC"
)


class ChargeListQuery(_StrictQuery):
    limit: int = Field(100, ge=1, le=10_000, description="page size")
    offset: int = Field(0, ge=0, le=10**12, description=OFFSET_DESC)
    cursor: str | None = CURSOR_FIELD
    user: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        pattern=ID_PATTERN,
        description="only the charges that reached this user (explicitly or as a cohort member)",
    )
    cohort: str | None = Field(
        None, min_length=1, max_length=256, pattern=ID_PATTERN, description="only this cohort's rounds"
    )
    since: str | None = Field(
        None,
        max_length=64,
        examples=["2025-01-31T00:00:00Z"],
        description="charged at or after: " + _TIME_DESC,
    )
    until: str | None = Field(None, max_length=64, description="charged before: " + _TIME_DESC)


class SummaryQuery(_StrictQuery):
    bucket: Literal["hour", "day"] = Field("hour", description="timeline buckets: UTC hours or days")
    buckets: int | None = Field(
        None, ge=1, le=1000, description="number of buckets (default: 48 hours / 30 days)"
    )
