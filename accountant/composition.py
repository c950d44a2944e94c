"""The accountant: interprets events as RDP curves, composes them, converts to (ε, δ).

RDP at the same order adds (thesis Lemma 2.1.4): T identical rounds cost T·ε(α), a heterogeneous
sequence costs the order-wise sum. Curves are composed first and converted once at the end
(bounds.md §5). Identical events are computed once: curves are cached by (event, orders, bound).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ._validation import MAX_ORDER, check_delta, check_epsilon, check_orders
from .conversion import epsilon_vector, log_delta_vector
from .curves import curve_from_points, laplace_rdp
from .errors import InvalidParameter
from .events import as_event, cached_unit_curve
from .orders import DEFAULT_ORDERS

_REFINE_POINTS = 24
UNBOUNDED = (
    "the composed curve is unbounded at every usable order, so no finite ε exists: the conversion uses "
    "orders α > 1.01 only, so include some (or omit 'orders' for the default grid), and check that every "
    "event has a finite curve at them (an 'rdp_curve' event is unknown above its largest order)"
)
#: the cache of one-repetition curves, by (event, orders, bound) (see accountant.events)
_cached_unit_curve = cached_unit_curve


def _orders_key(orders) -> tuple:
    if orders is None:
        return tuple(DEFAULT_ORDERS.tolist())
    return tuple(check_orders(orders).tolist())


def event_rdp(event, orders=None, bound: str = "upper") -> np.ndarray:
    """RDP curve of one event, already multiplied by its ``count`` (api.md ``/v1/rdp``)."""
    return as_event(event).curve(np.asarray(_orders_key(orders)), bound)


def compose(events: Iterable, orders=None) -> np.ndarray:
    """Order-wise sum of the (default upper) curves of ``events`` on ``orders`` (default grid)."""
    evs = [as_event(e) for e in events]
    if not evs:
        raise InvalidParameter("events must not be empty: give at least one event to compose")
    key = _orders_key(orders)
    grid = np.asarray(key)
    total = np.zeros(len(key))
    for ev in evs:
        total = total + ev.curve(grid)
    return total


@dataclass(frozen=True)
class Guarantee:
    """The (ε, δ) answer of a composition, with the order that achieved it and the curve used."""

    epsilon: float
    delta: float
    order: float
    orders: np.ndarray
    rdp: np.ndarray


def _refine_orders(orders: np.ndarray, i: int) -> np.ndarray:
    lo = orders[i - 1] if i > 0 else max(1.0 + (orders[0] - 1.0) / 2.0, 1.0105)
    hi = orders[i + 1] if i + 1 < orders.size else min(orders[i] * 1.25, MAX_ORDER)
    pts = np.linspace(lo, hi, _REFINE_POINTS + 2)[1:-1]
    return pts[(pts != orders[i]) & (pts > 1.0)]


def epsilon_guarantee(events: Iterable, delta: float, orders=None, refine: bool = True) -> Guarantee:
    """Compose ``events`` and convert to ε at ``delta`` (bounds.md §4–5).

    The minimising order on the grid is refined with real orders between its neighbours (every
    curve here is valid at real orders), and the better of the two answers is reported.
    """
    delta = check_delta(delta)
    evs = [as_event(e) for e in events]
    key = _orders_key(orders)
    grid = np.asarray(key)
    curve = compose(evs, key)
    eps = epsilon_vector(grid, curve, delta)
    i = int(np.argmin(eps))
    if not np.isfinite(eps[i]):
        raise InvalidParameter(UNBOUNDED)
    best_eps, best_order = float(eps[i]), float(grid[i])
    if refine and best_eps > 0:
        fine = _refine_orders(grid, i)
        if fine.size:
            fcurve = compose(evs, fine)
            feps = epsilon_vector(fine, fcurve, delta)
            j = int(np.argmin(feps))
            if feps[j] < best_eps:
                best_eps, best_order = float(feps[j]), float(fine[j])
    return Guarantee(max(0.0, best_eps), delta, best_order, grid, curve)


def delta_guarantee(events: Iterable, epsilon: float, orders=None, refine: bool = True) -> Guarantee:
    """Compose ``events`` and convert to δ at ``epsilon`` (bounds.md §4–5), refined as above."""
    epsilon = check_epsilon(epsilon)
    evs = [as_event(e) for e in events]
    key = _orders_key(orders)
    grid = np.asarray(key)
    curve = compose(evs, key)
    ld = log_delta_vector(grid, curve, epsilon)
    i = int(np.argmin(ld))
    best_ld, best_order = float(ld[i]), float(grid[i])
    if refine and np.isfinite(best_ld):
        fine = _refine_orders(grid, i)
        if fine.size:
            fld = log_delta_vector(fine, compose(evs, fine), epsilon)
            j = int(np.argmin(fld))
            if fld[j] < best_ld:
                best_ld, best_order = float(fld[j]), float(fine[j])
    d = 1.0 if not np.isfinite(best_ld) and best_ld > 0 else min(1.0, float(np.exp(best_ld)))
    return Guarantee(epsilon, d, best_order, grid, curve)


def epsilon(events: Iterable, delta: float, orders=None) -> tuple[float, float]:
    """(ε, order) of the composition of ``events`` at ``delta`` on the default grid."""
    g = epsilon_guarantee(events, delta, orders)
    return g.epsilon, g.order


def delta(events: Iterable, epsilon: float, orders=None) -> tuple[float, float]:
    """(δ, order) of the composition of ``events`` at ``epsilon`` on the default grid."""
    g = delta_guarantee(events, epsilon, orders)
    return g.delta, g.order


__all__ = [
    "UNBOUNDED",
    "Guarantee",
    "compose",
    "curve_from_points",
    "delta",
    "delta_guarantee",
    "epsilon",
    "epsilon_guarantee",
    "event_rdp",
    "laplace_rdp",
]
