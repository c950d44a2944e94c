"""The count in closed form, and ε after each number of rounds.

RDP composes additively (thesis Lemma 2.1.4): T repetitions of an event cost T·ε₁(α) at every
order α, with ε₁ the curve of one repetition. The conversion of Lemma 2.1.3 at order α is then
ε_α(T) = T·ε₁(α) + c_α with c_α = log(1 − 1/α) − log(δ·α)/(α − 1), linear in T; so per order the
largest count meeting a target t is ⌊(t − c_α)/ε₁(α)⌋ (or the KL guard's count, where ε = 0
already holds). The count calibration takes the maximum over the grid, extends it through the
refinement between grid points (the same closed form on the refinement's real orders), and the
caller verifies the answer with F at the answer and the answer + 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import MAX_COUNT, check_orders
from ..composition import UNBOUNDED, epsilon_guarantee, event_rdp, refine_orders
from ..conversion import epsilon_vector
from ..errors import InvalidParameter
from ..events import Event
from ..orders import extension_orders

_REFINEMENT_RUNS = 12  # runs of counts with one grid minimiser followed through the refinement
_CHUNK = 2_000_000  # matrix entries per block in epsilon_over_rounds
_MAX_SLOW_COUNTS = 200  # counts evaluated one by one (events with an additive δ)


def _conversion_offsets(orders: NDArray[np.float64], delta: float) -> NDArray[np.float64]:
    """c_α with ε_α(T) = T·ε₁(α) + c_α (Lemma 2.1.3; +inf where the order is not used)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.log1p(-1.0 / orders) - np.log(delta * orders) / (orders - 1.0)
    return np.where(orders > 1.01, c, np.inf)


def _max_counts(
    orders: NDArray[np.float64], unit: NDArray[np.float64], delta: float, t: float
) -> NDArray[np.float64]:
    """Per order, the largest integer T with T·ε₁(α) + c_α ≤ t, or with T·ε₁ below the KL guard
    (ε = 0); MAX_COUNT where ε₁ = 0, −1 where the order is unusable."""
    c = _conversion_offsets(orders, delta)
    kl = -math.log1p(-delta * delta)  # ε = 0 when T·ε₁ < kl
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lin = np.floor((t - c) / unit)
        klc = np.ceil(kl / unit) - 1.0
    out = np.where(np.isfinite(c), lin, -1.0)
    out = np.maximum(out, np.where(np.isfinite(klc), klc, -1.0))
    out = np.where(unit == 0, float(MAX_COUNT), out)
    out = np.where(np.isfinite(unit), out, -1.0)
    out = np.where(np.isnan(out), -1.0, out)
    return np.clip(out, -1.0, float(MAX_COUNT))


def _scaled(unit: NDArray[np.float64], counts: float | NDArray[np.float64]) -> NDArray[np.float64]:
    """count·ε₁ (0 where ε₁ = 0, also against an infinite count)."""
    with np.errstate(invalid="ignore"):
        return np.where(unit == 0, 0.0, unit * counts)


def _argmin_interval_end(unit: NDArray[np.float64], c: NDArray[np.float64], i: int, count: int) -> int:
    """The last count ≥ ``count`` at which grid order i still minimises the grid ε (argmin takes
    the first index on ties), from the crossing counts of the lines T·ε₁ + c (approximate in the
    last unit; the answer is verified)."""
    ok = np.isfinite(c) & np.isfinite(unit) & (unit < unit[i])
    if not np.any(ok):
        return MAX_COUNT
    idx = np.nonzero(ok)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (c[idx] - c[i]) / (unit[i] - unit[idx])
    ends = np.where(idx < i, np.ceil(cross) - 1.0, np.floor(cross))
    ends = ends[np.isfinite(ends)]
    end = float(np.min(ends)) if ends.size else float(MAX_COUNT)
    return int(min(max(end, count), MAX_COUNT))


