"""Certified RDP of the subsampled clone pair (bounds.md §9, where the domination theorem, its
conditions and the two monotonicities below are proved); its hockey-stick divergence is
:class:`accountant.subsampled_clone_delta.SubsampledClonePair` (same bins).

The pair
--------
k of n users sampled uniformly without replacement (γ = k/n), one report each of the same pure
ε0-LDP randomizer, shuffled, replace-one neighbours, the sample not revealed. With p = e^{−ε0}
(FMT21, FOCS 2021, §3: the clone decomposition) and q = e^{ε0}/(e^{ε0} + 1), let

    B   = law of (A, M − A),  M ~ Bin(k, p),  A | M ~ Bin(M, ½)   (the changed user not sampled),
    P_k = law of (A + Δ, C − A + 1 − Δ),  C ~ Bin(k−1, p),  A | C ~ Bin(C, ½),  Δ ~ Bern(q),
    Q_k = P_k with its coordinates swapped,
    P̃ = γ·P_k + (1−γ)·B,   Q̃ = γ·Q_k + (1−γ)·B.

The outputs on neighbouring datasets are one post-processing (Markov kernel) of (P̃, Q̃), so
their Rényi and hockey-stick divergences are at most the pair's; Q̃ is P̃ swapped.

Structure used for the evaluation
---------------------------------
With m = a + b, t = 2a/m − 1 and s = tanh(ε0/2): P_k/B = r(1 + s·t), Q_k/B = r(1 − s·t),
r = m/(kp). Given m the pair is (P'_m, Q'_m) = (b_m(a)(1 + u), b_m(a)(1 − u)), u = w_m·s·t,
b_m the Bin(m, ½) pmf, w_m = γr/(1 − γ + γr), and m has the law π(m) = Pr[M = m]·(1 − γ + γr)
under both. Hence

    E_Q̃[(P̃/Q̃)^α] = 1 + Σ_m π(m)·h(w_m, m; α),   h(w, m; α) = E_{Q'}[(P'/Q')^α] − 1 ≥ 0,
    hockey-stick:  δ(ε) = Σ_m π(m)·δ(w_m, m; ε)     (ε ≥ 0),

where (P'(w, m), Q'(w, m)) = w·(P_k, Q_k)(·|m) + (1 − w)·(B, B)(·|m). (i) h and δ are
non-increasing in m at fixed w (a fair coin added to a: one kernel for both); (ii) h(w') ≤
(w'/w)·h(w) for w' ≤ w, likewise δ at ε ≥ 0 (joint convexity). w_m increases with m, so a bin
[x, y] of m contributes at most h(w_y, x)·Σ_{m∈bin} π(m)·w_m/w_y — nothing is truncated.

Certification (never below the exact value)
-------------------------------------------
* m: core bins of width max(1, ⌊ρ·x⌋) (ρ = 2·10⁻³) around kp (± 6 standard deviations, the top
  moved up to the tilt of the largest order: :func:`_tilted_top`), masses summed from Loader's
  binomial log-pmf (inflated by a relative 10⁻¹¹); outside the core, bins grow
  1.5× per bin down to m = 1 and up to k, each weighted by a Chernoff bound of its mass
  (m = 0 contributes 0: w_0 = 0).
* a, per bin and chunk of orders: the terms b_m(a)·G(a), G = (1+u)^α(1−u)^{1−α} = Q'/b_m·(P'/Q')^α,
  are summed exactly over a window [lo, hi] (log-sum-exp), and h = Σ_win bG − Σ_win b − (2α−1)Σ_win bu
  + (the rest), where the rest is Σ_tail b·ψ with ψ(a) = G − 1 − (2α−1)u ≥ 0 *convex in a*
  (x^α y^{1−α} is jointly convex and X + Y is constant in a), so each tail is at most its
  mass (pmf × geometric ratio, or Hoeffding) × the larger ψ at its two ends. The window is ± 7
  standard deviations of Bin(m, ½), extended upward to where Hoeffding's bound times ψ at a = m
  is below e^{−40} (the per-order tilt of large α).
* the window pmfs come from Loader's log-pmf every 64 cells and exact ratios in between (relative
  error < 10⁻¹¹); since the window part is Σ_win b·ψ with ψ ≥ 0, h is raised by a relative 2·10⁻¹¹.
* rounding: every logged sum carries a relative slack from its terms' magnitudes
  (2^{−50}·(64 + 8·(max|log term| + α·log R_max)) on e^{LS}, the window length × 2^{−50} on the
  order-free sums), the total a relative 2^{−40}, and the result is rounded outward.
* :func:`subsampled_clone_rdp` also takes the pure-DP cap of Lemma 2.1.1
  (:func:`accountant.subsampled.cap`): it bounds the mechanism (not the pair, which can exceed it
  at large α — k = 1, n = 40, ε0 = 1, α = 64: 0.0356 against a cap of 0.0314), so the minimum
  bounds the mechanism; :func:`subsampled_clone_pair_rdp` is the pair's own divergence.

Budget: a call costs Σ_bins window × orders cells; orders beyond ``_BUDGET`` cells (in chunks of
``_CHUNK`` orders, largest last) are returned as +inf — not certified here, the caller falls back
to the other bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._binomial import log_binom_pmf
from ._numerics import log_phi, round_up
from ._validation import check_epsilon0, check_n, check_orders
from .clones.types import RANDOMIZERS, clone_law
from .errors import BoundNotApplicable, InvalidParameter
from .store import MiB, memoize
from .subsampled import amplified_epsilon
from .subsampled import cap as subsampled_cap

__all__ = ["subsampled_clone_pair_rdp", "subsampled_clone_rdp"]

_REL = 2e-3  # core bin width ≤ max(1, ρ·x)
_Z_M = 6.0  # core of m: ± this many standard deviations of Bin(k, p)
_Z_A = 7.0  # a-window: ± this many standard deviations of Bin(m, ½)
_L_EXT = 40.0  # upper a-window reaches Hoeffding × ψ(a = m) ≤ e^{−40}
_GROWTH = 1.5
_CHUNK = 8  # orders evaluated together (one window design per chunk)
_FIRST_GROUP = 256.0  # orders up to this are evaluated first (then maybe no more: _log_excess)
_BUDGET = 2e7  # cells × orders per call (≈ 0.5 s)
_MAX_CORE = 2_000_000  # core values of m per design (memory: a few arrays of this many floats)
_ULP = 2.0**-50
_MASS_SLACK = 1e-11
_PMF_REL = 1e-11  # relative error of the window pmfs (Loader anchors + block-wise ratio sums)
_SUM_SLACK = 2.0**-40


# ------------------------------------------------------------------------------------------
# the m-bins
# ------------------------------------------------------------------------------------------
def _weight(m: NDArray[np.float64], gamma: float, kp: float) -> NDArray[np.float64]:
    """w_m = γr/(1 − γ + γr), r = m/(kp) (0 at m = 0, 1 at γ = 1)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        w = gamma * m / (gamma * m + (1.0 - gamma) * kp)
    return np.where(m > 0, w, 0.0)


