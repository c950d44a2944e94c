"""Per-point bounds on f_α(c) − 1 for large log f, without cell data (bounds.md §8).

Q_c is log-concave in x (a convolution of Bin(c, ½) with a Bernoulli; Hoggar's theorem), so
on a bin [a, b], Q(x) ≤ Q(a)·r_a^{x−a} with r_a = Q(a+1)/Q(a). And g = log R is concave for
u ≤ 0 and convex for u ≥ 0, so g(x) ≤ g(a) + k·(x−a) on [a, b] with k the larger of the
tangent slope at a and the chord slope. Hence

    Σ_{x∈[a,b]} Q(x)·e^{α·g(x)} ≤ Q(a)·e^{α·g(a)}·Σ_{j<w} (r_a·e^{α·k})^j   (w = b − a + 1),

a closed form. Each bin is split at its middle m: [a, m] is bounded from a and [m+1, b] from b
(symmetrically, with the slope at b), a log-concave "tent" with relative slack ≈ w²/(24σ²).
The bins cover every cell 0..c+1 (no tail terms): σ-scale near the tilted peaks, growing
geometrically away from them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..._numerics import log_expm1, segment_logsumexp
from ..closed_form import l1m_sq, lf_est, log_cap_f, log_geom, log_q_at, log_q_ratio, log_ratio, tilt
from ..grid.windows import LAMBDA
from ..types import Array, Ctx
from .binned import RHO_X

THETA = 0.25  # outer bins below the peaks: width ≤ θ·(distance to the lowest peak)


class GeoBins(NamedTuple):
    """The bins [a, b] of every point (:func:`geo_bins`), in point order, and each point's core."""

    seg: Array  # point of each bin
    a: Array
    b: Array
    per_point: Array  # bins per point
    core_lo: Array
    core_hi: Array


class _Core(NamedTuple):
    """Per point: the core [lo, hi] around the chunk's tilted peaks (x, orders × points) and the
    lowest peak."""

    lo: Array
    hi: Array
    peak_lo: Array
    peaks: Array


def _core(c: Array, ch: Array, ctx: Ctx) -> _Core:
    """The tilted peaks of the chunk's orders and the core around them (±√(2(Λ+6)) tilted
    standard deviations, or √(c+1)·that below an edge peak), within 0..c+1."""
    cf = c.astype(float)
    centre = 0.5 * (cf + 1.0)
    kk = math.sqrt(2.0 * (LAMBDA + 6.0))
    u_all, sig_all, edge_all = tilt(c, ch, ctx.s)
    xs_all = np.where(edge_all, cf[None, :] + 1.0, centre[None, :] + 0.5 * u_all)  # (orders, segs)
    half_all = np.where(edge_all, kk * np.sqrt(cf + 1.0)[None, :], 0.5 * kk * sig_all)
    pk_lo = xs_all.min(axis=0)
    core_lo = (xs_all - half_all).min(axis=0)
    core_hi = (xs_all + half_all).max(axis=0)
    core_lo = np.clip(np.floor(core_lo), 0.0, cf + 1.0)
    core_hi = np.clip(np.ceil(core_hi), core_lo, cf + 1.0)
    pk_lo = np.clip(pk_lo, core_lo, cf + 1.0)
    return _Core(core_lo, core_hi, pk_lo, xs_all)


