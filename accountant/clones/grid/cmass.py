"""The law of C ~ Bin(N, p) summed over the bins of a C-grid: the weights W_j of the clone engines
(FMT21 §3; bounds.md §8; p the clone probability, ``Ctx.p``: e^{−ε0}, or 2/(e^{ε0}+1) for
randomized response, bounds.md §12).

For points p_0 < p_1 < … the bins are [p_j, p_{j+1} − 1] and [p_last, N]. Every mass multiplies a
non-negative term of the bound, so each is returned (log) as an upper bound on the exact mass:
inside the window W = [lo, hi] = c0 ± (40σ_C + 40) with an excess of at most 2⁻⁶⁰ relative beyond
the rounding of Loader's pmf (≲ 2e-12 relative where log pmf ≥ −40, as the whole-window sums had,
tests/accountant/test_binomial_pmf.py). A window of fewer than ``FULL_MAX`` terms is summed whole (Loader-anchored
log pmf at every k, :func:`accountant._binomial.log_binom_pmf_range`); a wider one from three
certified pieces:

* *Far tails* (as before, for the parts of bins outside W): P(C ≤ k) ≤ pmf(k)/(1 − r_k) with
  r_k = pmf(k−1)/pmf(k) = k(1−p)/((N−k+1)p), and P(C ≥ k) ≤ pmf(k)/(1 − r'_k) with
  r'_k = pmf(k+1)/pmf(k) = (N−k)p/((k+1)(1−p)), whenever the ratio is < 1 (else the trivial
  bound 1): r_k increases and r'_k decreases in k, so the terms beyond k are dominated by a
  geometric series of ratio r_k (r'_k).
* *Truncated sums* inside W. The pmf is log-concave (r'_k decreasing): on a bin [A, B] its largest
  term is at k* = the mode ⌊(N+1)p⌋ clipped to [A, B], and the terms fall away from k* on both
  sides. The terms of a run [k_l, k_r] ∋ k* are summed exactly; the rest of the bin is bounded by
  the far-tail bounds taken at the cuts, P(C ≤ k_l − 1) and P(C ≥ k_r + 1) (any cut gives an
  upper bound; the cut only decides the excess). The cuts are widened until each of the two
  bounds is ≤ 2⁻⁶²·pmf(k*) ≤ 2⁻⁶²·(bin mass): the excess is ≤ 2⁻⁶¹ relative. About ±9.5σ_C
  around the mode and ≈ 43σ_C²/d terms in a bin whose nearest end lies d ≫ σ_C from it are
  summed, instead of the 80σ_C of W.
* *Complement.* The bin c holding the mode, when its run is long (≥ 256 terms) and it holds at
  least half of the law (Σ_{j ≠ c} S_j ≤ ½): 1 − Σ_{j ≠ c} S_j, S_j the exactly summed runs of
  the other bins. Each S_j is a sum of some of bin j's terms (a lower
  bound on its mass), so this is an upper bound on bin c's mass (its parts outside W included);
  its excess is what the S_j leave out, at most E = Σ_{j ≠ c} (bounds at the cuts of j) +
  P(C < lo) + P(C > hi) + P(C < p_0) (far-tail bounds), and it is used only when
  E ≤ 2⁻⁶⁰·(1 − Σ S_j − E) ≤ 2⁻⁶⁰·(bin c's mass) (checked). The S_j carry the pmf's rounding
  (≲ 2e-12 relative), so bin c's mass carries ≲ 2e-12·(1 − M_c)/M_c ≤ 2e-12 relative. Else the
  bin's own run is summed, as any other.

Exactly summed runs (:func:`_range_logsums`), in blocks of 64 terms: Loader's pmf at the first k
of the block, times the cumulative products of the exact ratios pmf(k)/pmf(k−1) =
(N−k+1)p/(k(1−p)) (≲ 4 ulps each: ≲ 3e-14 relative on a term), in numpy or — the same products
in the same order — in a compiled loop (:func:`accountant.clones.compiled.sums.pmf_block_sums`, when
the compiled kernels are on, :func:`accountant.clones.compiled.available`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..._binomial import log_binom_pmf, log_binom_pmf_range
from ..._numerics import segment_logsumexp
from .. import compiled
from ..types import Array, Ctx

BLOCK = 64  # terms per Loader anchor
FULL_MAX = 8192  # a window W of fewer terms is summed whole
LOG_CUT = -62.0 * math.log(2.0)  # each side's bound at the cut ≤ 2⁻⁶² × the bin's largest term
LOG_REL = -60.0 * math.log(2.0)  # the complement's excess ≤ 2⁻⁶⁰ × its value
_MEMO_MAX = 1 << 16  # bins remembered per instance
_NATS = 45.0  # first guess of the fall of the terms at the cut (≈ −LOG_CUT plus a margin)


def _steps(a: Array, dd: Array, nats: Array | float) -> Array:
    """The j ≥ 0 with a·j + dd·j²/2 = nats (a ≥ 0 the log-ratio at the start, dd > 0 its change
    per step): where the terms have fallen by ``nats`` (an estimate: the cut is checked)."""
    with np.errstate(invalid="ignore", over="ignore"):
        out: Array = 2.0 * nats / (a + np.sqrt(a * a + 2.0 * dd * nats))
    return out


class _Runs(NamedTuple):
    """The summed run [k_l, k_r] of each bin, the log pmf of its largest term, the log-bound on
    the rest of the bin, and the log pmf at the extra points asked for (:meth:`CMass._runs`)."""

    k_l: Array
    k_r: Array
    ref: Array
    rest: Array
    lp_extra: Array


class CMass:
    """log P(C ∈ bin) for C ~ Bin(N, p) over the bins of a C-grid (module docstring): upper bounds
    with an excess ≤ 2⁻⁶⁰ relative (beyond the pmf's rounding). A window W of fewer than
    ``whole_max`` terms is summed whole (no truncation), its pmf computed once — for a caller that
    asks for many grids (the adaptive engine) that is cheaper up to larger windows; wider ones
    are summed per bin, each bin once per instance."""

    def __init__(self, ctx: Ctx, whole_max: int = FULL_MAX):
        self.ctx = ctx
        half = 40.0 * ctx.sig_c + 40.0
        self.lo = int(max(0, math.floor(ctx.c0 - half)))
        self.hi = int(min(ctx.N, math.ceil(ctx.c0 + half)))
        # pmf(k+1) ≥ pmf(k) iff k ≤ (N+1)p − 1: the largest term is at ⌊(N+1)p⌋ (its rounding
        # only moves where the summed ranges start, never a bound)
        self.mode = int(min(max(math.floor((ctx.N + 1) * ctx.p), self.lo), self.hi))
        self.memo: tuple[Array, Array] = (np.empty(0, dtype=np.int64), np.empty((3, 0)))
        self.deferred: dict[tuple[int, int], tuple[Array, Array, Array]] = {}
        self.far: list[float] | None = None  # log-bounds on P(C < lo) and P(C > hi)
        self.lpmf: Array | None = None
        if self.hi - self.lo < whole_max:
            self.lpmf = log_binom_pmf_range(self.lo, self.hi, ctx.N, ctx.p, ctx.p1, block=32)

    def _lp(self, k: Array) -> Array:
        return log_binom_pmf(k.astype(float), float(self.ctx.N), self.ctx.p, self.ctx.p1)

    def _geo(self, k: Array, lp: Array, lower: bool) -> Array:
        """log of the geometric-series bound on P(C ≤ k) (``lower``) or P(C ≥ k) from log pmf(k)
        = ``lp``; 0 where the pmf ratio is not < 1."""
        ctx = self.ctx
        kf = k.astype(float)
        big_n = float(ctx.N)
        with np.errstate(divide="ignore", invalid="ignore"):
            if lower:
                r = kf * ctx.p1 / ((big_n - kf + 1.0) * ctx.p)
            else:
                r = (big_n - kf) * ctx.p / ((kf + 1.0) * ctx.p1)
            out: Array = np.where(r < 1.0, lp - np.log1p(-np.where(r < 1.0, r, 0.0)), 0.0)
        return out

    def _tail(self, k: Array, lower: bool) -> Array:
        return self._geo(k, self._lp(k), lower)

    def _guess(self, ks: Array, span: Array, up: bool) -> Array:
        """First guess of the run length from ks (k increasing when ``up``): where the terms
        have fallen by ~45 nats plus log 1/(1 − r) (Gaussian profile of the log-ratios), ≤ span."""
        big_n = float(self.ctx.N)
        kf = ks.astype(float)
        q, q1 = self.ctx.p, self.ctx.p1
        with np.errstate(divide="ignore", invalid="ignore"):
            if up:  # log of the ratio pmf(k+1)/pmf(k) at ks, and of pmf(k−1)/pmf(k) below
                lr = np.log((big_n - kf) * q) - np.log((kf + 1.0) * q1)
            else:
                lr = np.log(kf * q1) - np.log((big_n - kf + 1.0) * q)
            a = np.maximum(np.nan_to_num(-lr, nan=0.0), 0.0)
            dd = 1.0 / np.maximum(big_n - kf, 1.0) + 1.0 / (kf + 1.0)
            j0 = _steps(a, dd, _NATS)
            j0 = _steps(a, dd, _NATS + np.maximum(0.0, -np.log(a + dd * j0)))
        j = np.minimum(np.ceil(np.nan_to_num(j0, nan=0.0, posinf=9e18)), 9e18).astype(np.int64) + 1
        out: Array = np.minimum(j, span)
        return out

    def _widen(self, ks: Array, span: Array, ref: Array, j: Array, bound: Array, up: bool) -> None:
        """Widens the runs whose bound at the cut exceeds 2⁻⁶²·pmf(ks) (×1.5 per round, in place)
        until it does not or the run reaches its end (bound −inf there)."""
        sgn = 1 if up else -1
        for _ in range(200):  # (a bound of every run long before 200 rounds)
            bad = np.flatnonzero((j < span) & (bound > ref + LOG_CUT))
            if bad.size == 0:
                break
            j[bad] = np.minimum(span[bad], j[bad] + j[bad] // 2 + 1)
            bound[bad] = self._tail(ks[bad] + sgn * (j[bad] + 1), not up)
        bound[j >= span] = -np.inf

    def _runs(self, a_in: Array, b_in: Array, extra: Array) -> _Runs:
        """For bins [a_in, b_in] inside W: the summed runs [k_l, k_r], log pmf of their largest
        term, the log-bound on the rest of each bin, and log pmf at the points ``extra`` (one
        evaluation of Loader's pmf for all of them)."""
        ks = np.clip(self.mode, a_in, b_in)
        span_l, span_r = ks - a_in, b_in - ks
        j_l, j_r = self._guess(ks, span_l, False), self._guess(ks, span_r, True)
        k_l, k_r = ks - j_l - 1, ks + j_r + 1  # the first terms left out (if inside the bin)
        m = ks.size
        lp = self._lp(np.concatenate([ks, k_l, k_r, extra]))
        ref = lp[:m]
        b_l = self._geo(k_l, lp[m : 2 * m], True)
        b_r = self._geo(k_r, lp[2 * m : 3 * m], False)
        b_l[j_l >= span_l] = -np.inf
        b_r[j_r >= span_r] = -np.inf
        self._widen(ks, span_l, ref, j_l, b_l, False)
        self._widen(ks, span_r, ref, j_r, b_r, True)
        return _Runs(ks - j_l, ks + j_r, ref, np.logaddexp(b_l, b_r), lp[3 * m :])

    def _evaluate(self, a: Array, b: Array) -> tuple[Array, Array, Array]:
        """For bins [a, b]: log S (the summed runs; NaN for the bin of the mode when its run is
        long: left to the complement, its run kept in ``self.deferred``), the log-bound on the
        rest inside W and the far-tail bound on the parts outside W."""
        a_in, b_in = np.maximum(a, self.lo), np.minimum(b, self.hi)
        inner = np.flatnonzero(b_in >= a_in)
        lo_side, hi_side = np.flatnonzero(a < self.lo), np.flatnonzero(b > self.hi)
        k_lo_side, k_hi_side = np.minimum(b[lo_side], self.lo - 1), np.maximum(a[hi_side], self.hi + 1)
        big_n = self.ctx.N
        w_out = np.array([max(self.lo - 1, 0), min(self.hi + 1, big_n)])  # (for P(C ∉ W), once)
        extra = np.concatenate([k_lo_side, k_hi_side, w_out])
        k_l, k_r, ref, rest_in, lp_x = self._runs(a_in[inner], b_in[inner], extra)
        if self.far is None:
            lp_w = lp_x[-2:]
            self.far = [float(self._geo(w_out[:1], lp_w[:1], True)[0])] if self.lo > 0 else []
            self.far += [float(self._geo(w_out[1:], lp_w[1:], False)[0])] if self.hi < big_n else []
        s, rest, outer = (np.full(a.size, -np.inf) for _ in range(3))
        rest[inner] = rest_in
        hold = (a_in[inner] <= self.mode) & (self.mode <= b_in[inner]) & (k_r - k_l >= 4 * BLOCK)
        hold &= self._normal_mass(a[inner], b[inner]) >= 0.6  # (likely to pass the complement's check)
        summed = np.flatnonzero(~hold)
        s[inner[summed]] = _range_logsums(k_l[summed], k_r[summed], ref[summed], self.ctx)
        for i in np.flatnonzero(hold):
            s[inner[i]] = np.nan
            self.deferred[(int(a[inner[i]]), int(b[inner[i]]))] = (
                k_l[i : i + 1],
                k_r[i : i + 1],
                ref[i : i + 1],
            )
        outer[lo_side] = self._geo(k_lo_side, lp_x[: lo_side.size], True)
        lp_hi = lp_x[lo_side.size : lo_side.size + hi_side.size]
        outer[hi_side] = np.logaddexp(outer[hi_side], self._geo(k_hi_side, lp_hi, False))
        return s, rest, outer

    def _normal_mass(self, a: Array, b: Array) -> Array:
        """The normal approximation of P(a ≤ C ≤ b) (a guess, deciding a path only)."""
        z = np.sqrt(2.0) * max(self.ctx.sig_c, 1.0)
        lo = np.array([math.erf(v) for v in ((a - 0.5 - self.ctx.c0) / z).tolist()])
        hi = np.array([math.erf(v) for v in ((b + 0.5 - self.ctx.c0) / z).tolist()])
        out: Array = 0.5 * (hi - lo)
        return out

    def _key(self, a: Array, b: Array) -> Array:
        key: Array = a.astype(np.int64) * (self.ctx.N + 1) + b.astype(np.int64)  # (< 2⁶³: N ≤ 10⁹)
        return key

    def _lookup(self, a: Array, b: Array) -> tuple[Array, Array, Array]:
        """:meth:`CMass._evaluate` of the bins [a, b], each bin evaluated once per instance (the
        adaptive engine asks again for most bins of its refined grids)."""
        key = self._key(a, b)
        keys, vals = self.memo
        pos = np.minimum(np.searchsorted(keys, key), max(keys.size - 1, 0))
        miss = np.flatnonzero(keys[pos] != key) if keys.size else np.arange(key.size)
        if miss.size:
            if keys.size + miss.size > _MEMO_MAX:  # (start afresh with this grid's bins)
                keys, vals, miss = keys[:0], vals[:, :0], np.arange(key.size)
            new = np.vstack(self._evaluate(a[miss], b[miss]))
            keys = np.append(keys, key[miss])
            order = np.argsort(keys, kind="stable")
            keys, vals = keys[order], np.hstack([vals, new])[:, order]
            self.memo = (keys, vals)
            pos = np.searchsorted(keys, key)
        s, rest, outer = vals[:, pos]
        return s, rest, outer

    def _far(self, a0: int) -> list[float]:
        """log-bounds on P(C < lo), P(C > hi) and P(C < a0) (the mass no bin of the grid covers)."""
        out = list(self.far or [])
        return out + ([float(self._tail(np.array([a0 - 1]), True)[0])] if a0 > 0 else [])

    def _truncated(self, a: Array, b: Array) -> Array:
        """The masses of the bins [a, b] by truncated sums, the bin of the mode by the complement
        where it is certified, else by its own run (module docstring)."""
        s, rest, outer = self._lookup(a, b)
        with np.errstate(invalid="ignore"):  # (NaN: the bin left to the complement)
            out = np.logaddexp(np.logaddexp(s, rest), outer)
        held = np.flatnonzero(np.isnan(s))
        if held.size:
            c = int(held[0])
            oth = np.flatnonzero(np.arange(a.size) != c)
            val = _complement(s[oth], np.append(rest[oth], self._far(int(a[0]))))
            if val is None:  # its own run, kept for the next call
                k_l, k_r, ref = self.deferred[(int(a[c]), int(b[c]))]
                s_c = _range_logsums(k_l, k_r, ref, self.ctx)[0]
                keys, vals = self.memo
                vals[0, np.searchsorted(keys, self._key(a[c : c + 1], b[c : c + 1]))] = s_c
                val = float(np.logaddexp(np.logaddexp(s_c, rest[c]), outer[c]))
            out[c] = val
        return out

    def bins(self, pts: Array) -> Array:
        """log masses of [pts_j, pts_{j+1} − 1] and [pts_last, N] (``pts`` increasing)."""
        a = pts
        b = np.append(pts[1:] - 1, self.ctx.N)
        if self.lpmf is None:
            return self._truncated(a, b)
        inner = np.flatnonzero(np.minimum(b, self.hi) >= np.maximum(a, self.lo))
        out = np.full(a.size, -np.inf)
        if inner.size:
            st = np.maximum(a[inner], self.lo) - self.lo
            en = np.minimum(b[inner], self.hi) + 1 - self.lo
            bnd = np.unique(np.concatenate([[0], st, en]))
            bnd = bnd[bnd < self.lpmf.size]
            lse = segment_logsumexp(self.lpmf, bnd)
            out[inner] = lse[np.searchsorted(bnd, st)]
        m = a < self.lo
        if m.any():
            out[m] = np.logaddexp(out[m], self._tail(np.minimum(b[m], self.lo - 1), True))
        m = b > self.hi
        if m.any():
            out[m] = np.logaddexp(out[m], self._tail(np.maximum(a[m], self.hi + 1), False))
        return out


def _complement(log_s: Array, log_excess: Array) -> float | None:
    """log(1 − Σ e^{log_s}) when Σ e^{log_s} ≤ ½ (so the rounding of the e^{log_s} weighs no more
    in the result than in them) and its excess over the exact mass, at most Σ e^{log_excess}, is
    ≤ 2⁻⁶⁰ of the exact mass (module docstring), else None."""
    low = float(np.exp(log_s).sum()) if log_s.size else 0.0
    exc = float(np.exp(log_excess).sum()) if log_excess.size else 0.0
    val = 1.0 - low
    if low > 0.5 or val <= exc:
        return None
    if exc == 0.0 or math.log(exc) <= LOG_REL + math.log(val - exc):
        return math.log1p(-low)  # (1 − low rounded would lose the low digits of a tiny low)
    return None


def _range_logsums(k_lo: Array, k_hi: Array, ref: Array, ctx: Ctx) -> Array:
    """log Σ_{k=k_lo}^{k_hi} pmf(k) per range (k_lo ≤ k_hi), ``ref`` ≈ the log of its largest
    term (a scale: every term is e^{−ref}·pmf ≤ 1 up to rounding; a block whose first term is
    below e^{−745} of it underflows to 0, far below rounding): per block of ``BLOCK`` terms,
    Loader's value at its first k times the cumulative products of the exact ratios (module
    docstring), summed."""
    big_n, p, q1 = float(ctx.N), ctx.p, ctx.p1
    nb = (k_hi - k_lo) // BLOCK + 1
    rid = np.repeat(np.arange(k_lo.size), nb)
    first = np.cumsum(nb) - nb
    x0 = (k_lo[rid] + BLOCK * (np.arange(rid.size) - first[rid])).astype(float)
    last = np.minimum(x0 + (BLOCK - 1), k_hi[rid]).astype(float)
    with np.errstate(under="ignore"):
        t0 = np.exp(log_binom_pmf(x0, big_n, p, q1) - ref[rid])
    kern = compiled.sums_if_on()
    if kern is not None:
        blk = np.empty(x0.size)
        kern.pmf_block_sums(x0, last, t0, big_n, p, q1, blk)
    else:  # blocks as columns: the products run along rows, vectorised over the blocks
        kk = x0[None, :] + np.arange(BLOCK, dtype=float)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            w = (big_n - kk + 1.0) * p / (kk * q1)
        w[0] = t0
        w[kk > last[None, :]] = 0.0  # (past the block's last term)
        for i in range(1, BLOCK):
            np.multiply(w[i], w[i - 1], out=w[i])
        blk = w.sum(axis=0)
    with np.errstate(divide="ignore"):
        out: Array = ref + np.log(np.bincount(rid, weights=blk, minlength=k_lo.size))
    return out
