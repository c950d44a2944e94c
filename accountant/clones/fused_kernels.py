"""The compiled kernels of :mod:`accountant.clones.fused` (imported only when numba is
installed; module-level functions so that numba can cache them on disk)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
from numba import njit

from .kernels import Array

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(fn: _F) -> _F:
    """numba's ``njit`` with the options of every kernel here (on-disk cache, no GIL, numpy's
    floating-point error model: inf/nan, no exceptions)."""
    return cast(_F, njit(cache=True, nogil=True, error_model="numpy")(fn))


def _jit_inline(fn: _F) -> _F:
    """:func:`_jit` inlined into its callers (helpers of the per-cell loops that take arrays:
    a call would pay reference counting for each array argument)."""
    return cast(_F, njit(cache=True, nogil=True, error_model="numpy", inline="always")(fn))


@_jit
def _cell(x: float, m: float, s: float, w: float) -> tuple[float, float]:
    """(1 − s·v, g) of cell x of a point with m = c + 1 coins (module docstring). For |s·v| ≤
    1/64, g = 2·artanh(s·v) = 2·Σ_k (s·v)^{2k+1}/(2k+1) to k = 6 (the rest is below 2⁻⁸⁴
    relative) instead of log1p(2sv/(1 − sv)): the same value to rounding, without a log."""
    v = 2.0 * x
    v -= m
    v /= m
    sv = s * v
    d = 1.0 - sv
    if abs(sv) <= 0.015625:
        z2 = sv * sv
        p = 1.0 / 11.0 + z2 / 13.0
        p = 1.0 / 9.0 + z2 * p
        p = 1.0 / 7.0 + z2 * p
        p = 1.0 / 5.0 + z2 * p
        p = 1.0 / 3.0 + z2 * p
        return d, 2.0 * sv + 2.0 * sv * (z2 * p)
    if abs(sv) > 0.5:
        d = 2.0 * (m - x) / m + v * w
        return d, math.log((2.0 * x / m - v * w) / d)
    return d, math.log1p(2.0 * sv / d)


@_jit
def g_range(c: Array, x_l: Array, x_h: Array, lwp: Array, s: float, w: float) -> tuple[float, float]:
    """min and max of |g| over the valid cells: g is increasing in x and 0 only at x = m/2, so
    they are at the cells next to m/2 and at the window ends."""
    gmin = math.inf
    gmax = 0.0
    for j in range(c.size):
        if not (lwp[j] > -math.inf and lwp[j] < math.inf):
            continue
        m = c[j] + 1.0
        lo = float(x_l[j])
        hi = float(x_h[j])
        for x in (lo, hi, math.ceil(m / 2.0) - 1.0, math.floor(m / 2.0) + 1.0):
            if x < lo or x > hi:
                continue
            d, gg = _cell(x, m, s, w)
            if gg != 0.0 and d > 0.0:
                a = abs(gg)
                gmin = min(gmin, a)
                gmax = max(gmax, a)
    return gmin, gmax


@_jit_inline
def _bin_of(
    a: float, prev: int, ed: Array, top: float, ksw: int, dg: float, gmin: float, log_r: float
) -> int:
    """The bin (ed[i], ed[i+1]] holding |g| = a (accountant.clones.histogram._bin_keys): the
    analytic index (uniform part above ``top``, geometric below it; or the previous cell's bin,
    ``prev`` ≥ 0), then moved to the bin that holds a. −1 if none does (never expected)."""
    nb = ed.size - 1
    if prev >= 0:
        idx = prev
    elif a > top:
        idx = int(min(max(math.ceil((a - top) / dg) + (ksw - 1.0), 0.0), nb - 1.0))
    else:
        idx = int(min(max(math.ceil(math.log(a / gmin) / log_r), 0.0), nb - 1.0))
    while idx > 0 and a <= ed[idx]:
        idx -= 1
    while idx < nb - 1 and a > ed[idx + 1]:
        idx += 1
    if not (a > ed[idx] and a <= ed[idx + 1]):
        return -1
    return idx


@_jit_inline
def _flush(
    k: int,
    la: float,
    sm: float,
    sg: float,
    sml: float,
    lo: float,
    hi: float,
    mx: Array,
    msum: Array,
    ssum: Array,
    mlsum: Array,
    gl: Array,
    gh: Array,
) -> None:
    """Adds one run of cells of key k — weights e^{la}·(sm, Σ weight·g = e^{la}·sg, right-end
    e^{la}·sml), extreme values lo, hi of g — to the key's sums, kept relative to e^{mx[k]}
    (mx[k] the largest run scale la so far; the sums are rescaled when it grows). One exp.
    Nothing for k < 0 (cells set aside) or an empty run."""
    if k < 0 or not sm > 0.0:
        return
    if la > mx[k]:
        f = math.exp(mx[k] - la)
        msum[k] = msum[k] * f + sm
        ssum[k] = ssum[k] * f + sg
        mlsum[k] = mlsum[k] * f + sml
        mx[k] = la
    else:
        e = math.exp(la - mx[k])
        msum[k] += sm * e
        ssum[k] += sg * e
        mlsum[k] += sml * e
    gl[k] = min(gl[k], lo)
    gh[k] = max(gh[k], hi)


@_jit_inline
def _block(
    la: float,
    m: float,
    x0: float,
    ln: int,
    es: float,
    s: float,
    w: float,
    ed: Array,
    ksw: int,
    dg: float,
    gmin: float,
    log_r: float,
    acc: tuple[Array, Array, Array, Array, Array, Array],
) -> int:
    """The cells x0 … x0 + ln − 1 of one block (log-weight of its first cell: la): each cell's
    weight relative to the first, r·(1 − s·v) with r = b_m(x)/b_m(x0) the product of the exact
    ratios (m − x + 1)/x, its g and key; runs of consecutive cells of one key are added to the
    key's sums by :func:`_flush`. Returns 1 if a cell could not be placed in a bin, else 0."""
    mx, msum, ssum, mlsum, gl, gh = acc
    top = ed[ksw]
    r = 1.0
    k_run = -1
    prev = -1
    sm = sg = 0.0
    lo = math.inf
    hi = -math.inf
    for k in range(ln):
        x = x0 + k
        r = r * ((m - x + 1.0) / x) if k > 0 else 1.0
        d, gg = _cell(x, m, s, w)
        idx = _bin_of(abs(gg), prev, ed, top, ksw, dg, gmin, log_r) if (gg != 0.0 and d > 0.0) else -2
        if idx == -1:
            return 1
        prev = max(idx, -1)
        kk = 2 * idx + (gg < 0.0) if idx >= 0 else -1
        if kk != k_run:
            _flush(k_run, la, sm, sg, sm * es, lo, hi, mx, msum, ssum, mlsum, gl, gh)
            k_run = kk
            sm = sg = 0.0
            lo = math.inf
            hi = -math.inf
        wt = r * d
        sm += wt
        sg += wt * gg
        lo = min(lo, gg)
        hi = max(hi, gg)
    _flush(k_run, la, sm, sg, sm * es, lo, hi, mx, msum, ssum, mlsum, gl, gh)
    return 0


