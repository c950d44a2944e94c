"""RDP bounds of the shuffle model (thesis ch. 5, corrected in bounds.md §1–2, §8).

``n`` users each send one report of an ε0-LDP local randomizer to a shuffler; neighbouring
datasets differ by replacing one user's data. Every function takes validated arguments
(``n`` int ≥ 1, 0 ≤ ε0, ``orders`` a float array of orders > 1) and returns a float array of the
same shape. Upper bounds are rounded outward. Notation: E = e^{ε0},
n̄ = ⌊(n−1)/(2E)⌋ + 1.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._binomial import rr_shuffle_lower
from ._numerics import (
    LOG2,
    int_tables,
    interpolate_integer_bound,
    log_comb,
    log_expm1,
    pure_dp_rdp,
    ragged_logsumexp,
    round_up,
)
from ._validation import integer_orders
from .errors import BoundNotApplicable


def n_bar(n: int, epsilon0: float) -> int:
    """n̄ = ⌊(n−1)/(2e^{ε0})⌋ + 1 (the floor is needed by the proof of Thm 5.3.1)."""
    return int(np.floor((n - 1) / (2.0 * np.exp(epsilon0)))) + 1


def _chernoff_log_term(n: int, epsilon0: float, orders: NDArray[np.float64]) -> NDArray[np.float64]:
    """log of exp(ε0·α − (n−1)/(8E)), the Chernoff slack shared by U1 and U2."""
    slack: float = (n - 1) * np.exp(-epsilon0) / 8.0
    return epsilon0 * orders - slack


def u1(n: int, epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Theorem 5.3.1 (Upper Bound 1), integer α ≥ 2 only.

    ε(α) ≤ 1/(α−1)·log(1 + C(α,2)(E−1)²/(n̄E) + Σ_{i=3..α} C(α,i)·i·Γ(i/2)·((E²−1)²/(2E²n̄))^{i/2}
                      + exp(ε0α − (n−1)/(8E))).
    Holds for any ε0-LDP randomizer with a discrete output range. Evaluated in log space,
    vectorised over all orders at once. Raises BoundNotApplicable at a non-integer order.

    The sum over i is log-concave in i, so it is taken over a window around its largest term
    with geometric bounds of the rest added (:func:`accountant._numerics.ragged_logsumexp`:
    never below the full sum, above it by at most a relative 2^-57; a few hundred terms per
    order instead of α). Proof: with t_i = C(α,i)·i·Γ(i/2)·x^{i/2}, the ratio
    r_i = t_{i+1}/t_i = ((α−i)/i)·(Γ((i+1)/2)/Γ(i/2))·√x has, over real 0 < i < α,
    d/di log r_i = −1/(α−i) − 1/i + ½(ψ((i+1)/2) − ψ(i/2)) ≤ −1/(α−i) < 0, because ψ is
    increasing, so ψ(z+½) − ψ(z) ≤ ψ(z+1) − ψ(z) = 1/z (z = i/2). Hence r_i is decreasing.
    """
    a = integer_orders(np.asarray(orders, dtype=float), "u1")
    return round_up(_u1_int(n, epsilon0, a))


def _u1_int(n: int, epsilon0: float, a: NDArray[np.int64]) -> NDArray[np.float64]:
    a = np.asarray(a, dtype=np.int64)
    af = a.astype(float)
    if epsilon0 == 0.0:
        # every term but the Chernoff slack vanishes
        return np.logaddexp(0.0, _chernoff_log_term(n, 0.0, af)) / (af - 1.0)
    nb = n_bar(n, epsilon0)
    log_nb = np.log(nb)
    t2: NDArray[np.float64] = log_comb(af, 2.0) + 2.0 * log_expm1(epsilon0) - log_nb - epsilon0
    log_x: NDArray[np.float64] = 2.0 * log_expm1(2.0 * epsilon0) - LOG2 - 2.0 * epsilon0 - log_nb

    lfact: NDArray[np.float64]
    lgam_half: NDArray[np.float64]
    llog: NDArray[np.float64]
    lfact, lgam_half, llog = (t[: int(a.max()) + 1] for t in int_tables(int(a.max())))
    j = np.arange(lfact.size)
    # the i-only part of log[C(α,i)·i·Γ(i/2)·x^{i/2}]; log α! is added per order afterwards
    with np.errstate(invalid="ignore"):
        c = -lfact + llog + lgam_half + (0.5 * log_x) * j

    def term(i: NDArray[np.int64], ami: NDArray[np.int64]) -> NDArray[np.float64]:
        return c[i] - lfact[ami]

    tsum = ragged_logsumexp(a, 3, term, concave=((3, term),)) + lfact[a]
    tl = _chernoff_log_term(n, epsilon0, af)
    log_s = np.logaddexp(np.logaddexp(t2, tsum), tl)
    return np.logaddexp(0.0, log_s) / (af - 1.0)


