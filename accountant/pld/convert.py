"""Stage 4 of the PLD route: certified δ(ε) and the smallest certified ε(δ) of a composition.

δ(ε) comes from :meth:`.compose.Composed.delta` with the tilt λ that minimises the Chernoff
exponent at that ε. ε(δ): a first guess is the Chernoff (RDP-of-the-discrete-PLD) ε,
min_λ (Σ T_k log M_k(λ) + log 1/(δ − δ_∞))/λ, which is ≥ the exact ε; the composition is tilted
for it; the grid cell where the certified δ(ε) (non-increasing in ε) crosses δ is found from an
approximate δ at the grid points (from the Chernoff guess down, every 32nd point first) and
settled with the certified δ (galloping from the guess, then bisection over grid points: O(log N)
evaluations however far off the guess); inside it the secant narrows the crossing to a few float
spacings and bisection finishes: the answer is the float where the certified δ first falls to δ
(or 0). δ(ε) costs O(1) per ε there (:mod:`.tail`'s suffix sums); where it is a pass over the
window, brentq narrows the cell first, and over a window part longer than 2¹⁶ points its root,
moved up until certified, is the answer (a few passes, as before). When the numerical error at the answer
exceeds 10⁻³·δ and the best tilt for the answer differs from the one used by more than 5%, the
composition is redone once with that tilt.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from .compose import Composed, best_tilt, inf_mass, log_mgf, tilted_compose
from .discretise import Discretised

#: the longest window part above ε whose δ(ε), when summed directly, the root is bisected to one
#: float with (each evaluation a pass over it); above it, brentq's root moved up until certified
_BISECT_DIRECT = 1 << 16

__all__ = ["delta_at", "epsilon_at"]

Parts = Sequence[tuple[Discretised, int]]


def _chernoff_epsilon(parts: Parts, target: float) -> float:
    from scipy.optimize import minimize_scalar

    log_inv = -math.log(target)

    def f(lam: float) -> float:
        return (sum(t * log_mgf(d, lam) for d, t in parts) + log_inv) / lam

    res = minimize_scalar(f, bounds=(1e-6, 400.0), method="bounded", options={"xatol": 1e-4})
    return max(0.0, float(res.fun))


def delta_at(parts: Parts, epsilon: float) -> tuple[float, float, Composed]:
    """(certified δ(ε), its numerical error bound, the composition used)."""
    comp = tilted_compose(parts, best_tilt(parts, epsilon))
    d, err = comp.delta(epsilon)
    return d, err, comp


def _root(comp: Composed, delta: float, top: float) -> float:
    """The smallest float ε ≥ 0 (to one ulp) with certified δ(ε) ≤ δ, from ``top`` (an ε above the
    answer, where the scan of the window starts): the grid cell of the crossing (:func:`_cell`),
    narrowed (:func:`_narrow`), then bisected. inf when no ε up to far above the window is
    certified."""
    got = _cell(comp, delta, top)
    if isinstance(got, float):
        return got
    lo, hi = got
    n = comp.losses.size
    k = int(np.searchsorted(comp.losses, hi, side="right"))
    if k < n and not comp.tail.cheap(k) and n - k > _BISECT_DIRECT:
        return _brent(comp, delta, lo, hi)  # a long pass over the window per ε: few of them
    lo, hi = _narrow(comp, delta, lo, hi, k >= n or comp.tail.cheap(k))
    while True:  # bisect to the float where the certified δ first falls to δ
        mid = lo + 0.5 * (hi - lo)
        if not lo < mid < hi:
            return hi
        if comp.delta(mid)[0] > delta:
            lo = mid
        else:
            hi = mid


def _cell(comp: Composed, delta: float, top: float) -> tuple[float, float] | float:
    """[lo, hi] with the certified δ above δ at lo and not at hi — a grid cell, guided by an
    approximation at the grid points (:meth:`.tail.Tail.last_above`, from ``top`` down, block by
    block, stopping at the first block that crosses) and moved until the certified δ at its ends
    straddles δ; below or above the window, a bracket grown geometrically — or the answer itself
    (0 when the root is ≤ 0, inf when none is found)."""
    losses, n = comp.losses, comp.losses.size

    def above(e: float) -> bool:
        return comp.delta(e)[0] > delta

    hi_i, block = n - 1, max(1024, n // 16)
    lo_i = max(0, min(hi_i, math.floor(top / comp.step) - comp.a - block)) if math.isfinite(top) else 0
    i = comp.tail.last_above(lo_i, hi_i, delta)
    while i is None and lo_i > 0:
        hi_i, lo_i = lo_i, max(0, lo_i - block)
        i = comp.tail.last_above(lo_i, hi_i, delta)
    i = _grid_crossing(lambda j: above(float(losses[j])), -1 if i is None else i, n)
    if 0 <= i < n - 1:
        lo, hi = float(losses[i]), float(losses[i + 1])
    else:
        got = _outside(comp, delta, i < 0)
        if isinstance(got, float):
            return got
        lo, hi = got
    if lo <= 0.0:  # ε ≥ 0: a root at or below 0 answers 0
        if hi <= 0.0 or not above(0.0):
            return 0.0
        lo = 0.0
    return lo, hi


def _brent(comp: Composed, delta: float, lo: float, hi: float) -> float:
    """The root in [lo, hi] by brentq, moved up until the certified δ there is ≤ δ."""
    from scipy.optimize import brentq

    def g(e: float) -> float:
        return math.log(max(comp.delta(e)[0], 1e-300)) - math.log(delta)

    r = float(brentq(g, lo, hi, xtol=1e-9 * comp.step, rtol=1e-12))
    bump = max(abs(r), 1.0) * 1e-12
    for _ in range(200):
        if comp.delta(r)[0] <= delta:
            return r
        r += bump
        bump *= 2.0
    return hi


def _grid_crossing(above_at: Callable[[int], bool], i: int, n: int) -> int:
    """The grid index j ∈ [−1, n − 1] with the certified δ above δ at j (or j = −1) and not at
    j + 1 (or j + 1 = n), from the guess ``i``: galloping away from it, then bisection — O(log n)
    certified evaluations even when the guess is far off (δ is non-increasing in ε)."""

    def at(j: int) -> bool:
        return True if j < 0 else False if j >= n else above_at(j)

    lo, hi, step = i, i + 1, 1
    while at(hi):  # the crossing is above: gallop up
        lo, hi, step = hi, min(n, hi + 2 * step), 2 * step
    while not at(lo):  # … or below: gallop down
        hi, lo, step = lo, max(-1, lo - 2 * step), 2 * step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if at(mid) else (lo, mid)
    return lo


def _outside(comp: Composed, delta: float, below: bool) -> tuple[float, float] | float:
    """The bracket of :func:`_cell` when the crossing lies below the window's first loss (grown
    down to 0) or above its last (grown up; δ falls with e^{−λε}, the alias term, down to the
    mass at +∞): inf if none is found."""
    losses = comp.losses
    if below:
        hi = float(losses[0])
        lo = hi - comp.step
        while lo > 0.0 and not comp.delta(lo)[0] > delta:
            hi, lo = lo, hi - 2.0 * (hi - lo)
        return lo, hi
    lo = hi = float(losses[-1])
    for _ in range(200):
        hi = hi * 1.5 + 10 * comp.step
        if not comp.delta(hi)[0] > delta:
            return lo, hi
        lo = hi
    return math.inf


def _narrow(comp: Composed, delta: float, lo: float, hi: float, fast: bool) -> tuple[float, float]:
    """A sub-bracket of [lo, hi] (the certified δ above δ at its bottom, not at its top) around
    an estimate of the root of g(ε) = log δ(ε) − log δ, a few float spacings wide (then a few
    bisections finish): by the secant within the cell when δ(ε) costs O(1) (``fast``; log δ is
    close to linear over a cell), else by brentq (a pass over the window per ε). [lo, hi] if
    the estimate misses."""

    def g(e: float) -> float:
        return math.log(max(comp.delta(e)[0], 1e-300)) - math.log(delta)

    if fast:
        a, b, ga, gb = lo, hi, g(lo), g(hi)
        r = b
        for _ in range(8):  # Illinois: regula falsi with the stale end's value halved
            if not (ga > 0.0 >= gb and math.isfinite(ga) and math.isfinite(gb)):
                return lo, hi
            r = b - gb * (b - a) / (gb - ga)
            if not a < r < b:
                break
            gr = g(r)
            if gr > 0.0:
                a, ga, gb = r, gr, gb * 0.5
            else:
                b, gb, ga = r, gr, ga * 0.5
            if b - a <= 64.0 * math.ulp(b):
                return a, b
        tol = 8.0 * math.ulp(r)
    else:
        from scipy.optimize import brentq

        r = float(brentq(g, lo, hi, xtol=1e-9 * comp.step, rtol=1e-12))
        tol = 2.0 * (1e-9 * comp.step + 4e-12 * abs(r))
    for _ in range(8):  # widen around r until it straddles the root
        a, b = max(lo, r - tol), min(hi, r + tol)
        if (a == lo or g(a) > 0.0) and (b == hi or g(b) <= 0.0):
            return a, b
        tol *= 16.0
    return lo, hi


def epsilon_at(parts: Parts, delta: float) -> tuple[float, float, float, Composed]:
    """(smallest certified ε with δ(ε) ≤ δ, the certified δ there, its error bound, composition);
    ε = inf when the mass at +∞ alone reaches δ."""
    if inf_mass(parts) >= delta:
        comp = tilted_compose(parts, 0.0)
        return math.inf, 1.0, 0.0, comp
    guess = _chernoff_epsilon(parts, delta - inf_mass(parts))
    lam = best_tilt(parts, guess)
    comp = tilted_compose(parts, lam)
    eps = _root(comp, delta, max(guess, comp.step))
    d, err = comp.delta(eps)
    if math.isfinite(eps) and err > 1e-3 * delta:
        lam2 = best_tilt(parts, eps)
        if abs(lam2 - lam) > 0.05 * max(lam, 1e-9):
            comp = tilted_compose(parts, lam2)
            eps = _root(comp, delta, max(eps, comp.step))
            d, err = comp.delta(eps)
    return eps, d, err, comp
