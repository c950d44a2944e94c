"""The C-grid of the histogram engine (step 1 of :mod:`accountant.clones.histogram`; bounds.md §8).

Points 0 = c_0 < c_1 < … with bins [c_j, c_{j+1}) (the last to N); the engine bounds each bin by
f_α(c_j) times its exact mass (f_α is non-increasing in c). Where the points go is decided here
from cheap estimates of each order's tilted C-distribution; the bound holds for any grid, only
its slack depends on these choices:

* samples dense around c0 and geometric towards 0 and N, refined around a tilted C-peak that
  falls between sparse samples (:func:`_refine_far_peaks`);
* point density ∝ √(π·|d log f/dc|) (optimal for the left-end rule), and log f changing by at
  most ~max(1, allowed slack) across a bin where an order's tilted mass, or its left-end bound
  (mass near the bin's right end × f at its left end), is not negligible — by up to half the
  distance (in nats, less 60) below an order's peak far out in its tails, where the samples are
  first subdivided (:func:`_subdivide`) so that this distance is resolved;
* geometric ladders below the lowest relevant point and across wide gaps between clusters of
  relevant points (:func:`_gap_ladders`).
"""

from __future__ import annotations

import math

import numpy as np

from ..._binomial import log_binom_pmf
from ..._numerics import log_expm1
from ..closed_form import log_cap_f, log_q_at, log_ratio, tilt
from ..types import Array, Ctx

#: Wide sample intervals that matter through their left-end bound get samples every this many
#: nats of log P(C = c) (:func:`_subdivide`).
_SUB_NATS = 16.0
#: Intervals whose tilted terms lie D > this many nats below an order's peak may let log f fall
#: by (D − this)/2 across a bin: such a bin stays ≥ 30 + D/2 ≥ 60 nats below the peak.
_FAR_MARGIN = 60.0
_EST_REL = 0.1  # relative error allowed for the estimates of log F


def _estimates(ctx: Ctx, alphas: Array, cs: Array) -> Array:
    """Rough log(f_α(c) − 1) on samples cs (orders × samples): Laplace at the tilted peak, or the
    Gaussian small-f form, whichever is larger. Design only."""
    s = ctx.s
    u, sig, edge = tilt(cs, alphas, s)
    cf = cs.astype(float)[None, :]
    x = np.where(edge, cf + 1.0, np.clip(np.round(0.5 * (cf + 1.0 + u)), 0, cf + 1.0))
    cb = np.broadcast_to(cs[None, :], x.shape)
    lq = log_q_at(x.ravel(), cb.ravel(), ctx).reshape(x.shape)
    g = log_ratio(cf + 1.0, 2.0 * x - cf - 1.0, ctx)
    a = alphas[:, None]
    lap = lq + a * g + np.where(edge, 0.0, np.log(np.maximum(0.5 * sig, 1.0) * math.sqrt(2 * math.pi)))
    lcap = log_cap_f(alphas, ctx)[:, None]
    lap = np.minimum(lap, lcap)
    gauss = np.log(2.0 * a * (a - 1.0) * s * s / (cf + 1.0))
    lf_l = log_expm1(np.maximum(lap, 1e-300))
    # the Laplace form is noisy when f ≈ 1 (x* rounded to a cell); the Gaussian form is used there
    out: Array = np.where(lap >= 1.0, lf_l, np.minimum(gauss, log_expm1(lcap)))
    return out


