"""The clone pair's exact (ε, δ) for one shuffle, certified in the pessimistic direction.

Source
------
Feldman, McMillan, Talwar, "Hiding Among the Clones: A Simple and Nearly Optimal Analysis of
Privacy Amplification by Shuffling", FOCS 2021 (arXiv:2012.12803), section 3 (the reduction for a
general ε0-LDP randomizer; the thesis cites it as [FMT22]). For any ε0-LDP local randomizers —
discrete or continuous outputs, adaptively chosen — the shuffled outputs on two replace-one
neighbouring datasets are one post-processing of

    C ~ Bin(n−1, e^{−ε0}),  A | C ~ Bin(C, 1/2),  Δ ~ Bern(α),  α = E/(E+1),  E = e^{ε0},
    P = (A + Δ, C − A + 1 − Δ),     Q = (A + 1 − Δ, C − A + Δ),

so the shuffle is (ε, δ(ε))-DP with δ(ε) = E_Q[(P/Q − e^ε)_+] = Σ_o (P(o) − e^ε Q(o))_+, the
hockey-stick divergence of the pair. Q is P with its two coordinates swapped (A ↦ C − A), so the
divergence is the same in both directions and one direction covers both neighbour orders. This
module evaluates that divergence (the quantity the authors' public code approximates by a binary
search over a coarse grid of C); the closed form below is derived here and checked against a
brute-force 40-digit sum in the tests.

Closed form given C = c
-----------------------
The coordinates sum to c + 1, so c is observed and δ(ε) = Σ_c P(C=c)·δ_c(ε). With x the first
coordinate, b the Bin(c, ½) pmf and ρ = b(x−1)/b(x) = x/(c+1−x) (increasing in x):

    P_c(x) = α·b(x−1) + (1−α)·b(x),   Q_c(x) = (1−α)·b(x−1) + α·b(x),
    P_c/Q_c = (αρ + 1−α)/((1−α)ρ + α)   (increasing in ρ, from e^{−ε0} at x = 0 to e^{ε0} at c+1).

So {P_c/Q_c ≥ e^ε} = {x ≥ m}, m = ⌈β(c+1)⌉, β = (e^ε E − 1)/((E−1)(e^ε + 1)), and with
S(j) = Pr[Bin(c, ½) ≥ j] (S(j) = 1 for j ≤ 0, 0 for j > c):

    δ_c(ε) = a1·S(m−1) − a2·S(m),   a1 = (E − e^ε)/(E+1),  a2 = (e^ε E − 1)/(E+1),

valid for −ε0 < ε < ε0; δ(ε) = 1 − e^ε for ε ≤ −ε0 and 0 for ε ≥ ε0. (At c = 0 this is the
hockey-stick of ε0-randomized response, (E − e^ε)/(E + 1).)

Certification (the reported δ is never below the exact value)
--------------------------------------------------------------
* *Threshold.* Any set gives Σ_{x∈set} (P − e^ε Q) ≤ δ_c, with equality at the optimal set; m is
  computed in floating point, so wherever β(c+1) lies within 1e-12·(|β(c+1)| + 1) of an integer
  (beyond its float error) the maximum over the thresholds m−1, m, m+1 is taken.
* *Monotone in c.* δ_c(ε) is non-increasing in c: (P_{c+1}, Q_{c+1}) is (P_c, Q_c) with an
  independent fair coin added to the first coordinate (the same Markov kernel for P and Q), and
  the hockey-stick divergence cannot grow under post-processing. So C is grouped in bins
  [e_b, e_{b+1}) covering 0..n−1, each bin weighted by its exact mass and evaluated at its lower
  edge (upper bound) — and at its upper edge − 1 for the diagnostic lower bound. Between the 1e-40
  and 1 − 1e-40 quantiles of C the width w satisfies w ≤ max(1, 2·rel·c), so the loss scale (∝ 1/√c) moves by at most a
  relative ``rel`` inside a bin; beyond, widths grow by 1.5× per bin down to c = 0 (evaluated
  there as the ε0-DP pair) and up to n − 1. Nothing is truncated.
* *Rounding.* Binomial CDFs are scipy's (Boost ibeta), measured against 40-digit references at
  ≤ 2e-12 relative error up to n = 10⁸; each δ_c is raised by 1e-10·(a1·S(m−1) + a2·S(m)), which
  bounds the cancellation error of the difference, the bin masses by a relative 1e-10, and the
  sum by a relative 1e-9.

ε(δ) is the smallest ε with δ(ε) ≤ δ (δ(ε) is non-increasing), found with scipy's brentq and then
moved up until the certified δ at the reported ε is ≤ δ.

Cost: about 4 binomial CDFs per bin per ε, over a few hundred to two thousand bins (n = 10⁴…10⁸);
measured times are in bench/results_pld.md (the cold PLD answer is mostly this curve). For a grid
of many ε (the PLD) a bin uses a table of S instead when it is cheaper (:func:`_delta_c_many`): the
pmf over the bin's Hoeffding window by exact ratios from one anchor, then suffix sums, ≈ 10 ns a
value against ≈ 0.6 µs a CDF — the PLD route's single-round curve at n = 10⁶, ε0 = 0.5 (145 bins,
326 ε) went from ≈ 0.1 s to ≈ 0.05 s, and its cost no longer grows with the number of ε.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._lazy import lazy
from .._validation import check_delta, check_epsilon0, check_n
from ..errors import InvalidParameter

optimize = lazy("scipy.optimize")  # loaded on first use (memory, import time)
stats = lazy("scipy.stats")

__all__ = [
    "ClonePair",
    "clone_delta",
    "clone_epsilon",
    "clone_pair",
    "fmt21_closed_form_epsilon",
    "loss_scale",
]

_REL_BIN = 1e-5  # bin width w ≤ 2·_REL_BIN·c (loss scale moves ≤ 1e-5 relative inside a bin)
_CORE_TAIL = 1e-40  # fine bins between these quantiles of C; geometrically wider bins beyond
_GROWTH = 1.5
_FAR_LOG = -645.0  # log 1e-280: below, the Hoeffding tail bound stands in for the CDFs
_CDF_SLACK = 1e-10
_SUM_SLACK = 1e-9
_CHUNK = 1 << 20  # (bins × ε) elements evaluated at once
_TABLE_MAX = 200_000  # largest S-table window (its rounding bound 3·window·u + 1e-12 ≤ 7e-11 < slack)


def _edges(n: int, p: float, rel: float) -> NDArray[np.int64]:
    """Bin edges e_0 = 0 < … < e_B = n of C ∈ {0..n−1} (bin b is [e_b, e_{b+1})).

    Inside the core — C between its 1e-40 and 1 − 1e-40 quantiles — the widths are
    w = max(1, ⌊2·rel·c⌋); outside it (mass < 1e-40 on each side) they grow by a factor 1.5 per
    bin, down to c = 0 and up to n − 1."""
    m = n - 1  # C ~ Bin(m, p)
    lo = int(stats.binom.ppf(_CORE_TAIL, m, p)) if m > 0 else 0
    hi = int(m - stats.binom.ppf(_CORE_TAIL, m, 1.0 - p)) if m > 0 else 0
    lo, hi = max(0, min(lo, m)), max(0, min(hi, m))
    core = [lo]
    c = lo
    while c <= hi:
        c += max(1, int(2.0 * rel * c))
        core.append(min(c, hi + 1))
    below = []
    w = max(1, int(2.0 * rel * lo))
    c = lo
    while c > 0:
        w = max(w + 1, int(w * _GROWTH))
        c = max(0, c - w)
        below.append(c)
    above = []
    w = max(1, int(2.0 * rel * hi))
    c = core[-1]
    while c < n:
        w = max(w + 1, int(w * _GROWTH))
        c = min(n, c + w)
        above.append(c)
    return np.unique(np.concatenate([[0], below, core, above, [n]])).astype(np.int64)


def _bin_masses(n: int, p: float, edges: NDArray[np.int64]) -> NDArray[np.float64]:
    """P(e_b ≤ C < e_{b+1}), C ~ Bin(n−1, p): CDF differences below the mean, survival-function
    differences above it (each accurate to ~1e-12 relative where it is small), raised by 1e-10."""
    m = n - 1
    lo = edges[:-1] - 1  # P(C ≤ e_{b+1} − 1) − P(C ≤ e_b − 1)
    hi = edges[1:] - 1
    with np.errstate(invalid="ignore"):
        low_side = stats.binom.cdf(hi, m, p) - np.where(lo >= 0, stats.binom.cdf(lo, m, p), 0.0)
        high_side = np.where(lo >= 0, stats.binom.sf(lo, m, p), 1.0) - stats.binom.sf(hi, m, p)
    w: NDArray[np.float64] = np.where(edges[:-1] <= m * p, low_side, high_side)
    return np.maximum(w, 0.0) * (1.0 + _CDF_SLACK)


def _survival(j: NDArray[np.int64], c: NDArray[np.int64]) -> NDArray[np.float64]:
    """S(j) = Pr[Bin(c, ½) ≥ j] = Pr[Bin(c, ½) ≤ c − j] (symmetry), exact 1 / 0 outside 0 < j ≤ c."""
    k = c - j
    out = stats.binom.cdf(np.clip(k, 0, None), c, 0.5)
    out = np.where(j <= 0, 1.0, out)
    return np.where(j > c, 0.0, out)


def _delta_c(
    c: NDArray[np.int64], eps: NDArray[np.float64], E: float, eps0: float, upper: bool = True
) -> NDArray[np.float64]:
    """δ_c(ε) for broadcastable integer c and −ε0 < ε < ε0 (module docstring): a certified upper
    bound, or with ``upper=False`` a lower bound (one threshold, the rounding slack subtracted).

    Where the threshold lies so deep in the upper tail that Hoeffding's bound
    S(j) ≤ exp(−2(j − c/2)²/c) is below 1e-280 at j = m − 2, the CDFs are not evaluated (they
    are slow there and underflow anyway): the upper bound is a1·exp(−2(m − 2 − c/2)²/c), the lower 0.
    """
    c, eps = np.broadcast_arrays(np.asarray(c), np.asarray(eps, dtype=float))
    shape = c.shape
    c = c.ravel()
    ee = np.exp(eps.ravel())
    a1 = (E - ee) / (E + 1.0)
    a2 = (ee * E - 1.0) / (E + 1.0)
    beta = (ee * E - 1.0) / (np.expm1(eps0) * (ee + 1.0))
    cf = c.astype(float)
    t = beta * (cf + 1.0)
    m0 = np.ceil(t).astype(np.int64)
    dev = np.maximum(m0 - 2 - cf / 2.0, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_hoeff = np.where(cf > 0, -2.0 * dev * dev / np.maximum(cf, 1.0), 0.0)
    far: NDArray[np.bool_] = (log_hoeff < _FAR_LOG) & (m0 - 2 > cf / 2.0)
    out = np.where(far, a1 * np.exp(log_hoeff) if upper else 0.0, 0.0)
    near = ~far
    if np.any(near):
        cn, mn, a1n, a2n, tn = c[near], m0[near], a1[near], a2[near], t[near]
        # β(c+1) carries a relative float error ~1e-15: the threshold is certain unless β(c+1) is
        # within 1e-12·(|β(c+1)| + 1) of an integer; there the neighbouring thresholds count too.
        sure = np.abs(tn - np.rint(tn)) > 1e-12 * (np.abs(tn) + 1.0)
        surv = {k: _survival(mn + k, cn) for k in ((-2, -1, 0, 1) if upper else (-1, 0))}

        def at(
            k: int,
        ) -> NDArray[
            np.float64
        ]:  # the value at threshold m0 + k, rounding slack added (upper) or subtracted (lower)
            s_m1, s_m = surv[k - 1], surv[k]
            slack = _CDF_SLACK * (a1n * s_m1 + a2n * s_m)
            return a1n * s_m1 - a2n * s_m + (slack if upper else -slack)

        best = np.maximum(at(0), 0.0)
        if upper and not np.all(sure):
            best = np.where(sure, best, np.maximum.reduce([best, at(-1), at(1)]))
        out[near] = best
    return np.minimum(out, 1.0).reshape(shape)


def _window(c: int) -> tuple[int, int]:
    """[x_l, x_h]: the j around c/2 outside which Hoeffding's bound puts < 1e-40 of Bin(c, ½)."""
    half = math.sqrt(46.1 * max(c, 1))
    return max(0, int(math.floor(c / 2.0 - half))), min(c, int(math.ceil(c / 2.0 + half)))


