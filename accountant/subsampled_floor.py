"""When the default subsampled-shuffle curve need not compute its costly candidates.

The default curve of a ``subsampled_shuffle`` event (:func:`accountant.bounds.subsampled_upper_detail`)
is the order-wise minimum of four candidates: the pure-DP cap, the subsampled clone pair, the
k-user shuffle's own curve, and the interpolation of min(cap, SU, WBK19) at integer orders. Away
from γ = k/n ≈ 1 the last two sit orders of magnitude above the pair (10⁴–10⁸ at the subsampled
headline), yet they cost about as much as the pair at new orders (the k-user clone curve, WBK19
over it). :func:`dominated` bounds both from below cheaply; where those lower bounds exceed
min(cap, pair) at every order asked for, the minimum *is* min(cap, pair), bit for bit, and the
two candidates are not computed. The lower bounds:

* **The k-user shuffle's curve** is a valid upper bound of D_α(M(D)‖M(D′)) for every mechanism
  the event covers, shuffled binary randomized response at ε0 among them (every candidate of it
  holds for every ε0-LDP randomizer, or every discrete one), so at α ≥ 2 it is at least that
  instance's D_2 = log(1 + χ²) (D_α grows with α): neighbours differing in one user's bit (the
  other k − 1 bits 0), the output the count of ones, P(m) = a_m(1 − p) + a_{m−1}p and Q(m) =
  a_m·p + a_{m−1}(1 − p), a = Bin(k − 1, p), p = 1/(e^{ε0} + 1); χ² = Σ (P − Q)²/Q is a sum of
  non-negative terms, so its terms within ±12 standard deviations of a (at most 10⁵ of them)
  bound it from below.
* **WBK19** (Thm 9, as :func:`accountant.wbk19.wbk19_rdp` computes it) is at least its j = 2
  term, log(1 + γ²C(α,2)·min{4(e^{ε(2)} − 1), e^{ε(2)}·min{2, (e^{ε0} − 1)²}})/(α − 1), which grows
  with ε(2) — the inner curve at order 2, the k-user curve or ĉ_{ε0}(2), both ≥ the D_2 above.
* **SU** (Thm 5.4.1) is at least its j = 2 term, log(1 + 4C(α,2)γ²(E − 1)²/(k̄E))/(α − 1).
* the interpolation between integer orders (thesis Remark 5.3.2) and its outward rounding are
  non-decreasing in each integer value, in floating point too; the cap is computed exactly.

Each lower bound is lowered by a relative 10⁻⁹ against its own rounding, and the comparison is
strict, so a candidate skipped is strictly above the minimum at every order.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from . import subsampled as _ss
from ._binomial import log_binom_pmf
from ._numerics import interpolate_integer_bound, round_up

__all__ = ["dominated", "shuffled_rr_d2"]

_SLACK = 1.0 - 1e-9
_Z = 12.0
_MAX_HALF = 50_000.0  # at most 10⁵ terms of χ² (bounded memory at any k)


def shuffled_rr_d2(k: int, epsilon0: float) -> float:
    """A lower bound of D_2 of k users' shuffled binary randomized response at ε0, one user's
    bit changed (module docstring), lowered by a relative 10⁻⁹."""
    p = 1.0 / (math.exp(epsilon0) + 1.0) if epsilon0 < 700 else 0.0
    q1 = 1.0 - p
    big = k - 1
    half = min(_Z * math.sqrt(big * p * q1), _MAX_HALF)  # fewer terms: a smaller lower bound
    lo = max(0, math.floor(big * p - half))
    hi = min(big + 1, math.ceil(big * p + half) + 1)
    m = np.arange(lo, hi + 1, dtype=np.float64)
    a = np.exp(log_binom_pmf(m, float(big), p, q1))
    a_prev = np.exp(log_binom_pmf(m - 1.0, float(big), p, q1))
    q = a * p + a_prev * q1
    diff = math.tanh(epsilon0 / 2.0) * (a - a_prev)  # P − Q, 1 − 2p = tanh(ε0/2)
    with np.errstate(divide="ignore", invalid="ignore"):
        chi2 = float(np.sum(np.where(q > 0.0, diff * diff / q, 0.0)))
    return math.log1p(chi2) * _SLACK


def dominated(
    n: int, k: int, epsilon0: float, orders: NDArray[np.float64], output: str, floor: NDArray[np.float64]
) -> bool:
    """Whether the k-user shuffle's curve and the interpolated min(cap, SU, WBK19) are both
    strictly above ``floor`` (min(cap, subsampled clone pair)) at every order (module docstring);
    False where it cannot tell (an order below 2, an infinite floor)."""
    if epsilon0 <= 0.0 or not bool(np.all(np.isfinite(floor))) or float(orders.min()) < 2.0:
        return False
    d2 = shuffled_rr_d2(k, epsilon0)
    if not d2 > float(floor.max()):
        return False
    log_g2 = 2.0 * math.log(k / n)
    m2 = min(4.0 * math.expm1(d2), math.exp(d2) * min(2.0, math.expm1(min(epsilon0, 700.0)) ** 2))
    log_m2 = math.log(m2) if m2 > 0.0 else -math.inf

    def lower(ints: NDArray[np.int64]) -> NDArray[np.float64]:
        j = np.asarray(ints, dtype=np.float64)
        with np.errstate(divide="ignore"):
            lc2 = np.log(j * (j - 1.0) / 2.0)
            wbk = np.logaddexp(0.0, log_g2 + lc2 + log_m2) / (j - 1.0) * _SLACK
        if output == "discrete" and k >= 2:
            su = np.logaddexp(0.0, _ss.su_second_term(n, k, epsilon0, j)) / (j - 1.0) * _SLACK
        else:
            su = np.full(j.shape, np.inf)
        out: NDArray[np.float64] = np.minimum.reduce([_ss.cap(n, k, epsilon0, j), su, wbk])
        return out

    interp = round_up(interpolate_integer_bound(orders, lower))
    return bool(np.all(interp > floor))