def _refine_far_peaks(
    ctx: Ctx, alphas: Array, cs: Array, lp: Array, est: Array
) -> tuple[Array, Array, Array]:
    """More samples around each order's best sample when it lies in the sparse, geometric part
    of the samples (beyond c0 ± 6σ_C): the tilted C-distribution of a high order at large ε0
    peaks far in the lower tail, where samples are thousands of σ_C apart and the estimate of
    its peak (hence of log F and of where the grid needs points) would be off by hundreds of
    nats. Design only."""
    k_best = np.argmax(lp[None, :] + est, axis=1)
    far = np.abs(cs[k_best] - ctx.c0) > 6.5 * max(ctx.sig_c, 0.5)
    if not far.any():
        return cs, lp, est
    idx = np.unique(k_best[far])
    lo, hi = cs[np.maximum(idx - 1, 0)], cs[np.minimum(idx + 1, cs.size - 1)]
    # log P(C = c) has curvature ≈ −1/c in the lower tail: a peak between samples h apart may be
    # missed by ≈ h²/(8c) nats; refine only where that exceeds 2 nats
    h = np.maximum(cs[idx] - lo, hi - cs[idx]).astype(float)
    coarse = h * h > 16.0 * np.maximum(cs[idx], 1).astype(float)
    if not coarse.any():
        return cs, lp, est
    lo, hi = lo[coarse], hi[coarse]
    new = np.unique(
        np.round(lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, 25)[None, :]).astype(np.int64)
    )
    new = np.setdiff1d(new, cs)
    if not new.size:
        return cs, lp, est
    cs2 = np.concatenate([cs, new])
    order = np.argsort(cs2, kind="stable")
    lp2 = np.concatenate([lp, log_binom_pmf(new.astype(float), float(ctx.N), ctx.p, ctx.p1)])
    est2 = np.concatenate([est, _estimates(ctx, alphas, new)], axis=1)
    return cs2[order], lp2[order], est2[:, order]


def _relevance(mx: Array) -> Array:
    """The level above which an order's estimated tilted terms count as relevant: 40 nats below
    its largest (``mx``), and 10 % of log F more (the estimates' relative error)."""
    out: Array = mx - 40.0 - _EST_REL * np.maximum(mx, 0.0)
    return out


def _left_end_bounds(lp: Array, est: Array) -> Array:
    """Per order and sample interval, the estimated left-end bound of the whole interval: the mass
    at its right end (log P) times f at its left end."""
    out: Array = lp[None, 1:] + est[:, :-1]
    return out


def _subdivide(ctx: Ctx, cs: Array, lp: Array, est: Array, mx: Array) -> tuple[Array, Array, Array]:
    """Finer samples in the sample intervals whose left-end bound (mass at the right end × f at
    the left end) is relevant to some order while log P(C = c) changes by more than
    :data:`_SUB_NATS` across them (the geometric samples far from c0): there the exact log P and
    the chord of the estimates. The whole interval looks relevant through its left-end bound,
    but a point in it matters only as much as its own tilted terms, which these samples resolve,
    so that the slack allowed per bin can follow them (:func:`c_grid`). Design only."""
    relb = (_left_end_bounds(lp, est) >= _relevance(mx)).any(axis=0)
    dlp = np.abs(np.diff(lp))
    k = np.where(relb & np.isfinite(dlp), np.minimum(np.ceil(dlp / _SUB_NATS), 100), 1).astype(np.int64)
    k = np.minimum(k, np.maximum(np.diff(cs), 1))
    if not (k > 1).any():
        return cs, lp, est
    i = np.flatnonzero(k > 1)
    reps = k[i] - 1
    ii = np.repeat(i, reps)
    j = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps) + 1
    new = np.unique(np.round(cs[ii] + (cs[ii + 1] - cs[ii]) * j / k[ii]).astype(np.int64))
    new = np.setdiff1d(new, cs)
    cs2 = np.union1d(cs, new)
    isnew = np.isin(cs2, new)
    lp2 = np.empty(cs2.size)
    lp2[~isnew] = lp
    lp2[isnew] = log_binom_pmf(cs2[isnew].astype(float), float(ctx.N), ctx.p, ctx.p1)
    est2 = np.array([np.interp(cs2.astype(float), cs.astype(float), row) for row in est])
    return cs2, lp2, est2


