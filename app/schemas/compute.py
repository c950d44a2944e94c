"""Request/response models of the computation endpoints (api.md "Computation endpoints"), and
the error bodies every endpoint documents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

import accountant

from .events import (
    JSON_NUMBER,
    Event,
    PartialEvent,
    StrictModel,
    inner_solvable_fields,
    solvable_by_type,
    solvable_fields,
)

#: most orders one request may ask for
MAX_ORDERS = 1000
#: most events one composition may carry
MAX_EVENTS = 1000

_BOUNDS = tuple(dict.fromkeys(b for cls in accountant.EVENT_TYPES.values() for b in cls.BOUNDS))
if TYPE_CHECKING:  # the names are known at run time only (the event types' declarations)
    BoundName = str
    SolvableField = str
else:
    BoundName = Literal[_BOUNDS]
    SolvableField = Union[
        Literal[tuple(solvable_fields())],
        Annotated[
            str,
            Field(
                pattern=r"^inner\[[0-9]{1,3}\]\.(" + "|".join(inner_solvable_fields()) + r")$",
                description="a field of one inner event of a sampled event, e.g. `inner[0].noise_multiplier`",
            ),
        ],
    ]

Orders = list[Annotated[float, Field(gt=1, le=1e6), JSON_NUMBER]]
ORDERS_FIELD = Field(
    None,
    min_length=1,
    max_length=MAX_ORDERS,
    description=(
        f"Rényi orders α > 1 to evaluate (at most {MAX_ORDERS}, each ≤ 10⁶). Optional: the default is the "
        "service's grid (bounds.md §6, 1.1 … 10⁴; `grid_version` in the response). Computation time grows "
        "with α, so a request whose orders are both many and very large is refused with 400."
    ),
)


# ------------------------------------------------------------------------------------------ errors
class ErrorResponse(BaseModel):
    """Every error body: a human-readable ``detail`` that says what to change."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"detail": "n must be >= 1, got 0", "error": "InvalidParameter"}]}
    )
    detail: str = Field(description="what went wrong and what to change")
    error: str | None = Field(None, description="error class (e.g. BoundNotApplicable, InvalidParameter)")
    request_id: str | None = Field(None, description="the request id (also in the X-Request-ID header)")


class ValidationErrorItem(BaseModel):
    loc: list[Union[str, int]]
    msg: str
    type: str
    input: Any = None
    ctx: dict[str, Any] | None = None
    url: str | None = None


class UnprocessableResponse(BaseModel):
    """``422``: malformed input (FastAPI's validation shape: ``detail`` is a list of errors), or an
    infeasible target (``detail`` is a sentence and ``best_epsilon`` the best achievable ε)."""

    detail: Union[list[ValidationErrorItem], str]
    error: str | None = None
    best_epsilon: float | None = Field(None, description="infeasible target: the best ε any value achieves")
    errors_omitted: int | None = Field(None, description="validation errors beyond the first 20, not listed")
    request_id: str | None = None


ERROR_400 = {
    "model": ErrorResponse,
    "description": "Domain error: a parameter outside its domain, or a bound asked for where it does not hold. "
    "`detail` says which condition failed and what to change.",
    "content": {
        "application/json": {
            "example": {
                "detail": "bound 'u1' holds only at integer orders α >= 2, got α = 10.5; ask for integer orders or use "
                "bound 'upper' (which interpolates to real orders)",
                "error": "BoundNotApplicable",
            }
        }
    },
}
ERROR_413 = {
    "model": ErrorResponse,
    "description": "The request body is larger than the service accepts (1 MiB by default).",
    "content": {"application/json": {"example": {"detail": "request body too large: at most 1048576 bytes"}}},
}
ERROR_422 = {
    "model": UnprocessableResponse,
    "description": "Malformed input (wrong types, strings for numbers, NaN/Infinity, unknown fields, "
    "out-of-range values): FastAPI's validation shape.",
    "content": {
        "application/json": {
            "example": {
                "detail": [
                    {
                        "type": "greater_than_equal",
                        "loc": ["body", "event", "shuffle", "n"],
                        "msg": "Input should be greater than or equal to 1",
                        "input": 0,
                        "ctx": {"ge": 1},
                    }
                ]
            }
        }
    },
}
ERROR_401 = {
    "model": ErrorResponse,
    "description": "An `Authorization` header with a key that is not valid (computations need no key: send "
    "none, or a valid one, which gives the request reserved capacity); or no key where the service "
    "computes only for callers with a key (`ACCOUNTANT_ANONYMOUS_COMPUTE=key-required`).",
    "content": {"application/json": {"example": {"detail": "invalid API key"}}},
}
RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds after which a retry has a fair chance",
        "schema": {"type": "integer"},
    }
}
ERROR_429 = {
    "model": ErrorResponse,
    "description": "Too many anonymous computations are waiting: retry after `Retry-After` seconds, or send an "
    "API key (keyed requests have reserved capacity).",
    "headers": RETRY_AFTER,
}
ERROR_503 = {
    "model": ErrorResponse,
    "description": "The service is busy (no computation slot within the queue time or the request's time "
    "limit, or too many requests waiting): nothing was computed for this request; retry after `Retry-After` "
    "seconds (what was computed so far is cached).",
    "headers": RETRY_AFTER,
}
COMPUTE_ERRORS: dict[int | str, dict[str, Any]] = {
    400: ERROR_400,
    401: ERROR_401,
    413: ERROR_413,
    422: ERROR_422,
    429: ERROR_429,
    503: ERROR_503,
}