@_jit
def cells_stats(
    blk_seg: Array,
    blk_x0: Array,
    blk_anchor: Array,
    blk_len: Array,
    mf: Array,
    lwp: Array,
    es: Array,
    s: float,
    w: float,
    ed: Array,
    ksw: int,
    dg: float,
    gmin: float,
    log_r: float,
    acc: tuple[Array, Array, Array, Array, Array, Array],
) -> int:
    """Per key: the largest run log-mass mx, and relative to e^{mx} the sums of the cells'
    weights e^{lw_j}·b_m(x)·(1 − s·v), of weight·g and of the right-end weights (×es_j); the
    extreme values of g (``acc`` = (mx, msum, ssum, mlsum, gl, gh), filled in place). Cells with
    lw = ±inf, g = 0 or 1 − s·v ≤ 0 are set aside. Returns 0, or 1 if a cell could not be placed
    in a bin (never expected).

    b_m(x) = e^{anchor}·r within each block of 32 (anchor: Loader's pmf at the block's first cell,
    from the caller), r the product of at most 31 exact ratios, so its relative error is ≲ 31 ulps
    (the log-space sum of the numpy path: the same to rounding). r stays in the normal range for
    m ≤ 5·10¹⁰ (b_m(x0 + k)/b_m(x0) ≥ 1/C(m, 31)), far above ``CLONES_MAX_N``."""
    for b in range(blk_seg.size):
        j = blk_seg[b]
        la = blk_anchor[b] + lwp[j]
        if not (la > -math.inf and la < math.inf):
            continue
        if _block(la, mf[j], blk_x0[b], blk_len[b], es[j], s, w, ed, ksw, dg, gmin, log_r, acc):
            return 1
    return 0


