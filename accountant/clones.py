"""Certified RDP of the shuffle model from the clone reduction (bounds.md §8).

Source
------
Feldman, McMillan, Talwar, "Hiding Among the Clones: A Simple and Nearly Optimal Analysis of
Privacy Amplification by Shuffling", FOCS 2021 (arXiv:2012.12803), section 3 — the reduction for
a general ε0-LDP randomizer, *not* the 2023 "stronger clones" (which carries an erratum). For any
ε0-LDP local randomizers (discrete or continuous outputs, adaptively chosen), the shuffled outputs
on two replace-one neighbouring datasets are one post-processing of the pair

    C ~ Bin(n−1, e^{−ε0}),  A | C ~ Bin(C, 1/2),  Δ ~ Bern(e^{ε0}/(e^{ε0}+1)),
    P = (A + Δ, C − A + 1 − Δ),        Q = (A + 1 − Δ, C − A + Δ),

so by data processing ε(α) ≤ D_α(P‖Q) at every real α > 1 (and D_α(P‖Q) = D_α(Q‖P): Q is P with
its coordinates swapped, so both directions are covered). C has the same law under P and Q.
Writing x for the first coordinate, u = 2x − C − 1 and s = tanh(ε0/2), the likelihood ratio is

    R(u, C) = (1 + s·u/(C+1)) / (1 − s·u/(C+1))   ∈ [e^{−ε0}, e^{ε0}],

[checked here: P(x)/Q(x) = ((C+1−x) + E·x)/(E·(C+1−x) + x) with E = e^{ε0}, which is the
expression above], and under Q, u = (2A − C) + ξ with ξ = −1 w.p. E/(E+1), else +1. Hence

    ε_clones(α) = log E_Q[R^α] / (α − 1) = log Σ_c P(C=c)·f_α(c) / (α − 1),
    f_α(c) = E_Q[R^α | C = c] = Σ_x Q_c(x)·R_c(x)^α,
    Q_c(x) = (b_c(x) + e^{−ε0}·b_c(x−1)) / (1 + e^{−ε0}),  b_c = Bin(c, 1/2) pmf.

Certified evaluation (the reported value is never below the exact sum)
----------------------------------------------------------------------
Everything is an upper bound on Σ_c P(c)(f_α(c) − 1) = E_Q[R^α] − 1, computed in log space and,
where f − 1 is small, as a sum of non-negative terms (so ε ~ 1e-12 keeps full relative accuracy).

1. *Monotone in c.* f_α(c) is non-increasing in c: (P_{c+1}, Q_{c+1}) is (P_c, Q_c) with an
   independent fair coin added to the first coordinate (the same Markov kernel for P and Q), so
   D_α cannot increase (data processing). For C in a bin [c_j, c_{j+1}) we use f_α(c_j) with the
   bin's mass (Loader's binomial pmf summed; geometric tail bounds outside c0 ± 40σ_C); the
   lowest grid point is c = 0, where f_α(0) is exactly the ε0-DP cap (E^α + E^{1−α})/(E+1), and
   the last bin [c_last, n−1] uses f_α(c_last). Each chunk of orders has its own C-grid, refined
   until log(1+U) − log(1+L) ≤ ρ_C(α)·log(1+U) for every order, where U is the bound and L the
   same sum with f(c_{j+1}) in bin j (so the discretisation error of ε(α) is at most that
   fraction); ρ_C(α) = 2e-3·max(1, α/64)^{1/4}.
2. *Bins in x, small log f (cell engine).* For a fixed c, cells x are grouped into bins b with
   Q-mass m_b, conditional mean ū_b and variance V_b of u. Taylor's theorem with the Lagrange
   remainder and Σ_{x∈b} Q(x)(u − ū_b) = 0 give, with h = R^α,

       E[h·1_b] ≤ m_b·h(ū_b) + ½·m_b·V_b·sup_{u∈b} h''(u),
       h'' = 4α t² h·(α + t u)/(1 − t²u²)²  (t = s/(c+1); > 0 since |t u| ≤ s < 1),

   the sup bounded by its factors' sups on [u_a, u_b] (h and α + tu increase in u). When
   log f < 2e-3 this is rearranged with h = 1 + α(R − 1) + φ(R), φ(r) = r^α − 1 − α(r − 1) ≥ 0,
   using Σ_x Q R = Σ_x P = 1 and the convexity of R in u (Σ_b m_b R(ū_b) ≤ M_P − J,
   J ≥ Σ_b ½ m_b V_b inf_b R'', R'' = 4t²/(1 − t u)³), so that f − 1 ≤ Σ_b m_b φ(ū_b) + Taylor
   − α·J + (α−1)·τ + tails, every term computed directly. Bins of one cell are exact (V_b = 0).
   The x-window follows the tilted peaks and the neglected Q-mass τ is bounded by geometric
   series of binomial pmf ratios: below the window h ≤ h(edge); above it the tilted sequence
   log b(y) + α·g(u(y+1)) is log-concave (checked pointwise, else the window runs to c + 1) and
   is bounded by a geometric series.
3. *Bins in x, large log f (geometric engine, log f ≳ 6).* Q_c is log-concave in x (a
   convolution of log-concave sequences) and g = log R is concave for u ≤ 0, convex for u ≥ 0,
   so on [a, m] ⊂ [a, b]: Q(x) ≤ Q(a)·r_a^{x−a} (r_a = Q(a+1)/Q(a)) and g(x) ≤ g(a) + k(x−a)
   with k the larger of the tangent slope at a and the chord slope; symmetrically from b on
   [m+1, b]. Each bin is bounded by two closed-form geometric sums — from its pmf at two points,
   no cell data — with relative slack ≈ w²/(24σ²); the bins (σ-scale near the tilted peaks,
   growing geometrically away from them) cover every cell 0..c+1, so there are no tails.

Small problems (estimated C-values × x-cells × orders ≤ 2.5e6, e.g. n ≤ 3,000 with a few orders)
are evaluated exactly: every cell its own bin, the C-grid refined to single integers wherever the
mass matters, window tails ≲ e^{−38}; the result equals the untruncated sum to ~1e-12. Larger
problems use the certified discretisation (measured excess over the exact value ≲ 0.2%; see
``bench/results_clones.md``). Results are finally inflated by a relative 1e-11 (rounding of sums
and pmfs) and capped by the ε0-DP cap ĉ(α) (valid: f_α(c) ≤ f_α(0) for every c), rounded up.
Near s = 1 (large ε0) the factors 1 ∓ s·u/(c+1) are computed as (1 − v) + v·(1 − s) with
1 − s = 2e^{−ε0}/(1 + e^{−ε0}), so nothing is lost to cancellation.

Engines
-------
Three evaluations of the same certified quantity; :func:`clone_rdp` picks one per call:

* *exact* — n ≤ 6,000 and a small estimated cost (C-values × cells × orders ≤ 2.5e6 for at most
  8 orders, ≤ 6e5 for more): every cell, the result equals the untruncated sum to ~1e-12 (above);
* *merged histogram* (``accountant._clone_hist``, the default for everything else) — one C-grid
  and window design per (n, ε0), made for the default grid and 1.01 whatever orders are asked
  (so a value depends on (n, ε0, α) only), all cells binned once on g, each order then costs its
  bins only; the prepared histogram of the last few (n, ε0) is kept in the process, so later
  orders of the same (n, ε0) — the real-order refinement of an ε answer — are almost free. An
  a-posteriori check of the C-discretisation slack sends the rare orders where the design's
  estimates missed to the chord of their neighbours (convexity of (α−1)·D_α) or to
* *adaptive* (steps 1–3 above) — also used when the histogram would exceed
  ``_HIST_CELL_BUDGET`` cells, for ε0 outside [1e-6, 30], and for orders outside [1.01, 10⁴].

Measured on the default grid (``bench/results_clones.md``, 2 cores): 3–90 ms per new (n, ε0) for
n ≤ 10⁵ over ε0 ∈ [0.1, 8], ≤ 0.11 s up to n = 10⁸; excess over the exact sum ≲ 0.1% at orders
≤ 256 and ≲ 0.3% (rarely 1%) above.

Limits
------
``CLONES_MAX_N`` = 10⁸: the largest n certified within about one second on the default
~80-order grid on a 2-core machine by the adaptive engine (the cost grows with the window
~√(n·e^{−ε0}); n = 10⁹ takes up to ~2 s). Above it ``clone_rdp`` returns +inf at every order, so
the caller falls back to the thesis bounds and says so.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np
from scipy.special import gammaln

from .orders import DEFAULT_ORDERS

__all__ = ["CLONES_MAX_N", "clone_rdp", "clone_cap"]

#: Largest n for which :func:`clone_rdp` certifies a bound (about 1 s on the default grid);
#: above it every order returns +inf.
CLONES_MAX_N = 10**8

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LAMBDA = 38.0  # neglected contributions are ≲ e^{−38} relative (window choice only)
_RHO_X = 2.0e-4  # target relative slack of the x-discretisation (approximate mode)
_RHO_C = 2.0e-3  # bound on the relative slack of the C-discretisation (approximate mode)
_RHO_C_EXACT = 1e-13
_EXACT_BUDGET = 2.5e6  # estimated C-values × x-cells × orders under which a call is evaluated exactly
_EXACT_MAX_ORDERS = 8  # … for calls with at most this many orders; with more, only under this budget:
_EXACT_BUDGET_MANY = 6e5  # (≈ 15 ms; above, the histogram engine is faster, its refinement orders almost free)
_EXACT_MAX_N = 6_000  # … and n at most this (above, the estimate misses the cost of wide tilted windows)
_HIST_CELL_BUDGET = 1.6e6  # cells up to which the merged-histogram engine (_clone_hist) is used
_HIST_EPS0 = (1e-6, 30.0)  # ε0 range of the histogram engine (its design estimates need s² > 0)
_PAIR_BATCH = 1 << 20
_CELL_BATCH = 2_000_000
_REL_SAFETY = 1e-11
_MAX_ROUNDS = 40
_CHUNK_SPAN = 4.0  # orders of one chunk span at most this factor


# ----------------------------------------------------------------------------------------------
# accurate log binomial pmf (Loader's saddle-point form; absolute error ~1e-15 at any size)
# ----------------------------------------------------------------------------------------------
def _stirlerr(n: np.ndarray) -> np.ndarray:
    """log(n!) − log(√(2πn)(n/e)^n) for n ≥ 1 (Loader 2000); series for n > 15."""
    n = np.asarray(n, dtype=float)
    nn = n * n
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        series = (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * nn)) / nn) / nn) / nn) / n
    small = n <= 15.0
    if small.any():
        ns = n[small]
        series[small] = gammaln(ns + 1.0) - (ns + 0.5) * np.log(ns) + ns - _HALF_LOG_2PI
    return series


def _bd0(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """x·log(x/m) + m − x ≥ 0, accurate also when x ≈ m (Loader 2000)."""
    x = np.asarray(x, dtype=float)
    m = np.asarray(m, dtype=float)
    d = x - m
    v = d / (x + m)
    near = np.abs(v) < 0.1
    with np.errstate(divide="ignore", invalid="ignore"):
        far = np.where(x > 0, x * np.log(x / m), 0.0) + m - x
    if not near.any():
        return far
    vn = np.where(near, v, 0.0)
    s = d * vn
    ej = 2.0 * x * vn
    v2 = vn * vn
    for j in range(1, 14):
        ej = ej * v2
        s = s + ej / (2 * j + 1)
    return np.where(near, s, far)


def _log_binom_pmf(k, big_n, p: float, q1: float) -> np.ndarray:
    """log Bin(N, p) pmf at k (arrays broadcast); q1 = 1 − p given accurately."""
    k, big_n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(big_n, dtype=float))
    inside = (k > 0) & (k < big_n)
    kk = np.where(inside, k, 1.0)
    nn = np.where(inside, big_n, 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (_stirlerr(nn) - _stirlerr(kk) - _stirlerr(nn - kk)
               - _bd0(kk, nn * p) - _bd0(nn - kk, nn * q1)
               + 0.5 * np.log(nn / (kk * (nn - kk))) - _HALF_LOG_2PI)
    lo_val = big_n * math.log1p(-p) if p < 1 else np.where(big_n == 0, 0.0, -np.inf)
    hi_val = big_n * (math.log(p) if p > 0 else -np.inf)
    out = np.where(inside, out, -np.inf)
    out = np.where((k == big_n) & (big_n > 0), hi_val, out)
    out = np.where((k == 0) & (big_n >= 0), lo_val, out)
    return out


# ----------------------------------------------------------------------------------------------
# small numerical helpers
# ----------------------------------------------------------------------------------------------
def _logsumexp_groups(v: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """log Σ exp(v) over consecutive groups beginning at ``starts`` (non-empty groups)."""
    mx = np.maximum.reduceat(v, starts)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    sizes = np.diff(np.append(starts, v.size))
    with np.errstate(invalid="ignore", under="ignore"):
        tot = np.add.reduceat(np.exp(v - np.repeat(safe, sizes)), starts)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(mx), safe + np.log(tot), mx)


def _lse(*arrs) -> np.ndarray:
    """Element-wise log Σ exp of several broadcastable arrays (−inf allowed)."""
    arrs = np.broadcast_arrays(*[np.asarray(a, dtype=float) for a in arrs])
    st = np.stack(arrs)
    mx = st.max(axis=0)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(under="ignore", invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(mx), safe + np.log(np.exp(st - safe).sum(axis=0)), mx)


def _log_expm1(lf: np.ndarray) -> np.ndarray:
    """log(e^lf − 1) for lf > 0 (−inf at 0)."""
    lf = np.asarray(lf, dtype=float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.where(lf > 30.0, lf + np.log1p(-np.exp(-lf)), np.log(np.expm1(lf)))


def _l1m(n1, u, w: float, s: float):
    """log(1 − s·u/n1), accurate also as s·u/n1 → 1 (s = tanh(ε0/2) may round to 1): for
    s·u/n1 > 1/2 it is log((n1 − u) + u·w) − log(n1) with w = 1 − s = 2e^{−ε0}/(1 + e^{−ε0});
    below, log1p (keeps full relative accuracy when s·u/n1 is tiny, e.g. ε0 ≈ 1e-6)."""
    sv = s * (u / n1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sv > 0.5, np.log((n1 - u) + u * w) - np.log(n1), np.log1p(-np.minimum(sv, 0.5)))


def _gc(n1, u, ctx: _Ctx):
    """log R(u, c) = log(1 + s·u/n1) − log(1 − s·u/n1), n1 = c + 1 (accurate up to |u| = n1)."""
    return _l1m(n1, -u, ctx.w, ctx.s) - _l1m(n1, u, ctx.w, ctx.s)


def _l1m_sq(n1, u, ctx: _Ctx):
    """log(1 − s²u²/n1²) = log(1 − s|u|/n1) + log(1 + s|u|/n1)."""
    ua = np.abs(u)
    return _l1m(n1, ua, ctx.w, ctx.s) + _l1m(n1, -ua, ctx.w, ctx.s)


def _em1mx(z: np.ndarray) -> np.ndarray:
    """e^z − 1 − z (series for |z| < 0.05, else expm1(z) − z; relative error ≲ 1e-15)."""
    ser = z * z / 2.0 * (1.0 + z / 3.0 * (1.0 + z / 4.0 * (1.0 + z / 5.0 * (1.0 + z / 6.0 * (1.0 + z / 7.0 * (1.0 + z / 8.0))))))
    return np.where(np.abs(z) < 0.05, ser, np.expm1(z) - z)


def _log_phi(alpha: np.ndarray, lr: np.ndarray) -> np.ndarray:
    """log φ_α(r) with r = e^lr, φ_α(r) = r^α − 1 − α(r − 1) ≥ 0 (no cancellation near r = 1).

    |α·lr| ≤ 0.05: φ = α(α−1)lr²/2·(1 + Σ_{k≥3} 2·S_k·lr^{k−2}/k!), S_k = Σ_{i<k−1} α^i — the exact
    power series of e^{α·lr} − 1 − α(e^{lr} − 1), every term positive in α − 1 (valid at any scale,
    no underflow). Otherwise, for α < 2: δ·h(lr) + e^{lr}·(e^{δ·lr} − 1 − δ·lr), δ = α − 1,
    h(x) = x·e^x − e^x + 1 ≥ 0 (both terms ≥ 0, exact as α → 1). For α ≥ 2 (cancellation ≤ 2):
    0.05 < |α·lr| ≤ 1: (e^y − 1 − y) − α(e^{lr} − 1 − lr); y + log(1 − e^{−y}(1 + α(e^{lr} − 1)))
    for y > 1; log(expm1(y) − α·expm1(lr)) for y < −1.
    """
    alpha, lr = np.broadcast_arrays(np.asarray(alpha, dtype=float), np.asarray(lr, dtype=float))
    y = alpha * lr
    ay = np.abs(y)
    out = np.empty(y.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        small = ay <= 0.05
        if small.any():
            a, x = alpha[small], lr[small]
            sk = 1.0 + a
            term = x / 3.0  # 2·x/3!
            tot = sk * term
            for k in range(4, 13):
                sk = 1.0 + a * sk
                term = term * x / k
                tot = tot + sk * term
            out[small] = np.log(0.5 * a * (a - 1.0)) + 2.0 * np.log(np.abs(x)) + np.log1p(tot)
        # α < 2 (outside the series): φ = δ·h(x) + e^x·(e^{δx} − 1 − δx), δ = α − 1,
        # h(x) = x·e^x − e^x + 1 — two non-negative terms, so no cancellation as α → 1
        near1 = ~small & (alpha < 2.0)
        if near1.any():
            d, x = alpha[near1] - 1.0, lr[near1]
            h = np.where(np.abs(x) < 1.0, x * np.expm1(x) - _em1mx(x), 1.0 + np.exp(x) * (x - 1.0))
            out[near1] = np.log(d * h + np.exp(x) * _em1mx(d * x))
        rest = ~small & ~near1
        mid = rest & (ay <= 1.0)
        if mid.any():
            a, x, yy = alpha[mid], lr[mid], y[mid]
            out[mid] = np.log(_em1mx(yy) - a * _em1mx(x))
        big = rest & (y > 1.0)
        if big.any():
            a, x, yy = alpha[big], lr[big], y[big]
            out[big] = yy + np.log1p(-np.exp(-yy) * (1.0 + a * np.expm1(x)))
        neg = rest & (y < -1.0)
        if neg.any():
            a, x, yy = alpha[neg], lr[neg], y[neg]
            out[neg] = np.log(np.expm1(yy) - a * np.expm1(x))
    return out


def clone_cap(epsilon0: float, orders) -> np.ndarray:
    """The ε0-DP cap ĉ(α) = log((e^{αε0} + e^{(1−α)ε0})/(e^{ε0}+1))/(α−1), computed as f_α(0).

    f_α(0) − 1 = (E·φ_α(1/E) + φ_α(E))/(E+1) (two cells, no cancellation); rounded up by a
    relative 1e-14.
    """
    a = np.asarray(orders, dtype=float)
    if epsilon0 == 0.0:
        return np.zeros(a.shape)
    lw1 = -math.log1p(math.exp(-epsilon0))
    lw0 = -epsilon0 + lw1
    lfm1 = np.logaddexp(lw1 + _log_phi(a, -epsilon0), lw0 + _log_phi(a, epsilon0))
    return np.logaddexp(0.0, lfm1) / (a - 1.0) * (1.0 + 1e-14)


# ----------------------------------------------------------------------------------------------
# the engine
# ----------------------------------------------------------------------------------------------
class _Ctx:
    def __init__(self, n: int, eps0: float):
        self.N = n - 1
        self.eps0 = eps0
        self.q = math.exp(-eps0)
        self.q1 = -math.expm1(-eps0)  # 1 − q
        self.s = math.tanh(eps0 / 2.0)
        self.w = 2.0 * math.exp(-eps0) / (1.0 + math.exp(-eps0))  # 1 − s, accurately
        self.one_m_s2 = 1.0 / math.cosh(eps0 / 2.0) ** 2
        self.log1pq = math.log1p(self.q)
        self.c0 = self.N * self.q
        self.sig_c = math.sqrt(self.N * self.q * self.q1)
        self.lcap_cache: dict[float, float] = {}


def _lf_est(alpha: np.ndarray, c: np.ndarray, ctx: _Ctx, lcap: np.ndarray) -> np.ndarray:
    """Rough log f_α(c) (Gaussian approximation, capped by the c = 0 value); tuning only."""
    return np.minimum(2.0 * alpha * (alpha - 1.0) * ctx.s**2 / (c + 1.0), lcap)


def _log_cap_f(alpha, ctx: _Ctx) -> np.ndarray:
    """log f_α(0) = (α−1)·ĉ(α) (memoised per order on the context)."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    cache = ctx.lcap_cache
    miss = [v for v in a.tolist() if v not in cache]
    if miss:
        m = np.array(miss)
        lw1 = -ctx.log1pq
        lw0 = -ctx.eps0 + lw1
        vals = np.logaddexp(0.0, np.logaddexp(lw1 + _log_phi(m, -ctx.eps0), lw0 + _log_phi(m, ctx.eps0)))
        cache.update(zip(miss, vals.tolist()))
    out = np.array([cache[v] for v in a.tolist()])
    return out if np.ndim(alpha) else out[0]


