"""The accountant: interprets events as RDP curves, composes them, converts to (ε, δ).

RDP at the same order adds (thesis Lemma 2.1.4): T identical rounds cost T·ε(α), a heterogeneous
sequence costs the order-wise sum. Curves are composed first and converted once at the end
(bounds.md §5). Identical events are computed once: curves are cached by (event, orders, bound).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import bounds as _b
from ._numerics import pure_dp_rdp, round_up
from ._validation import MAX_ORDER, check_delta, check_epsilon, check_orders
from .conversion import epsilon_vector, log_delta_vector
from .errors import InvalidParameter
from .events import (
    Event,
    GaussianEvent,
    LaplaceEvent,
    PureDpEvent,
    RdpCurveEvent,
    ShuffleEvent,
    SubsampledShuffleEvent,
    as_event,
)
from .orders import DEFAULT_ORDERS

_REFINE_POINTS = 24
UNBOUNDED = (
    "the composed curve is unbounded at every usable order, so no finite ε exists: the conversion uses "
    "orders α > 1.01 only, so include some (or omit 'orders' for the default grid), and check that every "
    "event has a finite curve at them (an 'rdp_curve' event is unknown above its largest order)"
)


def _orders_key(orders) -> tuple:
    if orders is None:
        return tuple(DEFAULT_ORDERS.tolist())
    return tuple(check_orders(orders).tolist())


def laplace_rdp(scale: float, orders: np.ndarray) -> np.ndarray:
    """Exact RDP of the Laplace mechanism, b = scale·Δ (Mironov 2017, Prop. 6), in log space."""
    # D_α is non-decreasing in α: orders within 1e-3 of 1 use the value at 1.001, away from the
    # 0/0 of the closed form (which would round below the exact value there)
    a = np.maximum(np.asarray(orders, dtype=float), 1.001)
    lam = 1.0 / scale
    t1 = np.log(a) - np.log(2 * a - 1) + (a - 1) * lam
    t2 = np.log(a - 1) - np.log(2 * a - 1) - a * lam
    return round_up(np.maximum(np.logaddexp(t1, t2), 0.0) / (a - 1))


def curve_from_points(known_orders, known_rdp, orders: np.ndarray) -> np.ndarray:
    """Valid upper bound at ``orders`` from a curve known at ``known_orders``: convex
    interpolation of (α−1)ε(α) and monotonicity of ε(α) between known orders, ε(α_min) below the
    smallest, +inf above the largest."""
    ko = np.asarray(known_orders, dtype=float)
    kr = np.asarray(known_rdp, dtype=float)
    srt = np.lexsort((kr, ko))
    ko, kr = ko[srt], kr[srt]
    keep = np.concatenate([[True], np.diff(ko) > 0])  # duplicate orders: keep the smallest value
    ko, kr = ko[keep], kr[keep]
    a = np.asarray(orders, dtype=float)
    out = np.full(a.shape, np.inf)
    below = a <= ko[0]
    out[below] = kr[0]
    inside = (a > ko[0]) & (a <= ko[-1])
    if np.any(inside):
        ai = a[inside]
        j = np.searchsorted(ko, ai, side="left")  # ko[j-1] < ai <= ko[j]
        lo_o, hi_o, lo_r, hi_r = ko[j - 1], ko[j], kr[j - 1], kr[j]
        w = (hi_o - ai) / (hi_o - lo_o)
        convex = (w * (lo_o - 1) * lo_r + (1 - w) * (hi_o - 1) * hi_r) / (ai - 1)
        out[inside] = np.minimum(convex, hi_r)
    return out


def _single_curve(event: Event, orders: np.ndarray, bound: str) -> np.ndarray:
    if isinstance(event, ShuffleEvent):
        return _b.shuffle_rdp(event.n, event.epsilon0, orders, bound=bound, output=event.output)
    if isinstance(event, SubsampledShuffleEvent):
        return _b.subsampled_shuffle_rdp(event.n, event.k, event.epsilon0, orders, bound=bound,
                                         output=event.output, sampling=event.sampling)
    if bound != "upper":
        raise InvalidParameter(f"bound {bound!r} applies to shuffle events only; use 'upper' for {event.mechanism!r}")
    if isinstance(event, RdpCurveEvent):
        return curve_from_points(event.orders, event.rdp, orders)
    if isinstance(event, GaussianEvent):
        return round_up(orders / (2.0 * event.noise_multiplier**2))
    if isinstance(event, LaplaceEvent):
        return laplace_rdp(event.scale, orders)
    if isinstance(event, PureDpEvent):
        return round_up(pure_dp_rdp(event.epsilon, orders))
    raise InvalidParameter(f"no accounting for event {event!r}")  # pragma: no cover


@lru_cache(maxsize=4096)
def _cached_unit_curve(event: Event, orders_key: tuple, bound: str) -> np.ndarray:
    """Curve of ONE repetition (count = 1), cached; read-only."""
    unit = event.with_count(1) if event.count != 1 else event
    out = _single_curve(unit, np.asarray(orders_key, dtype=float), bound)
    out = np.asarray(out, dtype=float)
    out.setflags(write=False)
    return out


def event_rdp(event, orders=None, bound: str = "upper") -> np.ndarray:
    """RDP curve of one event, already multiplied by its ``count`` (api.md ``/v1/rdp``)."""
    ev = as_event(event)
    unit = _cached_unit_curve(ev.with_count(1) if ev.count != 1 else ev, _orders_key(orders), bound)
    with np.errstate(invalid="ignore"):
        return np.where(unit == 0, 0.0, unit * ev.count)


def compose(events: Iterable, orders=None) -> np.ndarray:
    """Order-wise sum of the (default upper) curves of ``events`` on ``orders`` (default grid)."""
    evs = [as_event(e) for e in events]
    if not evs:
        raise InvalidParameter("events must not be empty: give at least one event to compose")
    key = _orders_key(orders)
    total = np.zeros(len(key))
    for ev in evs:
        total = total + event_rdp(ev, key)
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
