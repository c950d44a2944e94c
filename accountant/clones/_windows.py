"""Cell windows per C-value and the certified bounds on what lies outside them (bounds.md §8).

For a fixed c only the cells x ∈ [x_lo, x_hi] are evaluated; the rest of f_α(c) − 1 is bounded
here, per c and order, by geometric series of binomial pmf ratios:

* below the window, Q-mass ≤ P(A ≤ x_lo − 1) ≤ b(k)/(1 − k/(c − k + 1)) (k = x_lo − 1) and
  R^α ≤ R(x_lo − 1)^α (R increases in x);
* above it, Q(x) ≤ b(x − 1) for x > c/2 + 1 and the tilted sequence z_y = log b(y) + α·g(u(y+1))
  is concave for y ≥ x_hi (checked by :func:`concave_above` when the window is chosen), so
  Σ_{y ≥ x_hi} e^{z_y} ≤ e^{z0}/(1 − e^{z1 − z0}) when z1 < z0, else the crude P(A ≥ x_hi)·e^{α·ε0}.

The window choice itself (Hoeffding below, the tilted peak of the largest order above) only
decides tightness; the bounds hold for any window.
"""

from __future__ import annotations

import math

import numpy as np

from .._binomial import log_binom_pmf
from .._numerics import log_expm1
from ._kernels import Ctx, l1m_sq, lf_est, log_cap_f, log_ratio, tilt

LAMBDA = 38.0  # neglected contributions are ≲ e^{−38} relative (window choice only)


def concave_above(c: np.ndarray, x_h: np.ndarray, a: float, ctx: Ctx) -> np.ndarray:
    """Whether z_y = log b(y) + a·g(u(y+1)) is concave on y ∈ [x_h, c] (y > c/2).

    Δ²z ≤ 0 needs a·Δ²g ≤ |Δ² log b|. On an interval [y_i, y_{i+1}] (y_i ≥ c/2) of a grid that
    is geometric towards the edge: |Δ² log b(y)| = log(1 + 1/y) + log(1 + 1/(c−y)) ≥
    1/(y_i+1) + 1/(c−y_i+1) (increasing in y there), and a·Δ²g ≤ 4a·g''(u(y_{i+1}) + 2) with
    g''(u) = 4t³u/(1 − t²u²)² increasing for u ≥ 0 (capped at u = c+1)."""
    cf = c.astype(float)
    n1 = cf + 1.0
    xh = x_h.astype(float)
    v = np.concatenate([np.linspace(0.0, 0.9, 10), 1.0 - np.geomspace(0.1, 1e-12, 120)[1:]])
    ys = xh[:, None] + (cf - xh)[:, None] * v[None, :]
    y0, y1 = ys[:, :-1], ys[:, 1:]
    ub = np.minimum(2.0 * y1 + 3.0 - cf[:, None], n1[:, None])
    t = ctx.s / n1[:, None]
    g2 = 4.0 * t**3 * ub * np.exp(-2.0 * l1m_sq(n1[:, None], ub, ctx))
    inf_b = 1.0 / (y0 + 1.0) + 1.0 / np.maximum(cf[:, None] - y0 + 1.0, 1.0)
    return np.all(4.0 * a * g2 <= inf_b, axis=1)


