"""Independent high-precision (mpmath, 50 digits) evaluations of the bounds.md formulas.

Written from the formulas in bounds.md, not from the package code: term-by-term sums, no log-space
tricks, no vectorisation. Slow but exact enough to test the float64 implementation against.
"""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50


def _E(eps0):
    return mp.e ** mp.mpf(eps0)


def n_bar(n, eps0):
    return int(mp.floor(mp.mpf(n - 1) / (2 * _E(eps0)))) + 1


def u1(n, eps0, a: int):
    E = _E(eps0)
    nb = n_bar(n, eps0)
    s = 1 + mp.binomial(a, 2) * (E - 1) ** 2 / (nb * E)
    x = (E**2 - 1) ** 2 / (2 * E**2 * nb)
    for i in range(3, a + 1):
        s += mp.binomial(a, i) * i * mp.gamma(mp.mpf(i) / 2) * x ** (mp.mpf(i) / 2)
    s += mp.e ** (mp.mpf(eps0) * a - mp.mpf(n - 1) / (8 * E))
    return mp.log(s) / (a - 1)


def u1_simplified(n, eps0, a: int):
    E = _E(eps0)
    return mp.log(1 + mp.binomial(a, 2) * 4 * (E - 1) ** 2 / n) / (a - 1)


def u2(n, eps0, a):
    E = _E(eps0)
    a = mp.mpf(a)
    nb = n_bar(n, eps0)
    return mp.log(
        mp.e ** (a**2 * (E - 1) ** 2 / nb) + mp.e ** (mp.mpf(eps0) * a - mp.mpf(n - 1) / (8 * E))
    ) / (a - 1)


def cap(eps, a):
    eps = mp.mpf(eps)
    a = mp.mpf(a)
    return mp.log((mp.e ** (a * eps) + mp.e ** ((1 - a) * eps)) / (mp.e**eps + 1)) / (a - 1)


def interp(bound_at_int, a):
    """Remark 5.3.2 interpolation of an integer-order bound to real order a."""
    a = mp.mpf(a)
    lo, hi = int(mp.floor(a)), int(mp.ceil(a))
    if lo == hi:
        return bound_at_int(lo)
    w = hi - a
    blo = (lo - 1) * bound_at_int(lo) if lo >= 2 else 0
    bhi = (hi - 1) * bound_at_int(hi)
    return (w * blo + (1 - w) * bhi) / (a - 1)


def thesis_upper(n, eps0, a):
    def int_min(j):
        return min(u1(n, eps0, j), u2(n, eps0, j), cap(eps0, j))

    return min(interp(int_min, a), u2(n, eps0, a), cap(eps0, a))


def rr_lower(m, eps0, gamma, a):
    """Exact binomial sum, both directions, max."""
    E = _E(eps0)
    a = mp.mpf(a)
    gamma = mp.mpf(gamma)
    p = 1 / (E + 1)
    fwd = mp.mpf(0)
    rev = mp.mpf(0)
    for K in range(m + 1):
        w = mp.binomial(m, K) * p**K * (1 - p) ** (m - K)
        r = (1 - gamma) + gamma * (mp.mpf(K) / m * E + mp.mpf(m - K) / m / E)
        fwd += w * r**a
        rev += w * r ** (1 - a)
    return max(mp.log(fwd), mp.log(rev)) / (a - 1)


def lower_simplified(n, eps0, a: int):
    E = _E(eps0)
    return mp.log(1 + mp.binomial(a, 2) * (E - 1) ** 2 / (n * E)) / (a - 1)


def efm19(n, eps0, a):
    E = _E(eps0)
    return mp.mpf(a) * 2 * E**4 * (E - 1) ** 2 / n


def fmt23(n, eps0, a):
    E = _E(eps0)
    return mp.mpf(a) * 48 * (E - 1) ** 2 / (n * E)


def su(n, k, eps0, a: int):
    E = _E(eps0)
    g = mp.mpf(k) / n
    kb = n_bar(k, eps0)
    s = 1 + 4 * mp.binomial(a, 2) * g**2 * (E - 1) ** 2 / (kb * E)
    y = 2 * (E**2 - 1) ** 2 / (kb * E**2)
    for j in range(3, a + 1):
        s += mp.binomial(a, j) * g**j * j * mp.gamma(mp.mpf(j) / 2) * y ** (mp.mpf(j) / 2)
    sv = (E**2 - 1) / E
    ups = ((1 + g * sv) ** a - 1 - a * g * sv) * mp.e ** (-mp.mpf(k - 1) / (8 * E))
    return mp.log(s + ups) / (a - 1)


def sub_cap(n, k, eps0, a):
    E = _E(eps0)
    return cap(mp.log(1 + mp.mpf(k) / n * (E - 1)), a)


def conv_epsilon(orders, rdp, delta):
    best = None
    for a, r in zip(orders, rdp):
        a = mp.mpf(a)
        e = mp.mpf(r) + (mp.log(1 / mp.mpf(delta)) + (a - 1) * mp.log(1 - 1 / a) - mp.log(a)) / (a - 1)
        best = e if best is None or e < best else best
    return max(best, 0)
