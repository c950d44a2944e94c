"""Closed forms of the clone reduction shared by every engine (FMT21 §3; bounds.md §8).

With m = c + 1 the number of coins in the first coordinate's law, u = 2x − c − 1 and
s = tanh(ε0/2), the likelihood ratio is R_c(u) = (1 + s·u/m)/(1 − s·u/m) ∈ [e^{−ε0}, e^{ε0}] and
Q_c(x) = (b_c(x) + e^{−ε0}·b_c(x−1))/(1 + e^{−ε0}) = b_m(x)·(1 − s·u/m) (b_k the Bin(k, ½) pmf).
Here: g = log R computed without cancellation, log Q_c at single cells
and its pmf ratios, the tilted peak of Q·R^α, geometric sums, the rough log f_α(c) that steers
designs and the c = 0 value (the ε0-DP cap). The law of C ~ Bin(n−1, e^{−ε0}) summed over bins:
:mod:`.grid.cmass`; the per-(n, ε0) context :class:`.types.Ctx`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .._binomial import log_binom_pmf
from .._numerics import log_pure_dp_excess
from .types import Array, ArrayLike, Ctx


def l1m(n1: ArrayLike, u: ArrayLike, w: float, s: float) -> ArrayLike:
    """log(1 − s·u/n1), accurate also as s·u/n1 → 1 (s may round to 1): for s·u/n1 > ½ it is
    log((n1 − u) + u·w) − log(n1) with w = 1 − s; below, log1p (full relative accuracy when
    s·u/n1 is tiny, e.g. ε0 ≈ 1e-6)."""
    sv = s * (u / n1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sv > 0.5, np.log((n1 - u) + u * w) - np.log(n1), np.log1p(-np.minimum(sv, 0.5)))


def log_ratio(n1: ArrayLike, u: ArrayLike, ctx: Ctx) -> ArrayLike:
    """g = log R(u, c) = log(1 + s·u/n1) − log(1 − s·u/n1), n1 = c + 1 (accurate up to |u| = n1)."""
    return l1m(n1, -u, ctx.w, ctx.s) - l1m(n1, u, ctx.w, ctx.s)


def l1m_sq(n1: ArrayLike, u: ArrayLike, ctx: Ctx) -> ArrayLike:
    """log(1 − s²u²/n1²) = log(1 − s|u|/n1) + log(1 + s|u|/n1)."""
    ua = np.abs(u)
    return l1m(n1, ua, ctx.w, ctx.s) + l1m(n1, -ua, ctx.w, ctx.s)


def lf_est(alpha: ArrayLike, c: ArrayLike, ctx: Ctx, lcap: ArrayLike) -> ArrayLike:
    """Rough log f_α(c): the Gaussian approximation 2α(α−1)s²/(c+1), capped by the exact c = 0
    value. Steers designs only (no bound depends on it)."""
    return np.minimum(2.0 * alpha * (alpha - 1.0) * ctx.s**2 / (c + 1.0), lcap)


def log_cap_f(alpha: ArrayLike, ctx: Ctx) -> Any:
    """log f_α(0) = (α−1)·ĉ(α), ĉ the ε0-DP cap (at c = 0 the pair (P, Q) is binary randomized
    response); memoised per order on the context."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    key = a.tobytes()  # (the engines ask again and again for the same arrays of orders)
    got = ctx.lcap_arrays.get(key)
    if got is None:
        cache = ctx.lcap_cache
        miss = [v for v in a.tolist() if v not in cache]
        if miss:
            vals = np.logaddexp(0.0, log_pure_dp_excess(ctx.eps0, np.array(miss)))
            cache.update(zip(miss, vals.tolist()))
        got = np.array([cache[v] for v in a.tolist()])
        if len(ctx.lcap_arrays) < 64:
            ctx.lcap_arrays[key] = got
    out = got.copy()
    return out if np.ndim(alpha) else out[0]


class _TiltGrid(NamedTuple):
    """The grid of :func:`tilt` for one s and its order-free parts (z = y/s)."""

    y: Array
    h: Array  # H(z)
    half_l: Array  # ½·log(1 − z²)
    artanh: Array  # artanh(y)


_TILT_GRIDS: dict[float, _TiltGrid] = {}


def _tilt_grid(s: float) -> _TiltGrid:
    """The grid of :func:`tilt` for one s, memoised per s."""
    got = _TILT_GRIDS.get(s)
    if got is None:
        grid = s * (1.0 - np.geomspace(1.0, 1e-12, 28))
        z = np.minimum(grid / s, 1.0 - 1e-15)[:, None, None]
        h = 0.5 * ((1.0 + z) * np.log1p(z) + (1.0 - z) * np.log1p(-z))
        got = _TiltGrid(grid, h, 0.5 * np.log1p(-z * z), np.arctanh(grid)[:, None, None])
        if len(_TILT_GRIDS) >= 64:
            _TILT_GRIDS.clear()
        _TILT_GRIDS[s] = got
    return got


#: The compiled grid search of :func:`tilt` (:func:`accountant.clones.compiled.sums.tilt_argmax`),
#: handed over by :mod:`.compiled` while the compiled kernels are on; None: numpy's.
_TILT_SEARCH: Callable[..., None] | None = None