_BLK = 32


def _tilt(c: np.ndarray, a, s: float):
    """Tilted peak u* of Q·R^a, its standard deviation (in u) and whether it sits at the edge
    u = c + 1 (window and bin-width choice only; no bound depends on it). ``a`` may be an array
    of orders (results then have shape (len(a), len(c))).

    With y = t·u = s·z (t = s/(c+1)) and Stirling's form log b ≈ −(c+1)·H(z) − ½·log(1 − z²),
    H(z) = ((1+z)log(1+z) + (1−z)log(1−z))/2, the profile is ℓ(y) = log b + 2a·artanh(y);
    it is maximised on a grid in y ∈ [0, s) and refined by Newton steps.
    """
    cf = np.asarray(c, dtype=float)
    scalar = np.ndim(a) == 0
    av = np.atleast_1d(np.asarray(a, dtype=float))[:, None]
    n1 = (cf + 1.0)[None, :]
    if s <= 1e-100:  # the tilt is negligible (and s² would underflow)
        shape = (av.shape[0], cf.size)
        res = (np.zeros(shape), np.broadcast_to(np.sqrt(n1), shape).copy(), np.zeros(shape, dtype=bool))
        return tuple(r[0] for r in res) if scalar else res
    zmax = 1.0 - 1e-15

    def d1(y):
        z = np.minimum(y / s, zmax)
        return -(n1 / s) * np.arctanh(z) + (z / s) / (1.0 - z * z) + 2.0 * av / (1.0 - y * y)

    def d2(y):
        z = np.minimum(y / s, zmax)
        return (-(n1 / s**2) / (1.0 - z * z) + (1.0 + z * z) / (s**2 * (1.0 - z * z) ** 2)
                + 4.0 * av * y / (1.0 - y * y) ** 2)

    grid = s * (1.0 - np.geomspace(1.0, 1e-12, 28))
    z = np.minimum(grid / s, zmax)[:, None, None]
    h = 0.5 * ((1.0 + z) * np.log1p(z) + (1.0 - z) * np.log1p(-z))
    vals = -n1[None] * h - 0.5 * np.log1p(-z * z) + 2.0 * av[None] * np.arctanh(grid)[:, None, None]
    k = np.argmax(vals, axis=0)
    lo = grid[np.maximum(k - 1, 0)]
    hi = grid[np.minimum(k + 1, grid.size - 1)]
    y = grid[k]
    for _ in range(5):
        dd = d2(y)
        step = np.where(dd < 0, -d1(y) / np.where(dd < 0, dd, -1.0), 0.0)
        y = np.clip(y + step, lo, hi)
    u = y * n1 / s
    t = s / n1
    zz = np.minimum(y / s, zmax)
    prec = 1.0 / (n1 * (1.0 - zz * zz)) - 4.0 * av * t * t * y / (1.0 - y * y) ** 2
    edge = (u >= cf[None, :]) | (prec <= 0.0)
    u = np.where(edge, n1, u)
    sig = 1.0 / np.sqrt(np.where(prec > 0, prec, 1.0 / n1))
    if scalar:
        return u[0], sig[0], edge[0]
    return u, sig, edge