def c_grid(ctx: Ctx, alphas: Array) -> tuple[Array, Array]:
    """The C-grid points (step 1 of the module docstring) and the estimated log(F − 1) per order."""
    big_n, c0, sd = ctx.N, ctx.c0, ctx.sig_c
    # samples: dense around c0, geometric towards 0 and N
    z = np.concatenate([np.linspace(-6, 6, 49), -6 * 1.25 ** np.arange(1, 40), 6 * 1.25 ** np.arange(1, 12)])
    cs = np.unique(np.clip(np.round(c0 + z * max(sd, 0.5)), 0, big_n).astype(np.int64))
    cs = np.unique(
        np.concatenate([cs, np.unique(np.round(np.geomspace(1, max(c0, 1), 30))).astype(np.int64)])
    )
    cs = cs[(cs >= 0) & (cs <= big_n)]
    lp = log_binom_pmf(cs.astype(float), float(big_n), ctx.p, ctx.p1)
    est = _estimates(ctx, alphas, cs)  # (K, S)
    cs, lp, est = _refine_far_peaks(ctx, alphas, cs, lp, est)
    L = lp[None, :] + est
    mx = L.max(axis=1, keepdims=True)
    cs, lp, est = _subdivide(ctx, cs, lp, est, mx)
    L = lp[None, :] + est
    # relevant: within 40 nats (+10% of log F: the estimate's relative error) of each order's peak
    thr = _relevance(mx)
    rel = thr <= L
    # allowed relative slack per order, and |d log(f−1)/dc| per sample interval
    lnF = np.logaddexp(0.0, mx[:, 0])
    eta = ctx.precision.rho * np.maximum(1.0, alphas / 64.0) ** 0.25 * np.maximum(1.0, lnF)
    cf = cs.astype(float)
    dc = np.diff(cf)
    slope = np.abs(np.diff(est, axis=1)) / np.maximum(dc, 1.0)[None, :]
    slope = np.maximum(slope, 1.0 / (cf[None, 1:] + 1.0))
    # optimal point density for the left-end rule: d ∝ √(π·slope), π the (estimated) tilted
    # C-distribution of each order; total relative slack ≈ Σ π·slope·w/2 ≤ η
    # … and intervals whose left-end bound (mass near the right end × f at the left end) is not
    # negligible while f_α falls by more than 2 nats across them: far in the lower C-tail of a
    # high order at large ε0, f_α falls steeply while the mass grows towards c0
    leb = _left_end_bounds(lp, est)
    relb = (leb >= thr) & (est[:, :-1] - est[:, 1:] > 2.0)
    relint = rel[:, 1:] | rel[:, :-1] | relb
    pi = np.exp(np.minimum(L - mx, 0.0))
    mid_pi = np.maximum(pi[:, 1:], pi[:, :-1])
    mid_pi = mid_pi / (0.5 * (pi[:, 1:] + pi[:, :-1]) * dc[None, :]).sum(axis=1, keepdims=True)
    rt = np.sqrt(mid_pi * slope)
    z = (rt * dc[None, :]).sum(axis=1)
    dens = (rt * z[:, None] / (2.0 * eta[:, None])).max(axis=0)
    # and log f may change by at most ~1 across a bin wherever an order's tilted mass is not
    # negligible (the first-order slack estimate above assumes it)
    near = (L[:, 1:] >= mx - 15.0) | (L[:, :-1] >= mx - 15.0)
    lam = np.where(near, np.maximum(1.0, eta)[:, None], np.maximum(10.0, eta)[:, None])
    # … except far below an order's peak: an interval whose tilted terms and left-end bound are
    # ≤ lb, D = mx − lb nats below the peak, may let log f fall by (D − 60)/2 across a bin
    lb = np.maximum(np.maximum(L[:, 1:], L[:, :-1]), leb)
    lam = np.maximum(lam, 0.5 * (mx - lb - _FAR_MARGIN))
    dens = np.maximum(dens, np.where(relint, slope / lam, 0.0).max(axis=0))
    dens = np.minimum(dens, 1.0)
    cum = np.concatenate([[0.0], np.cumsum(dens * dc)])
    npts = int(math.ceil(cum[-1]))
    pts = (
        np.round(np.interp(np.arange(npts + 1), cum, cf)).astype(np.int64)
        if npts > 0
        else np.array([], dtype=np.int64)
    )
    anyrel = rel.any(axis=0) | np.append(relb.any(axis=0), False)
    edges = cs[anyrel]
    pts = np.unique(np.concatenate([[0], pts, edges[:1], edges[-1:]]))
    # restrict to [first relevant, last relevant] (plus 0), with geometric points below (the bin
    # under the lowest point is bounded by its left end's value: at 0, the cap)
    lo, hi = edges.min(), edges.max()
    pts = pts[(pts == 0) | ((pts >= lo) & (pts <= hi))]
    below = []
    d = max(sd, 1.0)
    while lo - d > 0:
        below.append(int(lo - d))
        d *= 1.5
    return np.unique(
        np.concatenate(
            [pts, np.array(below, dtype=np.int64), _gap_ladders(pts[pts >= lo], max(sd, 1.0), cs, est)]
        )
    ), mx[:, 0]


