"""Log-space numerical kernels shared by the bounds (vectorised, no Python loops over orders)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._lazy import gammaln

LOG2 = float(np.log(2.0))
# Relative outward rounding applied to every reported upper bound: float evaluation of a
# formula is accurate to a few ulps; 2**-40 ≈ 9e-13 covers it with room to spare.
_UP = 1.0 + 2.0**-40


def round_up(x: ArrayLike) -> NDArray[np.float64]:
    """Round an upper bound outward (never report less than the formula gives)."""
    return np.asarray(x, dtype=np.float64) * _UP


def log_expm1(x: ArrayLike) -> NDArray[np.float64]:
    """log(e^x − 1) for x ≥ 0, accurate for tiny and for huge x (−inf at 0, +inf at +inf).

    x > 30: x + log1p(−e^{−x}) (no overflow); otherwise log(expm1(x)) (full relative accuracy as
    x → 0).
    """
    xa = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        big = xa > 30.0
        safe = np.where(big, 1.0, xa)
        return np.where(big, xa + np.log1p(-np.exp(-np.where(big, xa, 30.0))), np.log(np.expm1(safe)))


def em1mx(z: ArrayLike) -> NDArray[np.float64]:
    """e^z − 1 − z (series for |z| < 0.05, else expm1(z) − z; relative error ≲ 1e-15)."""
    za = np.asarray(z, dtype=np.float64)
    out = np.expm1(za)
    out -= za
    small = np.abs(za) < 0.05
    if small.any():
        zs = za[small]
        out[small] = (
            zs
            * zs
            / 2.0
            * (
                1.0
                + zs
                / 3.0
                * (1.0 + zs / 4.0 * (1.0 + zs / 5.0 * (1.0 + zs / 6.0 * (1.0 + zs / 7.0 * (1.0 + zs / 8.0)))))
            )
        )
    return out


def _log_em1mx(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """log(e^z − 1 − z) ≥ −inf for any real z (z + log1p(−(1+z)e^{−z}) above 1: no overflow)."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        zb = np.where(z > 1.0, z, 2.0)
        return np.where(z > 1.0, zb + np.log1p(-(1.0 + zb) * np.exp(-zb)), np.log(em1mx(np.minimum(z, 1.0))))