# ----------------------------------------------------------------------------------------------
# the per-order histogram sum (accountant.clones.histogram.hist_sum) and the scalar log φ it
# needs (accountant._numerics.log_phi: the same branches and formulas)
# ----------------------------------------------------------------------------------------------


@_jit
def _em1mx(z: float) -> float:
    """e^z − 1 − z (series for |z| < 0.05, else expm1(z) − z)."""
    if abs(z) < 0.05:
        return (
            z
            * z
            / 2.0
            * (
                1.0
                + z
                / 3.0
                * (1.0 + z / 4.0 * (1.0 + z / 5.0 * (1.0 + z / 6.0 * (1.0 + z / 7.0 * (1.0 + z / 8.0)))))
            )
        )
    return math.expm1(z) - z


@_jit
def _log_em1mx(z: float) -> float:
    if z > 1.0:
        return z + math.log1p(-(1.0 + z) * math.exp(-z))
    return math.log(_em1mx(min(z, 1.0)))


@_jit
def series_rest(a: float, x: float) -> float:
    """tot of φ = ½a(a−1)x²·(1 + tot), the 12-term series of accountant._numerics._log_phi_series
    (|a·x| ≤ 0.05)."""
    sk = 1.0 + a
    term = x / 3.0
    tot = sk * term
    for k in range(4, 13):
        sk = 1.0 + a * sk
        term = term * x / k
        tot = tot + sk * term
    return tot


@_jit
def _log_phi_series(a: float, x: float) -> float:
    """log φ by its series in x (|a·x| ≤ 0.05)."""
    return math.log(0.5 * a * (a - 1.0)) + 2.0 * math.log(abs(x)) + math.log1p(series_rest(a, x))


@_jit
def _log_phi_negative(a: float, x: float, y: float) -> float:
    """log φ for a < 0: log(e^y − 1 − y) ⊕ log(−a) + log(e^x − 1 − x)."""
    u = _log_em1mx(y)
    v = math.log(-a) + _log_em1mx(x)
    hi = max(u, v)
    if hi == -math.inf:
        return hi
    return hi + math.log1p(math.exp(min(u, v) - hi))


@_jit
def _log_phi_near_one(a: float, x: float) -> float:
    """log φ for 0 ≤ a < 2: (a−1)·h(x) + e^x·(e^{(a−1)x} − 1 − (a−1)x), h(x) = 1 + e^x(x − 1)."""
    d = a - 1.0
    h = x * math.expm1(x) - _em1mx(x) if abs(x) < 1.0 else 1.0 + math.exp(x) * (x - 1.0)
    return math.log(d * h + math.exp(x) * _em1mx(d * x))


@_jit
def _log_phi_large(a: float, x: float, y: float) -> float:
    """log φ for a ≥ 2."""
    if abs(y) <= 1.0:
        return math.log(_em1mx(y) - a * _em1mx(x))
    if y > 1.0:
        return y + math.log1p(-math.exp(-y) * (1.0 + a * math.expm1(x)))
    return math.log(math.expm1(y) - a * math.expm1(x))


@_jit
def log_phi(a: float, x: float) -> float:
    """log(e^{a·x} − 1 − a(e^x − 1)) (accountant._numerics.log_phi, one element)."""
    y = a * x
    if abs(y) <= 0.05 and (a > 1.0 or abs(x) <= 0.05):
        return _log_phi_series(a, x)
    if a < 0.0:
        return _log_phi_negative(a, x, y)
    if a < 2.0:
        return _log_phi_near_one(a, x)
    return _log_phi_large(a, x, y)


@_jit
def _lae(m: float, s: float, v: float) -> tuple[float, float]:
    """One step of a streaming log-sum-exp: (max, scaled sum) after adding e^v."""
    if v == -math.inf:
        return m, s
    if v > m:
        return v, s * math.exp(m - v) + 1.0
    return m, s + math.exp(v - m)


