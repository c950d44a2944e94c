"""The binomial cells of the clone bound, built once for every engine (bounds.md §8).

For the points c (one segment each) and windows [x_lo, x_hi], every cell x carries
log Q_c(x) and g = log R_c(x). With m = c + 1 and v = u/m, u = 2x − m:

    Q_c(x) = b_m(x)·(1 − s·v),   g = log(1 + s·v) − log(1 − s·v),

(b_m the Bin(m, ½) pmf) — log1p while |s·v| ≤ ½, and beyond it 1 ± s·v = (1 ± v) ∓ v·(1 − s)
without cancellation (s = tanh(ε0/2) may round to 1). log b_m is accumulated from the exact
ratios log((m − x + 1)/x) within blocks of 32 cells, each block anchored at Loader's pmf
(absolute error ≲ 1e-14). The block layout (blocks × 32, padding cells repeating the last
cell's x with log-mass −inf) serves the adaptive engine's bins directly; :func:`flat_cells`
gives the histogram engine the same cells as flat arrays.
"""

from __future__ import annotations

import numpy as np

from .._binomial import log_binom_pmf
from ._kernels import Ctx

BLK = 32


class CellBlocks:
    """Cells x ∈ [x_l, x_h] of every point c, in blocks of ``BLK`` (see the module docstring).

    Attributes: ``lq`` (log Q, −inf on padding), ``g``, ``u`` (blocks × BLK), ``pad`` (mask),
    ``blk_seg`` (point of each block), ``blk_first`` (first block of each point), ``blk_len``
    (real cells per block), ``nblk`` (blocks per point)."""

    def __init__(self, c: np.ndarray, x_l: np.ndarray, x_h: np.ndarray, ctx: Ctx):
        ncell = x_h - x_l + 1
        self.nblk = (ncell + BLK - 1) // BLK
        self.blk_first = np.concatenate([[0], np.cumsum(self.nblk)[:-1]])
        nb_tot = int(self.nblk.sum())
        seg = np.repeat(np.arange(c.size), self.nblk)
        self.blk_seg = seg
        x0 = (x_l[seg] + BLK * (np.arange(nb_tot) - self.blk_first[seg])).astype(float)
        mf = (c[seg] + 1).astype(float)
        xmax = x_h[seg].astype(float)
        self.blk_len = np.minimum(BLK, xmax - x0 + 1).astype(np.int64)
        xs = x0[:, None] + np.arange(BLK, dtype=float)[None, :]
        self.pad = xs > xmax[:, None]
        xs = np.minimum(xs, xmax[:, None])
        m2 = mf[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            lr = np.log((m2 - xs + 1.0) / xs)
            lr[:, 0] = 0.0
            lb = log_binom_pmf(x0, mf, 0.5, 0.5)[:, None] + np.cumsum(lr, axis=1)
            v = (2.0 * xs - m2) / m2
            sv = ctx.s * v
            lp = np.log1p(sv)  # log(1 + s·v): log1p keeps tiny s·v accurate (small ε0) …
            lm = np.log1p(-sv)  # log(1 − s·v)
            far = np.abs(sv) > 0.5  # … and near |s·v| = 1, 1 ± s·v = (1 ± v) ∓ v·(1 − s)
            if far.any():
                vf, xf, mf2 = v[far], xs[far], np.broadcast_to(m2, xs.shape)[far]
                lp[far] = np.log(2.0 * xf / mf2 - vf * ctx.w)
                lm[far] = np.log(2.0 * (mf2 - xf) / mf2 + vf * ctx.w)
        lq = lb + lm
        lq[self.pad] = -np.inf
        self.lq = lq
        self.g = lp - lm
        self.u = 2.0 * xs - m2


def flat_cells(c: np.ndarray, x_l: np.ndarray, x_h: np.ndarray, lw: np.ndarray, ctx: Ctx):
    """(lw_j + log Q_{c_j}(x), g, j) for every cell of every point with g ≠ 0 (ψ(0) = 0: the cell
    x = m/2 adds nothing to f − 1), in x order within each point."""
    cb = CellBlocks(c, x_l, x_h, ctx)
    lq = cb.lq + lw[cb.blk_seg][:, None]
    ok = ~cb.pad & np.isfinite(lq) & (cb.g != 0.0)
    segc = np.broadcast_to(cb.blk_seg[:, None], lq.shape)
    return lq[ok], cb.g[ok], segc[ok]