def _core_density(c: Array, ch: Array, ctx: Ctx, core: _Core) -> tuple[Array, Array]:
    """Samples x of each point's core and the density 1/w(x) of its bins there: width
    w(x) = min(σ_loc(x)·√(24ρ·lf), √(8ρ·lf/(α·g''(x)))) (slack ≲ ρ·lf each), with log f and the
    order whose tilted peak is at x interpolated across the chunk's peaks (denser near c+1)."""
    n_seg = c.size
    cf = c.astype(float)
    t = ctx.s / (cf + 1.0)
    lcap = log_cap_f(ch, ctx)
    lf_all = np.maximum(lf_est(ch[:, None], cf[None, :], ctx, lcap[:, None]), 1.0)
    pk_sorted = np.maximum.accumulate(core.peaks, axis=0)
    span = core.hi - core.lo + 1.0
    vv = np.concatenate([np.linspace(0.0, 1.0, 65), 1.0 - np.geomspace(0.25, 1e-9, 40)])
    vv = np.unique(np.clip(vv, 0.0, 1.0))
    xsm = core.lo[:, None] + span[:, None] * vv[None, :]
    xq = np.minimum(xsm, cf[:, None])
    sig_loc = 1.0 / np.sqrt(1.0 / (xq + 1.0) + 1.0 / (cf[:, None] - xq + 1.0))
    uq = 2.0 * xq - cf[:, None] - 1.0
    tu = np.minimum(np.abs(t[:, None] * uq), 0.999999)
    g2x = 16.0 * t[:, None] ** 3 * np.abs(uq) / (1.0 - tu**2) ** 2  # d²g/dx²
    big = float(cf.max()) * 4.0 + 16.0
    offs = np.arange(n_seg)[:, None] * big
    # per segment: keys = peak positions, with sentinels so that each segment clamps to its own ends
    kx = (
        np.concatenate(
            [
                np.full((n_seg, 1), -2.0),
                pk_sorted.T + np.arange(ch.size)[None, :] * 1e-9,
                np.full((n_seg, 1), float(cf.max()) + 3.0),
            ],
            axis=1,
        )
        + offs
    )
    lf_k = np.concatenate([lf_all.T[:, :1], lf_all.T, lf_all.T[:, -1:]], axis=1)
    a_k = np.concatenate([ch[:1], ch, ch[-1:]])[None, :] * np.ones((n_seg, 1))
    lf_x = np.interp((xsm + offs).ravel(), kx.ravel(), lf_k.ravel()).reshape(xsm.shape)
    a_x = np.interp((xsm + offs).ravel(), kx.ravel(), a_k.ravel()).reshape(xsm.shape)
    wq = np.minimum(
        sig_loc * np.sqrt(24.0 * RHO_X * lf_x), np.sqrt(8.0 * RHO_X * lf_x / np.maximum(a_x * g2x, 1e-300))
    )
    return xsm, 1.0 / np.maximum(wq, 1.0)


def _core_edges(xsm: Array, dens: Array) -> tuple[Array, Array]:
    """The left edges of the core bins (and the point of each) by inverting the cumulative
    density, conservative on each sample interval."""
    n_seg = xsm.shape[0]
    dmax = np.maximum(dens[:, 1:], dens[:, :-1])  # conservative on each sample interval
    cum = np.concatenate([np.zeros((n_seg, 1)), np.cumsum(dmax * np.diff(xsm, axis=1), axis=1)], axis=1)
    n_core = np.maximum(np.ceil(cum[:, -1]), 1.0).astype(np.int64)
    big = float(n_core.max()) + 2.0
    offs = np.arange(n_seg)[:, None] * big
    seg_c = np.repeat(np.arange(n_seg), n_core)
    j = np.arange(int(n_core.sum())) - np.repeat(np.cumsum(n_core) - n_core, n_core)
    return seg_c, np.floor(np.interp(j + seg_c * big, (cum + offs).ravel(), xsm.ravel()))


def _outer_edges(cf: Array, core: _Core, top_density: Array) -> tuple[Array, Array, Array, Array]:
    """The left edges of the bins outside the core (and the point of each): geometric below it
    (width ≤ θ·distance to the lowest peak), doubling widths above it."""
    n_seg = cf.size
    core_end = core.hi + 1.0
    w_top = np.maximum(1.0, np.floor(np.minimum(1.0 / top_density, core.hi - core.lo + 1.0)))
    d0 = np.maximum(core.peak_lo - core.lo, 1.0)
    n_low = (
        np.where(
            core.lo > 0, np.ceil(np.log(np.maximum(core.peak_lo, 1.0) / d0) / math.log1p(THETA)), 0
        ).astype(np.int64)
        + 1
    )
    n_up = (
        np.where(core_end <= cf + 1.0, np.ceil(np.log2((cf + 2.0 - core_end) / w_top + 1.0)), 0).astype(
            np.int64
        )
        + 1
    )
    seg_l = np.repeat(np.arange(n_seg), n_low)
    j = np.arange(int(n_low.sum())) - np.repeat(np.cumsum(n_low) - n_low, n_low)
    low = np.maximum(0.0, np.floor(core.peak_lo[seg_l] - d0[seg_l] * (1.0 + THETA) ** (j + 1)))
    seg_u = np.repeat(np.arange(n_seg), n_up)
    j = np.arange(int(n_up.sum())) - np.repeat(np.cumsum(n_up) - n_up, n_up)
    up = core_end[seg_u] + w_top[seg_u] * (2.0**j - 1.0)
    return seg_l, low, seg_u, up


