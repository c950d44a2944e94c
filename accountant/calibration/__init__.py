"""Calibration and planning: solve one parameter of an event against a target (ε, δ).

Training teams ask "what ε0 can each client use so that 1,000 rounds stay within ε = 4 at
δ = 10⁻⁵", "how many rounds can we afford", "how many clients do we need". Two entry points:

    calibrate(event, solve_for, target_epsilon, delta, orders=None, progress=None)
        -> CalibrationResult  (.event, .epsilon, .delta, .order, .value, .at_limit, …)
    epsilon_over_rounds(event, delta, counts, orders=None)
        -> RoundsCurve  (ε and optimal order after each count, one curve, vectorised)

What "meets the target" means. The answer is judged by exactly the function every other part of
the accountant uses: ``epsilon_guarantee([event], delta, orders)`` — the default (tightest valid)
upper curve on the grid, the Lemma 2.1.3 conversion, and the refinement of the optimum between
grid points at real orders. Call it F. Every returned answer x is recomputed with F and satisfies
``F(x) <= target`` (the reported ε is F(x)), and one step further is already above the target:

* ``epsilon0`` — the largest ε0: ``F(ε0·(1 + 1e-5)) > target`` (the search brackets the crossing
  to a relative width of 1e-6, then checks that nudge explicitly with F); likewise the largest
  ``epsilon`` of a pure-DP, exponential or AboveThreshold release;
* ``noise_multiplier`` (Gaussian), ``scale`` (Laplace) — the smallest noise:
  ``F(x / (1 + 1e-5)) > target``;
* ``count`` — the most rounds: ``F(count + 1) > target``;
* ``n`` — the fewest users: ``F(n − 1) > target``;
* ``k`` — the LARGEST sample size per round (see below): ``F(k + 1) > target``;

unless the answer sits at the end of the parameter's domain (ε0 = 50, count = 10¹², n = 1 or
n = k, k = n): then ``result.at_limit`` is True and the note says so. When no value of the
parameter meets the target, :class:`~accountant.errors.InfeasibleTarget` is raised with the best
ε that is achievable (``best_epsilon``, and the value giving it as ``best_value``): ε0 → 0
(ε0 = 1e-10), one round, n = 10¹⁵ users, k = 1. The unknown may be any such top-level field of
any event type that has it, or of an inner event of a sampled event (``inner[0].noise_multiplier``,
or the bare name when exactly one inner event has that field: "which noise multiplier gives
ε = 2 over 1,000 rounds sampling 10⁴ of 10⁶ clients" is one call); which fields qualify and in
which direction ε moves with each is declared once, on the field (:class:`accountant.events.Calibrate`),
and its domain comes from :func:`field_domain`.

Direction of ``k`` (subsampled shuffle, n fixed). Mostly one round's RDP grows with k: the
sampling probability γ = k/n rises, and the amplification by sampling weakens faster than the
extra shuffling amplification helps — in the leading term of SU (Thm 5.4.1) γ²/k̄ ≈ 2E·k/n². So
for a fixed number of rounds the useful question is the LARGEST k (the most clients per round,
i.e. the best utility) that keeps the target; that is what ``k`` solves for. Numerically the
default curve is NOT monotone in k everywhere, and the feasible k need not start at 1:

* with the thesis bounds alone, SU's Chernoff slack Υ decays like exp(−(k−1)/(8e^{ε0})) and,
  where it dominates, ε falls with k over a factor 2–3 in k (n = 5.2·10⁶, ε0 = 4.6, T = 2029,
  δ = 9.3·10⁻⁵: ε = 2.18 at k = 1867, 1.93 at k = 4124, 2.07 at k = 6131);
* with the default including WBK19 over the clone curve (bounds.md §8), for large ε0 shuffling
  amplifies only once k ≫ e^{ε0}, and that gain can outgrow the larger γ: n = 65,719, ε0 = 4.82,
  T = 4, δ = 2.2·10⁻⁸ gives ε = 2.65 at k = 2000, 1.65 at k = 8000, 1.70 at k = 12,000 — the
  feasible k can be an interval in the middle.

The search therefore comes down from the infeasible end — k = n, n/2, n/4, … until the target is
met — looks between scanned points where the scanned ε has a local minimum, and finds the
crossing in the last bracket: the largest feasible k unless a feasible island narrower than the
scan's spacing hides above it. If no k is found, the error reports the lowest ε seen and its k.
ε is also, by construction of the core's refinement (it refines only around the grid minimiser)
and the n̄ = ⌊(n−1)/(2e^{ε0})⌋ + 1 steps, slightly non-monotone or discontinuous in n and ε0 in
places (≈ 0.2 % in ε); every answer is a verified crossing (feasible, one step further
infeasible) and is the extreme feasible value wherever F is monotone.

How. ``count`` needs no search: RDP is linear in the count, so the closed form of
:mod:`~accountant.calibration.counts` gives it, checked with F at the answer and the answer + 1.
Every other unknown: one crossing-finder (:mod:`~accountant.calibration.crossing`:
bracket, ``scipy.optimize.brentq`` on log ε against u = log x or log(e^{ε0} − 1), bisection to
finish) run on F's cheap prefix form, its answer verified with F, and if F disagrees the search
repeated with F itself, then by bisection with F (:mod:`~accountant.calibration.search`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_orders
from ..errors import InfeasibleTarget, InvalidParameter
from ..events import Event, as_event, event_from_dict
from ..orders import DEFAULT_ORDERS
from ..routes import check_accounting
from .counts import RoundsCurve, check_counts, closed_form_count, rounds_curve
from .crossing import Crossing, Domain, Number, find_crossing
from .evaluator import Evaluator, ProgressCallback, RoutedEvaluator
from .fields import (
    SOLVE_FOR,
    EventLike,
    _event_dict,
    at_limit_note,
    base_event,
    check_target,
    check_target_delta,
    event_fields,
    field_domain,
    infeasible,
    resolve,
    unknown_domain,
)
from .search import Answer, solve


@dataclass(frozen=True)
class CalibrationResult:
    """The answer of :func:`calibrate`: the completed event and its recomputed guarantee.

    ``event`` is the api.md dict of the completed event, ``value`` the solved parameter (also
    found in the event), ``epsilon``/``order`` the guarantee of that event recomputed with
    ``epsilon_guarantee`` (never above ``target_epsilon``), ``evaluations`` the curve
    evaluations the search used.
    """

    event: dict[str, Any]
    epsilon: float
    delta: float
    order: float
    solve_for: str
    value: float | int
    target_epsilon: float
    orders: tuple[float, ...] = field(repr=False)
    at_limit: bool = False
    note: str = ""
    evaluations: int = 0
    accounting: str = "rdp"
    route: str = "rdp"
    direction: str = "largest"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: api.md's ``{"event", "epsilon", "delta", "order"}`` plus the rest."""
        return {
            "event": dict(self.event),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "order": self.order,
            "solve_for": self.solve_for,
            "value": self.value,
            "target_epsilon": self.target_epsilon,
            "orders": [float(o) for o in self.orders],
            "at_limit": self.at_limit,
            "note": self.note,
            "evaluations": self.evaluations,
            "accounting": self.accounting,
            "route": self.route,
            "direction": self.direction,
        }


