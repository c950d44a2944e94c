"""Local randomizers, their server-side estimators, and the accountant events they cost.

What a client sends and what the ledger charges are the same thing: every mechanism here exposes

- ``epsilon0`` — the exact ε0 of one whole report (pure ε0-LDP; for multi-message reports the sum of
  ``message_epsilons``, one per separately shuffled message);
- ``randomize(x, rng)`` — the client side, vectorised over a batch of clients, all randomness drawn from
  the injected ``numpy.random.Generator``;
- ``estimate(reports)`` — the server's unbiased aggregate of the (shuffled) reports;
- ``mse(n=None, x=None)`` — the closed-form mean squared error (exact for given inputs ``x``; without
  them, the supremum over the input domain for ``n`` clients);
- ``bits_per_report``, ``output_alphabet_size`` (``None`` where not meaningful);
- ``events(n, k=None, count=1)`` — the list of api.md accountant events one use costs (``count`` rounds,
  ``n`` users, ``k`` sampled per round when given);
- ``internals()`` — the calibrated internals (flip probabilities, budget split, radii …).

Usage::

    import numpy as np, mechanisms
    mech = mechanisms.get("kary_rr", epsilon0=1.0, k=8)
    reports = mech.randomize(np.array([0, 3, 3, 7]), np.random.default_rng(0))
    freqs = mech.estimate(reports)
    mech.events(n=10_000, count=100)  # [{"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100}]

``available()`` lists the catalog; ``calibrate(...)`` picks ε0 (or the central noise) so that the composed
accounting of the mechanism meets an (ε, δ) target, using the ``accountant`` package.
"""

from __future__ import annotations

import math
import time
from typing import Any

from accountant import epsilon_guarantee
from accountant.calibration import Domain, find_crossing

from ._base import (
    EPS0_MAX,
    CalibrationTimeout,
    InputError,
    Mechanism,
    MechanismError,
    ParameterError,
    UnknownMechanismError,
)
from ._central import CentralMechanism
from .binary import BinaryRR, BinaryVector, KaryRR
from .continuous import GaussianCentral, LaplaceCentral, LaplaceMean
from .hadamard_response import HadamardResponse
from .outlier_removal import OutlierRemovalMean
from .private_range import PrivateRange
from .user_level import UserMean, UserRange
from .vectors import L1Ball, L2Ball, LinfBox
from .winsorized import WinsorizedMean, tau_bounded, tau_subgaussian, winsorized_user_mean
from .winsorized_sgd import WinsorizedSGD

__all__ = [
    "CalibrationTimeout",
    "CentralMechanism",
    "InputError",
    "Mechanism",
    "MechanismError",
    "ParameterError",
    "UnknownMechanismError",
    "available",
    "calibrate",
    "calibration_probe",
    "probe_params",
    "get",
    "names",
    "tau_bounded",
    "tau_subgaussian",
    "winsorized_user_mean",
]

_REGISTRY: dict[str, type[Mechanism]] = {
    cls.name: cls
    for cls in (
        BinaryRR,
        KaryRR,
        BinaryVector,
        L1Ball,
        LinfBox,
        L2Ball,
        HadamardResponse,
        UserRange,
        UserMean,
        LaplaceMean,
        GaussianCentral,
        LaplaceCentral,
        PrivateRange,
        WinsorizedMean,
        OutlierRemovalMean,
        WinsorizedSGD,
    )
}


def names() -> list[str]:
    """Registered mechanism names, in catalog order."""
    return list(_REGISTRY)


def mechanism_class(name: str) -> type[Mechanism]:
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownMechanismError(
            f"unknown mechanism {name!r}; available: {', '.join(_REGISTRY)}"
        ) from None


def get(name: str, **params: Any) -> Mechanism:
    """A mechanism calibrated from its parameters (e.g. ``get("linf", epsilon0=2.0, d=1024, m=3, s=4)``).

    Raises ``UnknownMechanismError`` (a ``KeyError`` and ``ValueError``) for an unknown name and
    ``ParameterError`` (a ``ValueError``) naming the parameter to change.
    """
    return mechanism_class(name)(**params)


def available() -> list[dict]:
    """The catalog: one dict per mechanism with name, description, parameters (name → type, description,
    default, required, bounds), output ("discrete"/"continuous"), kind ("local"/"central") and source."""
    return [cls.catalog_entry() for cls in _REGISTRY.values()]


# ------------------------------------------------------------------------------------------------------
# Calibration against the accountant
# ------------------------------------------------------------------------------------------------------

_CENTRAL_KNOB = {"gaussian": "noise_multiplier", "laplace": "scale"}


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
    """ε0 grows the loss (the feasible values lie below the crossing); a noise scale shrinks it."""
    if knob == "epsilon0":
        return Domain(lo=1e-6, hi=EPS0_MAX, integer=False, increasing=True, rtol=rel_tol, start=1.0)
    lo = 1e-3 if knob == "noise_multiplier" else 1.0 / EPS0_MAX
    return Domain(lo=lo, hi=1e6, integer=False, increasing=False, rtol=rel_tol, start=1.0)


def _check_target(epsilon: float, delta: float) -> None:
    if isinstance(epsilon, bool) or not (
        isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0
    ):
        raise ParameterError(f"target epsilon must be a finite number > 0 (got {epsilon!r})")
    if isinstance(delta, bool) or not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ParameterError(f"target delta must be in (0, 1) (got {delta!r})")


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
    _check_target(epsilon, delta)
    if issubclass(cls, CentralMechanism):  # the central user-level mechanisms calibrate themselves
        if k is not None:
            raise ParameterError(f"{name} is a central release on all users: leave k out")
        if deadline is not None and time.monotonic() > deadline:
            raise CalibrationTimeout(f"calibrating {name} ran out of time")
        if n is not None and "n" in cls.PARAMETERS and "n" not in params:
            params["n"] = n  # the population of the accounting is the mechanism's n
        return cls.calibrated(
            epsilon, delta, mode=params.pop("mode", "tight"), count=count, rel_tol=rel_tol, **params
        )
    if cls.kind == "local" and n is None:
        raise ParameterError("calibrating a local mechanism needs the population n")
    knob = _CENTRAL_KNOB.get(name, "epsilon0")
    if knob in params:
        raise ParameterError(f"leave '{knob}' out when calibrating: it is what is solved for")

    def make(v: float) -> Mechanism:
        return cls(**{**params, knob: v})

    make(1.0).events(n=n, k=k, count=count)  # validate the other parameters and the population first

    def eps(v: float) -> float:
        if deadline is not None and time.monotonic() > deadline:
            raise CalibrationTimeout(
                f"calibrating {name} needs more computation than allowed (the accountant's curves computed "
                "so far are cached: retrying continues from them); reduce the messages per report or the rounds"
            )
        return epsilon_guarantee(make(v).events(n=n, k=k, count=count), delta).epsilon

    dom = _knob_domain(knob, rel_tol)
    found = find_crossing(eps, dom, epsilon, start=1.0)
    if found.good is None:
        end = dom.feasible_end
        raise ParameterError(
            f"even {knob} = {end:g} does not meet epsilon = {epsilon} at delta = {delta} (n = {n}, k = {k}, "
            f"count = {count}); raise the target, add users or reduce the rounds"
        )
    return make(found.good)
