"""Computation endpoints (no API key needed): ``/v1/rdp``, ``/v1/epsilon``, ``/v1/delta``,
``/v1/calibrate``; and the operational ``/health``, ``/health/ready`` and ``/metrics``.

Each computation endpoint validates its request and hands the pure function of
:mod:`app.core.compute` to :class:`app.core.services.ComputeService` (response cache, admission
control, worker thread, deadline).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

import accountant
from app.api.deps import CallerDep, services
from app.core import compute
from app.core.admission import checkpoint
from app.core.metrics import render
from app.core.services import dumps
from app.schemas.compute import (
    COMPUTE_ERRORS,
    CalibrateRequest,
    CalibrateResponse,
    DeltaRequest,
    DeltaResponse,
    EpsilonRequest,
    EpsilonResponse,
    HealthResponse,
    RdpRequest,
    RdpResponse,
    ReadinessResponse,
    UnprocessableResponse,
)

router = APIRouter()

#: a valid key on a computation endpoint gives reserved capacity; an invalid one is a 401


@router.get(
    "/health",
    response_model=HealthResponse,
    tags=["operations"],
    summary="Liveness: 200 once the service can serve",
    responses={
        200: {
            "content": {
                "application/json": {
                    "example": {
                        "status": "ok",
                        "version": "0.1.0",
                        "calibration": True,
                        "default_orders": 81,
                        "grid_version": 1,
                        "api_keys_configured": True,
                    }
                }
            }
        }
    },
)
async def health(request: Request) -> Response:
    """Always fast: never waits for a computation (those run in worker threads) or the database."""
    return Response(_HEALTH_BYTES[bool(services(request).keys)], media_type="application/json")


def _health_body() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("privacy-accountant")
    except PackageNotFoundError:  # pragma: no cover
        v = "0.0.0"
    return {
        "status": "ok",
        "version": v,
        "calibration": True,
        "default_orders": int(len(accountant.DEFAULT_ORDERS)),
        "grid_version": int(accountant.DEFAULT_GRID_VERSION),
    }


#: the body by whether API keys are configured (the dashboard's sign-in says so when none are)
_HEALTH_BYTES = {k: dumps({**_health_body(), "api_keys_configured": k}) for k in (False, True)}


@router.get(
    "/health/ready",
    response_model=ReadinessResponse,
    tags=["operations"],
    summary="Readiness: 200 when the database answers and accepts writes, else 503",
    description=(
        "Checks the database (a query, and whether writes can proceed: read-only, or SQLite's write lock held by "
        "another process, is *not ready*) within 2 s, and reports the computation slots in use. `GET /health` "
        "stays liveness (the process serves) and never touches the database."
    ),
    responses={503: {"model": ReadinessResponse, "description": "not ready: `database` says why"}},
)
async def ready(request: Request) -> Response:
    svc = services(request)
    body: dict[str, Any] = {
        "database": await svc.readiness(),
        "compute": svc.compute.admission.snapshot(),
    }
    ok = body["database"]["reachable"] and body["database"]["writes"] in ("ok", "busy")
    body = {"status": "ready" if ok else "not ready", **body}
    return Response(dumps(body), status_code=200 if ok else 503, media_type="application/json")


@router.get(
    "/metrics",
    tags=["operations"],
    summary="Prometheus metrics",
    description="Requests, latency and errors by endpoint (route template), in the Prometheus text format.",
    response_class=Response,
    responses={
        200: {
            "content": {
                "text/plain": {
                    "schema": {"type": "string"},
                    "example": 'accountant_http_requests_total{endpoint="/v1/rdp",method="POST",status="200"} 3.0\n',
                }
            }
        }
    },
)
async def metrics(request: Request) -> Response:
    cache = services(request).compute.cache
    data, ctype = render({"responses": (cache.nbytes, len(cache))})
    return Response(content=data, media_type=ctype)


@router.post(
    "/v1/rdp",
    response_model=RdpResponse,
    tags=["compute"],
    summary="The RDP curve of one event",
    description=(
        "The RDP curve ε(α) of one event, already multiplied by its `count`, for the named `bound` "
        "(default `upper`, the tightest valid upper bound), on the requested `orders` or the default grid. "
        "`sources` says, per order, which bound gave the value; `notes` carries the accountant's remarks. "
        "A bound asked for where its theorem does not hold (`u1`/`su` at a non-integer order, "
        "`u1_simplified` outside its condition, `su` with k < 2, a thesis bound for a continuous output) "
        "is a `400` whose `detail` says which condition failed — never a number."
    ),
    responses=COMPUTE_ERRORS,
)
async def rdp(req: RdpRequest, request: Request, caller: CallerDep) -> Response:
    svc = services(request)
    fn = partial(
        compute.rdp_result, req.event.to_accountant(), req.orders, req.bound, svc.settings.max_order_mass
    )
    return await svc.compute.answer("rdp", req.model_dump_json(), caller, request, fn)


@router.post(
    "/v1/epsilon",
    response_model=EpsilonResponse,
    tags=["compute"],
    summary="Compose events and convert to ε at a given δ",
    description=(
        "By default (`accounting: best`) the smallest certified ε of every route that applies: the RDP route "
        "(compose the events' RDP curves order-wise and convert once, minimising over the orders and refining "
        "the best order between grid points), the PLD route (privacy-loss distributions of dominating pairs) "
        "and pure composition. `route` names the route that won and `routes` gives every route's answer. "
        "`order` is the RDP route's optimal order; `orders`/`rdp` its composed curve; `sources` the bound that "
        "gave each event's value at `order`. δ must satisfy 0 < δ < 1 (δ = 0 or 1 is a 422)."
    ),
    responses=COMPUTE_ERRORS,
)
async def epsilon(req: EpsilonRequest, request: Request, caller: CallerDep) -> Response:
    svc = services(request)
    fn = partial(
        compute.epsilon_result,
        [e.to_accountant() for e in req.events],
        req.delta,
        req.orders,
        svc.settings.max_order_mass,
        accounting=req.accounting,
    )
    return await svc.compute.answer("epsilon", req.model_dump_json(), caller, request, fn)


@router.post(
    "/v1/delta",
    response_model=DeltaResponse,
    tags=["compute"],
    summary="Compose events and convert to δ at a given ε",
    description=(
        "Same routes as `/v1/epsilon`, answering the smallest certified δ at the given ε (ε ≥ 0); "
        "`order` is the RDP route's order that gave its δ."
    ),
    responses=COMPUTE_ERRORS,
)
async def delta(req: DeltaRequest, request: Request, caller: CallerDep) -> Response:
    svc = services(request)
    fn = partial(
        compute.delta_result,
        [e.to_accountant() for e in req.events],
        req.epsilon,
        req.orders,
        svc.settings.max_order_mass,
        accounting=req.accounting,
    )
    return await svc.compute.answer("delta", req.model_dump_json(), caller, request, fn)


CALIBRATE_ERRORS = {
    **COMPUTE_ERRORS,
    422: {
        "model": UnprocessableResponse,
        "description": "Malformed input (FastAPI's validation shape), or no value of the unknown meets the "
        "target: `detail` says why and `best_epsilon` gives the best achievable ε.",
        "content": {
            "application/json": {
                "examples": {
                    "infeasible": {
                        "summary": "infeasible target",
                        "value": {
                            "detail": "no epsilon0 meets ε ≤ 0.001 at δ = 1e-05: even ε0 → 0 gives ε = 0.0012; raise the "
                            "target ε or δ, or use fewer rounds",
                            "error": "InfeasibleTarget",
                            "best_epsilon": 0.0012,
                        },
                    },
                    "malformed": {
                        "summary": "malformed input",
                        "value": {
                            "detail": [
                                {
                                    "type": "missing",
                                    "loc": ["body", "target"],
                                    "msg": "Field required",
                                    "input": {},
                                }
                            ]
                        },
                    },
                }
            }
        },
    },
}


@router.post(
    "/v1/calibrate",
    response_model=CalibrateResponse,
    tags=["compute"],
    summary="Solve for one unknown of an event so that the composed guarantee meets a target",
    description=(
        "The unknown field (`solve_for`) is left out of `event`. `epsilon0`: the largest ε0 meeting the target "
        "(relative tolerance 1e-6); `count`: the most rounds (closed form per order); `n`: the fewest users; "
        "`k` (subsampled shuffle): the sample size per round — the accountant's calibration says which "
        "direction it searched in `direction` (see `accountant.calibrate`). Integers are exact (the extreme "
        "feasible integer). The returned guarantee is recomputed for the returned event and is never above "
        "the target (judged by `accounting`, default `best`; `route` names the route that met it); when no "
        "value can meet it the answer is a `422` with the reason and the best achievable ε. Long searches run in a worker thread; the service stays responsive."
    ),
    responses=CALIBRATE_ERRORS,
)
async def calibrate(req: CalibrateRequest, request: Request, caller: CallerDep) -> Response:
    svc = services(request)
    fn = partial(
        compute.calibrate_result,
        req.event.to_accountant(),
        req.solve_for,
        req.target.epsilon,
        req.target.delta,
        req.orders,
        svc.settings.max_order_mass,
        progress=_checkpoint,
        accounting=req.accounting,
    )
    return await svc.compute.answer("calibrate", req.model_dump_json(), caller, request, fn)


def _checkpoint(_fraction: float, _epsilon: float) -> None:
    """After each evaluation of a search: stop if its time is up or its client left."""
    checkpoint()