def _gap_ladders(pts: Array, d0: float, cs: Array, est: Array) -> Array:
    """Points in the wide gaps between clusters of relevant points (e.g. the tilted C-peaks of the
    highest orders far below c0 and the bulk): a geometric ladder up from each gap's lower end,
    c_k = a + d0·1.5^k. Without it the lowest point of a gap carries the whole gap's mass, which
    grows towards c0 while f_α falls, and its left-end bound W·f_α(a) overshoots by hundreds of
    nats at high orders; with it each bin is at most half as wide as its distance from a, where
    f_α has fallen (steering only: every grid gives a valid bound). Only gaps wider than 4σ_C
    across which some order's estimated log(f − 1) (``est`` at the samples ``cs``) falls by more
    than 2 nats get a ladder."""
    wide = np.flatnonzero(np.diff(pts) > 4.0 * d0)
    if wide.size:
        ends = np.concatenate([pts[wide], pts[wide + 1]]).astype(float)
        at = np.array([np.interp(ends, cs.astype(float), row) for row in est])  # (orders, 2·gaps)
        drop = (at[:, : wide.size] - at[:, wide.size :]).max(axis=0)
        wide = wide[drop > 2.0]
    extra: list[int] = []
    for i in wide.tolist():
        a, b = int(pts[i]), int(pts[i + 1])
        d = d0
        while a + d < b:
            extra.append(int(a + d))
            d *= 1.5
    return np.array(extra, dtype=np.int64)


def log_f_estimates(alphas: Array, sub: Array, est: Array) -> Array:
    """Estimates of log(F_α − 1) at every order from those at the orders ``sub`` estimated
    directly: there, their value; in between, the chord (linear in α) or, where smaller, the
    larger of the two neighbouring secants extended — log F_α = (α−1)·D_α is convex in α, so its
    chords lie above it and its secants extended outside their interval below it (interpolating
    in log α instead over-estimated by up to 237 nats at high orders). Design only."""
    out = np.interp(alphas, sub, est)
    direct = np.isin(alphas, sub)
    xs, ys = sub, est
    if xs.size >= 3:
        j = np.searchsorted(xs, alphas)  # xs[j−1] < α ≤ xs[j]
        jl = np.clip(j - 1, 1, xs.size - 1)  # secant (jl−1, jl), extended to the right of xs[jl]
        jr = np.clip(j, 0, xs.size - 2)  # secant (jr, jr+1), extended to the left of xs[jr]
        with np.errstate(divide="ignore", invalid="ignore"):
            left = ys[jl] + (alphas - xs[jl]) * (ys[jl] - ys[jl - 1]) / (xs[jl] - xs[jl - 1])
            right = ys[jr] + (alphas - xs[jr]) * (ys[jr + 1] - ys[jr]) / (xs[jr + 1] - xs[jr])
        # only secants of intervals that do not contain α lie below the curve there
        left = np.where((j >= 2) & np.isfinite(left), left, -np.inf)
        right = np.where((j <= xs.size - 2) & np.isfinite(right), right, -np.inf)
        env = np.maximum(left, right)
        out = np.where(direct | ~np.isfinite(env), out, np.minimum(out, env))
    res: Array = out
    return res
