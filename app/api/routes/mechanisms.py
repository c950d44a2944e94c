"""Mechanism endpoints (no API key): the catalog, calibrated parameters and accounting, and — for
simulation and testing only — randomize / estimate.

Real clients randomize on their own device, with the SDK, never on the server: a raw value sent to
``/randomize`` has already left the device and is *not* protected by the mechanism. These endpoints
exist to simulate a protocol end to end, test a client implementation against the reference one
(same seed, same reports), and run the server-side estimator.

Included by ``app.main`` with ``app.include_router(mechanisms.router)``.
"""

from __future__ import annotations

import math
import os
import secrets
import time
from typing import Any

import anyio
import numpy as np
from fastapi import APIRouter, Body, HTTPException, Path
from pydantic import BaseModel, ConfigDict, Field

import mechanisms as mech_pkg
from app.schemas.compute import ErrorResponse, UnprocessableResponse
from mechanisms import CalibrationTimeout, MechanismError, UnknownMechanismError

router = APIRouter(tags=["mechanisms"])

#: request bounds (the body is also capped by the service, 1 MiB by default)
MAX_CLIENTS = 20_000
MAX_INPUT_NUMBERS = 200_000
MAX_OUTPUT_NUMBERS = 400_000
MAX_MESSAGES = 1024
MAX_DIMENSION = 1 << 16
MAX_SYMBOLS = 1 << 16
MAX_EVENTS_N = 10**12

SIMULATION_NOTE = (
    "Simulation only: real clients randomize on their own device with the SDK, never on the server. "
    "A raw value sent here has left the device and is not protected by the mechanism."
)

_LIMITER: anyio.CapacityLimiter | None = None


def _settings():
    try:
        from app.core.config import get_settings

        return get_settings()
    except Exception:  # pragma: no cover - router used outside the service
        return None


def _limiter() -> anyio.CapacityLimiter:
    """Computations at once (the service's ``compute_concurrency``, default the CPU count)."""
    global _LIMITER
    if _LIMITER is None:
        st = _settings()
        n = getattr(st, "compute_concurrency", 0) or max(2, os.cpu_count() or 2)
        _LIMITER = anyio.CapacityLimiter(n)
    return _LIMITER


def _time_limit() -> float:
    return float(getattr(_settings(), "compute_time_limit", 30.0) or 30.0)


async def _in_thread(fn, *args):
    try:
        return await anyio.to_thread.run_sync(fn, *args, limiter=_limiter())
    except ArithmeticError as exc:  # ZeroDivisionError / OverflowError from degenerate but in-range numbers
        raise HTTPException(
            422,
            (  # at most 200 characters: longer details are cut by app.main
                f"the parameters are beyond double precision ({type(exc).__name__}); use a larger epsilon0 (>= 1e-12 "
                "per message) or smaller radii, bounds, intervals and populations (<= 1e12)"
            ),
        ) from None


def _errors(*codes: int) -> dict:
    desc = {
        400: "Domain error from the accountant (e.g. a bound outside its validity), with `detail`.",
        404: "Unknown mechanism name; `detail` lists the available ones.",
        413: "Request body too large.",
        422: "Bad parameters, inputs or reports (`detail` says which and what to change), an infeasible "
        "calibration target, or a malformed body (FastAPI's validation shape: `detail` is a list).",
    }
    models = {400: ErrorResponse, 404: ErrorResponse, 413: ErrorResponse, 422: UnprocessableResponse}
    return {c: {"model": models[c], "description": desc[c]} for c in codes}


# ----------------------------------------------------------------------------------------------------
# Schemas
# ----------------------------------------------------------------------------------------------------

PARAMS_FIELD = Field(
    default_factory=dict,
    description="The mechanism's parameters by name (see `GET /v1/mechanisms` for each mechanism's list, "
    'types, defaults and bounds), e.g. `{"epsilon0": 1.0, "k": 8}`.',
)


class CatalogParameter(BaseModel):
    type: str = Field(description="number, integer, string or interval ([low, high])")
    description: str
    required: bool
    default: Any = Field(None, description="default value (null when required)")
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    choices: list[Any] | None = None
    nullable: bool | None = None


class CatalogEntry(BaseModel):
    name: str
    description: str
    parameters: dict[str, CatalogParameter]
    output: str = Field(description="`discrete` (chapter-5 shuffle bounds apply) or `continuous`")
    kind: str = Field(description="`local` (client-side randomizer) or `central` (trusted server)")
    source: str = Field(description="the theorem / algorithm the mechanism implements")


class CatalogResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "mechanisms": [
                        {
                            "name": "binary_rr",
                            "description": "Binary randomized response on one bit per client; …",
                            "parameters": {
                                "epsilon0": {
                                    "type": "number",
                                    "description": "local privacy level ε0 …",
                                    "required": True,
                                    "default": None,
                                    "exclusive_minimum": 0.0,
                                    "maximum": 50.0,
                                }
                            },
                            "output": "discrete",
                            "kind": "local",
                            "source": "Girgis thesis, Algorithm 2.2.1 and Theorem 2.4.1",
                        }
                    ],
                    "note": SIMULATION_NOTE,
                }
            ]
        }
    )
    mechanisms: list[CatalogEntry]
    note: str


class Accounting(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = Field(description="users taking part (the shuffle population)", ge=1, le=MAX_EVENTS_N)
    k: int | None = Field(
        None,
        description="users sampled per round (subsampled shuffle); omit for all n",
        ge=1,
        le=MAX_EVENTS_N,
    )
    count: int = Field(1, description="rounds (each round is one use of the mechanism)", ge=1, le=10**12)
    delta: float | None = Field(
        None, gt=0, lt=1, description="when given, the composed ε at this δ is computed"
    )


class CalibrationTarget(BaseModel):
    model_config = ConfigDict(extra="forbid")
    epsilon: float = Field(gt=0, le=1e4, description="target ε of the composed accounting")
    delta: float = Field(gt=0, lt=1, description="target δ")


class ParametersRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "params": {"epsilon0": 2.0, "d": 1024, "m": 3, "s": 8},
                    "accounting": {"n": 100000, "k": 5000, "count": 100, "delta": 1e-6},
                },
            ]
        },
    )
    params: dict[str, Any] = PARAMS_FIELD
    accounting: Accounting | None = Field(
        None, description="population and rounds: adds `events`, the MSE at n, and ε at δ"
    )
    calibrate: CalibrationTarget | None = Field(
        None,
        description="solve for ε0 (local mechanisms: the largest ε0 whose composed events meet the target; "
        "leave `epsilon0` out of `params`) or for the noise (`gaussian`: smallest "
        "`noise_multiplier`; `laplace`: smallest `scale`). Needs `accounting` (n for local).",
    )


class ParametersResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "kary_rr",
                    "params": {"epsilon0": 1.0, "k": 8},
                    "epsilon0": 1.0,
                    "message_epsilons": [1.0],
                    "bits_per_report": 3,
                    "output_alphabet_size": 8,
                    "output_alphabet_log2": 3.0,
                    "output": "discrete",
                    "kind": "local",
                    "internals": {"keep_probability": 0.28, "each_other_symbol_probability": 0.103},
                    "mse_per_client": 8.2,
                    "mse": 0.00082,
                    "events": [{"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100}],
                    "epsilon": 1.9,
                    "delta": 1e-6,
                    "order": 14.0,
                }
            ]
        }
    )
    name: str
    params: dict[str, Any] = Field(description="the validated parameters, defaults filled in")
    epsilon0: float | None = Field(description="ε0 of one whole report (null for the Gaussian)")
    message_epsilons: list[float] = Field(description="ε0 of each separately shuffled message of one report")
    bits_per_report: int | None
    output_alphabet_size: int | None = Field(
        description="letters of the report alphabet (null when continuous or beyond 2⁵³ — see the log2)"
    )
    output_alphabet_log2: float | None
    output: str
    kind: str
    internals: dict[str, Any] = Field(
        description="calibrated internals: flip probabilities, budget split, radii …"
    )
    mse_per_client: float = Field(
        description="closed-form supremum MSE with one client (the MSE at n is this / n for local mechanisms)"
    )
    mse: float | None = Field(None, description="closed-form supremum MSE with `accounting.n` clients")
    events: list[dict[str, Any]] | None = Field(
        None,
        description="accountant events of `count` rounds over n "
        "users (api.md form), one per shuffled message",
    )
    epsilon: float | None = Field(None, description="composed ε at `accounting.delta` (or the calibration δ)")
    delta: float | None = None
    order: float | None = None


class RandomizeRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"params": {"epsilon0": 1.0, "k": 4}, "inputs": [0, 1, 3, 3, 2], "seed": 7},
                {
                    "params": {"epsilon0": 2.0, "d": 4, "m": 2, "s": 2},
                    "inputs": [[0.1, -0.5, 0.9, 0.0], [1, 1, -1, 0.3]],
                    "seed": 1,
                },
            ]
        },
    )
    params: dict[str, Any] = PARAMS_FIELD
    inputs: list[Any] = Field(
        min_length=1,
        max_length=MAX_CLIENTS,
        description=f"One input per client (at most {MAX_CLIENTS:,} clients and {MAX_INPUT_NUMBERS:,} numbers): "
        "a bit, a symbol, a number, a vector, or — for `user_range`/`user_mean` — a user's whole "
        "dataset (list of samples).",
    )
    seed: int | None = Field(
        None,
        ge=0,
        lt=2**63,
        strict=True,
        description="seed of the numpy Generator (omit for a fresh one; the seed used is returned)",
    )


class RandomizeResponse(BaseModel):
    name: str
    seed: int
    clients: int
    reports: Any = Field(description="the reports, in the form `estimate` takes (arrays as lists)")
    note: str


class EstimateRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"params": {"epsilon0": 1.0, "k": 4}, "reports": [0, 1, 3, 3, 2, 3, 3, 1]},
                {"params": {"epsilon0": 1.0, "d": 8}, "reports": {"index": [0, 5, 2], "sign": [1, -1, 1]}},
            ]
        },
    )
    params: dict[str, Any] = PARAMS_FIELD
    reports: Any = Field(description="the shuffled reports: what `randomize` returned (any order)")


class EstimateResponse(BaseModel):
    name: str
    reports: int = Field(description="number of client reports used")
    estimate: Any = Field(description="the unbiased aggregate: a mean (number or vector) or the frequencies")
    mse: float | None = Field(None, description="closed-form supremum MSE at this number of reports")
    interval: list[float] | None = Field(None, description="`user_range`: the broadcast [a−3τ, a+3τ]")


# ----------------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------------


def _mechanism_class(name: str):
    """The mechanism's class, or a 404 naming the available ones."""
    try:
        return mech_pkg.mechanism_class(name)
    except UnknownMechanismError as exc:
        raise HTTPException(404, str(exc)) from None


def _build(name: str, params: dict[str, Any]):
    cls = _mechanism_class(name)
    for key in ("d", "k"):
        v = params.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > MAX_DIMENSION:
            raise HTTPException(
                422, f"parameter '{key}' must be <= {MAX_DIMENSION} on this endpoint (got {v})"
            )
    m, sl, d = params.get("m", 1), params.get("s", 1), params.get("d", 1)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (m, sl, d)) and name in (
        "linf",
        "l2",
        "user_mean",
    ):
        extra = (1 << max(d - 1, 0).bit_length()) if name == "user_mean" and d > 1 else 0
        if m * sl + extra > MAX_MESSAGES:
            raise HTTPException(
                422,
                f"this configuration sends {m * sl + extra} messages per report; at most "
                f"{MAX_MESSAGES} on this endpoint — lower m·s (or d for user_mean)",
            )
    if name in ("user_range", "user_mean"):
        b, tau = params.get("B"), params.get("tau")
        if (
            all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (b, tau))
            and tau > 0
            and b / tau > MAX_SYMBOLS
        ):
            raise HTTPException(422, f"B/tau must be <= {MAX_SYMBOLS} bins on this endpoint; increase tau")
    try:
        mech = cls(**params)
    except MechanismError as exc:
        raise HTTPException(422, str(exc)) from None
    if len(mech.message_epsilons) > MAX_MESSAGES:
        raise HTTPException(
            422,
            f"this configuration sends {len(mech.message_epsilons)} messages per report; "
            f"at most {MAX_MESSAGES} on this endpoint — lower m·s (or d for user_mean)",
        )
    return mech


def _count_numbers(obj: Any, limit: int) -> int:
    """Numbers in a nested list, stopping early past ``limit``."""
    total = 0
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, (list, tuple)):
            stack.extend(o)
        elif isinstance(o, dict):
            stack.extend(o.values())
        else:
            total += 1
        if total > limit:
            break
    return total


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def _finite(x: Any) -> bool:
    arr = np.asarray(x, dtype=np.float64)
    return bool(np.all(np.isfinite(arr)))


