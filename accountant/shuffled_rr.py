"""Shuffled binary randomized response, exactly: the count of reported ones at the worst split of
the other users' inputs, as one certified hockey-stick curve (issue 24; docs/bounds.md §13).

The mechanism
-------------
n users each report their bit through binary randomized response at ε0 (the bit w.p.
q = e^{ε0}/(e^{ε0}+1), its flip w.p. r = 1 − q); the shuffled output is the number of reported
ones. One user (the changed one) holds 1 or 0; m of the N = n − 1 others hold 1 (the adversary
knows every other input). Then the count is S_m + B with S_m = Bin(N − m, r) + Bin(m, q) the
others' ones and B ~ Bern(q) (input 1: P_m) or Bern(r) (input 0: Q_m). Flipping every bit maps
(P_m, Q_m) onto (Q_{N−m}, P_{N−m}), so the curves H_m(ε) = Σ_y (P_m(y) − e^ε Q_m(y))_+ over
m = 0..N cover both neighbour orders, and their pointwise supremum sup_m H_m is a convex curve of
x = e^ε through (0, 1) above every neighbouring pair's: a dominating pair's curve (one per round,
whatever split each round has — Zhu, Dong, Wang 2022, Thm 10 composes them adaptively).

One split, exactly. S = S_m is a sum of independent Bernoullis, so its pmf s is log-concave and
t(k) = s(k−1)/s(k) is non-decreasing. With G(k) = Pr[S ≥ k], a1 = q − e^ε r, a2 = e^ε q − r
(both > 0 for |ε| < ε0), Σ_{y≥k} (P − e^ε Q)(y) = f(k) = a1·G(k−1) − a2·G(k), and
f(k+1) − f(k) = a2 s(k) − a1 s(k−1) ≥ 0 iff t(k) ≤ a2/a1: f rises while t(k) ≤ a2/a1 and falls
after, and the optimal set {P > e^ε Q} is an upper set, so H_m(ε) = f(k*), k* = min{k : t(k) > a2/a1}.

Fewer splits, certified. For n above :data:`_EXACT_SPLITS` the N + 1 splits are covered by R
representatives. Split the others into A = N − w users and w users (w = ⌈N/R⌉). For every m in
[m1, m1 + w] choose the w users holding m − m1 ones; binary RR is R(x) = 2r·Uniform{0,1} +
(1 − 2r)·δ_x, so each of the w users reports a fair coin ("blanket") or its own bit. Reveal to the
adversary which of the w users drew the blanket: given that, their reports are their known bits
plus Bin(K′, ½) with K′ ~ Bin(w, 2r) — *the same law for every m in the interval* — independent
of the rest. So H_m ≤ E_{K′}[H(A-users split m1, plus Bin(K′, ½))]; adding a fair coin is the same
kernel under P and Q, so that is non-increasing in K′, and with c1 the 10⁻⁴⁰ quantile of K′,
H_m ≤ Pr[K′ < c1]·h_RR(ε) + H^{(c1)}_{m1}(ε), where h_RR = a1 is the bare report's curve (the
largest of any) and H^{(c1)}_{m1} is the pair of S = Bin(A − m1, r) + Bin(m1, q) + Bin(c1, ½).
The representatives m1 = 0, w, 2w, … and A cover m = 0..N. The cost of the cover: the w users
keep Bin(c1, ½) of their Bin(w, ·) noise, variance ≈ r·w/2 of r(1 − r)·w — the loss scale moves by
≲ (w/2n)·(1 − 1/(2(1 − r))) relative (0.1–0.4% at R = 64).

The pmf, certified. s is the convolution of the factors' pmfs (Binomials, each on the window
outside which scipy puts ≤ 10⁻⁴⁰ of its mass; those tail masses are kept and added to G's upper
bound). Each factor's pmf is built from scipy's pmf at its mode (Boost; within 10⁻¹² relative,
checked against mpmath in the tests) by exact ratios (j ↦ j ± 1, one rounding each) — each value
within a relative 4·|j − mode|·u + 10⁻¹² — and exponentially tilted by e^{λj} inside the same
ratios. The convolution is one real FFT of power-of-two length L per tilt (no wrap: L ≥ the
support). Per entry its error is at most

    E = √2·(Σ_i η_L ‖x_i‖₂ Π_{j≠i}(‖x_j‖₁ + ρ_j) + 10u‖Z̃‖₂/√L) + η_L‖z̃‖₂(1 + 2η_L),

η_L = 10u(log₂L + 2) (Higham's bound for the transform, as :mod:`accountant.pld.compose`, item
3), ρ_j = η_L√L‖x_j‖₂ the per-frequency error: the forward errors in ℓ2 (Parseval) times the
other factors' largest moduli, the products' rounding, the half-to-full spectrum (√2) and the
inverse transform. So s(y) lies in [(z̃ − E)₊, z̃ + E]·e^{Σ log anchor − λ(y − y_mid)}, widened by
the factors' relative errors (:data:`_REL`). Three tilts (0 and ±7 standard deviations of S) keep
that bracket relatively tight from the far lower to the far upper tail; every entry takes the
tightest of the three.

From the brackets: G_lo, G_hi by suffix sums (rounding ≤ 2Wu relative), G_hi plus the factors'
tail masses; t_lo(k) = s_lo(k−1)/(s_hi(k) + tails), t_hi(k) = (s_hi(k−1) + tails)/s_lo(k) (the brackets
hold the windows' truncated convolution; the true pmf exceeds it by at most the tails anywhere). Then k* ∈ [k_A, k_B], the
first k with t_hi > a2/a1 (t_hi replaced by its running minimum from the right and t_lo by its running maximum — t is non-decreasing, so both stay brackets, now monotone: the searches are bisections) and the first with
t_lo > a2/a1; H ≤ max over that range of a1·G_hi(k−1) − a2·G_lo(k) (a range longer than
:data:`_RANGE`, or reaching past the window, is bounded at once by a1·G_hi(k_A − 1) − a2·G_lo(k_B),
G_lo = 0 past the window: G is non-increasing); k* below the window gives at most a1 − a2·G_lo(y0). A relative 10⁻¹² of a1·G_hi + a2·G_lo covers
the rounding of a1, a2 and the difference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import bernoulli_sums
from ._lazy import lazy
from .dominating import HockeyStickPair, curve_pair
from .store import BoundedCache, MiB

stats = lazy("scipy.stats")

__all__ = [
    "MAX_USERS",
    "RDP_MAX_ORDER",
    "SPLIT_ONLY_ORDER",
    "SplitCurve",
    "binary_rr_pair",
    "split_curve",
    "split_rdp",
]

U = 2.0**-53
#: up to this many users every split of the others is its own representative (no cover loss)
_EXACT_SPLITS = 256
#: representatives for larger n (:func:`_representatives`)
_REPS = (8, 256)
_BUDGET, _CHEAP, _COVER = 1 << 21, 1 << 18, 0.008
_TAIL = 1e-40  # each factor's window leaves at most this mass outside on each side
_MIX = 1e-40  # the blanket count's lower quantile c1
_ANCHOR = 1e-12  # relative error of scipy's binomial pmf at the mode (tests: mpmath)
_TILT = 7.0  # tilts at 0 and ±_TILT standard deviations of S
_RANGE = 8
_SLACK = 1e-12
#: the RDP of the splits is computed up to this order (beyond, the event's other bounds)
RDP_MAX_ORDER = 256.0
#: up to this order the event's RDP skips randomized response's clone pair (the splits' is tighter)
SPLIT_ONLY_ORDER = 64.0
_RDP_BLOCKS = 256
#: above this many users the pair is the clone pair of randomized response (bounds.md §12)
MAX_USERS = 10**8


@dataclass(frozen=True)
class _Factor:
    """Bin(m_i, p) for each representative i, on windows [lo_i, lo_i + W) (zero beyond hi_i): the
    tilted pmfs relative to the pmf at the mode (one (R, W) array per tilt), the log pmf at the
    mode, the tail masses left outside and the entries' relative error."""

    lo: NDArray[np.int64]
    mid: NDArray[np.int64]
    hi: NDArray[np.int64]
    vecs: tuple[NDArray[np.float64], ...]
    log_anchor: NDArray[np.float64]
    tails: NDArray[np.float64]
    rel: float


