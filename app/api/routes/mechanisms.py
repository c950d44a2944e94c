"""Mechanism endpoints: the catalog, calibrated parameters and accounting, and — for simulation and
testing only — randomize / estimate (what each computes: :mod:`app.core.mechanisms`).

Real clients randomize on their own device, with the SDK, never on the server: a raw value sent to
``/randomize`` has already left the device and is *not* protected by the mechanism. These endpoints
exist to simulate a protocol end to end, test a client implementation against the reference one
(same seed, same reports), and run the server-side estimator.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Path, Request
from fastapi.responses import Response
from pydantic import BaseModel

from app.api.deps import CallerDep, services
from app.core import mechanisms
from app.core.services import Caller, dumps
from app.schemas.compute import ERROR_401, ERROR_429, ERROR_503, ErrorResponse, UnprocessableResponse
from app.schemas.mechanisms import (
    MAX_CLIENTS,
    MAX_INPUT_NUMBERS,
    SIMULATION_NOTE,
    CatalogResponse,
    EstimateRequest,
    EstimateResponse,
    ParametersRequest,
    ParametersResponse,
    RandomizeRequest,
    RandomizeResponse,
)

router = APIRouter(tags=["mechanisms"])


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    desc = {
        400: "Domain error from the accountant (e.g. a bound outside its validity), or a calibration that needs "
        "more computation than the time limit allows, with `detail`.",
        404: "Unknown mechanism name; `detail` lists the available ones.",
        413: "Request body too large.",
        422: "Bad parameters, inputs or reports (`detail` says which and what to change), an infeasible "
        "calibration target, or a malformed body (FastAPI's validation shape: `detail` is a list).",
    }
    models = {400: ErrorResponse, 404: ErrorResponse, 413: ErrorResponse, 422: UnprocessableResponse}
    shared = {401: ERROR_401, 429: ERROR_429, 503: ERROR_503}
    return {c: shared[c] if c in shared else {"model": models[c], "description": desc[c]} for c in codes}


def _json_answer(model: type[BaseModel], fn: Any, *args: Any) -> bytes:
    """``fn(*args)`` serialized as strict JSON in ``model``'s shape (optional fields present, null
    when unset), in the worker thread."""
    result = mechanisms.guarded(fn, *args)
    for name, field in model.model_fields.items():
        if name not in result and not field.is_required():
            result[name] = field.get_default(call_default_factory=True)
    try:
        return dumps(result)
    except ValueError:
        raise mechanisms.InvalidMechanismRequest(
            "the inputs produced non-finite numbers; send finite numbers"
        ) from None


async def _answer(request: Request, caller: Caller, model: type[BaseModel], fn: Any, *args: Any) -> Response:
    body = await services(request).compute.run(caller, request, _json_answer, model, fn, *args)
    return Response(content=body, media_type="application/json")


NAME = Path(
    description="mechanism name, e.g. `kary_rr`, `linf`, `l2` (see `GET /v1/mechanisms`)",
    examples=["kary_rr"],
)


@router.get(
    "/v1/mechanisms",
    response_model=CatalogResponse,
    summary="The catalog of mechanisms and their parameter schemas",
    description=(
        "Every local randomizer (discrete output: the thesis's shuffle bounds apply; continuous: only bounds "
        "valid for any ε0-LDP randomizer) and central mechanism, with its parameters (type, description, "
        "default, bounds), output kind and the theorem/algorithm it implements. " + SIMULATION_NOTE
    ),
)
async def catalog() -> dict[str, Any]:
    return mechanisms.catalog()


@router.post(
    "/v1/mechanisms/{name}/parameters",
    response_model=ParametersResponse,
    response_model_exclude_none=False,
    summary="Calibrated internals, MSE, bits and accounting events of a mechanism",
    description=(
        "From the privacy level and sizes in `params`: the calibrated internals (flip probabilities, the ℓ∞ "
        "budget split across levels and slots, clipping radii …), the exact ε0 of one report and of each "
        "separately shuffled message, bits per report, output alphabet, the closed-form MSE. With "
        "`accounting` (n users, k sampled per round, `count` rounds): the accountant events one use costs "
        "(one per shuffled message, api.md form) and, with `delta`, the composed ε. With `calibrate`: the "
        "largest ε0 (or smallest central noise) whose composed accounting meets the (ε, δ) target — never "
        "above it; with `calibrate.solve_for` `count`, `n` or `k` and the mechanism fully given in `params`: "
        "the most rounds, the fewest users or the largest sample per round that meets it (verified: one step "
        "further misses), in `value`, with the events under that accounting. `422` when no value can, `400` "
        "when the search needs more than the service's compute time limit (retrying continues from the "
        "cached curves)."
    ),
    responses=_errors(400, 401, 404, 413, 422, 429, 503),
)
async def parameters(
    request: Request, caller: CallerDep, name: str = NAME, req: ParametersRequest = Body(...)
) -> Response:
    return await _answer(request, caller, ParametersResponse, mechanisms.parameters, name, req)


@router.post(
    "/v1/mechanisms/{name}/randomize",
    response_model=RandomizeResponse,
    summary="Simulate clients' reports (testing only — real clients randomize on their device)",
    description=(
        "**Real clients randomize on their own device, with the SDK, never on the server.** This endpoint runs "
        "the reference client code for simulations and for checking a client implementation (the same "
        "`seed` gives the same reports). Inputs out of the mechanism's domain are rejected (bits, symbols) or "
        "projected onto it (norm balls, boxes — as the client code does). Bounded to "
        f"{MAX_CLIENTS:,} clients and {MAX_INPUT_NUMBERS:,} numbers per request. For `user_mean` the reports "
        "hold both rounds (the broadcast interval is computed from the round-1 reports)."
    ),
    responses=_errors(401, 404, 413, 422, 429, 503),
)
async def randomize(
    request: Request, caller: CallerDep, name: str = NAME, req: RandomizeRequest = Body(...)
) -> Response:
    return await _answer(request, caller, RandomizeResponse, mechanisms.randomize, name, req)


@router.post(
    "/v1/mechanisms/{name}/estimate",
    response_model=EstimateResponse,
    summary="The server's unbiased aggregate of shuffled reports",
    description=(
        "Runs the mechanism's server-side estimator on the (shuffled) reports: the mean (`binary_rr`, vector "
        "mechanisms, `user_mean`), the k frequencies (`kary_rr`, `hadamard_response`), or the bin frequencies "
        "and broadcast interval (`user_range`), with the closed-form MSE at that number of reports. Report "
        "order does not matter. Reports are validated (indices in range, bits 0/1); a bad one is a `422` "
        "saying which field. " + SIMULATION_NOTE
    ),
    responses=_errors(401, 404, 413, 422, 429, 503),
)
async def estimate(
    request: Request, caller: CallerDep, name: str = NAME, req: EstimateRequest = Body(...)
) -> Response:
    return await _answer(request, caller, EstimateResponse, mechanisms.estimate, name, req)