def _concave_above(c: np.ndarray, x_h: np.ndarray, a: float, ctx: _Ctx) -> np.ndarray:
    """Whether z_y = log b(y) + a·g(u(y+1)) is concave on y ∈ [x_h, c] (y > c/2).

    Δ²z ≤ 0 needs a·Δ²g ≤ |Δ² log b|. On an interval [y_i, y_{i+1}] (y_i ≥ c/2) of a grid that
    is geometric towards the edge: |Δ² log b(y)| = log(1 + 1/y) + log(1 + 1/(c−y)) ≥
    1/(y_i+1) + 1/(c−y_i+1) (increasing in y there), and a·Δ²g ≤ 4a·g''(u(y_{i+1}) + 2) with
    g''(u) = 4t³u/(1 − t²u²)² increasing for u ≥ 0 (capped at u = c+1)."""
    cf = c.astype(float)
    n1 = cf + 1.0
    xh = x_h.astype(float)
    v = np.concatenate([np.linspace(0.0, 0.9, 10), 1.0 - np.geomspace(0.1, 1e-12, 120)[1:]])
    ys = xh[:, None] + (cf - xh)[:, None] * v[None, :]
    y0, y1 = ys[:, :-1], ys[:, 1:]
    ub = np.minimum(2.0 * y1 + 3.0 - cf[:, None], n1[:, None])
    t = ctx.s / n1[:, None]
    g2 = 4.0 * t**3 * ub * np.exp(-2.0 * _l1m_sq(n1[:, None], ub, ctx))
    inf_b = 1.0 / (y0 + 1.0) + 1.0 / np.maximum(cf[:, None] - y0 + 1.0, 1.0)
    return np.all(4.0 * a * g2 <= inf_b, axis=1)


def _windows(c, a_lo: float, a_hi: float, ctx: _Ctx, exact: bool):
    """Cell window [xL, xH] per c (integers within [0, c+1]) for the orders in [a_lo, a_hi].

    Below: the neglected mass (≤ e^{−d²/(2σ_x²)}, Hoeffding) is ≲ e^{−38}·(f − 1)/α at a_lo.
    Above: past the tilted peak u* of a_hi by √(2·44) tilted standard deviations; the tilted
    tail beyond must be log-concave (checked) for its geometric bound, else the window runs to
    c + 1.
    """
    cf = c.astype(float)
    s = ctx.s
    sig_x = 0.5 * np.sqrt(cf + 1.0)
    lcap_lo = float(_log_cap_f(np.array([a_lo]), ctx)[0])
    lfm1_lo = _log_expm1(np.maximum(_lf_est(a_lo, cf, ctx, lcap_lo), 1e-300))
    d_l = sig_x * np.sqrt(2.0 * (_LAMBDA + np.maximum(0.0, math.log(a_lo) - lfm1_lo)))
    u, sig_tilt, edge = _tilt(c, a_hi, s)
    d_h = np.maximum(d_l, 0.5 * (u + math.sqrt(2.0 * (_LAMBDA + 6.0)) * sig_tilt) + 1.0)
    centre = 0.5 * (cf + 1.0)
    x_l = np.maximum(0, np.floor(centre - d_l)).astype(np.int64)
    x_h = np.minimum(c + 1, np.ceil(centre + d_h)).astype(np.int64)
    x_h = np.where(edge, c + 1, x_h)
    need = x_h < c + 1  # (windows that already reach c + 1 have no upper tail to check)
    conc = np.ones(c.size, dtype=bool)
    if need.any():
        conc[need] = _concave_above(c[need], x_h[need], a_hi, ctx)
    x_h = np.where(conc & (x_h > centre + 1.0), x_h, c + 1)
    if exact:
        small = c + 2 <= 64
        x_l = np.where(small, 0, x_l)
        x_h = np.where(small, c + 1, x_h)
    return x_l, x_h


