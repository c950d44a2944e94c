"""Compiled sums of the clone engines besides the histogram's (imported only when numba is
installed and the compiled kernels are on, :func:`accountant.clones.compiled.available`; module-level
functions so that numba caches them on disk).

* :func:`pmf_block_sums` — the blocks of binomial pmf terms of :mod:`accountant.clones.grid.cmass`;
* :func:`cell_logsums_phi` — the per-(point, order) φ-form sums over the cells of the exact
  engine (:mod:`accountant.clones.exact.cellsums`);
* :func:`tilt_argmax` — the grid search of :func:`accountant.clones.closed_form.tilt`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
from numba import njit

from ..types import Array
from .histogram_sum import _em1mx, _lae, log_phi, series_rest

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(fn: _F) -> _F:
    """numba's ``njit`` (on-disk cache, no GIL, numpy's floating-point error model)."""
    return cast(_F, njit(cache=True, nogil=True, error_model="numpy")(fn))


@_jit
def pmf_block_sums(x0: Array, last: Array, t0: Array, big_n: float, p: float, q1: float, out: Array) -> None:
    """Per block b: Σ_{k = x0[b]}^{last[b]} t_k with t_{x0} = t0[b] and t_k = t_{k−1}·(N − k + 1)·p/(k·q1)
    (the exact pmf ratios): the numpy path's cumulative products, in the same order."""
    for b in range(x0.size):
        t = t0[b]
        s = t
        k = x0[b] + 1.0
        while k <= last[b]:
            t *= (big_n - k + 1.0) * p / (k * q1)
            s += t
            k += 1.0
        out[b] = s


# ----------------------------------------------------------------------------------------------
# per (point, order): log Σ_cells e^{lm}·φ over every cell of the point (the exact engine's
# φ-form sums, accountant.clones.exact.cellsums)
# ----------------------------------------------------------------------------------------------

_Y_MAX = 600.0  # the linear φ-form only where e^{α·g} stays far from overflow
_S_MIN = 1e-280  # … and where the scaled sum stays far from underflow


@_jit
def _phi_lin(a: float, x: float, em1x: float, ex: float, h: float, epx: float) -> float:
    """φ_a(e^x) = e^{a·x} − 1 − a(e^x − 1) itself, for a > 1, by the branches of
    :func:`accountant._numerics.log_phi` (the same formulas without their outer log); em1x, ex,
    h, epx = e^x − 1 − x, e^x − 1, (log_phi's h(x)) and e^x of the cell."""
    y = a * x
    if abs(y) <= 0.05:
        return 0.5 * a * (a - 1.0) * (x * x) * (1.0 + series_rest(a, x))
    if a < 2.0:
        d = a - 1.0
        return d * h + epx * _em1mx(d * x)
    if abs(y) <= 1.0:
        return _em1mx(y) - a * em1x
    if y > 1.0:
        return math.exp(y) - (1.0 + a * ex)
    return math.expm1(y) - a * ex


@_jit
def _phi_cells(lm: Array, g: Array, b0: int, b1: int, scr: Array) -> float:
    """Per cell of [b0, b1): e^{lm − max lm}, e^x − 1 − x, e^x − 1, h(x), e^x (x = g) into
    ``scr``; returns max lm."""
    m = -math.inf
    for b in range(b0, b1):
        m = max(m, lm[b])
    for b in range(b0, b1):
        x = g[b]
        i = b - b0
        scr[0, i] = math.exp(lm[b] - m)
        scr[1, i] = _em1mx(x)
        scr[2, i] = math.expm1(x)
        scr[3, i] = x * math.expm1(x) - _em1mx(x) if abs(x) < 1.0 else 1.0 + math.exp(x) * (x - 1.0)
        scr[4, i] = math.exp(x)
    return m


@_jit
def _phi_log_sum(lm: Array, g: Array, b0: int, b1: int, a: float) -> float:
    """log Σ_b e^{lm_b}·φ_a(e^{g_b}) in log space (log_phi per cell, a streaming log-sum-exp)."""
    mx, sm = -math.inf, 0.0
    for b in range(b0, b1):
        mx, sm = _lae(mx, sm, lm[b] + log_phi(a, g[b]))
    return mx + math.log(sm) if sm > 0.0 else -math.inf


@_jit
def cell_logsums_phi(lm: Array, g: Array, starts: Array, alphas: Array, out: Array) -> None:
    """out[j, k] = log Σ_{b ∈ point j} e^{lm_b}·φ_{α_k}(e^{g_b}) (α_k > 1): in linear space,
    e^{max lm}·Σ_b e^{lm_b − max lm}·φ (:func:`_phi_lin`: one exp or expm1 per term instead of
    log φ and an exp), where every weight e^{lm_b − max lm} ≥ e^{−700} and every α·g ≤ 600 and
    the scaled sum ≥ 1e-280 (so no term loses more than rounding); else in log space."""
    width = 0
    for j in range(starts.size - 1):
        width = max(width, starts[j + 1] - starts[j])
    scr = np.empty((5, max(width, 1)))
    for j in range(starts.size - 1):
        b0, b1 = starts[j], starts[j + 1]
        m = _phi_cells(lm, g, b0, b1, scr)
        lo, gmax = math.inf, -math.inf
        for b in range(b0, b1):
            lo = min(lo, lm[b] - m)
            gmax = max(gmax, g[b])
        for k in range(alphas.size):
            a = alphas[k]
            tot = 0.0
            if m > -math.inf and m < math.inf and lo >= -700.0 and a * gmax <= _Y_MAX:
                for b in range(b0, b1):
                    i = b - b0
                    tot += scr[0, i] * _phi_lin(a, g[b], scr[1, i], scr[2, i], scr[3, i], scr[4, i])
            out[j, k] = m + math.log(tot) if tot >= _S_MIN else _phi_log_sum(lm, g, b0, b1, a)


@_jit
def tilt_argmax(n1: Array, av: Array, h: Array, half_l: Array, at: Array, out: Array) -> None:
    """out[i, j] = argmax_g (−n1[j]·h[g] − half_l[g] + (2·av[i])·at[g]) (the first largest, as
    numpy's argmax): the same operations in the same order as the numpy expression of
    :func:`accountant.clones.closed_form.tilt`, so the same index, without its (grid × orders × points)
    temporaries."""
    for i in range(av.size):
        a2 = 2.0 * av[i]
        for j in range(n1.size):
            nn = -n1[j]
            best = -math.inf
            kbest = 0
            for g in range(h.size):
                v = nn * h[g] - half_l[g] + a2 * at[g]
                if v > best:
                    best = v
                    kbest = g
            out[i, j] = kbest