def _as_array_input(inputs: list[Any]) -> Any:
    """A rectangular list becomes an array; ragged lists (users' datasets of different sizes) stay lists."""
    try:
        arr = np.asarray(inputs)
    except ValueError:
        return inputs
    if arr.dtype == object:
        return inputs
    return arr


def _run(fn, *args):
    try:
        return fn(*args)
    except MechanismError as exc:
        raise HTTPException(422, str(exc)) from None
    except (TypeError, ValueError, IndexError) as exc:  # odd JSON the validators did not anticipate
        raise HTTPException(
            422,
            f"could not interpret the request's arrays ({exc}); send what the "
            "mechanism documents (see GET /v1/mechanisms and the examples)",
        ) from None


def _describe(mech) -> dict:
    out = mech.describe()
    size = mech.output_alphabet_size
    out["output_alphabet_log2"] = None if size is None else float(_log2_int(size))
    if size is not None and size > 2**53:
        out["output_alphabet_size"] = None
    out["kind"] = mech.kind
    return out


def _log2_int(v: int) -> float:
    b = v.bit_length()
    if b <= 1000:
        return math.log2(v)
    return (b - 53) + math.log2(v >> (b - 53))


# ----------------------------------------------------------------------------------------------------
# Endpoints
# ----------------------------------------------------------------------------------------------------

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
async def catalog() -> dict:
    return {"mechanisms": mech_pkg.available(), "note": SIMULATION_NOTE}


def _parameters(name: str, req: ParametersRequest) -> dict:
    params = dict(req.params)
    mech = None
    if req.calibrate is not None:
        acc = req.accounting
        kind = _mechanism_class(name).kind
        knobs = mech_pkg.calibration_probe(name)
        for knob in knobs:
            if knob in params:
                raise HTTPException(
                    422, f"leave '{knob}' out of params when calibrating: it is what is solved for"
                )
        if kind == "local" and acc is None:
            raise HTTPException(422, "calibrating a local mechanism needs 'accounting' with the population n")
        _build(name, mech_pkg.probe_params(name, params, None if acc is None else acc.n))  # validate first
        try:
            mech = mech_pkg.calibrate(
                name,
                epsilon=req.calibrate.epsilon,
                delta=req.calibrate.delta,
                n=None if acc is None else acc.n,
                k=None if acc is None else acc.k,
                count=1 if acc is None else acc.count,
                deadline=time.monotonic() + _time_limit(),
                mechanism_params=params,
            )
        except CalibrationTimeout as exc:
            raise HTTPException(400, str(exc)) from None
        except MechanismError as exc:
            raise HTTPException(422, str(exc)) from None
    else:
        mech = _build(name, params)
    out = _describe(mech)
    out["mse_per_client"] = float(mech.mse(n=1))
    acc = req.accounting
    delta = None
    if acc is not None:
        out["mse"] = float(mech.mse(n=acc.n))
        out["events"] = _run(mech.events, acc.n, acc.k, acc.count)
        delta = acc.delta
    elif mech.kind == "central":
        out["events"] = mech.events(count=1)
    if req.calibrate is not None:
        delta = req.calibrate.delta
        if out.get("events") is None:
            out["events"] = mech.events(count=1)
    if delta is not None and out.get("events"):
        import accountant

        eps, order = accountant.epsilon(out["events"], delta)
        out.update(
            {
                "epsilon": float(eps) if math.isfinite(eps) else None,
                "delta": delta,
                "order": float(order) if order is not None and math.isfinite(order) else None,
            }
        )
    return out


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
        "above it; `422` when no value can, `400` when the search needs more than the service's compute time "
        "limit (retrying continues from the cached curves)."
    ),
    responses=_errors(400, 404, 413, 422),
)
async def parameters(name: str = NAME, req: ParametersRequest = Body(...)) -> dict:
    return await _in_thread(_parameters, name, req)