class _Cells:
    """Cells x ∈ [x_l, x_h] of every segment (one c each) in a padded block layout.

    Arrays of shape (blocks, 32); each segment owns consecutive blocks; padding cells after a
    segment's last cell carry log-mass −inf and repeat the last cell's u (so they change
    nothing). log b_c(x) is accumulated from the exact log-ratios log((c−x+1)/x) within each
    block, anchored at Loader's accurate log pmf (absolute error ≲ 1e-14). Per-block log-mass,
    mean and variance of u are precomputed (bins made of whole blocks merge them).
    """

    def __init__(self, c: np.ndarray, x_l: np.ndarray, x_h: np.ndarray, ctx: _Ctx, exact: bool):
        n_seg = c.size
        self.c, self.x_l, self.x_h = c, x_l, x_h
        ncell = x_h - x_l + 1
        nblk = (ncell + _BLK - 1) // _BLK
        self.blk_first = np.concatenate([[0], np.cumsum(nblk)[:-1]])
        nb_tot = int(nblk.sum())
        blk_seg = np.repeat(np.arange(n_seg), nblk)
        self.blk_seg = blk_seg
        x0 = (x_l[blk_seg] + _BLK * (np.arange(nb_tot) - self.blk_first[blk_seg])).astype(float)
        cb = c[blk_seg].astype(float)
        xmax = x_h[blk_seg].astype(float)
        self.blk_len = np.minimum(_BLK, xmax - x0 + 1).astype(np.int64)
        xs = np.minimum(x0[:, None] + np.arange(_BLK, dtype=float)[None, :], xmax[:, None])
        with np.errstate(divide="ignore", invalid="ignore"):
            lr = np.log((cb[:, None] - xs + 1.0) / xs)
            lr[:, 0] = 0.0
            lb = _log_binom_pmf(x0, cb, 0.5, 0.5)[:, None] + np.cumsum(lr, axis=1)
            lq = lb - ctx.log1pq + np.log1p(ctx.q * xs / (cb[:, None] - xs + 1.0))
        # Q(c+1) = q·b(c)/(1+q): the cell x = c+1 (last cell of a segment whose window reaches it)
        last_blk = self.blk_first + nblk - 1
        last_j = (ncell - 1) % _BLK
        top = np.flatnonzero(x_h == c + 1)
        bt, jt = last_blk[top], last_j[top]
        prev = np.where(jt > 0, lb[bt, np.maximum(jt - 1, 0)], lb[np.maximum(bt - 1, 0), _BLK - 1])
        lq[bt, jt] = prev - ctx.eps0 - ctx.log1pq
        pad = np.arange(_BLK)[None, :] >= self.blk_len[:, None]
        lq[pad] = -np.inf
        self.lq = lq
        self.u = 2.0 * xs - cb[:, None] - 1.0
        self.t_blk = ctx.s / (cb + 1.0)
        self.g = _gc(cb[:, None] + 1.0, self.u, ctx)
        last = self.blk_len - 1
        rows = np.arange(nb_tot)
        self.u_first, self.u_last = self.u[:, 0], self.u[rows, last]
        self.lq_first, self.lq_last = lq[:, 0], lq[rows, last]
        self.g_first, self.g_last = self.g[:, 0], self.g[rows, last]
        if not exact:
            self.b_lm, self.b_u, self.b_v = _sub_stats(lq, self.u)

    def select(self, x_lo: np.ndarray, x_hi: np.ndarray):
        """Block indices covering [x_lo, x_hi] per segment (clipped to the window), the effective
        window edges, and the number of selected blocks per segment."""
        xl = np.maximum(x_lo, self.x_l)
        xh = np.minimum(x_hi, self.x_h)
        b_lo = (xl - self.x_l) // _BLK
        b_hi = (xh - self.x_l) // _BLK
        nsel = b_hi - b_lo + 1
        first = self.blk_first + b_lo
        start = np.concatenate([[0], np.cumsum(nsel)[:-1]])
        idx = np.repeat(first - start, nsel) + np.arange(int(nsel.sum()))
        e_lo = self.x_l + _BLK * b_lo
        e_hi = np.minimum(self.x_h, self.x_l + _BLK * b_hi + _BLK - 1)
        return idx, e_lo, e_hi, nsel


def _sub_stats(lq3: np.ndarray, u3: np.ndarray):
    """log-mass, mean and variance of u along the last axis (padding: −inf, ignored)."""
    mx = lq3.max(axis=-1)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(invalid="ignore", under="ignore"):
        w = np.exp(lq3 - safe[..., None])
    sw = w.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ub = (w * u3).sum(axis=-1) / sw
        dv = u3 - ub[..., None]
        var = (w * dv * dv).sum(axis=-1) / sw
        lm = np.where(np.isfinite(mx), safe + np.log(sw), -np.inf)
    return lm, ub, var