def _grid(orders: ArrayLike | None) -> NDArray[np.float64]:
    return np.asarray(DEFAULT_ORDERS if orders is None else check_orders(orders), dtype=float)


def calibrate(
    event: EventLike,
    solve_for: str,
    target_epsilon: float,
    delta: float,
    orders: ArrayLike | None = None,
    progress: ProgressCallback | None = None,
    accounting: str = "best",
) -> CalibrationResult:
    """Solve one parameter of ``event`` so that its guarantee meets (target_epsilon, delta).

    ``event``: an api.md event dict that leaves out the field solved for (or a complete event
    object, whose value of that field is only the starting guess, or a ``functools.partial`` of
    an event class). ``solve_for``:

    * ``"epsilon0"`` — the largest ε0: ε0·(1 + 1e-5) misses;
    * ``"count"`` — the most rounds (any event): closed form, count + 1 misses;
    * ``"n"`` — the fewest users (with k fixed, n ≥ k): n − 1 misses;
    * ``"k"`` — the LARGEST number of users sampled per round (n fixed): one round's RDP mostly
      grows with k (γ = k/n), so for a fixed number of rounds the most clients per round that
      keep the target is the useful answer; k + 1 misses. ε is not monotone in k everywhere
      (module docstring), so the search comes down from k = n by halving, looks between scanned
      points, and returns the largest feasible k it finds;
    * ``"noise_multiplier"`` (Gaussian), ``"scale"`` (Laplace) — the smallest noise: x/(1 + 1e-5)
      misses; ``"epsilon"`` (pure-DP, exponential, AboveThreshold) — the largest ε;
    * a field of an inner event of a sampled event: ``"inner[i].<field>"``, or the bare field name
      when it picks out one inner event (the one that leaves it out); several →
      :class:`InvalidParameter` naming them. ``result.solve_for`` is the resolved name.

    ``result.direction`` is ``"largest"`` or ``"smallest"``: the field's declared direction.
    The result's ε and order are recomputed with :func:`epsilon_guarantee` for the returned event
    (same grid, conversion and refinement as everywhere) and ε ≤ target_epsilon always.
    ``progress(fraction, epsilon)`` is called after each curve evaluation (fraction in [0, 1),
    an estimate, non-decreasing; epsilon the guarantee just evaluated) and once with 1.0 at the
    end. Raises :class:`InfeasibleTarget` (with ``best_epsilon``) when no value meets the target,
    and :class:`AccountantError` subclasses for invalid input.

    ``accounting`` (:mod:`accountant.routes`): the route the answer is judged by. ``"rdp"``: F
    above. ``"best"`` (default) or ``"pld"``: F_route(x) = the routed ε of the event (the smallest
    of every route with ``"best"``); the RDP answer is found first (it meets the target under
    ``"best"`` too, since the best route is never above the RDP one) and the verified search then
    continues from it with F_route. Calibrate with ``"rdp"`` when the run will be charged to the
    ledger (which composes RDP curves), with ``"best"`` for a one-off report.
    """
    t = check_target(target_epsilon)
    delta = check_target_delta(delta)
    grid = _grid(orders)
    base, guess, unknown = base_event(event, solve_for)
    if progress is not None and not callable(progress):
        raise InvalidParameter("progress must be a callable progress(fraction, epsilon) or None")
    check_accounting(accounting)
    dom = unknown_domain(base.to_dict(), unknown)
    ev = Evaluator(base, unknown, delta, grid, progress)
    try:
        value, g, at_limit = _solve_rdp(ev, base, dom, t, guess)
    except InfeasibleTarget as exc:
        if accounting == "rdp":
            raise
        value = dom.feasible_end if exc.best_value is None else exc.best_value
        routed = RoutedEvaluator(base, unknown, delta, grid, progress, accounting, ev.evaluations)
        best = routed.epsilon(value)
        if not best <= t:  # no route meets it where the RDP route came closest: the best ε reported
            if exc.best_epsilon is not None and exc.best_epsilon <= best:
                raise
            raise infeasible(unknown, dom, t, delta, value, best) from None
    route = "rdp"
    if accounting != "rdp":
        ev = RoutedEvaluator(base, unknown, delta, grid, progress, accounting, ev.evaluations)
        value, g, at_limit = solve(ev, dom, t, start=value)
        route = ev.route(value)
    if progress is not None:
        progress(1.0, float(g.epsilon))
    return CalibrationResult(
        event=event_from_dict(unknown.put(base.to_dict(), value)).to_dict(),
        epsilon=float(g.epsilon),
        delta=delta,
        order=float(g.order),
        solve_for=unknown.name,
        value=value,
        target_epsilon=t,
        orders=tuple(grid.tolist()),
        at_limit=at_limit,
        note=at_limit_note(unknown.name, dom, value) if at_limit else "",
        direction=unknown.marker.direction,
        evaluations=ev.evaluations,
        accounting=accounting,
        route=route,
    )