@_jit
def _log_add(x1: float, x2: float) -> float:
    """log(e^{x1} + e^{x2})."""
    hx = max(x1, x2)
    return hx if hx == -math.inf else hx + math.log1p(math.exp(min(x1, x2) - hx))


@_jit
def _prune_bounds(a: float, p1: Array, p2: Array, gm: Array, npos: int, bound: Array) -> float:
    """The pruning bound of every bin at order a (into ``bound``; bins with positive g first),
    and the largest."""
    la2 = math.log(0.5 * a * a)
    la = math.log(a)
    rowmax = -math.inf
    for b in range(p1.size):
        v = p1[b] + la2 + a * gm[b] if b < npos else min(p1[b] + la2, p2[b] + la)
        bound[b] = v
        rowmax = max(rowmax, v)
    return rowmax


@_jit
def _bin_value(
    a: float, gs: float, lo: float, hi: float, mu: float, single: bool, wl: float, wh: float
) -> float:
    """log of the bound on a bin's average of ψ_a: Jensen at μ (concave side of g* = gs, or one
    value), the chord at μ (convex side), else the larger end value."""
    if single or hi <= gs:
        return log_phi(a, mu)
    lpa = log_phi(a, lo)
    lpe = log_phi(a, hi)
    if lo >= gs:
        return _log_add(wl + lpa, wh + lpe)
    return max(lpa, lpe)


_TINY = 1e-290  # linear terms are kept only in [_TINY, _HUGE]: normal numbers, full precision
_HUGE = 1e290


@_jit
def _series_coefs(a: float, cf: Array) -> None:
    """The coefficients of the series of φ in x (accountant._numerics._log_phi_series):
    φ = ½a(a−1)·x²·(1 + Σ_{k≥3} cf[k−3]·x^{k−2}), cf[k−3] = 2·S_k/k!, S_k = Σ_{i<k−1} a^i, for
    k = 3 … 10 (:func:`_series_tot`)."""
    sk = 1.0 + a
    f = 1.0 / 3.0
    for k in range(3, 11):
        cf[k - 3] = sk * f
        sk = 1.0 + a * sk
        f = f / (k + 1)


@_jit_inline
def _series_tot(cf: Array, x: float) -> float:
    """Σ_{k=3}^{10} cf[k−3]·x^{k−2} (Horner), for |a·x| ≤ 0.05, a > 1: the numpy path's series
    in another order (a few ulps of a sum below 0.04 in magnitude) and without its terms
    k = 11, 12. Those and the rest are below 1.1e-18 relative to 1 + tot: |S_k·x^{k−2}| ≤
    (k−1)·|a·x|^{k−2} for a ≥ 1, so term k is at most 2(k−1)·0.05^{k−2}/k! (k = 11: 9.8e-19,
    each next one < 1/200 of the previous) — a hundredth of a double's rounding, below the
    1e-16 that the numpy path's own truncation allows itself."""
    q: float = cf[7]
    for j in range(6, -1, -1):
        q = q * x + cf[j]
    return q * x


@_jit_inline
def _in_range(v: float) -> bool:
    return v >= _TINY and v <= _HUGE


@_jit_inline
def _phi_lin(a: float, x: float, h: float, cf: Array) -> float:
    """φ_a(e^x) = e^{ax} − 1 − a(e^x − 1) in linear space for a > 1 and a·x ≤ 1 or a < 2, by the
    branch of :func:`log_phi` that x falls in and with its formula (the argument of its log),
    h = ½a(a−1): the series h·x²·(1 + tot(x)) (:func:`_series_coefs`), the 1 < a < 2 form,
    em1mx(y) − a·em1mx(x) for |y| ≤ 1 and expm1(y) − a·expm1(x) for y < −1 (y = a·x)."""
    y = a * x
    if abs(y) <= 0.05:
        return h * (x * x) * (1.0 + _series_tot(cf, x))
    if a < 2.0:
        d = a - 1.0
        hh = x * math.expm1(x) - _em1mx(x) if abs(x) < 1.0 else 1.0 + math.exp(x) * (x - 1.0)
        return d * hh + math.exp(x) * _em1mx(d * x)
    if abs(y) <= 1.0:
        return _em1mx(y) - a * _em1mx(x)
    return math.expm1(y) - a * math.expm1(x)


