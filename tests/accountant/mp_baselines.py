"""Independent high-precision references for accountant.baselines (mpmath, test-only).

Written from the sources' definitions, not from the package code: the clone pair enumerated cell
by cell from its definition (C, A, Δ), exact hockey-stick sums, the KOV15 Theorem 3.3 grid
formula, explicit binomial expectations for the privacy-blanket bounds.
"""

from __future__ import annotations

from collections import defaultdict

import mpmath as mp

mp.mp.dps = 40


def _binom_pmf(n, k, p):
    return mp.binomial(n, k) * p**k * (1 - p) ** (n - k)


def clone_pair_atoms(n: int, eps0) -> tuple[dict, dict]:
    """P and Q of FMT21 §3 as dicts over outcomes (x, y), by enumerating (C, A, Δ)."""
    E = mp.e ** mp.mpf(eps0)
    p = 1 / E
    alpha = E / (E + 1)
    P, Q = defaultdict(mp.mpf), defaultdict(mp.mpf)
    for c in range(n):
        wc = _binom_pmf(n - 1, c, p)
        for a in range(c + 1):
            wa = wc * _binom_pmf(c, a, mp.mpf(1) / 2)
            for d, wd in ((1, alpha), (0, 1 - alpha)):
                P[(a + d, c - a + 1 - d)] += wa * wd
                Q[(a + 1 - d, c - a + d)] += wa * wd
    return P, Q


def hockey(P: dict, Q: dict, eps) -> mp.mpf:
    """Σ_o (P(o) − e^ε Q(o))_+ over the union of supports."""
    ee = mp.e ** mp.mpf(eps)
    return mp.fsum(max(P.get(o, 0) - ee * Q.get(o, 0), 0) for o in set(P) | set(Q))


def rr_shuffle_pair(n: int, eps0) -> tuple[dict, dict]:
    """Shuffled binary randomized response: the count of ones on D = 0ⁿ and D' = 0ⁿ⁻¹1."""
    E = mp.e ** mp.mpf(eps0)
    q = 1 / (E + 1)  # a 0 reports 1 with probability q; a 1 reports 1 with probability 1 − q
    P = {k: _binom_pmf(n, k, q) for k in range(n + 1)}
    Q = {}
    for k in range(n + 1):
        v = mp.mpf(0)
        if k <= n - 1:
            v += _binom_pmf(n - 1, k, q) * q
        if k >= 1:
            v += _binom_pmf(n - 1, k - 1, q) * (1 - q)
        Q[k] = v
    return P, Q


def rr_shuffle_delta(n: int, eps0, eps) -> mp.mpf:
    """Exact δ(ε) of shuffled binary RR (the larger direction): a lower bound on any valid
    generic amplification bound."""
    P, Q = rr_shuffle_pair(n, eps0)
    return max(hockey(P, Q, eps), hockey(Q, P, eps))


def kov15_grid_delta(k: int, eps, delta, i: int) -> mp.mpf:
    """KOV15 Theorem 3.3: δ at ε_g = (k − 2i)ε, 1 − (1−δ)^k (1 − δ_i)."""
    eps, delta = mp.mpf(eps), mp.mpf(delta)
    ee = mp.e**eps
    di = (
        mp.fsum(mp.binomial(k, j) * (ee ** (k - j) - ee ** (k - 2 * i + j)) for j in range(i)) / (1 + ee) ** k
    )
    return 1 - (1 - delta) ** k * (1 - di)


def bbg19_delta(n: int, eps0, eps, kind: str) -> mp.mpf:
    """BBG19 generic bound with the binomial expectation summed term by term (M = 1..n)."""
    eps0, eps = mp.mpf(eps0), mp.mpf(eps)
    g = mp.e ** (-eps0)
    a = mp.e**eps - 1
    if kind == "hoeffding":
        b = (mp.e**eps + 1) * (mp.e**eps0 - mp.e ** (-eps0))

        def per_m(m):
            return b**2 / (4 * a) * mp.e ** (-2 * m * a**2 / b**2)
    else:
        bp = mp.e**eps0 - mp.e ** (eps - eps0)
        v = mp.e**eps0 * (mp.e ** (2 * eps) + 1) - 2 * mp.e ** (eps - 3 * eps0)
        u0 = a * bp / v
        h = (1 + u0) * mp.log(1 + u0) - u0
        kappa = v / bp**2 * h

        def per_m(m):
            return bp / mp.log(1 + u0) * mp.e ** (-m * kappa)

    s = mp.fsum(_binom_pmf(n, m, g) * per_m(m) for m in range(1, n + 1))
    return s / (g * n)
