"""Calibration of a catalog mechanism against an (ε, δ) target, using the ``accountant`` package.

For a mechanism whose privacy knob x is ε0 (local randomizers) or a noise scale (``gaussian``:
``noise_multiplier``, ``laplace``: ``scale``), the composed accounting
ε(x) = ``accountant.epsilon_guarantee(mech(x).events(n, k, count), δ).epsilon`` is monotone in x
(non-decreasing in ε0, non-increasing in a noise scale), so the calibrated knob is the feasible end
of the crossing ε(x) = target found by ``accountant.calibration.find_crossing`` (bracketing, then
Brent's method and bisection).

Soundness: the knob returned is ``find_crossing``'s ``good`` point, one at which ε(x) was evaluated
and found ≤ target; the returned mechanism is built from that same x and the same parameters, so
its events — and the accountant's ε for them — are exactly the evaluated ones. The guarantee
therefore holds whether or not ε(x) is monotone; monotonicity only makes x the least private
feasible value up to ``rel_tol``. The central user-level mechanisms (:class:`CentralMechanism`)
calibrate themselves (``CentralMechanism.calibrated``), with the same argument.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from accountant import EVENT_TYPES, epsilon_guarantee
from accountant.calibration import Domain, find_crossing

from ._base import EPS0_MAX, CalibrationTimeout, Mechanism, ParameterError
from ._central import CentralMechanism, check_target
from .catalog import mechanism_class

#: the knob of the central noise-adding mechanisms (every other non-``CentralMechanism`` one solves ε0)
_CENTRAL_KNOB = {"gaussian": "noise_multiplier", "laplace": "scale"}
#: the accountant event type whose declared field each knob sets (its ``Calibrate`` marker gives the direction)
_KNOB_EVENT = {"noise_multiplier": "gaussian", "scale": "laplace", "epsilon0": "shuffle"}


def probe_params(name: str, params: dict[str, Any], n: int | None = None) -> dict[str, Any]:
    """``params`` completed with :func:`calibration_probe`'s placeholders (and the accounting's
    population ``n`` for a mechanism that takes one), to validate them before a calibration."""
    out = {**params, **calibration_probe(name)}
    if n is not None and "n" in mechanism_class(name).PARAMETERS and "n" not in out:
        out["n"] = n
    return out


def calibration_probe(name: str) -> dict[str, float]:
    """The parameters a calibration of ``name`` solves for, each with a valid placeholder value (to
    validate the other parameters before searching): ``epsilon0`` for local mechanisms, the noise
    for ``gaussian``/``laplace``, and each central user-level mechanism's own knobs."""
    cls = mechanism_class(name)
    if issubclass(cls, CentralMechanism):
        knobs = {cls.KNOB: 1.0}
        if name == "outlier_removal_mean":
            knobs["epsilon_gate"] = 1.0
        return knobs
    return {_CENTRAL_KNOB.get(name, "epsilon0"): 1.0}


def _knob_domain(knob: str, rel_tol: float) -> Domain:
    """How ε moves with the knob — ε0 grows the loss, a noise scale shrinks it — and the search's
    coordinate, from the accountant's declaration of the event field the knob sets (its
    :class:`accountant.events.Calibrate` marker); the limits are the mechanism's own."""
    marker = EVENT_TYPES[_KNOB_EVENT[knob]].specs()[knob].calibrate
    assert marker is not None  # declared calibratable (tests/mechanisms)
    if knob == "epsilon0":
        lo, hi = 1e-6, EPS0_MAX
    else:
        lo, hi = (1e-3 if knob == "noise_multiplier" else 1.0 / EPS0_MAX), 1e6
    return Domain(
        lo=lo,
        hi=hi,
        integer=False,
        increasing=marker.increasing,
        coord=marker.coord,
        slope=marker.slope,
        rtol=rel_tol,
        start=1.0,
    )


@dataclass(frozen=True)
class _Request:
    """One calibration: the mechanism's name, the (ε, δ) target and the accounting it is charged under
    (``n`` users, ``k`` sampled per round, ``count`` rounds); ``deadline`` a ``time.monotonic()`` instant."""

    name: str
    epsilon: float
    delta: float
    n: int | None
    k: int | None
    count: int
    rel_tol: float
    deadline: float | None

    def expired(self) -> bool:
        """True when the deadline has passed."""
        return self.deadline is not None and time.monotonic() > self.deadline