def _solve_rdp(ev: Evaluator, base: Event, dom: Domain, t: float, guess: Number | None) -> Answer:
    """The verified answer judged by F (the RDP route)."""
    if ev.field == "count" and (base.APPROX or base.zeta > 0):
        # the additive δ grows with the count too: no closed form, the verified search
        return solve(ev, dom, t, start=1)
    if ev.field == "count":  # RDP is linear in the count: closed form, then verified
        count = closed_form_count(base.with_count(1), ev.grid, ev.delta, t)
        first = Crossing(count or None, count + 1 if count < dom.hi else None, {})
        return solve(ev, dom, t, first=first)
    return solve(ev, dom, t, start=guess)


def epsilon_over_rounds(
    event: EventLike, delta: float, counts: ArrayLike, orders: ArrayLike | None = None
) -> RoundsCurve:
    """ε at ``delta`` (and the optimal order) after each number of rounds in ``counts``.

    One unit curve (the event repeated once; the event's own ``count`` is replaced by each entry
    of ``counts``), then all conversions at once: a counts × orders matrix of ``count·ε₁(α)``
    converted with Lemma 2.1.3, the minimum per row, and the refinement of
    :func:`epsilon_guarantee` between grid points (its real orders around each row's grid
    minimiser; rows sharing a minimiser share one refinement curve). Each entry therefore equals
    ``epsilon_guarantee([event with count=c], delta, orders)`` — same curve values, same
    floating-point operations — to the last bit in practice (tested to 1e-12 relative).
    This is the "budget used vs round" series dashboards plot.
    """
    delta = check_target_delta(delta)
    d, complete = _event_dict(event)
    d.setdefault("count", 1)
    base = as_event(event) if complete else event_from_dict(d)
    return rounds_curve(base.with_count(1), _grid(orders), delta, check_counts(counts))


__all__ = [
    "SOLVE_FOR",
    "CalibrationResult",
    "Crossing",
    "Domain",
    "RoundsCurve",
    "calibrate",
    "epsilon_over_rounds",
    "event_fields",
    "field_domain",
    "find_crossing",
    "resolve",
]
