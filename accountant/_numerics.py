"""Log-space numerical kernels shared by the bounds (vectorised, no Python loops over orders)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import gammaln

LOG2 = float(np.log(2.0))
# Relative outward rounding applied to every reported upper bound: float evaluation of a
# formula is accurate to a few ulps; 2**-40 ≈ 9e-13 covers it with room to spare.
_UP = 1.0 + 2.0**-40


def round_up(x: np.ndarray) -> np.ndarray:
    """Round an upper bound outward (never report less than the formula gives)."""
    return np.asarray(x, dtype=float) * _UP


def log_expm1(x):
    """log(e^x − 1) for x > 0, accurate for tiny and for huge x."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        big = x > 30.0
        safe = np.where(big, 1.0, x)
        return np.where(big, x + np.log1p(-np.exp(-np.where(big, x, 30.0))), np.log(np.expm1(safe)))


def log_comb(a, i):
    """log C(a, i) for real a >= i >= 0 (vectorised)."""
    a = np.asarray(a, dtype=float)
    i = np.asarray(i, dtype=float)
    return gammaln(a + 1.0) - gammaln(i + 1.0) - gammaln(a - i + 1.0)


def log_cosh(x):
    """log cosh(x) without overflow and without cancellation near 0."""
    x = np.abs(np.asarray(x, dtype=float))
    small = x < 1.0
    xs = np.where(small, x, 0.0)
    xl = np.where(small, 1.0, x)
    return np.where(small, np.log1p(2.0 * np.sinh(xs / 2.0) ** 2), xl + np.log1p(np.exp(-2.0 * xl)) - LOG2)


