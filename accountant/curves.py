"""RDP curves of central mechanisms and of explicit curves (vectorised, rounded outward).

* Gaussian mechanism, σ = z·Δ₂: ε(α) = α/(2z²) — Mironov, "Rényi Differential Privacy", CSF 2017,
  Proposition 7 (exact).
* Laplace mechanism, b = s·Δ₁: ε(α) = 1/(α−1)·log( α/(2α−1)·e^{(α−1)/s} + (α−1)/(2α−1)·e^{−α/s} )
  — Mironov 2017, Proposition 6 (exact).
* An explicit curve known at some orders: valid upper bound at other orders through the convexity
  of (α−1)·D_α in α (van Erven & Harremoës 2014, Thm 11) and the monotonicity of D_α in α
  (ibid., Thm 3).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._numerics import round_up


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