@_jit_inline
def _end_term(a: float, x: float, h: float, cf: Array, mf: float, lm: float, sh: float) -> float:
    """e^c·φ_a(e^x), c = lm + sh, with mf = e^c: mf·:func:`_phi_lin`, or for a·x > 1 with a ≥ 2
    (the branch y + log1p(−e^{−y}(1 + a·expm1(x))) of :func:`log_phi`) e^{(y+lm)+sh} −
    mf·(1 + a·expm1(x)), the same difference scaled by e^{y+c} instead of e^y (which may
    overflow; y + lm first, as the numpy path adds LM to log φ); nan there if sh is nan."""
    y = a * x
    if a >= 2.0 and y > 1.0:
        if math.isnan(sh):
            return math.nan
        return math.exp((y + lm) + sh) - mf * (1.0 + a * math.expm1(x))
    return mf * _phi_lin(a, x, h, cf)


@_jit_inline
def _bin_term(
    a: float,
    gs: float,
    lo: float,
    hi: float,
    mu: float,
    single: bool,
    wl: float,
    wh: float,
    h: float,
    cf: Array,
    mf: float,
    lm: float,
    sh: float,
) -> float:
    """e^{lm + sh} times the bound of :func:`_bin_value` in linear space (wl, wh: the linear chord
    weights; :func:`_end_term`): φ(μ) for a bin of one value or on the concave side, the chord
    wl·φ(lo) + wh·φ(hi) on the convex side, else the larger of φ(lo), φ(hi)."""
    if single or hi <= gs:
        return _end_term(a, mu, h, cf, mf, lm, sh)
    pa = _end_term(a, lo, h, cf, mf, lm, sh)
    pe = _end_term(a, hi, h, cf, mf, lm, sh)
    if lo >= gs:
        return wl * pa + wh * pe
    if pa >= pe:
        return pa
    return pe if pe > pa else math.nan  # (nan if either is)


#: Per-bin arrays of :func:`hist_sum`: LM, LML, lo, hi, μ, single, wl, wh (log chord weights),
#: gm, wl and wh (linear), m = e^{LM − LMmax}, rho = e^{LML − LM}.
BinArrays = tuple[Array, Array, Array, Array, Array, Array, Array, Array, Array, Array, Array, Array, Array]


@_jit
def _order_sum(
    a: float, rowmax: float, thr: float, fr: float, cf: Array, bins: BinArrays, bound: Array, acc: Array
) -> int:
    """The kept bins of one order (bound ≥ thr) into ``acc`` (acc[0], acc[1]: linear sums of
    the terms relative to e^{rowmax}, up and under the right-end weights; acc[2:4], acc[4:6]:
    streaming log-sum-exps, max and scaled sum, up and low); returns how many were kept.
    fr = e^{LMmax − rowmax} (nan unless in [_TINY, _HUGE]), cf: :func:`_series_coefs`.

    A bin's term e^{LM − rowmax}·S (S: its bound on the average of ψ) is formed in linear space
    (:func:`_bin_term`: the same branches and formulas as :func:`_bin_value` without their logs,
    so the same number to rounding) with mf = e^{LM − rowmax} = m·fr, when a > 1, the cells' g
    are away from 0 (|g| ≥ 1e-100, so no factor underflows), m, mf, the term and the term times
    rho are in [_TINY, _HUGE], and a·g ≤ 1 or |rowmax| ≤ 600 (so that large values keep the
    log-space arithmetic of the numpy path and its rounding). Else the log form of
    :func:`_bin_value`, into the log-space sums, as before.

    Precision of a linear term: the factors m, fr, mf are normal numbers, each from one exp of
    a difference of log values; the end values of φ are those of log φ's branches before the
    log (the same cancellation, at most a few bits); an addend of a chord, or e^{y+c}, that
    underflows has an absolute error < 2⁻¹⁰⁷⁴, below 1e-33 of a term ≥ _TINY. So a term's
    relative error is ≲ (10 + |LM| + |LMmax| + |rowmax| + a·|g|)·2⁻⁵³, as for the numpy path's
    log-space values (val + LM, then exp of its difference to the maximum)."""
    LM, LML, lo, hi, mu, single, wl, wh, _, wll, whl, m, rho = bins
    gs = -math.log(a) / (a - 1.0)
    h = 0.5 * a * (a - 1.0)
    sh = -rowmax if (abs(rowmax) <= 600.0 or a < 2.0) else math.nan  # (nan: a·g ≤ 1 only)
    kept = 0
    for b in range(LM.size):
        if not bound[b] >= thr:
            continue
        kept += 1
        mf = m[b] * fr if m[b] >= _TINY else math.nan
        pu = math.nan
        if a > 1.0 and mf >= _TINY and (lo[b] >= 1e-100 or hi[b] <= -1e-100):
            pu = _bin_term(a, gs, lo[b], hi[b], mu[b], single[b], wll[b], whl[b], h, cf, mf, LM[b], sh)
        pl = pu * rho[b]
        if _in_range(pu) and (rho[b] == 0.0 or _in_range(pl)):
            acc[0] += pu
            acc[1] += pl
        else:
            val = _bin_value(a, gs, lo[b], hi[b], mu[b], single[b], wl[b], wh[b])
            acc[2], acc[3] = _lae(acc[2], acc[3], val + LM[b])
            acc[4], acc[5] = _lae(acc[4], acc[5], val + LML[b])
    return kept