@lru_cache(maxsize=8)
def _tables(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read-only tables over j = 0..size−1: log j!, log Γ(j/2), log j."""
    j = np.arange(size, dtype=float)
    with np.errstate(divide="ignore"):
        tabs = (gammaln(j + 1.0), gammaln(j / 2.0), np.log(j))
    for t in tabs:
        t.setflags(write=False)
    return tabs


def int_tables(max_index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log j!, log Γ(j/2), log j) for j = 0..max_index at least (sizes rounded to powers of 2)."""
    size = 1 << max(10, int(max_index + 1).bit_length())
    return _tables(size)


def segment_logsumexp(values: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """logsumexp of each (non-empty) segment of ``values`` starting at ``offsets``."""
    if values.size == 0:
        return np.empty(0)
    m = np.maximum.reduceat(values, offsets)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = values - np.repeat(m, lengths)
        np.exp(values, out=values)
        s = np.add.reduceat(values, offsets)
        out = m + np.log(s)
    return np.where(np.isneginf(m), -np.inf, out)


# Above this many (order, index) pairs a ragged sum is evaluated in chunks of orders.
RAGGED_CHUNK = 4_000_000


def ragged_logsumexp(orders_int: np.ndarray, start: int, term) -> np.ndarray:
    """``log Σ_{i=start..α} exp(term(i, α − i))`` for every integer order α (−inf if empty).

    ``term(i, alpha_minus_i)`` receives the concatenated int64 index arrays of all orders and must
    be vectorised (use :func:`int_tables` lookups rather than gammaln per term); a part of the
    term that depends on α alone is best added afterwards. Work is Σ(α − start + 1), evaluated in
    chunks of orders so memory stays bounded.
    """
    orders_int = np.asarray(orders_int, dtype=np.int64)
    out = np.full(orders_int.shape, -np.inf)
    if orders_int.size == 0:
        return out
    lengths_all = np.maximum(orders_int - start + 1, 0)
    csum = np.cumsum(lengths_all)
    pos = 0
    while pos < orders_int.size:
        base = csum[pos - 1] if pos else 0
        stop = max(int(np.searchsorted(csum, base + RAGGED_CHUNK, side="right")), pos + 1)
        chunk = orders_int[pos:stop]
        lengths = lengths_all[pos:stop]
        nonempty = lengths > 0
        if np.any(nonempty):
            i, ami, offsets, lengths = _ragged_index(chunk[nonempty].tobytes(), start)
            res = np.full(nonempty.shape, -np.inf)
            res[nonempty] = segment_logsumexp(term(i, ami), offsets, lengths)
            out[pos:stop] = res
        pos = stop
    return out


@lru_cache(maxsize=64)
def _ragged_index(orders_bytes: bytes, start: int):
    """(i, α − i, offsets, lengths) of the concatenated segments i = start..α; cached per order
    set (the default grid is reused by every call), read-only."""
    chunk = np.frombuffer(orders_bytes, dtype=np.int64)
    lengths = chunk - start + 1
    offsets = np.cumsum(lengths) - lengths
    p = np.arange(int(lengths.sum()), dtype=np.int64)
    i = p - np.repeat(offsets - start, lengths)            # start..α within each segment
    ami = np.repeat(chunk + offsets - start, lengths) - p   # α − i
    for arr in (i, ami, offsets, lengths):
        arr.setflags(write=False)
    return i, ami, offsets, lengths


def interpolate_integer_bound(orders: np.ndarray, integer_bound) -> np.ndarray:
    """Extend an integer-order upper bound to real orders (thesis Remark 5.3.2).

    ``(α−1)·ε(α)`` is convex in α for any pair of distributions (van Erven & Harremoës 2014,
    Cor. 2), so for ⌊α⌋ ≤ α ≤ ⌈α⌉ with w = ⌈α⌉ − α,
    ``ε(α) ≤ [w(⌊α⌋−1)B(⌊α⌋) + (1−w)(⌈α⌉−1)B(⌈α⌉)]/(α−1)`` and ``(1−1)·B(1) := 0``.
    ``integer_bound(ints)`` evaluates the bound at integer orders ≥ 2.
    """
    orders = np.asarray(orders, dtype=float)
    lo = np.floor(orders)
    hi = np.ceil(orders)
    need = np.unique(np.concatenate([lo[lo >= 2], hi[hi >= 2]])).astype(np.int64)
    vals = integer_bound(need) if need.size else np.empty(0)

    def lookup(x):
        idx = np.searchsorted(need, x.astype(np.int64))
        idx = np.clip(idx, 0, max(need.size - 1, 0))
        got = vals[idx] if need.size else np.zeros_like(x)
        return np.where(x >= 2, (x - 1.0) * got, 0.0)

    w = hi - orders
    with np.errstate(invalid="ignore"):
        num = w * lookup(lo) + (1.0 - w) * lookup(hi)
    # integer orders: w == 0 and lo == hi, num = (α−1)·B(α)
    return num / (orders - 1.0)


def pure_dp_rdp(epsilon, orders) -> np.ndarray:
    """Tight RDP curve of an ε-DP mechanism (= binary randomized response at ε).

    ĉ_ε(α) = 1/(α−1)·log((e^{αε} + e^{(1−α)ε})/(e^ε + 1))
           = [log cosh((α−½)ε) − log cosh(ε/2)]/(α−1)       (the form evaluated here).
    Bounds.md §1 ("Cap — pure DP"); valid for every real α > 1.
    """
    epsilon = np.asarray(epsilon, dtype=float)
    orders = np.asarray(orders, dtype=float)
    # near α = 1 the difference of log cosh cancels (4% too low at α = 1 + 1e-15); there, with
    # h = (α−1)ε and a = ε/2: log cosh(a+h) − log cosh(a) = log1p(2·sinh²(h/2) + tanh(a)·sinh(h))
    h = (orders - 1.0) * epsilon
    hs = np.minimum(h, 1.0)
    near = np.log1p(2.0 * np.sinh(0.5 * hs) ** 2 + np.tanh(0.5 * epsilon) * np.sinh(hs))
    num = np.where(h <= 1.0, near, log_cosh((orders - 0.5) * epsilon) - log_cosh(0.5 * epsilon))
    out = np.maximum(num, 0.0) / (orders - 1.0)
    # never above ε itself (D_α ≤ D_∞ = ε); guards rounding at α → 1
    return np.minimum(out, epsilon * np.ones_like(out))


def convex_tighten(orders: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Tighten an upper-bound curve with the convexity of (α−1)·D_α (van Erven–Harremoës 2014).

    The true (α−1)·D_α is convex in α and tends to 0 at α = 1. If it lies below the points
    (α_i, (α_i−1)·B_i), it lies below their lower convex hull together with (1, 0) (any point of
    the hull is a convex combination of two of those points). So the hull, divided by (α−1), is a
    valid upper bound at every α_i that is never above B_i; a minimum of several bounds, which is
    not convex itself, gains at every kink. Orders with an infinite value are left as they are.
    """
    o = np.asarray(orders, dtype=float)
    v = np.asarray(values, dtype=float)
    fin = np.isfinite(v)
    if fin.sum() < 2:
        return v
    xs = np.concatenate([[1.0], o[fin]])
    ys = np.concatenate([[0.0], (o[fin] - 1.0) * v[fin]])
    srt = np.lexsort((ys, xs))
    xs, ys = xs[srt], ys[srt]
    hx: list[float] = []
    hy: list[float] = []
    for x, y in zip(xs.tolist(), ys.tolist()):  # Andrew's monotone chain, lower hull: O(m)
        if hx and x == hx[-1]:
            continue  # equal x: the first (smallest y) is kept
        while len(hx) >= 2 and (hx[-1] - hx[-2]) * (y - hy[-2]) - (hy[-1] - hy[-2]) * (x - hx[-2]) <= 0:
            hx.pop()
            hy.pop()
        hx.append(x)
        hy.append(y)
    hull = round_up(np.interp(o[fin], hx, hy) / (o[fin] - 1.0))
    out = v.copy()
    out[fin] = np.minimum(v[fin], hull)
    return out
