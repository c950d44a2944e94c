"""Stage 4: the compiled kernels (optional: numba; off unless enabled) — the switch, and the glue
between the numpy stages and the numba loops of this package's modules.

The histogram of :func:`accountant.clones.grid.cells.hist_cells` followed by
:class:`accountant.clones.histogram.bins.Bins`, built in one pass over the cells
(:mod:`.histogram_build`): per cell (point j, x in its window, m = c_j + 1, z = s·(2x − m)/m) the
weight e^{lw_j}·b_m(x)·(1 − z), with b_m(x) = e^{anchor}·r from Loader's pmf at the first cell
of each block of 256 (computed here with numpy) and r the product of the exact ratios (the numpy
path sums their logs over blocks of 32: the same to ≲ 6e-14 relative); g = log((1 + z)/(1 − z))
and 1 − z per segment of cells from one log (a series in the cell offset, to ≲ 12 ulps; the
numpy path's log1p: ≲ 3); the bin of :func:`accountant.clones.histogram.bins._bin_keys` (the
analytic index checked against the edges); per key the extreme values of g and the sums of the
weights, of weight·g and of the right-end weights, each relative to a power of two per key. So no
certificate changes: the histogram it returns is the one numpy builds up to the cells' g (a cell
on a bin edge may land in the neighbouring bin; either histogram is valid) and the rounding of
non-negative sums (relative error ≲ cells·2⁻⁵³ either way), far inside the 1e-11 outward
rounding of the result; mass is lost only where it underflows relative to its own bin's
(:mod:`.histogram_build` states and proves each claim). Likewise the per-order bin sums
(:func:`hist_sum`, :mod:`.histogram_sum`: the pruning and the chord/Jensen/max bounds of
:func:`accountant.clones.histogram.bins.hist_sum`, one order and one bin at a time, each bound
formed in linear space from the formulas of log φ without their logs and summed relative to the
largest pruning bound, normal numbers only, where that is safe, else in log space as the numpy
path does; :func:`.histogram_sum.hist_sum` states the precision: the same bounds to rounding).
The other loops: the split of the boxes (:mod:`.boxes`), the C-mass block sums, the exact
engine's per-point sums and the tilted-peak search (:mod:`.sums`).

Off by default: set the environment variable ``ACCOUNTANT_NUMBA=1`` with numba installed
(``pip install -e '.[fast]'`` in a clone), or call :func:`use`
(:func:`accountant.clones.precompile` compiles every kernel at once, as the container image does
at build time). Cost: numba's import (per process, at the first clone histogram) and, once per
machine, the compilation (the code is then cached on disk, ``cache=True``, next to these files or
in numba's user cache directory); timings: ``bench/results_cold.md``. Without it the numpy path
is used: the same bounds.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..types import Array, BinStats, Ctx, KeyStats, Layout

#: The compiled kernels: (g_range, cells_stats) of :mod:`.histogram_build`, hist_sum of
#: :mod:`.histogram_sum`.
Kernels = tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]

_KERNELS: Kernels | None = None
_TRIED = False


def available() -> bool:
    """Whether the compiled kernels are in use (enabled and numba importable)."""
    return _kernels() is not None


def use(enabled: bool) -> bool:
    """Turn the compiled kernels on or off for this process (returns whether they are on: False
    when numba is not installed)."""
    global _KERNELS, _TRIED
    _TRIED = True
    _KERNELS = _load() if enabled else None
    _hook_tilt()
    return _KERNELS is not None


def _hook_tilt() -> None:
    """Hand :func:`accountant.clones.closed_form.tilt` the compiled grid search (the same index as its
    numpy search) while the kernels are on, and take it back when they are off."""
    from .. import closed_form

    if _KERNELS is None:
        closed_form.set_tilt_search(None)
    else:
        from .sums import tilt_argmax

        closed_form.set_tilt_search(tilt_argmax)


def sums_if_on() -> Any:
    """The compiled sums (:mod:`.sums`) when the compiled kernels are on (:func:`available`),
    else None."""
    if not available():
        return None
    from . import sums

    return sums


def _kernels() -> Kernels | None:
    global _KERNELS, _TRIED
    if _TRIED:
        return _KERNELS
    _TRIED = True
    if os.environ.get("ACCOUNTANT_NUMBA", "").lower() in ("1", "true", "yes", "on"):
        _KERNELS = _load()
        _hook_tilt()
    return _KERNELS


def _required() -> Kernels:
    kern = _kernels()
    if kern is None:
        raise RuntimeError("the compiled clone kernels are not enabled (see accountant.clones.compiled.use)")
    return kern


def _load() -> Kernels | None:
    try:
        import numba  # noqa: F401
    except ImportError:
        return None
    return _compile()


def _compile() -> Kernels:
    from .histogram_build import cells_stats, g_range
    from .histogram_sum import hist_sum

    return g_range, cells_stats, hist_sum


def hist_stats(
    c: Array,
    x_l: Array,
    x_h: Array,
    lw: Array,
    shift_low: Array,
    ctx: Ctx,
    edges_fn: Callable[[float, float], Layout],
    log_r: float,
) -> KeyStats | None:
    """Per-key histogram statistics of the cells of points c (windows [x_l, x_h], log-weights lw)
    with the compiled kernels: (LM, LML, lo, hi, mean, keys, layout) for the keys with positive
    mass (the arguments of ``Bins._finish``), or None when no cell is valid. ``edges_fn(gmin,
    gmax)`` gives the bin edges, the first uniform edge and the uniform width. The kernel keeps
    each key's sums relative to 2^{scale} (:mod:`.histogram_build`): LM = scale·ln 2 + log(sum),
    with ln 2 in two parts (the first product exact)."""
    from ..._binomial import log_binom_pmf
    from .histogram_build import BLOCK, LN2_HI, LN2_LO, NO_SCALE

    g_range, cells_stats, _ = _required()
    lwf = lw.astype(float)
    gmin, gmax = g_range(c.astype(float), x_l, x_h, lwf, ctx.s, ctx.w)
    if not gmax > 0.0:
        return None
    ed, ksw, dg = edges_fn(gmin, gmax)
    ncell = x_h - x_l + 1
    nblk = (ncell + BLOCK - 1) // BLOCK
    blk_first = np.concatenate([[0], np.cumsum(nblk)[:-1]])
    nb_tot = int(nblk.sum())
    seg = np.repeat(np.arange(c.size), nblk)
    x0 = (x_l[seg] + BLOCK * (np.arange(nb_tot) - blk_first[seg])).astype(float)
    mf = (c + 1).astype(float)
    blk_len = np.minimum(BLOCK, x_h[seg] - x0 + 1).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        anchor = log_binom_pmf(x0, mf[seg], 0.5, 0.5)
    tab = np.zeros((2 * (ed.size - 1), 8))
    tab[:, 0] = tab[:, 3] = NO_SCALE
    tab[:, 5] = np.inf
    tab[:, 6] = -np.inf
    shift = np.clip(shift_low, -700.0, 700.0).astype(float)  # per point (as the numpy path)
    lay = (int(ksw), float(dg), float(gmin), float(log_r))
    if cells_stats(seg, x0, anchor, blk_len, mf, lwf, shift, ctx.s, ctx.w, ed, lay, tab):
        raise FloatingPointError("histogram bin assignment failed")
    kk = np.flatnonzero(tab[:, 1] > 0)
    if kk.size == 0:
        return None
    t = tab[kk]
    LM = (t[:, 0] * LN2_HI + np.log(t[:, 1])) + t[:, 0] * LN2_LO
    with np.errstate(divide="ignore", invalid="ignore"):
        LML = (t[:, 3] * LN2_HI + np.log(t[:, 4])) + t[:, 3] * LN2_LO
    return KeyStats(LM, LML, t[:, 5], t[:, 6], t[:, 2] / t[:, 1], kk, Layout(ed, ksw, dg))


def _bin_arrays(bins: BinStats) -> tuple[tuple[Array, ...], float]:
    """The per-bin arrays of the compiled per-order sum (``histogram_sum.BinArrays``) and
    LMmax = max LM, computed once per histogram (kept as long as the histogram lives): the log
    chord weights (nan → −inf: bins of one value) and the linear ones, m = e^{LM − LMmax} and
    rho = e^{LML − LM} (0, subnormal or inf where they leave the range: the kernel then uses the
    log-space form for that bin)."""
    got = _BIN_ARRAYS.get(bins)
    if got is not None:
        return got
    lo, hi, mu, single = bins.lo, bins.hi, bins.mu, bins.single
    width = np.where(single, 1.0, hi - lo)
    lm_max = float(np.max(bins.LM))
    with np.errstate(divide="ignore", invalid="ignore", under="ignore", over="ignore"):
        wl = np.where(np.isnan(bins.wl), -np.inf, bins.wl)
        wh = np.where(np.isnan(bins.wh), -np.inf, bins.wh)
        wll = (hi - mu) / width
        whl = (mu - lo) / width
        m = np.exp(bins.LM - lm_max)
        rho = np.exp(bins.LML - bins.LM)
    arrs = (bins.LM, bins.LML, lo, hi, mu, single, wl, wh, bins.gm, wll, whl, m, rho)
    out = (tuple(np.ascontiguousarray(v) for v in arrs), lm_max)
    _BIN_ARRAYS[bins] = out
    return out


_BIN_ARRAYS: weakref.WeakKeyDictionary[BinStats, tuple[tuple[Array, ...], float]] = (
    weakref.WeakKeyDictionary()
)


def hist_sum(bins: BinStats, alphas: Array, prune: float) -> tuple[Array, Array]:
    """:func:`accountant.clones.histogram.bins.hist_sum` with the compiled kernel (same bounds)."""
    kern = _required()[2]
    a = np.ascontiguousarray(alphas, dtype=float)
    up = np.empty(a.size)
    low = np.empty(a.size)
    arrs, lm_max = _bin_arrays(bins)
    kern(a, arrs, lm_max, bins.p1, bins.p2, int(bins.npos), float(prune), up, low)
    return up, low
