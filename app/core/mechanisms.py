"""What the mechanism endpoints compute: calibrated parameters and accounting, and — for simulation
and testing only — randomize / estimate. Pure functions of the validated requests
(:mod:`app.schemas.mechanisms`), run in a worker thread under the service's admission control.

Errors are the ``mechanisms`` package's own (``UnknownMechanismError`` → 404, ``MechanismError``
→ 422, ``CalibrationTimeout`` → 400) and :class:`InvalidMechanismRequest` (422) for what this
endpoint refuses on top (sizes a server should not hold, arrays it cannot interpret); the HTTP
status of each is decided in :mod:`app.main`.
"""

from __future__ import annotations

import math
import secrets
from typing import Any, TypeGuard

import numpy as np

import accountant
import mechanisms as mech_pkg
from app.core.admission import current_deadline
from app.schemas.mechanisms import (
    MAX_DIMENSION,
    MAX_INPUT_NUMBERS,
    MAX_MESSAGES,
    MAX_OUTPUT_NUMBERS,
    MAX_SYMBOLS,
    SIMULATION_NOTE,
    EstimateRequest,
    ParametersRequest,
    RandomizeRequest,
)


class InvalidMechanismRequest(ValueError):
    """A request this endpoint refuses (the sentence says what to change)."""


def catalog() -> dict[str, Any]:
    return {"mechanisms": mech_pkg.available(), "note": SIMULATION_NOTE}


