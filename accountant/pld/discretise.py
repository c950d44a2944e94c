"""Stage 2 of the PLD route: a pair's certified curve → a pessimistic PLD on the grid jΔ.

Construction
------------
Grid: ε_j = jΔ for j_lo ≤ j ≤ j_hi, with j_lo Δ ≤ max(lo, center − 8·scale) and j_hi Δ ≥
min(hi, the first center + k·scale, k = 10·1.1^i, with δ(ε) − P(L = ∞) ≤ 1e-30). The certified
values δ_j ≥ δ(ε_j) of the pair (evaluated at every grid point of the bulk [center − 3·scale,
center + 8·scale] and at every 4th point outside it, where the chord in x = e^ε between evaluated
neighbours is used instead: an upper bound, as the exact curve is convex in x; raised by 8u
relative and 8u of the left value for the rounding of the interpolation) (made non-increasing by a running minimum, which keeps them ≥ the
exact non-increasing curve) go through dp_accounting's pessimistic connect-the-dots
(``pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap``; Doroshenko, Ghazi, Kamath, Kumar,
Manurangsi, PETS 2022, Alg. 1): masses p_j on the grid and δ_{j_hi} at +∞.

Why it dominates (for *upper* values δ_j, not only exact ones). Let δ̂ be the hockey-stick curve
δ̂(ε) = p_∞ + Σ_j p_j (1 − e^{ε − ε_j})_+ of the (signed) measure solving the connect-the-dots
equations in exact arithmetic. As a function of x = e^ε, δ̂ is the piecewise-linear interpolation
of the points (e^{ε_j}, δ_j), equal to p_∞ = δ_{j_hi} beyond the last point and to the chord from
(0, 1) to (e^{ε_lo}, δ_lo) before the first (so every mass below the grid is moved up to it). The
exact curve δ(x) is convex, ≤ 1 at x = 0 and non-increasing, and δ_j ≥ δ(x_j): each chord lies
above it, so δ̂ ≥ δ at every real ε. dp_accounting then clips negative masses to 0, which only
raises δ̂ (a mass p_j enters δ̂ with the coefficient (1 − e^{ε−ε_j})_+ ≥ 0). The result is a
non-negative measure ω̂ (total mass ≥ 1) with δ_ω̂ ≥ δ everywhere, and that is all composition
needs: δ_{ω1∗ω2}(ε) = ∫ δ_{ω1}(ε − l) dω2(l) ≤ ∫ δ_{ω̂1}(ε − l) dω2(l) = ∫ δ_{ω2}(ε − l) dω̂1(l)
≤ δ_{ω̂1∗ω̂2}(ε), using ω2 ≥ 0 and then ω̂1 ≥ 0.

Floating point. dp_accounting computes p_j = ((d_j − e^Δ d_{j−1})/(e^Δ − 1) (d_j = δ_{j+1} − δ_j;
first p = 1 − δ_lo + d_0/(e^Δ − 1), last p = d/(e^{−Δ} − 1)) with ≤ 6 roundings and libm's exp /
expm1 (≤ 1 ulp), so |p̃_j − p_j| ≤ 16u·(|d_j| + e^Δ|d_{j−1}|)/(e^Δ − 1) (+ 16u·(1 + δ_lo) for the
first), u = 2⁻⁵³; clipping is 1-Lipschitz. Those bounds are *added* to the masses (every mass
only raises δ̂), so the stored masses dominate the exact clipped measure entry by entry.

Δ (:func:`choose_step`): one grid for all events of a query, Δ = min scale/25 over the events
(connect-the-dots errors are second order in Δ: the shuffle headline's ε moves by 1e-4 relative
from Δ = σ/25 to σ/50; bench/results_pld.md) — /100 when the query has fewer than 128 rounds in
all (a short composition's FFT is small; longer ones reach that grid in blocks, :mod:`.blocks`) —,
coarsened so that no event's grid exceeds 2·10⁵
points and ±8 standard deviations of the composed loss fit in 2²¹ points, and aligned so that the first event with a bounded loss range has its top hi on the grid
(a pure ε-DP release then costs exactly its ε, up to rounding).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..dominating import HockeyStickPair
from ..store import BoundedCache, MiB

__all__ = [
    "FINE",
    "SHORT_ROUNDS",
    "Discretised",
    "cached",
    "choose_step",
    "discretise_pair",
    "from_curve",
    "grid_curve",
    "remember",
]

U = 2.0**-53
_LOW_SCALES = 8.0
_TOP_DELTA = 1e-30
_STEPS_PER_SCALE = 25.0
#: compositions of fewer rounds than this use a grid FINE times finer; longer ones are composed in
#: blocks on that finer grid (:mod:`.blocks`)
SHORT_ROUNDS = 128
FINE = 4
_MAX_POINTS = 200_000
_MAX_WINDOW = 1 << 21  # FFT points for ±8 composed standard deviations
_DOTS_ROUNDING = 16 * U
_FINE_BELOW, _FINE_ABOVE, _COARSE = 3.0, 8.0, 4

_CACHE: BoundedCache[tuple[Hashable, ...], Discretised] = BoundedCache(
    256, 64 * MiB, sizeof=lambda _k, v: 2 * int(v.probs.nbytes) + 256, name="pld_pmfs"
)


@dataclass(frozen=True)
class Discretised:
    """The pessimistic single-round PLD of one pair on the grid jΔ: ``probs[i]`` is an upper
    bound of the (clipped) connect-the-dots mass at loss (start + i)·Δ, ``inf_mass`` the mass
    at +∞ (module docstring). Read-only arrays; cached per (pair, Δ)."""

    key: tuple[Hashable, ...]
    step: float
    start: int
    probs: NDArray[np.float64]
    inf_mass: float
    #: log of ``probs`` (−inf where 0), for the moment-generating functions of the tilt search
    log_probs: NDArray[np.float64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        with np.errstate(divide="ignore"):
            lp = np.log(self.probs)
        lp.setflags(write=False)
        object.__setattr__(self, "log_probs", lp)

    @property
    def total(self) -> float:
        """An upper bound of the total mass (finite part + ∞), ≥ 1 up to rounding."""
        return float((math.fsum(self.probs.tolist()) + self.inf_mass) * (1.0 + 4 * U))


def _span(pair: HockeyStickPair) -> tuple[float, float]:
    """(bottom, top) of the grid before rounding to multiples of Δ (module docstring)."""
    if pair.scale <= 0.0:
        return max(pair.lo, pair.center), min(pair.hi, pair.center)
    bottom = max(pair.lo, pair.center - _LOW_SCALES * pair.scale)
    top = pair.hi
    k = 10.0
    while pair.center + k * pair.scale < pair.hi:
        t = pair.center + k * pair.scale
        if float(pair.delta(t)[0]) - pair.inf_mass <= _TOP_DELTA:
            top = t
            break
        k *= 1.1
    return bottom, top


def finer_pays(scale: float, rounds: int, fine: float) -> bool:
    """Whether composing ``rounds`` copies of a pair with loss scale ``scale`` on the grid ``fine``
    (Δ/4) can gain: connect-the-dots' rounding, ≤ 32u/Δ of mass per round (Σ|d_j| ≤ 2), stays below
    10⁻³ over the rounds (it grows as 1/Δ: on tiny grids it is what the answer pays, not the
    step), and the tilt the answer wants, ≈ 6/(scale·√rounds) at δ ≈ 10⁻⁸, is within 50× of the
    tilt search's range (far beyond it the answer rests on the composition's absolute accuracy,
    which the finer grid's rounding lowers: measured worse by 0.1–0.4% at n = 10¹², ε0 = 0.5)."""
    return scale > 0.0 and rounds * 32 * U / fine <= 1e-3 and 6.0 / (scale * math.sqrt(rounds)) <= 2e4