def _tried_orders(grid: NDArray[np.float64], i: int) -> NDArray[np.float64]:
    """The orders beyond the grid that :func:`epsilon_guarantee` may try when grid order i
    minimises: the refinement around it and — i the default grid's last order — the extension."""
    return np.concatenate([extension_orders(grid, i), refine_orders(grid, i)])


def _through_refinement(
    unit_ev: Event, grid: NDArray[np.float64], unit: NDArray[np.float64], delta: float, t: float, count: int
) -> int:
    """Extend the grid's answer ``count`` through the refinement: in each run of counts where
    grid order i minimises the grid ε, the refinement also tries the real orders between i's
    neighbours (and the extension above the default grid, :func:`_tried_orders`), where the same
    closed form applies."""
    c = _conversion_offsets(grid, delta)
    cur = max(count + 1, 1)
    for _ in range(_REFINEMENT_RUNS):
        if cur > MAX_COUNT:
            break
        e = epsilon_vector(grid, _scaled(unit, cur), delta)
        i = int(np.argmin(e))
        fine = _tried_orders(grid, i)
        if not math.isfinite(e[i]) or e[i] > t * 1.05 or e[i] == 0 or fine.size == 0:
            break
        end = _argmin_interval_end(unit, c, i, cur)
        funit = np.asarray(event_rdp(unit_ev, fine), dtype=float)
        tf = int(_max_counts(fine, funit, delta, t).max())
        if tf >= cur:
            count = max(count, min(tf, end))
        cur = end + 1
    return count


def closed_form_count(unit_ev: Event, grid: NDArray[np.float64], delta: float, t: float) -> int:
    """The largest count meeting ``t`` by the closed form (0 when even one round misses;
    MAX_COUNT when the curve is 0); to be verified with F."""
    unit = np.asarray(event_rdp(unit_ev, tuple(grid.tolist())), dtype=float)
    count = int(_max_counts(grid, unit, delta, t).max())
    if count >= MAX_COUNT:
        return MAX_COUNT
    return max(0, _through_refinement(unit_ev, grid, unit, delta, t, count))


# ---------------------------------------------------------------------------------------------
# ε after each number of rounds


@dataclass(frozen=True)
class RoundsCurve:
    """ε (and the optimal order) after each number of rounds, from :func:`epsilon_over_rounds`."""

    counts: NDArray[np.int64]
    epsilon: NDArray[np.float64]
    order: NDArray[np.float64]
    delta: float
    orders: NDArray[np.float64] = field(repr=False)

    def __len__(self) -> int:
        return int(self.counts.size)

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": [int(c) for c in self.counts],
            "epsilon": [float(e) for e in self.epsilon],
            "order": [float(o) for o in self.order],
            "delta": self.delta,
            "orders": [float(o) for o in self.orders],
        }


def check_counts(counts: ArrayLike) -> NDArray[np.int64]:
    """``counts`` as a 1-D int64 array of whole numbers in [1, MAX_COUNT]."""
    try:
        c = np.atleast_1d(np.asarray(counts))
    except (TypeError, ValueError) as exc:  # ragged or non-numeric nesting
        raise InvalidParameter(f"counts must be a list of integers >= 1: {exc}") from None
    if c.ndim != 1 or c.size == 0:
        raise InvalidParameter("counts must be a non-empty one-dimensional list of integers >= 1")
    if c.dtype == bool or not (np.issubdtype(c.dtype, np.integer) or np.issubdtype(c.dtype, np.floating)):
        raise InvalidParameter(f"counts must be integers >= 1, got dtype {c.dtype}")
    cf = c.astype(float)
    if not np.all(np.isfinite(cf)) or np.any(cf != np.floor(cf)):
        raise InvalidParameter("counts must be whole numbers >= 1")
    if np.any(cf < 1) or np.any(cf > MAX_COUNT):
        raise InvalidParameter(f"every count must be between 1 and {MAX_COUNT:.0e}")
    return cf.astype(np.int64)


