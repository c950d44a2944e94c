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
from typing import Any

from ._base import (
    EPS0_MAX,
    InputError,
    Mechanism,
    MechanismError,
    ParameterError,
    UnknownMechanismError,
)
from .binary import BinaryRR, BinaryVector, KaryRR
from .continuous import GaussianCentral, LaplaceCentral, LaplaceMean
from .hadamard_response import HadamardResponse
from .user_level import UserMean, UserRange
from .vectors import L1Ball, L2Ball, LinfBox

__all__ = [
    "InputError",
    "Mechanism",
    "MechanismError",
    "ParameterError",
    "UnknownMechanismError",
    "available",
    "calibrate",
    "get",
    "names",
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


def _accountant_epsilon(events: list[dict], delta: float) -> float:
    try:
        import accountant  # imported lazily: the accountant core is a separate package
    except ImportError as exc:  # pragma: no cover - depends on the deployment
        raise RuntimeError("calibrate needs the 'accountant' package") from exc
    fn = getattr(accountant, "epsilon", None)
    if fn is None:  # pragma: no cover - only while the accountant core is being written
        raise RuntimeError("accountant.epsilon(events, delta) is not available yet")
    eps, _order = fn(events, delta)
    return float(eps)


def calibrate(
    name: str,
    *,
    epsilon: float,
    delta: float,
    n: int | None = None,
    k: int | None = None,
    count: int = 1,
    rel_tol: float = 1e-6,
    **params: Any,
) -> Mechanism:
    """The mechanism ``name`` whose composed accounting over ``count`` rounds meets (``epsilon``, ``delta``).

    Local mechanisms: the largest ε0 (of the whole report; multi-message splits are kept) such that
    ``accountant.epsilon(mech.events(n, k, count), delta)`` ≤ ``epsilon``. Central ``gaussian``/``laplace``:
    the smallest ``noise_multiplier``/``scale``. The returned mechanism's guarantee is never above the
    target (bisection keeps the feasible end). Raises ``ParameterError`` when no value meets it.
    """
    cls = mechanism_class(name)
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
        raise ParameterError(f"target epsilon must be a finite number > 0 (got {epsilon!r})")
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ParameterError(f"target delta must be in (0, 1) (got {delta!r})")
    if cls.kind == "local" and n is None:
        raise ParameterError("calibrating a local mechanism needs the population n")

    if name in _CENTRAL_KNOB:
        knob = _CENTRAL_KNOB[name]

        def make(v: float) -> Mechanism:
            return cls(**{**params, knob: v})

        def feasible(v: float) -> bool:
            return _accountant_epsilon(make(v).events(n=n, k=k, count=count), delta) <= epsilon

        lo, hi = (1e-3, 1e6) if knob == "noise_multiplier" else (1.0 / EPS0_MAX, 1e6)
        if feasible(lo):
            return make(lo)
        if not feasible(hi):
            raise ParameterError(f"no {knob} up to {hi:g} meets epsilon = {epsilon} at delta = {delta}; "
                                 "raise the target or reduce count")
        while hi / lo > 1.0 + rel_tol:  # invariant: hi feasible, lo not
            mid = math.sqrt(lo * hi)
            if feasible(mid):
                hi = mid
            else:
                lo = mid
        return make(hi)

    def make_local(e0: float) -> Mechanism:
        return cls(**{**params, "epsilon0": e0})

    def feasible_local(e0: float) -> bool:
        return _accountant_epsilon(make_local(e0).events(n=n, k=k, count=count), delta) <= epsilon

    lo, hi = 1e-6, EPS0_MAX
    if feasible_local(hi):
        return make_local(hi)
    if not feasible_local(lo):
        raise ParameterError(f"even epsilon0 = {lo:g} does not meet epsilon = {epsilon} at delta = {delta} "
                             f"for n = {n}, count = {count}; raise the target, add users or reduce rounds")
    while hi / lo > 1.0 + rel_tol:  # invariant: lo feasible, hi not
        mid = math.sqrt(lo * hi)
        if feasible_local(mid):
            lo = mid
        else:
            hi = mid
    return make_local(lo)
