"""Boxes: order-independent bounds on runs of cells that no order needs (bounds.md §8).

The histogram engine (:mod:`accountant.clones.histogram`) evaluates every cell of each point's window. Most of
those cells matter to no order when ε0 or n is large: a point far out in the C-tail matters only
through its top cells (the tilted peaks of the highest orders), a point in the bulk only through
the cells around the tilted peaks of the orders whose total it carries. Here such runs of cells
are replaced by *boxes*, single histogram entries that bound them for every order at once.

Certificate
-----------
For a point c (b = Bin(c, ½) pmf, Q_c(x) = (b(x) + q·b(x−1))/(1 + q), u = 2x − c − 1) let
L = ⌊(c+1)/2⌋.

* On [0, L], Q_c is non-decreasing (x + 1 ≤ L gives x ≤ (c−1)/2, so b(x+1) ≥ b(x) and
  b(x) ≥ b(x−1)) and u ≤ 0, so g = log R ≤ 0 and ψ_α(g) = e^{αg} − 1 − α(e^g − 1) is
  non-increasing in g (ψ' = α(e^{αg} − e^g) ≤ 0 for g ≤ 0, α > 1). For a run [a, b] ⊆ [0, L]:
  Σ_{x∈[a,b]} Q(x)·ψ_α(g(x)) ≤ (b − a + 1)·Q(b)·ψ_α(g(a)).
* On [L+1, c+1], Q_c is non-increasing (x ≥ (c+1)/2 gives b(x+1) ≤ b(x) and b(x) ≤ b(x−1);
  b(c+1) = 0) and u ≥ 0, so ψ_α is non-decreasing in g: for [a, b] ⊆ [L+1, c+1],
  Σ Q(x)·ψ_α(g(x)) ≤ (b − a + 1)·Q(a)·ψ_α(g(b)).

A box is the entry (weight W_j·(b − a + 1)·Q_max, value g_end) in a histogram of its own
(:class:`accountant.clones.histogram.bins.Bins`): the histogram's per-bin bounds (chord, Jensen,
largest end value) hold for any finite set of non-negative weights, so the boxes' histogram sum
bounds Σ_boxes weight·ψ_α(g_end), which bounds the cells the boxes stand for, for every order.
The cells left are evaluated exactly as before; what lies outside the window keeps its tail
bounds (:mod:`accountant.clones.grid.windows`). Boxes therefore never lower the bound.

Design (tightness only)
-----------------------
A box is kept when its bound is negligible for every design order:
log W_j + log((b − a + 1)·Q_max) + max_α [log ψ_α(g_end) − L(α)] ≤ −:data:`LAMBDA_BOX`,
L(α) the design's estimate of log(F_α − 1) (:func:`accountant.clones.grid.cgrid.log_f_estimates`) less
:data:`MARGIN`. The maximum over the orders is
tabulated per (n, ε0) on a grid of g (:class:`Negligible`, each grid point when first used;
between grid points it takes the grid point farther from 0, where ψ_α is larger for every α).
Runs are split top-down (halves) until they pass or are at most :data:`MIN_RUN` cells, which
are then evaluated as cells.

The split (cost only; the same ranges and boxes). Each side of a window is split on its own,
and a half reuses its parent's log Q or g at the end they share, so each split computes one new
log Q (Loader's pmf) and one new g. A run longer than MIN_RUN is left as cells at once when

    log W_j + log⌊(MIN_RUN + 1)/2⌋ + Q_lo + N_lo + LAMBDA_BOX > :data:`SURE`,

Q_lo ≤ min log Q and N_lo ≤ min negl(g) over the run: every sub-run the split would test is at
least ⌊(MIN_RUN + 1)/2⌋ long (a halved run is longer than MIN_RUN) and its test value is at
least this bound, so every one would fail and become cells — the same cells, merged. The bounds
come from the monotonicity above: on a side Q is monotone and so is negl(g) (ψ_α grows with |g|
for every α, so does the table's maximum over the orders, and the lookup takes the grid point
farther from 0), so the minima are at the run's ends: at the root runs both ends are evaluated;
a half that shares its parent's low end keeps the parent's bound, the other takes the value
just computed for its sibling at the cell next to it on its low side (Q(mid) ≤ Q(mid + 1) on
the left side, …). SURE = 1e-6 nats covers the rounding by which computed values may break the
monotonicity (≲ 1e-11 absolute for log Q at c ≲ 10⁹). With the compiled kernels on, the same
split runs compiled (:mod:`accountant.clones.compiled.boxes`; numba's ``log`` may differ from numpy's in the last
bit, so a test that lands within rounding of the threshold may go the other way). Whichever
way any test goes, every box bounds its cells: the design decides tightness and cost only.

With at most ~10⁵ boxes, their total is below e^{−28} of each order's estimated total;
the engine checks the boxes' actual share a posteriori and flags an order whose boxes weigh
more than e^{−20} of its total (:meth:`accountant.clones.histogram.engine.Prepared.evaluate`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..._numerics import log_phi
from .. import compiled
from ..closed_form import log_q_at, log_ratio
from ..types import Array, Ctx

LAMBDA_BOX = 40.0  # a box is kept when it is this many nats below every order's estimated total
MIN_RUN = 64  # runs that fail and are at most this long are evaluated cell by cell
MARGIN = 10.0  # nats taken off the estimates of log(F − 1) (they steer the design only)
SURE = 1e-6  # a run is left as cells when its sub-runs' bound misses the test by more than this
_GRID = 241  # points of the g-grid of the negligibility table on each side of 0


class Negligible:
    """max_α [log ψ_α(g) − L(α)] over the design orders, tabulated on a grid of g in [−ε0, ε0],
    with L = ``lfm1_est`` − :data:`MARGIN`. An entry is computed when first looked up (a split
    uses a few dozen of the grid points)."""

    def __init__(self, ctx: Ctx, alphas: Array, lfm1_est: Array) -> None:
        self.alphas = np.ascontiguousarray(alphas, dtype=float)
        self.levels = np.ascontiguousarray(lfm1_est - MARGIN, dtype=float)
        e0 = ctx.eps0
        pos = np.geomspace(max(e0 * 1e-12, 1e-300), e0, _GRID)
        self.grid = np.concatenate([-pos[::-1], [0.0], pos])
        self.table = np.full(self.grid.size, np.nan)
        self.done = np.zeros(self.grid.size, dtype=bool)

    def index(self, g: Array) -> Array:
        """The grid point farther from 0 at each g: for g > 0 the first grid[i] ≥ g, else the
        last grid[i] ≤ g (clipped to the grid)."""
        grid = self.grid
        i = np.clip(np.searchsorted(grid, g, side="left"), 0, grid.size - 1)  # grid[i−1] < g ≤ grid[i]
        below = np.clip(np.searchsorted(grid, g, side="right") - 1, 0, grid.size - 1)  # grid[k] ≤ g
        out: Array = np.where(g > 0, i, below)
        return out

    def entries(self, idx: Array) -> Array:
        """The table at grid indices ``idx``, computing those not computed yet."""
        miss = np.unique(idx[~self.done[idx]])
        if miss.size:
            with np.errstate(divide="ignore", invalid="ignore"):
                vals = log_phi(self.alphas[:, None], self.grid[None, miss]) - self.levels[:, None]
            self.table[miss] = np.max(vals, axis=0)
            self.done[miss] = True
        out: Array = self.table[idx]
        return out

    def __call__(self, g: Array) -> Array:
        """An upper bound on the tabulated maximum at each g (the grid point farther from 0)."""
        return self.entries(self.index(np.asarray(g, dtype=float)))


class Ranges(NamedTuple):
    """Cell ranges [lo, hi] of points (evaluated cell by cell), sorted by point then x."""

    seg: Array
    lo: Array
    hi: Array


class Boxes(NamedTuple):
    """Boxes [a, b] of points, sorted by point then x: log-weight log(W_j·(b − a + 1)·Q_max) and
    the value g_end at the end where ψ_α is largest (one histogram entry each)."""

    seg: Array
    a: Array
    b: Array
    lw: Array
    g: Array


class Cover(NamedTuple):
    """The windows of every point split into cell ranges and boxes (:func:`box_cover`)."""

    ranges: Ranges
    boxes: Boxes


class Runs(NamedTuple):
    """Runs on a side of a point's window, with the values the test reads: log Q at x_q (where Q
    is largest on the run), g and negl(g) at x_g (where ψ is largest), and lower bounds on log Q
    and on negl over the run."""

    seg: Array  # the point
    a: Array
    b: Array
    right: Array  # on the right side of the mode
    lq: Array
    g: Array
    ng: Array
    lq_lo: Array
    ng_lo: Array


def box_cover(c: Array, lw: Array, x_l: Array, x_h: Array, ctx: Ctx, negl: Negligible) -> Cover:
    """Split the window [x_l, x_h] of every point into boxes (module docstring) and cell ranges.

    Returns the cell ranges, merged where adjacent, and the boxes (:class:`Cover`). ``negl``
    maps g to the design's table (:class:`Negligible`, or any function non-decreasing in |g| on
    each side of 0). With the compiled kernels on and a :class:`Negligible` table, the split
    runs compiled (:mod:`accountant.clones.compiled.boxes`: the same decisions from the same values)."""
    if isinstance(negl, Negligible) and c.size and compiled.available():
        return _box_cover_compiled(c, lw, x_l, x_h, ctx, negl)
    runs = _roots(c, x_l, x_h, ctx, negl)
    cells: list[tuple[Array, Array, Array]] = []
    boxes: list[tuple[Array, Array, Array, Array, Array]] = []
    log_half = math.log((MIN_RUN + 1) // 2)
    while runs[0].size:
        j, a, b, _, lq, g, ng, lq_lo, ng_lo = runs
        w = (b - a + 1).astype(float)
        lbox = lw[j] + np.log(w) + lq
        keep = lbox + ng <= -LAMBDA_BOX
        boxes.append((j[keep], a[keep], b[keep], lbox[keep], g[keep]))
        # cells: a short run, or one whose every sub-run fails the test for sure
        sure = lw[j] + log_half + lq_lo + ng_lo + LAMBDA_BOX > SURE
        small = ~keep & ((w <= MIN_RUN) | sure)
        cells.append((j[small], a[small], b[small]))
        runs = _halves(Runs(*(v[~keep & ~small] for v in runs)), c, ctx, negl)
    rj, ra, rb = (np.concatenate(v) for v in zip(*cells)) if cells else (np.empty(0, np.int64),) * 3
    order = np.lexsort((ra, rj))
    rj, ra, rb = rj[order], ra[order], rb[order]
    if rj.size:  # merge adjacent ranges of one point
        start = np.ones(rj.size, dtype=bool)
        start[1:] = (rj[1:] != rj[:-1]) | (ra[1:] != rb[:-1] + 1)
        first = np.flatnonzero(start)
        last = np.append(first[1:] - 1, rj.size - 1)
        rj, ra, rb = rj[first], ra[first], rb[last]
    bj, ba, bb, blw, bg = (np.concatenate(v) for v in zip(*boxes))
    order = np.lexsort((ba, bj))
    return Cover(Ranges(rj, ra, rb), Boxes(bj[order], ba[order], bb[order], blw[order], bg[order]))


def _log_q(x: Array, c: Array, ctx: Ctx) -> Array:
    return log_q_at(x.astype(float), c, ctx)


def _g(x: Array, c: Array, ctx: Ctx) -> Array:
    cf = c.astype(float)
    out: Array = log_ratio(cf + 1.0, 2.0 * x - cf - 1.0, ctx)
    return out


def _roots(c: Array, x_l: Array, x_h: Array, ctx: Ctx, negl: Negligible) -> Runs:
    """The two sides of every window, [x_l, min(x_h, L)] and [max(x_l, L + 1), x_h] (the empty
    ones dropped), with their values at both ends (:data:`Runs`)."""
    pt = np.arange(c.size)
    half = (c + 1) // 2  # L: the left side is [0, L], the right side [L+1, c+1]
    a = np.concatenate([x_l, np.maximum(x_l, half + 1)])
    b = np.concatenate([np.minimum(x_h, half), x_h])
    j = np.concatenate([pt, pt])
    right = np.concatenate([np.zeros(c.size, dtype=bool), np.ones(c.size, dtype=bool)])
    ok = a <= b
    j, a, b, right = j[ok], a[ok], b[ok], right[ok]
    cj = c[j]
    xq = np.where(right, a, b)  # where Q is largest on the run
    xg = np.where(right, b, a)  # where ψ is largest
    g = _g(xg, cj, ctx)
    return Runs(j, a, b, right, _log_q(xq, cj, ctx), g, negl(g), _log_q(xg, cj, ctx), negl(_g(xq, cj, ctx)))


def _halves(runs: Runs, c: Array, ctx: Ctx, negl: Negligible) -> Runs:
    """The halves [a, mid] (first) and [mid + 1, b] of the runs. One half takes a new log Q at its
    x_q (mid on the left side, mid + 1 on the right side) and keeps the parent's g(x_g); the
    other keeps the parent's log Q(x_q) and takes a new g at its x_g (mid + 1 on the left side,
    mid on the right side). The lower bounds over a half: the parent's where the half shares the
    parent's far end; else log Q at the other half's new x_q (Q is monotone on a side and that
    cell is next to the half, on its low-Q side) and negl at the other half's new x_g (likewise,
    on its low-ψ side)."""
    j, a, b, right, lq, g, ng, lq_lo, ng_lo = runs
    mid = (a + b) // 2
    r = right.astype(np.int64)
    q_new = _log_q(mid + r, c[j], ctx)
    g_new = _g(mid + 1 - r, c[j], ctx)
    n_new = negl(g_new)
    # per value (a, b): on a right side the lower half takes a and the upper half b, on a left
    # side the other way round
    pairs = ((lq, q_new), (g_new, g), (n_new, ng), (q_new, lq_lo), (ng_lo, n_new))
    lower = tuple(np.where(right, a, b) for a, b in pairs)
    upper = tuple(np.where(right, b, a) for a, b in pairs)
    ends = (np.concatenate([j, j]), np.concatenate([a, mid + 1]), np.concatenate([mid, b]))
    vals = tuple(np.concatenate([lo, up]) for lo, up in zip(lower, upper))
    return Runs(*ends, np.concatenate([right, right]), *vals)


def _box_cover_compiled(c: Array, lw: Array, x_l: Array, x_h: Array, ctx: Ctx, negl: Negligible) -> Cover:
    """:func:`box_cover` by the compiled split (:func:`accountant.clones.compiled.boxes.box_split`).
    The output arrays start small and are retried once at full size when they run out: a run is
    split only when longer than MIN_RUN, into halves of at least ⌊(MIN_RUN + 1)/2⌋ cells, so a
    point's window of W cells leaves at most W/⌊(MIN_RUN + 1)/2⌋ + 2 cell ranges or boxes."""
    from ..._binomial import _stirlerr
    from ..compiled.boxes import box_split

    ci = c.astype(np.int64)
    xl, xh = x_l.astype(np.int64), x_h.astype(np.int64)
    full = int(np.maximum(xh - xl + 1, 0).sum()) // ((MIN_RUN + 1) // 2) + 2 * c.size + 1
    consts = np.array([ctx.eps0, ctx.log1pq, ctx.q, ctx.s, ctx.w, LAMBDA_BOX, MIN_RUN, SURE])
    with np.errstate(divide="ignore", invalid="ignore"):
        small = _stirlerr(np.arange(16.0))  # (entry 0 is never used)
    lwf = np.ascontiguousarray(lw, dtype=float)
    nt = (negl.grid, negl.table, negl.done, negl.alphas, negl.levels)
    for cap in (min(full, 8192 + 32 * c.size), full):
        cells = np.empty((3, cap), dtype=np.int64)
        bx = np.empty((3, cap), dtype=np.int64)
        vals = np.empty((2, cap))
        nr, nb = box_split(ci, lwf, xl, xh, consts, small, *nt, cells, bx, vals)
        if nr >= 0:
            break
    if nr < 0:
        raise RuntimeError("box_split: output arrays too small")
    return Cover(
        Ranges(cells[0, :nr], cells[1, :nr], cells[2, :nr]),
        Boxes(bx[0, :nb], bx[1, :nb], bx[2, :nb], vals[0, :nb], vals[1, :nb]),
    )