def _better_on(
    unit_ev: Event,
    orders: NDArray[np.float64],
    delta: float,
    cc: NDArray[np.float64],
    sel: NDArray[np.intp],
    best: NDArray[np.float64],
    best_ord: NDArray[np.float64],
) -> None:
    """For the rows ``sel``: where the minimum over ``orders`` is below ``best``, take it (in place)."""
    feps = epsilon_vector(
        orders, _scaled(np.asarray(event_rdp(unit_ev, orders), dtype=float)[None, :], cc[sel]), delta
    )
    j = np.argmin(feps, axis=1)
    fbest = feps[np.arange(sel.size), j]
    better = fbest < best[sel]
    best[sel[better]] = fbest[better]
    best_ord[sel[better]] = orders[j[better]]


def _rows(
    unit_ev: Event,
    grid: NDArray[np.float64],
    unit: NDArray[np.float64],
    delta: float,
    cc: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(ε, order) for the counts ``cc`` (a column): the minimum over the grid of each row, the
    extension of :func:`epsilon_guarantee` for the rows whose minimiser is the default grid's last
    order, then the refinement (the real orders ``refine_orders`` puts around the row's grid
    minimiser), for all rows sharing a minimiser at once."""
    eps = epsilon_vector(grid, _scaled(unit[None, :], cc), delta)
    idx = np.argmin(eps, axis=1)
    best = eps[np.arange(cc.shape[0]), idx]
    if not np.all(np.isfinite(best)):
        raise InvalidParameter(UNBOUNDED)
    best_ord = grid[idx].copy()
    at_end = np.nonzero((idx == grid.size - 1) & (best > 0))[0]
    ladder = extension_orders(grid, grid.size - 1) if at_end.size else np.empty(0)
    if ladder.size:  # the extension's answer where it is better (first: as epsilon_guarantee)
        _better_on(unit_ev, ladder, delta, cc, at_end, best, best_ord)
    for i in np.unique(idx[best > 0]):
        sel = np.nonzero((idx == i) & (best > 0))[0]
        fine = refine_orders(grid, int(i))
        if fine.size:
            _better_on(
                unit_ev, np.asarray(tuple(check_orders(fine).tolist())), delta, cc, sel, best, best_ord
            )
    return np.maximum(best, 0.0), best_ord


def rounds_curve(
    unit_ev: Event, grid: NDArray[np.float64], delta: float, counts: NDArray[np.int64]
) -> RoundsCurve:
    """ε at ``delta`` after each count of ``counts`` (see :func:`epsilon_over_rounds`).

    Events with an additive δ or (ε, δ) releases (not linear in the count alone) are evaluated
    count by count with :func:`~accountant.composition.epsilon_guarantee`."""
    if unit_ev.APPROX or unit_ev.zeta > 0:
        if counts.size > _MAX_SLOW_COUNTS:
            raise InvalidParameter(
                f"ε over rounds of an event with an additive δ is computed count by count: ask for at most "
                f"{_MAX_SLOW_COUNTS} counts, got {counts.size}"
            )
        gs = [epsilon_guarantee([unit_ev.with_count(int(c))], delta, grid) for c in counts]
        return RoundsCurve(
            counts=counts,
            epsilon=np.array([g.epsilon for g in gs]),
            order=np.array([g.order for g in gs]),
            delta=delta,
            orders=grid,
        )
    unit = np.asarray(event_rdp(unit_ev, tuple(grid.tolist())), dtype=float)
    out_eps = np.empty(counts.size)
    out_ord = np.empty(counts.size)
    chunk = max(1, _CHUNK // max(grid.size, 1))
    for s in range(0, counts.size, chunk):
        out_eps[s : s + chunk], out_ord[s : s + chunk] = _rows(
            unit_ev, grid, unit, delta, counts[s : s + chunk].astype(float)[:, None]
        )
    return RoundsCurve(counts=counts, epsilon=out_eps, order=out_ord, delta=delta, orders=grid)


__all__ = ["RoundsCurve", "check_counts", "closed_form_count", "rounds_curve"]
