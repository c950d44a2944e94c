"""RDP bounds of the subsampled shuffle model (thesis §5.4, corrected in bounds.md §3).

k of the n users are sampled uniformly WITHOUT replacement (γ = k/n), each sampled user sends
one ε0-LDP report, the k reports are shuffled; neighbours differ by replacing one user's data.
Poisson sampling and client self-sampling are not covered by these theorems. Notation: E = e^{ε0},
k̄ = ⌊(k−1)/(2E)⌋ + 1, s = (E²−1)/E.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._binomial import rr_shuffle_lower
from ._numerics import LOG2, int_tables, log_comb, log_expm1, pure_dp_rdp, ragged_logsumexp, round_up
from ._validation import integer_orders
from .errors import BoundNotApplicable
from .shuffle import n_bar


def su(n: int, k: int, epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Theorem 5.4.1 (integer α ≥ 2, 2 ≤ k ≤ n):

    ε(α) ≤ 1/(α−1)·log(1 + 4C(α,2)γ²(E−1)²/(k̄E)
                       + Σ_{j=3..α} C(α,j)·γ^j·j·Γ(j/2)·(2(E²−1)²/(k̄E²))^{j/2} + Υ),
    Υ = ((1+γs)^α − 1 − αγs)·exp(−(k−1)/(8E)).
    Correction: the extracted Theorem 5.4.4 prints k where k̄ is meant (5.4.1 as printed is
    right); Υ is NOT halved (a third-party implementation halves it, which is not a bound).
    log Υ = logsumexp_{j=2..α}[log C(α,j) + j·log(γs)] − (k−1)/(8E).

    Both sums over j are log-concave in j, so each is taken over a window around its largest
    term with geometric bounds of the rest added (:func:`accountant._numerics.ragged_logsumexp`:
    never below the full sum, above it by at most a relative 2^-57). Proof: the first has the
    terms of Theorem 5.3.1's sum with √x replaced by γ·√y, whose ratio of consecutive terms is
    decreasing (:func:`accountant.shuffle.u1`); the second, C(α,j)·(γs)^j, has the ratio
    ((α−j)/(j+1))·γs, decreasing in j.
    """
    if k < 2:
        raise BoundNotApplicable(f"bound 'su' (Theorem 5.4.1) needs k >= 2 sampled users, got k = {k}")
    a = integer_orders(np.asarray(orders, dtype=float), "su")
    return round_up(_su_int(n, k, epsilon0, a))


def su_second_term(n: int, k: int, epsilon0: float, af: NDArray[np.float64]) -> NDArray[np.float64]:
    """log of Theorem 5.4.1's j = 2 term, 4C(α,2)γ²(E−1)²/(k̄E), at the orders ``af`` (ε0 > 0)."""
    kb = n_bar(k, epsilon0)  # same formula with k in place of n
    t2: NDArray[np.float64] = (
        np.log(4.0)
        + log_comb(af, 2.0)
        + 2.0 * np.log(k / n)
        + 2.0 * log_expm1(epsilon0)
        - np.log(kb)
        - epsilon0
    )
    return t2


def _su_int(n: int, k: int, epsilon0: float, a: NDArray[np.int64]) -> NDArray[np.float64]:
    af = np.asarray(a, dtype=float)
    if epsilon0 == 0.0:
        return np.zeros_like(af)
    gamma = k / n
    lg = np.log(gamma)
    kb = n_bar(k, epsilon0)  # same formula with k in place of n
    log_kb = np.log(kb)
    t2 = su_second_term(n, k, epsilon0, af)
    log_y: NDArray[np.float64] = LOG2 + 2.0 * log_expm1(2.0 * epsilon0) - log_kb - 2.0 * epsilon0
    log_gs: NDArray[np.float64] = lg + log_expm1(2.0 * epsilon0) - epsilon0
    slack: float = (k - 1) * np.exp(-epsilon0) / 8.0

    ai = np.asarray(a, dtype=np.int64)
    lfact: NDArray[np.float64]
    lgam_half: NDArray[np.float64]
    llog: NDArray[np.float64]
    lfact, lgam_half, llog = (t[: int(np.max(ai)) + 1] for t in int_tables(int(np.max(ai))))
    j = np.arange(lfact.size)
    with np.errstate(invalid="ignore"):
        main = np.where(j >= 3, -lfact + (lg + 0.5 * log_y) * j + llog + lgam_half, -np.inf)
    # the j-only part of both summands (log α! is added per order afterwards)
    ups = -lfact + log_gs * j - slack

    def term(jj: NDArray[np.int64], amj: NDArray[np.int64]) -> NDArray[np.float64]:
        return np.logaddexp(main[jj], ups[jj]) - lfact[amj]

    def term_main(jj: NDArray[np.int64], amj: NDArray[np.int64]) -> NDArray[np.float64]:
        return main[jj] - lfact[amj]

    def term_ups(jj: NDArray[np.int64], amj: NDArray[np.int64]) -> NDArray[np.float64]:
        return ups[jj] - lfact[amj]

    tsum = ragged_logsumexp(ai, 2, term, concave=((3, term_main), (2, term_ups))) + lfact[ai]
    log_s = np.logaddexp(t2, tsum)
    return np.logaddexp(0.0, log_s) / (af - 1.0)


def amplified_epsilon(n: int, k: int, epsilon0: float) -> float:
    """Lemma 2.1.1: sampling k of n without replacement (replace-one neighbours) turns an ε0-DP
    mechanism into an ε'-DP one with ε' = log(1 + γ(e^{ε0} − 1))."""
    return float(np.log1p((k / n) * np.expm1(epsilon0)))


def cap(n: int, k: int, epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Pure-DP cap of the subsampled shuffle: ĉ_{ε'}(α) with ε' = log(1 + γ(E−1)) (Lemma 2.1.1,
    bounds.md §3). Any real α > 1, any ε0-LDP randomizer."""
    return round_up(pure_dp_rdp(amplified_epsilon(n, k, epsilon0), orders))


def lower(n: int, k: int, epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Theorem 5.4.2 in exact form (bounds.md §3), any real α > 1: with M ~ Bin(k, 1/(E+1)) and
    r(M) = (1−γ) + γ((M/k)E + ((k−M)/k)/E), the larger of log E[r^α]/(α−1) and
    log E[r^{1−α}]/(α−1)."""
    return rr_shuffle_lower(k, epsilon0, k / n, np.asarray(orders, dtype=float))
