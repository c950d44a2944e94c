"""Per-point bounds on f_α(c) − 1 from binned cells (the adaptive engine's cell path; bounds.md §8).

For a fixed c, cells x are grouped into bins b with Q-mass m_b, conditional mean ū_b and
variance V_b of u. Taylor's theorem with the Lagrange remainder and Σ_{x∈b} Q(x)(u − ū_b) = 0
give, with h = R^α,

    E[h·1_b] ≤ m_b·h(ū_b) + ½·m_b·V_b·sup_{u∈b} h''(u),
    h'' = 4α t² h·(α + t u)/(1 − t²u²)²  (t = s/(c+1); > 0 since |t u| ≤ s < 1),

the sup bounded by its factors' sups on [u_a, u_b] (h and α + tu increase in u). When
log f < 2e-3 this is rearranged with h = 1 + α(R − 1) + φ(R), φ(r) = r^α − 1 − α(r − 1) ≥ 0,
using Σ_x Q R = Σ_x P = 1 and the convexity of R in u (Σ_b m_b R(ū_b) ≤ M_P − J,
J ≥ Σ_b ½ m_b V_b inf_b R'', R'' = 4t²/(1 − t u)³), so that f − 1 ≤ Σ_b m_b φ(ū_b) + Taylor
− α·J + (α−1)·τ + tails, every term computed directly. Bins of one cell are exact (V_b = 0):
in ``exact`` mode every cell is its own bin, and the result is the untruncated sum up to the
window tails (≲ e^{−38}). The window tails are :func:`accountant.clones.grid.windows.tails`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..._numerics import log_expm1, log_phi, logsumexp_many, segment_logsumexp
from ..closed_form import l1m, l1m_sq, lf_est, log_cap_f, log_ratio
from ..grid.cells import BLK, CellBlocks
from ..grid.windows import tails, windows
from ..types import Array, Ctx
from .cellsums import cell_logsums

RHO_X = 2.0e-4  # target relative slack of the x-discretisation
_PAIR_BATCH = 1 << 20


class Selection(NamedTuple):
    """The blocks covering a chunk's windows (:meth:`Cells.select`)."""

    idx: Array  # block indices, point by point
    e_lo: Array  # effective window edges per point (whole blocks)
    e_hi: Array
    nsel: Array  # selected blocks per point


class XBins(NamedTuple):
    """Bins of cells along x, grouped by point: log-mass, mean ū and variance V of u (None when
    every bin is one cell), the first and last u, g at the last, and the point of each bin."""

    lm: Array
    ubar: Array
    var: Array | None
    u_a: Array
    u_b: Array
    g_b: Array
    seg: Array


class Cells(CellBlocks):
    """The cell blocks of :class:`CellBlocks` with per-block summaries: first/last u, log Q and g
    of each block, and (binned mode) its log-mass, mean and variance of u (bins made of whole
    blocks merge them)."""

    def __init__(self, c: Array, x_l: Array, x_h: Array, ctx: Ctx, exact: bool) -> None:
        super().__init__(c, x_l, x_h, ctx)
        self.c, self.x_l, self.x_h = c, x_l, x_h
        self.t_blk = ctx.s / (c[self.blk_seg] + 1.0)
        last = self.blk_len - 1
        rows = np.arange(last.size)
        self.u_first, self.u_last = self.u[:, 0], self.u[rows, last]
        self.lq_first, self.lq_last = self.lq[:, 0], self.lq[rows, last]
        self.g_first, self.g_last = self.g[:, 0], self.g[rows, last]
        if not exact:
            self.b_lm, self.b_u, self.b_v = sub_stats(self.lq, self.u)

    def select(self, x_lo: Array, x_hi: Array) -> Selection:
        """Block indices covering [x_lo, x_hi] per point (clipped to the window), the effective
        window edges, and the number of selected blocks per point."""
        xl = np.maximum(x_lo, self.x_l)
        xh = np.minimum(x_hi, self.x_h)
        b_lo = (xl - self.x_l) // BLK
        b_hi = (xh - self.x_l) // BLK
        nsel = b_hi - b_lo + 1
        first = self.blk_first + b_lo
        start = np.concatenate([[0], np.cumsum(nsel)[:-1]])
        idx = np.repeat(first - start, nsel) + np.arange(int(nsel.sum()))
        e_lo = self.x_l + BLK * b_lo
        e_hi = np.minimum(self.x_h, self.x_l + BLK * b_hi + BLK - 1)
        return Selection(idx, e_lo, e_hi, nsel)