@_jit
def _total(rowmax: float, lin: float, m: float, s: float) -> float:
    """log(e^{rowmax}·lin + e^{m}·s) (lin = 0 or ≥ _TINY, s = 0 or ≥ 1), around the larger
    part: the log-space part alone gives m + log(s), the previous arithmetic, when the linear
    part is below its rounding."""
    if not lin > 0.0:
        return m + math.log(s) if s > 0.0 else -math.inf
    lu = rowmax + math.log(lin)
    if not s > 0.0:
        return lu
    if m >= lu:  # lin·e^{rowmax − m} ≤ 1, and rowmax − m ≤ −log(lin) < 668: no overflow
        return m + math.log(s + lin * math.exp(rowmax - m))
    return rowmax + math.log(lin + s * math.exp(m - rowmax))


@_jit
def hist_sum(
    alphas: Array,
    bins: BinArrays,
    lm_max: float,
    p1: Array,
    p2: Array,
    npos: int,
    prune: float,
    up: Array,
    low: Array,
) -> None:
    """Per order: the pruning bound of every bin, then the chord/Jensen/max bound of the bins
    within ``prune`` nats of the largest, summed (log), plus the pruned bins' count times
    e^{max − prune}; and the same kept bins under the right-end weights.

    The per-bin bounds of accountant.clones.histogram.hist_sum, formed in linear space where
    that is safe (:func:`_order_sum`: the formulas of log φ without their logs, the chord formed
    linearly; in the series branch, most bins when ε0 is small or n large, no log or exp at all)
    and summed linearly relative to e^{rowmax} (rowmax: the largest pruning bound, ≥ every
    term), keeping only normal numbers there; the other bins as before in log space
    (:func:`_total` joins both). Every term keeps its full relative precision (nothing
    underflows or overflows), so the result is the numpy path's to rounding: sums of
    non-negative terms, relative error ≲ bins·2⁻⁵³, far inside the 1e-11 outward rounding of
    the clone bound."""
    LM, gm = bins[0], bins[8]
    bound = np.empty(LM.size)
    cf = np.empty(8)
    acc = np.empty(6)
    for r in range(alphas.size):
        a = alphas[r]
        rowmax = _prune_bounds(a, p1, p2, gm, npos, bound)
        thr = rowmax - prune
        _series_coefs(a, cf)
        fr = math.exp(lm_max - rowmax)
        fr = fr if _in_range(fr) else math.nan
        acc[0], acc[1], acc[2], acc[3], acc[4], acc[5] = 0.0, 0.0, -math.inf, 0.0, -math.inf, 0.0
        kept = _order_sum(a, rowmax, thr, fr, cf, bins, bound, acc)
        res = _total(rowmax, acc[0], acc[2], acc[3])
        ndrop = LM.size - kept
        if ndrop > 0:
            res = _log_add(res, math.log(ndrop) + thr)
        up[r] = res
        low[r] = _total(rowmax, acc[1], acc[4], acc[5])