# -------------------------------------------------------------------------------------------- /v1/rdp
class RdpRequest(StrictModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "event": {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100},
                    "orders": [2, 3, 10.5],
                    "bound": "upper",
                },
            ]
        }
    )
    event: Event
    orders: Orders | None = ORDERS_FIELD
    bound: BoundName = Field(
        "upper",
        description="Which bound. shuffle: `upper` (default, tightest valid), `u1`, `u1_simplified`, `u2`, `cap`, "
        "`clones`, `thesis`, `lower`, `lower_simplified`, `efm19`, `fmt23`; subsampled_shuffle: `upper` "
        "(default), `su`, `wbk19`, `subsampled_clones`, `cap`, `thesis`, `lower`; other mechanisms: `upper` only. A bound asked for "
        "where it does not hold is a 400 naming the failed condition.",
    )


class RdpResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "orders": [2.0, 3.0, 10.5],
                    "rdp": [0.05901, 0.09619, 0.55544],
                    "bound": "upper",
                    "event": {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100},
                    "sources": ["u1", "u1", "u1/u2 interpolated"],
                    "notes": [],
                    "default_orders": False,
                }
            ]
        }
    )
    orders: list[float] = Field(description="the orders used")
    rdp: list[float | None] = Field(
        description="RDP ε(α) at each order, already multiplied by count; null where no finite bound exists "
        "(an rdp_curve above its largest given order)"
    )
    bound: str
    event: Event = Field(description="the event, normalised (defaults filled in, optional defaults dropped)")
    sources: list[str] = Field(description="per order, the bound that gave the value")
    notes: list[str] = Field(description="the accountant's notes (e.g. which bounds were unavailable)")
    default_orders: bool = Field(description="true when the service's default grid was used")
    grid_version: int | None = Field(None, description="version of the default grid (when it was used)")


# ------------------------------------------------------------------------------ /v1/epsilon, /v1/delta
class EventSource(BaseModel):
    event: int = Field(description="index of the event in the request")
    mechanism: str
    bound: str = Field(description="the bound that gave this event's value at the optimal order")


if TYPE_CHECKING:
    AccountingName = str
else:
    AccountingName = Literal[accountant.ACCOUNTING]
ACCOUNTING_FIELD = Field(
    "best",
    description="Which proof to report (bounds.md §11). `best` (default): the smallest certified answer of every "
    "route that applies — `rdp` (compose RDP curves and convert), `pld` (compose the privacy-loss distributions "
    "of dominating pairs, discretised pessimistically, numerical error added to δ) and `pure` (basic composition "
    "when every event is pure ε-DP). `rdp` or `pld`: that route alone (`pld` is a 400 for events without a "
    "dominating pair). The ledger always charges RDP curves: calibrate with `rdp` for a run that will be charged, "
    "with `best` for a one-off report.",
)


class _ComposeRequest(StrictModel):
    events: list[Event] = Field(
        min_length=1, max_length=MAX_EVENTS, description=f"1 to {MAX_EVENTS} events to compose"
    )
    orders: Orders | None = ORDERS_FIELD
    accounting: AccountingName = ACCOUNTING_FIELD