def windows(c, a_lo: float, a_hi: float, ctx: Ctx, exact: bool):
    """Cell window [xL, xH] per c (integers within [0, c+1]) for the orders in [a_lo, a_hi].

    Below: the neglected mass (≤ e^{−d²/(2σ_x²)}, Hoeffding) is ≲ e^{−38}·(f − 1)/α at a_lo.
    Above: past the tilted peak u* of a_hi by √(2·44) tilted standard deviations; the tilted
    tail beyond must be log-concave (checked) for its geometric bound, else the window runs to
    c + 1. ``exact``: points with c + 2 ≤ 64 cells take all of them.
    """
    cf = c.astype(float)
    sig_x = 0.5 * np.sqrt(cf + 1.0)
    lcap_lo = float(log_cap_f(np.array([a_lo]), ctx)[0])
    lfm1_lo = log_expm1(np.maximum(lf_est(a_lo, cf, ctx, lcap_lo), 1e-300))
    d_l = sig_x * np.sqrt(2.0 * (LAMBDA + np.maximum(0.0, math.log(a_lo) - lfm1_lo)))
    u, sig_tilt, edge = tilt(c, a_hi, ctx.s)
    d_h = np.maximum(d_l, 0.5 * (u + math.sqrt(2.0 * (LAMBDA + 6.0)) * sig_tilt) + 1.0)
    centre = 0.5 * (cf + 1.0)
    x_l = np.maximum(0, np.floor(centre - d_l)).astype(np.int64)
    x_h = np.minimum(c + 1, np.ceil(centre + d_h)).astype(np.int64)
    x_h = np.where(edge, c + 1, x_h)
    need = x_h < c + 1  # (windows that already reach c + 1 have no upper tail to check)
    conc = np.ones(c.size, dtype=bool)
    if need.any():
        conc[need] = concave_above(c[need], x_h[need], a_hi, ctx)
    x_h = np.where(conc & (x_h > centre + 1.0), x_h, c + 1)
    if exact:
        small = c + 2 <= 64
        x_l = np.where(small, 0, x_l)
        x_h = np.where(small, c + 1, x_h)
    return x_l, x_h


def _geo_tail(lpmf: np.ndarray, r: np.ndarray) -> np.ndarray:
    """log of pmf(k)/(1 − r) when the pmf ratio r < 1 (a geometric series), else 0 (mass ≤ 1)."""
    return np.where(r < 1.0, lpmf - np.log1p(-np.where(r < 1.0, r, 0.0)), 0.0)


def tails(c: np.ndarray, e_lo: np.ndarray, e_hi: np.ndarray, alphas: np.ndarray, ctx: Ctx):
    """Bounds on what lies outside the window [e_lo, e_hi] of each point, per order (module
    docstring). Returns log T_lo, log T_hi (points × orders) and log τ (the neglected Q-mass)."""
    n_seg = c.size
    cf = c.astype(float)
    ltau_lo = np.full(n_seg, -np.inf)
    g_lo = np.zeros(n_seg)
    m = e_lo > 0
    if m.any():
        k0 = e_lo[m].astype(float) - 1.0
        ltau_lo[m] = _geo_tail(log_binom_pmf(k0, cf[m], 0.5, 0.5), k0 / (cf[m] - k0 + 1.0))
        g_lo[m] = log_ratio(cf[m] + 1.0, 2.0 * k0 - cf[m] - 1.0, ctx)
    ltau_hi = np.full(n_seg, -np.inf)
    lz0 = np.full(n_seg, -np.inf)
    lz1 = np.full(n_seg, -np.inf)
    g_h1 = np.zeros(n_seg)
    g_h2 = np.zeros(n_seg)
    m = e_hi < c + 1
    if m.any():
        y = e_hi[m].astype(float)
        cm = cf[m]
        lby = log_binom_pmf(y, cm, 0.5, 0.5)
        ltau_hi[m] = _geo_tail(lby, (cm - y) / (y + 1.0))
        lz0[m] = lby
        lz1[m] = log_binom_pmf(y + 1.0, cm, 0.5, 0.5)
        g_h1[m] = log_ratio(cm + 1.0, 2.0 * y + 1.0 - cm, ctx)
        g_h2[m] = log_ratio(cm + 1.0, np.minimum(2.0 * y + 3.0 - cm, cm + 1.0), ctx)
    al = alphas[None, :]
    t_lo = ltau_lo[:, None] + al * g_lo[:, None]
    z0 = lz0[:, None] + al * g_h1[:, None]
    z1 = lz1[:, None] + al * g_h2[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        geo = z1 < z0
        t_hi_geo = z0 - np.log1p(-np.exp(np.where(geo, z1 - z0, -1.0)))
    t_hi = np.where(
        np.isfinite(ltau_hi)[:, None], np.where(geo, t_hi_geo, ltau_hi[:, None] + al * ctx.eps0), -np.inf
    )
    with np.errstate(divide="ignore"):
        ltau = np.logaddexp(ltau_lo, ltau_hi)
    return t_lo, t_hi, ltau
