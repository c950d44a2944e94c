"""The binomial cells of the clone bound, built once for every engine (bounds.md §8).

For the points c (one segment each) and windows [x_lo, x_hi], every cell x carries
Q_c(x) and g = log R_c(x). With m = c + 1 and v = u/m, u = 2x − m:

    Q_c(x) = b_m(x)·(1 − s·v),   g = log((1 + s·v)/(1 − s·v)),

(b_m the Bin(m, ½) pmf). While |s·v| ≤ ½, g = log1p(2sv/(1 − sv)) and log Q uses log1p(−s·v)
(full relative accuracy for tiny s·v, e.g. ε0 ≈ 1e-6: log(1 − s·v) of a rounded 1 − s·v would
lose it; as a linear weight factor, 1 − s·v is exact to an ulp); beyond it 1 ± s·v = (1 ± v) ∓ v·(1 − s)
without cancellation (s = tanh(ε0/2) may round to 1) and g = log of their ratio. log b_m is
accumulated from the exact ratios log((m − x + 1)/x) within blocks of 32 cells, each block
anchored at Loader's pmf (absolute error ≲ 1e-14). The block layout (blocks × 32, padding cells
repeating the last cell's x) serves the adaptive engine's bins (:class:`CellBlocks`);
:func:`hist_cells` gives the histogram engine the same cells as flat arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..._binomial import log_binom_pmf
from ..types import Array, Ctx

BLK = 32


class Blocks(NamedTuple):
    """The block layout of the cells of every point and, per cell (blocks × BLK arrays): x, m,
    the padding mask, log b_m(x), 1 − s·v, g and s·v (module docstring), and where |s·v| > ½."""

    nblk: Array  # blocks per point
    blk_first: Array  # first block of each point
    blk_seg: Array  # point of each block
    blk_len: Array  # real cells per block
    xs: Array
    m2: Array  # m = c + 1 per block (a column)
    pad: Array
    lb: Array
    den: Array
    g: Array
    sv: Array
    far: Array


class FlatCells(NamedTuple):
    """The cells of every point as flat arrays, in x order within each point: log W_j + log b_m(x)
    (−inf on padding), 1 − s·v, g and the point j; the weight W_j·Q_{c_j}(x) is e^{lbw}·den."""

    lbw: Array
    den: Array
    g: Array
    seg: Array


def _blocks(c: Array, x_l: Array, x_h: Array, ctx: Ctx) -> Blocks:
    """The block layout and, per cell: log b_m(x), 1 − s·v, g (module docstring), the padding mask
    and x."""
    ncell = x_h - x_l + 1
    nblk = (ncell + BLK - 1) // BLK
    blk_first = np.concatenate([[0], np.cumsum(nblk)[:-1]])
    nb_tot = int(nblk.sum())
    seg = np.repeat(np.arange(c.size), nblk)
    x0 = (x_l[seg] + BLK * (np.arange(nb_tot) - blk_first[seg])).astype(float)
    mf = (c[seg] + 1).astype(float)
    xmax = x_h[seg].astype(float)
    blk_len = np.minimum(BLK, xmax - x0 + 1).astype(np.int64)
    xs = x0[:, None] + np.arange(BLK, dtype=float)[None, :]
    pad = xs > xmax[:, None]
    np.minimum(xs, xmax[:, None], out=xs)
    m2 = mf[:, None]
    # (in place where possible: these arrays hold up to ~10⁶ cells)
    with np.errstate(divide="ignore", invalid="ignore"):
        lb = m2 - xs
        lb += 1.0
        lb /= xs
        np.log(lb, out=lb)  # log b(x)/b(x−1) = log((m − x + 1)/x) …
        lb[:, 0] = log_binom_pmf(x0, mf, 0.5, 0.5)  # … after the block's anchor
        for j in range(1, BLK):  # cumulative sum along the block (column by column: vectorised over blocks)
            lb[:, j] += lb[:, j - 1]
        v = 2.0 * xs
        v -= m2
        v /= m2
        sv = ctx.s * v
        den = 1.0 - sv
        g = 2.0 * sv
        g /= den
        np.log1p(g, out=g)
        far = np.abs(sv) > 0.5
        if far.any():  # 1 ± s·v = (1 ± v) ∓ v·(1 − s)
            vf, xf, mf2 = v[far], xs[far], np.broadcast_to(m2, xs.shape)[far]
            den_f = 2.0 * (mf2 - xf) / mf2 + vf * ctx.w
            den[far] = den_f
            g[far] = np.log((2.0 * xf / mf2 - vf * ctx.w) / den_f)
    return Blocks(nblk, blk_first, seg, blk_len, xs, m2, pad, lb, den, g, sv, far)


class CellBlocks:
    """Cells x ∈ [x_l, x_h] of every point c, in blocks of ``BLK`` (see the module docstring).

    Attributes: ``lq`` (log Q, −inf on padding), ``g``, ``u`` (blocks × BLK), ``pad`` (mask),
    ``blk_seg`` (point of each block), ``blk_first`` (first block of each point), ``blk_len``
    (real cells per block), ``nblk`` (blocks per point)."""

    def __init__(self, c: Array, x_l: Array, x_h: Array, ctx: Ctx) -> None:
        b = _blocks(c, x_l, x_h, ctx)
        self.nblk, self.blk_first, self.blk_seg, self.blk_len = b.nblk, b.blk_first, b.blk_seg, b.blk_len
        self.pad, self.g = b.pad, b.g
        with np.errstate(divide="ignore", invalid="ignore"):
            lm = np.log1p(-b.sv)  # log(1 − s·v) to full relative accuracy when s·v is tiny …
            lm[b.far] = np.log(b.den[b.far])  # … and from the cancellation-free 1 − s·v beyond ½
        lq = b.lb + lm
        lq[self.pad] = -np.inf
        self.lq = lq
        self.u = 2.0 * b.xs - b.m2


def hist_cells(c: Array, x_l: Array, x_h: Array, lw: Array, ctx: Ctx) -> FlatCells:
    """The cells of every point as flat arrays (:class:`FlatCells`), with the log-weights ``lw``
    of the points."""
    b = _blocks(c, x_l, x_h, ctx)
    lbw = b.lb + lw[b.blk_seg][:, None]
    lbw[b.pad] = -np.inf
    return FlatCells(lbw.ravel(), b.den.ravel(), b.g.ravel(), np.repeat(b.blk_seg, BLK))