class EpsilonRequest(_ComposeRequest):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "events": [
                        {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100},
                        {
                            "mechanism": "subsampled_shuffle",
                            "n": 1000000,
                            "k": 1000,
                            "epsilon0": 2.0,
                            "count": 100000,
                        },
                    ],
                    "delta": 1e-8,
                },
            ]
        }
    )
    delta: Annotated[float, Field(gt=0, lt=1, description="target δ, 0 < δ < 1"), JSON_NUMBER]


class DeltaRequest(_ComposeRequest):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "events": [{"mechanism": "shuffle", "n": 1000000, "epsilon0": 0.5, "count": 100000}],
                    "epsilon": 1.64,
                },
            ]
        }
    )
    epsilon: Annotated[float, Field(ge=0, le=1e6, description="target ε ≥ 0"), JSON_NUMBER]


class RouteResult(BaseModel):
    route: Literal["rdp", "pld", "pure"]
    epsilon: float | None = Field(description="this route's ε (null: the route does not apply)")
    delta: float | None = Field(description="this route's δ (null: the route does not apply)")
    note: str = Field(description="why the route does not apply, or what it added")


class GuaranteeResponse(BaseModel):
    epsilon: float
    delta: float
    route: Literal["rdp", "pld", "pure"] = Field(description="the route that gave `epsilon` and `delta`")
    routes: list[RouteResult] = Field(description="every route tried, with its answer")
    order: float | None = Field(
        description="the Rényi order of the RDP route's answer (possibly refined between grid points; on the "
        "default grid, when its last order 10⁴ is the grid's optimum, possibly one of the 24 orders up to 3.2·10⁵ "
        "the conversion also tries above the grid; null when `accounting` is `pld`)"
    )
    orders: list[float] = Field(description="the orders used")
    rdp: list[float | None] = Field(description="the composed RDP curve on `orders`")
    sources: list[EventSource] = Field(description="per event, the bound that gave its value at `order`")
    notes: list[str]
    default_orders: bool
    grid_version: int | None = None


_GUARANTEE_EXAMPLE: dict[str, Any] = {
    "epsilon": 1.63993,
    "delta": 1e-8,
    "route": "rdp",
    "routes": [
        {"route": "rdp", "epsilon": 1.63993, "delta": 1e-8, "note": "optimal order 19.12"},
        {"route": "pld", "epsilon": 1.70112, "delta": 1e-8, "note": "pessimistic PLD"},
        {"route": "pure", "epsilon": None, "delta": None, "note": "a 'gaussian' event is not pure ε-DP"},
    ],
    "order": 19.12,
    "orders": [16.0, 18.0, 20.0, 23.0],
    "rdp": [0.68196, 0.76738, 0.85281, 0.98092],
    "sources": [{"event": 0, "mechanism": "shuffle", "bound": "u1/u2 interpolated"}],
    "notes": [
        "the optimal order 19.12 was found by refining between grid points; 'rdp' is the composed curve on 'orders'"
    ],
    "default_orders": True,
    "grid_version": 1,
}


class EpsilonResponse(GuaranteeResponse):
    model_config = ConfigDict(json_schema_extra={"examples": [_GUARANTEE_EXAMPLE]})


class DeltaResponse(GuaranteeResponse):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{**_GUARANTEE_EXAMPLE, "epsilon": 1.64, "delta": 9.9879e-9}]}
    )


# ---------------------------------------------------------------------------------------- /v1/calibrate
class Target(StrictModel):
    epsilon: Annotated[float, Field(gt=0, le=1e6, description="target ε > 0"), JSON_NUMBER]
    delta: Annotated[float, Field(gt=0, lt=1, description="target δ, 0 < δ < 1"), JSON_NUMBER]


