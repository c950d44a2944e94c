"""The exact clone sum, cell by cell: the definition every engine of :mod:`accountant.clones` bounds.

FMT21 §3 (bounds.md §8): ε(α) = log E_Q[R^α]/(α−1), summed over every cell (C, A, ξ) with
C ~ Bin(n−1, e^{−ε0}), A | C ~ Bin(C, ½), ξ = −1 w.p. e^{ε0}/(e^{ε0}+1) else +1, and
R = (1 + t·u)/(1 − t·u), u = 2A − C + ξ, t = tanh(ε0/2)/(C+1). No grid, no window, no bin, no
bound: the sum itself, in floating point (cost ~n²/2 cells, small n only), written without the
engines' code. Every engine's result is ≥ this value (up to its rounding, ~1e-12 relative) and
every engine's tests compare with it (mpmath checks it in tests/accountant/test_clones.py).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp
from scipy.stats import binom

__all__ = ["exact_clone", "ref_log_phi"]


def ref_log_phi(alpha: ArrayLike, lr: ArrayLike) -> NDArray[np.float64]:
    """log φ_α(r) = log(r^α − 1 − α(r − 1)) for r = e^lr (relative error ≲ 1e-11 where it matters)."""
    a, x = np.asarray(alpha, dtype=float), np.asarray(lr, dtype=float)
    y = a * x
    with np.errstate(all="ignore"):
        mid = np.log(np.expm1(y) - a * np.expm1(x))
        hi = y + np.log1p(-np.exp(-y) * (1.0 + a * np.expm1(x)))
    return np.asarray(np.where(y > 1.0, hi, mid), dtype=float)


def exact_clone(n: int, eps0: float, alphas: ArrayLike, p: float | None = None) -> NDArray[np.float64]:
    """ε(α) = log E_Q[R^α]/(α−1) summed over every cell (C, A, ξ): C = 0..n−1, A = 0..C, ξ = ±1;
    C ~ Bin(n−1, p), p the clone probability (default e^{−ε0}; 2/(e^{ε0}+1) for randomized response).

    E_Q[R^α] − 1 = Σ P(C)·P(A|C)·P(ξ)·φ_α(R) with φ_α(r) = r^α − 1 − α(r − 1) ≥ 0 (E_Q[R] = 1),
    so the sum has non-negative terms only (no cancellation of 1 + tiny)."""
    al = np.atleast_1d(np.asarray(alphas, dtype=float))
    big_e, s = math.exp(eps0), math.tanh(eps0 / 2.0)
    log_pc = binom.logpmf(np.arange(n), n - 1, math.exp(-eps0) if p is None else p)  # C
    log_pxi = np.array([math.log(big_e / (big_e + 1.0)), -math.log(big_e + 1.0)])  # ξ = −1, +1
    xis = np.array([-1.0, 1.0])
    terms = []
    for c in range(n):
        a = np.arange(c + 1)  # A
        u = (2.0 * a - c)[:, None] + xis[None, :]
        log_w = (log_pc[c] + binom.logpmf(a, c, 0.5)[:, None] + log_pxi[None, :]).ravel()
        t = s / (c + 1.0)
        log_r = (np.log1p(t * u) - np.log1p(-t * u)).ravel()
        terms.append(log_w[None, :] + ref_log_phi(al[:, None], log_r[None, :]))
    log_fm1 = logsumexp(np.concatenate(terms, axis=1), axis=1)
    return np.asarray(np.logaddexp(0.0, log_fm1) / (al - 1.0), dtype=float)