def _randomize(name: str, req: RandomizeRequest) -> dict:
    mech = _build(name, req.params)
    if _count_numbers(req.inputs, MAX_INPUT_NUMBERS) > MAX_INPUT_NUMBERS:
        raise HTTPException(
            422, f"inputs hold more than {MAX_INPUT_NUMBERS:,} numbers; send fewer clients per request"
        )
    n_clients = len(req.inputs)
    n_msgs = max(1, len(mech.message_epsilons))
    if n_clients * 2 * n_msgs > MAX_OUTPUT_NUMBERS:
        raise HTTPException(
            422,
            f"{n_clients} clients × {n_msgs} messages is too many reports for one response; "
            f"send at most {MAX_OUTPUT_NUMBERS // (2 * n_msgs):,} clients",
        )
    seed = req.seed if req.seed is not None else secrets.randbits(63)
    rng = np.random.default_rng(seed)
    x = _as_array_input(req.inputs)
    if isinstance(x, np.ndarray) and x.dtype.kind not in "biuf":
        raise HTTPException(422, "inputs must be numbers (bits, symbols, values, vectors or users' datasets)")
    reports = _run(mech.randomize, x, rng)
    reports = _jsonable(reports)
    if not _finite_tree(reports):  # pragma: no cover - guarded by input validation
        raise HTTPException(422, "inputs produced non-finite reports; send finite numbers")
    return {"name": name, "seed": seed, "clients": n_clients, "reports": reports, "note": SIMULATION_NOTE}


def _finite_tree(v: Any) -> bool:
    if isinstance(v, dict):
        return all(_finite_tree(x) for x in v.values())
    if isinstance(v, list):
        try:
            return _finite(v)
        except (TypeError, ValueError):
            return all(_finite_tree(x) for x in v)
    if isinstance(v, float):
        return math.isfinite(v)
    return True


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
    responses=_errors(404, 413, 422),
)
async def randomize(name: str = NAME, req: RandomizeRequest = Body(...)) -> dict:
    return await _in_thread(_randomize, name, req)


def _estimate(name: str, req: EstimateRequest) -> dict:
    mech = _build(name, req.params)
    if _count_numbers(req.reports, MAX_OUTPUT_NUMBERS) > MAX_OUTPUT_NUMBERS:
        raise HTTPException(422, f"reports hold more than {MAX_OUTPUT_NUMBERS:,} numbers; aggregate in parts")
    reports = req.reports
    if isinstance(reports, dict):
        reports = {
            k: (_as_array_input(v) if isinstance(v, list) and k != "range" else v) for k, v in reports.items()
        }
        if isinstance(req.reports.get("range"), dict):
            reports["range"] = {
                k: _as_array_input(v) if isinstance(v, list) else v for k, v in req.reports["range"].items()
            }
        if isinstance(req.reports.get("mean"), dict):
            reports["mean"] = {
                k: _as_array_input(v) if isinstance(v, list) else v for k, v in req.reports["mean"].items()
            }
    elif isinstance(reports, list):
        reports = _as_array_input(reports)
    else:
        raise HTTPException(422, "reports must be a list or an object of lists, as returned by randomize")
    _check_numeric(reports)
    est = _run(mech.estimate, reports)
    est = _jsonable(est)
    n = _report_count(mech, reports)
    if not _finite_tree(est if isinstance(est, list) else [est]):
        raise HTTPException(422, "the reports do not determine a finite estimate; check them")
    out: dict[str, Any] = {"name": name, "reports": n, "estimate": est}
    try:
        out["mse"] = float(mech.mse(n=n)) if n else None
    except MechanismError:
        out["mse"] = None
    if name == "user_range":
        out["interval"] = list(_run(mech.interval, reports))
    return out


def _check_numeric(reports: Any) -> None:
    vals = reports.values() if isinstance(reports, dict) else [reports]
    for v in vals:
        if isinstance(v, dict):
            _check_numeric(v)
        elif isinstance(v, np.ndarray) and v.dtype.kind not in "biuf":
            raise HTTPException(422, "reports must contain numbers only, as returned by randomize")
        elif isinstance(v, list):
            raise HTTPException(
                422, "report arrays must be rectangular lists of numbers, as returned by randomize"
            )


def _report_count(mech, reports: Any) -> int:
    if isinstance(reports, dict):
        if "n" in reports and mech.kind == "central":
            return int(reports["n"])
        if "mean" in reports:
            return _report_count(mech, reports["mean"])
        first = next(iter(reports.values()))
        return int(np.shape(first)[0]) if np.ndim(first) else 1
    return int(np.shape(reports)[0]) if np.ndim(reports) else 1


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
    responses=_errors(404, 413, 422),
)
async def estimate(name: str = NAME, req: EstimateRequest = Body(...)) -> dict:
    return await _in_thread(_estimate, name, req)
