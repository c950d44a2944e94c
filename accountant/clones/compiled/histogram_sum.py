"""The compiled per-order histogram sum of :mod:`accountant.clones.compiled` and the jit options of
every compiled kernel (imported only when numba is installed; module-level functions so that
numba can cache them on disk). The histogram build is in :mod:`.histogram_build`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
from numba import njit

from ..types import Array

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(fn: _F) -> _F:
    """numba's ``njit`` with the options of every kernel here (on-disk cache, no GIL, numpy's
    floating-point error model: inf/nan, no exceptions)."""
    return cast(_F, njit(cache=True, nogil=True, error_model="numpy")(fn))


def _jit_inline(fn: _F) -> _F:
    """:func:`_jit` inlined into its callers (helpers of the per-cell loops that take arrays:
    a call would pay reference counting for each array argument)."""
    return cast(_F, njit(cache=True, nogil=True, error_model="numpy", inline="always")(fn))


# ----------------------------------------------------------------------------------------------
# the per-order histogram sum (accountant.clones.histogram.bins.hist_sum) and the scalar log φ it
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

    The per-bin bounds of accountant.clones.histogram.bins.hist_sum, formed in linear space where
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
