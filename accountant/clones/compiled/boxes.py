"""The compiled split of :func:`accountant.clones.histogram.boxes.box_cover` (imported only when numba is
installed and the compiled kernels are on, :func:`accountant.clones.compiled.available`;
module-level functions so that numba caches them on disk).

The split of :func:`accountant.clones.histogram.boxes.box_cover` (the boxes module docstring: each half
reuses its parent's log Q or g at the end they share, runs whose sub-runs all fail for sure are
left as cells at once) one window side at a time on a stack, left half first, so cell ranges and
boxes come out sorted by point then x. log Q by Loader's binomial pmf
(:func:`accountant._binomial.log_binom_pmf`, the same operations in the same order, one element
at a time) and g by :func:`accountant.clones.closed_form.log_ratio`'s formulas; the negligibility
table is filled where first used, as :class:`accountant.clones.histogram.boxes.Negligible` does (the
compiled log φ of :mod:`.histogram_sum`: numpy's branches and formulas). The values agree with
numpy's to the last bits of ``log``/``log1p`` (numba calls the C library, numpy may use its own
SIMD loops; in Loader's x·log(x/m) that is ≲ 1e-11 absolute), so a run whose test lands within
rounding of −λ may be decided the other way; either decision is valid (the boxes' certificate
does not depend on the test).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
from numba import njit

from ..types import Array
from .histogram_sum import log_phi

_F = TypeVar("_F", bound=Callable[..., Any])

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_STACK = 128  # a run of W < 2⁶³ cells halves at most 63 times; the stack holds one run more per level


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
    """accountant.clones.closed_form.log_q_at at one cell 0 ≤ x ≤ c + 1 (st_c = stirlerr(c))."""
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
    """accountant.clones.closed_form.l1m at one value."""
    sv = s * (u / n1)
    if sv > 0.5:
        return math.log((n1 - u) + u * w) - math.log(n1)
    return math.log1p(-min(sv, 0.5))


@_jit_inline
def _g(x: int, c: int, w: float, s: float) -> float:
    """g(x) = log R at cell x of point c (accountant.clones.closed_form.log_ratio)."""
    cf = float(c)
    n1 = cf + 1.0
    u = 2.0 * x - cf - 1.0
    return _l1m(n1, -u, w, s) - _l1m(n1, u, w, s)


@_jit_inline
def _grid_index(g: float, grid: Array) -> int:
    """numpy's searchsorted of g in ``grid`` (side "left" for g > 0: the first grid[i] ≥ g;
    side "right" minus one otherwise: the last grid[i] ≤ g), clipped to the grid: the grid
    point farther from 0 (:meth:`accountant.clones.histogram.boxes.Negligible.index`), by bisection."""
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
    """accountant.clones.histogram.boxes.Negligible.__call__ at one value; the table entry is computed on
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


@_jit_inline
def _halves(st_v: Array, top: int, r: int, lq_new: float, g_new: float) -> None:
    """The values of the halves [a, mid] (at top + 1, popped first) and [mid + 1, b] (at top) of
    the run at ``top`` (its values overwritten last; negl of the new g is filled in by the
    caller). One half takes a new log Q at its x_q (mid on the left side r = 0, mid + 1 on the
    right side) and keeps the parent's g(x_g); the other keeps the parent's log Q(x_q) and takes
    a new g at its x_g (mid + 1 on the left side, mid on the right side). Lower bounds over a
    half: the parent's where the half shares the parent's far end; else log Q at the other
    half's new x_q (Q is monotone on a side, and that cell is next to the half, on its low-Q
    side) and negl at the other half's new x_g (likewise on its low-ψ side)."""
    nq, ngi = top + 1 - r, top + r  # the half with the new log Q, the one with the new g
    lq, g, ng, lq_lo, ng_lo = st_v[0, top], st_v[1, top], st_v[2, top], st_v[3, top], st_v[4, top]
    st_v[0, nq], st_v[1, nq], st_v[2, nq], st_v[3, nq] = lq_new, g, ng, lq_lo
    st_v[0, ngi], st_v[1, ngi], st_v[3, ngi], st_v[4, ngi] = lq, g_new, lq_new, ng_lo


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
    s, w, λ, MIN_RUN, δ); ``small`` = stirlerr(0..15); grid, table, done, orders, levels:
    the negligibility table (:func:`_negl`; filled where used). Writes the cell ranges (rows
    point, x_lo, x_hi; adjacent ones merged) to ``cells``, the boxes (rows point, a, b) to
    ``boxes`` and their (log-weight, g_end) to ``box_vals``, each sorted by point then x;
    returns the two counts ((−1, −1) when the arrays have no room left)."""
    eps0, log1pq, q, s, w, lam = consts[0], consts[1], consts[2], consts[3], consts[4], consts[5]
    min_run, delta = int(consts[6]), consts[7]
    log_half = math.log(float((min_run + 1) // 2))
    # per run on the stack: its ends, log Q(x_q), g(x_g), negl(g(x_g)) and the lower bounds on
    # log Q and on negl over the run
    st_a = np.empty(_STACK, dtype=np.int64)
    st_b = np.empty(_STACK, dtype=np.int64)
    st_v = np.empty((5, _STACK))
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
        xq, xg = b0 + (a0 - b0) * r, a0 + (b0 - a0) * r
        st_a[0], st_b[0] = a0, b0
        st_v[0, 0] = _log_q(xq, cj, st_c, small, eps0, log1pq, q)
        st_v[1, 0] = _g(xg, cj, w, s)
        st_v[2, 0] = _negl(st_v[1, 0], grid, table, done, alphas, levels)
        st_v[3, 0] = _log_q(xg, cj, st_c, small, eps0, log1pq, q)
        st_v[4, 0] = _negl(_g(xq, cj, w, s), grid, table, done, alphas, levels)
        top = 1
        while top > 0:
            top -= 1
            a, b = st_a[top], st_b[top]
            if nr >= cap or nb >= cap:
                return -1, -1
            wd = b - a + 1
            lbox = lw[j] + math.log(float(wd)) + st_v[0, top]
            if lbox + st_v[2, top] <= -lam:
                boxes[0, nb], boxes[1, nb], boxes[2, nb] = j, a, b
                box_vals[0, nb], box_vals[1, nb] = lbox, st_v[1, top]
                nb += 1
                continue
            # cells: a short run, or one whose every sub-run fails the test for sure
            if wd <= min_run or lw[j] + log_half + st_v[3, top] + st_v[4, top] + lam > delta:
                nr = _emit(cells, nr, j, a, b)
                continue
            mid = (a + b) // 2
            st_a[top], st_b[top] = mid + 1, b
            st_a[top + 1], st_b[top + 1] = a, mid
            _halves(
                st_v, top, r, _log_q(mid + r, cj, st_c, small, eps0, log1pq, q), _g(mid + 1 - r, cj, w, s)
            )
            st_v[2, top + r] = _negl(st_v[1, top + r], grid, table, done, alphas, levels)
            st_v[4, top + 1 - r] = st_v[2, top + r]
            top += 2
    return nr, nb