def _survival_tables(cs: Sequence[int]) -> list[tuple[int, NDArray[np.float64]]]:
    """(x_l, S(j) = Pr[Bin(c, ½) ≥ j] for j = x_l .. x_h + 1) per c, each value within a relative
    3·(x_h − x_l + 2)·u + 1e-12 of the exact one (u = 2⁻⁵³).

    The pmf b(j) from one anchor b(⌊c/2⌋) (scipy's binom.pmf, Boost; one vectorised call for all
    c) by the exact ratios b(j+1)/b(j) = (c − j)/(j + 1) upwards and b(j−1)/b(j) = j/(c − j + 1)
    downwards: each ratio is one rounding (integers below 2⁵³ are exact) and each running product
    one more, so b(j) is within a relative (1 + u)^{2|j − ⌊c/2⌋|} of the anchor's error;
    S(x_h + 1) is scipy's survival function, and the suffix sums add positive terms from the small
    end (≤ one rounding each)."""
    wins = [_window(int(c)) for c in cs]
    mids = np.array([int(c) // 2 for c in cs], dtype=np.int64)
    carr = np.asarray(cs, dtype=np.int64)
    anchors = np.atleast_1d(stats.binom.pmf(mids, carr, 0.5))
    tops = np.atleast_1d(stats.binom.sf(np.array([w[1] for w in wins], dtype=np.int64), carr, 0.5))
    out = []
    for c, (xl, xh), mid, anchor, top in zip(cs, wins, mids.tolist(), anchors.tolist(), tops.tolist()):
        jj = np.arange(mid, xh, dtype=np.float64)  # b(j+1) = b(j)·(c − j)/(j + 1), j = mid .. x_h − 1
        up = anchor * np.cumprod((c - jj) / (jj + 1.0))
        jj = np.arange(mid, xl, -1, dtype=np.float64)  # b(j−1) = b(j)·j/(c − j + 1), j = mid .. x_l + 1
        down = anchor * np.cumprod(jj / (c - jj + 1.0))
        pm = np.concatenate([down[::-1], [anchor], up])  # b(j), j = x_l .. x_h
        table = top + np.cumsum(pm[::-1])[::-1]  # S(j) for j = x_l .. x_h
        out.append((xl, np.append(table, top)))
    return out


def _delta_c_many(
    c: int,
    eps: NDArray[np.float64],
    E: float,
    eps0: float,
    upper: bool = True,
    table: tuple[int, NDArray[np.float64]] | None = None,
) -> NDArray[np.float64]:
    """δ_c(ε) at one c for many ε (−ε0 < ε < ε0), from a table of S instead of one CDF per ε.

    S(j) is tabulated on the window j ∈ [x_l, x_h + 1] around c/2 outside which Hoeffding's bound
    puts less than 1e-40 of mass (|j − c/2| ≥ √(46.1·c)): S(x_h + 1) from the survival function,
    then suffix sums of the pmf (:func:`_survival_tables`, or ``table`` if given: relative error
    ≤ 3·(window)·u + 1e-12, ≤ 7e-11 for the windows of at most ``_TABLE_MAX`` = 2·10⁵ values it is
    used for — inside the 1e-10 slack). Outside the window S is bracketed by monotonicity:
    S(j) ∈ [S(x_l), 1] below, [0, S(x_h + 1)] above. The upper bound takes the upper bracket for
    S(m−1) and the lower one for S(m) (the lower bound the reverse), with the same threshold
    candidates and slack as :func:`_delta_c`.
    """
    ee = np.exp(eps)
    a1 = (E - ee) / (E + 1.0)
    a2 = (ee * E - 1.0) / (E + 1.0)
    beta = (ee * E - 1.0) / (np.expm1(eps0) * (ee + 1.0))
    t = beta * (c + 1.0)
    m0 = np.ceil(t).astype(np.int64)
    xl, tab = table if table is not None else _survival_tables([c])[0]
    xh = xl + tab.size - 2
    top = float(tab[-1])

    def bracket(j: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        i = np.clip(j - xl, 0, tab.size - 1)
        v = tab[i]
        lo = np.where(j > xh + 1, 0.0, np.where(j < xl, v, v))
        hi = np.where(j < xl, 1.0, np.where(j > xh + 1, top, v))
        lo = np.where(j <= 0, 1.0, np.where(j > c, 0.0, lo))
        hi = np.where(j <= 0, 1.0, np.where(j > c, 0.0, hi))
        return lo, hi

    def at(k: int) -> NDArray[np.float64]:
        lo1, hi1 = bracket(m0 + k - 1)
        lo0, hi0 = bracket(m0 + k)
        if upper:
            s1, s0 = hi1, lo0
        else:
            s1, s0 = lo1, hi0
        slack = _CDF_SLACK * (a1 * s1 + a2 * s0)
        return a1 * s1 - a2 * s0 + (slack if upper else -slack)

    best = np.maximum(at(0), 0.0)
    sure = np.abs(t - np.rint(t)) > 1e-12 * (np.abs(t) + 1.0)
    if upper and not np.all(sure):
        best = np.where(sure, best, np.maximum.reduce([best, at(-1), at(1)]))
    return np.minimum(best, 1.0)


@dataclass(frozen=True)
class ClonePair:
    """The FMT21 clone pair of (n, ε0), prepared for repeated δ(ε) / ε(δ) evaluations.

    ``delta(eps)`` is a certified upper bound on the pair's hockey-stick divergence (module
    docstring); ``delta_bracket(eps)`` also returns a lower bound from the same bins (the exact
    value lies in between — its width shows the binning error, ≲ 1e-4 relative by default).
    """

    n: int
    epsilon0: float
    rel: float = _REL_BIN

    @property
    def _prep(self) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        return _prepared(self.n, self.epsilon0, self.rel)

    def _evaluate(
        self, eps: ArrayLike, lower: bool
    ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
        e = np.atleast_1d(np.asarray(eps, dtype=float))
        up = np.zeros(e.shape)
        low = np.zeros(e.shape) if lower else None
        eps0 = self.epsilon0
        below = e <= -eps0 if eps0 > 0 else e < 0
        up[below] = -np.expm1(e[below])
        if low is not None:  # i.e. lower
            low[below] = up[below]
        mid = (e > -eps0) & (e < eps0)
        if np.any(mid):
            edges, w = self._prep
            em = e[mid]
            E = math.exp(eps0)
            u = np.zeros(em.size)
            lw = np.zeros(em.size)
            # bins whose S-table (window ≈ 2√(46c) values, ~10 ns each) is cheaper than 4 CDFs per ε
            # (~0.6 µs each) use the table, up to the window where its rounding bound nears the slack
            window = 2.0 * np.sqrt(46.1 * np.maximum(edges[:-1], 1))
            tab = (window < 100.0 * em.size) & (window <= _TABLE_MAX)
            picked = np.flatnonzero(tab)
            tables = _survival_tables(edges[picked].tolist())
            lows = _survival_tables((edges[picked + 1] - 1).tolist()) if lower else tables
            for j, table, low_table in zip(picked.tolist(), tables, lows):
                u += w[j] * _delta_c_many(int(edges[j]), em, E, eps0, table=table)
                if lower:
                    lw += (w[j] / (1.0 + _CDF_SLACK)) * _delta_c_many(
                        int(edges[j + 1]) - 1, em, E, eps0, upper=False, table=low_table
                    )
            rest = np.flatnonzero(~tab)
            if rest.size:
                wr, c_lo, c_hi = w[rest], edges[rest], edges[rest + 1] - 1
                step = max(1, _CHUNK // rest.size)
                for s in range(0, em.size, step):
                    ec = em[None, s : s + step]
                    u[s : s + step] += wr @ _delta_c(c_lo[:, None], ec, E, eps0)
                    if lower:
                        lw[s : s + step] += (wr / (1.0 + _CDF_SLACK)) @ _delta_c(
                            c_hi[:, None], ec, E, eps0, upper=False
                        )
            up[mid] = np.minimum(u * (1.0 + _SUM_SLACK), 1.0)
            if low is not None:
                low[mid] = np.minimum(lw, up[mid])
        return up, low

    def delta_bracket(self, eps: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(lower, upper) bounds on δ(ε) at each ε (any real ε; vectorised)."""
        up, low = self._evaluate(eps, True)
        assert low is not None  # computed when lower=True
        return low, up

    @overload
    def delta(self, eps: float) -> float: ...
    @overload
    def delta(self, eps: NDArray[np.floating[Any]]) -> NDArray[np.float64]: ...
    def delta(self, eps: float | NDArray[np.floating[Any]]) -> float | NDArray[np.float64]:
        """Certified upper bound on δ(ε) (float for a scalar ε, else an array)."""
        up, _ = self._evaluate(eps, False)
        return float(up[0]) if np.ndim(eps) == 0 else up

    def epsilon_interpolator(self, num: int = 128) -> Callable[[float], float]:
        """A fast *approximate* ε(δ) (interpolation of log δ on a grid of ``num`` ε values): for
        searches only (e.g. the per-round δ of :func:`.composition.best_split_epsilon`); the
        certified value is :meth:`epsilon`."""
        eps0 = self.epsilon0
        if eps0 == 0.0:
            return lambda _delta: 0.0
        start = min(loss_scale(self.n, eps0) / 20.0, eps0 / 100.0)
        grid = np.concatenate([[0.0], np.geomspace(start, eps0 * (1 - 1e-9), num)])
        coarse = ClonePair(self.n, eps0, max(self.rel, 1e-4))  # ~10× fewer bins; approximate anyway
        ld = np.log(np.maximum(coarse.delta(grid), 1e-320))
        ld = np.minimum.accumulate(ld)

        def approx(d: float) -> float:
            x = math.log(d)
            if x >= ld[0]:
                return 0.0
            if x <= ld[-1]:
                return float(eps0)
            j = int(np.searchsorted(-ld, -x))  # ld[j-1] > x >= ld[j]
            t = (ld[j - 1] - x) / (ld[j - 1] - ld[j]) if ld[j - 1] > ld[j] else 1.0
            return float(grid[j - 1] + t * (grid[j] - grid[j - 1]))

        return approx

    def epsilon(self, delta: float, xtol: float = 1e-10) -> float:
        """Smallest ε ≥ 0 (to ``xtol`` relative) with certified δ(ε) ≤ ``delta``; 0 if δ(0) ≤ delta."""
        delta = check_delta(delta)
        eps0 = self.epsilon0
        if eps0 == 0.0 or self.delta(0.0) <= delta:
            return 0.0

        def f(x: float) -> float:
            return math.log(self.delta(x) + 1e-300) - math.log(delta)

        # bracket [lo, hi] with δ(lo) > target ≥ δ(hi): δ(ε0) = 0, then halve towards 0
        lo, hi = 0.0, eps0
        x = eps0
        while True:
            x *= 0.5
            if x < 1e-13:
                return float(hi)
            if self.delta(x) <= delta:
                hi = x
            else:
                lo = x
                break
        root = optimize.brentq(f, lo, hi, xtol=1e-300, rtol=max(xtol, 4 * np.finfo(float).eps))
        # certify: move up until the certified δ at the reported ε meets the target
        r = min(root, hi)
        for _ in range(100):
            if self.delta(r) <= delta:
                return float(r)
            r = min(hi, r * (1.0 + 2.0 * xtol) + 1e-15)
        return float(hi)


def loss_scale(n: int, epsilon0: float) -> float:
    """σ_L = 2·tanh(ε0/2)/√(E[C] + 1), E[C] = (n−1)e^{−ε0}: the spread of the pair's privacy loss
    log(P/Q) (from log R ≈ 2·tanh(ε0/2)·u/(C+1), u of spread √(C+1)); capped at ε0."""
    return min(epsilon0, 2.0 * math.tanh(epsilon0 / 2.0) / math.sqrt((n - 1) * math.exp(-epsilon0) + 1.0))


@lru_cache(maxsize=64)
def _prepared(n: int, eps0: float, rel: float) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    p = math.exp(-eps0)
    edges = _edges(n, p, rel)
    w = _bin_masses(n, p, edges)
    return edges, w


def clone_pair(n: int, epsilon0: float, rel: float = _REL_BIN) -> ClonePair:
    """A validated :class:`ClonePair` (n ≥ 1 integer, ε0 ≥ 0)."""
    n = check_n(n)
    epsilon0 = check_epsilon0(epsilon0)
    if not (0 < rel <= 0.01):
        raise InvalidParameter(f"rel must be in (0, 0.01], got {rel!r}")
    return ClonePair(n, epsilon0, rel)


@overload
def clone_delta(n: int, epsilon0: float, epsilon: float) -> float: ...
@overload
def clone_delta(n: int, epsilon0: float, epsilon: NDArray[np.floating[Any]]) -> NDArray[np.float64]: ...
def clone_delta(
    n: int, epsilon0: float, epsilon: float | NDArray[np.floating[Any]]
) -> float | NDArray[np.float64]:
    """Certified δ(ε) of the FMT21 clone pair for one shuffle of n ε0-LDP reports (see module)."""
    return clone_pair(n, epsilon0).delta(epsilon)


def clone_epsilon(n: int, epsilon0: float, delta: float) -> float:
    """Smallest certified ε (relative tolerance 1e-10) with clone-pair δ(ε) ≤ δ."""
    return clone_pair(n, epsilon0).epsilon(delta)


def fmt21_closed_form_epsilon(n: int, epsilon0: float, delta: float) -> float:
    """FMT21's closed-form amplification bound, in the form of the authors' public implementation
    (apple/ml-shuffling-amplification, ``closedformanalysis``; FMT21 Theorem 3.1): for
    ε0 ≤ log(n/(16·log(4/δ))),

        ε = log(1 + (1 − e^{−ε0})/(1 + e^{−ε0−e'})·(a + c)),  a = 8√(e^{ε0}·log(4/δ)/n),  c = 8e^{ε0}/n,
        e' = log(1 + a + c);

    outside that condition the shuffle is still ε0-DP (post-processing), which is returned, as the
    implementation does. Looser than the clone pair's exact (ε, δ) (:meth:`ClonePair.epsilon`).
    """
    n = check_n(n)
    eps0 = check_epsilon0(epsilon0)
    delta = check_delta(delta)
    if eps0 == 0.0:
        return 0.0
    if n < 16 * math.log(4 / delta) or eps0 > math.log(n / (16 * math.log(4 / delta))):
        return eps0
    a = 8 * math.sqrt(math.exp(eps0) * math.log(4 / delta) / n)
    c = 8 * math.exp(eps0) / n
    e = math.log1p(a + c)
    b = -math.expm1(-eps0)
    d = 1 + math.exp(-eps0 - e)
    return float(np.nextafter(min(eps0, math.log1p(b / d * (a + c))), math.inf))