def choose_step(pairs: Sequence[HockeyStickPair], counts: Sequence[int]) -> float:
    """One grid step Δ for all ``pairs`` (repeated ``counts`` times; module docstring)."""
    scales = [p.scale for p in pairs if p.scale > 0.0]
    if not scales:
        return 1e-3
    step = min(scales) / _STEPS_PER_SCALE
    rounds = sum(counts)
    if rounds < SHORT_ROUNDS and finer_pays(min(scales), rounds, step / FINE):
        step /= FINE  # a short composition: its FFT is small
    widths = [
        min(p.hi, p.center + 12.0 * p.scale) - max(p.lo, p.center - _LOW_SCALES * p.scale) for p in pairs
    ]
    spread = math.sqrt(sum(t * p.scale**2 for p, t in zip(pairs, counts)))
    step = max(step, max(widths) / _MAX_POINTS, 16.0 * spread / _MAX_WINDOW)
    for p in pairs:
        if p.scale > 0.0 and math.isfinite(p.hi) and p.hi > 0.0 and p.hi <= p.center + 12.0 * p.scale:
            return p.hi / math.ceil(p.hi / step)
    return step


def _dots_error(deltas: NDArray[np.float64], step: float) -> NDArray[np.float64]:
    """Bound on |computed − exact| of each connect-the-dots mass (module docstring)."""
    d = np.abs(np.diff(deltas))
    em1 = math.expm1(step)
    err = np.zeros(deltas.size)
    if deltas.size == 1:
        return err + _DOTS_ROUNDING
    err[1:-1] = (d[1:] + math.exp(step) * d[:-1]) / em1
    err[0] = 1.0 + deltas[0] + d[0] / em1
    err[-1] = d[-1] / -math.expm1(-step)
    return err * _DOTS_ROUNDING * (1.0 + 1e-6)