def sub_stats(lq3: Array, u3: Array) -> tuple[Array, Array, Array]:
    """log-mass, mean and variance of u along the last axis (padding: −inf, ignored)."""
    mx = lq3.max(axis=-1)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(invalid="ignore", under="ignore"):
        w = np.exp(lq3 - safe[..., None])
    sw = w.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ub = (w * u3).sum(axis=-1) / sw
        dv = u3 - ub[..., None]
        var = (w * dv * dv).sum(axis=-1) / sw
        lm = np.where(np.isfinite(mx), safe + np.log(sw), -np.inf)
    return lm, ub, var


def _peak_distance(cells: Cells, idx: Array, nsel: Array, a_arr: Array) -> Array:
    """Per (order, selected block): nats below the block holding the tilted peak of the order in
    its point (0 on the peak block and its neighbours)."""
    rows = np.arange(idx.size)
    sstart = np.concatenate([[0], np.cumsum(nsel)[:-1]])
    p0 = cells.lq_first[idx][None, :] + a_arr * cells.g_first[idx][None, :]
    p1 = cells.lq_last[idx][None, :] + a_arr * cells.g_last[idx][None, :]
    pb = np.maximum(p0, p1)
    pk = np.repeat(np.maximum.reduceat(pb, sstart, axis=1), nsel, axis=1)
    at = np.repeat(
        np.minimum.reduceat(np.where(pb >= pk, rows[None, :], idx.size), sstart, axis=1), nsel, axis=1
    )
    out: Array = np.where(np.abs(rows[None, :] - at) <= 1, 0.0, np.maximum(pk - pb, 0.0))
    return out


def block_width(cells: Cells, idx: Array, nsel: Array, ch: Array, ctx: Ctx) -> Array:
    """Target bin width (cells) on each selected block, for one chunk of orders.

    For order α the width satisfies (α·g'·w)³/48 ≲ ρ·log f (large log f) or the φ-form analogue
    (small log f), relaxed on blocks D nats below the tilted peak of α (allowed slack ×e^{D/2},
    with α·g'·w ≤ 1 + D/3); the minimum over the chunk's orders. Only tightness depends on it.
    """
    seg = cells.blk_seg[idx]
    cc = cells.c[seg].astype(float)
    t = cells.t_blk[idx]
    umax = np.maximum(np.abs(cells.u_first[idx]), np.abs(cells.u_last[idx]))
    gp = 4.0 * t / (1.0 - (t * umax) ** 2)  # max of d log R/dx on the block
    w = np.maximum(0.5 * np.sqrt(cc + 1.0), 1.0)
    lcap = log_cap_f(ch, ctx)
    a_all = ch[:, None]
    lf_all = lf_est(a_all, cc[None, :], ctx, lcap[:, None])  # (orders, blocks)
    small = lf_all < 1.0
    if small.any():
        w_small = np.cbrt(
            RHO_X * (a_all - 1.0) * (cc + 1.0)[None, :] / (gp[None, :] * (a_all * a_all / 6.0 + 0.25))
        )
        w = np.minimum(w, np.where(small, w_small, np.inf).min(axis=0))
    keep = ~small.all(axis=1)
    if keep.any():
        a_arr = a_all[keep]
        lf_arr = lf_all[keep]
        dd = _peak_distance(cells, idx, nsel, a_arr)
        base = 24.0 * RHO_X * np.maximum(lf_arr, 1.0)
        kappa = np.maximum(
            np.minimum(np.cbrt(base * np.exp(np.minimum(dd, 600.0) / 2.0)), 1.0 + dd / 3.0), np.cbrt(base)
        )
        wb = kappa / (a_arr * gp[None, :])
        w = np.minimum(w, np.where(lf_arr >= 1.0, wb, np.inf).min(axis=0))
    return w