def _log_chernoff(big_n: int, p: float, x: NDArray[np.float64], upper: bool) -> NDArray[np.float64]:
    """log of Chernoff's bound exp(−N·KL(x/N ‖ p)) on Pr[Bin(N, p) ≥ x] (upper) or ≤ x (lower);
    0 (the trivial bound) on the wrong side of the mean, −inf beyond the support."""
    if big_n <= 0:
        return np.where((x <= 0) if upper else (x >= 0), 0.0, -np.inf)
    f = np.clip(x / big_n, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(f > 0, f * np.log(f / p), 0.0) + np.where(
            f < 1, (1 - f) * np.log((1 - f) / (1 - p)), 0.0
        )
    side = (x >= big_n * p) if upper else (x <= big_n * p)
    out = np.where(side, -big_n * np.maximum(kl, 0.0) * (1.0 - 1e-12), 0.0)
    beyond = (x > big_n) if upper else (x < 0)
    return np.where(beyond, -np.inf, out)


def _outer_edges(start: int, stop: int, width: int, up: bool) -> list[tuple[int, int]]:
    """Bins [x, y] growing 1.5× per bin from ``start`` towards ``stop`` (inclusive, either way)."""
    out = []
    c = start
    w = max(1, width)
    while (c <= stop) if up else (c >= stop):
        w = max(w + 1, int(w * _GROWTH))
        e = min(stop, c + w - 1) if up else max(stop, c - w + 1)
        out.append((c, e) if up else (e, c))
        c = e + 1 if up else e - 1
    return out


@dataclass(frozen=True)
class _Bins:
    """Bins [x_b, y_b] of m ≥ 1: evaluated at m = x_b with the weight w_{y_b}; ``log_mass`` bounds
    log Σ_{m∈bin} π(m)·w_m/w_{y_b} from above."""

    x: NDArray[np.float64]
    w: NDArray[np.float64]
    log_mass: NDArray[np.float64]


def _log_pi(ms: NDArray[np.float64], k: int, p: float, gamma: float) -> NDArray[np.float64]:
    """log π(m) = log[(1−γ)·Pr[M = m] + γ·Pr[C = m − 1]] (Loader's log-pmf)."""
    lp = log_binom_pmf(ms - 1.0, float(k - 1), p, 1.0 - p) + math.log(gamma)
    if gamma < 1.0:
        lp = np.logaddexp(lp, log_binom_pmf(ms, float(k), p, 1.0 - p) + math.log1p(-gamma))
    return lp


def _tilted_top(k: int, p: float, s: float, gamma: float, alpha: float, c_lo: int, c_hi: int) -> int:
    """Where the core must reach for orders up to ``alpha``: the largest m (on a grid of ≤ 4,097
    points, one point beyond) with log π(m) + m·log cosh(α·log R_max(w_m)/m) within 40 of its
    maximum (the second term bounds log E[e^{α·log R}] given m: log R ≤ t·log R_max for t ≥ 0 and
    E[e^{λt}] = cosh(λ/m)^m) — h grows with w, so large orders tilt the sum towards large m.
    Tightness only: bins beyond the core are certified too."""
    if c_hi >= k:
        return k
    grid = np.unique(np.linspace(c_lo, k, 4097).astype(np.int64)).astype(float)
    ws = _weight(grid, gamma, k * p) * s
    z = alpha * (np.log1p(ws) - np.log1p(-ws)) / grid
    g = _log_pi(grid, k, p, gamma) + grid * (z + np.log1p(np.exp(-2.0 * z)) - math.log(2.0))
    ok = np.flatnonzero(g >= np.max(g) - 40.0)
    return max(c_hi, int(grid[min(int(ok[-1]) + 1, grid.size - 1)]))


@lru_cache(maxsize=64)
def _bins(k: int, epsilon0: float, gamma: float, alpha_level: float, p: float) -> _Bins:
    """The m-bins for clone probability ``p`` (e^{−ε0} for any ε0-LDP randomizer, more for the
    randomized responses: :func:`clone_probability`)."""
    kp = k * p
    sd = math.sqrt(max(kp * (1 - p), 1.0))
    c_lo = max(1, int(math.floor(kp - _Z_M * sd)))
    c_hi = min(k, int(math.ceil(kp + 1 + _Z_M * sd)))
    c_hi = _tilted_top(k, p, math.tanh(epsilon0 / 2.0), gamma, alpha_level, c_lo, c_hi)
    if c_hi - c_lo + 1 > _MAX_CORE:  # k ≳ 10¹⁰ (or a far tilt): refused before any allocation
        raise BoundNotApplicable(
            f"the subsampled clone pair is evaluated for at most {_MAX_CORE:,} values of m per design; "
            f"k = {k:,} at ε0 = {epsilon0:g} needs {c_hi - c_lo + 1:,}"
        )
    edges = [c_lo]
    while edges[-1] <= c_hi:
        edges.append(edges[-1] + max(1, int(_REL * edges[-1])))
    edges[-1] = c_hi + 1
    ms = np.arange(c_lo, c_hi + 1, dtype=float)
    lp = _log_pi(ms, k, p, gamma)
    starts = np.asarray(edges[:-1]) - c_lo
    tops = np.asarray(edges[1:], dtype=float) - 1.0
    wy = _weight(tops, gamma, kp)
    ratio = _weight(ms, gamma, kp) / np.repeat(wy, np.diff(edges))
    core_mass = np.add.reduceat(np.exp(lp) * ratio, starts) * (1.0 + _MASS_SLACK)
    width = max(1, int(_REL * c_lo))
    outer = _outer_edges(c_lo - 1, 1, width, up=False) + _outer_edges(c_hi + 1, k, width, up=True)
    ox = np.array([b[0] for b in outer], dtype=float)
    oy = np.array([b[1] for b in outer], dtype=float)
    below = oy < c_lo
    probe = np.where(below, oy, ox)  # Pr[m ≤ y] below the core, Pr[m ≥ x] above
    lm_c = math.log(gamma) + np.where(
        below,
        _log_chernoff(k - 1, p, probe - 1.0, upper=False),
        _log_chernoff(k - 1, p, probe - 1.0, upper=True),
    )
    lm_m = (math.log1p(-gamma) if gamma < 1 else -np.inf) + np.where(
        below, _log_chernoff(k, p, probe, upper=False), _log_chernoff(k, p, probe, upper=True)
    )
    lm = np.logaddexp(lm_c, lm_m)
    with np.errstate(divide="ignore"):
        core_lm = np.log(core_mass)
    return _Bins(
        np.concatenate([np.asarray(edges[:-1], dtype=float), ox]),
        np.concatenate([wy, _weight(oy, gamma, kp)]),
        np.concatenate([core_lm, np.minimum(lm, 0.0)]),
    )


# ------------------------------------------------------------------------------------------
# h(w, x; α) per bin: windowed sums with convex tail bounds
# ------------------------------------------------------------------------------------------
def _windows(
    x: NDArray[np.float64], lrmax: NDArray[np.float64], alpha_max: float
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """[lo, hi] per bin: ± _Z_A·√x/2 around x/2, the top extended for the tilt of ``alpha_max``."""
    half = _Z_A * np.sqrt(x) / 2.0
    ext = np.sqrt(x * (alpha_max * lrmax + _L_EXT) / 2.0)
    lo = np.maximum(0.0, np.floor(x / 2.0 - half))
    hi = np.minimum(x, np.ceil(x / 2.0 + np.maximum(half, ext)))
    return lo.astype(np.int64), hi.astype(np.int64)


def _log_psi(alpha: NDArray[np.float64], u: NDArray[np.float64]) -> NDArray[np.float64]:
    """log ψ = log[(1−u)·φ_α((1+u)/(1−u))] = log[G − 1 − (2α−1)u] ≥ −inf."""
    lr = np.log1p(u) - np.log1p(-u)
    return np.log1p(-u) + log_phi(alpha, lr)


def _tail(
    alpha: NDArray[np.float64],
    x: NDArray[np.float64],
    ws: NDArray[np.float64],
    near: tuple[NDArray[np.float64], NDArray[np.intp]],
    a_far: NDArray[np.float64],
    present: NDArray[np.bool_],
) -> NDArray[np.float64]:
    """log of (a bound on the Bin(x, ½) mass of the a from a_near on, away from x/2) ×
    max(ψ(a_near), ψ(a_far)) (ψ convex in a); −inf where no tail. ``near`` = (the distinct
    columns of a_near, bins × c; the column of each order): a_near = near[0][:, near[1]], bins ×
    orders, as ``present``; bins for ``x``, ``ws``, ``a_far``. The mass does not depend on the
    order, so it is computed once per distinct column.

    The mass: b(a_near)/(1 − r), r the pmf ratio b(a±1)/b(a) at a_near (the largest in the
    tail: the ratios move monotonically away from 1), and never above Hoeffding's exp(−2d²/x),
    d = |a_near − x/2|."""
    cols, col_of = near
    xc = np.broadcast_to(x[:, None], cols.shape)
    d = np.abs(cols - xc / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(cols > xc / 2.0, (xc - cols) / (cols + 1.0), cols / (xc - cols + 1.0))
        geo = log_binom_pmf(np.clip(cols, 0.0, xc), xc, 0.5, 0.5) - np.log1p(-np.minimum(r, 1.0))
    lmass = np.minimum(-2.0 * d * d / xc, np.where(r < 1.0, geo, 0.0))[:, col_of]
    a_near = cols[:, col_of]
    xx = np.broadcast_to(x[:, None], a_near.shape)
    al = np.broadcast_to(alpha[None, :], a_near.shape)
    wsb = ws[:, None]
    u_far = np.broadcast_to(wsb * (2.0 * a_far[:, None] / x[:, None] - 1.0), a_near.shape)
    # a_near is outside [0, x] only where there is no tail (masked below): clipped, not evaluated there
    inside = np.clip(a_near, 0.0, xx)
    lpsi = np.maximum(_log_psi(al, wsb * (2.0 * inside / xx - 1.0)), _log_psi(al, u_far))
    return np.where(present, lmass + lpsi, -np.inf)


@dataclass(frozen=True)
class _Cells:
    """The cells (bin, a) of every bin's widest window, with their order-free parts."""

    seg: NDArray[np.int64]  # bin of each cell
    a: NDArray[np.float64]
    c0: NDArray[np.float64]  # log b_x(a) + log(1 − u),  u = w·s·(2a/x − 1)
    lr: NDArray[np.float64]  # log R = log(1 + u) − log(1 − u)
    pb: NDArray[np.float64]  # b_x(a)
    pbu: NDArray[np.float64]  # b_x(a)·u
    lo: NDArray[np.int64]


def _window_log_pmf(
    a: NDArray[np.float64], m: NDArray[np.float64], off: NDArray[np.int64]
) -> NDArray[np.float64]:
    """log Bin(m, ½) pmf at cells that run through consecutive a within each bin (``off`` = a − lo):
    Loader's value (:func:`accountant._binomial.log_binom_pmf`) at every 64th cell of a bin, then
    the exact ratios pmf(a)/pmf(a−1) = (m − a + 1)/a summed within each block of 64 (blocks laid
    out as rows, so each partial sum has ≤ 63 terms of size ≲ 1: relative error of the pmf well
    below _PMF_REL)."""
    anchor = off % 64 == 0
    grp = np.cumsum(anchor) - 1
    pos = off % 64
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.where(anchor, 0.0, np.log((m - a + 1.0) / a))
    rows = np.zeros((int(grp[-1]) + 1 if grp.size else 0, 64))
    rows[grp, pos] = step
    np.cumsum(rows, axis=1, out=rows)
    out: NDArray[np.float64] = log_binom_pmf(a[anchor], m[anchor], 0.5, 0.5)[grp] + rows[grp, pos]
    return out


def _cells_of(
    x: NDArray[np.float64], ws: NDArray[np.float64], hi: NDArray[np.int64], lo: NDArray[np.int64]
) -> _Cells:
    lens = hi - lo + 1
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    seg = np.repeat(np.arange(x.size), lens)
    off = np.arange(int(lens.sum())) - starts[seg]
    a = (lo[seg] + off).astype(float)
    m = x[seg]
    u = ws[seg] * (2.0 * a / m - 1.0)
    lb = _window_log_pmf(a, m, off)
    l1m = np.log1p(-u)
    pb = np.exp(lb)
    return _Cells(seg, a, lb + l1m, np.log1p(u) - l1m, pb, pb * u, lo)


@dataclass(frozen=True)
class _Window:
    """Per bin and order: log Σ_win b·G (``ls``), Σ_win b (``s0``), (2α−1)·Σ_win b·u (``lin``), the
    relative slack of e^{ls} (``eta``) and the absolute slack of the rest (``err``)."""

    ls: NDArray[np.float64]
    s0: NDArray[np.float64]
    lin: NDArray[np.float64]
    eta: NDArray[np.float64]
    err: NDArray[np.float64]


def _log_sums(
    c0: NDArray[np.float64],
    lr: NDArray[np.float64],
    starts: NDArray[np.int64],
    lens: NDArray[np.int64],
    alpha: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(log Σ_win e^{c0 + α·lr}, the shift used) per bin × order. The shift is the bin's
    max c0 + α·max lr — an upper bound of every term, so nothing overflows; a term lost to
    underflow is below 2.3·10⁻³⁰⁸ (in shifted units) and is added back as that much per cell.
    Where that allowance could matter (sum < 10⁻²⁵⁰) the exact maximum is used instead."""
    c0m = np.maximum.reduceat(c0, starts)
    lrm = np.maximum.reduceat(lr, starts)
    e0 = np.exp(c0 - np.repeat(c0m, lens))
    dl = lr - np.repeat(lrm, lens)
    terms = alpha[:, None] * dl[None, :]  # orders × cells (contiguous reductions)
    np.exp(terms, out=terms)
    terms *= e0[None, :]
    tot = np.add.reduceat(terms, starts, axis=1) + lens[None, :] * 2.3e-308
    shift = c0m[None, :] + alpha[:, None] * lrm[None, :]
    bad = tot < 1e-250
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        ex = alpha[rows, None] * lr[None, :] + c0[None, :]
        mx = np.maximum.reduceat(ex, starts, axis=1)
        ex -= np.repeat(mx, lens, axis=1)
        np.exp(ex, out=ex)
        tot[rows] = np.add.reduceat(ex, starts, axis=1) + lens[None, :] * 2.3e-308
        shift[rows] = mx
    with np.errstate(divide="ignore"):
        return (shift + np.log(tot)).T, shift.T


def _window_part(
    ws: NDArray[np.float64],
    cells: _Cells,
    hi: NDArray[np.int64],
    alpha: NDArray[np.float64],
) -> _Window:
    """The window sums of every bin (window [lo_b, hi_b], a sub-window of ``cells``) × order."""
    keep = cells.a <= hi[cells.seg]
    if keep.all():
        c0, lr, pb, pbu = cells.c0, cells.lr, cells.pb, cells.pbu
    else:
        c0, lr, pb, pbu = cells.c0[keep], cells.lr[keep], cells.pb[keep], cells.pbu[keep]
    lens = hi - cells.lo + 1
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    lrmax = np.log1p(ws) - np.log1p(-ws)
    ls, shift = _log_sums(c0, lr, starts, lens, alpha)
    big = np.maximum.reduceat(np.abs(c0), starts)[:, None]
    return _Window(
        ls,
        np.repeat(np.add.reduceat(pb, starts)[:, None], alpha.size, axis=1),
        (2.0 * alpha[None, :] - 1.0) * np.add.reduceat(pbu, starts)[:, None],
        _ULP * (64.0 + 8.0 * (big + alpha[None, :] * lrmax[:, None] + np.abs(shift))),
        _ULP * lens[:, None] * (1.0 + (2.0 * alpha[None, :] - 1.0) * ws[:, None]),
    )


def _combine(win: _Window, tails: NDArray[np.float64]) -> NDArray[np.float64]:
    """Upper bounds of log h = log(e^{ls} − s0 − lin + Σ_tail b·ψ) with the rounding slack: direct
    while ls ≤ 30, else log(e^{ls}(1 + η) + s0 + |lin| + err + tails) (no cancellation there)."""
    ls, s0, lin, eta, err = win.ls, win.s0, win.lin, win.eta, win.err
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        direct = np.expm1(np.minimum(ls, 30.0)) * (1.0 + eta) + eta + (1.0 - s0) - lin + err + np.exp(tails)
        loose = np.logaddexp(np.logaddexp(ls + np.log1p(eta), np.log(s0 + np.abs(lin) + err + 1.0)), tails)
        out: NDArray[np.float64] = np.where(ls <= 30.0, np.log(np.maximum(direct, 0.0)), loose)
    return out + math.log1p(2.0 * _PMF_REL)  # Σ_win b·ψ with b known to a relative _PMF_REL


def _admitted(
    k: int, epsilon0: float, gamma: float, tops: list[float], budget: float, p: float
) -> tuple[int, _Bins, float]:
    """How many chunks (smallest orders first) fit ``budget``, the bins of the largest, the cost."""
    s = math.tanh(epsilon0 / 2.0)
    n_ok = len(tops)
    while True:
        bins = _bins(k, epsilon0, gamma, float(2.0 ** math.ceil(math.log2(tops[n_ok - 1]))), p)
        ws = bins.w * s
        lrmax = np.log1p(ws) - np.log1p(-ws)
        lo = _windows(bins.x, lrmax, 1.0)[0]
        cost = np.cumsum(
            [float(np.sum(_windows(bins.x, lrmax, t)[1] - lo + 1)) * (_CHUNK + 4) for t in tops[:n_ok]]
        )
        fits = int(np.searchsorted(cost, budget, side="right"))
        if fits in (0, n_ok):
            return fits, bins, float(cost[fits - 1]) if fits else 0.0
        n_ok = fits


@memoize("subsampled_clone_cells", max_entries=16, max_bytes=64 * MiB)
def _level_cells(k: int, epsilon0: float, gamma: float, level: float, p: float) -> _Cells:
    """The cell table of the bins of ``level`` (:func:`_bins`) for the windows of the order
    ``level`` itself, kept per (k, ε0, γ, level): every group of orders up to ``level`` sums over
    sub-windows of it (each cell's values depend on its bin, a and the window's bottom only), so
    a later call with other orders at the same level (the real-order refinement of an answer at
    another count) reuses it. ``p``: the clone probability (:func:`clone_probability`), part of
    the key — the bins and so the cells depend on it."""
    bins = _bins(k, epsilon0, gamma, level, p)
    x, ws = bins.x, bins.w * math.tanh(epsilon0 / 2.0)
    lrmax = np.log1p(ws) - np.log1p(-ws)
    cells = _cells_of(x, ws, _windows(x, lrmax, level)[1], _windows(x, lrmax, 1.0)[0])
    for arr in (cells.seg, cells.a, cells.c0, cells.lr, cells.pb, cells.pbu, cells.lo):
        arr.setflags(write=False)
    return cells


def _group(
    bins: _Bins, s: float, chunks: list[NDArray[np.int64]], orders: NDArray[np.float64], cells: _Cells
) -> NDArray[np.float64]:
    """log Σ_b mass_b·h_b(α) for the orders of ``chunks`` (in their concatenated order): one cell
    table ``cells`` covering the windows of the largest order (:func:`_level_cells`); each chunk
    sums the sub-windows its own largest order needs; the tails of all orders are bounded at once."""
    x, ws = bins.x, bins.w * s
    lrmax = np.log1p(ws) - np.log1p(-ws)
    lo = _windows(x, lrmax, 1.0)[0]
    tops = [float(orders[c].max()) for c in chunks]
    his_c = np.stack([_windows(x, lrmax, t)[1] for t in tops], axis=1)  # bins × chunks
    col_of = np.repeat(np.arange(len(chunks)), [c.size for c in chunks])
    his = his_c[:, col_of]
    starts = np.cumsum([0] + [c.size for c in chunks[:-1]])
    parts = [_window_part(ws, cells, his[:, i], orders[c]) for c, i in zip(chunks, starts)]
    win = _Window(
        *(np.concatenate([getattr(p, f) for p in parts], axis=1) for f in ("ls", "s0", "lin", "eta", "err"))
    )
    al = orders[np.concatenate(chunks)]
    below = ((lo - 1.0).astype(np.float64)[:, None], np.zeros(his.shape[1], dtype=np.intp))
    above = ((his_c + 1.0).astype(np.float64), col_of.astype(np.intp))
    tails = np.logaddexp(
        _tail(al, x, ws, below, np.zeros(x.size), np.broadcast_to((lo > 0)[:, None], his.shape)),
        _tail(al, x, ws, above, x, his < x[:, None]),
    )
    tot = bins.log_mass[:, None] + _combine(win, tails)
    mx = np.max(tot, axis=0)
    with np.errstate(invalid="ignore"):
        fin = np.where(np.isfinite(mx), mx, 0.0)
        out: NDArray[np.float64] = (
            fin + np.log(np.sum(np.exp(tot - fin), axis=0)) + np.where(np.isfinite(mx), 0.0, mx)
        )
    return out


def _log_excess(
    k: int, epsilon0: float, gamma: float, orders: NDArray[np.float64], stop_above: float, p: float
) -> tuple[NDArray[np.float64], bool]:
    """log Σ_b mass_b·h_b(α) per order (+inf for the orders not evaluated), and whether the
    evaluation stopped at ``stop_above`` (else any +inf is the budget's).

    Orders in chunks of _CHUNK, smallest first, in two groups, orders up to _FIRST_GROUP and the
    rest (one design — bins and cell table — per group), while the cells × orders stay within _BUDGET.
    After a group whose largest order already gives D_α ≥ ``stop_above``·(1 + 10⁻³) the rest are
    left +inf: D_α is non-decreasing in α, so a caller that caps the curve at ``stop_above``
    (the pure-DP cap's limit) would not use them."""
    order = np.argsort(orders, kind="stable")
    out = np.full(orders.shape, np.inf)
    chunks = [order[i : i + _CHUNK] for i in range(0, orders.size, _CHUNK)]
    tops = [float(orders[c].max()) for c in chunks]
    s, left, i = math.tanh(epsilon0 / 2.0), _BUDGET, 0
    while i < len(chunks):
        level = _FIRST_GROUP if tops[i] <= _FIRST_GROUP else math.inf
        j = i + sum(1 for t in tops[i:] if t <= level)
        n_ok, bins, cost = _admitted(k, epsilon0, gamma, tops[i:j], left, p)
        if n_ok == 0:
            break
        idx = np.concatenate(chunks[i : i + n_ok])
        level = float(2.0 ** math.ceil(math.log2(tops[i + n_ok - 1])))  # that of _admitted's bins
        out[idx] = _group(bins, s, chunks[i : i + n_ok], orders, _level_cells(k, epsilon0, gamma, level, p))
        left -= cost
        top = int(idx[np.argmax(orders[idx])])
        if n_ok < j - i:
            break
        if math.log1p(math.exp(min(out[top], 700.0))) / (orders[top] - 1.0) >= stop_above * 1.001:
            return out, True
        i = j
    return out, False


def clone_probability(epsilon0: float, randomizer: str = "any") -> float:
    """The clone probability p of the decomposition R(x) = (p/2)·Q0 + (p/2)·Q1 + (1−p)·LO(x)
    every other user's report admits (bounds.md §12): e^{−ε0} for ANY ε0-LDP randomizer (FMT21);
    2/(e^{ε0}+1) for binary and k-ary randomized response (``randomizer="rr"``), whatever k."""
    if randomizer not in RANDOMIZERS:
        raise InvalidParameter(f"unknown randomizer {randomizer!r}; use 'any' or 'rr'")
    return clone_law(epsilon0, randomizer)[0]


def _prepare(n: int, k: int, epsilon0: float) -> tuple[int, int, float]:
    n = check_n(n)
    k = check_n(k, "k")
    if k > n:
        raise InvalidParameter(f"k must be at most n, got k = {k}, n = {n}")
    return n, k, check_epsilon0(epsilon0)


def subsampled_clone_pair_rdp(
    n: int, k: int, epsilon0: float, orders: ArrayLike, randomizer: str = "any"
) -> NDArray[np.float64]:
    """Certified upper bound of D_α(P̃‖Q̃), the Rényi divergence of the subsampled clone pair
    itself (bounds.md §9; with ``randomizer="rr"`` the pair of clone probability 2/(e^{ε0}+1),
    §12), at every real α > 1 (= D_α(Q̃‖P̃): Q̃ is P̃ swapped); +inf at orders beyond the cell
    budget. Never below the exact sum over every cell (module docstring: m-bins by the
    monotonicity in m and the linear scaling in the weight w_m, per bin an exact window over a
    plus convexity × binomial-tail bounds, rounding slack, outward rounding)."""
    return _pair_rdp(n, k, epsilon0, check_orders(orders), capped=False, randomizer=randomizer)[0]


def _pair_rdp(
    n: int, k: int, epsilon0: float, o: NDArray[np.float64], capped: bool, randomizer: str
) -> tuple[NDArray[np.float64], bool]:
    """The pair's certified D_α; ``capped``: orders beyond where it exceeds the cap's limit ε′
    may be left +inf, and the flag says so (:func:`_log_excess`)."""
    n, k, epsilon0 = _prepare(n, k, epsilon0)
    p = clone_probability(epsilon0, randomizer)
    if epsilon0 == 0.0:
        return np.zeros(o.shape), False
    at = np.maximum(o, 1.0 + 1e-6)  # D_α is non-decreasing in α
    stop = amplified_epsilon(n, k, epsilon0) if capped else math.inf
    lx, stopped = _log_excess(k, float(epsilon0), k / n, at, stop, p)
    with np.errstate(over="ignore"):
        lx = lx + math.log1p(_SUM_SLACK)
        out: NDArray[np.float64] = round_up(np.logaddexp(0.0, lx) / (at - 1.0))
    return out, stopped


def subsampled_clone_rdp(
    n: int, k: int, epsilon0: float, orders: ArrayLike, randomizer: str = "any"
) -> NDArray[np.float64]:
    """The ``subsampled_clones`` bound: an upper bound of the RDP of the subsampled shuffle at
    every real α > 1 (both directions), min(D_α(P̃‖Q̃) certified, Lemma 2.1.1's pure-DP cap).

    Validity (bounds.md §9): exactly k of the n users sampled uniformly without replacement,
    independently of the data; the analyst learns nothing about who was sampled; replace-one
    neighbours; every sampled user applies the same pure ε0-LDP randomizer (any output space)
    with independent randomness, one report each, all reports shuffled together. Several
    messages per user: apply it at the total ε0 of a user's reports (never sum per-message
    subsampled pairs). The pair dominates the mechanism (Markov kernel + data processing),
    the cap bounds the mechanism directly (the pair itself may exceed it at large α), so the
    minimum bounds the mechanism. Orders beyond the cell budget are +inf (not capped: the
    caller falls back to its other bounds); orders above a group of orders where the pair
    already exceeds the cap's limit ε′ are not evaluated and get the cap (D_α is non-decreasing
    in α, so the minimum there is the cap). With γ = k/n = 1 the pair is the clone pair of k
    users (:func:`accountant.clones.clone_rdp`). ``randomizer="rr"``: every user applies binary
    or k-ary randomized response, whose clone probability is 2/(e^{ε0}+1) (bounds.md §12).
    """
    o = check_orders(orders)
    val, stopped = _pair_rdp(n, k, epsilon0, o, capped=True, randomizer=randomizer)
    if float(epsilon0) == 0.0:
        return val
    cap = subsampled_cap(n, k, epsilon0, o)
    out: NDArray[np.float64] = np.where(np.isfinite(val) | stopped, np.minimum(val, cap), np.inf)
    return out