def _factor(m: NDArray[np.int64], p: float, lams: tuple[float, ...], reflect: bool = False) -> _Factor:
    """Bin(m_i, p) — or with ``reflect`` Bin(m_i, 1 − p) as m_i − Bin(m_i, p), so that a report
    probability q = 1 − r is never rounded (at large ε0, 1 − r is 1 in floating point). Each row's pmf by exact ratios from scipy's pmf at the mode (module docstring): row i is
    the cumulative product of b(j+1)/b(j)·e^λ = (m − j)/(j + 1)·(p/(1 − p))·e^λ from lo_i (≤ 6
    roundings a step, with e^λ's own), divided by its value at the mode — within a relative 12·W·u
    of b(j)e^{λ(j − mode)}/b(mode), W the window."""
    m = np.asarray(m, dtype=np.int64)
    if reflect:
        f = _factor(m, p, tuple(-lam for lam in lams))  # e^{λ(m − j)} ∝ e^{−λj}
        W = f.vecs[0].shape[1]
        idx = (f.hi - f.lo)[:, None] - np.arange(W)[None, :]  # row position of m − j
        flipped = tuple(
            np.where(idx >= 0, np.take_along_axis(v, np.clip(idx, 0, W - 1), axis=1), 0.0) for v in f.vecs
        )
        return _Factor(m - f.hi, m - f.mid, m - f.lo, flipped, f.log_anchor, f.tails, f.rel)
    R = m.size
    if p <= 0.0 or p >= 1.0 or not np.any(m > 0):
        at = m if p >= 1.0 else np.zeros(R, dtype=np.int64)
        ones = tuple(np.ones((R, 1)) for _ in lams)
        return _Factor(at, at, at, ones, np.zeros(R), np.zeros(R), 0.0)
    pos = m > 0
    mm = np.maximum(m, 1)
    lo = np.where(pos, np.maximum(0, stats.binom.ppf(_TAIL, mm, p)), 0).astype(np.int64)
    # the upper quantile via the mirror: isf(τ) = ppf(1 − τ) would round 1 − τ to 1
    hi = np.where(pos, np.minimum(m, m - stats.binom.ppf(_TAIL, mm, 1.0 - p)), 0).astype(np.int64)
    mid = np.clip(np.floor((m + 1) * p).astype(np.int64), lo, hi)
    tails = np.where(lo > 0, stats.binom.cdf(lo - 1, mm, p), 0.0)
    tails = tails + np.where(hi < m, stats.binom.sf(hi, mm, p), 0.0)
    anchor = np.where(pos, stats.binom.pmf(mid, mm, p), 1.0)
    W = int(np.max(hi - lo)) + 1
    j = lo[:, None] + np.arange(W - 1, dtype=np.int64)[None, :]  # ratio from j to j + 1
    base = (m[:, None] - j) / (j + 1.0) * (p / (1.0 - p))
    base = np.where(j < hi[:, None], base, 0.0)  # zero beyond hi
    at_mid = (mid - lo)[:, None]
    vecs = []
    for lam in lams:
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            cp = np.concatenate([np.ones((R, 1)), np.cumprod(base * math.exp(lam), axis=1)], axis=1)
            vecs.append(cp / np.take_along_axis(cp, at_mid, axis=1))
    return _Factor(lo, mid, hi, tuple(vecs), np.log(anchor), tails * (1.0 + 1e-9), 12.0 * W * U + _ANCHOR)


