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

``solve_for`` names what is solved for: the knob (the default, above), or a quantity of the
accounting with the mechanism fully specified by its parameters — ``count`` (the most rounds),
``n`` (the fewest users, k fixed) or ``k`` (the largest sample per round, n fixed), as
:func:`accountant.calibrate` solves them for one event. Here ε(x) is the same accounting of the
mechanism's whole list of events, x an integer on the domain the accountant declares for that field
of the events (:func:`accountant.calibration.field_domain`: its limits, k ≤ n ≤ 10¹², and the
direction — ε grows with the count and, mostly, with k, falls as n grows; ε need not be monotone in
k, and the domain says so), found by the same ``find_crossing``. Its final bracket is two adjacent
integers, both evaluated with ε(x) itself: the answer meets the target and one step further
(count + 1, n − 1, k + 1) misses — the verified crossing ``accountant.calibrate`` returns — unless
the answer is the end of the domain (``at_limit``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, overload

from accountant import EVENT_TYPES, AccountantError, Event, epsilon_guarantee
from accountant.calibration import Domain, event_fields, field_domain, find_crossing

from ._base import EPS0_MAX, CalibrationTimeout, Mechanism, ParameterError
from ._central import CentralMechanism, accounted_epsilon, check_target
from .catalog import mechanism_class

#: the knob of the central noise-adding mechanisms (every other non-``CentralMechanism`` one solves ε0)
_CENTRAL_KNOB = {"gaussian": "noise_multiplier", "laplace": "scale"}
#: the accountant event type whose declared field each knob sets (its ``Calibrate`` marker gives the direction)
_KNOB_EVENT = {"noise_multiplier": "gaussian", "scale": "laplace", "epsilon0": "shuffle"}
#: the quantities of the accounting ``solve_for`` may name (central mechanisms: ``count`` only)
AccountingField = Literal["count", "n", "k"]
ACCOUNTING_FIELDS: tuple[AccountingField, ...] = ("count", "n", "k")
#: every knob some mechanism solves for (the ``solve_for`` of a knob calibration)
Knob = Literal["epsilon0", "noise_multiplier", "scale", "epsilon", "sigma"]


def knob_of(name: str) -> str:
    """The parameter a calibration of ``name`` solves for by default: ε0 for local mechanisms, the
    noise for ``gaussian``/``laplace``, the ``KNOB`` of a central user-level mechanism."""
    cls = mechanism_class(name)
    if issubclass(cls, CentralMechanism):
        return cls.KNOB
    return _CENTRAL_KNOB.get(name, "epsilon0")


def solve_for_choices(name: str) -> tuple[str, ...]:
    """What ``calibrate(name, solve_for=…)`` accepts: the knob, then ``count`` — and for a local
    mechanism (shuffled over n users, k sampled per round) ``n`` and ``k``; the central mechanisms'
    events do not depend on n and take no sampling."""
    fields = ACCOUNTING_FIELDS if mechanism_class(name).kind == "local" else ("count",)
    return (knob_of(name), *fields)


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
    knobs = {knob_of(name): 1.0}
    if name == "outlier_removal_mean":
        knobs["epsilon_gate"] = 1.0
    return knobs


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
    count: int | None
    rel_tol: float
    deadline: float | None

    @property
    def rounds(self) -> int:
        """The rounds of the accounting (one when left out)."""
        return 1 if self.count is None else self.count

    def expired(self) -> bool:
        """True when the deadline has passed."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def check_time(self) -> None:
        """``CalibrationTimeout`` once the deadline has passed (called before each evaluation)."""
        if self.expired():
            raise CalibrationTimeout(
                f"calibrating {self.name} needs more computation than allowed (the accountant's curves computed "
                "so far are cached: retrying continues from them); reduce the messages per report or the rounds"
            )


@dataclass(frozen=True)
class AccountingCalibration:
    """The answer of :func:`calibrate` for ``solve_for`` ``"count"``, ``"n"`` or ``"k"``: the
    mechanism as given and the accounting that meets the target.

    ``value`` is the solved quantity (also in ``n``/``k``/``count``, the whole accounting at the
    answer); ``epsilon``/``order`` the guarantee of ``mechanism.events(n, k, count)`` recomputed at
    ``delta`` by ``accountant.epsilon_guarantee`` (never above ``target_epsilon``);
    ``direction`` ``"largest"`` (count, k) or ``"smallest"`` (n); ``at_limit`` True when the answer
    is the end of the field's domain (count = 10¹², k = n, n = k or 1), so that one step further
    was not tried.
    """

    mechanism: Mechanism
    solve_for: AccountingField
    value: int
    n: int | None
    k: int | None
    count: int
    epsilon: float
    delta: float
    order: float
    target_epsilon: float
    direction: Literal["largest", "smallest"]
    at_limit: bool = False

    def events(self) -> list[Event]:
        """The accountant events of the mechanism under the solved accounting."""
        return self.mechanism.events(n=self.n, k=self.k, count=self.count)


@overload
def calibrate(
    name: str,
    *,
    epsilon: float,
    delta: float,
    n: int | None = ...,
    k: int | None = ...,
    count: int | None = ...,
    solve_for: Knob | None = ...,
    rel_tol: float = ...,
    deadline: float | None = ...,
    mechanism_params: dict[str, Any] | None = ...,
    **params: Any,
) -> Mechanism: ...


@overload
def calibrate(
    name: str,
    *,
    epsilon: float,
    delta: float,
    n: int | None = ...,
    k: int | None = ...,
    count: int | None = ...,
    solve_for: AccountingField,
    rel_tol: float = ...,
    deadline: float | None = ...,
    mechanism_params: dict[str, Any] | None = ...,
    **params: Any,
) -> AccountingCalibration: ...


def calibrate(
    name: str,
    *,
    epsilon: float,
    delta: float,
    n: int | None = None,
    k: int | None = None,
    count: int | None = None,
    solve_for: str | None = None,
    rel_tol: float = 1e-4,
    deadline: float | None = None,
    mechanism_params: dict[str, Any] | None = None,
    **params: Any,
) -> Mechanism | AccountingCalibration:
    """The mechanism ``name`` whose composed accounting over ``count`` rounds meets (``epsilon``, ``delta``)
    — or, with ``solve_for`` ``"count"``/``"n"``/``"k"``, the accounting a given mechanism meets it under.

    ``solve_for`` None (the default) or the mechanism's knob (:func:`solve_for_choices` lists what
    ``name`` accepts) returns a :class:`Mechanism`: local mechanisms, the largest ε0 (of the whole
    report; multi-message splits are kept) such that ``accountant.epsilon(mech.events(n, k, count),
    delta)`` ≤ ``epsilon``; central ``gaussian``/``laplace``, the smallest ``noise_multiplier``/``scale``;
    the central user-level mechanisms, their own ``calibrated`` (tight mode unless ``mode`` is given).
    The returned mechanism's guarantee is never above the target (the search keeps the feasible end).

    ``solve_for`` ``"count"`` (the most rounds), ``"n"`` (the fewest users, ``k`` fixed when given) or
    ``"k"`` (the largest number of users sampled per round, ``n`` fixed; ε is not monotone in k
    everywhere, see :func:`accountant.calibrate`) returns an :class:`AccountingCalibration`: the
    mechanism is fully specified by its parameters (its knob included), the quantity solved for is
    left out of the arguments, and the answer is verified — it meets the target and one step further
    (count + 1, n − 1, k + 1) does not, unless ``at_limit``. Central mechanisms accept ``"count"``
    only (their events take neither a population nor a sample). A ``count`` left out is one round.

    Raises ``ParameterError`` for a ``solve_for`` ``name`` does not accept (naming the choices) and
    when no value meets the target, and ``CalibrationTimeout`` when ``deadline`` (a
    ``time.monotonic()`` instant) passes first.

    ``n``/``k``/``count`` are the population, the users sampled per round and the rounds; a mechanism
    parameter that shares one of these names or a target's (the alphabet size ``k`` of ``kary_rr``
    and ``hadamard_response``; the ``epsilon`` of a central user-level mechanism whose count is solved
    for) goes in ``mechanism_params`` (merged with the other keyword parameters).

    Example: how many rounds can binary randomized response at ε0 = 1 run over 10⁵ users within
    (1, 10⁻⁸)? ``calibrate("binary_rr", epsilon=1.0, delta=1e-8, n=10**5, solve_for="count",
    epsilon0=1.0)`` → ``AccountingCalibration(value=…, count=…, epsilon=… ≤ 1, …)``.
    """
    params = {**(mechanism_params or {}), **params}
    cls = mechanism_class(name)
    check_target(epsilon, delta)
    choices = solve_for_choices(name)
    if solve_for is not None and solve_for not in choices:
        why = ""
        if solve_for in ACCOUNTING_FIELDS:
            why = f" ({name} is a central release on all users: its events take neither a population nor a sample)"
        raise ParameterError(
            f"solve_for must be one of {list(choices)} for {name} (got {solve_for!r}): its knob "
            f"{choices[0]!r}, or {' / '.join(repr(c) for c in choices[1:])} of the accounting{why}"
        )
    req = _Request(name, epsilon, delta, n, k, count, rel_tol, deadline)
    if solve_for in ACCOUNTING_FIELDS:
        return _calibrate_accounting(cls, req, params, solve_for)
    if issubclass(cls, CentralMechanism):  # the central user-level mechanisms calibrate themselves
        return _calibrate_central(cls, req, params)
    return _calibrate_knob(cls, req, params)


def _calibrate_central(cls: type[CentralMechanism], req: _Request, params: dict[str, Any]) -> Mechanism:
    """``cls.calibrated`` at the target; the accounting's population is the mechanism's ``n``."""
    if req.k is not None:
        raise ParameterError(f"{req.name} is a central release on all users: leave k out")
    if req.expired():
        raise CalibrationTimeout(f"calibrating {req.name} ran out of time")
    _take_population(cls, req, params)
    return cls.calibrated(
        req.epsilon,
        req.delta,
        mode=params.pop("mode", "tight"),
        count=req.rounds,
        rel_tol=req.rel_tol,
        **params,
    )


def _take_population(cls: type[CentralMechanism], req: _Request, params: dict[str, Any]) -> None:
    """The accounting's population ``n`` as the mechanism's own ``n`` (when it takes one and
    ``params`` leave it out): a central user-level mechanism is calibrated for its users."""
    if req.n is not None and "n" in cls.PARAMETERS and "n" not in params:
        params["n"] = req.n


def _check_accounting(cls: type[Mechanism], req: _Request, params: dict[str, Any], field: str) -> None:
    """Refuse what an accounting solve cannot take: the field given, a local mechanism without its
    population, a knob-calibration ``mode``."""
    if {"count": req.count, "n": req.n, "k": req.k}[field] is not None:
        raise ParameterError(f"leave {field} out when solving for it")
    if cls.kind == "local" and field != "n" and req.n is None:
        raise ParameterError(f"solving for {field} of a local mechanism needs the population n")
    if "mode" in params:
        raise ParameterError(
            "'mode' chooses how the knob is calibrated: leave it out when solving for " + field
        )


@dataclass(frozen=True)
class _Accounting:
    """The accounting of a fixed mechanism with ``field`` free: (n, k, count), its events and ε."""

    mech: Mechanism
    req: _Request
    field: AccountingField

    def at(self, x: int) -> tuple[int | None, int | None, int]:
        """(n, k, count) with ``field`` at ``x``."""
        req, field = self.req, self.field
        return (
            x if field == "n" else req.n,
            x if field == "k" else req.k,
            x if field == "count" else req.rounds,
        )

    def events(self, x: int) -> list[Event]:
        n, k, count = self.at(x)
        return self.mech.events(n=n, k=k, count=count)

    def eps(self, x: float) -> float:
        """Accounted ε at δ with ``field`` at ``x``; +inf where no ε exists (``accounted_epsilon``) or
        the events cannot be formed (count·T beyond the events' limit of a multi-step mechanism)."""
        self.req.check_time()
        try:
            evs = self.events(int(x))
        except AccountantError:
            return math.inf
        return accounted_epsilon(evs, self.req.delta)

    def domain(self) -> Domain:
        """The field's domain as the accountant declares it (the fixed quantities validated first)."""
        probe = self.events((self.req.k or 1) if self.field == "n" else 1)
        holder = next((e for e in probe if self.field in event_fields(e.mechanism)), None)
        if holder is None:  # pragma: no cover - solve_for_choices offers only fields the events have
            raise ParameterError(f"the events of {self.req.name} have no field {self.field!r} to solve for")
        return field_domain(holder.to_dict(), self.field)

    def infeasible(self, points: Mapping[float, float]) -> ParameterError:
        """The refusal when no value meets the target: the lowest ε found, and where."""
        req, field = self.req, self.field
        x_low, e_low = min(points.items(), key=lambda p: (p[1], p[0]))
        fixed = [
            f"{q} = {v}" for q, v in zip(("n", "k", "count"), self.at(0)) if q != field and v is not None
        ]
        return ParameterError(
            f"no {field} meets epsilon = {req.epsilon} at delta = {req.delta} with these parameters"
            f"{' (' + ', '.join(fixed) + ')' if fixed else ''}: the lowest epsilon found is {e_low:.6g}, at "
            f"{field} = {int(x_low):,}; raise the target or change the mechanism's parameters"
        )


def _calibrate_accounting(
    cls: type[Mechanism], req: _Request, params: dict[str, Any], field: AccountingField
) -> AccountingCalibration:
    """The verified crossing of ε(``field``) with the target, the mechanism fixed (module docstring)."""
    _check_accounting(cls, req, params, field)
    if issubclass(cls, CentralMechanism):
        _take_population(cls, req, params)
    acc = _Accounting(cls(**params), req, field)  # fully specified, its knob included
    dom = acc.domain()
    found = find_crossing(acc.eps, dom, req.epsilon, start=1 if field == "count" else None)
    if found.good is None:
        raise acc.infeasible(found.points)
    # ``find_crossing``'s final bracket on integers is (good, good ± 1), both evaluated with ``eps``
    # itself: the answer meets the target and one step further misses — unless good is the domain's end
    value = int(found.good)
    n, k, count = acc.at(value)
    g = epsilon_guarantee(acc.events(value), req.delta)
    return AccountingCalibration(
        mechanism=acc.mech,
        solve_for=field,
        value=value,
        n=n,
        k=k,
        count=count,
        epsilon=float(g.epsilon),
        delta=req.delta,
        order=float(g.order),
        target_epsilon=req.epsilon,
        direction="largest" if dom.increasing else "smallest",
        at_limit=found.bad is None,
    )


def _calibrate_knob(cls: type[Mechanism], req: _Request, params: dict[str, Any]) -> Mechanism:
    """The feasible end of the crossing of ε(knob) with the target (module docstring)."""
    if cls.kind == "local" and req.n is None:
        raise ParameterError("calibrating a local mechanism needs the population n")
    knob = knob_of(req.name)
    if knob in params:
        raise ParameterError(f"leave '{knob}' out when calibrating: it is what is solved for")

    def make(v: float) -> Mechanism:
        """The mechanism with the knob at ``v`` and the other parameters as given."""
        return cls(**{**params, knob: v})

    # validate the other parameters and the population first
    make(1.0).events(n=req.n, k=req.k, count=req.rounds)

    def eps(v: float) -> float:
        """Accounted ε at δ of the mechanism with the knob at ``v`` (``CalibrationTimeout`` past the deadline)."""
        req.check_time()
        return epsilon_guarantee(make(v).events(n=req.n, k=req.k, count=req.rounds), req.delta).epsilon

    dom = _knob_domain(knob, req.rel_tol)
    found = find_crossing(eps, dom, req.epsilon, start=1.0)
    if found.good is None:
        end = dom.feasible_end
        raise ParameterError(
            f"even {knob} = {end:g} does not meet epsilon = {req.epsilon} at delta = {req.delta} (n = {req.n}, "
            f"k = {req.k}, count = {req.rounds}); raise the target, add users or reduce the rounds"
        )
    return make(found.good)


__all__ = [
    "ACCOUNTING_FIELDS",
    "AccountingCalibration",
    "calibrate",
    "calibration_probe",
    "knob_of",
    "probe_params",
    "solve_for_choices",
]
