"""Reductions of the clone histogram over contiguous groups (:mod:`accountant.clones.histogram`): runs of
consecutive cells of one (bin, point), reduced before they are scattered into the bins, and
groups of consecutive bins merged into one (:meth:`.bins.Bins.coarse`). Max and min are
exact in any order; the sums of a merge stay scatter-adds (``np.bincount``) in the bins' order,
so grouping by runs gives the histogram that grouping by a sort gives, bit for bit."""

from __future__ import annotations

import numpy as np

from ..types import Array


class Runs:
    """Runs of equal (key, point) among consecutive cells (g is monotone in x within a point),
    reduced first when they are long enough to pay for it (else every cell is its own run)."""

    def __init__(self, key: Array, seg: Array) -> None:
        brk = np.flatnonzero((key[1:] != key[:-1]) | (seg[1:] != seg[:-1])) + 1
        self.reduced = bool(8 * brk.size < key.size)
        if self.reduced:
            self.starts = np.concatenate([[0], brk])
            self.sizes = np.diff(np.append(self.starts, key.size))
            self.key, self.seg = key[self.starts], seg[self.starts]
        else:
            self.key, self.seg = key, seg

    def reduce(self, ufunc: np.ufunc, values: Array) -> Array:
        """Per run, ``ufunc`` reduced over its cells."""
        out: Array = ufunc.reduceat(values, self.starts) if self.reduced else values
        return out

    def expand(self, per_run: Array) -> Array:
        """A per-run value repeated for every cell of its run."""
        return np.repeat(per_run, self.sizes) if self.reduced else per_run


def group_runs(gkey: Array) -> tuple[Array, Array, Array | None]:
    """The distinct merged keys, each bin's group and, when every group is one run of
    consecutive bins (bins are stored positive g first, each sign by ascending key, and merging
    keeps that order), the first bin of each group (else None: the groups of a sort)."""
    brk = np.flatnonzero(gkey[1:] != gkey[:-1]) + 1
    st = np.concatenate([[0], brk])
    uk = gkey[st]
    par = uk & 1
    if np.all((uk[1:] > uk[:-1]) | (par[1:] != par[:-1])) and np.all(np.diff(par) >= 0):
        grp = np.repeat(np.arange(st.size), np.diff(np.append(st, gkey.size)))
        return uk, grp, st
    uk, grp = np.unique(gkey, return_inverse=True)
    return uk, grp, None


def reduce_groups(ufunc: np.ufunc, values: Array, grp: Array, st: Array | None, k: int, init: float) -> Array:
    """``ufunc`` (max or min: exact in any order) over each group of :func:`group_runs`."""
    if st is not None:
        out: Array = ufunc.reduceat(values, st)
        return out
    res = np.full(k, init)
    ufunc.at(res, grp, values)
    return res