def calibrate(
    name: str,
    *,
    epsilon: float,
    delta: float,
    n: int | None = None,
    k: int | None = None,
    count: int = 1,
    rel_tol: float = 1e-4,
    deadline: float | None = None,
    mechanism_params: dict[str, Any] | None = None,
    **params: Any,
) -> Mechanism:
    """The mechanism ``name`` whose composed accounting over ``count`` rounds meets (``epsilon``, ``delta``).

    Local mechanisms: the largest ε0 (of the whole report; multi-message splits are kept) such that
    ``accountant.epsilon(mech.events(n, k, count), delta)`` ≤ ``epsilon``. Central ``gaussian``/``laplace``:
    the smallest ``noise_multiplier``/``scale``. The returned mechanism's guarantee is never above the
    target (the search keeps the feasible end). Raises ``ParameterError`` when no value meets it, and
    ``CalibrationTimeout`` when ``deadline`` (a ``time.monotonic()`` instant) passes first.

    ``n``/``k``/``count`` are the population, the users sampled per round and the rounds; a mechanism
    parameter that shares one of these names (the alphabet size ``k`` of ``kary_rr`` and
    ``hadamard_response``) goes in ``mechanism_params`` (merged with the other keyword parameters).
    """
    params = {**(mechanism_params or {}), **params}
    cls = mechanism_class(name)
    check_target(epsilon, delta)
    req = _Request(name, epsilon, delta, n, k, count, rel_tol, deadline)
    if issubclass(cls, CentralMechanism):  # the central user-level mechanisms calibrate themselves
        return _calibrate_central(cls, req, params)
    return _calibrate_knob(cls, req, params)


def _calibrate_central(cls: type[CentralMechanism], req: _Request, params: dict[str, Any]) -> Mechanism:
    """``cls.calibrated`` at the target; the accounting's population is the mechanism's ``n``."""
    if req.k is not None:
        raise ParameterError(f"{req.name} is a central release on all users: leave k out")
    if req.expired():
        raise CalibrationTimeout(f"calibrating {req.name} ran out of time")
    if req.n is not None and "n" in cls.PARAMETERS and "n" not in params:
        params["n"] = req.n  # the population of the accounting is the mechanism's n
    return cls.calibrated(
        req.epsilon,
        req.delta,
        mode=params.pop("mode", "tight"),
        count=req.count,
        rel_tol=req.rel_tol,
        **params,
    )


def _calibrate_knob(cls: type[Mechanism], req: _Request, params: dict[str, Any]) -> Mechanism:
    """The feasible end of the crossing of ε(knob) with the target (module docstring)."""
    if cls.kind == "local" and req.n is None:
        raise ParameterError("calibrating a local mechanism needs the population n")
    knob = _CENTRAL_KNOB.get(req.name, "epsilon0")
    if knob in params:
        raise ParameterError(f"leave '{knob}' out when calibrating: it is what is solved for")

    def make(v: float) -> Mechanism:
        """The mechanism with the knob at ``v`` and the other parameters as given."""
        return cls(**{**params, knob: v})

    # validate the other parameters and the population first
    make(1.0).events(n=req.n, k=req.k, count=req.count)

    def eps(v: float) -> float:
        """Accounted ε at δ of the mechanism with the knob at ``v`` (``CalibrationTimeout`` past the deadline)."""
        if req.expired():
            raise CalibrationTimeout(
                f"calibrating {req.name} needs more computation than allowed (the accountant's curves computed "
                "so far are cached: retrying continues from them); reduce the messages per report or the rounds"
            )
        return epsilon_guarantee(make(v).events(n=req.n, k=req.k, count=req.count), req.delta).epsilon

    dom = _knob_domain(knob, req.rel_tol)
    found = find_crossing(eps, dom, req.epsilon, start=1.0)
    if found.good is None:
        end = dom.feasible_end
        raise ParameterError(
            f"even {knob} = {end:g} does not meet epsilon = {req.epsilon} at delta = {req.delta} (n = {req.n}, "
            f"k = {req.k}, count = {req.count}); raise the target, add users or reduce the rounds"
        )
    return make(found.good)


__all__ = ["calibrate", "calibration_probe", "probe_params"]
