"""Cell windows per C-value and the certified bounds on what lies outside them (bounds.md §8).

For a fixed c only the cells x ∈ [x_lo, x_hi] are evaluated; the rest of f_α(c) − 1 is bounded
here, per c and order, by geometric series of binomial pmf ratios:

* below the window, Q-mass ≤ P(A ≤ x_lo − 1) ≤ b(k)/(1 − k/(c − k + 1)) (k = x_lo − 1) and
  R^α ≤ R(x_lo − 1)^α (R increases in x);
* above it, Q(x) ≤ b(x − 1) for x > c/2 + 1 and the tilted sequence z_y = log b(y) + α·g(u(y+1))
  is concave for y ∈ [x_hi, y_e] (checked by :func:`concave_above` when the window is chosen),
  so its increments are non-increasing there, z_y ≤ z0 + (y − x_hi)(z1 − z0), and
  Σ_{x_hi ≤ y ≤ y_e} e^{z_y} ≤ e^{z0}/(1 − e^{z1 − z0}) when z1 < z0, else the crude
  P(A ≥ x_hi)·e^{α·ε0}; beyond y_e (when y_e < c) Q(x) ≤ b(x − 1) and R ≤ e^{ε0} give
  Σ_{x ≥ y_e + 2} Q(x)·R(x)^α ≤ P(A ≥ y_e + 1)·e^{α·ε0}, the pmf tail again a geometric series.
  (The whole range y ≤ c is tried first; near the edge the sequence may stop being concave
  when ε0 is large, so the check is repeated on [x_hi, y_e] with y_e where the crude bound is
  e^{−(α_hi·ε0 + 60)} by Hoeffding, before the window is extended to c + 1.)

The window choice itself (Hoeffding below, the tilted peak of the largest order above) only
decides tightness; the bounds hold for any window.
"""

from __future__ import annotations

import math

import numpy as np

from ..._binomial import log_binom_pmf
from ..._numerics import log_expm1
from ..closed_form import l1m_sq, lf_est, log_cap_f, log_ratio, tilt
from ..types import Array, Ctx

LAMBDA = 38.0  # neglected contributions are ≲ e^{−38} relative (window choice only) …
LAMBDA_BINNED = 25.0  # … e^{−25} outside exact mode (the bounds there have a ≳ 1e-4 slack anyway)


def concave_above(c: Array, x_h: Array, a: float, ctx: Ctx, y_e: Array | None = None) -> Array:
    """Whether z_y = log b(y) + a·g(u(y+1)) is concave on y ∈ [x_h, y_e] (y > c/2; y_e = c when
    not given): Δ²z(y) ≤ 0 for every y in [x_h + 1, y_e − 1], checked on a grid covering [x_h, y_e].

    Δ²z ≤ 0 needs a·Δ²g ≤ |Δ² log b|. On an interval [y_i, y_{i+1}] (y_i ≥ c/2) of a grid that
    is geometric towards the edge: |Δ² log b(y)| = log(1 + 1/y) + log(1 + 1/(c−y)) ≥
    1/(y_i+1) + 1/(c−y_i+1) (increasing in y there), and a·Δ²g ≤ 4a·g''(u(y_{i+1}) + 2) with
    g''(u) = 4t³u/(1 − t²u²)² increasing for u ≥ 0 (capped at u = c+1)."""
    cf = c.astype(float)
    n1 = cf + 1.0
    xh = x_h.astype(float)
    ye = cf if y_e is None else np.asarray(y_e, dtype=float)
    v = np.concatenate([np.linspace(0.0, 0.9, 10), 1.0 - np.geomspace(0.1, 1e-12, 120)[1:]])
    ys = xh[:, None] + (ye - xh)[:, None] * v[None, :]
    y0, y1 = ys[:, :-1], ys[:, 1:]
    ub = np.minimum(2.0 * y1 + 3.0 - cf[:, None], n1[:, None])
    t = ctx.s / n1[:, None]
    g2 = 4.0 * t**3 * ub * np.exp(-2.0 * l1m_sq(n1[:, None], ub, ctx))
    inf_b = 1.0 / (y0 + 1.0) + 1.0 / np.maximum(cf[:, None] - y0 + 1.0, 1.0)
    ok: Array = np.all(4.0 * a * g2 <= inf_b, axis=1)
    return ok


