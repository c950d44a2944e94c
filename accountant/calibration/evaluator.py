"""F, the function every calibration answer is judged by, and its evaluations.

F(x) = ``epsilon_guarantee([event with the unknown = x], delta, orders)``: the default
(tightest valid) upper curve on the grid, the conversion of Lemma 2.1.3 and the refinement of the
optimum between grid points — exactly what every other part of the accountant reports.

The search may call the *same* function on a prefix of the grid, ``orders[:top + 1]``, with
``top`` a few orders above the optimum: the high orders, where the bounds cost the most (the
U1/SU sums of α terms, the clone bound's widening windows), are skipped while the optimum is
below them; every lower order is kept, so a second local minimum over the orders at low orders
(the pure-DP cap's) is never missed. When the prefix's minimiser reaches its top the prefix doubles
and the value is recomputed. The prefix value equals F whenever F's grid minimiser lies below the
prefix's top (up to the tightening of the default curve over the orders asked for); it is only a
guide for the search: answers are verified with F itself (:mod:`accountant.calibration.search`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ..combination import ZetaExceedsDelta
from ..composition import Guarantee, epsilon_guarantee, event_rdp
from ..conversion import epsilon_vector
from ..errors import AccountantError
from ..events import Event, event_from_dict
from ..routes import epsilon_routed
from .crossing import Number
from .fields import Unknown

ProgressCallback = Callable[[float, float], object]
MAX_EVALUATIONS = 600  # curve evaluations of one calibration (never reached in practice)
_ABOVE = 6  # grid orders kept above the prefix's minimiser


class Evaluator:
    """F for one calibration: ``event(x)`` is ``base`` with the unknown (its ``field``, the
    unknown's name) set to ``x``.

    Values are cached per x. Each new value (of F or of its prefix form) counts towards
    ``evaluations`` (bounded by ``MAX_EVALUATIONS``) and calls ``progress(fraction, epsilon)``
    with a fraction estimated from the number of evaluations (non-decreasing, below 0.95; the
    caller reports 1.0 at the end)."""

    def __init__(
        self,
        base: Event,
        unknown: Unknown,
        delta: float,
        grid: NDArray[np.float64],
        progress: ProgressCallback | None,
    ) -> None:
        self.base = base
        self.unknown = unknown
        self.field = unknown.name
        self._base_dict = base.to_dict()
        self.delta = delta
        self.grid = grid
        self.key = tuple(grid.tolist())
        self.progress = progress
        self.evaluations = 0
        self._full: dict[Number, Guarantee] = {}
        self._prefix: dict[Number, float] = {}
        self._top = grid.size - 1

    def event(self, x: Number) -> Event:
        return event_from_dict(self.unknown.put(self._base_dict, x))

    def _tick(self, eps: float) -> None:
        self.evaluations += 1
        if self.evaluations > MAX_EVALUATIONS:
            raise AccountantError(
                f"calibration of {self.field!r} did not converge within {MAX_EVALUATIONS} curve evaluations"
            )
        if self.progress is not None:
            self.progress(min(0.95, self.evaluations / (self.evaluations + 8.0)), float(eps))

    def _f(self, x: Number, key: tuple[float, ...] | NDArray[np.float64]) -> Guarantee:
        """epsilon_guarantee of event(x) on ``key``; +inf where the event's additive δ alone
        reaches δ (no ε exists there: that value of the unknown is infeasible)."""
        try:
            return epsilon_guarantee([self.event(x)], self.delta, key)
        except ZetaExceedsDelta:
            grid = np.asarray(key, dtype=float)
            return Guarantee(float("inf"), self.delta, float(grid[0]), grid, np.full(grid.size, np.inf))

    def guarantee(self, x: Number) -> Guarantee:
        """F(x) with its order and curve."""
        g = self._full.get(x)
        if g is None:
            g = self._full[x] = self._f(x, self.key)
            if np.isfinite(g.epsilon):
                self._place_top(self.grid, g)
            self._tick(g.epsilon)
        return g

    def _place_top(self, orders: NDArray[np.float64], g: Guarantee) -> int:
        """Put the next prefix's top ``_ABOVE`` orders above the grid minimiser of ``g`` (a
        guarantee computed on ``orders``, the grid or a prefix of it); return that minimiser."""
        i = int(np.argmin(epsilon_vector(orders, g.rdp, self.delta)))
        self._top = min(self.grid.size - 1, i + _ABOVE)
        return i

    def epsilon(self, x: Number) -> float:
        return self.guarantee(x).epsilon

    def full_points(self) -> dict[Number, float]:
        """x → F(x) for every x evaluated with F."""
        return {x: g.epsilon for x, g in self._full.items()}

    def start_prefix(self, x: Number) -> None:
        """Place the prefix's top above the optimum at ``x`` of the thesis bounds' curve (or the
        pure-DP cap's) on the whole grid: milliseconds, no tighter bound involved. Events those
        curves do not apply to keep the whole grid (the prefix form is then F itself)."""
        ev = self.event(x)
        for bound in ("thesis", "cap"):
            try:
                proxy = event_rdp(ev, self.key, bound=bound)
            except AccountantError:
                continue
            eps = epsilon_vector(self.grid, proxy, self.delta)
            if np.all(np.isinf(eps)):
                return
            self._top = min(self.grid.size - 1, int(np.argmin(eps)) + _ABOVE)
            return

    def search_epsilon(self, x: Number) -> float:
        """F on the grid's prefix (see the module docstring); F itself where known."""
        g = self._full.get(x)
        if g is not None:
            return g.epsilon
        e = self._prefix.get(x)
        if e is not None:
            return e
        last = self.grid.size - 1
        top = self._top
        while top < last:
            sub = self.grid[: top + 1]
            g = self._f(x, sub)
            if not np.isfinite(g.epsilon):
                break
            i = self._place_top(sub, g)
            if i < top - 1:
                break
            top = min(last, max(i + _ABOVE, 2 * top))  # the optimum is at the prefix's top: grow it
        else:
            return self.epsilon(x)
        self._prefix[x] = g.epsilon
        self._tick(g.epsilon)
        return g.epsilon


class RoutedEvaluator(Evaluator):
    """F_route for a calibration judged by a route other than the RDP one alone
    (:mod:`accountant.routes`): F_route(x) = ``epsilon_routed([event(x)], delta, orders,
    accounting).epsilon``; the guarantee keeps the RDP route's order and curve (or the grid's
    first order and zeros when ``accounting="pld"`` runs no RDP route). No prefix form: every
    value is F_route itself. ``evaluations`` continues from the RDP search's count."""

    def __init__(
        self,
        base: Event,
        unknown: Unknown,
        delta: float,
        grid: NDArray[np.float64],
        progress: ProgressCallback | None,
        accounting: str,
        evaluations: int = 0,
    ) -> None:
        super().__init__(base, unknown, delta, grid, progress)
        self.accounting = accounting
        self.evaluations = evaluations
        self._routes: dict[Number, str] = {}

    def _f(self, x: Number, key: tuple[float, ...] | NDArray[np.float64]) -> Guarantee:
        grid = np.asarray(key, dtype=float)
        try:
            r = epsilon_routed([self.event(x)], self.delta, key, self.accounting)
        except ZetaExceedsDelta:
            return Guarantee(float("inf"), self.delta, float(grid[0]), grid, np.full(grid.size, np.inf))
        self._routes[x] = r.route
        if r.rdp is not None:
            return Guarantee(r.epsilon, r.delta, r.rdp.order, r.rdp.orders, r.rdp.rdp, r.rdp.detail)
        return Guarantee(r.epsilon, r.delta, float(grid[0]), grid, np.zeros(grid.size))

    def _place_top(self, orders: NDArray[np.float64], g: Guarantee) -> int:
        del orders, g  # no prefix form
        return self.grid.size - 1

    def start_prefix(self, x: Number) -> None:
        del x  # no prefix form

    def search_epsilon(self, x: Number) -> float:
        return self.epsilon(x)

    def route(self, x: Number) -> str:
        """The route that gave F_route(x)."""
        self.guarantee(x)
        return self._routes.get(x, "rdp")


__all__ = ["MAX_EVALUATIONS", "Evaluator", "ProgressCallback", "RoutedEvaluator"]
