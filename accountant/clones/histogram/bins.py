"""The histogram of the cells on g = log R and its per-order sums (step 3 of
:mod:`accountant.clones.histogram`): bin edges, the bins' statistics, their dyadic merging per
order, and the chord/Jensen/max bound of each bin."""

from __future__ import annotations

import math

import numpy as np

from ..._numerics import log_phi, segment_logsumexp
from .. import compiled
from ..types import PRECISION, Array, BinStats, Layout, Precision
from .runs import Runs, group_runs, reduce_groups

_R = PRECISION["any"].ratio  # geometric ratio of the g-bins near 0 (chord slack ≈ (R−1)²/4 relative)
DG = PRECISION["any"].dg  # widest g-bin (both: the default design's; a finer one: ``types.PRECISION``)
_MERGE_REL = 0.03  # merged bins (per order): width ≤ this·g in the uniform part …
_MERGE_ABS = 0.05  # … and ≤ this/α (chord slack ≲ (α·width)²/8 where ψ is exponential)
PRUNE = 45.0


def bin_edges(gmin: float, gmax: float, widest: float = DG, ratio: float = _R) -> Layout:
    """Bin edges on |g|: 0, gmin, then ×``ratio`` while the step is below dg, then steps of dg up
    to gmax, dg = min(``widest``, gmax/200) (finer when ε0 is small, where the largest orders
    would otherwise see few bins). Returns the edges, the index of the first uniform-part edge
    (geometric below it) and dg."""
    dg = min(widest, gmax / 200.0)
    lr = math.log(ratio)
    g_sw = dg / (ratio - 1.0)
    k = max(0, int(math.ceil(math.log(max(min(gmax, g_sw), gmin) / gmin) / lr)))
    geo = gmin * np.exp(lr * np.arange(k + 1))
    m = max(0, int(math.ceil((gmax - geo[-1]) / dg)))
    ed = np.concatenate([[0.0], geo, geo[-1] + dg * np.arange(1, m + 1)])
    ed[-1] = max(ed[-1], gmax)
    return Layout(ed, k + 1, dg)


class Bins(BinStats):
    """The histogram of the cells on g (order-independent): per non-empty bin the log-mass LM, the
    cells' extreme values [lo, hi] of g, the mean μ, and the log-mass under the right-end weights
    (lw + shift_low[seg], for the slack check).

    A cell's weight is e^{lw}·lin (lin ≥ 0, default 1); cells with lw = −inf, lin = 0 or g = 0
    (ψ(0) = 0) add nothing and are set aside. Consecutive cells of one point that share a bin (runs: g is
    monotone in x within a point) are reduced first when runs are long, then merged into the
    bins."""

    layout: Layout | None
    _cuts: dict[int, Bins]
    keys: Array

    def __init__(
        self,
        lw: Array,
        g: Array,
        seg: Array,
        shift_low: Array,
        lin: Array | None = None,
        precision: Precision = PRECISION["any"],
    ) -> None:
        valid = np.isfinite(lw) & (g != 0.0)
        if lin is not None:
            valid &= lin > 0.0
        key, nk, self.layout = _bin_keys(g, valid, precision)
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
        """The histogram from per-key statistics already reduced (:mod:`accountant.clones.compiled`)."""
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


def _bin_keys(g: Array, valid: Array, precision: Precision = PRECISION["any"]) -> tuple[Array, int, Layout]:
    """Bin key of every valid cell (2·bin + [g < 0], bins on |g| from :func:`bin_edges` with the
    widest bin and ratio of ``precision``; bin k covers
    (ed[k], ed[k+1]]), the extra last key for the others, and the number of keys. The analytic
    index is corrected against the edges themselves, so a value on an edge lands in the bin it
    bounds."""
    ag = np.abs(g)
    gmin = float(np.min(ag, where=valid, initial=np.inf))
    ed, ksw, dg = bin_edges(gmin, float(np.max(ag, where=valid, initial=0.0)), precision.dg, precision.ratio)
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
        idx[geo] = np.ceil(np.log(ag[geo] / gmin) / math.log(precision.ratio))
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
    return idx, 2 * nb + 1, Layout(ed, ksw, dg)


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
    lev = _merge_level(alphas, bins.layout.width)
    up = np.empty(alphas.size)
    low = np.empty(alphas.size)
    summ = (lambda b, a: compiled.hist_sum(b, a, PRUNE)) if compiled.available() else hist_sum
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
