"""The routes from a list of events to (ε, δ), and the best of them (``accounting``).

Each route is a separate proof that the composition of the events is (ε, δ)-DP; any of them may
be reported, so with ``accounting="best"`` the smallest certified answer is (bounds.md §11):

* ``rdp`` — compose the RDP curves and convert (:mod:`accountant.composition`, with the additive
  δ and (ε, δ) releases of :mod:`accountant.combination`). Valid under adaptive composition with
  budgets chosen on the fly (filters): the one route the ledger charges with.
* ``pld`` — compose the privacy-loss distributions of a dominating pair per event
  (:mod:`accountant.pld`: pessimistic discretisation, the numerical error bounded and added to δ).
  Applies when every event type declares a dominating pair.
* ``pure`` — basic composition of pure ε-DP (Dwork–Roth 2014, Thm 3.16 for pure DP: ε-DP
  mechanisms compose to (Σ ε_i)-DP, adaptively), with (ε_i, δ_i) releases adding Σ δ_i (Thm 3.16
  in full). Applies when every event is pure ε-DP (a finite ``pure_epsilon``, no ``zeta``) or an
  ``approx_dp`` release: a pure release at ε = 1 then costs exactly 1, where the RDP conversion
  gives 1.00025.

``accounting="rdp"`` and ``"pld"`` run one route (``"pld"`` refuses events it does not cover);
``"best"`` runs every route that applies and reports the smallest ε (or δ), naming the ``route``
that won and the value of every route tried (``routes``; a route that does not apply has
``epsilon``/``delta`` None and a note saying why).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike

from ._validation import check_delta, check_epsilon
from .composition import Guarantee, delta_guarantee, epsilon_guarantee
from .errors import AccountantError, BoundNotApplicable, InvalidParameter
from .events import Event, EventLike, as_event

Accounting = Literal["best", "rdp", "pld"]
#: the values of ``accounting``, the default first
ACCOUNTING: tuple[str, ...] = get_args(Accounting)
ROUTES = ("rdp", "pld", "pure")


@dataclass(frozen=True)
class RouteValue:
    """One route's answer: ``epsilon`` and ``delta`` (None where the route does not apply), and a
    note (why it does not apply, or what it added)."""

    route: str
    epsilon: float | None
    delta: float | None
    note: str = ""

    @property
    def applies(self) -> bool:
        return self.epsilon is not None and self.delta is not None

    def to_dict(self) -> dict[str, object]:
        return {"route": self.route, "epsilon": self.epsilon, "delta": self.delta, "note": self.note}


@dataclass(frozen=True)
class RoutedGuarantee:
    """The answer of :func:`epsilon_routed` / :func:`delta_routed`: the (ε, δ) of the ``route``
    that won, every route tried, and the RDP route's :class:`~accountant.composition.Guarantee`
    (its optimal order and composed curve; None when ``accounting="pld"``)."""

    epsilon: float
    delta: float
    route: str
    routes: tuple[RouteValue, ...]
    rdp: Guarantee | None

    @property
    def order(self) -> float | None:
        """The RDP route's optimal order (None when the RDP route was not run)."""
        return None if self.rdp is None else self.rdp.order


def check_accounting(accounting: str) -> str:
    if accounting not in ACCOUNTING:
        raise InvalidParameter(f"accounting must be one of {list(ACCOUNTING)}, got {accounting!r}")
    return accounting


# ------------------------------------------------------------------------------------------- pure
def _float_up(x: Fraction) -> float:
    """The smallest float ≥ the exact rational ``x``."""
    f = float(x)
    return float(np.nextafter(f, math.inf)) if Fraction(f) < x else f


def _pure_parts(evs: Sequence[Event]) -> tuple[float, float] | str:
    """(Σ count·ε_i, Σ count·δ_i), summed exactly and rounded up, or why the pure route does not
    apply."""
    eps = Fraction(0)
    dlt = Fraction(0)
    for ev in evs:
        if ev.APPROX:
            e, d = ev.approx_release()
            if not math.isfinite(e):
                return f"a {ev.mechanism!r} release has no finite ε"
            eps += ev.count * Fraction(e)
            dlt += ev.count * Fraction(d)
        elif ev.zeta > 0:
            return f"a {ev.mechanism!r} event carries zeta > 0 (its curve holds only outside a failure event)"
        elif not math.isfinite(ev.pure_epsilon()):
            return f"a {ev.mechanism!r} event is not pure ε-DP"
        else:
            eps += ev.count * ev.pure_epsilon_upper()
    return _float_up(eps), _float_up(dlt)


def _pure_epsilon(evs: Sequence[Event], delta: float) -> RouteValue:
    parts = _pure_parts(evs)
    if isinstance(parts, str):
        return RouteValue("pure", None, None, parts)
    eps, dlt = parts
    if dlt > delta:
        return RouteValue("pure", None, None, f"the (ε, δ) releases' δ sum to {dlt:.6g} > δ = {delta:.6g}")
    return RouteValue(
        "pure", eps, delta, "basic composition of pure ε-DP" + (" and (ε, δ) releases" if dlt else "")
    )


def _pure_delta(evs: Sequence[Event], epsilon: float) -> RouteValue:
    parts = _pure_parts(evs)
    if isinstance(parts, str):
        return RouteValue("pure", None, None, parts)
    eps, dlt = parts
    if eps > epsilon:
        return RouteValue("pure", None, None, f"basic composition gives ε = {eps:.6g} > {epsilon:.6g}")
    return RouteValue(
        "pure", epsilon, dlt, "basic composition of pure ε-DP" + (" and (ε, δ) releases" if dlt else "")
    )