def u1_simplified(n: int, epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Corollary 5.3.1 (Simplified Upper Bound 1): ε(α) ≤ 1/(α−1)·log(1 + C(α,2)·4(E−1)²/n).

    Valid only for integer α ≥ 2 with α⁴·e^{5ε0} < n/9; outside that condition it is not a
    bound and BoundNotApplicable is raised.
    """
    o = np.asarray(orders, dtype=float)
    a = integer_orders(o, "u1_simplified").astype(float)
    cond = 4.0 * np.log(a) + 5.0 * epsilon0 < np.log(n / 9.0)
    if not np.all(cond):
        bad = a[~cond][0]
        raise BoundNotApplicable(
            f"bound 'u1_simplified' (Corollary 5.3.1) needs α⁴·e^(5·ε0) < n/9, which fails at α = {bad:g}, "
            f"ε0 = {epsilon0:g}, n = {n}; use a smaller order, a smaller ε0 or a larger n, or bound 'u1'"
        )
    if epsilon0 == 0.0:
        return np.zeros_like(a)
    log_t = log_comb(a, 2.0) + np.log(4.0) + 2.0 * log_expm1(epsilon0) - np.log(n)
    return round_up(np.logaddexp(0.0, log_t) / (a - 1.0))


def u2(n: int, epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Theorem 5.3.2 (Upper Bound 2), any real α > 1, with the correction of bounds.md §1.

    ε(α) ≤ 1/(α−1)·log(exp(α²(E−1)²/n̄) + exp(ε0α − (n−1)/(8E))).
    The extracted thesis text prints (ε0−1)² and 8ε0; the proof (§5.3.1.2, App. D.2.2) gives
    e^{ε0} in both places, which is what is evaluated here.
    """
    o = np.asarray(orders, dtype=float)
    nb = n_bar(n, epsilon0)
    quad = o**2 * np.expm1(epsilon0) ** 2 / nb
    with np.errstate(over="ignore"):
        out = np.logaddexp(quad, _chernoff_log_term(n, epsilon0, o)) / (o - 1.0)
    return round_up(out)


def cap(epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Pure-DP cap: the shuffled output is ε0-DP (post-processing of ε0-LDP reports), and an
    ε-DP mechanism is (α, ĉ_ε(α))-RDP with ĉ_ε(α) = 1/(α−1)·log((e^{αε}+e^{(1−α)ε})/(e^ε+1)),
    the RDP curve of binary randomized response (bounds.md §1). Any real α > 1; holds for
    continuous outputs too.
    """
    return round_up(pure_dp_rdp(epsilon0, orders))


def lower(n: int, epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Theorem 5.3.3 in exact form (bounds.md §2), any real α > 1.

    Binary RR (keep probability E/(E+1)) on D = (0,…,0) and D' = (0,…,0,1); with K ~ Bin(n, p),
    p = 1/(E+1), r(K) = (K/n)E + ((n−K)/n)/E, D_α(M(D')‖M(D)) = log E[r^α]/(α−1) and the reverse
    direction log E[r^{1−α}]/(α−1). The larger of the two is reported. It is the exact RDP of a
    real ε0-LDP mechanism, so no valid upper bound may lie below it.
    """
    return rr_shuffle_lower(n, epsilon0, 1.0, np.asarray(orders, dtype=float))


def lower_simplified(n: int, epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Corollary 5.3.2 (integer α ≥ 2): ε(α) ≥ 1/(α−1)·log(1 + C(α,2)(E−1)²/(nE))."""
    a = integer_orders(np.asarray(orders, dtype=float), "lower_simplified").astype(float)
    if epsilon0 == 0.0:
        return np.zeros_like(a)
    log_t: NDArray[np.float64] = log_comb(a, 2.0) + 2.0 * log_expm1(epsilon0) - np.log(n) - epsilon0
    return np.logaddexp(0.0, log_t) / (a - 1.0)


def efm19(n: int, epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Comparison curve (5.8) of Erlingsson et al. 2019: ε(α) = α·2E⁴(E−1)²/n. Not used as a bound."""
    o = np.asarray(orders, dtype=float)
    if epsilon0 == 0.0:
        return np.zeros_like(o)
    with np.errstate(over="ignore"):
        out: NDArray[np.float64] = o * np.exp(LOG2 + 4.0 * epsilon0 + 2.0 * log_expm1(epsilon0) - np.log(n))
    return out


def fmt23(n: int, epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Comparison curve, thesis Lemma 3.3.2 (Feldman–McMillan–Talwar 2023):
    ε(α) = α·48(E−1)²/(nE) for α ≤ n/(16·ε0·E).

    Its authors published an erratum (the general statement holds only for a restricted class
    of randomizers): it is never used as the service's bound, only shown as a labelled curve.
    """
    o = np.asarray(orders, dtype=float)
    if epsilon0 == 0.0:
        return np.zeros_like(o)
    limit = n / (16.0 * epsilon0 * np.exp(epsilon0))
    if np.any(o > limit):
        raise BoundNotApplicable(
            f"curve 'fmt23' (Lemma 3.3.2) is stated only for α ≤ n/(16·ε0·e^ε0) = {limit:.6g}; "
            f"got α = {o[o > limit][0]:g}"
        )
    out: NDArray[np.float64] = o * np.exp(np.log(48.0) + 2.0 * log_expm1(epsilon0) - np.log(n) - epsilon0)
    return out


def gir23_upper(n: int, epsilon0: float, orders: ArrayLike) -> NDArray[np.float64]:
    """min(U1, U2, cap) at integer orders, interpolated to real orders (Remark 5.3.2), then
    min with U2 and the cap at the order itself: the tightest bound from the thesis alone
    ([Gir23]: Girgis, PhD thesis, UCLA 2023; the bound named ``thesis``)."""
    o = np.asarray(orders, dtype=float)

    def int_min(ints: ArrayLike) -> NDArray[np.float64]:
        ints = np.asarray(ints, dtype=np.int64)
        out: NDArray[np.float64] = np.minimum.reduce(
            [_u1_int(n, epsilon0, ints), u2(n, epsilon0, ints), cap(epsilon0, ints)]
        )
        return out

    return round_up(
        np.minimum.reduce([interpolate_integer_bound(o, int_min), u2(n, epsilon0, o), cap(epsilon0, o)])
    )
