"""Exact binomial-moment sums E_K[r(K)^β] for the randomized-response lower bounds.

Used by the exact lower bounds (thesis Theorems 5.3.3 and 5.4.2 in closed form, bounds.md §2–3):
K ~ Bin(m, p) with p = 1/(E+1) and the likelihood ratio r(K) = (1−γ) + γ·((K/m)·E + ((m−K)/m)/E)
(γ = 1 for the plain shuffle model). Since E[r] = 1 we evaluate
E[r^β] − 1 = E[φ_β(r − 1)] with φ_β(x) = (1+x)^β − 1 − βx ≥ 0 (convex for β > 1 and β < 0),
a sum of non-negative terms, so tiny values keep full relative accuracy.

A lower bound may drop terms (it only gets smaller), so large m uses a window of K around the
mode and, when that window is still long, Jensen's inequality on bins (r^β is convex in K, so
Σ_bin pmf·φ(x) ≥ mass·φ(x̄)); both keep the result a valid lower bound.

Also here: :func:`log_binom_pmf`, the binomial log-pmf in Loader's saddle-point form (absolute
error ~1e-15 at any size), which the clone bound's engines anchor their cells on.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._lazy import gammaln, lazy
from ._numerics import log_phi, logsumexp

stats = lazy("scipy.stats")

DENSE_MAX = 50_001  # longest window of K summed term by term
JENSEN_BINS = 50_000  # bins used beyond that
_CELLS = 2_000_000  # (orders × points) evaluated per chunk


def _window(m: int, p: float, L: float) -> tuple[int, int]:
    """[lo, hi]: the K with logpmf(K) ≥ logpmf(mode) − L (logpmf is unimodal; found by bisection,
    exact for any tail shape, Gaussian-like or Poisson-like)."""
    if m + 1 <= DENSE_MAX:
        return 0, m
    mode = int(np.floor((m + 1) * p))
    mode = min(max(mode, 0), m)
    thr = stats.binom.logpmf(mode, m, p) - L

    def search(
        a: int, b: int, rising: bool
    ) -> int:  # first index in [a, b] on the rising side / last on the falling side
        while b - a > 1:
            mid = (a + b) // 2
            ok = stats.binom.logpmf(mid, m, p) >= thr
            if rising:
                a, b = (a, mid) if ok else (mid, b)
            else:
                a, b = (mid, b) if ok else (a, mid)
        return b if rising else a

    lo = 0 if stats.binom.logpmf(0, m, p) >= thr else search(0, mode, True)
    hi = m if stats.binom.logpmf(m, m, p) >= thr else search(mode, m, False)
    return lo, hi


def rr_shuffle_log_moments(
    m: int, epsilon0: float, gamma: float, orders: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(log E[r^α], log E[r^{1−α}]) for each order α (vectorised)."""
    orders = np.asarray(orders, dtype=np.float64)
    E = np.exp(epsilon0)
    p = 1.0 / (E + 1.0)
    slope = gamma * (E - 1.0 / E)  # r − 1 = slope·(K/m − p)
    max_beta = float(np.max(orders))
    # terms with log pmf below the mode by more than L are negligible even after tilting
    # |log r| ≤ max(log r(m), −log r(0)), so a term's tilt factor r^β is at most e^{|β|·that}
    log_r_span = max(np.log1p(gamma * np.expm1(epsilon0)), -np.log1p(-gamma * -np.expm1(-epsilon0)))
    L = 60.0 + max_beta * log_r_span + np.log(m + 1.0)
    lo, hi = _window(m, p, L)
    betas = np.stack([orders, 1.0 - orders])  # (2, n_orders)
    if hi - lo + 1 <= DENSE_MAX:
        K = np.arange(lo, hi + 1, dtype=np.float64)
        logw = stats.binom.logpmf(K, m, p)
        frac = K / m
    else:
        edges = np.linspace(lo, hi + 1, JENSEN_BINS + 1)
        edges = np.unique(np.floor(edges))
        a, b = edges[:-1], edges[1:] - 1  # bins [a, b] of integers
        # mass and first moment of each bin from CDFs: E[K 1{a≤K≤b}] = m p P(a−1 ≤ K' ≤ b−1), K'~Bin(m−1,p)
        mass = stats.binom.cdf(b, m, p) - stats.binom.cdf(a - 1, m, p)
        first = m * p * (stats.binom.cdf(b - 1, m - 1, p) - stats.binom.cdf(a - 2, m - 1, p))
        ok = mass > 0
        mass, first = mass[ok], first[ok]
        kbar = np.clip(first / mass, a[ok], b[ok])
        with np.errstate(divide="ignore"):
            logw = np.log(mass)
        frac = kbar / m
    x = slope * (frac - p)
    # log r: near r = 1 from x; where r is small (large ε0, γ ≈ 1) 1 + x cancels, so use
    # r = ((1−γ) + γ/E) + γ·(E − 1/E)·K/m, a sum of non-negative terms
    with np.errstate(divide="ignore"):
        lr = np.where(x < -0.5, np.log((1.0 - gamma) + gamma * np.exp(-epsilon0) + slope * frac), np.log1p(x))
    log_s = np.empty(betas.shape)
    step = max(1, _CELLS // max(x.size, 1))
    for j in range(0, orders.size, step):  # chunks of orders bound the memory
        lp = log_phi(betas[:, j : j + step, None], lr[None, None, :]) + logw[None, None, :]
        log_s[:, j : j + step] = logsumexp(lp, axis=-1)
    fwd, rev = np.logaddexp(0.0, log_s)  # log(1 + E[φ])
    return fwd, rev


def rr_shuffle_lower(m: int, epsilon0: float, gamma: float, orders: ArrayLike) -> NDArray[np.float64]:
    """max over the two directions of the exact RDP of shuffled binary RR on the extreme pair."""
    o = np.asarray(orders, dtype=np.float64)
    if epsilon0 == 0.0 or gamma == 0.0:
        return np.zeros_like(o)
    fwd, rev = rr_shuffle_log_moments(m, epsilon0, gamma, o)
    return np.maximum(np.maximum(fwd, rev), 0.0) / (o - 1.0)


_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _stirlerr(n: ArrayLike) -> NDArray[np.float64]:
    """log(n!) − log(√(2πn)(n/e)^n) for n ≥ 1 (Loader 2000); the Stirling series for n > 15."""
    na = np.asarray(n, dtype=np.float64)
    nn = na * na
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        series = (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * nn)) / nn) / nn) / nn) / na
    small = na <= 15.0
    if small.any():
        ns = na[small]
        series[small] = gammaln(ns + 1.0) - (ns + 0.5) * np.log(ns) + ns - _HALF_LOG_2PI
    return series


