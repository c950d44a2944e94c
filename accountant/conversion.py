"""From RDP to (ε, δ): thesis Lemma 2.1.3 (bounds.md §4).

For a curve known at orders α_i (any real α > 1):

    ε(δ) = max(0, min_i [ε(α_i) + (log(1/δ) + (α_i−1)·log(1−1/α_i) − log α_i)/(α_i−1)])
    δ(ε) = min(1, min_i [exp((α_i−1)(ε(α_i)−ε))/(α_i−1)·(1−1/α_i)^{α_i}])

This is the conversion of Canonne–Kamath–Steinke 2020 (Prop. 12) used by dp_accounting, Opacus
and TF Privacy, including dp_accounting's two guards, so answers agree with
``dp_accounting.rdp.compute_epsilon`` / ``compute_delta`` to floating-point accuracy:
  * the KL guard: if δ > sqrt(1 − e^{−ε(α)}) then ε = 0 is already valid at that order;
    for δ the bound δ ≤ sqrt(1 − e^{−ε(α)}) is also minimised over;
  * orders α ≤ 1.01 are not used by the conversion (numerically unstable, never useful).
Orders where the curve is +inf (unknown) are skipped. Vectorised over orders.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import check_curve, check_delta, check_epsilon
from .errors import InvalidParameter

#: orders at or below this are not used by the conversion (its terms lose precision near α = 1)
MIN_CONVERSION_ORDER = 1.01
_MIN_CONVERSION_ORDER = MIN_CONVERSION_ORDER


def epsilon_vector(
    orders: ArrayLike, rdp: ArrayLike, delta: float | NDArray[np.float64]
) -> NDArray[np.float64]:
    """ε at each order (before the minimum); +inf where the order cannot be used. ``delta`` may be
    an array broadcasting against the orders (one row of answers per δ)."""
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        eps = r + np.log1p(-1.0 / a) - np.log(delta * a) / (a - 1.0)
        eps = np.where(a > _MIN_CONVERSION_ORDER, eps, np.inf)
        # δ² + expm1(−r) > 0, in log space so that δ² cannot underflow (δ < 1e-162)
        kl = 2.0 * np.log(delta) > np.log(-np.expm1(-r))
    eps = np.where(kl, 0.0, eps)
    return np.where(np.isfinite(r), eps, np.inf)


def log_delta_vector(orders: ArrayLike, rdp: ArrayLike, epsilon: float) -> NDArray[np.float64]:
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        kl = np.where(r == 0, -np.inf, 0.5 * np.log1p(-np.exp(-r)))
        rdp_bound = (a - 1.0) * (r - epsilon + np.log1p(-1.0 / a)) - np.log(a)
        out = np.where(a > _MIN_CONVERSION_ORDER, np.minimum(kl, rdp_bound), kl)
    return np.where(np.isfinite(r), out, np.inf)


def epsilon_from_rdp(orders: ArrayLike, rdp: ArrayLike, delta: float) -> tuple[float, float]:
    """(ε, optimal order) such that the curve is (ε, δ)-DP. Plain minimum over the given orders."""
    o, r = check_curve(orders, rdp)
    delta = check_delta(delta)
    eps = epsilon_vector(o, r, delta)
    i = int(np.argmin(eps))
    if not np.isfinite(eps[i]):
        raise InvalidParameter(
            "the RDP curve is unbounded at every usable order (orders must include some α > 1.01 "
            "with a finite value), so no finite ε exists"
        )
    return max(0.0, float(eps[i])), float(o[i])


def delta_from_rdp(orders: ArrayLike, rdp: ArrayLike, epsilon: float) -> tuple[float, float]:
    """(δ, optimal order) such that the curve is (ε, δ)-DP. Plain minimum over the given orders."""
    o, r = check_curve(orders, rdp)
    epsilon = check_epsilon(epsilon)
    ld = log_delta_vector(o, r, epsilon)
    i = int(np.argmin(ld))
    if not np.isfinite(ld[i]) and ld[i] > 0:
        return 1.0, float(o[i])
    return min(float(np.exp(ld[i])), 1.0), float(o[i])
