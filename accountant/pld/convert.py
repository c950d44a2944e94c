"""Stage 4 of the PLD route: certified δ(ε) and the smallest certified ε(δ) of a composition.

δ(ε) comes from :meth:`.compose.Composed.delta` with the tilt λ that minimises the Chernoff
exponent at that ε. ε(δ): a first guess is the Chernoff (RDP-of-the-discrete-PLD) ε,
min_λ (Σ T_k log M_k(λ) + log 1/(δ − δ_∞))/λ, which is ≥ the exact ε; the composition is tilted
for it; scipy's brentq finds the root of log δ(ε) = log δ on the certified curve (non-increasing
in ε) — bracketed first within a grid cell or two by an approximate δ at the grid points (two
first-order recurrences over the composed vector, run from the top of the window down to the
crossing only), so that only a few certified evaluations are needed (each ε evaluated once per
composition) — and the root is moved up until the certified δ at it is ≤ δ. When the numerical error at
the answer exceeds 10⁻³·δ and the best tilt for the answer differs from the one used by more
than 5%, the composition is redone once with that tilt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .compose import Composed, best_tilt, inf_mass, log_mgf, tilted_compose
from .discretise import Discretised

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


def _root(comp: Composed, delta: float, hi: float) -> float:
    from scipy.optimize import brentq

    def f(e: float) -> float:
        return math.log(max(comp.delta(e)[0], 1e-300)) - math.log(delta)

    step = comp.step
    cell = _grid_bracket(comp, delta, hi)
    if cell is not None and cell[0] >= 0.0:
        try:  # a few grid cells: a few certified evaluations finish the search
            return _certify(comp, delta, float(brentq(f, *cell, xtol=1e-9 * step, rtol=1e-12)), cell[1])
        except ValueError:  # f has the same sign at both ends: the approximation missed, search widely
            pass
    for _ in range(200):
        if f(hi) <= 0.0:
            break
        hi = hi * 1.5 + 10 * step
    else:
        return math.inf
    lo = 0.9 * hi  # the Chernoff guess is above the answer, usually by a few per cent
    while f(lo) <= 0.0:
        if lo <= step:
            if f(0.0) <= 0.0:
                return 0.0
            hi, lo = lo, 0.0
            break
        hi, lo = lo, lo * 0.5
    return _certify(comp, delta, float(brentq(f, lo, hi, xtol=1e-13, rtol=1e-10)), hi)


def _grid_bracket(comp: Composed, delta: float, top: float) -> tuple[float, float] | None:
    """An *approximate* δ(ε) at the grid points of the window (two first-order recurrences:
    S_r(k) = Σ_{l>k} r^{l−k} G_l for r = e^{−λΔ}, e^{−(λ+1)Δ}, by scipy's lfilter), and the two grid
    points around its last crossing of δ, widened by a cell each side; None if it does not cross.
    The recurrences run from the top of the window down, in blocks (the filter state carried over:
    the same values as one run), the first ending at ``top`` (an ε above the answer), and stop at
    the first block where the approximation exceeds δ: the window below it is not needed. Only a
    bracket for the certified search: nothing here is relied on."""
    from scipy.signal import lfilter

    lam, step, g = comp.lam, comp.step, comp.G
    den1, den2 = [1.0, -math.exp(-lam * step)], [1.0, -math.exp(-(lam + 1.0) * step)]
    z1, z2 = np.zeros(1), np.zeros(1)
    hi = g.size
    lo = max(0, min(hi - 1, math.floor(top / step) - comp.a)) if math.isfinite(top) else 0
    block = max(1024, g.size // 16)
    while True:
        seg = g[lo:hi]
        y1, z1 = lfilter([1.0], den1, seg[::-1], zi=z1)
        y2, z2 = lfilter([1.0], den2, seg[::-1], zi=z2)
        eps = (comp.a + lo + np.arange(seg.size, dtype=np.float64)) * step
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            diff = np.maximum((y1[::-1] - seg) - (y2[::-1] - seg), 1e-300)
            approx = np.exp(comp.log_scale - lam * eps + np.log(diff)) + comp.inf
        above = np.flatnonzero(approx > delta)
        if above.size or lo == 0:
            break
        hi, lo = lo, max(0, lo - block)
    k = lo + int(above[-1]) if above.size else -1
    if k < 1 or k + 2 >= g.size:
        return None
    return (comp.a + k - 1) * step, (comp.a + k + 2) * step


def _certify(comp: Composed, delta: float, r: float, hi: float) -> float:
    """Move ``r`` up until the certified δ there is ≤ δ."""
    bump = max(abs(r), 1.0) * 1e-12
    for _ in range(200):
        if comp.delta(r)[0] <= delta:
            return r
        r += bump
        bump *= 2.0
    return hi


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