class CalibrateRequest(StrictModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "solve_for": "epsilon0",
                    "target": {"epsilon": 4.0, "delta": 1e-5},
                    "event": {"mechanism": "subsampled_shuffle", "n": 100000, "k": 1000, "count": 1000},
                },
            ]
        }
    )
    solve_for: SolvableField = Field(
        description=(
            "The unknown, left out of `event`: `epsilon0` — the largest ε0 meeting the target (relative tolerance "
            "1e-6); `count` — the most rounds (closed form); `n` — the fewest users; `k` — the LARGEST sample size "
            "per round that still meets the target (one round's RDP grows with k = γn, so the most clients per "
            "round is the useful answer); `noise_multiplier` (gaussian), `scale` (laplace) — the smallest noise; "
            "`epsilon` (pure_dp, exponential, above_threshold) — the largest ε. In a `subsampled` event, a field "
            "of an inner event: `inner[i].<field>`, or the bare name when one inner event leaves it out (several: "
            "a 400 naming them). `direction` in the answer says `largest` or `smallest`. Fields each event type "
            "can solve for: "
            + "; ".join(f"{m}: {', '.join(f) or '(none)'}" for m, f in solvable_by_type().items())
            + "."
        )
    )
    target: Target
    event: PartialEvent = Field(
        description="the event without the field being solved for (count defaults to 1 unless solved for)",
    )
    orders: Orders | None = ORDERS_FIELD
    accounting: AccountingName = ACCOUNTING_FIELD


class CalibrateResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "event": {
                        "mechanism": "subsampled_shuffle",
                        "n": 100000,
                        "k": 1000,
                        "epsilon0": 2.949008,
                        "count": 1000,
                    },
                    "epsilon": 3.99999998,
                    "delta": 1e-5,
                    "order": 5.0,
                    "solve_for": "epsilon0",
                    "value": 2.949008,
                    "target": {"epsilon": 4.0, "delta": 1e-5},
                    "default_orders": True,
                    "grid_version": 1,
                    "at_limit": False,
                    "notes": [],
                    "evaluations": 13,
                }
            ]
        }
    )
    event: Event = Field(description="the completed event")
    epsilon: float = Field(
        description="ε of the completed event at the target δ (recomputed; never above the target)"
    )
    delta: float
    order: float = Field(description="the optimal order of the RDP route's guarantee")
    accounting: AccountingName = Field("best", description="the accounting the answer was judged by")
    route: Literal["rdp", "pld", "pure"] = Field("rdp", description="the route that gave `epsilon`")
    solve_for: str = Field(
        description="the field solved for, resolved (an inner event's field as `inner[i].<field>`)"
    )
    value: float | int = Field(description="the value found for `solve_for`")
    target: Target
    default_orders: bool
    grid_version: int | None = None
    direction: Literal["largest", "smallest"] | None = Field(
        None,
        description="whether the answer is the largest value meeting the target (ε grows with the field: "
        "epsilon0, epsilon, count, k) or the smallest (ε falls as it grows: noise, n); declared on the field",
    )
    at_limit: bool | None = Field(None, description="the answer sits at the end of the parameter's domain")
    notes: list[str] | None = None
    evaluations: int | None = Field(None, description="curve evaluations the search used")


class DatabaseReadiness(BaseModel):
    dialect: str = Field(description="sqlite or postgresql")
    reachable: bool = Field(description="a query was answered within the check's time limit")
    writes: Literal["ok", "busy", "locked", "read_only", "disk_full", "unknown"] = Field(
        description="`ok`; `busy` (this process's writes are queued: ready, under load); `locked` (another "
        "process holds SQLite's write lock); `read_only` (a read-only or immutable file or mount, a PostgreSQL "
        "standby or read-only default transactions); `disk_full` (SQLite: under 1 MiB free, or a 4 KiB write "
        "refused); `unknown` (unreachable)"
    )
    detail: str | None = Field(None, description="why the database is not ready")


class ReadinessResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "status": "ready",
                    "database": {"dialect": "sqlite", "reachable": True, "writes": "ok"},
                    "compute": {
                        "slots": 2,
                        "running": {"keyed": 0, "anonymous": 1},
                        "waiting": {"keyed": 0, "anonymous": 0},
                    },
                }
            ]
        }
    )
    status: Literal["ready", "not ready"]
    database: DatabaseReadiness
    compute: dict[str, Any] = Field(
        description="compute slots, and the computations running and waiting by caller class"
    )


class HealthResponse(BaseModel):
    status: Literal["ok"]
    version: str
    calibration: bool = Field(
        description="always true: every build serves /v1/calibrate (kept for clients that check it)"
    )
    default_orders: int = Field(description="number of orders on the default grid")
    grid_version: int
    api_keys_configured: bool = Field(
        description="whether the service was started with API keys (ACCOUNTANT_API_KEYS); without them "
        "the ledger and the dashboard refuse every key"
    )
