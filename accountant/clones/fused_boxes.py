"""The compiled split of :func:`accountant.clones.boxes.box_cover` (imported only when numba is
installed and the compiled kernels are on, :func:`accountant.clones.fused.available`;
module-level functions so that numba caches them on disk).

The same decisions from the same values: per (point, side) run, the runs are split top-down
(a stack, left half first, so cell ranges and boxes come out sorted by point then x), and each
run is kept, left as cells or split by the test of the numpy path,
lw + log(b − a + 1) + log Q(x_q) + negl(g(x_g)) ≤ −λ, with log Q by Loader's binomial pmf
(:func:`accountant._binomial.log_binom_pmf`, the same operations in the same order, one element at
a time) and g by :func:`accountant.clones.kernels.log_ratio`'s formulas. A half inherits from its
parent the value at the end they share (x_q of the half on the Q-max side, x_g of the other): the
numpy path computes it again from the same integers, so only one log Q and one g are new per
split. The values agree with numpy's to the last bits of ``log``/``log1p`` (numba calls the C
library, numpy may use its own SIMD loops), so a run whose test lands within rounding of −λ may
be decided the other way; either decision is valid (the boxes' certificate does not depend on
the test, :mod:`.boxes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
from numba import njit

from .fused_kernels import log_phi
from .kernels import Array

_F = TypeVar("_F", bound=Callable[..., Any])

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_STACK = 128  # deeper than any split: a run halves until it is at most MIN_RUN ≥ 1 cells long


def _jit(fn: _F) -> _F:
    """numba's ``njit`` (on-disk cache, no GIL, numpy's floating-point error model)."""
    return cast(_F, njit(cache=True, nogil=True, error_model="numpy")(fn))


def _jit_inline(fn: _F) -> _F:
    """:func:`_jit` inlined into its callers."""
    return cast(_F, njit(cache=True, nogil=True, error_model="numpy", inline="always")(fn))


@_jit_inline
def _stirlerr(n: float, small: Array) -> float:
    """accountant._binomial._stirlerr at an integer n ≥ 1 (``small``: its values at n ≤ 15)."""
    if n <= 15.0:
        return float(small[int(n)])
    nn = n * n
    return (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * nn)) / nn) / nn) / nn) / n


@_jit_inline
def _bd0(x: float, m: float) -> float:
    """accountant._binomial._bd0 (x > 0)."""
    d = x - m
    v = d / (x + m)
    if abs(v) < 0.1:
        s = d * v
        ej = 2.0 * x * v
        v2 = v * v
        for j in range(1, 14):
            ej = ej * v2
            s = s + ej / (2 * j + 1)
        return s
    return x * math.log(x / m) + m - x


@_jit_inline
def _log_q(x: int, c: int, st_c: float, small: Array, eps0: float, log1pq: float, q: float) -> float:
    """accountant.clones.kernels.log_q_at at one cell 0 ≤ x ≤ c + 1 (st_c = stirlerr(c))."""
    top = x >= c + 1
    kb = float(c) if top else float(x)
    nb = float(c)
    if kb > 0.0 and kb < nb:
        nk = nb - kb
        h = nb * 0.5
        lb = (
            st_c
            - _stirlerr(kb, small)
            - _stirlerr(nk, small)
            - _bd0(kb, h)
            - _bd0(nk, h)
            + 0.5 * math.log(nb / (kb * nk))
            - _HALF_LOG_2PI
        )
    else:  # k = 0 or k = N: N·log ½ (log_binom_pmf's endpoint forms with p = q1 = ½)
        lb = nb * math.log(0.5)
    if top:
        return lb - log1pq + -eps0
    return lb - log1pq + math.log1p(q * kb / max(nb - kb + 1.0, 1.0))


@_jit_inline
def _l1m(n1: float, u: float, w: float, s: float) -> float:
    """accountant.clones.kernels.l1m at one value."""
    sv = s * (u / n1)
    if sv > 0.5:
        return math.log((n1 - u) + u * w) - math.log(n1)
    return math.log1p(-min(sv, 0.5))


@_jit_inline
def _g(x: int, c: int, w: float, s: float) -> float:
    """g(x) = log R at cell x of point c (accountant.clones.kernels.log_ratio)."""
    cf = float(c)
    n1 = cf + 1.0
    u = 2.0 * x - cf - 1.0
    return _l1m(n1, -u, w, s) - _l1m(n1, u, w, s)


@_jit_inline
def _grid_index(g: float, grid: Array) -> int:
    """numpy's searchsorted of g in ``grid`` (side "left" for g > 0: the first grid[i] ≥ g;
    side "right" minus one otherwise: the last grid[i] ≤ g), clipped to the grid: the grid
    point farther from 0 (:meth:`accountant.clones.boxes.Negligible.index`), by bisection."""
    lo = 0
    hi = grid.size
    if g > 0.0:
        while lo < hi:
            mid = (lo + hi) >> 1
            if grid[mid] < g:
                lo = mid + 1
            else:
                hi = mid
        return min(lo, grid.size - 1)
    while lo < hi:
        mid = (lo + hi) >> 1
        if grid[mid] <= g:
            lo = mid + 1
        else:
            hi = mid
    return max(lo - 1, 0)


@_jit_inline
def _negl(g: float, grid: Array, table: Array, done: Array, alphas: Array, levels: Array) -> float:
    """accountant.clones.boxes.Negligible.__call__ at one value; the table entry is computed on
    first use: the max over the orders of log ψ_α(grid point) − level (nan if any term is nan,
    as numpy's max)."""
    i = _grid_index(g, grid)
    if not done[i]:
        m = -math.inf
        for k in range(alphas.size):
            v = log_phi(alphas[k], grid[i]) - levels[k]
            if not v <= m:
                m = v
                if math.isnan(v):
                    break
        table[i] = m
        done[i] = True
    return float(table[i])


@_jit_inline
def _emit(out: Array, n: int, j: int, a: int, b: int) -> int:
    """Append the cell range (j, a, b) to ``out`` (rows j, a, b), extending the last one instead
    when it ends at a − 1 on the same point; returns the new count."""
    if n > 0 and out[0, n - 1] == j and out[2, n - 1] == a - 1:
        out[2, n - 1] = b
        return n
    out[0, n] = j
    out[1, n] = a
    out[2, n] = b
    return n + 1


@_jit
def box_split(
    c: Array,
    lw: Array,
    x_l: Array,
    x_h: Array,
    consts: Array,
    small: Array,
    grid: Array,
    table: Array,
    done: Array,
    alphas: Array,
    levels: Array,
    cells: Array,
    boxes: Array,
    box_vals: Array,
) -> tuple[int, int]:
    """The split of every point's window (module docstring). ``consts`` = (ε0, log(1 + q), q,
    s, w, λ, MIN_RUN); ``small`` = stirlerr(0..15); grid, table, done, orders, levels:
    the negligibility table (:func:`_negl`; filled where used). Writes the cell ranges (rows
    point, x_lo, x_hi; adjacent ones merged) to ``cells``, the boxes (rows point, a, b) to
    ``boxes`` and their (log-weight, g_end) to ``box_vals``, each sorted by point then x;
    returns the two counts ((−1, −1) when the arrays have no room left)."""
    eps0, log1pq, q, s, w, lam = consts[0], consts[1], consts[2], consts[3], consts[4], consts[5]
    min_run = int(consts[6])
    st_a = np.empty(_STACK, dtype=np.int64)
    st_b = np.empty(_STACK, dtype=np.int64)
    st_q = np.empty(_STACK)
    st_g = np.empty(_STACK)
    st_n = np.empty(_STACK)
    nr = 0
    nb = 0
    cap = boxes.shape[1]
    for k in range(2 * c.size):
        # the left side [x_l, min(x_h, L)] (r = 0), then the right side [max(x_l, L + 1), x_h]
        # (r = 1; x_h ≤ c + 1 < L + c + 2); its Q-max end x_q and ψ-max end x_g (boxes module
        # docstring) are b and a on the left side, a and b on the right side
        j, r = k >> 1, k & 1
        cj = c[j]
        half = (cj + 1) // 2
        a0 = max(x_l[j], (half + 1) * r)
        b0 = min(x_h[j], half + (cj + 2) * r)
        if a0 > b0:
            continue
        st_c = _stirlerr(float(cj), small) if cj > 0 else 0.0
        st_a[0], st_b[0] = a0, b0
        st_q[0] = _log_q(b0 + (a0 - b0) * r, cj, st_c, small, eps0, log1pq, q)
        st_g[0] = _g(a0 + (b0 - a0) * r, cj, w, s)
        st_n[0] = _negl(st_g[0], grid, table, done, alphas, levels)
        top = 1
        while top > 0:
            top -= 1
            a, b, lq, g, ng = st_a[top], st_b[top], st_q[top], st_g[top], st_n[top]
            if nr >= cap or nb >= cap:
                return -1, -1
            wd = b - a + 1
            lbox = lw[j] + math.log(float(wd)) + lq
            if lbox + ng <= -lam:
                boxes[0, nb], boxes[1, nb], boxes[2, nb] = j, a, b
                box_vals[0, nb], box_vals[1, nb] = lbox, g
                nb += 1
                continue
            if wd <= min_run:
                nr = _emit(cells, nr, j, a, b)
                continue
            # the halves [a, mid] (at top + 1, popped first) and [mid + 1, b] (at top); each
            # keeps the parent's value at the end they share: on the left side (x_q = b, x_g = a)
            # the lower half needs a new log Q at mid and the upper one a new g at mid + 1, on
            # the right side (x_q = a, x_g = b) the upper half a new log Q at mid + 1 and the
            # lower one a new g at mid
            mid = (a + b) // 2
            st_a[top], st_b[top] = mid + 1, b
            st_a[top + 1], st_b[top + 1] = a, mid
            new_q, new_g = top + 1 - r, top + r
            st_q[new_q] = _log_q(mid + r, cj, st_c, small, eps0, log1pq, q)
            st_q[new_g] = lq
            st_g[new_g] = _g(mid + 1 - r, cj, w, s)
            st_n[new_g] = _negl(st_g[new_g], grid, table, done, alphas, levels)
            st_g[new_q], st_n[new_q] = g, ng
            top += 2
    return nr, nb
