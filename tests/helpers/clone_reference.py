"""Independent references for the clone bound (FMT21 §3; bounds.md §8), shared by the tests.

Written without the engines' code. The exact, untruncated float summation over every (C, A, ξ)
cell (no mixture over x, no binning, no window) is the package's own definition,
:mod:`accountant.clones.reference`; here, besides it: the same sum in mpmath, an all-positive χ²
form at α = 2, the exact binary-RR lower bound, the ε0-DP cap in mpmath, and, at large n, a fine-grid
quadrature over C of brute-force per-c sums.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
from scipy.special import logsumexp
from scipy.stats import binom

from accountant.clones.reference import ref_log_phi


def mp_clone(n: int, eps0: float, alpha: float, dps: int = 40) -> float:
    """The same sum in mpmath (small n only)."""
    with mp.workdps(dps):
        e0 = mp.mpf(eps0)
        big_e = mp.e**e0
        q = 1 / big_e
        s = mp.tanh(e0 / 2)
        al = mp.mpf(alpha)
        tot = mp.mpf(0)
        for c in range(n):
            pc = mp.binomial(n - 1, c) * q**c * (1 - q) ** (n - 1 - c)
            for a in range(c + 1):
                pa = mp.binomial(c, a) / mp.mpf(2) ** c
                for xi, pxi in ((-1, big_e / (big_e + 1)), (1, 1 / (big_e + 1))):
                    tu = s * (2 * a - c + xi) / (c + 1)
                    tot += pc * pa * pxi * ((1 + tu) / (1 - tu)) ** al
        return float(mp.log(tot) / (al - 1))


def chi2_clone(n: int, eps0: float) -> float:
    """ε(2) = log(1 + χ²(P‖Q)) with χ² = Σ (P−Q)²/Q, every term ≥ 0 (P−Q = s'(b(x−1) − b(x)))."""
    q = math.exp(-eps0)
    sp = math.tanh(eps0 / 2.0)
    tot = 0.0
    lpc = binom.logpmf(np.arange(n), n - 1, q)
    for c in range(n):
        k = np.arange(c + 1)
        b = np.exp(binom.logpmf(k, c, 0.5))
        bx = np.append(b, 0.0)  # b(x), x = 0..c+1
        bm = np.append(0.0, b)  # b(x−1)
        qx = (bx + q * bm) / (1.0 + q)
        d = sp * (bm - bx)
        m = qx > 0
        tot += math.exp(lpc[c]) * float(np.sum(d[m] ** 2 / qx[m]))
    return math.log1p(tot)


def rr_lower(n: int, eps0: float, alpha: float) -> float:
    """Exact RDP of binary randomized response shuffled (Thm 5.3.3), both directions.

    E_p[R] = 1 for the likelihood ratio R here, so log E_p[R^β] = log(1 + E_p[φ_β(R)]) with
    φ_β(r) = r^β − 1 − β(r − 1) ≥ 0 (β = α and β = 1 − α): a sum of non-negative terms, accurate
    also when (α−1)·ε is 1e-10 (the plain log Σ p·R^β loses ~1e-13 absolute to rounding)."""
    big_e = math.exp(eps0)
    k = np.arange(n + 1)
    lp = binom.logpmf(k, n, 1.0 / (big_e + 1.0))
    lr = np.log((k / n) * big_e + ((n - k) / n) / big_e)
    nz = lr != 0.0  # φ(1) = 0
    fwd = np.logaddexp(0.0, logsumexp(lp[nz] + ref_log_phi(alpha, lr[nz]))) if nz.any() else 0.0
    rev = np.logaddexp(0.0, logsumexp(lp[nz] + ref_log_phi(1.0 - alpha, lr[nz]))) if nz.any() else 0.0
    return max(fwd, rev) / (alpha - 1.0)


def mp_cap(eps0: float, alpha: float) -> float:
    with mp.workdps(40):
        e0, a = mp.mpf(eps0), mp.mpf(alpha)
        return float(mp.log((mp.e ** (a * e0) + mp.e ** ((1 - a) * e0)) / (mp.e**e0 + 1)) / (a - 1))


def fine_reference(n: int, eps0: float, alphas: np.ndarray) -> np.ndarray:
    """Near-exact E_Q[R^α] − 1 at large n: brute-force f(c) − 1 on 241 values of c over ±7σ_C
    (every cell x of a ±14σ_x window around the tilted peak), log-linear interpolation to every
    integer c, summed against the exact binomial pmf. An estimate (error ≲ 1e-6), not a bound."""
    q = math.exp(-eps0)
    s = math.tanh(eps0 / 2.0)
    mu, sd = (n - 1) * q, math.sqrt((n - 1) * q * (1 - q))
    cgrid = np.unique(np.round(np.linspace(mu - 7 * sd, mu + 7 * sd, 241)).astype(int))
    vals = []
    for c in cgrid:
        sx = 0.5 * math.sqrt(c)
        lo = max(0, int(c / 2 - 14 * sx))
        hi = min(c + 1, int(c / 2 + 14 * sx + alphas.max() * s + 1))
        x = np.arange(lo, hi + 1)
        lb = binom.logpmf(x, c, 0.5)
        lbm = binom.logpmf(x - 1, c, 0.5)
        lq = np.logaddexp(lb, math.log(q) + lbm) - math.log1p(q)
        t = s / (c + 1.0)
        u = 2.0 * x - c - 1.0
        lr = np.log1p(t * u) - np.log1p(-t * u)
        vals.append(logsumexp(lq[None, :] + ref_log_phi(alphas[:, None], lr[None, :]), axis=1))
    vals = np.array(vals)
    call = np.arange(cgrid[0], cgrid[-1] + 1)
    lpc = binom.logpmf(call, n - 1, q)
    lfm1 = np.array([logsumexp(lpc + np.interp(call, cgrid, vals[:, k])) for k in range(alphas.size)])
    return np.logaddexp(0.0, lfm1) / (alphas - 1.0)
