"""The exact output law of AboveThreshold (where the stream stops), by quadrature over the
threshold noise: the reference the audits of the ``above_threshold`` event and of the outlier
removal's AboveThreshold compare with."""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate
from scipy.stats import laplace


def at_law(q: np.ndarray, threshold: float, eps: float, sens: float) -> np.ndarray:
    """Law of where AboveThreshold stops: P(halt at query k), k = 1..T, then P(no halt). The
    threshold is perturbed once, Δ̂ = threshold − ρ with ρ ~ Lap(2·sens/ε); query t has fresh
    ν_t ~ Lap(4·sens/ε) and the stream halts at the first t with q_t + ν_t < Δ̂ (Asi–Liu's orientation
    of Dwork–Roth's AboveThreshold). Quadrature over ρ between the kinks of the integrand."""
    b0, b1 = 2 * sens / eps, 4 * sens / eps
    T = q.size

    def passes(rho):  # P(q_t + ν_t ≥ threshold − rho) per t
        return laplace.sf(threshold - rho - q, scale=b1)

    def piece(k):
        def f(rho):
            s = passes(rho)
            head = np.prod(s[:k])
            tail = 1.0 - s[k] if k < T else 1.0
            return laplace.pdf(rho, scale=b0) * head * tail

        return f

    kinks = sorted({0.0, *(threshold - q).tolist()})
    edges = [-np.inf, *kinks, np.inf]
    out = []
    for k in range(T + 1):
        f = piece(k)
        tot = math.fsum(
            integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-13, limit=400)[0]
            for lo, hi in zip(edges[:-1], edges[1:])
        )
        out.append(tot)
    law = np.array(out)
    assert abs(law.sum() - 1.0) < 1e-10
    return law / law.sum()