def _bd0(x: ArrayLike, m: ArrayLike) -> NDArray[np.float64]:
    """x·log(x/m) + m − x ≥ 0, accurate also when x ≈ m (Loader 2000: the series in v = (x−m)/(x+m))."""
    xa = np.asarray(x, dtype=np.float64)
    ma = np.asarray(m, dtype=np.float64)
    d = xa - ma
    v = d / (xa + ma)
    near = np.abs(v) < 0.1
    with np.errstate(divide="ignore", invalid="ignore"):
        far = np.where(xa > 0, xa * np.log(xa / ma), 0.0) + ma - xa
    if not near.any():
        return far
    vn = np.where(near, v, 0.0)
    s = d * vn
    ej = 2.0 * xa * vn
    v2 = vn * vn
    for j in range(1, 14):
        ej = ej * v2
        s = s + ej / (2 * j + 1)
    return np.where(near, s, far)


def log_binom_pmf(k: ArrayLike, big_n: ArrayLike, p: float, q1: float) -> NDArray[np.float64]:
    """log Bin(N, p) pmf at k (arrays broadcast), q1 = 1 − p given accurately.

    Loader, "Fast and accurate computation of binomial probabilities" (2000):
    log pmf = −stirlerr-terms − bd0(k, Np) − bd0(N−k, Nq) + ½·log(N/(2πk(N−k))), with the
    endpoints k = 0 and k = N in closed form (N·log(1 − p) as N·log1p(−p) for p < ½ and N·log q1
    above, q1 = 1 − p given accurately; N·log p) and −inf outside [0, N].
    """
    kb, nb = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(big_n, dtype=np.float64))
    inside = (kb > 0) & (kb < nb)
    kk = np.where(inside, kb, 1.0)
    nn = np.where(inside, nb, 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (
            _stirlerr(nn)
            - _stirlerr(kk)
            - _stirlerr(nn - kk)
            - _bd0(kk, nn * p)
            - _bd0(nn - kk, nn * q1)
            + 0.5 * np.log(nn / (kk * (nn - kk)))
            - _HALF_LOG_2PI
        )
    # log(1 − p): log1p(−p) for small p, log q1 for p next to 1 (1 − p is never formed there)
    lo_val = nb * (math.log1p(-p) if p < 0.5 else math.log(q1)) if q1 > 0 else np.where(nb == 0, 0.0, -np.inf)
    hi_val = nb * (math.log(p) if p > 0 else -np.inf)
    out = np.where(inside, out, -np.inf)
    out = np.where((kb == nb) & (nb > 0), hi_val, out)
    out = np.where((kb == 0) & (nb >= 0), lo_val, out)
    return out


def log_binom_pmf_range(
    k_lo: int, k_hi: int, big_n: int, p: float, q1: float, block: int = 64
) -> NDArray[np.float64]:
    """log Bin(N, p) pmf at every integer k_lo..k_hi: Loader's value (:func:`log_binom_pmf`) at the
    first k of each block of ``block`` integers, then the exact ratios
    pmf(k)/pmf(k−1) = (N − k + 1)·p/(k·(1 − p)) accumulated within the block (one log of the whole
    ratio each, absolute error ~1 ulp; the sums add ≲ 32 ulps of the partial sums: ≲ 2e-13
    absolute, i.e. relative on the pmf, where log pmf ≥ −40)."""
    ks = np.arange(k_lo, k_hi + 1, dtype=np.float64)
    if ks.size == 0:
        return ks
    nb = (ks.size + block - 1) // block
    flat = np.full(nb * block, ks[-1])
    flat[: ks.size] = ks
    kk = flat.reshape(nb, block)
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.log((big_n - kk + 1.0) * p / (kk * q1))
    lr[:, 0] = log_binom_pmf(kk[:, 0], float(big_n), p, q1)
    out = np.cumsum(lr, axis=1).ravel()[: ks.size]
    # k = 0 inside a block (only possible as its first element) and k = N are exact already;
    # a ratio at k = 0 never enters (it is always a block's first element)
    return out