def geo_bins(c: Array, ch: Array, ctx: Ctx) -> GeoBins:
    """Bin edges [a, b] of every point: σ-scale around the tilted peaks of the chunk's orders
    (width ≲ √(24ρ·log f)·σ_loc and √(8ρ·log f/(α·g'')), placed by inverting their cumulative
    density), geometric below the core and doubling above it, together covering 0..c+1."""
    n_seg = c.size
    cf = c.astype(float)
    core = _core(c, ch, ctx)
    xsm, dens = _core_density(c, ch, ctx, core)
    seg_c, x_core = _core_edges(xsm, dens)
    seg_l, low, seg_u, up = _outer_edges(cf, core, dens[:, -1])
    seg_all = np.concatenate([seg_l, seg_c, seg_u, np.arange(n_seg)])
    x_all = np.concatenate([low, x_core, up, np.zeros(n_seg)])
    ok = x_all <= cf[seg_all] + 1.0
    key = np.sort(seg_all[ok] * (1 << 42) + x_all[ok].astype(np.int64))
    key = key[np.append(True, key[1:] != key[:-1])]
    seg = key >> 42
    a_x = (key & ((1 << 42) - 1)).astype(float)
    nb_seg = np.bincount(seg, minlength=n_seg)
    nxt = np.append(a_x[1:], 0.0)
    last = np.append(seg[1:] != seg[:-1], True)
    b_x = np.where(last, cf[seg] + 1.0, nxt - 1.0)
    return GeoBins(seg, a_x, b_x, nb_seg, core.lo, core.hi)


def eval_geo(c: Array, ch: Array, ctx: Ctx) -> Array:
    """Upper bounds on log(f_α(c) − 1) for every point c and order of the chunk ``ch`` (module
    docstring), without cell data."""
    cf = c.astype(float)
    t = ctx.s / (cf + 1.0)
    seg, a_x, b_x, nb_seg, core_lo, core_hi = geo_bins(c, ch, ctx)
    w = b_x - a_x + 1.0
    cs = c[seg]
    ts = t[seg]
    cseg = cf[seg]
    # each bin [a, b] is split at m: [a, m] bounded from a, [m+1, b] from b (a log-concave "tent");
    # bins below the core are bounded from b alone (uphill end), bins above it from a alone
    m_x = a_x + np.floor((w - 1.0) / 2.0)
    m_x = np.where(b_x < core_lo[seg], a_x - 1.0, np.where(a_x > core_hi[seg], b_x, m_x))
    w_l = m_x - a_x + 1.0
    w_r = b_x - m_x
    two = w_r > 0
    lq_a = np.where(w_l > 0, log_q_at(a_x, cs, ctx), -np.inf)
    lq_b = np.where(two, log_q_at(b_x, cs, ctx), -np.inf)
    lr_a = np.where(w_l > 1.0, log_q_ratio(np.minimum(a_x, cseg), cs, ctx), 0.0)
    lr_b = np.where(w_r > 1.0, log_q_ratio(np.maximum(b_x - 1.0, 0.0), cs, ctx), 0.0)  # log Q(b)/Q(b−1)
    u_a = 2.0 * a_x - cseg - 1.0
    u_b = 2.0 * b_x - cseg - 1.0
    n1s = cseg + 1.0
    g_a = log_ratio(n1s, u_a, ctx)
    g_b = log_ratio(n1s, u_b, ctx)
    g_m = log_ratio(n1s, 2.0 * m_x - cseg - 1.0, ctx)
    g_m1 = log_ratio(n1s, np.minimum(2.0 * m_x + 1.0 - cseg, cseg + 1.0), ctx)
    tang_a = 4.0 * ts * np.exp(-l1m_sq(n1s, u_a, ctx))  # dg/dx = 4t/(1 − t²u²)
    tang_b = 4.0 * ts * np.exp(-l1m_sq(n1s, u_b, ctx))
    # g(x) ≤ g(a) + k_up·(x − a) on [a, m];  g(x) ≤ g(b) − k_dn·(b − x) on [m+1, b]
    k_up = np.maximum(tang_a, np.where(w_l > 1.0, (g_m - g_a) / np.maximum(w_l - 1.0, 1.0), -np.inf))
    k_dn = np.minimum(tang_b, np.where(w_r > 1.0, (g_b - g_m1) / np.maximum(w_r - 1.0, 1.0), np.inf))
    al = ch[:, None]
    # Q(x) ≤ Q(a)·r_a^{x−a} on [a, m];  Q(x) ≤ Q(b)·r_{b−1}^{−(b−x)} on [m+1, b]
    left = (
        lq_a[None, :]
        + al * g_a[None, :]
        + log_geom(lr_a[None, :] + al * k_up[None, :], np.maximum(w_l, 1.0)[None, :])
    )
    right = (
        lq_b[None, :]
        + al * g_b[None, :]
        + log_geom(-lr_b[None, :] - al * k_dn[None, :], np.maximum(w_r, 1.0)[None, :])
    )
    terms = np.logaddexp(left, right)
    gst = np.concatenate([[0], np.cumsum(nb_seg)[:-1]])
    out: Array = log_expm1(segment_logsumexp(terms, gst, axis=1).T)
    return out
