"""Ledger endpoints (api.md "Budget ledger"; ledger.md): users, charges, cohorts, dashboards.

Every endpoint needs ``Authorization: Bearer <key>``: ``admin`` manages users and cohorts,
``admin``/``pipeline`` charge, every role reads. Handlers are plain ``def`` (run in the thread
pool): the database work never blocks the event loop. A write that needs an event's cost (a
charge; a budget planned from an event) computes it first, under the computations' admission,
work limit and deadline (:func:`app.api.deps.computed`), and only then takes its write turn:
the turn only compares and records, so a heavy or never-seen event never holds the ledger's
writes (a too-heavy one is a fast ``400`` naming the limit, a busy service a ``503``).
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

import accountant
from app.api.deps import (
    AdminDep,
    ChargerDep,
    DbDep,
    ReaderDep,
    WriteTurnDep,
    computed,
    held_write_turn,
    services,
)
from app.core.compute import check_work
from app.ledger import service as svc
from app.ledger.curves import ORDERS as LEDGER_ORDERS
from app.ledger.paging import MAX_OFFSET
from app.ledger.service import Actor
from app.schemas import ledger as sch
from app.schemas import ledger_reads as reads
from app.schemas import ledger_views as views
from app.schemas.compute import ERROR_413, RETRY_AFTER

UserPath = Annotated[
    str, Path(min_length=1, max_length=256, pattern=sch.ID_PATTERN, description="user (data subject) id")
]
CohortPath = Annotated[
    str, Path(min_length=1, max_length=256, pattern=sch.ID_PATTERN, description="cohort id")
]

AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": views.ErrorBody, "description": "missing or invalid API key"},
    403: {"model": views.ErrorBody, "description": "the key's role may not do this"},
    413: ERROR_413,
    422: {
        "description": "malformed request (FastAPI validation shape) or an invalid budget/event "
        "(`detail` says what to change)"
    },
    503: {
        "model": views.ErrorBody,
        "description": "The database is unavailable (unreachable, frozen, locked by another process beyond "
        "the time limit, read-only) or too many database operations are waiting: nothing was recorded "
        "(unless `detail` says the commit's outcome is unknown). Retry the same request, with the same "
        "idempotency key, after `Retry-After` seconds.",
        "headers": RETRY_AFTER,
    },
}

REFUSAL_DOC = (
    "**Refusals leak nothing.** Whether a charge is admitted depends only on public quantities: the "
    "event's parameters (mechanism, n, k, ε0, count, …), the users' budgets and the charges already "
    "admitted — never on any user's data. An explicit `409` refusal therefore reveals nothing about the "
    "data beyond what the pipeline already knows."
)

router = APIRouter(prefix="/v1", tags=["ledger"])

#: the errors of a listing: a bad page is a 400
PAGE_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {
        "model": views.ErrorBody,
        "description": "an offset above the maximum, or a cursor this listing did not hand out (`detail` says "
        "to follow `next_cursor`)",
    },
    **AUTH_ERRORS,
}

#: the ``cursor`` parameter of the listings (app.ledger.paging)
CURSOR_DESC = sch.CURSOR_FIELD.description
PAGING_DOC = (
    f" Pages: `offset` (at most {MAX_OFFSET:,}: the database walks the rows it skips) or, at any depth, "
    "`cursor` = the previous page's `next_cursor` (null on the last page); an offset above the maximum, or "
    "a cursor this listing did not hand out, is a `400` saying so."
)


def event_cost(event: dict[str, Any], max_mass: float) -> np.ndarray:
    """The ledger cost of ``event`` (:func:`app.ledger.service.event_cost`) after the work limit of
    ``/v1/epsilon`` on the ledger's grid (``WorkLimitExceeded``: a ``400``): an event refused there
    is refused here."""
    try:
        ev = accountant.event_from_dict(event)
    except accountant.AccountantError as exc:
        raise svc.Invalid(str(exc)) from None
    check_work([ev], LEDGER_ORDERS, max_mass, convert=True)
    return svc.event_cost(event)


async def _budget(request: Request, actor: Actor, req: sch.UserPut | sch.BulkUsersRequest) -> svc.Budget:
    """The budget of ``req``, computed before the write turn (a planned event's cost is computed)."""
    planned = req.planned_event.to_accountant() if req.planned_event is not None else None
    return await computed(
        request,
        actor,
        _make_budget,
        req.budget.epsilon,
        req.budget.delta,
        req.policy,
        req.filter_order,
        planned,
        services(request).settings.max_order_mass,
    )


def _make_budget(
    epsilon: float,
    delta: float,
    policy: str,
    filter_order: float | None,
    planned: dict[str, Any] | None,
    max_mass: float,
) -> svc.Budget:
    if planned is not None:
        event_cost(planned, max_mass)  # the work limit first; the curve is then cached for make_budget
    return svc.make_budget(epsilon, delta, policy, filter_order, planned)


# ---------------------------------------------------------------------------------------------- users


@router.put(
    "/users/{user_id}",
    response_model=views.UserView,
    status_code=200,
    summary="Create or update a user's budget (admin)",
    description="Creates the user (`201`) or changes its budget/policy (`200`); the spent curve is kept. "
    "Policies: see the request schema (`declared` vs the Rényi `filter`).",
    responses={201: {"model": views.UserView, "description": "user created"}, **AUTH_ERRORS},
)
async def put_user(
    user_id: UserPath, body: sch.UserPut, response: Response, request: Request, db: DbDep, actor: AdminDep
) -> views.UserView:
    budget = await _budget(request, actor, body)
    async with held_write_turn(request, db):
        created, status = await run_in_threadpool(svc.put_user, db, user_id, budget)
    response.status_code = 201 if created else 200
    return views.UserView.of(status)


@router.post(
    "/users/bulk",
    response_model=views.BulkUsersResult,
    status_code=201,
    summary="Create many users with one budget (admin)",
    description="All or nothing. Users created together share one budget class, so a later cohort "
    "charge over them costs O(1). Give `users` (≤ 100,000 ids) or an `id_range`.",
    responses={
        409: {"model": views.ErrorBody, "description": "some ids exist (on_conflict='error')"},
        **AUTH_ERRORS,
    },
)
async def bulk_users(
    body: sch.BulkUsersRequest, request: Request, db: DbDep, actor: AdminDep
) -> views.BulkUsersResult:
    budget = await _budget(request, actor, body)
    async with held_write_turn(request, db):
        result = await run_in_threadpool(svc.bulk_create_users, db, body.all_ids(), budget, body.on_conflict)
    return views.BulkUsersResult.of(result)


@router.get(
    "/users",
    response_model=reads.UserPage,
    summary="List users: filter, sort, page (any role)",
    description=(
        "Users matching every given filter — `prefix` (user ids starting with it), `policy`, `remaining_below` "
        "(remaining ε < the value) — in the order `sort`: `user_id` (code-point order), `remaining`, `spent` "
        "(ε at the budget's δ) or `last_charge`, ascending, or descending with a leading `-`. Ties are broken "
        "by budget class, then user id (a descending sort reverses both); users never charged come last when "
        "sorting by `last_charge`. `total` counts every matching user. Each item is the user's "
        "`GET /v1/users/{user_id}` view plus `last_charge_at`. Pages are cheap at any population size: "
        "remaining, spent and last charge are stored per budget class, and sorted listings walk the classes. "
        "Unknown query parameters are refused (`422`)." + PAGING_DOC
    ),
    responses=PAGE_ERRORS,
)
def list_users(q: Annotated[sch.UserListQuery, Query()], db: DbDep, _actor: ReaderDep) -> reads.UserPage:
    f = svc.UserFilter(prefix=q.prefix, policy=q.policy, remaining_below=q.remaining_below)
    return reads.UserPage.of(svc.list_users(db, f, q.sort, q.limit, q.offset, q.cursor))


@router.get(
    "/summary",
    response_model=reads.LedgerSummary,
    summary="Dashboard overview: counts and a timeline (any role)",
    description=(
        "Users, cohorts, admitted charges, refused charge requests, users near exhaustion (remaining ε below "
        "`near_exhaustion_fraction` = 0.1 of their budget ε), and per UTC hour (`bucket=hour`, default the "
        "last 48) or day (`bucket=day`, default the last 30) the charges admitted and the charge requests "
        "refused. The last bucket is the current one."
    ),
    responses=AUTH_ERRORS,
)
def summary(q: Annotated[sch.SummaryQuery, Query()], db: DbDep, _actor: ReaderDep) -> reads.LedgerSummary:
    return reads.LedgerSummary.of(svc.summary(db, q.bucket, q.buckets))


@router.get(
    "/users/{user_id}",
    response_model=views.UserView,
    summary="A user's budget, spent and remaining ε (any role)",
    description="`spent.epsilon` is the ε at the budget's δ of everything charged so far (declared: "
    "minimised over the grid; filter: at α_f); `charges` counts the charges that reached the user.",
    responses={404: {"model": views.ErrorBody, "description": "unknown user"}, **AUTH_ERRORS},
)
def get_user(user_id: UserPath, db: DbDep, _actor: ReaderDep) -> views.UserView:
    return views.UserView.of(svc.get_user(db, user_id))


@router.get(
    "/users/{user_id}/charges",
    response_model=views.ChargeList,
    summary="A user's charges, oldest first, each with its event (any role)",
    description="Explicit charges naming the user and cohort rounds charged while the user was a member."
    + PAGING_DOC,
    responses={404: {"model": views.ErrorBody, "description": "unknown user"}, **PAGE_ERRORS},
)
def user_charges(
    user_id: UserPath,
    db: DbDep,
    _actor: ReaderDep,
    limit: int = Query(100, ge=1, le=10_000),
    offset: int = Query(0, ge=0, le=10**12, description=sch.OFFSET_DESC),
    cursor: str | None = Query(None, description=CURSOR_DESC),
) -> views.ChargeList:
    return views.ChargeList.of_user(user_id, svc.list_user_charges(db, user_id, limit, offset, cursor))


@router.get(
    "/users/{user_id}/cohorts",
    response_model=views.UserCohorts,
    summary="A user's cohort memberships with join/leave history (any role)",
    responses={404: {"model": views.ErrorBody, "description": "unknown user"}, **AUTH_ERRORS},
)
def user_cohorts(user_id: UserPath, db: DbDep, _actor: ReaderDep) -> views.UserCohorts:
    return views.UserCohorts.of(user_id, svc.user_cohorts(db, user_id))


@router.get(
    "/users/{user_id}/history",
    response_model=reads.UserHistory,
    summary="Dashboard: a user's spent ε after each charge (any role)",
    description="At most `limit` points, evenly subsampled (the last charge always included).",
    responses={404: {"model": views.ErrorBody, "description": "unknown user"}, **AUTH_ERRORS},
)
def user_history(
    user_id: UserPath, db: DbDep, _actor: ReaderDep, limit: int = Query(500, ge=2, le=10_000)
) -> reads.UserHistory:
    return reads.UserHistory.of(svc.user_history(db, user_id, limit))


@router.get(
    "/users/{user_id}/audit",
    response_model=reads.Audit,
    summary="The running spent curve against its recomputation from the charge log (any role)",
    description="The event log is the truth; the running sum is rounded outward and must never be below "
    "the exactly rounded recomputation (`running_not_below_recomputed`). `null` = +∞.",
    responses={404: {"model": views.ErrorBody, "description": "unknown user"}, **AUTH_ERRORS},
)
def user_audit(user_id: UserPath, db: DbDep, _actor: ReaderDep) -> reads.Audit:
    return reads.Audit.of(svc.recompute_user(db, user_id))


@router.get(
    "/dashboard/nearest-exhaustion",
    response_model=reads.ExhaustionList,
    summary="Dashboard: the users with the smallest remaining fraction of their budget (any role)",
    responses=AUTH_ERRORS,
)
def nearest_exhaustion(
    db: DbDep, _actor: ReaderDep, limit: int = Query(20, ge=1, le=1000)
) -> reads.ExhaustionList:
    return reads.ExhaustionList.of(svc.nearest_exhaustion(db, limit))


# ---------------------------------------------------------------------------------------------- charges


@router.post(
    "/charges",
    response_model=views.ChargeAdmitted,
    status_code=201,
    summary="Charge one event to users or to a cohort, all or nothing (admin, pipeline)",
    description=(
        "Admits the event only if **every** affected user can afford it under their policy, then records "
        "one immutable charge (the event as received, its RDP curve on the ledger's versioned order grid, "
        "who charged it, when, the idempotency key). Otherwise `409` with the refused users and nothing "
        "recorded. A `cohort` charge reaches the cohort's members at the time of the charge. Unknown users "
        "or cohort: `404` naming them, nothing recorded. The same `idempotency_key` with the same body "
        "returns the original result (`replayed: true`) without charging again, also when requests race; "
        'with a different body it is a `409` (`status: "conflict"`). A `201` is durable (committed before '
        "the response is sent).\n\n" + REFUSAL_DOC
    ),
    responses={
        409: {
            "model": views.ChargeRefused | views.IdempotencyConflict,
            "description": 'refused (`status: "refused"`, nothing recorded; `cost` is what the event alone '
            "would have cost the refused users, `remaining` what each has left) — or the "
            'idempotency key was used with a different body (`status: "conflict"`). ' + REFUSAL_DOC,
        },
        404: {"model": views.UnknownUsers, "description": "unknown users or cohort (nothing recorded)"},
        **AUTH_ERRORS,
    },
)
async def post_charge(
    body: sch.ChargeRequest, request: Request, db: DbDep, actor: ChargerDep
) -> views.ChargeAdmitted:
    event = body.event.model_dump(mode="json", exclude_unset=True)
    event["mechanism"] = body.event.mechanism
    cost_event = body.event.to_accountant()
    cost = await computed(request, actor, event_cost, cost_event, services(request).settings.max_order_mass)
    async with held_write_turn(request, db):
        result = await run_in_threadpool(
            partial(
                svc.charge,
                db,
                event=event,
                cost_event=cost_event,
                cost=cost,
                actor=actor,
                users=body.users,
                cohort=body.cohort,
                idempotency_key=body.idempotency_key,
            )
        )
    return views.ChargeAdmitted.of(result)


@router.get(
    "/charges",
    response_model=views.ChargePage,
    summary="List the ledger's charges, oldest first; filter by user, cohort, time (any role)",
    description=(
        "Every admitted charge, oldest first (by charge id), each with its event — filtered by `user` (the "
        "charges that reached the user: explicit charges naming it and cohort rounds charged while it was a "
        "member), `cohort` (that cohort's rounds), `since` (charged at or after) and `until` (charged "
        "before): ISO 8601 dates or date-times, UTC unless they carry an offset. `total` counts every "
        "match. An unreadable time, or `since` not before `until`, is a `400` saying what to write; an "
        "unknown user or cohort a `404`. Unknown query parameters are refused (`422`)." + PAGING_DOC
    ),
    responses={404: {"model": views.ErrorBody, "description": "unknown user or cohort"}, **PAGE_ERRORS},
)
def list_charges(
    q: Annotated[sch.ChargeListQuery, Query()], db: DbDep, _actor: ReaderDep
) -> views.ChargePage:
    since, until = svc.parse_instant("since", q.since), svc.parse_instant("until", q.until)
    page = svc.list_charges(
        db, q.limit, q.offset, q.cursor, user_id=q.user, cohort_id=q.cohort, since=since, until=until
    )
    return views.ChargePage.of(page)


# ---------------------------------------------------------------------------------------------- cohorts


@router.post(
    "/cohorts",
    response_model=views.CohortView,
    status_code=201,
    summary="Create a cohort (admin)",
    description="A named population. Charges naming it reach its members at the time of the charge; members "
    "who join later are not charged for earlier rounds, members who leave stop being charged.",
    responses={409: {"model": views.ErrorBody, "description": "the cohort exists"}, **AUTH_ERRORS},
)
def create_cohort(
    body: sch.CohortCreate, db: DbDep, _actor: AdminDep, _turn: WriteTurnDep
) -> views.CohortView:
    return views.CohortView.of(svc.create_cohort(db, body.cohort_id, body.description))


@router.get(
    "/cohorts",
    response_model=reads.CohortPage,
    summary="List cohorts by id (any role)",
    description="Cohorts whose id starts with `prefix` (all when empty), in code-point order of their ids; "
    "`total` counts every match." + PAGING_DOC,
    responses=PAGE_ERRORS,
)
def list_cohorts(
    q: Annotated[sch.CohortListQuery, Query()], db: DbDep, _actor: ReaderDep
) -> reads.CohortPage:
    return reads.CohortPage.of(svc.list_cohorts(db, q.prefix, q.limit, q.offset, q.cursor))


@router.get(
    "/cohorts/{cohort_id}",
    response_model=views.CohortView,
    summary="A cohort (any role)",
    responses={404: {"model": views.ErrorBody, "description": "unknown cohort"}, **AUTH_ERRORS},
)
def get_cohort(cohort_id: CohortPath, db: DbDep, _actor: ReaderDep) -> views.CohortView:
    return views.CohortView.of(svc.get_cohort(db, cohort_id))


@router.post(
    "/cohorts/{cohort_id}/members",
    response_model=views.MembersChanged,
    summary="Add members (admin)",
    description="All or nothing; users already members are counted in `already_members`. Unknown users: `404`.",
    responses={404: {"model": views.UnknownUsers, "description": "unknown cohort or users"}, **AUTH_ERRORS},
)
def add_members(
    cohort_id: CohortPath, body: sch.MembersRequest, db: DbDep, _actor: AdminDep, _turn: WriteTurnDep
) -> views.MembersChanged:
    return views.MembersChanged.of(svc.change_members(db, cohort_id, body.all_ids(), join=True))


@router.post(
    "/cohorts/{cohort_id}/members/remove",
    response_model=views.MembersChanged,
    summary="Remove members (admin)",
    description="All or nothing; users who are not members are counted in `not_members`. The join/leave "
    "history is kept (see `GET …/members?history=true`).",
    responses={404: {"model": views.UnknownUsers, "description": "unknown cohort or users"}, **AUTH_ERRORS},
)
def remove_members(
    cohort_id: CohortPath, body: sch.MembersRequest, db: DbDep, _actor: AdminDep, _turn: WriteTurnDep
) -> views.MembersChanged:
    return views.MembersChanged.of(svc.change_members(db, cohort_id, body.all_ids(), join=False))


@router.delete(
    "/cohorts/{cohort_id}/members/{user_id}",
    response_model=views.MembersChanged,
    summary="Remove one member (admin)",
    responses={404: {"model": views.UnknownUsers, "description": "unknown cohort or user"}, **AUTH_ERRORS},
)
def remove_member(
    cohort_id: CohortPath, user_id: UserPath, db: DbDep, _actor: AdminDep, _turn: WriteTurnDep
) -> views.MembersChanged:
    return views.MembersChanged.of(svc.change_members(db, cohort_id, [user_id], join=False))


@router.get(
    "/cohorts/{cohort_id}/members",
    response_model=views.MemberList,
    summary="A cohort's members (any role); `history=true` includes past memberships",
    description="In the order they joined." + PAGING_DOC,
    responses={404: {"model": views.ErrorBody, "description": "unknown cohort"}, **PAGE_ERRORS},
)
def list_members(
    cohort_id: CohortPath,
    db: DbDep,
    _actor: ReaderDep,
    limit: int = Query(100, ge=1, le=10_000),
    offset: int = Query(0, ge=0, le=10**12, description=sch.OFFSET_DESC),
    history: bool = False,
    cursor: str | None = Query(None, description=CURSOR_DESC),
) -> views.MemberList:
    return views.MemberList.of(svc.list_members(db, cohort_id, limit, offset, history, cursor))


@router.get(
    "/cohorts/{cohort_id}/history",
    response_model=reads.CohortHistory,
    summary="Dashboard: a cohort's cumulative spent ε after each round (any role)",
    description="ε at `delta` of the cohort's cumulative curve: what a member present since the first round has "
    "spent through this cohort.",
    responses={404: {"model": views.ErrorBody, "description": "unknown cohort"}, **AUTH_ERRORS},
)
def cohort_history(
    cohort_id: CohortPath,
    db: DbDep,
    _actor: ReaderDep,
    delta: float = Query(1e-6, gt=0, lt=1),
    limit: int = Query(500, ge=2, le=10_000),
) -> reads.CohortHistory:
    return reads.CohortHistory.of(svc.cohort_history(db, cohort_id, delta, limit))