def _eta(n: int) -> float:
    return 10.0 * U * (math.log2(n) + 2.0)


def _conv_error(xs: list[NDArray[np.float64]], L: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(z̃, E) row by row: the FFT convolution of the non-negative rows of ``xs`` (each factor one
    (R or 1, W) array, zero-padded to L) and the bound E on every entry's error (module docstring)."""
    R = max(x.shape[0] for x in xs)
    eta = _eta(L)
    l1 = [np.broadcast_to(np.sum(x, axis=1) * (1.0 + x.shape[1] * U), (R,)) for x in xs]  # positive terms
    l2 = [np.broadcast_to(np.sqrt(np.einsum("ij,ij->i", x, x)) * (1.0 + x.shape[1] * U), (R,)) for x in xs]
    bound = [v + eta * math.sqrt(L) * w for v, w in zip(l1, l2)]  # |x̂̃_j| ≤ ‖x‖₁ + ρ at every j
    z_hat = np.fft.rfft(xs[0], L, axis=1)
    for x in xs[1:]:
        z_hat = z_hat * np.fft.rfft(x, L, axis=1)
    z_full = np.fft.irfft(z_hat, L, axis=1)
    fwd = np.zeros(R)
    for i in range(len(xs)):
        others = np.prod([bound[k] for k in range(len(xs)) if k != i], axis=0) if len(xs) > 1 else 1.0
        fwd = fwd + eta * l2[i] * others
    err = math.sqrt(2.0) * (fwd + 10.0 * U * np.linalg.norm(z_hat, axis=1) / math.sqrt(L))
    err = err + eta * np.linalg.norm(z_full, axis=1) * (1.0 + 2.0 * eta)
    err = (err + 1e-300 * L * np.prod(l1, axis=0)) * (1.0 + 1e-6)
    return z_full, err


def _pmf_bracket(
    parts: list[tuple[NDArray[np.int64], float, bool]], sd: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """(s_lo, s_hi, tails, y0), row by row: brackets on the pmf of Σ_i Bin(m_i, p_i) over a common
    number of points from each row's window start y0, and the mass the factors' windows leave out
    (module docstring)."""
    lam = _TILT / max(sd, 1.0)
    lams = (0.0, -lam, lam)
    facs = [_factor(m, p, lams, reflect) for m, p, reflect in parts]
    # each row's own support (its factors' windows; the arrays are zero beyond them)
    size = int(np.max(sum(f.hi - f.lo for f in facs))) + 1
    L = 1 << max(1, (size - 1).bit_length())
    R = max(f.vecs[0].shape[0] for f in facs)
    off = np.arange(size, dtype=np.float64)[None, :]
    # y − y_mid = off + shift
    shift = np.asarray(np.sum([np.broadcast_to(f.lo - f.mid, (R,)) for f in facs], axis=0), dtype=np.float64)[
        :, None
    ]
    log_anchor = np.sum([np.broadcast_to(f.log_anchor, (R,)) for f in facs], axis=0)[:, None]
    rel = sum(f.rel for f in facs) + 8.0 * U * (np.abs(log_anchor) + 1.0)
    s_lo = np.zeros((R, size))
    s_hi = np.full((R, size), np.inf)
    for t, lm in enumerate(lams):
        xs = [f.vecs[t] for f in facs]
        if not all(np.all(np.isfinite(x)) for x in xs):
            continue
        z_full, err = _conv_error(xs, L)
        z = z_full[:, :size]
        # e^{log anchor − λ(y − y_mid)} as the outer product e^{log anchor − λ·shift}·e^{−λ·off}:
        # each exp within an ulp of its rounded argument, one product
        rel_t = rel + 8.0 * U * (np.abs(lm * shift) + np.abs(lm * off) + 1.0)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            scale = np.exp(log_anchor - lm * shift) * np.exp(-lm * off)
            lo_t = np.maximum(z - err[:, None], 0.0) * scale * (1.0 - rel_t)
            hi_t = (z + err[:, None]) * scale * (1.0 + rel_t)
        s_lo = np.maximum(s_lo, np.nan_to_num(lo_t, nan=0.0, posinf=0.0))
        s_hi = np.minimum(s_hi, np.nan_to_num(hi_t, nan=np.inf))
    tails = sum(np.broadcast_to(f.tails, (R,)) for f in facs)
    y0 = np.sum([np.broadcast_to(f.lo, (R,)) for f in facs], axis=0)
    return s_lo, np.minimum(s_hi, 1.0), np.asarray(tails, dtype=np.float64), np.asarray(y0, dtype=np.int64)


@dataclass(frozen=True)
class _Splits:
    """The representatives' brackets, one row each: G(y0 + i), i = 0..W (G_lo, G_hi), t(y0 + i),
    i = 1..W − 1 (t_hi as a running minimum from the right, t_lo as a running maximum: both
    non-decreasing), the blanket-mixture weight."""

    g_lo: NDArray[np.float64]
    g_hi: NDArray[np.float64]
    t_hi: NDArray[np.float64]
    t_lo: NDArray[np.float64]
    mix: float
    rdp: tuple[NDArray[np.float64], ...]  # the terms (log mass, ℓ) of :func:`split_rdp`


def _splits(
    parts: list[tuple[NDArray[np.int64], float, bool]], sd: float, mix: float, r: float, e0: float
) -> _Splits:
    s_lo, s_hi, tails, y0 = _pmf_bracket(parts, sd)
    R, w = s_lo.shape
    zero = np.zeros((R, 1))
    g_lo = np.concatenate([np.cumsum(s_lo[:, ::-1], axis=1)[:, ::-1], zero], axis=1) * (
        1.0 - 2.0 * (w + 2) * U
    )
    g_hi = np.concatenate([np.cumsum(s_hi[:, ::-1], axis=1)[:, ::-1], zero], axis=1)
    g_hi = np.minimum(g_hi * (1.0 + 2.0 * (w + 2) * U) + tails[:, None], 1.0)
    # the true pmf: s_lo ≤ s ≤ s_hi + tails (the windows' brackets hold the truncated convolution;
    # what the windows leave out is at most ``tails`` in all, so at most that at any one point)
    top = (s_hi + tails[:, None]) * (1.0 + 2 * U)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_hi = np.where(s_lo[:, 1:] > 0, top[:, :-1] / s_lo[:, 1:], np.inf) * (1.0 + 2 * U)
        t_lo = np.where(np.isfinite(top[:, 1:]), s_lo[:, :-1] / top[:, 1:], 0.0) * (1.0 - 2 * U)
    # t is non-decreasing (log-concavity): t(k) ≤ min_{k′ ≥ k} t_hi(k′) and ≥ max_{k′ ≤ k} t_lo(k′)
    t_hi = np.minimum.accumulate(t_hi[:, ::-1], axis=1)[:, ::-1]
    rdp = _rdp_terms(parts, (s_lo, s_hi, tails, t_hi), y0, mix, r, e0)
    return _Splits(g_lo, g_hi, t_hi, np.maximum.accumulate(t_lo, axis=1), mix, rdp)


def _splits_delta(sp: _Splits, a1: NDArray[np.float64], a2: NDArray[np.float64]) -> NDArray[np.float64]:
    """Upper bound of sup over the representatives of H(ε) for |ε| < ε0 (a1, a2 > 0 per ε;
    module docstring)."""
    thr = a2 / a1
    R = sp.g_lo.shape[0]
    W = sp.g_lo.shape[1] - 1  # G known at y0 + 0..W; t at k = y0 + 1..W − 1 (index i − 1)
    # k* ≥ y0 + 1: k_A = first k with t_hi(k) > thr, k_B = first with t_lo(k) > thr (W: beyond)
    ia = np.stack([np.searchsorted(sp.t_hi[i], thr * (1.0 - 1e-12), side="right") for i in range(R)]) + 1
    ib = np.stack([np.searchsorted(sp.t_lo[i], thr * (1.0 + 1e-12), side="right") for i in range(R)]) + 1
    rows = np.arange(R)[:, None]
    ib = np.minimum(ib, W)
    # every k in [k_A, k_B] has f(k) ≤ a1·G_hi(k_A − 1) − a2·G_lo(k_B) (G is non-increasing); a
    # range reaching past the window (G_lo = 0 there) or longer than _RANGE is bounded so, a short
    # one point by point
    gh, gl = sp.g_hi[rows, np.minimum(ia, W) - 1], sp.g_lo[rows, ib]
    coarse = a1 * gh - a2 * gl + _SLACK * (a1 * gh + a2 * gl)
    long = ((ib - ia) > _RANGE) | (ib >= W)
    best = np.maximum(a1 - a2 * sp.g_lo[:, :1], np.where(long, coarse, 0.0))  # and k* ≤ y0
    for d in range(_RANGE + 1):
        k = np.minimum(ia + d, W)
        gh, gl = sp.g_hi[rows, k - 1], sp.g_lo[rows, k]
        f = a1 * gh - a2 * gl + _SLACK * (a1 * gh + a2 * gl)
        best = np.where((~long) & (ia + d <= ib), np.maximum(best, f), best)
    return np.asarray(np.max(best, axis=0) + sp.mix * a1, dtype=np.float64)


@dataclass(frozen=True)
class SplitCurve:
    """The certified sup over splits of shuffled binary RR's curve (module docstring)."""

    n: int
    epsilon0: float
    splits: _Splits | None
    cover: int  # w: users per representative's interval (0: every split exact)

    def delta(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        e = np.atleast_1d(np.asarray(eps, dtype=np.float64))
        e0 = self.epsilon0
        out = np.maximum(-np.expm1(np.minimum(e, 0.0)), 0.0)
        out = np.where(e >= e0, 0.0, out) if e0 > 0 else out
        mid = (e > -e0) & (e < e0)
        if np.any(mid) and self.splits is not None:
            E = math.exp(e0)
            ee = np.exp(e[mid])
            a1 = (E - ee) / (E + 1.0)
            a2 = (ee * E - 1.0) / (E + 1.0)
            best = _splits_delta(self.splits, a1, a2)
            out[mid] = np.minimum(np.maximum(best, out[mid]), 1.0)
        return np.asarray(out, dtype=np.float64)


def _blanket(w: int, r: float) -> tuple[int, float]:
    """(c1, Pr[K′ < c1]) for the blanket count K′ ~ Bin(w, 2r) of the w covered users."""
    if w == 0:
        return 0, 0.0
    c1 = int(max(0, stats.binom.ppf(_MIX, w, 2.0 * r)))
    mix = float(stats.binom.cdf(c1 - 1, w, 2.0 * r)) * (1.0 + 1e-9) if c1 > 0 else 0.0
    return c1, mix


def _representatives(n: int, eps0: float) -> tuple[list[int], int, int]:
    """(m1 values, A = others in the exact part, w): every split for n ≤ :data:`_EXACT_SPLITS`;
    else the fewest representatives R (8 … 256) whose cover costs the loss scale ≲ :data:`_COVER`
    relative — (w/2n)·(1 − (c1/4)/(w·r·q)), the share of the w users' variance the blanket count
    c1 does not keep — or more while they cost under :data:`_CHEAP` FFT points (the cover then
    costs less), within :data:`_BUDGET` FFT points in all."""
    N = n - 1
    if n <= _EXACT_SPLITS:
        return list(range(N + 1)), N, 0
    r = 1.0 / (math.exp(eps0) + 1.0)
    sd = math.sqrt(N * r * (1.0 - r))
    L = 1 << max(1, int(2 * 13 * math.sqrt(2.0) * sd + 8).bit_length())
    cap = max(_REPS[0], min(_REPS[1], _BUDGET // L))
    R = _REPS[0]
    while cap > R:
        w = -(-N // R)
        c1, _ = _blanket(w, r)
        if (w / (2.0 * n)) * (1.0 - (c1 / 4.0) / (w * r * (1.0 - r))) <= _COVER:
            break
        R *= 2
    R = min(max(R, _CHEAP // L), _REPS[1], cap)
    w = -(-N // R)
    A = N - w
    reps = sorted(set(range(0, A + 1, w)) | {A})
    return reps, A, w


def _nbytes(_key: tuple[int, float], c: SplitCurve) -> int:
    sp = c.splits
    if sp is None:
        return 256
    arrays = (sp.g_lo, sp.g_hi, sp.t_hi, sp.t_lo, *sp.rdp)
    return sum(int(a.nbytes) for a in arrays) + 256


#: the split curves by (n, ε0): a warm answer (another count or δ) reuses them
_CURVES: BoundedCache[tuple[int, float], SplitCurve] = BoundedCache(
    8, 256 * MiB, sizeof=_nbytes, name="shuffled_rr_splits"
)


def split_curve(n: int, epsilon0: float) -> SplitCurve:
    """The certified curve of shuffled binary RR over every split (n ≤ :data:`MAX_USERS`)."""
    key = (int(n), float(epsilon0))
    got = _CURVES.get(key)
    if got is None:
        got = _split_curve(*key)
        _CURVES.put(key, got)
    return got


def _split_curve(n: int, e0: float) -> SplitCurve:
    if e0 == 0.0:
        return SplitCurve(n, e0, None, 0)
    r = 1.0 / (math.exp(e0) + 1.0)
    q = 1.0 - r
    reps, A, w = _representatives(n, e0)
    c1, mix = _blanket(w, r)
    sd = math.sqrt(A * r * q + c1 / 4.0)
    m1 = np.asarray(reps, dtype=np.int64)
    parts = [(A - m1, r, False), (m1, r, True), (np.array([c1], dtype=np.int64), 0.5, False)]
    return SplitCurve(n, e0, _splits(parts, sd, mix, r, e0), w)


def binary_rr_pair(n: int, epsilon0: float) -> HockeyStickPair:
    """The dominating pair of one shuffle of n binary-RR reports at ε0: :func:`split_curve`."""
    n, e0 = int(n), float(epsilon0)
    curve = split_curve(n, e0)
    r = 1.0 / (math.exp(e0) + 1.0)
    scale = 2.0 * math.tanh(e0 / 2.0) / math.sqrt(n * 2.0 * r + 1.0) if e0 > 0 else 0.0
    return curve_pair(curve.delta, -e0, e0, 0.0, scale, ("shuffled_binary_rr", n, e0))


def _loss(t: NDArray[np.float64], r: float, e0: float) -> NDArray[np.float64]:
    """An upper bound on g(t) = log((q·t + r)/(r·t + q)), the loss P/Q at a point where s(y−1)/s(y)
    is at most t (g increases in t; g(∞) = ε0), within ε0."""
    q = 1.0 - r
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        g = np.log((q * t + r) / (r * t + q))
    g = np.where(np.isfinite(t), np.nan_to_num(g, nan=e0), e0)
    return np.minimum(g + 8.0 * U * (np.abs(g) + 1.0), e0)


def _tilts(
    parts: list[tuple[NDArray[np.int64], float, bool]], R: int, e0: float
) -> tuple[bernoulli_sums.Tilts, NDArray[np.int64]]:
    """The tilts (:mod:`accountant.bernoulli_sums`) of each row's count Σ Bin(m_i, p_i), and its
    largest value Σ m_i."""
    counts = np.stack([np.broadcast_to(np.asarray(m, dtype=np.int64), (R,)) for m, _, _ in parts], axis=1)
    logits = np.array([(math.log(p) - math.log1p(-p)) * (-1.0 if refl else 1.0) for _, p, refl in parts])
    return bernoulli_sums.tilts(counts, logits, e0 + 40.0), np.sum(counts, axis=1)


def _s_upper(
    s_hi: NDArray[np.float64],
    tails: NDArray[np.float64],
    ys: NDArray[np.int64],
    log_sf: NDArray[np.float64],
    top: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Upper bounds on the true pmf at ``ys`` = y0 − 1 .. y0 + w, row by row: the window's bracket
    plus what the windows leave out (at most ``tails``), at most Pr[S ≥ y] (``log_sf``, (2) of
    :mod:`accountant.bernoulli_sums`); 0 above the count's largest value ``top``."""
    tail = np.exp(log_sf)
    zero = np.zeros((s_hi.shape[0], 1))
    s = np.minimum(np.concatenate([zero, s_hi, zero], axis=1) + np.minimum(tails[:, None], tail), tail)
    return np.where(ys > top[:, None], 0.0, s)


def _segments(
    tl: bernoulli_sums.Tilts, cap: NDArray[np.float64], y_from: NDArray[np.int64] | None, r: float, e0: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(log mass, ℓ) of the count's segments (μ_lo(λ_{j−1}), μ_lo(λ_j)] — P's mass there at most
    Pr[S ≥ ⌊μ_lo(λ_{j−1})⌋] (all of it for j = 0) and ``cap``, loss at most g(e^{λ_j}) — and of
    what lies beyond the last (loss ε0); ``y_from``: only the part from there on."""
    R = tl.lam.shape[0]
    starts = np.concatenate([np.full((R, 1), -1.0), np.floor(tl.mu_lo)], axis=1)  # s(y − 1), y in segment
    if y_from is not None:
        starts = np.maximum(starts, (y_from - 1.0)[:, None])
    logm = np.minimum(bernoulli_sums.at(tl, starts)[1], cap[:, None])
    ell = np.concatenate([_loss(np.exp(tl.lam), r, e0), np.full((R, 1), e0)], axis=1)
    if y_from is not None:
        reach = np.concatenate([tl.mu_lo, np.full((R, 1), np.inf)], axis=1) >= y_from[:, None]
        logm = np.where(reach, logm, -np.inf)
    return logm, ell


def _rdp_terms(
    parts: list[tuple[NDArray[np.int64], float, bool]],
    brackets: tuple[NDArray[np.float64], ...],
    y0: NDArray[np.int64],
    mix: float,
    r: float,
    e0: float,
) -> tuple[NDArray[np.float64], ...]:
    """Per representative, the terms (log mass, ℓ) of :func:`split_rdp`: the window's chords, what
    lies outside the window, the blanket mixture."""
    s_lo, s_hi, tails, t_hi = brackets
    q = 1.0 - r
    R, w = s_lo.shape
    tl, top = _tilts(parts, R, e0)
    ys = y0[:, None] + np.arange(-1, w + 1)[None, :]  # s at y0 − 1 .. y0 + w; P at y0 .. y0 + w
    c0 = int(np.clip(np.min(np.floor(tl.mu_lo[:, 0]) - y0), 0, w))  # below: every row's mean
    # from every row's mean on, Darroch's ratio bound and Chernoff's tail (1 below)
    lam_y, log_sf = np.full(ys.shape, np.inf), np.zeros(ys.shape)
    lam_y[:, c0:], log_sf[:, c0:] = bernoulli_sums.at(tl, ys[:, c0:].astype(np.float64))
    hi = _s_upper(s_hi, tails, ys, log_sf, top)
    lo = np.concatenate([np.zeros((R, 1)), s_lo, np.zeros((R, 1))], axis=1)
    # P(y0 + i), i = 0..w, of the true pmf (Q's lower bound: the window's)
    p_hi = (q * hi[:, :-1] + r * hi[:, 1:]) * (1.0 + 4.0 * U)
    q_lo = (r * lo[:, :-1] + q * lo[:, 1:]) * (1.0 - 4.0 * U)
    # t(y0 + i) ≤ t_hi (t(y0) ≤ t(y0 + 1)), and ≤ e^{λ} where y0 + i ≤ μ_lo(λ) (Darroch)
    edge = np.full((R, 1), np.inf)
    tb = np.concatenate([t_hi[:, :1] if w > 1 else edge, t_hi, edge], axis=1)
    with np.errstate(over="ignore"):
        tb = np.minimum(tb, np.exp(lam_y[:, 1:]))
    with np.errstate(divide="ignore", invalid="ignore"):
        ell = np.minimum(np.log(p_hi) - np.log(q_lo), _loss(tb, r, e0))
    ell = np.where(p_hi > 0, np.nan_to_num(ell, nan=e0), -np.inf)
    with np.errstate(divide="ignore"):
        log_t = np.log(tails)
    # below the window: mass ≤ tails, t ≤ t(y0); beyond it: the count's segments
    terms = [
        _chords(p_hi, ell),
        (log_t[:, None], _loss(tb[:, :1], r, e0)),
        _segments(tl, log_t, y0 + w + 1, r, e0),
    ]
    if mix > 0:  # the blanket mixture: the count without the blanket's c1 coins, in segments
        bare = _tilts(parts[:2], R, e0)[0]
        logm, ell_m = _segments(bare, np.zeros(R), None, r, e0)
        terms.append((logm + math.log(mix) + 1e-12, ell_m))
    return _prune(
        np.concatenate([t[0] for t in terms], axis=1), np.concatenate([t[1] for t in terms], axis=1)
    )


def _prune(logm: NDArray[np.float64], ell: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
    """The terms (log mass m, loss ℓ), less the columns whose m·e^{(α−1)ℓ} is below e^{−80} at every
    order up to :data:`RDP_MAX_ORDER` in every row; their sum at any such order is at most
    Σ m·e^{max(0, (RDP_MAX_ORDER − 1)ℓ)}, kept as one term of loss 0 (the totals are ≥ 1)."""
    ell = np.where(np.isfinite(logm), ell, 0.0)
    worst = logm + np.maximum(0.0, (RDP_MAX_ORDER - 1.0) * ell)
    small = np.all(worst < -80.0, axis=0)
    with np.errstate(divide="ignore"):
        rest = np.logaddexp.reduce(np.where(small[None, :], worst, -np.inf), axis=1, keepdims=True) + 1e-12
    zero = np.zeros_like(rest)
    return np.concatenate([logm[:, ~small], rest], axis=1), np.concatenate([ell[:, ~small], zero], axis=1)


def _chords(p_hi: NDArray[np.float64], ell: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
    """Per row and block of consecutive points, the chord's two terms (log mass, ℓ): (log m_lo,
    ℓmin) and (log m_hi, ℓmax) (:func:`split_rdp`)."""
    R = p_hi.shape[0]
    blocks = min(_RDP_BLOCKS, ell.shape[1])
    b = -(-ell.shape[1] // blocks)
    pad = b * blocks - ell.shape[1]
    ell = np.pad(ell, ((0, 0), (0, pad)), constant_values=-np.inf).reshape(R, blocks, b)
    mass = np.pad(p_hi, ((0, 0), (0, pad))).reshape(R, blocks, b)
    live = mass > 0
    lmin = np.min(np.where(live, ell, np.inf), axis=2, keepdims=True)
    lmax = np.max(np.where(live, ell, -np.inf), axis=2, keepdims=True)
    # inside a block e^{aℓ} lies below its chord between ℓmin and ℓmax (convex in ℓ):
    # Σ P·e^{aℓ} ≤ e^{a·ℓmin}·Σ P(1 − θ) + e^{a·ℓmax}·Σ P·θ,  θ = (ℓ − ℓmin)/(ℓmax − ℓmin)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.where(live & (lmax > lmin), (ell - lmin) / (lmax - lmin), 0.0)
    slack = 1.0 + (b + 8) * U
    m_lo = np.sum(mass * (1.0 - theta), axis=2) * slack + np.sum(mass, axis=2) * 4 * U
    m_hi = np.sum(mass * theta, axis=2) * slack + np.sum(mass, axis=2) * 4 * U
    flat = (lmax <= lmin)[:, :, 0]  # one loss in the block: one term
    m_lo, m_hi = np.where(flat, m_lo + m_hi, m_lo), np.where(flat, 0.0, m_hi)
    with np.errstate(divide="ignore"):
        logm = np.log(np.concatenate([m_lo, m_hi], axis=1))
    return logm, np.concatenate([lmin[:, :, 0], lmax[:, :, 0]], axis=1)


def split_rdp(n: int, epsilon0: float, orders: NDArray[np.float64]) -> NDArray[np.float64]:
    """Certified Rényi divergence of shuffled binary RR at each order α (1 < α ≤
    :data:`RDP_MAX_ORDER`; +inf above), the largest over the representatives (module docstring):
    per representative, with P = q·s(y−1) + r·s(y), Q = r·s(y−1) + q·s(y) and
    P/Q = g(t(y)) = (q·t + r)/(r·t + q), t = s(y−1)/s(y),

        Σ_y P^α Q^{1−α} = Σ_y P·e^{(α−1)ℓ(y)} ≤ Σ_window P_hi·e^{(α−1)ℓ_hi} + Σ_outside mass·e^{(α−1)ℓ_hi},

    ℓ_hi the least of log P_hi − log Q_lo, g(t_hi) and g(e^{λ}) where Darroch's rule bounds t by
    e^{λ} (:mod:`accountant.bernoulli_sums`, (1)), within ε0. The window (P_hi counts the mass the
    factors' windows leave out at every point) is cut into at most :data:`_RDP_BLOCKS` blocks of
    consecutive y, in each of which e^{(α−1)ℓ} is bounded by its chord between the block's smallest
    and largest ℓ (convexity). Outside it: below, mass ≤ tails at t ≤ t(y0); above, the count's
    segments between tilted means (mass ≤ tails and the Chernoff bound (2), ratio bound (1)), and
    ε0 beyond the last. The blanket mixture (its label revealed: D_α of a labelled mixture is
    (1/(α−1))·log Σ w·e^{(α−1)D}; the pair without the blanket's coins dominates every pair with
    fewer than c1 of them, post-processing) is weighted by ``mix`` and bounded by the segments of
    the count without the blanket, all of it (mass ≤ 1 up to its mean, where t ≤ 1, ℓ ≤ 0)."""
    o = np.asarray(orders, dtype=np.float64)
    out = np.full(o.size, np.inf)
    use = (o > 1.0) & (o <= RDP_MAX_ORDER)
    e0 = float(epsilon0)
    if e0 == 0.0:
        return np.where(use, 0.0, out)
    sp = split_curve(int(n), e0).splits
    if sp is None or not np.any(use):
        return out
    a = o[use] - 1.0
    best = np.max(_log_totals(sp.rdp, a), axis=0)
    d = best / a * (1.0 + 1e-12)
    out[use] = np.clip(d, 0.0, None)
    return out


def _log_totals(terms: tuple[NDArray[np.float64], ...], a: NDArray[np.float64]) -> NDArray[np.float64]:
    """log of the upper bound Σ_k m_k·e^{aℓ_k} on Σ_y P^α Q^{1−α} per representative at the orders
    α = a + 1, from its terms (log m, ℓ) (:func:`split_rdp`)."""
    logm, ell = terms  # ℓ finite wherever log m is (:func:`_prune`): no NaN below
    out = np.empty((logm.shape[0], a.size))
    for i, ai in enumerate(a):  # one order at a time: (rows × terms) stays in cache
        expo = logm + ai * ell
        top = np.max(expo, axis=1)
        top = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            total = np.log(np.sum(np.exp(expo - top[:, None]), axis=1) * (1.0 + (logm.shape[1] + 8) * U))
        # each exponent rounded within a relative ~u: 10⁻¹² of its size covers them
        out[:, i] = top + total + 1e-12 * (1.0 + np.abs(top))
    return out