# ---------------------------------------------------------------------------------------------- building
def _is_number(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_params(params: dict[str, Any]) -> None:
    """Sizes the endpoint refuses before anything is built (the package's own bounds are wider)."""
    for key in ("d", "k"):
        v = params.get(key)
        if _is_number(v) and v > MAX_DIMENSION:
            raise InvalidMechanismRequest(
                f"parameter '{key}' must be <= {MAX_DIMENSION} on this endpoint (got {v})"
            )
    b, tau = params.get("B"), params.get("tau")
    if _is_number(b) and _is_number(tau) and tau > 0 and b / tau > MAX_SYMBOLS:
        raise InvalidMechanismRequest(f"B/tau must be <= {MAX_SYMBOLS} bins on this endpoint; increase tau")


def _check_messages(mech: mech_pkg.Mechanism) -> mech_pkg.Mechanism:
    if len(mech.message_epsilons) > MAX_MESSAGES:
        raise InvalidMechanismRequest(
            f"this configuration sends {len(mech.message_epsilons)} messages per report; "
            f"at most {MAX_MESSAGES} on this endpoint — lower m·s (or d for user_mean)"
        )
    return mech


def build(name: str, params: dict[str, Any]) -> mech_pkg.Mechanism:
    """The mechanism ``name`` with ``params`` (404 if unknown, 422 if invalid or too large here)."""
    mech_pkg.mechanism_class(name)  # UnknownMechanismError first, whatever the parameters
    _check_params(params)
    return _check_messages(mech_pkg.get(name, **params))


def _calibrated(name: str, req: ParametersRequest) -> mech_pkg.Mechanism | mech_pkg.AccountingCalibration:
    """``mechanisms.calibrate`` for the request: the knob (a :class:`Mechanism`), or with
    ``solve_for`` ``count``/``n``/``k`` that quantity of the accounting (an ``AccountingCalibration``)."""
    assert req.calibrate is not None
    cal = req.calibrate
    kind = mech_pkg.mechanism_class(name).kind
    acc = req.accounting
    solving_knob = cal.solve_for not in mech_pkg.ACCOUNTING_FIELDS
    if kind == "local" and acc is None and cal.solve_for != "n":
        raise InvalidMechanismRequest(
            "calibrating a local mechanism needs 'accounting' with the population n"
        )
    _check_params(req.params)
    for knob in mech_pkg.calibration_probe(name) if solving_knob else ():
        if knob in req.params:
            raise InvalidMechanismRequest(
                f"leave '{knob}' out of params when calibrating: it is what is solved for"
            )
    n = None if acc is None else acc.n
    # validate the other parameters and the size bounds before searching (the knob at a placeholder)
    build(name, mech_pkg.probe_params(name, dict(req.params), n))
    out = mech_pkg.calibrate(
        name,
        epsilon=cal.epsilon,
        delta=cal.delta,
        n=n,
        k=None if acc is None else acc.k,
        count=acc.count if acc is not None and "count" in acc.model_fields_set else None,
        solve_for=cal.solve_for,
        deadline=current_deadline(),
        mechanism_params=dict(req.params),
    )
    _check_messages(out if isinstance(out, mech_pkg.Mechanism) else out.mechanism)
    return out


# ---------------------------------------------------------------------------------------------- parameters
def _describe(mech: mech_pkg.Mechanism) -> dict[str, Any]:
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


def parameters(name: str, req: ParametersRequest) -> dict[str, Any]:
    """``/v1/mechanisms/{name}/parameters``: internals, MSE, events and (with a δ) the composed ε."""
    solved = _calibrated(name, req) if req.calibrate is not None else build(name, dict(req.params))
    mech = solved if isinstance(solved, mech_pkg.Mechanism) else solved.mechanism
    out = _describe(mech)
    out["mse_per_client"] = float(mech.mse(n=1))
    acc = req.accounting
    delta = None if acc is None else acc.delta
    population = None if acc is None else (acc.n, acc.k, acc.count)
    if isinstance(solved, mech_pkg.AccountingCalibration):  # the events under the accounting found
        population = (solved.n, solved.k, solved.count)
        out.update(solve_for=solved.solve_for, value=solved.value, at_limit=solved.at_limit)
    elif req.calibrate is not None:
        knob = mech_pkg.knob_of(name)
        out.update(solve_for=knob, value=mech.params[knob])
    events: list[accountant.Event] | None = None
    if population is not None:
        n, k, count = population
        if n is not None:
            out["mse"] = float(mech.mse(n=n))
        events = _interpreting(mech.events, n, k, count)
    elif mech.kind == "central" or req.calibrate is not None:
        events = mech.events(None, count=1)  # central: no population needed
    if events is not None:
        out["events"] = [e.to_dict() for e in events]  # the HTTP edge: events as their api.md JSON
    if req.calibrate is not None:
        delta = req.calibrate.delta
    if delta is not None and events:
        out.update(_composed(events, delta))
    return out


def _composed(events: list[accountant.Event], delta: float) -> dict[str, Any]:
    """ε of ``events`` composed, at ``delta``, by the RDP route — what the ledger charges for them and
    what :func:`mechanisms.calibrate` solves against — and the order that gave it (None where not
    finite). ``/v1/epsilon`` answers the same events with the best of every route."""
    eps, order = accountant.epsilon(events, delta, accounting="rdp")
    return {
        "epsilon": float(eps) if math.isfinite(eps) else None,
        "delta": delta,
        "order": float(order) if order is not None and math.isfinite(order) else None,
    }


# ---------------------------------------------------------------------------------------------- simulation
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


def _as_array(inputs: Any) -> Any:
    """A rectangular list becomes an array; ragged lists (users' datasets of different sizes) stay lists."""
    try:
        arr = np.asarray(inputs)
    except ValueError:
        return inputs
    if arr.dtype == object:
        return inputs
    return arr


def _interpreting(fn: Any, *args: Any) -> Any:
    """Run a mechanism method on request data: data it cannot interpret is a 422 saying so."""
    try:
        return fn(*args)
    except (mech_pkg.MechanismError, accountant.AccountantError):
        raise
    except (TypeError, ValueError, IndexError) as exc:  # odd JSON the validators did not anticipate
        raise InvalidMechanismRequest(
            f"could not interpret the request's arrays ({exc}); send what the "
            "mechanism documents (see GET /v1/mechanisms and the examples)"
        ) from None


def randomize(name: str, req: RandomizeRequest) -> dict[str, Any]:
    """``/v1/mechanisms/{name}/randomize``: the reference client's reports for ``inputs``."""
    mech = build(name, req.params)
    if _count_numbers(req.inputs, MAX_INPUT_NUMBERS) > MAX_INPUT_NUMBERS:
        raise InvalidMechanismRequest(
            f"inputs hold more than {MAX_INPUT_NUMBERS:,} numbers; send fewer clients per request"
        )
    n_clients = len(req.inputs)
    n_msgs = max(1, len(mech.message_epsilons))
    if n_clients * 2 * n_msgs > MAX_OUTPUT_NUMBERS:
        raise InvalidMechanismRequest(
            f"{n_clients} clients × {n_msgs} messages is too many reports for one response; "
            f"send at most {MAX_OUTPUT_NUMBERS // (2 * n_msgs):,} clients"
        )
    seed = req.seed if req.seed is not None else secrets.randbits(63)
    x = _as_array(req.inputs)
    if isinstance(x, np.ndarray) and x.dtype.kind not in "biuf":
        raise InvalidMechanismRequest(
            "inputs must be numbers (bits, symbols, values, vectors or users' datasets)"
        )
    reports = _interpreting(mech.randomize, x, np.random.default_rng(seed))
    return {"name": name, "seed": seed, "clients": n_clients, "reports": reports, "note": SIMULATION_NOTE}


def _reports_as_arrays(reports: Any) -> Any:
    """Lists → arrays, one level into the objects ``randomize`` returns (``range``/``mean`` parts)."""
    if isinstance(reports, list):
        return _as_array(reports)
    if not isinstance(reports, dict):
        raise InvalidMechanismRequest(
            "reports must be a list or an object of lists, as returned by randomize"
        )
    out: dict[str, Any] = {}
    for k, v in reports.items():
        if isinstance(v, dict):
            out[k] = {kk: _as_array(vv) if isinstance(vv, list) else vv for kk, vv in v.items()}
        elif isinstance(v, list) and k != "range":
            out[k] = _as_array(v)
        else:
            out[k] = v
    return out


def _check_numeric(reports: Any) -> None:
    vals = reports.values() if isinstance(reports, dict) else [reports]
    for v in vals:
        if isinstance(v, dict):
            _check_numeric(v)
        elif isinstance(v, np.ndarray) and v.dtype.kind not in "biuf":
            raise InvalidMechanismRequest("reports must contain numbers only, as returned by randomize")
        elif isinstance(v, list):
            raise InvalidMechanismRequest(
                "report arrays must be rectangular lists of numbers, as returned by randomize"
            )


def _report_count(mech: mech_pkg.Mechanism, reports: Any) -> int:
    if isinstance(reports, dict):
        if "n" in reports and mech.kind == "central":
            return int(reports["n"])
        if "mean" in reports:
            return _report_count(mech, reports["mean"])
        first = next(iter(reports.values()))
        return int(np.shape(first)[0]) if np.ndim(first) else 1
    return int(np.shape(reports)[0]) if np.ndim(reports) else 1


def estimate(name: str, req: EstimateRequest) -> dict[str, Any]:
    """``/v1/mechanisms/{name}/estimate``: the server's unbiased aggregate of the reports."""
    mech = build(name, req.params)
    if _count_numbers(req.reports, MAX_OUTPUT_NUMBERS) > MAX_OUTPUT_NUMBERS:
        raise InvalidMechanismRequest(
            f"reports hold more than {MAX_OUTPUT_NUMBERS:,} numbers; aggregate in parts"
        )
    reports = _reports_as_arrays(req.reports)
    _check_numeric(reports)
    est = _interpreting(mech.estimate, reports)
    if not np.all(np.isfinite(np.asarray(_floats(est), dtype=float))):
        raise InvalidMechanismRequest("the reports do not determine a finite estimate; check them")
    n = _report_count(mech, reports)
    out: dict[str, Any] = {"name": name, "reports": n, "estimate": est}
    try:
        out["mse"] = float(mech.mse(n=n)) if n else None
    except mech_pkg.MechanismError:
        out["mse"] = None
    interval = getattr(mech, "interval", None)  # mechanisms that broadcast an interval (user_range)
    if callable(interval):
        out["interval"] = [float(x) for x in _interpreting(interval, reports)]
    return out


def _floats(v: Any) -> list[float]:
    """Every number of a nested estimate, flattened."""
    if isinstance(v, dict):
        return [x for item in v.values() for x in _floats(item)]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _floats(item)]
    if isinstance(v, np.ndarray):
        flat: list[float] = v.astype(float).ravel().tolist()
        return flat
    return [float(v)]


def guarded(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, with ZeroDivisionError / OverflowError from degenerate but in-range numbers as a
    422 that says what to change."""
    try:
        return fn(*args)
    except ArithmeticError as exc:
        raise InvalidMechanismRequest(
            f"the parameters are beyond double precision ({type(exc).__name__}); use a larger epsilon0 (>= 1e-12 "
            "per message) or smaller radii, bounds, intervals and populations (<= 1e12)"
        ) from None
