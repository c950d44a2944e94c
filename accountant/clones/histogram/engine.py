"""The histogram engine: the plan of one (n, ε0) — C-grid, weights, windows, boxes — and its
prepared histogram, evaluated at any order for the cost of its bins (steps 1, 2, 4 and 5 of
:mod:`accountant.clones.histogram`)."""

from __future__ import annotations

import math

import numpy as np

from ..._numerics import log_expm1, logsumexp, logsumexp_many
from .. import compiled
from ..closed_form import log_cap_f, log_ratio
from ..grid.cells import hist_cells
from ..grid.cgrid import c_grid, log_f_estimates
from ..grid.cmass import CMass
from ..grid.windows import tails, windows
from ..types import Array, Ctx
from . import boxes
from .bins import Bins, bin_edges, hist_sum_merged

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
#: Orders whose final value (after the caller's check) a prepared histogram keeps.
MEMO_MAX = 4096


class HistPlan:
    """The C-grid, weights and windows of one evaluation (computed before any cell, so that the
    caller can check the cost: ``cells``)."""

    def __init__(self, ctx: Ctx, alphas: Array) -> None:
        compiled.available()  # (switches the compiled design searches on or off with the kernels)
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
            self.ranges = boxes.Ranges(np.arange(c.size), self.x_l, self.x_h)
            self.boxes: boxes.Boxes | None = None
            if self.window_cells > max(BOX_MIN_CELLS, BOX_MIN_WIDTH * float(np.sqrt(c + 1.0).sum())):
                negl = boxes.Negligible(ctx, alphas, self.lfm1_est)
                self.ranges, self.boxes = boxes.box_cover(c, lw, self.x_l, self.x_h, ctx, negl)
                self.cells = int((self.ranges.hi - self.ranges.lo + 1).sum())
        else:
            self.cells = self.window_cells = 0


class Prepared:
    """Everything of one (n, ε0) that does not depend on the order: the plan (C-grid, weights,
    windows) and the histogram of its cells. Any order in [α_lo, α_hi] (the range the windows were
    designed for) is then evaluated for the cost of its bins only (:meth:`Prepared.evaluate`), so later
    requests for other orders of the same (n, ε0) — the real-order refinement of an ε answer, a
    custom order list — reuse it."""

    def __init__(self, plan: HistPlan) -> None:
        self.plan = plan
        #: order → final value, kept by the caller (:func:`accountant.clones.routing`); at most
        #: :data:`MEMO_MAX` orders (another thread may clear it: read each order once)
        self.memo: dict[float, float] = {}
        self._design: tuple[Array, Array] | None = None
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
            if rj.size and compiled.available():  # the same histogram from the compiled kernel
                prec = ctx.precision
                st = compiled.hist_stats(
                    c[rj],
                    ra,
                    rb,
                    lw[rj],
                    shift[rj],
                    ctx,
                    lambda lo, hi: bin_edges(lo, hi, prec.dg, prec.ratio),
                    math.log(prec.ratio),
                )
                self.bins = None if st is None else Bins.from_stats(*st)
            elif rj.size:
                lbw, den, g, segc = hist_cells(c[rj], ra, rb, lw[rj], ctx)
                if np.any(np.isfinite(lbw) & (g != 0.0) & (den > 0.0)):
                    self.bins = Bins(lbw, g, segc, shift[rj], lin=den, precision=ctx.precision)
            if plan.boxes is not None:
                bj, blw, bg = plan.boxes.seg, plan.boxes.lw, plan.boxes.g
                if np.any(np.isfinite(blw) & (bg != 0.0)):
                    self.box_bins = Bins(blw, bg, np.arange(bj.size), shift[bj], precision=ctx.precision)

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


_TAIL_NATS = 45.0


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