def _fine_bins(cells: Cells, idx: Array, seg: Array, wpow: Array) -> list[XBins]:
    """Blocks cut into equal sub-bins of width 1, 2, 4, 8 or 16 cells."""
    parts: list[XBins] = []
    for width in (1, 2, 4, 8, 16):
        sel = np.flatnonzero(wpow == width)
        if sel.size == 0:
            continue
        b = idx[sel]
        lq3 = cells.lq[b].reshape(sel.size, BLK // width, width)
        u3 = cells.u[b].reshape(sel.size, BLK // width, width)
        g3 = cells.g[b].reshape(sel.size, BLK // width, width)
        lm, ub, var = sub_stats(lq3, u3)
        ok = np.isfinite(lm).ravel()
        parts.append(
            XBins(
                lm.ravel()[ok],
                ub.ravel()[ok],
                var.ravel()[ok],
                u3[..., 0].ravel()[ok],
                u3[..., -1].ravel()[ok],
                g3[..., -1].ravel()[ok],
                np.repeat(seg[sel], BLK // width)[ok],
            )
        )
    return parts


def _coarse_bins(cells: Cells, idx: Array, seg: Array, w: Array, coarse: Array) -> XBins:
    """Runs of consecutive whole blocks of one point, ≤ w/32 blocks per bin (parallel-axis formula
    for the variance)."""
    pos = coarse
    step = 1.0 / np.maximum(np.floor(w[pos] / BLK), 1.0)
    cum = np.cumsum(step) - step
    kb = np.floor(cum + 1e-9)
    new = np.ones(pos.size, dtype=bool)
    new[1:] = (kb[1:] != kb[:-1]) | (pos[1:] != pos[:-1] + 1) | (seg[pos[1:]] != seg[pos[:-1]])
    st = np.flatnonzero(new)
    b = idx[pos]
    blm, bu, bv = cells.b_lm[b], cells.b_u[b], cells.b_v[b]
    en = np.append(st[1:], pos.size)
    sz = en - st
    mx = np.maximum.reduceat(blm, st)
    wt = np.exp(blm - np.repeat(mx, sz))
    sw = np.add.reduceat(wt, st)
    ub = np.add.reduceat(wt * bu, st) / sw
    d = bu - np.repeat(ub, sz)
    var = np.add.reduceat(wt * (bv + d * d), st) / sw
    return XBins(
        mx + np.log(sw),
        ub,
        var,
        cells.u_first[b[st]],
        cells.u_last[b[en - 1]],
        cells.g_last[b[en - 1]],
        seg[pos[st]],
    )


def chunk_bins(cells: Cells, idx: Array, nsel: Array, ch: Array, ctx: Ctx, exact: bool) -> XBins:
    """Bins of one chunk, grouped by point (:class:`XBins`).

    A block whose target width is < 32 is cut into equal sub-bins of a power-of-two width; runs
    of blocks with wider targets are merged. ``exact``: every cell is a bin (V = None).
    """
    seg = cells.blk_seg[idx]
    if exact:
        lm = cells.lq[idx].ravel()
        keep = np.isfinite(lm)
        u = cells.u[idx].ravel()[keep]
        return XBins(lm[keep], u, None, u, u, cells.g[idx].ravel()[keep], np.repeat(seg, BLK)[keep])
    w = block_width(cells, idx, nsel, ch, ctx)
    wpow = np.where(w >= BLK, BLK, 2 ** np.floor(np.log2(np.maximum(w, 1.0))).astype(np.int64))
    parts = _fine_bins(cells, idx, seg, wpow)
    coarse = np.flatnonzero(wpow == BLK)
    if coarse.size:
        parts.append(_coarse_bins(cells, idx, seg, w, coarse))
    cat = [np.concatenate([p[i] for p in parts]) for i in range(len(XBins._fields))]
    order = np.argsort(cat[-1], kind="stable")
    return XBins(*(v[order] for v in cat))


def main_sums(
    lm: Array,
    gbar: Array,
    nb_seg: Array,
    alphas: Array,
    phi: bool,
    tay: tuple[Array, Array, Array] | None = None,
) -> Array:
    """log Σ_b [m_b·(h or φ)(ū_b) + Taylor_b] per (point, order), dense over (orders × bins)
    in column batches of whole points. ``tay`` = (l_t0, t·u_b, g(u_b)) or None."""
    n_seg = nb_seg.size
    a = alphas[:, None]
    la = np.log(a)
    res = np.empty((n_seg, alphas.size))
    cols_per = max(1, _PAIR_BATCH // max(alphas.size, 1))
    csum = np.cumsum(nb_seg)
    seg = 0
    while seg < n_seg:
        b0 = csum[seg] - nb_seg[seg]
        stop = int(np.searchsorted(csum, b0 + cols_per, side="right"))
        stop = min(max(stop, seg + 1), n_seg)
        b1 = csum[stop - 1]
        gst = np.concatenate([[0], np.cumsum(nb_seg[seg:stop])[:-1]])
        if tay is None:  # every bin a single cell (exact mode): the fused per-point sums
            res[seg:stop] = cell_logsums(lm[b0:b1], gbar[b0:b1], gst, alphas, phi)
            seg = stop
            continue
        if phi:
            main = lm[None, b0:b1] + log_phi(a, gbar[None, b0:b1])
        else:
            main = lm[None, b0:b1] + a * gbar[None, b0:b1]
        l_t0, tub, g_b = tay
        # ½·m·V·sup h'' ≤ ½mV·4t²/(1−t²u²max)²·α(α + t·u_b)·h(u_b)
        tt = (l_t0[None, b0:b1] + la + np.log(a + tub[None, b0:b1])) + a * g_b[None, b0:b1]
        res[seg:stop] = segment_logsumexp((main, tt), gst, axis=1).T
        seg = stop
    return res


def _taylor_terms(
    c: Array, lm: Array, var: Array | None, u_a: Array, u_b: Array, g_b: Array, nb_seg: Array, ctx: Ctx
) -> tuple[tuple[Array, Array, Array] | None, Array]:
    """(Taylor remainder terms, log J per point) of the bins (module docstring); (None, −inf) when
    every bin is a single cell."""
    n_seg = nb_seg.size
    l_j_seg = np.full(n_seg, -np.inf)
    if var is None or not np.any(var > 0):
        return None, l_j_seg
    tb = np.repeat(ctx.s / (c.astype(float) + 1.0), nb_seg)
    n1b = np.repeat(c.astype(float) + 1.0, nb_seg)
    with np.errstate(divide="ignore"):
        lhalfv = np.log(0.5 * var)
        l4t2 = np.log(4.0 * tb * tb)
        l_t0 = lhalfv + l4t2 - 2.0 * l1m_sq(n1b, np.maximum(np.abs(u_a), np.abs(u_b)), ctx) + lm
        l_j = lhalfv + l4t2 - 3.0 * l1m(n1b, u_a, ctx.w, ctx.s) + lm
    return (l_t0, tb * u_b, g_b), segment_logsumexp(l_j, np.concatenate([[0], np.cumsum(nb_seg)[:-1]]))


def eval_cells_chunk(
    c: Array,
    cells: Cells,
    xl_k: Array,
    xh_k: Array,
    ch: Array,
    ctx: Ctx,
    exact: bool,
    ends: tuple[Array, Array, Array] | None = None,
) -> Array:
    """Upper bounds on log(f_α(c) − 1) for one chunk of orders from the cells in [xl_k, xh_k]:
    the h-form where log f is not small, else (or where the h-form gives f < e^{1e-3}) the φ-form
    (module docstring), plus the window tails."""
    idx, e_lo, e_hi, nsel = cells.select(xl_k, xh_k)
    y_e = None
    if ends is not None:
        xh_chunk, ye_chunk, ye_cells = ends
        y_e = np.where(e_hi >= xh_chunk, ye_chunk, ye_cells)
    t_lo, t_hi, ltau = tails(c, e_lo, e_hi, ch, ctx, y_e)
    lm, ubar, var, u_a, u_b, g_b, bin_seg = chunk_bins(cells, idx, nsel, ch, ctx, exact)
    nb_seg = np.bincount(bin_seg, minlength=c.size)
    gbar = log_ratio(np.repeat(c.astype(float) + 1.0, nb_seg), ubar, ctx)
    tay, l_j_seg = _taylor_terms(c, lm, var, u_a, u_b, g_b, nb_seg, ctx)
    res = np.empty((c.size, ch.size))
    phi_rows = lf_est(ch, float(c.max()), ctx, log_cap_f(ch, ctx)) < 2e-3
    h_rows = np.flatnonzero(~phi_rows)
    if h_rows.size:
        # h-form: f ≤ Σ_b [m_b h(ū_b) + ½ m_b V_b sup h''] + tails
        lf = logsumexp_many(
            main_sums(lm, gbar, nb_seg, ch[h_rows], False, tay), t_lo[:, h_rows], t_hi[:, h_rows]
        )
        res[:, h_rows] = log_expm1(lf)
        redo = np.any(lf < 1e-3, axis=0)  # too close to 1 for this form: use the φ-form
        phi_rows[h_rows[redo]] = True
    p_rows = np.flatnonzero(phi_rows)
    if p_rows.size:
        # φ-form: f − 1 ≤ Σ_b m_b φ(ū_b) + Taylor + (α−1)τ + tails − α·J
        a = ch[p_rows][None, :]
        with np.errstate(divide="ignore"):
            lt = np.log(a - 1.0) + ltau[:, None]
        s_plus = logsumexp_many(
            main_sums(lm, gbar, nb_seg, ch[p_rows], True, tay), t_lo[:, p_rows], t_hi[:, p_rows], lt
        )
        s_minus = np.log(a) + l_j_seg[:, None]
        with np.errstate(invalid="ignore", over="ignore"):
            dif = s_minus - s_plus
            res[:, p_rows] = np.where(dif < -1e-3, s_plus + np.log1p(-np.exp(np.minimum(dif, -1e-3))), s_plus)
    return res


def eval_cells(c: Array, chunks: list[Array], ctx: Ctx, exact: bool) -> Array:
    """Upper bounds on log(f_α(c) − 1) for every c and every order of ``chunks`` (cell path); one
    cell build shared by the chunks, each chunk reading its own window."""
    a_cells = np.concatenate(chunks)
    x_l, x_h, y_e = windows(c, float(a_cells.min()), float(a_cells.max()), ctx, exact)
    cells = Cells(c, x_l, x_h, ctx, exact)
    out = []
    for ch in chunks:
        xl_k, xh_k, ye_k = (
            windows(c, float(ch[0]), float(ch[-1]), ctx, exact) if len(chunks) > 1 else (x_l, x_h, y_e)
        )
        # the upper tail starts at e_hi ≥ xh_k (checked with ye_k) or at the cells' own x_h
        # (checked with y_e, at a larger order: the same check holds for smaller ones)
        out.append(eval_cells_chunk(c, cells, xl_k, xh_k, ch, ctx, exact, (xh_k, ye_k, y_e)))
    return np.hstack(out)