def _tails(c: np.ndarray, e_lo: np.ndarray, e_hi: np.ndarray, alphas: np.ndarray, ctx: _Ctx):
    """Bounds on what lies outside the window [e_lo, e_hi] of each segment, per order.

    Below: Q-mass ≤ P(A ≤ e_lo−1) ≤ b(k)/(1 − k/(c−k+1)) (k = e_lo − 1), and h ≤ h(e_lo − 1).
    Above: Q(x) ≤ b(x−1) for x > c/2 + 1; z_y = log b(y) + α·g(u(y+1)) is concave for y ≥ e_hi
    (checked in _windows), so Σ_{y ≥ e_hi} e^{z_y} ≤ e^{z0}/(1 − e^{z1−z0}) when z1 < z0, otherwise
    the crude P(A ≥ e_hi)·e^{α·ε0}. Returns log T_lo, log T_hi (segments × orders) and log τ.
    """
    n_seg = c.size
    cf = c.astype(float)
    ltau_lo = np.full(n_seg, -np.inf)
    g_lo = np.zeros(n_seg)
    m = e_lo > 0
    if m.any():
        k0 = e_lo[m].astype(float) - 1.0
        r = k0 / (cf[m] - k0 + 1.0)
        lbk = _log_binom_pmf(k0, cf[m], 0.5, 0.5)
        ltau_lo[m] = np.where(r < 1.0, lbk - np.log1p(-np.where(r < 1.0, r, 0.0)), 0.0)
        g_lo[m] = _gc(cf[m] + 1.0, 2.0 * k0 - cf[m] - 1.0, ctx)
    ltau_hi = np.full(n_seg, -np.inf)
    lz0 = np.full(n_seg, -np.inf)
    lz1 = np.full(n_seg, -np.inf)
    g_h1 = np.zeros(n_seg)
    g_h2 = np.zeros(n_seg)
    m = e_hi < c + 1
    if m.any():
        y = e_hi[m].astype(float)
        cm = cf[m]
        r = (cm - y) / (y + 1.0)
        lby = _log_binom_pmf(y, cm, 0.5, 0.5)
        ltau_hi[m] = np.where(r < 1.0, lby - np.log1p(-np.where(r < 1.0, r, 0.0)), 0.0)
        lz0[m] = lby
        lz1[m] = _log_binom_pmf(y + 1.0, cm, 0.5, 0.5)
        g_h1[m] = _gc(cm + 1.0, 2.0 * y + 1.0 - cm, ctx)
        g_h2[m] = _gc(cm + 1.0, np.minimum(2.0 * y + 3.0 - cm, cm + 1.0), ctx)
    al = alphas[None, :]
    t_lo = ltau_lo[:, None] + al * g_lo[:, None]
    z0 = lz0[:, None] + al * g_h1[:, None]
    z1 = lz1[:, None] + al * g_h2[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        geo = z1 < z0
        t_hi_geo = z0 - np.log1p(-np.exp(np.where(geo, z1 - z0, -1.0)))
    t_hi = np.where(np.isfinite(ltau_hi)[:, None], np.where(geo, t_hi_geo, ltau_hi[:, None] + al * ctx.eps0),
                    -np.inf)
    with np.errstate(divide="ignore"):
        ltau = np.logaddexp(ltau_lo, ltau_hi)
    return t_lo, t_hi, ltau


def _block_width(cells: _Cells, idx: np.ndarray, nsel: np.ndarray, ch: np.ndarray, ctx: _Ctx) -> np.ndarray:
    """Target bin width (cells) on each selected block, for one chunk of orders.

    For order α the width satisfies (α·g'·w)³/48 ≲ ρ·log f (large log f) or the φ-form analogue
    (small log f), relaxed on blocks D nats below the tilted peak of α (allowed slack ×e^{D/2},
    with α·g'·w ≤ 1 + D/3); the minimum over the chunk's orders. Only tightness depends on it.
    """
    seg = cells.blk_seg[idx]
    cc = cells.c[seg].astype(float)
    t = cells.t_blk[idx]
    umax = np.maximum(np.abs(cells.u_first[idx]), np.abs(cells.u_last[idx]))
    gp = 4.0 * t / (1.0 - (t * umax) ** 2)  # max of d log R/dx on the block
    w = np.maximum(0.5 * np.sqrt(cc + 1.0), 1.0)
    lcap = _log_cap_f(ch, ctx)
    sstart = np.concatenate([[0], np.cumsum(nsel)[:-1]])
    rows = np.arange(idx.size)
    a_all = ch[:, None]
    lf_all = _lf_est(a_all, cc[None, :], ctx, lcap[:, None])  # (orders, blocks)
    small = lf_all < 1.0
    if small.any():
        w_small = np.cbrt(_RHO_X * (a_all - 1.0) * (cc + 1.0)[None, :] / (gp[None, :] * (a_all * a_all / 6.0 + 0.25)))
        w = np.minimum(w, np.where(small, w_small, np.inf).min(axis=0))
    keep = ~small.all(axis=1)
    if keep.any():
        a_arr = a_all[keep]
        lf_arr = lf_all[keep]
        p0 = cells.lq_first[idx][None, :] + a_arr * cells.g_first[idx][None, :]
        p1 = cells.lq_last[idx][None, :] + a_arr * cells.g_last[idx][None, :]
        pb = np.maximum(p0, p1)
        pk = np.repeat(np.maximum.reduceat(pb, sstart, axis=1), nsel, axis=1)
        at = np.repeat(np.minimum.reduceat(np.where(pb >= pk, rows[None, :], idx.size), sstart, axis=1), nsel, axis=1)
        dd = np.where(np.abs(rows[None, :] - at) <= 1, 0.0, np.maximum(pk - pb, 0.0))
        base = 24.0 * _RHO_X * np.maximum(lf_arr, 1.0)
        kappa = np.maximum(np.minimum(np.cbrt(base * np.exp(np.minimum(dd, 600.0) / 2.0)), 1.0 + dd / 3.0),
                           np.cbrt(base))
        wb = kappa / (a_arr * gp[None, :])
        w = np.minimum(w, np.where(lf_arr >= 1.0, wb, np.inf).min(axis=0))
    return w


def _chunk_bins(cells: _Cells, idx: np.ndarray, nsel: np.ndarray, ch: np.ndarray, ctx: _Ctx, exact: bool):
    """Bins of one chunk, grouped by segment: log-mass, ū, V, u_a, u_b, g(u_b), segment sizes.

    A block whose target width is < 32 is cut into equal sub-bins of a power-of-two width; runs
    of blocks with wider targets are merged (parallel-axis formula for the variance).
    """
    n_seg = nsel.size
    seg = cells.blk_seg[idx]
    if exact:
        lm = cells.lq[idx].ravel()
        keep = np.isfinite(lm)
        u = cells.u[idx].ravel()[keep]
        return (lm[keep], u, None, u, u, cells.g[idx].ravel()[keep],
                np.bincount(np.repeat(seg, _BLK)[keep], minlength=n_seg))
    w = _block_width(cells, idx, nsel, ch, ctx)
    wpow = np.where(w >= _BLK, _BLK, 2 ** np.floor(np.log2(np.maximum(w, 1.0))).astype(np.int64))
    parts = []
    for width in (1, 2, 4, 8, 16):
        sel = np.flatnonzero(wpow == width)
        if sel.size == 0:
            continue
        b = idx[sel]
        lq3 = cells.lq[b].reshape(sel.size, _BLK // width, width)
        u3 = cells.u[b].reshape(sel.size, _BLK // width, width)
        g3 = cells.g[b].reshape(sel.size, _BLK // width, width)
        lm, ub, var = _sub_stats(lq3, u3)
        ok = np.isfinite(lm).ravel()
        parts.append((lm.ravel()[ok], ub.ravel()[ok], var.ravel()[ok], u3[..., 0].ravel()[ok],
                      u3[..., -1].ravel()[ok], g3[..., -1].ravel()[ok],
                      np.repeat(seg[sel], _BLK // width)[ok]))
    coarse = np.flatnonzero(wpow == _BLK)
    if coarse.size:
        # runs of consecutive coarse blocks of one segment, ≤ w/32 blocks per bin
        pos = coarse
        step = 1.0 / np.maximum(np.floor(w[pos] / _BLK), 1.0)
        cum = np.cumsum(step) - step
        kb = np.floor(cum + 1e-9)
        new = np.ones(pos.size, dtype=bool)
        new[1:] = (kb[1:] != kb[:-1]) | (pos[1:] != pos[:-1] + 1) | (seg[pos[1:]] != seg[pos[:-1]])
        st = np.flatnonzero(new)
        b = idx[pos]
        blm, bu, bv = cells.b_lm[b], cells.b_u[b], cells.b_v[b]
        en = np.append(st[1:], pos.size)
        sz = en - st
        mx = np.maximum.reduceat(blm, st)
        wt = np.exp(blm - np.repeat(mx, sz))
        sw = np.add.reduceat(wt, st)
        ub = np.add.reduceat(wt * bu, st) / sw
        d = bu - np.repeat(ub, sz)
        var = np.add.reduceat(wt * (bv + d * d), st) / sw
        parts.append((mx + np.log(sw), ub, var, cells.u_first[b[st]], cells.u_last[b[en - 1]],
                      cells.g_last[b[en - 1]], seg[pos[st]]))
    cat = [np.concatenate([p[i] for p in parts]) for i in range(7)]
    order = np.argsort(cat[6], kind="stable")
    lm, ub, var, u_a, u_b, g_b, sg = (v[order] for v in cat)
    return lm, ub, var, u_a, u_b, g_b, np.bincount(sg, minlength=n_seg)


def _main_sums(lm, gbar, nb_seg, alphas, phi: bool, tay=None) -> np.ndarray:
    """log Σ_b [m_b·(h or φ)(ū_b) + Taylor_b] per (segment, order), dense over (orders × bins)
    in column batches of whole segments. ``tay`` = (l_t0, t·u_b, g(u_b)) or None."""
    n_seg = nb_seg.size
    a = alphas[:, None]
    la = np.log(a)
    res = np.empty((n_seg, alphas.size))
    cols_per = max(1, _PAIR_BATCH // max(alphas.size, 1))
    csum = np.cumsum(nb_seg)
    seg = 0
    while seg < n_seg:
        b0 = csum[seg] - nb_seg[seg]
        stop = int(np.searchsorted(csum, b0 + cols_per, side="right"))
        stop = min(max(stop, seg + 1), n_seg)
        b1 = csum[stop - 1]
        sizes = nb_seg[seg:stop]
        gst = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        if phi:
            main = lm[None, b0:b1] + _log_phi(a, gbar[None, b0:b1])
        else:
            main = lm[None, b0:b1] + a * gbar[None, b0:b1]
        if tay is not None:
            l_t0, tub, g_b = tay
            # ½·m·V·sup h'' ≤ ½mV·4t²/(1−t²u²max)²·α(α + t·u_b)·h(u_b)
            tt = (l_t0[None, b0:b1] + la + np.log(a + tub[None, b0:b1])) + a * g_b[None, b0:b1]
            mx = np.maximum.reduceat(np.maximum(main, tt), gst, axis=1)
        else:
            mx = np.maximum.reduceat(main, gst, axis=1)
        safe = np.where(np.isfinite(mx), mx, 0.0)
        rep = np.repeat(safe, sizes, axis=1)
        with np.errstate(under="ignore", invalid="ignore"):
            ex = np.exp(main - rep)
            if tay is not None:
                ex += np.exp(tt - rep)
        tot = np.add.reduceat(ex, gst, axis=1)
        with np.errstate(divide="ignore"):
            res[seg:stop] = np.where(np.isfinite(mx), safe + np.log(tot), mx).T
        seg = stop
    return res


_LF_GEO = 6.0  # orders with estimated log f ≥ this (at the mean c) use the geometric-bin engine
_THETA = 0.25  # outer bins below the peaks: width ≤ θ·(distance to the lowest peak)


def _log_q_at(x: np.ndarray, c: np.ndarray, ctx: _Ctx) -> np.ndarray:
    """log Q_c(x) at arbitrary cells 0 ≤ x ≤ c+1 (Loader's pmf; x = c+1: q·b(c)/(1+q))."""
    top = x >= c + 1
    xb = np.where(top, c, x).astype(float)
    cf = c.astype(float)
    lb = _log_binom_pmf(xb, cf, 0.5, 0.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        return lb - ctx.log1pq + np.where(top, -ctx.eps0, np.log1p(ctx.q * xb / np.maximum(cf - xb + 1.0, 1.0)))


def _log_q_ratio(x: np.ndarray, c: np.ndarray, ctx: _Ctx) -> np.ndarray:
    """log Q_c(x+1)/Q_c(x) for 0 ≤ x ≤ c (closed form from b(x±1)/b(x))."""
    xf = x.astype(float)
    cf = c.astype(float)
    with np.errstate(divide="ignore"):
        return np.log((cf - xf) / (xf + 1.0) + ctx.q) - np.log1p(ctx.q * xf / (cf - xf + 1.0))


def _log_geom(z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """log Σ_{j<w} e^{jz} (w ≥ 1), stable for every real z."""
    za = np.abs(z)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = np.where(z > 0, (w - 1.0) * z, 0.0) + np.log(-np.expm1(-w * za)) - np.log(-np.expm1(-za))
    return np.where(za * w < 1e-12, np.log(w), v)


def _eval_geo(c: np.ndarray, ch: np.ndarray, ctx: _Ctx) -> np.ndarray:
    """Upper bounds on log(f_α(c) − 1) for large log f, without cell data.

    Q_c is log-concave in x (a convolution of Bin(c, 1/2) with a Bernoulli, Hoggar's theorem),
    so on a bin [a, b], Q(x) ≤ Q(a)·r_a^{x−a} with r_a = Q(a+1)/Q(a). And g = log R is concave
    for u ≤ 0 and convex for u ≥ 0, so g(x) ≤ g(a) + k·(x−a) on [a, b] with k the larger of the
    tangent slope at a and the chord slope. Hence
        Σ_{x∈[a,b]} Q(x)·e^{α·g(x)} ≤ Q(a)·e^{α·g(a)}·Σ_{j<w} (r_a·e^{α·k})^j   (w = b − a + 1),
    a closed form. The bins cover every cell 0..c+1 (no tail terms); they are σ-scale wide
    around the tilted peaks (slack ≈ w²/(6σ²) relative) and grow geometrically outside.
    """
    n_seg = c.size
    cf = c.astype(float)
    s = ctx.s
    t = s / (cf + 1.0)
    centre = 0.5 * (cf + 1.0)
    lcap = _log_cap_f(ch, ctx)
    kk = math.sqrt(2.0 * (_LAMBDA + 6.0))
    u_all, sig_all, edge_all = _tilt(c, ch, s)
    xs_all = np.where(edge_all, cf[None, :] + 1.0, centre[None, :] + 0.5 * u_all)  # (orders, segs)
    half_all = np.where(edge_all, kk * np.sqrt(cf + 1.0)[None, :], 0.5 * kk * sig_all)
    pk_lo = xs_all.min(axis=0)
    core_lo = (xs_all - half_all).min(axis=0)
    core_hi = (xs_all + half_all).max(axis=0)
    core_lo = np.clip(np.floor(core_lo), 0.0, cf + 1.0)
    core_hi = np.clip(np.ceil(core_hi), core_lo, cf + 1.0)
    pk_lo = np.clip(pk_lo, core_lo, cf + 1.0)
    # core bins: width w(x) = min(σ_loc(x)·√(24ρ·lf), √(8ρ·lf/(α·g''(x)))) (slack ≲ ρ·lf each),
    # placed by inverting the cumulative density 1/w sampled on the core (denser near c+1)
    # log f and the order whose tilted peak is at x: interpolated across the chunk's peaks
    lf_all = np.maximum(_lf_est(ch[:, None], cf[None, :], ctx, lcap[:, None]), 1.0)
    pk_sorted = np.maximum.accumulate(xs_all, axis=0)
    span = core_hi - core_lo + 1.0
    vv = np.concatenate([np.linspace(0.0, 1.0, 65), 1.0 - np.geomspace(0.25, 1e-9, 40)])
    vv = np.unique(np.clip(vv, 0.0, 1.0))
    xsm = core_lo[:, None] + span[:, None] * vv[None, :]
    xq = np.minimum(xsm, cf[:, None])
    sig_loc = 1.0 / np.sqrt(1.0 / (xq + 1.0) + 1.0 / (cf[:, None] - xq + 1.0))
    uq = 2.0 * xq - cf[:, None] - 1.0
    tu = np.minimum(np.abs(t[:, None] * uq), 0.999999)
    g2x = 16.0 * t[:, None] ** 3 * np.abs(uq) / (1.0 - tu**2) ** 2  # d²g/dx²
    big = float(cf.max()) * 4.0 + 16.0
    offs = np.arange(n_seg)[:, None] * big
    # per segment: keys = peak positions, with sentinels so that each segment clamps to its own ends
    kx = np.concatenate([np.full((n_seg, 1), -2.0), pk_sorted.T + np.arange(ch.size)[None, :] * 1e-9,
                         np.full((n_seg, 1), float(cf.max()) + 3.0)], axis=1) + offs
    lf_k = np.concatenate([lf_all.T[:, :1], lf_all.T, lf_all.T[:, -1:]], axis=1)
    a_k = np.concatenate([ch[:1], ch, ch[-1:]])[None, :] * np.ones((n_seg, 1))
    lf_x = np.interp((xsm + offs).ravel(), kx.ravel(), lf_k.ravel()).reshape(xsm.shape)
    a_x = np.interp((xsm + offs).ravel(), kx.ravel(), a_k.ravel()).reshape(xsm.shape)
    wq = np.minimum(sig_loc * np.sqrt(24.0 * _RHO_X * lf_x),
                    np.sqrt(8.0 * _RHO_X * lf_x / np.maximum(a_x * g2x, 1e-300)))
    dens = 1.0 / np.maximum(wq, 1.0)
    dmax = np.maximum(dens[:, 1:], dens[:, :-1])  # conservative on each sample interval
    cum = np.concatenate([np.zeros((n_seg, 1)), np.cumsum(dmax * np.diff(xsm, axis=1), axis=1)], axis=1)
    n_core = np.maximum(np.ceil(cum[:, -1]), 1.0).astype(np.int64)
    big = float(n_core.max()) + 2.0
    offs = np.arange(n_seg)[:, None] * big
    seg_c = np.repeat(np.arange(n_seg), n_core)
    j = np.arange(int(n_core.sum())) - np.repeat(np.cumsum(n_core) - n_core, n_core)
    core = np.floor(np.interp(j + seg_c * big, (cum + offs).ravel(), xsm.ravel()))
    core_end = core_hi + 1.0
    w_top = np.maximum(1.0, np.floor(np.minimum(1.0 / dens[:, -1], span)))
    # below the core: geometric (width ≤ θ·distance to the lowest peak); above: doubling widths
    d0 = np.maximum(pk_lo - core_lo, 1.0)
    n_low = np.where(core_lo > 0, np.ceil(np.log(np.maximum(pk_lo, 1.0) / d0) / math.log1p(_THETA)), 0).astype(np.int64) + 1
    n_up = np.where(core_end <= cf + 1.0, np.ceil(np.log2((cf + 2.0 - core_end) / w_top + 1.0)), 0).astype(np.int64) + 1
    seg_l = np.repeat(np.arange(n_seg), n_low)
    j = np.arange(int(n_low.sum())) - np.repeat(np.cumsum(n_low) - n_low, n_low)
    low = np.maximum(0.0, np.floor(pk_lo[seg_l] - d0[seg_l] * (1.0 + _THETA) ** (j + 1)))
    seg_u = np.repeat(np.arange(n_seg), n_up)
    j = np.arange(int(n_up.sum())) - np.repeat(np.cumsum(n_up) - n_up, n_up)
    up = core_end[seg_u] + w_top[seg_u] * (2.0**j - 1.0)
    seg_all = np.concatenate([seg_l, seg_c, seg_u, np.arange(n_seg)])
    x_all = np.concatenate([low, core, up, np.zeros(n_seg)])
    ok = x_all <= cf[seg_all] + 1.0
    key = np.sort(seg_all[ok] * (1 << 42) + x_all[ok].astype(np.int64))
    key = key[np.append(True, key[1:] != key[:-1])]
    seg = key >> 42
    a_x = (key & ((1 << 42) - 1)).astype(float)
    nb_seg = np.bincount(seg, minlength=n_seg)
    nxt = np.append(a_x[1:], 0.0)
    last = np.append(seg[1:] != seg[:-1], True)
    b_x = np.where(last, cf[seg] + 1.0, nxt - 1.0)
    w = b_x - a_x + 1.0
    cs = c[seg]
    ts = t[seg]
    cseg = cf[seg]
    # each bin [a, b] is split at m: [a, m] bounded from a, [m+1, b] from b (a log-concave "tent");
    # bins below the core are bounded from b alone (uphill end), bins above it from a alone
    m_x = a_x + np.floor((w - 1.0) / 2.0)
    m_x = np.where(b_x < core_lo[seg], a_x - 1.0, np.where(a_x > core_hi[seg], b_x, m_x))
    w_l = m_x - a_x + 1.0
    w_r = b_x - m_x
    two = w_r > 0
    lq_a = np.where(w_l > 0, _log_q_at(a_x, cs, ctx), -np.inf)
    lq_b = np.where(two, _log_q_at(b_x, cs, ctx), -np.inf)
    lr_a = np.where(w_l > 1.0, _log_q_ratio(np.minimum(a_x, cseg), cs, ctx), 0.0)
    lr_b = np.where(w_r > 1.0, _log_q_ratio(np.maximum(b_x - 1.0, 0.0), cs, ctx), 0.0)  # log Q(b)/Q(b−1)
    u_a = 2.0 * a_x - cseg - 1.0
    u_b = 2.0 * b_x - cseg - 1.0
    n1s = cseg + 1.0
    g_a = _gc(n1s, u_a, ctx)
    g_b = _gc(n1s, u_b, ctx)
    g_m = _gc(n1s, 2.0 * m_x - cseg - 1.0, ctx)
    g_m1 = _gc(n1s, np.minimum(2.0 * m_x + 1.0 - cseg, cseg + 1.0), ctx)
    tang_a = 4.0 * ts * np.exp(-_l1m_sq(n1s, u_a, ctx))  # dg/dx = 4t/(1 − t²u²)
    tang_b = 4.0 * ts * np.exp(-_l1m_sq(n1s, u_b, ctx))
    # g(x) ≤ g(a) + k_up·(x − a) on [a, m];  g(x) ≤ g(b) − k_dn·(b − x) on [m+1, b]
    k_up = np.maximum(tang_a, np.where(w_l > 1.0, (g_m - g_a) / np.maximum(w_l - 1.0, 1.0), -np.inf))
    k_dn = np.minimum(tang_b, np.where(w_r > 1.0, (g_b - g_m1) / np.maximum(w_r - 1.0, 1.0), np.inf))
    al = ch[:, None]
    # Q(x) ≤ Q(a)·r_a^{x−a} on [a, m];  Q(x) ≤ Q(b)·r_{b−1}^{−(b−x)} on [m+1, b]
    left = lq_a[None, :] + al * g_a[None, :] + _log_geom(lr_a[None, :] + al * k_up[None, :],
                                                         np.maximum(w_l, 1.0)[None, :])
    right = lq_b[None, :] + al * g_b[None, :] + _log_geom(-lr_b[None, :] - al * k_dn[None, :],
                                                          np.maximum(w_r, 1.0)[None, :])
    terms = np.logaddexp(left, right)
    gst = np.concatenate([[0], np.cumsum(nb_seg)[:-1]])
    mx = np.maximum.reduceat(terms, gst, axis=1)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(under="ignore", invalid="ignore", divide="ignore"):
        tot = np.add.reduceat(np.exp(terms - np.repeat(safe, nb_seg, axis=1)), gst, axis=1)
        lf = np.where(np.isfinite(mx), safe + np.log(tot), mx).T
    return _log_expm1(lf)


def _is_geo(ch: np.ndarray, ctx: _Ctx) -> bool:
    """Whether a chunk goes to the geometric-bin engine (log f ≳ 6 at the mean c for all its orders)."""
    return bool(np.all(_lf_est(ch, max(ctx.c0, 0.0), ctx, _log_cap_f(ch, ctx)) >= _LF_GEO))


def _eval_points(c: np.ndarray, chunks: list[np.ndarray], ctx: _Ctx, exact: bool) -> np.ndarray:
    """Upper bounds on log(f_α(c) − 1) for every c and every order, shape (c.size, Σ chunk sizes);
    evaluated in batches of c whose windows hold ≲ 2e6 cells (memory)."""
    alphas = np.concatenate(chunks)
    x_l, x_h = _windows(c, float(alphas.min()), float(alphas.max()), ctx, exact)
    cum = np.cumsum(x_h - x_l + 1)
    if c.size > 1 and cum[-1] > _CELL_BATCH:
        cut = int(np.clip(np.searchsorted(cum, _CELL_BATCH), 1, c.size - 1))
        return np.vstack([_eval_points(c[:cut], chunks, ctx, exact), _eval_points(c[cut:], chunks, ctx, exact)])
    return _eval_points_batch(c, chunks, ctx, exact)


def _eval_points_batch(c: np.ndarray, chunks: list[np.ndarray], ctx: _Ctx, exact: bool) -> np.ndarray:
    n_seg = c.size
    alphas = np.concatenate(chunks)
    out = np.empty((n_seg, alphas.size))
    starts = np.concatenate([[0], np.cumsum([ch.size for ch in chunks])])
    geo = [] if exact else [i for i, ch in enumerate(chunks) if _is_geo(ch, ctx)]
    for i in geo:
        out[:, starts[i]:starts[i + 1]] = _eval_geo(c, chunks[i], ctx)
    cell_chunks = [i for i in range(len(chunks)) if i not in geo]
    if not cell_chunks:
        return out
    a_cells = np.concatenate([chunks[i] for i in cell_chunks])
    x_l, x_h = _windows(c, float(a_cells.min()), float(a_cells.max()), ctx, exact)
    cells = _Cells(c, x_l, x_h, ctx, exact)
    for i in cell_chunks:
        ch = chunks[i]
        kk = ch.size
        sl = slice(starts[i], starts[i + 1])
        xl_k, xh_k = _windows(c, float(ch[0]), float(ch[-1]), ctx, exact) if len(cell_chunks) > 1 else (x_l, x_h)
        idx, e_lo, e_hi, nsel = cells.select(xl_k, xh_k)
        t_lo, t_hi, ltau = _tails(c, e_lo, e_hi, ch, ctx)
        lm, ubar, var, u_a, u_b, g_b, nb_seg = _chunk_bins(cells, idx, nsel, ch, ctx, exact)
        tb = np.repeat(ctx.s / (c.astype(float) + 1.0), nb_seg)
        n1b = np.repeat(c.astype(float) + 1.0, nb_seg)
        gbar = _gc(n1b, ubar, ctx)
        tay = None
        l_j_seg = np.full(n_seg, -np.inf)
        if var is not None and np.any(var > 0):
            with np.errstate(divide="ignore"):
                lhalfv = np.log(0.5 * var)
                l4t2 = np.log(4.0 * tb * tb)
                l_t0 = lhalfv + l4t2 - 2.0 * _l1m_sq(n1b, np.maximum(np.abs(u_a), np.abs(u_b)), ctx) + lm
                l_j = lhalfv + l4t2 - 3.0 * _l1m(n1b, u_a, ctx.w, ctx.s) + lm
            tay = (l_t0, tb * u_b, g_b)
            l_j_seg = _logsumexp_groups(l_j, np.concatenate([[0], np.cumsum(nb_seg)[:-1]]))
        res = np.empty((n_seg, kk))
        lf_est = _lf_est(ch, float(c.max()), ctx, _log_cap_f(ch, ctx))
        phi_rows = lf_est < 2e-3
        h_rows = np.flatnonzero(~phi_rows)
        if h_rows.size:
            # h-form: f ≤ Σ_b [m_b h(ū_b) + ½ m_b V_b sup h''] + tails
            lf = _lse(_main_sums(lm, gbar, nb_seg, ch[h_rows], False, tay), t_lo[:, h_rows], t_hi[:, h_rows])
            res[:, h_rows] = _log_expm1(lf)
            redo = np.any(lf < 1e-3, axis=0)  # too close to 1 for this form: use the φ-form
            phi_rows[h_rows[redo]] = True
        p_rows = np.flatnonzero(phi_rows)
        if p_rows.size:
            # φ-form: f − 1 ≤ Σ_b m_b φ(ū_b) + Taylor + (α−1)τ + tails − α·J
            a = ch[p_rows][None, :]
            with np.errstate(divide="ignore"):
                lt = np.log(a - 1.0) + ltau[:, None]
            s_plus = _lse(_main_sums(lm, gbar, nb_seg, ch[p_rows], True, tay), t_lo[:, p_rows], t_hi[:, p_rows], lt)
            s_minus = np.log(a) + l_j_seg[:, None]
            with np.errstate(invalid="ignore", over="ignore"):
                dif = s_minus - s_plus
                res[:, p_rows] = np.where(dif < -1e-3, s_plus + np.log1p(-np.exp(np.minimum(dif, -1e-3))), s_plus)
        out[:, sl] = res
    return out


# ----------------------------------------------------------------------------------------------
# C-grid: masses, slack, refinement
# ----------------------------------------------------------------------------------------------
class _CMass:
    """log P(C ∈ [a, b]) for C ~ Bin(N, q): exact (Loader's pmf, summed) inside c0 ± 40σ_C and
    bounded outside it by geometric series of pmf ratios (P(C ≤ k) ≤ pmf(k)/(1 − r_k),
    r_k = k(1−q)/((N−k+1)q) < 1, and symmetrically above)."""

    def __init__(self, ctx: _Ctx):
        self.ctx = ctx
        half = 40.0 * ctx.sig_c + 40.0
        self.lo = int(max(0, math.floor(ctx.c0 - half)))
        self.hi = int(min(ctx.N, math.ceil(ctx.c0 + half)))
        ks = np.arange(self.lo, self.hi + 1, dtype=float)
        self.lpmf = _log_binom_pmf(ks, float(ctx.N), ctx.q, ctx.q1)

    def _tail(self, k: np.ndarray, lower: bool) -> np.ndarray:
        ctx = self.ctx
        kf = k.astype(float)
        big_n = float(ctx.N)
        lp = _log_binom_pmf(kf, big_n, ctx.q, ctx.q1)
        with np.errstate(divide="ignore", invalid="ignore"):
            if lower:
                r = kf * ctx.q1 / ((big_n - kf + 1.0) * ctx.q)
            else:
                r = (big_n - kf) * ctx.q / ((kf + 1.0) * ctx.q1)
            return np.where(r < 1.0, lp - np.log1p(-np.where(r < 1.0, r, 0.0)), 0.0)

    def bins(self, pts: np.ndarray) -> np.ndarray:
        """log masses of [pts_j, pts_{j+1} − 1] and [pts_last, N]."""
        a = pts
        b = np.append(pts[1:] - 1, self.ctx.N)
        out = np.full(a.size, -np.inf)
        ia = np.clip(a, self.lo, self.hi + 1) - self.lo
        ib = np.clip(b, self.lo - 1, self.hi) - self.lo
        inner = ib >= ia
        if inner.any():
            st = ia[inner]
            en = ib[inner] + 1
            bnd = np.unique(np.concatenate([[0], st, en]))
            bnd = bnd[bnd < self.lpmf.size]
            lse = _logsumexp_groups(self.lpmf, bnd)
            out[inner] = lse[np.searchsorted(bnd, st)]
        m = a < self.lo
        if m.any():
            out[m] = np.logaddexp(out[m], self._tail(np.minimum(b[m], self.lo - 1), True))
        m = b > self.hi
        if m.any():
            out[m] = np.logaddexp(out[m], self._tail(np.maximum(a[m], self.hi + 1), False))
        return out


def _rho_c(ch: np.ndarray) -> np.ndarray:
    """C-grid tolerance per order: ρ_C·(α/64)^{1/4} above α = 64 (large orders matter only for
    tiny δ and their tilted C-distribution is wide), bounding the relative error of ε(α)."""
    return _RHO_C * np.maximum(1.0, ch / 64.0) ** 0.25


def _initial_points(ctx: _Ctx, exact: bool, rho: float = _RHO_C) -> np.ndarray:
    """Starting C-grid: 0 (the exact cap point), a core around the mean, coarser tails."""
    big_n, c0, sd = ctx.N, ctx.c0, ctx.sig_c
    pts = {0}
    if exact:
        lo = max(0, int(math.floor(c0 - 8.0 * sd)) - 2)
        hi = min(big_n, int(math.ceil(c0 + 9.5 * sd)) + 2)
        pts.update(range(lo, hi + 1))
    else:
        step = max(1.0, rho * c0)
        z = np.concatenate([np.arange(-2.5 * sd, 2.5 * sd + step, step), sd * np.array([-6, -5, -4, -3.25, 3.25, 4, 5, 6.5, 8, 9.5])])
        pts.update(int(v) for v in np.clip(np.round(c0 + z), 0, big_n))
    d = 7.0 * sd + 1.0
    while c0 - d > 0:
        pts.add(int(c0 - d))
        d *= 1.6
    return np.array(sorted(pts), dtype=np.int64)


def _chunk_orders(a: np.ndarray, ctx: _Ctx) -> list[np.ndarray]:
    """Consecutive orders in chunks (one bin layout and one C-grid each), spanning a factor ≤ 4;
    the orders for the geometric-bin engine apart, and for the cell engine the tilted peaks
    (u* ≈ 2αs) of a chunk lie within 3 standard deviations of u at the mean c."""
    span = 3.0 * math.sqrt(max(ctx.c0, 1.0) + 1.0) / (2.0 * max(ctx.s, 1e-300))
    big = _lf_est(a, max(ctx.c0, 0.0), ctx, _log_cap_f(a, ctx)) >= _LF_GEO
    chunks = []
    for part, lim in ((a[~big], span), (a[big], np.inf)):
        if part.size == 0:
            continue
        cur = [part[0]]
        for v in part[1:]:
            if v > _CHUNK_SPAN * cur[0] or v - cur[0] > lim or len(cur) >= 24:
                chunks.append(np.array(cur))
                cur = [v]
            else:
                cur.append(v)
        chunks.append(np.array(cur))
    return chunks


def _exact_work(ctx: _Ctx, alphas: np.ndarray) -> float:
    """Estimated (C-values × x-cells × orders) of an exact evaluation."""
    c0 = np.array([int(round(ctx.c0))])
    xl, xh = _windows(c0, float(alphas[0]), float(alphas[-1]), ctx, True)
    cells = float(xh[0] - xl[0] + 1)
    ncs = min(ctx.N + 1.0, 18.0 * ctx.sig_c + 20.0)
    return ncs * cells * alphas.size


def _log_tolerance(lf_tot: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """log of the allowed over-estimate ΔF of F = E[R^α] such that log F grows by ≤ ρ·log F:
    ΔF ≤ F·(1 − e^{−ρ·log F})."""
    big = np.logaddexp(0.0, lf_tot)  # log F
    with np.errstate(divide="ignore"):
        llf = np.where(lf_tot < -30.0, lf_tot, np.log(big))  # log log F
        tiny = rho * big < 1e-8
        return big + np.where(tiny, np.log(rho) + llf, np.log(-np.expm1(-rho * big)))


_PREPARED: OrderedDict[tuple[int, float], object] = OrderedDict()  # (n, ε0) → _clone_hist.Prepared
_PREPARED_MAX = 8
_PREPARED_LOCK = threading.Lock()
_HIST_DESIGN = np.union1d(np.asarray(DEFAULT_ORDERS, dtype=float), [1.01])


def _hist_engine(ctx: _Ctx, alphas: np.ndarray, force: bool = False):
    """The merged-histogram engine if the problem fits its cell budget (or ``force``), else None.

    Its grid and windows are always designed for the same orders, ``_HIST_DESIGN`` (the default
    grid and 1.01), whatever orders are asked for: a value then depends on (n, ε0, α) only — not on
    the other orders of the request, nor on what this process computed before — and the prepared
    histogram of an (n, ε0) serves every later request for it (a few are kept, least recently
    used first out). Orders outside the design's range go to the adaptive engine."""
    from ._clone_hist import HistPlan, Prepared

    if alphas[0] < _HIST_DESIGN[0] or alphas[-1] > _HIST_DESIGN[-1]:
        return None
    key = (ctx.N + 1, ctx.eps0)
    with _PREPARED_LOCK:
        prep = _PREPARED.get(key)
        if prep is not None:
            _PREPARED.move_to_end(key)
    if prep is None:
        plan = HistPlan(ctx, _HIST_DESIGN)
        if plan.cells > _HIST_CELL_BUDGET and not force:
            return None
        prep = Prepared(plan)
        with _PREPARED_LOCK:
            _PREPARED[key] = prep
            _PREPARED.move_to_end(key)
            while len(_PREPARED) > _PREPARED_MAX:
                _PREPARED.popitem(last=False)
    return (*prep.evaluate(alphas), prep)


def _adaptive_near(n: int, eps0: float, alphas: np.ndarray) -> np.ndarray:
    """The adaptive engine at ``alphas``, evaluated together with the two design orders on either
    side of each (its C-grid is refined per chunk of neighbouring orders, so the result depends
    on (n, ε0, α) only and is as tight as inside the full grid)."""
    d = _HIST_DESIGN
    j = np.searchsorted(d, alphas)
    near = d[np.clip(np.concatenate([j - 2, j - 1, j, j + 1]), 0, d.size - 1)]
    allo = np.union1d(alphas, near)
    vals = _log_fm1(n, eps0, allo, exact=False, engine="adaptive")
    return vals[np.searchsorted(allo, alphas)]


def _log_fm1(n: int, eps0: float, alphas: np.ndarray, exact: bool | None = None, engine: str = "auto") -> np.ndarray:
    """Upper bound on log(E_Q[R^α] − 1) for sorted unique orders (see the module docstring).

    Each chunk of orders has its own C-grid, refined by bisection until the slack estimate
    Σ_j P(bin j)·(f(c_j) − f(c_{j+1})) is within tolerance; points requested by several chunks
    in a round are evaluated together (the binomial cells are shared).
    """
    ctx = _Ctx(n, eps0)
    if ctx.N == 0:
        return _log_expm1(_log_cap_f(alphas, ctx))
    if exact is None:
        work = _exact_work(ctx, alphas) if ctx.N <= _EXACT_MAX_N else math.inf
        exact = work <= (_EXACT_BUDGET if alphas.size <= _EXACT_MAX_ORDERS else _EXACT_BUDGET_MANY)
        if not exact and engine != "adaptive" and _HIST_EPS0[0] <= eps0 <= _HIST_EPS0[1]:
            res = _hist_engine(ctx, alphas, force=engine == "hist")
            if res is not None:
                out, suspect, prep = res
                if suspect.any() and engine != "hist":
                    # the grid estimates missed for these orders: the smallest of three valid
                    # bounds — the value, the chord of its checked neighbours (convexity), the
                    # adaptive engine
                    sa = alphas[suspect]
                    out = out.copy()
                    out[suspect] = np.minimum.reduce([out[suspect], prep.chord_bound(sa), _adaptive_near(n, eps0, sa)])
                return out
    chunks = _chunk_orders(alphas, ctx)
    nch = len(chunks)
    geo = [not exact and _is_geo(ch, ctx) for ch in chunks]
    masses = _CMass(ctx)
    pts = [_initial_points(ctx, exact, float(_rho_c(ch)[0])) for ch in chunks]
    vals: list[dict[int, np.ndarray]] = [{} for _ in chunks]
    request: list[set[int]] = [set(p.tolist()) for p in pts]
    active = [True] * nch
    result: list[np.ndarray | None] = [None] * nch
    for _ in range(_MAX_ROUNDS):
        # evaluate the requested points, grouped by the set of chunks asking for them; when the
        # points are few and small (per-call overhead dominates) all of them for all those chunks
        by_sig: dict[tuple[int, ...], list[int]] = {}
        for i in range(nch):  # the geometric-bin chunks: each at its own points
            if geo[i] and request[i]:
                by_sig[(i,)] = list(request[i])
        cell = [i for i in range(nch) if not geo[i] and request[i]]
        allc = set().union(*[request[i] for i in cell]) if cell else set()
        if allc and sum(allc) + 2 * len(allc) <= 2.5e5:
            by_sig[tuple(cell)] = list(allc)
        else:
            for cval in allc:
                sig = tuple(i for i in cell if cval in request[i])
                by_sig.setdefault(sig, []).append(cval)
        for sig, cl in by_sig.items():
            carr = np.array(sorted(cl), dtype=np.int64)
            res = _eval_points(carr, [chunks[i] for i in sig], ctx, exact)
            col = 0
            for i in sig:
                k = chunks[i].size
                vals[i].update(zip(carr.tolist(), res[:, col:col + k]))
                col += k
        request = [set() for _ in chunks]
        for i, ch in enumerate(chunks):
            if not active[i]:
                continue
            p = pts[i]
            lfm1 = np.stack([vals[i][int(v)] for v in p])  # (points, orders)
            lmass = masses.bins(p)
            lf_tot = _logsumexp_cols(lmass[:, None] + lfm1)
            result[i] = lf_tot
            # monotonicity: f(c_{j+1}) ≤ f(c) ≤ f(c_j) on bin j, so the exact value lies in [L, U]
            width = np.append(np.diff(p), ctx.N - p[-1] + 1)
            nxt = np.vstack([lfm1[1:], np.full((1, lfm1.shape[1]), -np.inf)])
            nxt[width == 1] = lfm1[width == 1]
            lo_tot = _logsumexp_cols(lmass[:, None] + nxt)
            rho = _RHO_C_EXACT if exact else _rho_c(ch)
            l_up = np.logaddexp(0.0, lf_tot)
            gap = l_up - np.logaddexp(0.0, lo_tot)  # log(1+U) − log(1+L) ≥ the error of (α−1)ε
            bad = gap > rho * l_up
            if not bad.any():
                active[i] = False
                continue
            # which bins to cut, and into how many pieces: G = allowed gap (nats) per order;
            # λ_j = log f(c_j) − log f(c_{j+1}), w_j = share of bin j in the bound. Large gaps:
            # k_j = ⌈λ_j/(G/2)⌉ for bins with a non-negligible share; small gaps: k_j ∝ √(w_j·λ_j)
            # (minimises Σ w_j·λ_j/k_j for a given number of new points).
            big_g = np.broadcast_to(rho * l_up, bad.shape)[bad]  # allowed gap, nats
            g_w = big_g / -np.expm1(-l_up[bad])  # the same in units of Σ_j w_j·λ_j (small gaps)
            lam = np.maximum(lfm1[:, bad] - nxt[:, bad], 0.0)
            lam = np.where(np.isfinite(lam), lam, 1e3)
            lam[width == 1] = 0.0
            wsh = np.exp(lmass[:, None] + lfm1[:, bad] - lf_tot[None, bad])
            nb = max(1, int((width > 1).sum()))
            rel = wsh * -np.expm1(-lam) > -np.expm1(-big_g)[None, :] / (4.0 * nb)
            k_log = np.where(rel & (big_g[None, :] >= 1.0), np.ceil(lam / (0.5 * np.maximum(big_g, 1.0))[None, :]), 1.0)
            sq = np.sqrt(wsh * np.minimum(lam, 1.0))
            k_lin = np.ceil(sq * sq.sum(axis=0)[None, :] / (0.5 * np.minimum(g_w, 1.0))[None, :])
            kj = np.nan_to_num(np.maximum(k_log, k_lin), nan=1.0, posinf=64.0).max(axis=1)
            kj = np.minimum(np.minimum(kj, 64.0), width).astype(np.int64)
            split = np.flatnonzero((kj > 1) & (width > 1))
            newp = set()
            step = max(1, int(math.ceil(ctx.sig_c / 2.0)))
            for j in split:
                if j == p.size - 1:  # the upper tail [c_last, N]: extend geometrically above c_last
                    ext = int(p[j]) + step * (2 ** np.arange(min(int(kj[j]), 6)) )
                    newp.update(np.minimum(ext, ctx.N).tolist())
                else:
                    newp.update((int(p[j]) + int(width[j]) * np.arange(1, kj[j]) // kj[j]).tolist())
            newp -= set(vals[i])
            if not newp:
                active[i] = False
                continue
            pts[i] = np.union1d(p, np.array(sorted(newp), dtype=np.int64))
            request[i] = newp
        if not any(request):
            break
    return np.concatenate(result)


def _logsumexp_cols(m: np.ndarray) -> np.ndarray:
    mx = m.max(axis=0)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(under="ignore", invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(mx), safe + np.log(np.exp(m - safe).sum(axis=0)), mx)


def clone_rdp(n: int, epsilon0: float, orders: np.ndarray) -> np.ndarray:
    """Certified RDP upper bound of the shuffle model from the clone reduction.

    FMT21 §3 (general ε0-LDP randomizers, replace-one neighbours), evaluated as described in the
    module docstring: ε(α) = log E_Q[R^α]/(α−1) for every real α > 1, rounded outward, never
    below the exact value and never above the ε0-DP cap ĉ(α).

    Args:
        n: number of users (int, 1 ≤ n; validated by the caller). n = 1 gives the cap.
        epsilon0: local privacy level, 0 ≤ ε0 ≤ 50. ε0 = 0 gives zeros.
        orders: real orders α > 1, any shape (≤ 1e6).

    Returns:
        float64 array of the same shape; finite and ≥ 0 for n ≤ ``CLONES_MAX_N``, +inf above it
        (the caller then falls back to the thesis bounds).
    """
    a = np.asarray(orders, dtype=float)
    if epsilon0 == 0.0 or a.size == 0:
        return np.zeros(a.shape)
    if n > CLONES_MAX_N:
        return np.full(a.shape, np.inf)
    uniq, inv = np.unique(a.ravel(), return_inverse=True)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        lfm1 = _log_fm1(int(n), float(epsilon0), uniq)
        eps = np.logaddexp(0.0, lfm1) / (uniq - 1.0) * (1.0 + _REL_SAFETY)
        cap = clone_cap(epsilon0, uniq)
    # the cap is a valid bound on the same quantity (f_α(c) ≤ f_α(0)); it also replaces any value
    # a floating-point failure might have left non-finite
    eps = np.where(np.isnan(eps), cap, np.minimum(eps, cap))
    # ε0 > 0 makes ε(α) > 0; a value that underflowed (ε0 ≲ 1e-160) is rounded up, not down
    eps = np.maximum(eps, np.nextafter(0.0, 1.0))
    return eps[inv].reshape(a.shape)
