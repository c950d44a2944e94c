"""RDP curves of central mechanisms and of explicit curves (vectorised, rounded outward).

* Gaussian mechanism, σ = z·Δ₂: ε(α) = α/(2z²) — Mironov, "Rényi Differential Privacy", CSF 2017,
  Proposition 7 (exact).
* Laplace mechanism, b = s·Δ₁: ε(α) = 1/(α−1)·log( α/(2α−1)·e^{(α−1)/s} + (α−1)/(2α−1)·e^{−α/s} )
  — Mironov 2017, Proposition 6 (exact).
* ε-bounded-range mechanism (the exponential mechanism at ε): the exact worst case over every
  ε-BR pair, sup_p 1/(α−1)·log((1 − p + p·e^{αε}) / (1 − p + p·e^ε)^α) — Cesar & Rogers,
  "Bounding, Concentrating, and Truncating", 2021 (:func:`bounded_range_rdp` proves it).
* An explicit curve known at some orders: valid upper bound at other orders through the convexity
  of (α−1)·D_α in α (van Erven & Harremoës 2014, Thm 11) and the monotonicity of D_α in α
  (ibid., Thm 3).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._numerics import em1mx, round_up


def gaussian_rdp(noise_multiplier: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Exact RDP of the Gaussian mechanism with σ = noise_multiplier × ℓ2 sensitivity
    (Mironov 2017, Prop. 7): α/(2z²)."""
    return round_up(np.asarray(orders, dtype=float) / (2.0 * noise_multiplier**2))