def _dense(pmf: object) -> tuple[int, NDArray[np.float64]]:
    """(lower index, probs) of a dp_accounting PLDPmf (sparse or dense)."""
    dense = pmf.to_dense_pmf()  # type: ignore[attr-defined]
    return int(dense._lower_loss), np.asarray(dense._probs, dtype=np.float64)


def _curve_on_grid(pair: HockeyStickPair, eps: NDArray[np.float64], j_lo: int = 0) -> NDArray[np.float64]:
    """Certified δ at every grid point: the pair's curve at every point of the bulk
    [center − 3·scale, center + 8·scale] and at every 4th point (and the ends) outside it; in
    between, the chord in x = e^ε of the two evaluated neighbours (module docstring)."""
    j = np.arange(eps.size)
    core = (eps >= pair.center - _FINE_BELOW * pair.scale) & (eps <= pair.center + _FINE_ABOVE * pair.scale)
    picked = core | ((j + j_lo) % _COARSE == 0) | (j == 0) | (j == eps.size - 1)  # ends, every 4th
    if pair.scale <= 0.0 or bool(np.all(picked)):
        return pair.delta(eps)
    at = np.flatnonzero(picked)
    vals = pair.delta(eps[at])
    # the chord in x = e^ε between the evaluated neighbours a < j < b, in local form (no overflow):
    # θ = (e^{ε_j} − e^{ε_a})/(e^{ε_b} − e^{ε_a}) = expm1(ε_j − ε_a)/expm1(ε_b − ε_a) ∈ [0, 1]
    left = np.clip(np.searchsorted(at, j, side="right") - 1, 0, at.size - 2)
    a, b = at[left], at[left + 1]
    theta = np.clip(np.expm1(eps - eps[a]) / np.expm1(eps[b] - eps[a]), 0.0, 1.0)
    chord = (1.0 - theta) * vals[left] + theta * vals[left + 1]
    out: NDArray[np.float64] = np.minimum(chord * (1.0 + 8 * U) + 8 * U * vals[left], 1.0)
    out[at] = vals
    return out


def cached(key: tuple[Hashable, ...]) -> Discretised | None:
    """A PLD already built under ``key`` (pair key + Δ, or a block's key), if still cached."""
    return _CACHE.get(key)


def remember(d: Discretised) -> Discretised:
    """Cache ``d`` under its key (e.g. a pair's PLD on Δ read off its finer curve) and return it."""
    _CACHE.put(d.key, d)
    return d


def discretise_pair(pair: HockeyStickPair, step: float) -> Discretised:
    """The pessimistic single-round PLD of ``pair`` on the grid jΔ (cached per (pair, Δ))."""
    key = (*pair.key, float(step))
    got = _CACHE.get(key)
    if got is not None:
        return got
    j_lo, deltas = grid_curve(pair, step)
    out = from_curve(key, step, j_lo, deltas)
    _CACHE.put(key, out)
    return out


def grid_curve(pair: HockeyStickPair, step: float, aligned: bool = False) -> tuple[int, NDArray[np.float64]]:
    """(j_lo, certified non-increasing δ at ε_j = jΔ for j = j_lo … j_lo + len − 1); ``aligned``:
    outside the bulk the curve is evaluated at every 4th *absolute* index (a grid 4× coarser then
    reads evaluated values, :mod:`.blocks`), else at every 4th from the grid's start."""
    bottom, top = _span(pair)
    j_lo = math.floor(bottom / step)
    j_hi = max(j_lo, math.ceil(top / step))
    eps = np.arange(j_lo, j_hi + 1, dtype=np.float64) * step
    return j_lo, np.minimum.accumulate(_curve_on_grid(pair, eps, j_lo if aligned else 0))


def from_curve(key: tuple[Hashable, ...], step: float, j_lo: int, deltas: NDArray[np.float64]) -> Discretised:
    """The pessimistic PLD on jΔ from certified values δ_j ≥ δ(jΔ), j = j_lo … (module docstring)."""
    from dp_accounting.pld import pld_pmf  # the optional extra [pld]

    j_hi = j_lo + deltas.size - 1
    pmf = pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(step, j_lo, j_hi, deltas)
    lower, probs = _dense(pmf)
    full = np.zeros(j_hi - j_lo + 1)
    full[lower - j_lo : lower - j_lo + probs.size] = probs
    full = (np.maximum(full, 0.0) + _dots_error(deltas, step)) * (1.0 + 2 * U)
    full.setflags(write=False)
    return Discretised(key, float(step), int(j_lo), full, float(deltas[-1]))
