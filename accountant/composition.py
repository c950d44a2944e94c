"""The accountant: interprets events as RDP curves, composes them, converts to (ε, δ).

RDP at the same order adds (thesis Lemma 2.1.4): T identical rounds cost T·ε(α), a heterogeneous
sequence costs the order-wise sum. Curves are composed first and converted once at the end
(bounds.md §5). Identical events are computed once: curves are cached by (event, orders, bound).

Events may also carry an additive δ (``zeta``: a curve that holds outside a failure event) or be
(ε, δ) releases without a curve (``approx_dp``). :func:`account` summarises a list of events in
those three parts and :mod:`accountant.combination` turns the summary into (ε, δ) — the one place
that does so, for this module, calibration, the service and the ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import MAX_ORDER, check_delta, check_epsilon, check_orders
from .central_curves import curve_from_points, laplace_rdp
from .combination import Account, Answer, ApproxPart, ZetaExceedsDelta, delta_of, epsilon_of
from .errors import InvalidParameter
from .events import APPROX_NO_CURVE, Event, EventLike, as_event
from .orders import DEFAULT_ORDERS, extension_orders

_REFINE_POINTS = 24
UNBOUNDED = (
    "the composed curve is unbounded at every usable order, so no finite ε exists: the conversion uses "
    "orders α > 1.01 only, so include some (or omit 'orders' for the default grid), and check that every "
    "event has a finite curve at them (an 'rdp_curve' event is unknown above its largest order)"
)


def _orders_key(orders: ArrayLike | None) -> tuple[float, ...]:
    if orders is None:
        return tuple(DEFAULT_ORDERS.tolist())
    return tuple(check_orders(orders).tolist())


def event_rdp(event: EventLike, orders: ArrayLike | None = None, bound: str = "upper") -> NDArray[np.float64]:
    """RDP curve of one event, already multiplied by its ``count`` (api.md ``/v1/rdp``)."""
    return as_event(event).curve(np.asarray(_orders_key(orders)), bound)


def _rdp_part(evs: list[Event], grid: NDArray[np.float64]) -> NDArray[np.float64]:
    """Order-wise sum of the curves of the events that have one (``approx_dp`` has none)."""
    total = np.zeros(grid.size)
    for ev in evs:
        if not ev.APPROX:
            total = total + ev.curve(grid)
    return total


def compose(events: Iterable[EventLike], orders: ArrayLike | None = None) -> NDArray[np.float64]:
    """Order-wise sum of the (default upper) curves of ``events`` on ``orders`` (default grid).

    Only for events whose curves are RDP bounds: an event with an additive δ (``zeta`` > 0) or an
    ``approx_dp`` release is refused, since converting its curve alone would under-report — use
    :func:`account`, :func:`epsilon_guarantee` or :func:`delta_guarantee` for those."""
    evs = _events(events)
    for ev in evs:
        if ev.APPROX:
            raise InvalidParameter(APPROX_NO_CURVE)
        if ev.zeta > 0:
            raise InvalidParameter(
                f"a {ev.mechanism!r} event with zeta > 0 holds only outside a failure event: its curve alone is not "
                "an RDP bound of the release; use epsilon_guarantee/delta_guarantee (or account) for it"
            )
    return _rdp_part(evs, np.asarray(_orders_key(orders)))


def account(events: Iterable[EventLike], orders: ArrayLike | None = None) -> Account:
    """The three-part summary of ``events`` on ``orders`` (:mod:`accountant.combination`): the
    composed RDP part, the additive δ Σ count·ζ (rounded up) and the (ε, δ) releases."""
    return _account(_events(events), np.asarray(_orders_key(orders)))


def _account(evs: list[Event], grid: NDArray[np.float64]) -> Account:
    zeta = 0.0
    approx = ApproxPart()
    for ev in evs:
        if ev.APPROX:
            approx = approx + ApproxPart.of(*ev.approx_release(), ev.count)
        z = ev.additive_delta()
        if z:
            zeta = float(np.nextafter(zeta + z, np.inf)) if zeta else z
    return Account(grid, _rdp_part(evs, grid), zeta, approx)


@dataclass(frozen=True)
class Guarantee:
    """The (ε, δ) answer of a composition, with the order that achieved it and the curve used.

    ``rdp`` is the composed RDP part on ``orders``. With an additive δ or (ε, δ) releases,
    ``detail`` says how the parts were joined (:class:`accountant.combination.Answer`)."""

    epsilon: float
    delta: float
    order: float
    orders: NDArray[np.float64]
    rdp: NDArray[np.float64]
    detail: Answer | None = None

    @property
    def zeta(self) -> float:
        return 0.0 if self.detail is None else self.detail.zeta


def refine_orders(orders: NDArray[np.float64], i: int) -> NDArray[np.float64]:
    """The real orders :func:`epsilon_guarantee` and :func:`delta_guarantee` try around the grid
    minimiser ``orders[i]``: :data:`_REFINE_POINTS` evenly spaced points strictly between its
    neighbours (below the first order: from halfway to 1, at least 1.0105; above the last: up to
    1.25 times it, at most ``MAX_ORDER``), the grid order itself left out. Any real order > 1 is
    valid for every curve here, so the refinement can only lower the answer."""
    lo = orders[i - 1] if i > 0 else max(1.0 + (orders[0] - 1.0) / 2.0, 1.0105)
    hi = orders[i + 1] if i + 1 < orders.size else min(orders[i] * 1.25, MAX_ORDER)
    pts: NDArray[np.float64] = np.linspace(lo, hi, _REFINE_POINTS + 2)[1:-1]
    fine: NDArray[np.float64] = pts[(pts != orders[i]) & (pts > 1.0)]
    return fine


def conversion_orders(grid: NDArray[np.float64], order: float) -> NDArray[np.float64]:
    """The orders array on which :func:`epsilon_guarantee` / :func:`delta_guarantee` evaluated
    ``order`` (their answer's order): the grid, the extension above the default grid, or the
    refinement around a grid order — so a caller asking for a curve there finds it in the curve
    caches; just ``[order]`` if it is none of them."""
    if np.any(grid == order):
        return grid
    ladder = extension_orders(grid, grid.size - 1)
    if np.any(ladder == order):
        return ladder
    j = int(np.searchsorted(grid, order))
    for i in (j - 1, j):
        if 0 <= i < grid.size:
            fine = refine_orders(grid, i)
            if np.any(fine == order):
                return fine
    return np.array([order])


def _order_of(ans: Answer, grid: NDArray[np.float64]) -> float:
    return float(grid[0]) if ans.order is None else float(ans.order)


def _index_of(orders: NDArray[np.float64], order: float | None) -> int | None:
    hit = np.flatnonzero(orders == order) if order is not None else np.empty(0, dtype=np.intp)
    return int(hit[0]) if hit.size else None


def _optimise(
    evs: list[Event],
    acc: Account,
    best: Answer,
    convert: Callable[[Account], Answer],
    value: Callable[[Answer], float],
    flags: tuple[bool, bool],
) -> Answer:
    """From ``best``, the conversion's answer on the grid ``acc.orders``: when it is positive and
    has an order, the best of it and the answers on the orders tried beyond the grid — the
    extension (``flags[1]``; :func:`~accountant.orders.extension_orders`: only when the optimum is
    the default grid's last order; its 24 orders, 16% apart, are not refined further), then the
    refinement around the grid's optimum (``flags[0]``); on a tie the earlier one."""
    refine, extend = flags
    grid = acc.orders
    i = _index_of(grid, best.order)
    if not value(best) > 0 or i is None:
        return best
    for tried in (extension_orders(grid, i) if extend else None, refine_orders(grid, i) if refine else None):
        if tried is not None and tried.size:
            ans = convert(Account(tried, _rdp_part(evs, tried), acc.zeta, acc.approx))
            if value(ans) < value(best):
                best = ans
    return best


def _events(events: Iterable[EventLike]) -> list[Event]:
    evs = [as_event(e) for e in events]
    if not evs:
        raise InvalidParameter("events must not be empty: give at least one event to compose")
    return evs


def epsilon_guarantee(
    events: Iterable[EventLike],
    delta: float,
    orders: ArrayLike | None = None,
    refine: bool = True,
    extend: bool = True,
) -> Guarantee:
    """Compose ``events`` and convert to ε at ``delta`` (bounds.md §4–5; with an additive δ or
    (ε, δ) releases, :func:`accountant.combination.epsilon_of`).

    The minimising order on the grid is refined with real orders between its neighbours (every
    curve here is valid at real orders), and the better of the two answers is reported. When the
    grid is the default one and its last order (10⁴) minimises, the orders of
    :data:`~accountant.orders.EXTENSION_ORDERS` (up to 3.2·10⁵) are tried first, and their answer
    is reported if it is better (``extend=False``: the grid and its refinement only; bounds.md §6).
    Raises :class:`~accountant.combination.ZetaExceedsDelta` when the additive δ reaches ``delta``.
    """
    delta = check_delta(delta)
    evs = _events(events)
    grid = np.asarray(_orders_key(orders))
    acc = _account(evs, grid)
    first = epsilon_of(acc, delta)
    if not np.isfinite(first.epsilon):
        raise InvalidParameter(UNBOUNDED)
    best = _optimise(evs, acc, first, lambda a: epsilon_of(a, delta), lambda x: x.epsilon, (refine, extend))
    return Guarantee(max(0.0, best.epsilon), delta, _order_of(best, grid), grid, acc.rdp, _detail(acc, best))


def _detail(acc: Account, ans: Answer) -> Answer | None:
    return None if acc.plain else ans


def delta_guarantee(
    events: Iterable[EventLike],
    epsilon: float,
    orders: ArrayLike | None = None,
    refine: bool = True,
    extend: bool = True,
) -> Guarantee:
    """Compose ``events`` and convert to δ at ``epsilon`` (bounds.md §4–5; with an additive δ or
    (ε, δ) releases, :func:`accountant.combination.delta_of`), refined and extended as above."""
    epsilon = check_epsilon(epsilon)
    evs = _events(events)
    grid = np.asarray(_orders_key(orders))
    acc = _account(evs, grid)
    best = _optimise(
        evs, acc, delta_of(acc, epsilon), lambda a: delta_of(a, epsilon), lambda x: x.delta, (refine, extend)
    )
    return Guarantee(epsilon, best.delta, _order_of(best, grid), grid, acc.rdp, _detail(acc, best))


__all__ = [
    "UNBOUNDED",
    "Account",
    "Guarantee",
    "ZetaExceedsDelta",
    "account",
    "compose",
    "conversion_orders",
    "curve_from_points",
    "delta_guarantee",
    "epsilon_guarantee",
    "event_rdp",
    "laplace_rdp",
    "refine_orders",
]