# -------------------------------------------------------------------------------------------- pld
def _pld_route(evs: Sequence[Event], value: float, want: Literal["epsilon", "delta"]) -> RouteValue:
    """The PLD route (:mod:`accountant.pld`), or why it does not apply."""
    from . import pld

    try:
        missing = sorted({ev.mechanism for ev in evs if not pld.covered(ev)})
        if missing:
            return RouteValue(
                "pld", None, None, f"no dominating pair is declared for {', '.join(map(repr, missing))}"
            )
        res = pld.pld_epsilon(evs, value) if want == "epsilon" else pld.pld_delta(evs, value)
    except AccountantError as exc:  # e.g. a composition beyond the route's grid and FFT limits
        return RouteValue("pld", None, None, f"the PLD route does not apply here: {exc}")
    except Exception:  # noqa: BLE001 - an optional route must never break an answer; logged
        logging.getLogger("accountant").exception("the PLD route failed for %r", [e.to_dict() for e in evs])
        return RouteValue(
            "pld", None, None, "the PLD route failed numerically here (logged); the other routes answer"
        )
    if not (math.isfinite(res.epsilon) and math.isfinite(res.delta)):
        return RouteValue(
            "pld", None, None, "the PLD route finds no finite answer here (its error bound is too large)"
        )
    note = (
        f"pessimistic PLD (grid {res.discretization:.3g}); numerical error bound {res.error:.3g} added to δ"
        if res.discretization > 0
        else "; ".join(res.notes)
    )
    if want == "epsilon":  # certified δ at that ε ≤ the δ asked for: the guarantee holds at the δ asked for
        note += f" (certified δ at this ε: {res.delta:.6g})"
        return RouteValue("pld", res.epsilon, value, note)
    return RouteValue("pld", res.epsilon, res.delta, note)


# ----------------------------------------------------------------------------------------- routed
def _routed(
    accounting: str,
    rdp: Callable[[], Guarantee],
    others: Iterable[Callable[[], RouteValue]],
    key: Literal["epsilon", "delta"],
) -> RoutedGuarantee:
    g: Guarantee | None = None
    values: list[RouteValue] = []
    if accounting in ("best", "rdp"):
        g = rdp()
        values.append(RouteValue("rdp", g.epsilon, g.delta, f"optimal order {g.order:.6g}"))
    if accounting in ("best", "pld"):
        for other in others:
            values.append(other())
    usable = [v for v in values if v.applies]
    if not usable:
        why = "; ".join(v.note for v in values)
        raise BoundNotApplicable(f"accounting {accounting!r} does not apply to these events: {why}")
    best = min(usable, key=lambda v: (getattr(v, key), ROUTES.index(v.route)))
    assert best.epsilon is not None and best.delta is not None
    return RoutedGuarantee(best.epsilon, best.delta, best.route, tuple(values), g)


def _run(
    events: Iterable[EventLike],
    value: float,
    orders: ArrayLike | None,
    accounting: str,
    want: Literal["epsilon", "delta"],
    extend: bool,
) -> RoutedGuarantee:
    check_accounting(accounting)
    evs = [as_event(e) for e in events]
    if not evs:
        raise InvalidParameter("events must not be empty: give at least one event to compose")
    others: list[Callable[[], RouteValue]] = [lambda: _pld_route(evs, value, want)]
    if want == "epsilon":
        if accounting == "best":
            others.append(lambda: _pure_epsilon(evs, value))
        return _routed(accounting, lambda: epsilon_guarantee(evs, value, orders, extend=extend), others, want)
    if accounting == "best":
        others.append(lambda: _pure_delta(evs, value))
    return _routed(accounting, lambda: delta_guarantee(evs, value, orders, extend=extend), others, want)


def epsilon_routed(
    events: Iterable[EventLike],
    delta: float,
    orders: ArrayLike | None = None,
    accounting: str = "best",
    extend: bool = True,
) -> RoutedGuarantee:
    """ε at ``delta`` by the routes of ``accounting`` (module docstring): the smallest certified
    ε with ``"best"``. ``extend``: the RDP route may try orders above the default grid
    (:func:`~accountant.composition.epsilon_guarantee`)."""
    return _run(events, check_delta(delta), orders, accounting, "epsilon", extend)


def delta_routed(
    events: Iterable[EventLike],
    epsilon: float,
    orders: ArrayLike | None = None,
    accounting: str = "best",
    extend: bool = True,
) -> RoutedGuarantee:
    """δ at ``epsilon`` by the routes of ``accounting``: the smallest certified δ with ``"best"``."""
    return _run(events, check_epsilon(epsilon), orders, accounting, "delta", extend)


def epsilon(
    events: Iterable[EventLike], delta: float, orders: ArrayLike | None = None, accounting: str = "best"
) -> tuple[float, float]:
    """(ε, order) of the composition of ``events`` at ``delta``: ε by the routes of
    ``accounting`` (default: the best certified), order the RDP route's optimal order (NaN when
    ``accounting="pld"``)."""
    r = epsilon_routed(events, delta, orders, accounting)
    return r.epsilon, math.nan if r.order is None else r.order


def delta(
    events: Iterable[EventLike], epsilon: float, orders: ArrayLike | None = None, accounting: str = "best"
) -> tuple[float, float]:
    """(δ, order) of the composition of ``events`` at ``epsilon`` (as :func:`epsilon`)."""
    r = delta_routed(events, epsilon, orders, accounting)
    return r.delta, math.nan if r.order is None else r.order


__all__ = [
    "delta",
    "epsilon",
    "ACCOUNTING",
    "ROUTES",
    "Accounting",
    "RouteValue",
    "RoutedGuarantee",
    "check_accounting",
    "delta_routed",
    "epsilon_routed",
]