def _log_phi_series(a: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """log φ_a(e^x) for |a·x| ≤ 0.05 and |x| ≤ 0.05: φ = a(a−1)x²/2·(1 + Σ_{k≥3} 2·S_k·x^{k−2}/k!),
    S_k = Σ_{i<k−1} a^i — the exact power series of e^{a·x} − 1 − a(e^x − 1) (12 terms: the
    neglected rest is below 1e-16 relative)."""
    sk = 1.0 + a
    term = x / 3.0  # 2·x/3!
    tot = sk * term
    for k in range(4, 13):
        sk = 1.0 + a * sk
        term = term * x / k
        tot = tot + sk * term
    return np.log(0.5 * a * (a - 1.0)) + 2.0 * np.log(np.abs(x)) + np.log1p(tot)


def log_phi(alpha: ArrayLike, lr: ArrayLike) -> NDArray[np.float64]:
    """log φ_α(r) with r = e^lr, φ_α(r) = r^α − 1 − α(r − 1) ≥ 0, for real α > 1 or α < 0.

    φ_α is the summand of E[R^α] − 1 = E[φ_α(R)] when E[R] = 1 (a likelihood ratio under the
    reference law): writing moments this way keeps every term non-negative, so a value of 1e-12
    keeps its relative accuracy. Branches (none cancels by more than a factor 2):

    * |α·lr| ≤ 0.05 and |lr| ≤ 0.05 — the power series (:func:`_log_phi_series`);
    * α < 0 — (e^y − 1 − y) + |α|·(e^lr − 1 − lr) with y = α·lr: two non-negative terms;
    * 1 < α < 2 — δ·h(lr) + e^lr·(e^{δ·lr} − 1 − δ·lr), δ = α − 1, h(x) = x·e^x − e^x + 1 ≥ 0:
      two non-negative terms, exact as α → 1;
    * α ≥ 2 — (e^y − 1 − y) − α(e^lr − 1 − lr) for |y| ≤ 1; y + log(1 − e^{−y}(1 + α(e^lr − 1)))
      for y > 1; log(expm1(y) − α·expm1(lr)) for y < −1.
    """
    al_b, lr_b = np.asarray(alpha, dtype=np.float64), np.asarray(lr, dtype=np.float64)
    if al_b.shape != lr_b.shape:
        al_b, lr_b = np.broadcast_arrays(al_b, lr_b)
    y = al_b * lr_b
    ay = np.abs(y)
    out = np.empty(y.shape)
    al, x_all, y_all, o = al_b.ravel(), lr_b.ravel(), y.ravel(), out.reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        small = ay.ravel() <= 0.05
        if al.size and al.min() <= 1.0:
            small &= (al > 1.0) | (np.abs(x_all) <= 0.05)
        neg = ~small & (al < 0.0)
        near1 = ~small & ~neg & (al < 2.0)
        rest = ~(small | neg | near1)
        for kind, mask in (
            ("small", small),
            ("neg", neg),
            ("near1", near1),
            ("mid", rest & (np.abs(y_all) <= 1.0)),
            ("big", rest & (y_all > 1.0)),
            ("low", rest & (y_all < -1.0)),
        ):
            i = mask.nonzero()[0]
            if i.size:
                o[i] = _log_phi_branch(kind, al[i], x_all[i], y_all[i])
    return out


def _log_phi_branch(
    kind: str, a: NDArray[np.float64], x: NDArray[np.float64], yy: NDArray[np.float64]
) -> NDArray[np.float64]:
    """One branch of :func:`log_phi` (its docstring) on the elements routed to it."""
    if kind == "small":
        return _log_phi_series(a, x)
    if kind == "neg":
        return np.logaddexp(_log_em1mx(yy), np.log(-a) + _log_em1mx(x))
    if kind == "near1":
        d = a - 1.0
        h = np.where(np.abs(x) < 1.0, x * np.expm1(x) - em1mx(x), 1.0 + np.exp(x) * (x - 1.0))
        return np.log(d * h + np.exp(x) * em1mx(d * x))
    if kind == "mid":
        return np.log(em1mx(yy) - a * em1mx(x))
    if kind == "big":
        return yy + np.log1p(-np.exp(-yy) * (1.0 + a * np.expm1(x)))
    return np.log(np.expm1(yy) - a * np.expm1(x))


# ----------------------------------------------------------------------------------------------
# log-sum-exp (−inf allowed everywhere; an all −inf group gives −inf, a +inf entry gives +inf)
# ----------------------------------------------------------------------------------------------
def logsumexp(m: NDArray[np.float64], axis: int = 0) -> NDArray[np.float64]:
    """log Σ exp(m) along ``axis``."""
    mx = m.max(axis=axis, keepdims=True)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(under="ignore", invalid="ignore", divide="ignore"):
        tot = np.log(np.exp(m - safe).sum(axis=axis, keepdims=True))
    out: NDArray[np.float64] = np.squeeze(np.where(np.isfinite(mx), safe + tot, mx), axis=axis)
    return out


def logsumexp_many(*arrs: ArrayLike) -> NDArray[np.float64]:
    """Element-wise log Σ exp of several broadcastable arrays."""
    parts = np.broadcast_arrays(*[np.asarray(a, dtype=np.float64) for a in arrs])
    return logsumexp(np.stack(parts), axis=0)


def segment_logsumexp(
    values: ArrayLike | tuple[NDArray[np.float64], ...], starts: NDArray[np.intp], axis: int = -1
) -> NDArray[np.float64]:
    """log Σ exp over consecutive non-empty segments along ``axis``, the segments beginning at the
    increasing indices ``starts`` (the last one runs to the end). ``values`` may be a tuple of
    arrays of one shape: their exponentials are added cell by cell before summing."""
    vals: tuple[NDArray[np.float64], ...] = (
        values if isinstance(values, tuple) else (np.asarray(values, dtype=np.float64),)
    )
    if vals[0].shape[axis] == 0:
        shape = list(vals[0].shape)
        shape[axis] = 0
        return np.empty(shape)
    sizes = np.diff(np.append(starts, vals[0].shape[axis]))
    top = vals[0] if len(vals) == 1 else np.maximum.reduce(vals)
    mx = np.maximum.reduceat(top, starts, axis=axis)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    rep = np.repeat(safe, sizes, axis=axis)
    with np.errstate(under="ignore", invalid="ignore", divide="ignore"):
        ex = np.exp(vals[0] - rep)
        for v in vals[1:]:
            ex += np.exp(v - rep)
        tot = np.add.reduceat(ex, starts, axis=axis)
        return np.where(np.isfinite(mx), safe + np.log(tot), mx)


def log_comb(a: ArrayLike, i: ArrayLike) -> NDArray[np.float64]:
    """log C(a, i) for real a >= i >= 0 (vectorised)."""
    af = np.asarray(a, dtype=np.float64)
    fi = np.asarray(i, dtype=np.float64)
    return gammaln(af + 1.0) - gammaln(fi + 1.0) - gammaln(af - fi + 1.0)


@lru_cache(maxsize=8)
def _tables(size: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Read-only tables over j = 0..size−1: log j!, log Γ(j/2), log j."""
    j = np.arange(size, dtype=np.float64)
    with np.errstate(divide="ignore"):
        tabs = (gammaln(j + 1.0), gammaln(j / 2.0), np.log(j))
    for t in tabs:
        t.setflags(write=False)
    return tabs


def int_tables(max_index: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(log j!, log Γ(j/2), log j) for j = 0..max_index at least (sizes rounded to powers of 2)."""
    size = 1 << max(10, int(max_index + 1).bit_length())
    return _tables(size)


# Above this many (order, index) pairs a ragged sum is evaluated in chunks of orders.
RAGGED_CHUNK = 4_000_000


# A ragged sum's term: (i, α − i) index arrays -> log-term array of their shape.
RaggedTerm = Callable[[NDArray[np.int64], NDArray[np.int64]], NDArray[np.float64]]


# A log-concave part of a ragged sum: (its first index, its log-term as a RaggedTerm).
ConcavePart = tuple[int, RaggedTerm]


def ragged_logsumexp(
    orders_int: ArrayLike, start: int, term: RaggedTerm, concave: tuple[ConcavePart, ...] = ()
) -> NDArray[np.float64]:
    """``log Σ_{i=start..α} exp(term(i, α − i))`` for every integer order α (−inf if empty).

    ``term(i, alpha_minus_i)`` receives the concatenated int64 index arrays of all orders and must
    be vectorised (use :func:`int_tables` lookups rather than gammaln per term); a part of the
    term that depends on α alone is best added afterwards. Work is Σ(α − start + 1), evaluated in
    chunks of orders so memory stays bounded.

    ``concave``, when given, splits the term into parts ``(s_p, L_p)`` with
    ``exp(term(i, α−i)) = Σ_p exp(L_p(i, α−i))`` (a part is 0 below its own first index ``s_p``),
    each part LOG-CONCAVE in i on s_p..α for every α (its ratio of consecutive terms
    non-increasing: the caller proves it). Then each order's sum is taken over a window only,
    and a bound of every part's neglected tails is added (:func:`concave_windows`): the result
    is never below the full sum, and above it by at most a relative 2^-57 — so orders whose
    sums spread over a few hundred terms cost a few hundred terms, not α. Orders with at most
    :data:`WINDOW_MIN` terms are summed in full (bit for bit as without ``concave``).
    """
    shape = np.shape(orders_int)
    ords = np.asarray(orders_int, dtype=np.int64).ravel()
    out = np.full(ords.shape, -np.inf)
    if ords.size == 0:
        return out.reshape(shape)
    lo = np.full(ords.shape, start, dtype=np.int64)
    hi = ords
    tail = None
    if concave:
        lo, hi, tail = concave_windows(ords, start, concave)
    lengths_all = np.maximum(hi - lo + 1, 0)
    csum = np.cumsum(lengths_all)
    pos = 0
    while pos < ords.size:
        base = csum[pos - 1] if pos else 0
        stop = max(int(np.searchsorted(csum, base + RAGGED_CHUNK, side="right")), pos + 1)
        nonempty = lengths_all[pos:stop] > 0
        if np.any(nonempty):
            chunk = ords[pos:stop][nonempty]
            if tail is None:
                i, ami, offsets, _ = _ragged_index(chunk.tobytes(), start)
            else:
                i, ami, offsets = _window_index(chunk, lo[pos:stop][nonempty], hi[pos:stop][nonempty])
            res = np.full(nonempty.shape, -np.inf)
            res[nonempty] = segment_logsumexp(term(i, ami), offsets)
            out[pos:stop] = res
        pos = stop
    if tail is not None:
        cut = tail > -np.inf
        out[cut] = np.logaddexp(out[cut], tail[cut])
    return out.reshape(shape)


def _window_index(
    ords: NDArray[np.int64], lo: NDArray[np.int64], hi: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """(i, α − i, offsets) of the concatenated segments i = lo..hi (non-empty) of the orders α."""
    lengths = hi - lo + 1
    offsets = np.cumsum(lengths) - lengths
    p = np.arange(int(lengths.sum()), dtype=np.int64)
    i = p - np.repeat(offsets - lo, lengths)
    ami = np.repeat(ords + offsets - lo, lengths) - p
    return i, ami, offsets


#: orders whose ragged sum has at most this many terms are summed in full
WINDOW_MIN = 128
#: every neglected tail of a log-concave part is at most 2^-TAIL_BITS of its largest term
TAIL_BITS = 60
# a tail is bounded geometrically only where its log-ratio is at most −2^-20: far beyond the
# rounding of a difference of two log-terms (≲ 1e-10 even at α = 10⁶)
_RATIO_MARGIN = 2.0**-20
_GRID_POINTS = 64  # a window's ends are chosen among this many + 1 evenly spaced indices


def concave_windows(
    ords: NDArray[np.int64], start: int, parts: tuple[ConcavePart, ...]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """(lo, hi, log tail) per order: sum the ragged terms over lo..hi only and add e^{tail}.

    For one log-concave part t_i = exp(L(i, α−i)), i = s..α, with r_i = t_{i+1}/t_i
    non-increasing in i (the caller's proof):

    * upper tail: if r_h < 1 then for every j > h, t_j = t_h·r_h·…·r_{j−1} ≤ t_h·r_h^{j−h}, so
      Σ_{j>h} t_j ≤ t_h·r_h/(1 − r_h);
    * lower tail: if r_{l−1} > 1 then with q = 1/r_{l−1} < 1, for every j < l,
      t_j = t_l/(r_j·…·r_{l−1}) ≤ t_l·q^{l−j}, so Σ_{j<l} t_j ≤ t_l·q/(1 − q).

    Both read B(i, e) = L(i) + e − log(1 − e^e), with e = L(i ± 1) − L(i) the log-ratio
    stepping outward (the neighbour above h, below l). The ends are taken among evenly spaced
    indices around the largest of their terms, p (:func:`_part_window`), where e ≤ −2^-20 and
    B ≤ L(p) − TAIL_BITS·log 2 — or at the end of the range, with no tail. As p lies inside the
    window, t_p is at most the window's sum: each neglected tail is at most 2^-60 of it. The
    tails, doubled against rounding, are added, so the result bounds the full sum from above.
    For several parts the window is the hull of theirs and all their tails are added (a tail
    beyond the hull is part of the tail beyond the part's own window). A term that is not
    finite leaves the order's full range. Only orders with more than :data:`WINDOW_MIN` terms
    are windowed. Soundness needs only the log-concavity and the ratio test at the chosen end;
    nothing else about the search.
    """
    lo = np.full(ords.shape, start, dtype=np.int64)
    hi = ords.astype(np.int64, copy=True)
    tail = np.full(ords.shape, -np.inf)
    big = np.flatnonzero(ords - start + 1 > WINDOW_MIN)
    if big.size == 0 or not parts:
        return lo, hi, tail
    a = ords[big]
    wlo, whi = a.copy(), np.full(a.shape, start, dtype=np.int64)
    tails = []
    for s, part in parts:
        plo, phi, ptail = _part_window(a, max(s, start), part)
        wlo = np.minimum(wlo, plo)
        whi = np.maximum(whi, phi)
        tails.append(ptail)
    lo[big], hi[big] = wlo, np.maximum(whi, wlo)
    tail[big] = logsumexp(np.stack(tails), axis=0)
    return lo, hi, tail


def _part_window(
    a: NDArray[np.int64], s: int, part: RaggedTerm
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """:func:`concave_windows` for one part on the orders ``a`` (each > s): lo, hi, log tail.

    Ends are chosen among :data:`_GRID_POINTS` + 1 evenly spaced indices g (s and α included),
    with the terms at g and g ± 1: p is the g of the largest term, hi the first g ≥ p and lo the
    last g ≤ p where the tail bound applies and is small enough (else α, resp. s, with no tail).
    """
    m = a.size
    cols = np.arange(_GRID_POINTS + 1)
    g = s + ((a - s)[:, None] * (cols / _GRID_POINTS)).astype(np.int64)  # s ≤ g ≤ α, both ends in
    al = a[:, None]
    gu = np.minimum(g + 1, al)
    gd = np.maximum(g - 1, s)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        lg = part(g, al - g)
        rows = np.arange(m)
        best = np.argmax(lg, axis=1)
        thr = lg[rows, best] - TAIL_BITS * LOG2
        ends = []
        for nb, side in ((gu, cols >= best[:, None]), (gd, cols <= best[:, None])):
            e = part(nb, al - nb) - lg  # log of the ratio stepping outward
            b = lg + e - np.log(-np.expm1(e))
            ok = side & (nb != g) & (e <= -_RATIO_MARGIN) & (b <= thr[:, None])
            ends.append((ok, b))
    (ok_u, b_u), (ok_d, b_d) = ends
    has_u, has_d = ok_u.any(axis=1), ok_d.any(axis=1)
    cu = np.argmax(ok_u, axis=1)  # the first usable g above p
    cd = _GRID_POINTS - np.argmax(ok_d[:, ::-1], axis=1)  # the last usable g below p
    hi = np.where(has_u, g[rows, cu], a)
    lo = np.where(has_d, g[rows, cd], s)
    tail = np.logaddexp(np.where(has_u, b_u[rows, cu], -np.inf), np.where(has_d, b_d[rows, cd], -np.inf))
    return lo, hi, tail + LOG2


@lru_cache(maxsize=64)
def _ragged_index(
    orders_bytes: bytes, start: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """(i, α − i, offsets, lengths) of the concatenated segments i = start..α; cached per order
    set (the default grid is reused by every call), read-only."""
    chunk = np.frombuffer(orders_bytes, dtype=np.int64)
    lengths = chunk - start + 1
    offsets = np.cumsum(lengths) - lengths
    p = np.arange(int(lengths.sum()), dtype=np.int64)
    i = p - np.repeat(offsets - start, lengths)  # start..α within each segment
    ami = np.repeat(chunk + offsets - start, lengths) - p  # α − i
    for arr in (i, ami, offsets, lengths):
        arr.setflags(write=False)
    return i, ami, offsets, lengths


def also_at(
    curve: Callable[[NDArray[np.float64]], NDArray[np.float64]], o: NDArray[np.float64]
) -> tuple[Callable[[NDArray[np.int64]], NDArray[np.float64]], Callable[[], NDArray[np.float64]]]:
    """An element-wise curve asked for at the integer orders of an interpolation and at the
    orders ``o``: ``at_ints(ints)`` evaluates both in one call and ``at_o()`` returns the part
    at ``o`` (evaluated then, if ``at_ints`` was not called) — the values of separate calls."""
    kept: list[NDArray[np.float64]] = []

    def at_ints(ints: NDArray[np.int64]) -> NDArray[np.float64]:
        both = curve(np.concatenate([np.asarray(ints, dtype=np.float64), o]))
        kept.append(both[ints.size :])
        return both[: ints.size]

    def at_o() -> NDArray[np.float64]:
        return kept[-1] if kept else curve(o)

    return at_ints, at_o


def interpolate_integer_bound(
    orders: ArrayLike, integer_bound: Callable[[NDArray[np.int64]], NDArray[np.float64]]
) -> NDArray[np.float64]:
    """Extend an integer-order upper bound to real orders (thesis Remark 5.3.2).

    ``(α−1)·ε(α)`` is convex in α for any pair of distributions (van Erven & Harremoës 2014,
    Cor. 2), so for ⌊α⌋ ≤ α ≤ ⌈α⌉ with w = ⌈α⌉ − α,
    ``ε(α) ≤ [w(⌊α⌋−1)B(⌊α⌋) + (1−w)(⌈α⌉−1)B(⌈α⌉)]/(α−1)`` and ``(1−1)·B(1) := 0``.
    ``integer_bound(ints)`` evaluates the bound at integer orders ≥ 2.
    """
    o = np.asarray(orders, dtype=np.float64)
    lo = np.floor(o)
    hi = np.ceil(o)
    need = np.unique(np.concatenate([lo[lo >= 2], hi[hi >= 2]])).astype(np.int64)
    vals = integer_bound(need) if need.size else np.empty(0)

    def lookup(x: NDArray[np.float64]) -> NDArray[np.float64]:
        idx = np.searchsorted(need, x.astype(np.int64))
        idx = np.clip(idx, 0, max(need.size - 1, 0))
        got = vals[idx] if need.size else np.zeros_like(x)
        return np.where(x >= 2, (x - 1.0) * got, 0.0)

    w = hi - o
    with np.errstate(invalid="ignore"):
        num = w * lookup(lo) + (1.0 - w) * lookup(hi)
    # integer orders: w == 0 and lo == hi, num = (α−1)·B(α)
    return num / (o - 1.0)


def log_pure_dp_excess(epsilon: ArrayLike, orders: ArrayLike) -> NDArray[np.float64]:
    """log(F_α − 1) for binary randomized response at level ε: F_α = (e^{αε} + e^{(1−α)ε})/(e^ε + 1)
    is E[R^α] of its likelihood ratio R ∈ {e^ε w.p. 1/(e^ε+1), e^{−ε} w.p. e^ε/(e^ε+1)} (E[R] = 1),
    so F_α − 1 = (e^ε·φ_α(e^{−ε}) + φ_α(e^ε))/(e^ε + 1) (:func:`log_phi`: two non-negative cells,
    no cancellation, also as α → 1 or ε → 0). Any real α > 1; −inf at ε = 0."""
    eps = np.asarray(epsilon, dtype=np.float64)
    a = np.asarray(orders, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        lw1 = -np.log1p(np.exp(-eps))  # log(e^ε/(e^ε + 1))
        lw0 = -eps + lw1  # log(1/(e^ε + 1))
    shape = np.broadcast(eps, a).shape
    a_b = a.ravel() if a.shape == shape else np.broadcast_to(a, shape).ravel()
    if eps.ndim == 0:
        lr = np.repeat(np.array([-eps, eps]), a_b.size)
    else:
        e_b = np.broadcast_to(eps, shape).ravel()
        lr = np.concatenate([-e_b, e_b])
    # both cells in one (element-wise) call of log_phi
    both = log_phi(np.concatenate([a_b, a_b]), lr)
    return np.logaddexp(lw1 + both[: a_b.size].reshape(shape), lw0 + both[a_b.size :].reshape(shape))


def pure_dp_rdp(epsilon: ArrayLike, orders: ArrayLike) -> NDArray[np.float64]:
    """Tight RDP curve of an ε-DP mechanism (= binary randomized response at ε).

    ĉ_ε(α) = 1/(α−1)·log((e^{αε} + e^{(1−α)ε})/(e^ε + 1))   (bounds.md §1, "Cap — pure DP"),
    evaluated as log(1 + (F_α − 1))/(α−1) from :func:`log_pure_dp_excess` and rounded up by a
    relative 1e-14 (the φ-form is accurate to a few ulps at every α > 1, also next to 1); never
    above ε itself (D_α ≤ D_∞ = ε). Valid for every real α > 1; 0 at ε = 0, +inf at ε = +inf.
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    a = np.asarray(orders, dtype=np.float64)
    if eps.ndim == 0 and 0.0 < eps < np.inf:  # one finite level: the general case below, shortened
        with np.errstate(invalid="ignore", divide="ignore"):
            one = np.logaddexp(0.0, log_pure_dp_excess(eps, a)) / (a - 1.0) * (1.0 + 1e-14)
            return np.asarray(np.minimum(one, eps))
    shape = np.broadcast(eps, a).shape
    fin = np.broadcast_to(np.isfinite(eps) & (eps > 0.0), shape)
    e_in = np.where(fin, eps, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.logaddexp(0.0, log_pure_dp_excess(e_in, a)) / (a - 1.0) * (1.0 + 1e-14)
        out = np.minimum(out, e_in * np.ones(shape))
    return np.where(fin, out, np.where(np.broadcast_to(eps, shape) > 0.0, np.inf, 0.0))


def convex_tighten(orders: ArrayLike, values: ArrayLike) -> NDArray[np.float64]:
    """Tighten an upper-bound curve with the convexity of (α−1)·D_α (van Erven–Harremoës 2014).

    The true (α−1)·D_α is convex in α and tends to 0 at α = 1. If it lies below the points
    (α_i, (α_i−1)·B_i), it lies below their lower convex hull together with (1, 0) (any point of
    the hull is a convex combination of two of those points). So the hull, divided by (α−1), is a
    valid upper bound at every α_i that is never above B_i; a minimum of several bounds, which is
    not convex itself, gains at every kink. Orders with an infinite value are left as they are.
    """
    o = np.asarray(orders, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
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
    out: NDArray[np.float64] = v.copy()
    out[fin] = np.minimum(v[fin], hull)
    return out


def checked_curve(values: ArrayLike, orders: NDArray[np.float64] | NDArray[np.int64]) -> NDArray[np.float64]:
    """``values`` as a float curve on ``orders``; FloatingPointError if it has the wrong shape, NaN or a
    negative value."""
    out = np.asarray(values, dtype=float)
    if out.shape != orders.shape or np.any(np.isnan(out)) or np.any(out < 0):
        raise FloatingPointError("the bound returned an invalid curve")
    return out


def safe_bound(
    compute: Callable[[], NDArray[np.float64]],
    name: str,
    orders: NDArray[np.float64] | NDArray[np.int64],
    params: tuple[float, ...],
) -> NDArray[np.float64]:
    """An optional tightening must never break an answer: if it fails, it is left out (+inf,
    so the minimum falls back to the other valid bounds; nothing is stored) and the failure is
    logged."""
    try:
        return compute()
    except Exception:  # noqa: BLE001 - logged, and the bound is simply not used
        logging.getLogger("accountant").exception(
            "bound %s failed for %r; falling back to the other bounds", name, params
        )
        return np.full(orders.shape, np.inf)