def laplace_rdp(scale: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Exact RDP of the Laplace mechanism, b = scale·Δ₁ (Mironov 2017, Prop. 6), in log space.

    D_α is non-decreasing in α: orders within 1e-3 of 1 use the value at 1.001, away from the
    0/0 of the closed form (which would round below the exact value there)."""
    a = np.maximum(np.asarray(orders, dtype=float), 1.001)
    lam = 1.0 / scale
    t1 = np.log(a) - np.log(2 * a - 1) + (a - 1) * lam
    t2 = np.log(a - 1) - np.log(2 * a - 1) - a * lam
    return round_up(np.maximum(np.logaddexp(t1, t2), 0.0) / (a - 1))


# relative margin on the bounded-range supremum: its float evaluation cancels at most a factor
# (α−1)/α ≥ 1/1000 of ~1e-16 (the em1mx difference below), far inside 1e-10
_BR_MARGIN = 1.0 + 1e-10


def _log1p_minus_alpha_log1p(u: NDArray[np.float64], a: NDArray[np.float64]) -> NDArray[np.float64]:
    """h(u) = log1p(α·u) − α·log1p(u) ≤ 0 for u ≥ 0 without cancellation: the power series
    Σ_{k≥2} (−1)^{k+1}(α^k − α)u^k/k where α·u ≤ 0.05 (20 terms: remainder below 1e-25 relative),
    the closed form elsewhere (where it loses at most a few ulps)."""
    small = a * u <= 0.05
    out: NDArray[np.float64] = np.log1p(a * u) - a * np.log1p(u)
    if np.any(small):
        us, as_ = u[small], a[small]
        tot = np.zeros(us.shape)
        ak = as_.copy()
        uk = us.copy()
        for k in range(2, 22):
            ak = ak * as_
            uk = uk * us
            tot += (-1.0) ** (k + 1) * (ak - as_) * uk / k
        out[small] = tot
    return out


def bounded_range_rdp(epsilon: float, orders: ArrayLike) -> NDArray[np.float64]:
    """Exact worst-case RDP of an ε-bounded-range (ε-BR) mechanism — the exponential mechanism
    sampling ∝ exp(ε·u(x, y)/(2Δu)) is ε-BR (Durfee & Rogers 2019; Cesar & Rogers 2021, who give
    this supremum and its zCDP consequence ε²/8).

    ε-BR: for neighbours x, x' the privacy loss L(y) = log P_x(y)/P_x'(y) takes values in an
    interval [t, t + ε] for some t. Proof of the bound: under Q = P_x', U = e^L has E_Q[U] = 1 and
    values in [e^t, e^{t+ε}]; u ↦ u^α is convex, so E_Q[U^α] is at most its value for the two-point
    law on the interval's ends with the same mean (the chord lies above a convex function). With
    mass p on the upper end the mean condition gives e^t = 1/(1 + p(e^ε − 1)), so

        D_α(P_x ‖ P_x') ≤ sup_{p ∈ [0, 1]} g(p)/(α − 1),  g(p) = log(1 + p·A) − α·log(1 + p·B),

    A = e^{αε} − 1, B = e^ε − 1 (attained by a two-point pair, so the bound is tight over the
    class). g(0) = g(1) = 0 and g'(p) = 0 at the single point p* = (A − αB)/((α − 1)·A·B), its
    maximiser. It holds in both directions (the reverse loss −L also has range ε).

    Numerics: for αε ≤ 50, A − αB = em1mx(αε) − α·em1mx(ε) (no cancellation of the linear terms)
    and g = log1p(p(A − αB)/(1 + αpB)) + h(pB) with h of :func:`_log1p_minus_alpha_log1p`
    (the two parts cancel by at most a factor 1 − p); above, log space. The value is raised by a
    relative 1e-10 (covering the evaluation error; checked against mpmath's supremum in the tests)
    and rounded up."""
    # D_α is non-decreasing in α, so orders within 1e-6 of 1 take the value at 1 + 1e-6 (valid; the
    # closed form divides by α − 1 and loses every digit there: at α = 1 + 2⁻⁵² it returned 0)
    a = np.maximum(np.asarray(orders, dtype=float), 1.0 + 1e-6)
    eps = float(epsilon)
    if eps == 0.0:
        return np.zeros(a.shape)
    if not np.isfinite(eps):
        return np.full(a.shape, np.inf)
    ae = a * eps
    out = np.empty(a.shape)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        lo = ae <= 50.0
        if np.any(lo):
            al, ael = a[lo], ae[lo]
            A = np.expm1(ael)
            B = math.expm1(eps)
            N = em1mx(ael) - al * float(em1mx(np.array([eps]))[0])
            p = np.clip(N / ((al - 1.0) * A * B), 1e-300, 1.0)
            g = np.log1p(p * N / (1.0 + al * p * B)) + _log1p_minus_alpha_log1p(p * B, al)
            out[lo] = np.maximum(g, 0.0) / (al - 1.0)
        hi = ~lo
        if np.any(hi):
            ah, aeh = a[hi], ae[hi]
            lb = math.log(math.expm1(eps))
            log_ratio = np.log(ah) + lb - aeh - np.log1p(-np.exp(-aeh))  # log(αB/A)
            p = np.clip(-np.expm1(log_ratio) / ((ah - 1.0) * math.expm1(eps)), 1e-300, 1.0 - 1e-16)
            lp, lq = np.log(p), np.log1p(-p)
            g = np.logaddexp(lq, lp + aeh) - ah * np.logaddexp(lq, lp + eps)
            out[hi] = np.maximum(g, 0.0) / (ah - 1.0)
    return round_up(out * _BR_MARGIN)


def _sorted_points(
    known_orders: ArrayLike, known_rdp: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    ko = np.asarray(known_orders, dtype=float)
    kr = np.asarray(known_rdp, dtype=float)
    srt = np.lexsort((kr, ko))
    ko, kr = ko[srt], kr[srt]
    keep = np.concatenate([[True], np.diff(ko) > 0])  # duplicate orders: keep the smallest value
    return ko[keep], kr[keep]


def curve_from_points(
    known_orders: ArrayLike, known_rdp: ArrayLike, orders: ArrayLike
) -> NDArray[np.float64]:
    """Valid upper bound at ``orders`` from a curve known at ``known_orders``: convex
    interpolation of (α−1)ε(α) and monotonicity of ε(α) between known orders, ε(α_min) below the
    smallest, +inf above the largest (unknown there)."""
    ko, kr = _sorted_points(known_orders, known_rdp)
    a = np.asarray(orders, dtype=float)
    out = np.full(a.shape, np.inf)
    below = a <= ko[0]
    out[below] = kr[0]
    inside = (a > ko[0]) & (a <= ko[-1])
    if np.any(inside):
        ai = a[inside]
        j = np.searchsorted(ko, ai, side="left")  # ko[j-1] < ai <= ko[j]
        lo_o, hi_o, lo_r, hi_r = ko[j - 1], ko[j], kr[j - 1], kr[j]
        w = (hi_o - ai) / (hi_o - lo_o)
        convex = (w * (lo_o - 1) * lo_r + (1 - w) * (hi_o - 1) * hi_r) / (ai - 1)
        out[inside] = np.minimum(convex, hi_r)
    return out


def curve_point_sources(known_orders: ArrayLike, orders: ArrayLike) -> tuple[list[str], list[str]]:
    """For :func:`curve_from_points`: how each value was obtained, and a note when some orders lie
    above the largest known one."""
    ko = np.unique(np.asarray(known_orders, dtype=float))
    a = np.asarray(orders, dtype=float)
    labels = np.array(
        [
            "rdp_curve (given)",
            "rdp_curve (monotone extension below the smallest given order)",
            "rdp_curve (convex interpolation)",
            "unbounded (above the largest given order; not used)",
        ]
    )
    kind = np.where(np.isin(a, ko), 0, np.where(a < ko[0], 1, np.where(a <= ko[-1], 2, 3)))
    notes = []
    if a.size and a.max() > ko[-1]:
        notes.append(
            f"the rdp_curve event is unknown above its largest order {ko[-1]:g}; the value there is "
            "null (unbounded) and those orders are never used for conversion"
        )
    return labels[kind].tolist(), notes