def windows(c: Array, a_lo: float, a_hi: float, ctx: Ctx, exact: bool) -> tuple[Array, Array, Array]:
    """Cell window [xL, xH] per c (integers within [0, c+1]) for the orders in [a_lo, a_hi].

    Below: the neglected mass (≤ e^{−d²/(2σ_x²)}, Hoeffding) is ≲ e^{−38}·(f − 1)/α at a_lo.
    Above: past the tilted peak u* of a_hi by √(2·44) tilted standard deviations; the tilted
    tail beyond must be log-concave up to y_e (checked; module docstring) for its geometric
    bound, else the window runs to c + 1. ``exact``: points with c + 2 ≤ 64 cells take all of
    them. Returns x_lo, x_hi and y_e (= c where the whole upper range was checked).
    """
    cf = c.astype(float)
    sig_x = 0.5 * np.sqrt(cf + 1.0)
    lcap_lo = float(log_cap_f(np.array([a_lo]), ctx)[0])
    lfm1_lo = log_expm1(np.maximum(lf_est(a_lo, cf, ctx, lcap_lo), 1e-300))
    lam = LAMBDA if exact else LAMBDA_BINNED
    d_l = sig_x * np.sqrt(2.0 * (lam + np.maximum(0.0, math.log(a_lo) - lfm1_lo)))
    u, sig_tilt, edge = tilt(c, a_hi, ctx.s)
    d_h = np.maximum(d_l, 0.5 * (u + math.sqrt(2.0 * (lam + 6.0)) * sig_tilt) + 1.0)
    centre = 0.5 * (cf + 1.0)
    x_l = np.maximum(0, np.floor(centre - d_l)).astype(np.int64)
    x_h = np.minimum(c + 1, np.ceil(centre + d_h)).astype(np.int64)
    x_h = np.where(edge, c + 1, x_h)
    need = x_h < c + 1  # (windows that already reach c + 1 have no upper tail to check)
    conc = np.ones(c.size, dtype=bool)
    y_e = c.copy()
    if need.any():
        conc[need] = concave_above(c[need], x_h[need], a_hi, ctx)
        # where the whole range fails: up to y_e with P(A ≥ y_e + 1) ≤ e^{−(a_hi·ε0 + K)} (Hoeffding:
        # P(A ≥ c/2 + d) ≤ e^{−2d²/c}); the bound beyond y_e is then negligible (tightness only)
        retry = need & ~conc
        if retry.any():
            k_nats = a_hi * ctx.eps0 + LAMBDA + 22.0 + np.maximum(0.0, -lfm1_lo[retry])
            ye = np.ceil(0.5 * cf[retry] + np.sqrt(0.5 * cf[retry] * k_nats)).astype(np.int64)
            ok = (ye < c[retry]) & (ye > x_h[retry] + 2)
            if ok.any():
                idx = np.flatnonzero(retry)[ok]
                good = concave_above(c[idx], x_h[idx], a_hi, ctx, ye[ok])
                conc[idx[good]] = True
                y_e[idx[good]] = ye[ok][good]
    x_h = np.where(conc & (x_h > centre + 1.0), x_h, c + 1)
    if exact:
        small = c + 2 <= 64
        x_l = np.where(small, 0, x_l)
        x_h = np.where(small, c + 1, x_h)
    y_e = np.where(x_h < c + 1, y_e, c)
    return x_l, x_h, y_e


def _geo_tail(lpmf: Array, r: Array) -> Array:
    """log of pmf(k)/(1 − r) when the pmf ratio r < 1 (a geometric series), else 0 (mass ≤ 1)."""
    return np.where(r < 1.0, lpmf - np.log1p(-np.where(r < 1.0, r, 0.0)), 0.0)


def tails(
    c: Array, e_lo: Array, e_hi: Array, alphas: Array, ctx: Ctx, y_e: Array | None = None
) -> tuple[Array, Array, Array]:
    """Bounds on what lies outside the window [e_lo, e_hi] of each point, per order (module
    docstring; ``y_e`` from :func:`windows`, c when not given: the end of the checked concave
    range). Returns log T_lo, log T_hi (points × orders) and log τ (the neglected Q-mass)."""
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
    # the geometric series covers y ∈ [e_hi, y_e] (the checked concave range; it needs that range
    # non-empty, else the crude bound of the whole tail is used); beyond y_e: P(A ≥ y_e + 1)·e^{α·ε0}
    lcrude = np.full(n_seg, -np.inf)
    has_geo = np.ones(n_seg, dtype=bool)
    if y_e is not None:
        ye = np.asarray(y_e)
        has_geo = ye >= e_hi
        mc = m & has_geo & (ye < c)
        if mc.any():
            yc = ye[mc].astype(float) + 1.0
            lcrude[mc] = _geo_tail(log_binom_pmf(yc, cf[mc], 0.5, 0.5), (cf[mc] - yc) / (yc + 1.0))
    al = alphas[None, :]
    t_lo = ltau_lo[:, None] + al * g_lo[:, None]
    z0 = lz0[:, None] + al * g_h1[:, None]
    z1 = lz1[:, None] + al * g_h2[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        geo = (z1 < z0) & has_geo[:, None]
        t_hi_geo = z0 - np.log1p(-np.exp(np.where(geo, z1 - z0, -1.0)))
    t_hi = np.where(
        np.isfinite(ltau_hi)[:, None], np.where(geo, t_hi_geo, ltau_hi[:, None] + al * ctx.eps0), -np.inf
    )
    if np.isfinite(lcrude).any():  # (only where the geometric series is used: it stops at y_e)
        t_hi = np.where(geo, np.logaddexp(t_hi, lcrude[:, None] + al * ctx.eps0), t_hi)
    with np.errstate(divide="ignore"):
        ltau = np.logaddexp(ltau_lo, ltau_hi)
    return t_lo, t_hi, ltau