def set_tilt_search(search: Callable[..., None] | None) -> None:
    """Use ``search(n1, orders, h, half_l, artanh, out)`` for the grid search of :func:`tilt`
    (it must give numpy's argmax index), or numpy's own when None."""
    global _TILT_SEARCH
    _TILT_SEARCH = search


def _tilt_argmax(n1: Array, av: Array, h: Array, half_l: Array, at: Array) -> Array:
    """The grid index of the largest profile value per (order, point): numpy's argmax, or the
    compiled search handed over by :mod:`.compiled` (the same operations in the same order)."""
    search = _TILT_SEARCH
    if search is not None:
        out = np.empty((av.size, n1.size), dtype=np.int64)
        search(n1, av, h.ravel(), half_l.ravel(), at.ravel(), out)
        return out
    vals = -n1[None, None, :] * h - half_l + 2.0 * av[None, :, None] * at
    k: Array = np.argmax(vals, axis=0)
    return k


def tilt(c: Array, a: ArrayLike, s: float) -> tuple[Array, Array, Array]:
    """Tilted peak u* of Q·R^a, its standard deviation (in u) and whether it sits at the edge
    u = c + 1 (window and bin-width choice only; no bound depends on it). ``a`` may be an array
    of orders (results then have shape (len(a), len(c))).

    With y = t·u = s·z (t = s/(c+1)) and Stirling's form log b ≈ −(c+1)·H(z) − ½·log(1 − z²),
    H(z) = ((1+z)log(1+z) + (1−z)log(1−z))/2, the profile is ℓ(y) = log b + 2a·artanh(y);
    it is maximised on a grid in y ∈ [0, s) and refined by Newton steps.
    """
    cf = np.asarray(c, dtype=float)
    scalar = np.ndim(a) == 0
    av = np.atleast_1d(np.asarray(a, dtype=float))[:, None]
    n1 = (cf + 1.0)[None, :]
    if s <= 1e-100:  # the tilt is negligible (and s² would underflow)
        shape = (av.shape[0], cf.size)
        res = (np.zeros(shape), np.broadcast_to(np.sqrt(n1), shape).copy(), np.zeros(shape, dtype=bool))
        return tuple(r[0] for r in res) if scalar else res
    zmax = 1.0 - 1e-15
    grid, h, half_l, at = _tilt_grid(s)
    k = _tilt_argmax(n1[0], av[:, 0], h, half_l, at)
    lo = grid[np.maximum(k - 1, 0)]
    hi = grid[np.minimum(k + 1, grid.size - 1)]
    y = grid[k]
    n1s, n1s2, s2 = n1 / s, n1 / s**2, s**2
    for _ in range(5):
        zy = np.minimum(y / s, zmax)
        omz, omy = 1.0 - zy * zy, 1.0 - y * y
        d1 = -n1s * np.arctanh(zy) + (zy / s) / omz + 2.0 * av / omy
        d2 = -n1s2 / omz + (1.0 + zy * zy) / (s2 * omz**2) + 4.0 * av * y / omy**2
        step = np.where(d2 < 0, -d1 / np.where(d2 < 0, d2, -1.0), 0.0)
        y_next = np.clip(y + step, lo, hi)
        if np.array_equal(y_next, y):  # (a fixed point: the later steps change nothing)
            break
        y = y_next
    u = y * n1 / s
    t = s / n1
    zz = np.minimum(y / s, zmax)
    prec = 1.0 / (n1 * (1.0 - zz * zz)) - 4.0 * av * t * t * y / (1.0 - y * y) ** 2
    edge = (u >= cf[None, :]) | (prec <= 0.0)
    u = np.where(edge, n1, u)
    sig = 1.0 / np.sqrt(np.where(prec > 0, prec, 1.0 / n1))
    if scalar:
        return u[0], sig[0], edge[0]
    return u, sig, edge


def log_q_at(x: Array, c: Array, ctx: Ctx) -> Array:
    """log Q_c(x) at arbitrary cells 0 ≤ x ≤ c+1 (Loader's pmf; x = c+1: q·b(c)/(1+q))."""
    top = x >= c + 1
    xb = np.where(top, c, x).astype(float)
    cf = c.astype(float)
    lb = log_binom_pmf(xb, cf, 0.5, 0.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (
            lb - ctx.log1pq + np.where(top, -ctx.eps0, np.log1p(ctx.q * xb / np.maximum(cf - xb + 1.0, 1.0)))
        )


def log_q_ratio(x: Array, c: Array, ctx: Ctx) -> Array:
    """log Q_c(x+1)/Q_c(x) for 0 ≤ x ≤ c (closed form from b(x±1)/b(x))."""
    xf = x.astype(float)
    cf = c.astype(float)
    with np.errstate(divide="ignore"):
        out: Array = np.log((cf - xf) / (xf + 1.0) + ctx.q) - np.log1p(ctx.q * xf / (cf - xf + 1.0))
    return out


def log_geom(z: Array, w: Array) -> Array:
    """log Σ_{j<w} e^{jz} (w ≥ 1), stable for every real z."""
    za = np.abs(z)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = np.where(z > 0, (w - 1.0) * z, 0.0) + np.log(-np.expm1(-w * za)) - np.log(-np.expm1(-za))
    return np.where(za * w < 1e-12, np.log(w), v)
