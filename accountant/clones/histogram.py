"""Merged-histogram evaluation of the clone bound (the default engine of :mod:`accountant.clones`).

Same quantity and the same certificate as the module docstring of :mod:`accountant.clones`:

    F(α) − 1 = Σ_c P(C=c)·(f_α(c) − 1),   f_α(c) − 1 = Σ_x Q_c(x)·ψ_α(g_c(x)),

with g = log R and ψ_α(g) = e^{αg} − 1 − α(e^g − 1) ≥ 0 (the φ-form: Σ_x Q_c R = 1 exactly, so
f − 1 is a sum of non-negative terms and stays accurate when it is 1e-12). What is new is how the
sum is bounded, so that the cost of each order no longer grows with the number of cells:

1. *C-grid* (:mod:`.cgrid`). Points 0 = c_0 < c_1 < … with bins [c_j, c_{j+1}) (the last to N); by monotonicity
   in c (data processing, :mod:`._adaptive`) each bin is bounded by f_α(c_j) times its exact mass
   W_j. The points are placed once, from cheap estimates of each order's tilted C-distribution
   (density ∝ √(π·|d log f/dc|), optimal for the left-end rule, and log f changing by at most
   ~max(1, allowed slack) across a bin where an order's tilted mass is not negligible), plus a
   geometric ladder below down to c = 0, where f_α(0) is exact (the ε0-DP cap). Estimates only
   decide where points go; the bound holds for any grid.
2. *Cells.* For every point, every cell x of a window [x_lo, x_hi] is evaluated exactly, with the
   weight W_j·Q_{c_j}(x) (log space). Outside the window, the certified tail bounds of :mod:`.windows` are
   added per point and order: T_lo + T_hi + (α−1)·τ (φ ≤ R^α + α − 1). Windows follow the tilted
   peaks of the largest order; for points far in the C-tail (whose mass is e^{−45} below every
   order's estimated total even when multiplied by α) the window starts higher, where the bound
   below it, W_j·e^{α·g(x_lo − 1)}, is equally negligible. Wide windows (large ε0) are then
   split into cell ranges and boxes (:mod:`.boxes`): runs no order needs become one entry each,
   in a histogram of their own, bounding their cells for every order.
3. *One histogram in g for all points.* Cells are binned on g (geometric bins of ratio 1.03 near
   0, then of width min(7.5e-4, g_max/200)); each bin keeps its mass M, mean μ and the cells' own
   extreme values [g_lo, g_hi]. ψ_α is concave below g* = −log α/(α−1) and convex above, so per
   bin and order: convex — the chord through (g_lo, ψ(g_lo)) and (g_hi, ψ(g_hi)) at μ
   (E ψ ≤ chord(μ)); concave — ψ(μ) (Jensen); straddling g* — M·max(ψ(g_lo), ψ(g_hi)) (ψ is
   monotone on each side of 0, so its maximum on an interval is at an end). A bin holding one
   value of g is exact. Bins whose crude bound (log M + log(α²g²/2) + α·g for g > 0, from
   ψ'' ≤ α²e^{α·max(g,0)}; log M + log(α|g|) or the Taylor form for g < 0) is 45 nats below the
   largest are not evaluated; their count times e^{largest − 45} is added.
   Each order sees the histogram merged as far as its own slack allows (:meth:`Bins.coarse`):
   in the uniform part, 2^ℓ neighbouring bins of one sign become one (the union of their
   cells: masses add, means average, extremes extend — every per-bin bound above holds for any
   such union), with 2^ℓ·dg·α ≤ 0.05 and the merged width ≤ 3% of g; low orders then cost a
   fraction of the bins. The level depends on the order and the histogram only.
4. *Design once, evaluate many times.* Steps 1–3 do not depend on the order: :class:`Prepared`
   keeps them, and :meth:`Prepared.evaluate` costs per order only its bins and tail terms. The
   caller (:func:`accountant.clones.routing.histogram_engine`) always designs for the same orders (the
   default grid and 1.01), so a value depends on (n, ε0, α) only.
5. *A-posteriori check.* The same histogram with right-end weights (bin j bounded below by
   f(c_{j+1})) estimates the lower end of the C-discretisation bracket; orders whose gap is
   larger than 2%·(α/64)^¼ of log F are flagged, and the caller replaces them by the smaller of
   the chord of their checked neighbours (convexity of (α−1)·D_α) and the adaptive engine.

Every neglected piece is thus added as a bound, so the result is ≥ the exact sum for any grid,
window or binning; the choices only decide the slack (measured ≲ 0.1% at orders ≤ 256 and ≲ 1%
above against exact summation; see ``bench/results_clones.md``). The cost is dominated by the
number of cells (≈ 35 ns each, 10⁵–10⁶ of them); :mod:`accountant.clones` routes a problem here
when its cell count is within budget and to its own adaptive engine otherwise.
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import log_expm1, log_phi, logsumexp, logsumexp_many, segment_logsumexp
from . import boxes, fused
from ._cells import hist_cells
from ._cmass import CMass
from ._runs import Runs, group_runs, reduce_groups
from .cgrid import c_grid, log_f_estimates
from .kernels import Array, Ctx, log_cap_f, log_ratio
from .windows import tails, windows

_R = 1.03  # geometric ratio of the g-bins near 0 (chord slack ≈ (R−1)²/4 relative)
DG = 7.5e-4  # widest g-bin
_MERGE_REL = 0.03  # merged bins (per order): width ≤ this·g in the uniform part …
_MERGE_ABS = 0.05  # … and ≤ this/α (chord slack ≲ (α·width)²/8 where ψ is exponential)
PRUNE = 45.0
#: Slack check: an order is flagged (and re-evaluated by the caller) when its estimated
#: C-slack log(1+U) − log(1+L) exceeds CHECK·(α/64)^¼·log(1+U).
CHECK = 2e-2
#: Windows holding more cells than this, on average wider than BOX_MIN_WIDTH·√(c+1), are split
#: into cell ranges and boxes (:mod:`.boxes`); narrower windows (small ε0: the Gaussian bulk) hold
#: few cells that no order needs.
BOX_MIN_CELLS = 150_000
BOX_MIN_WIDTH = 8.0
#: An order is flagged when its boxes weigh more than e^{−BOX_CHECK} of its total.
BOX_CHECK = 20.0


class HistPlan:
    """The C-grid, weights and windows of one evaluation (computed before any cell, so that the
    caller can check the cost: ``cells``)."""

    def __init__(self, ctx: Ctx, alphas: Array) -> None:
        fused.available()  # (switches the compiled design searches on or off with the kernels)
        self.ctx, self.alphas = ctx, alphas
        # the design estimates use every other order (neighbouring orders need nearly the same grid)
        sub = alphas if alphas.size <= 12 else np.unique(np.append(alphas[::2], alphas[-1]))
        pts, est = c_grid(ctx, sub)
        self.lfm1_est = log_f_estimates(alphas, sub, est)
        self.pts = pts
        self.lw_pts = CMass(ctx).bins(pts)
        c, lw = (pts[1:], self.lw_pts[1:]) if pts[0] == 0 else (pts, self.lw_pts)
        self.c, self.lw = c, lw
        if c.size:
            x_l, x_h, self.y_e = windows(c, float(alphas[0]), float(alphas[-1]), ctx, False)
            self.x_h = x_h
            self.x_l = _raise_lower_ends(c, x_l, x_h, lw, self.lfm1_est, alphas, ctx)
            self.window_cells = int((self.x_h - self.x_l + 1).sum())
            self.cells = self.window_cells
            # the cells evaluated: per range (point, x_lo, x_hi); runs no order needs become boxes
            self.ranges = (np.arange(c.size), self.x_l, self.x_h)
            self.boxes: tuple[Array, Array, Array] | None = None
            if self.window_cells > max(BOX_MIN_CELLS, BOX_MIN_WIDTH * float(np.sqrt(c + 1.0).sum())):
                negl = boxes.Negligible(ctx, alphas, self.lfm1_est)
                self.ranges, (bj, _, _, blw, bg) = boxes.box_cover(c, lw, self.x_l, self.x_h, ctx, negl)
                self.boxes = (bj, blw, bg)
                self.cells = int((self.ranges[2] - self.ranges[1] + 1).sum())
        else:
            self.cells = self.window_cells = 0


class Prepared:
    """Everything of one (n, ε0) that does not depend on the order: the plan (C-grid, weights,
    windows) and the histogram of its cells. Any order in [α_lo, α_hi] (the range the windows were
    designed for) is then evaluated for the cost of its bins only (:meth:`evaluate`), so later
    requests for other orders of the same (n, ε0) — the real-order refinement of an ε answer, a
    custom order list — reuse it."""

    def __init__(self, plan: HistPlan) -> None:
        self.plan = plan
        self._design: tuple[Array, Array] | None = None
        self.a_lo, self.a_hi = float(plan.alphas[0]), float(plan.alphas[-1])
        ctx, pts, lw_pts, c, lw = plan.ctx, plan.pts, plan.lw_pts, plan.c, plan.lw
        self.bins: Bins | None = None
        self.box_bins: Bins | None = None
        self.cells = 0
        if c.size:
            # right-end weights (bin j−1 lower-bounded by f(c_j)): an estimate of the lower end of
            # the C-discretisation bracket, to check the slack a posteriori. Point j takes the mass
            # of the bin below it, and its own bin's mass when that bin is the single integer c_j
            width = np.append(np.diff(pts), ctx.N - pts[-1] + 1)
            below = np.concatenate([[-np.inf], np.where(width[:-1] > 1, lw_pts[:-1], -np.inf)])
            own = np.where(width == 1, lw_pts, -np.inf)
            lw_low_all = np.logaddexp(below, own)
            lw_low = lw_low_all[1:] if pts[0] == 0 else lw_low_all
            self.cells = plan.cells
            rj, ra, rb = plan.ranges
            shift = lw_low - lw
            if rj.size and fused.available():  # the same histogram from the compiled kernel
                st = fused.hist_stats(c[rj], ra, rb, lw[rj], shift[rj], ctx, bin_edges, math.log(_R))
                self.bins = None if st is None else Bins.from_stats(*st)
            elif rj.size:
                lbw, den, g, segc = hist_cells(c[rj], ra, rb, lw[rj], ctx)
                if np.any(np.isfinite(lbw) & (g != 0.0) & (den > 0.0)):
                    self.bins = Bins(lbw, g, segc, shift[rj], lin=den)
            if plan.boxes is not None:
                bj, blw, bg = plan.boxes
                if np.any(np.isfinite(blw) & (bg != 0.0)):
                    self.box_bins = Bins(blw, bg, np.arange(bj.size), shift[bj])

    def covers(self, alphas: np.ndarray) -> bool:
        return bool(alphas.size) and self.a_lo <= float(alphas[0]) and float(alphas[-1]) <= self.a_hi

    def evaluate(self, alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Upper bound on log(E_Q[R^α] − 1) for sorted unique orders within [α_lo, α_hi], and a mask
        of the orders whose C-discretisation slack looks larger than intended (the estimates that
        placed the grid were off there); the caller re-evaluates those with the adaptive engine."""
        plan = self.plan
        ctx, pts, lw_pts, c, lw = plan.ctx, plan.pts, plan.lw_pts, plan.c, plan.lw
        out_terms = []
        low_terms = []
        if pts[0] == 0:  # c = 0: f(0) exact
            out_terms.append(lw_pts[0] + log_expm1(log_cap_f(alphas, ctx)))
        if c.size:
            t_lo, t_hi, ltau = tails(c, plan.x_l, plan.x_h, alphas, ctx, plan.y_e)
            with np.errstate(divide="ignore"):
                tail = logsumexp_many(t_lo, t_hi, np.log(alphas - 1.0)[None, :] + ltau[:, None]) + lw[:, None]
            out_terms.append(logsumexp(tail))
            if self.bins is not None:
                up, low = hist_sum_merged(self.bins, alphas)
                out_terms.append(up)
                low_terms.append(low)
        box_up = np.full(alphas.shape, -np.inf)
        if self.box_bins is not None:
            box_up, box_low = hist_sum_merged(self.box_bins, alphas)
            out_terms.append(box_up)
            low_terms.append(box_low)
        res = logsumexp_many(*out_terms)
        lo_est = logsumexp_many(*low_terms) if low_terms else np.full(alphas.shape, -np.inf)
        l_up = np.logaddexp(0.0, res)
        gap = l_up - np.logaddexp(0.0, lo_est)
        suspect = gap > CHECK * np.maximum(1.0, alphas / 64.0) ** 0.25 * l_up
        # boxes are sized to weigh ≲ e^{−28} of each order's total; an order for which they weigh
        # more (its estimate was off) is re-evaluated like one whose C-slack looks too large
        suspect |= box_up - res > -BOX_CHECK
        return res, suspect

    def chord_bound(self, alphas: np.ndarray) -> np.ndarray:
        """For each order, log(F − 1) from the chord of log F = (α−1)·D_α (convex in α, 0 at α = 1)
        between the nearest design orders on either side whose own value passed the slack check
        (+inf where there is none). A valid bound that repairs an isolated order whose grid
        estimate was off, and like every value here depends on (n, ε0, α) only."""
        if self._design is None:
            d = self.plan.alphas
            v, bad = self.evaluate(d)
            self._design = (
                np.concatenate([[1.0], d[~bad]]),
                np.concatenate([[0.0], np.logaddexp(0.0, v[~bad])]),
            )
        xs, ks = self._design
        j = np.searchsorted(xs, alphas, side="left")
        ok = (j > 0) & (j < xs.size)
        jl, jr = np.clip(j - 1, 0, xs.size - 1), np.clip(j, 0, xs.size - 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(ok, (alphas - xs[jl]) / np.where(ok, xs[jr] - xs[jl], 1.0), 0.0)
            lf = ks[jl] + t * (ks[jr] - ks[jl])
            return np.where(ok, log_expm1(np.maximum(lf, 1e-300)), np.inf)


def hist_log_fm1(plan: HistPlan) -> tuple[np.ndarray, np.ndarray]:
    """One-shot evaluation of a plan at its own orders (see :meth:`Prepared.evaluate`)."""
    return Prepared(plan).evaluate(plan.alphas)


_TAIL_NATS = 45.0

#: The bin edges on |g|, the index of the first uniform-part edge and the uniform width.
Layout = tuple[Array, int, float]


def _raise_lower_ends(
    c: Array, x_l: Array, x_h: Array, lw: Array, lfm1_est: Array, alphas: Array, ctx: Ctx
) -> Array:
    """Points far out in the C-tail matter only through their upper cells (the tilted peaks of
    the high orders). There the window may start at x_lo with g(x_lo − 1) ≤ G_j, G_j such that the
    tail bound below the window, W_j·((α−1)·τ + e^{α·g(x_lo−1)}) with τ ≤ 1, stays e^{−45} below
    the (estimated) total of every order. Validity does not depend on the estimate (the tail
    terms are added in any case); only tightness does."""
    with np.errstate(divide="ignore"):
        la1 = np.log(alphas - 1.0)
    ok = lw + np.max(la1 - lfm1_est) <= -_TAIL_NATS
    if not ok.any():
        return x_l
    G = np.min((lfm1_est[None, :] - _TAIL_NATS - lw[:, None]) / alphas[None, :], axis=1)
    m = (c + 1).astype(float)
    v = np.tanh(np.clip(G, -50.0, 50.0) / 2.0) / max(ctx.s, 1e-300)
    x_g = np.floor(0.5 * m * (1.0 + np.clip(v, -1.0, 1.0)))  # g(x_g) ≈ G; the tail starts at x_g
    # step down while g(x_g) > G (rounding), so that g(x_lo − 1) ≤ G with x_lo = x_g + 1
    for _ in range(3):
        over = log_ratio(m, 2.0 * x_g - m, ctx) > G
        x_g = np.where(over & (x_g > 0), x_g - 1.0, x_g)
    x_new = np.minimum(x_g + 1.0, x_h.astype(float)).astype(np.int64)
    return np.where(ok & (x_new > x_l), x_new, x_l)


def bin_edges(gmin: float, gmax: float) -> Layout:
    """Bin edges on |g|: 0, gmin, then ×_R while the step is below dg, then steps of dg up to
    gmax, dg = min(DG, gmax/200) (finer when ε0 is small, where the largest orders would
    otherwise see few bins). Returns the edges, the index of the first uniform-part edge
    (geometric below it) and dg."""
    dg = min(DG, gmax / 200.0)
    lr = math.log(_R)
    g_sw = dg / (_R - 1.0)
    k = max(0, int(math.ceil(math.log(max(min(gmax, g_sw), gmin) / gmin) / lr)))
    geo = gmin * np.exp(lr * np.arange(k + 1))
    m = max(0, int(math.ceil((gmax - geo[-1]) / dg)))
    ed = np.concatenate([[0.0], geo, geo[-1] + dg * np.arange(1, m + 1)])
    ed[-1] = max(ed[-1], gmax)
    return ed, k + 1, dg


class Bins:
    """The histogram of the cells on g (order-independent): per non-empty bin the log-mass LM, the
    cells' extreme values [lo, hi] of g, the mean μ, and the log-mass under the right-end weights
    (lw + shift_low[seg], for the slack check).

    A cell's weight is e^{lw}·lin (lin ≥ 0, default 1); cells with lw = −inf, lin = 0 or g = 0
    (ψ(0) = 0) add nothing and are set aside. Consecutive cells of one point that share a bin (runs: g is
    monotone in x within a point) are reduced first when runs are long, then merged into the
    bins."""

    layout: Layout | None
    _cuts: dict[int, Bins]
    LM: Array
    LML: Array
    lo: Array
    hi: Array
    mu: Array
    keys: Array
    single: Array
    wl: Array
    wh: Array
    gm: Array
    p1: Array
    p2: Array
    npos: int

    def __init__(self, lw: Array, g: Array, seg: Array, shift_low: Array, lin: Array | None = None) -> None:
        valid = np.isfinite(lw) & (g != 0.0)
        if lin is not None:
            valid &= lin > 0.0
        key, nk, self.layout = _bin_keys(g, valid)
        runs = Runs(key, seg)
        rk, rseg = runs.key, runs.seg
        mx = np.full(nk, -np.inf)
        gl = np.full(nk, np.inf)
        gh = np.full(nk, -np.inf)
        np.maximum.at(mx, rk, runs.reduce(np.maximum, lw))
        np.minimum.at(gl, rk, runs.reduce(np.minimum, g))
        np.maximum.at(gh, rk, runs.reduce(np.maximum, g))
        with np.errstate(invalid="ignore"):  # the set-aside key: −inf − (−inf)
            w = lw - runs.expand(mx[rk])
            np.exp(w, out=w)
        if lin is not None:
            w *= lin
        r_m = runs.reduce(np.add, w)
        r_s = runs.reduce(np.add, w * g)
        M = np.bincount(rk, r_m, minlength=nk)
        S = np.bincount(rk, r_s, minlength=nk)
        kk = np.flatnonzero(M[:-1] > 0)  # (the last key holds the set-aside cells)
        LM = mx[kk] + np.log(M[kk])
        # the same bins with the right-end weights (an estimate; only the slack check uses it;
        # a weight that underflows only makes the check stricter)
        with np.errstate(under="ignore", over="ignore"):
            es = np.exp(np.clip(shift_low, -700.0, 700.0))
        ML = np.bincount(rk, r_m * es[rseg], minlength=nk)[kk]
        with np.errstate(divide="ignore", invalid="ignore"):
            LML = mx[kk] + np.log(ML)
        self._finish(LM, LML, gl[kk], gh[kk], S[kk] / M[kk], kk)
        self._cuts = {}

    @classmethod
    def from_stats(
        cls, LM: Array, LML: Array, lo: Array, hi: Array, mean: Array, keys: Array, layout: Layout
    ) -> Bins:
        """The histogram from per-key statistics already reduced (:mod:`.fused`)."""
        out = object.__new__(cls)
        out.layout = layout
        out._cuts = {}
        out._finish(LM, LML, lo, hi, mean, keys)
        return out

    def _finish(self, LM: Array, LML: Array, lo: Array, hi: Array, mean: Array, keys: Array) -> None:
        """Per bin (lo, hi: the cells' own extreme values of g): chord weights and pruning terms,
        the bins with positive g first."""
        mu: Array = np.clip(mean, lo, hi)
        single: Array = hi <= lo
        width = np.where(single, 1.0, hi - lo)
        with np.errstate(divide="ignore", invalid="ignore"):
            wl: Array = np.log((hi - mu) / width)
            wh: Array = np.log((mu - lo) / width)
            gm: Array = np.maximum(np.abs(lo), np.abs(hi))
            l2g: Array = 2.0 * np.log(gm)
        order = np.argsort(hi <= 0.0, kind="stable")  # positive g first
        self.npos = int((hi > 0.0).sum())
        LM, LML, lo, hi, mu, single, wl, wh, gm, l2g, keys = (
            v[order] for v in (LM, LML, lo, hi, mu, single, wl, wh, gm, l2g, keys)
        )
        self.LM, self.LML, self.lo, self.hi, self.mu, self.keys = LM, LML, lo, hi, mu, keys
        self.single, self.wl, self.wh, self.gm = single, wl, wh, gm
        with np.errstate(divide="ignore"):
            self.p1 = LM + l2g  # + log(½α²) (+ α·g for positive g): the pruning bound
            self.p2 = LM + np.log(gm)  # + log α (negative g)

    def coarse(self, level: int) -> Bins:
        """The same cells in fewer bins: in the uniform part of the edges, 2^ℓ consecutive bins
        of one sign are merged (dyadic groups), ℓ = min(level, ⌊log2(κ·g/dg)⌋) growing with the
        bin's lower edge g (κ = :data:`_MERGE_REL`, so a merged bin stays narrow relative to g,
        where ψ is quadratic); the geometric part near 0 is kept. A merged bin holds the union
        of its bins' cells: mass and right-end mass add, the mean is the mass-weighted mean, the
        extremes are the extremes — every per-bin bound of :func:`hist_sum` holds for any set of
        cells with these statistics, so the bound stays valid; only its slack grows (chosen per
        order by :func:`_merge_level`). Cached per level."""
        if level <= 0 or self.layout is None:
            return self
        got = self._cuts.get(level)
        if got is not None:
            return got
        ed, ksw, dg = self.layout
        b = self.keys >> 1
        uni = b >= ksw
        j = b - ksw
        with np.errstate(divide="ignore"):
            allowed = np.floor(np.log2(np.maximum(_MERGE_REL * ed[np.minimum(b, ed.size - 1)] / dg, 1.0)))
        lev = np.minimum(level, allowed).astype(np.int64)
        start = np.where(uni, ksw + ((j >> lev) << lev), b)
        gkey = 2 * start + (self.keys & 1)
        uk, grp, st = group_runs(gkey)
        if uk.size == self.keys.size:
            self._cuts[level] = self
            return self
        k = uk.size
        mx = reduce_groups(np.maximum, self.LM, grp, st, k, -np.inf)
        w = np.exp(self.LM - mx[grp])
        M = np.bincount(grp, w, minlength=k)
        S = np.bincount(grp, w * self.mu, minlength=k)
        with np.errstate(divide="ignore", under="ignore"):
            ML = np.bincount(grp, np.exp(self.LML - mx[grp]), minlength=k)
            LML = mx + np.log(ML)
        lo = reduce_groups(np.minimum, self.lo, grp, st, k, np.inf)
        hi = reduce_groups(np.maximum, self.hi, grp, st, k, -np.inf)
        out = object.__new__(Bins)
        out.layout = None
        out._cuts = {}
        out._finish(mx + np.log(M), LML, lo, hi, S / M, uk)
        self._cuts[level] = out
        return out


def _bin_keys(g: Array, valid: Array) -> tuple[Array, int, Layout]:
    """Bin key of every valid cell (2·bin + [g < 0], bins on |g| from :func:`bin_edges`; bin k covers
    (ed[k], ed[k+1]]), the extra last key for the others, and the number of keys. The analytic
    index is corrected against the edges themselves, so a value on an edge lands in the bin it
    bounds."""
    ag = np.abs(g)
    gmin = float(np.min(ag, where=valid, initial=np.inf))
    ed, ksw, dg = bin_edges(gmin, float(np.max(ag, where=valid, initial=0.0)))
    nb = ed.size - 1
    top = ed[ksw]
    # the uniform part's index for every cell (in place), then the geometric part's for the few
    # cells at or below ``top``
    idx = ag - top
    idx /= dg
    np.ceil(idx, out=idx)
    idx += ksw - 1.0
    geo = np.flatnonzero(ag <= top)
    with np.errstate(divide="ignore", invalid="ignore"):
        idx[geo] = np.ceil(np.log(ag[geo] / gmin) / math.log(_R))
    np.clip(idx, 0, nb - 1, out=idx)
    idx = idx.astype(np.int64)
    bad = np.flatnonzero(~((ag > ed[:-1][idx]) & (ag <= ed[1:][idx])) & valid)
    if bad.size:  # rounding at an edge: the exact search for those few
        idx[bad] = np.clip(np.searchsorted(ed, ag[bad], side="left") - 1, 0, nb - 1)
        if not np.all((ag[bad] > ed[idx[bad]]) & (ag[bad] <= ed[idx[bad] + 1])):
            raise FloatingPointError("histogram bin assignment failed")
    idx *= 2
    idx += g < 0
    idx[~valid] = 2 * nb
    return idx, 2 * nb + 1, (ed, ksw, dg)


def _merge_level(alphas: np.ndarray, dg: float) -> np.ndarray:
    """Per order, the coarsest merge level ℓ with 2^ℓ·dg·α ≤ :data:`_MERGE_ABS` (0: no merging),
    rounded down to a multiple of 3: a finer level is always valid (fewer cells per bin), and the
    orders of a curve then share 3–4 merged histograms instead of 8–10 (each costs a pass over
    the bins to build)."""
    with np.errstate(divide="ignore"):
        lev = np.floor(np.log2(_MERGE_ABS / (alphas * dg)))
    out = np.clip(lev, 0, 30).astype(np.int64)
    out -= out % 3
    return out


def hist_sum_merged(bins: Bins, alphas: Array) -> tuple[Array, Array]:
    """:func:`hist_sum` with each order on the histogram merged as far as its slack allows
    (:meth:`Bins.coarse`, :func:`_merge_level`): low orders see far fewer bins. Valid for any
    merging; the level depends on the order and the histogram's layout only."""
    if bins.layout is None:
        return hist_sum(bins, alphas)
    lev = _merge_level(alphas, bins.layout[2])
    up = np.empty(alphas.size)
    low = np.empty(alphas.size)
    summ = (lambda b, a: fused.hist_sum(b, a, PRUNE)) if fused.available() else hist_sum
    for ell in np.unique(lev).tolist():
        sel = np.flatnonzero(lev == ell)
        up[sel], low[sel] = summ(bins.coarse(int(ell)), alphas[sel])
    return up, low


def hist_sum(bins: Bins, alphas: Array) -> tuple[Array, Array]:
    """log Σ over cells of e^{lw}·ψ_α(g), bounded bin by bin (module docstring, step 3), and the
    same sum under the right-end weights (an estimate, for the slack check)."""
    LM, LML, lo, hi, mu = bins.LM, bins.LML, bins.lo, bins.hi, bins.mu
    single, wl, wh, gm = bins.single, bins.wl, bins.wh, bins.gm

    K = alphas.size
    # pruning bound: ψ ≤ ½α²g²·e^{α·max(g, 0)} (Taylor at 0, ψ'' ≤ α²e^{α·max(g,0)}) and, for
    # g < 0, ψ ≤ α|g|; bins are stored positive-g first (bins.npos of them)
    npos = bins.npos
    la2 = np.log(0.5 * alphas * alphas)[:, None]
    A = np.empty((K, LM.size))
    np.add(bins.p1[None, :npos], la2, out=A[:, :npos])
    A[:, :npos] += alphas[:, None] * gm[None, :npos]
    if npos < LM.size:
        np.minimum(
            bins.p1[None, npos:] + la2, bins.p2[None, npos:] + np.log(alphas)[:, None], out=A[:, npos:]
        )
    rowmax = A.max(axis=1)
    keep = (rowmax - PRUNE)[:, None] <= A
    rows, cols = np.nonzero(keep)
    ar = alphas[rows]
    with np.errstate(divide="ignore", invalid="ignore"):
        gs = (-np.log(alphas) / (alphas - 1.0))[rows]  # ψ is concave below g*, convex above
    lo_k, hi_k = lo[cols], hi[cols]
    one = single[cols]
    conc = (hi_k <= gs) | one
    conv = (lo_k >= gs) & ~one
    ic = np.flatnonzero(conc)  # Jensen at μ (exact for a single value)
    it = np.flatnonzero(~conc)  # chord (convex) or the larger end value (straddling g*)
    # one log φ call for all three kinds of values: μ (concave bins), then both ends of the others
    phi = log_phi(
        np.concatenate([ar[ic], ar[it], ar[it]]), np.concatenate([mu[cols[ic]], lo_k[it], hi_k[it]])
    )
    val = np.empty(rows.size)
    val[ic] = phi[: ic.size]
    lpa, lpe = phi[ic.size : ic.size + it.size], phi[ic.size + it.size :]
    c2 = cols[it]
    val[it] = np.where(conv[it], np.logaddexp(wl[c2] + lpa, wh[c2] + lpe), np.maximum(lpa, lpe))
    vlow = val + LML[cols]  # the same per-bin average of ψ under the right-end weights (estimate)
    val = val + LM[cols]
    starts = np.searchsorted(rows, np.arange(K))
    res = segment_logsumexp(val, starts)
    # pruned bins: each below e^{max A − PRUNE}
    ndrop = LM.size - np.bincount(rows, minlength=K)
    with np.errstate(divide="ignore"):
        dropped = np.where(ndrop > 0, np.log(np.maximum(ndrop, 1)) + rowmax - PRUNE, -np.inf)
    low = segment_logsumexp(vlow, starts)
    return np.logaddexp(res, dropped), low
