"""Certified δ(ε) of a tilted composition (:mod:`.compose`) in O(1) per ε, from suffix sums.

With the composed window G̃ on the losses L_i = (a + i)Δ (i < N), k the first index with L_k > ε
and τ = L_k − ε ∈ (0, Δ] (larger below the window), the tilted sum of :mod:`.compose` is

    s(ε) = Σ_{j≥0} w(τ + jΔ)·G̃_{k+j},  w(t) = e^{−λt}(1 − e^{−t}),
         = e^{−λτ}·[(1 − e^{−τ})·S1_k + e^{−τ}·D_k],

    S1_k = Σ_j r1^j G̃_{k+j},  S2_k = Σ_j r2^j G̃_{k+j},  D_k = S1_k − S2_k = Σ_j (r1^j − r2^j) G̃_{k+j},
    r1 = e^{−λΔ},  r2 = e^{−(λ+1)Δ}.

S1, S2 and D are suffix recurrences (y_i = x_i + r·y_{i+1}, scipy's lfilter, run from the top of the
window down, in blocks that continue one another exactly): S1 with x = G̃, S2 likewise, and D with
x_i = c·S2_{i+1}, c = r1 − r2 = r1(1 − e^{−Δ}) — every term of D and of the bracket above is ≥ 0
up to G̃'s rounding noise, so nothing cancels (the direct form S1 − e^{−τ}S2 would lose log₁₀ λ
digits). So one pass over the window serves every ε: the root search of :mod:`.convert` costs a
few scalar evaluations instead of a pass over the window each.

Rounding (every bound below is added, u = 2⁻⁵³, the suffix maxima M_k = max_{i≥k}|ŷ_i| kept per
index so that δ(ε) does not depend on which ε were asked before):

* a recurrence computed as ŷ_i = fl(x̂_i + fl(r̂·ŷ_{i+1})) with |r̂ − r| ≤ θr has
  |ŷ_i − y_i| ≤ |x̂_i − x_i| + u|x̂_i| + r|ŷ_{i+1} − y_{i+1}| + rφ|ŷ_{i+1}|, φ = (1+θ)(1+u)² − 1, so
  E_k ≤ Σ_j r^j(|x̂ − x| + u|x̂| + φ|ŷ|)_{k+j(+1)} ≤ (these terms' suffix maxima)/(1 − r), with
  Σ_j r^j|G̃_{k+j}| ≤ |S_k| + 2ν_k/(1 − r), ν_k the largest negative noise above k;
* the final expression at the computed τ̂ = fl(L̂_k − ε) (L̂ the float losses): relative
  (λ|τ̂| + 12)u on its two non-negative terms, plus |τ̂ − τ| ≤ 1.02u(|L̂_k| + |τ̂|) times the
  derivatives' bounds (λ|1 − e^{−τ}| + 1)e^{−λτ} and (λ + 1)e^{−(λ+1)τ} times |S1| + E1 and |D| + E_D,
  and the two losses next to ε whose side of ε rounding may have changed (w ≤ t there).

‖w‖₂ over the window (the factor of the FFT error E₂ of :mod:`.compose`) is bounded by the
infinite sum, in closed form with positive terms only (ρ = e^{−2λΔ}, q = e^{−Δ}, b = e^{−τ}):

    Σ_{j≥0} w(τ + jΔ)² = e^{−2λτ}·[ρ(1−q)²(1+ρq)/((1−ρ)(1−ρq)(1−ρq²))
                                    + (1−b)·(2ρq(1−q)/((1−ρq)(1−ρq²)) + (1−b)/(1−ρq²))],

evaluated at the ends of τ's rounding interval and raised by a relative 10⁻¹². It holds all of the
window's sum but e^{−36} when λΔ·(N − k) ≥ 18.

Where these bounds would be loose — λΔ·(N − k) < 18 (a small tilt: r1 hardly decays over the
window; or a short window), or ε below the bulk of the sums (a value of |Ŝ1|, |Ŝ2| or |D̂| above k
exceeds 8× its own at k) — s(ε), Σ w² and the rounding are taken by direct sums over the window
above ε instead, as before (a dot product of n terms rounds by ≤ (n + 8)u·Σ|w G̃|; w within
6u·e^{−λt}), with the float losses' rounding bounded too. Either way the sum and the product of
the final δ are rounded up, so δ(ε) is never below the exact value of the certified expression of
:mod:`.compose` (tests/accountant/test_warm_answers.py compares with 40-digit sums).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .discretise import U

__all__ = ["Tail", "suffix", "weight_max"]

_BLOCK = 1024  # the smallest block of the window the recurrences extend by


def _dot(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """x·y without BLAS (whose threads stall on a shared machine): numpy's own loop."""
    return float(np.einsum("i,i->", x, y))


def suffix(x: NDArray[np.float64], r: float, state: float) -> tuple[NDArray[np.float64], float]:
    """y_i = x_i + r·y_{i+1} over ``x`` (its top continuing from y = ``state``/r above it: the
    state is r·y of the element above), and the state for the block below. ``y`` is a reversed
    view of lfilter's output (no copy)."""
    from scipy.signal import lfilter

    y, z = lfilter([1.0], [1.0, -r], x[::-1], zi=np.array([state]))
    out: NDArray[np.float64] = y[::-1]
    return out, float(z[0])


def weight_max(lam: float) -> float:
    """c(λ) = max_t (1 − e^{−t})e^{−λt} = (λ/(1+λ))^λ/(1+λ) (1 at λ = 0)."""
    return (lam / (1.0 + lam)) ** lam / (1.0 + lam) if lam > 0 else 1.0


def _absmax(x: NDArray[np.float64]) -> float:
    return max(float(x.max()), -float(x.min())) if x.size else 0.0


@dataclass(frozen=True)
class _Block:
    """The recurrences over [lo, hi) of the window, and the largest |value| of each there."""

    lo: int
    hi: int
    s1: NDArray[np.float64]
    s2: NDArray[np.float64]
    d: NDArray[np.float64]
    top: tuple[float, float, float, float]  # max |S1|, |S2|, |D|, max(−G̃, 0) over the block


class Tail:
    """δ(ε) of one composition: the recurrences of the module docstring over the window from
    index ``lo`` up (extended downwards on demand), and the constants of its error bounds."""

    def __init__(
        self,
        g: NDArray[np.float64],
        losses: NDArray[np.float64],
        lam: float,
        step: float,
        log_scale: float,
        fixed: tuple[float, float, float],
    ) -> None:
        self.g, self.losses, self.lam, self.step, self.log_scale = g, losses, lam, step, log_scale
        self.err2, alias, self.inf = fixed
        self.cl_alias = weight_max(lam) * alias
        n = g.size
        l1, l2 = lam * step, (lam + 1.0) * step
        self.r1, self.r2 = math.exp(-l1), math.exp(-l2)
        th1, th2 = 2 * U + 1.01 * U * l1, 2 * U + 2.02 * U * l2
        self.phi1, self.phi2 = th1 + 2.1 * U, th2 + 2.1 * U
        om_q = -math.expm1(-step)  # 1 − e^{−Δ}
        self.c12 = self.r1 * om_q
        self.th12 = th1 + 3.01 * U
        self.inv1 = (1.0 + 8 * U) / -math.expm1(-l1) if l1 > 0 else math.inf  # ≥ 1/(1 − r1)
        self.inv2 = (1.0 + 8 * U) / -math.expm1(-l2)
        # the closed form of Σ w² (module docstring); ρ = e^{−2λΔ}, q = e^{−Δ}
        rho, rq = math.exp(-2.0 * l1), math.exp(-(2.0 * lam + 1.0) * step)
        om_r, om_rq, om_rq2 = (
            -math.expm1(-2.0 * l1),
            -math.expm1(-(2.0 * lam + 1.0) * step),
            -math.expm1(-(2.0 * lam + 2.0) * step),
        )
        self.w_p = rho * om_q * om_q * (1.0 + rq) / (om_r * om_rq * om_rq2) if l1 > 0 else math.inf
        self.w_b = 2.0 * rq * om_q / (om_rq * om_rq2)
        self.w_c = 1.0 / om_rq2
        self.slack_n = 1.0 + 2.1 * U * n  # nonneg recurrences over ≤ n steps, each rounding ≤ u
        self.lo = n  # the recurrences cover [lo, n), in blocks (top first)
        self._blocks: list[_Block] = []
        self._z = (0.0, 0.0, 0.0)  # the recurrences' states at lo
        self._s2_lo = 0.0  # Ŝ2 at lo (D's input just below: x_{lo−1} = c·Ŝ2_lo)
        self._maxima: dict[int, tuple[float, ...]] = {}

    # ------------------------------------------------------------------------------ recurrences
    def extend(self, k: int) -> None:
        """Make the recurrences cover index max(k, 0) upwards (blocks of at least _BLOCK)."""
        k = max(0, k)
        if k >= self.lo:
            return
        lo, hi = max(0, min(k, self.lo - _BLOCK)), self.lo
        seg = self.g[lo:hi]
        s1, z1 = suffix(seg, self.r1, self._z[0])
        s2, z2 = suffix(seg, self.r2, self._z[1])
        x = np.empty(seg.size)
        x[:-1] = s2[1:]
        x[-1] = self._s2_lo
        x *= self.c12  # x_i = c·Ŝ2_{i+1}
        d, zd = suffix(x, self.r1, self._z[2])
        top = (_absmax(s1), _absmax(s2), _absmax(d), max(0.0, -float(seg.min())))
        self._blocks.append(_Block(lo, hi, s1, s2, d, top))
        self._z, self._s2_lo, self.lo = (z1, z2, zd), float(s2[0]), lo

    def _block(self, i: int) -> _Block:
        for b in reversed(self._blocks):
            if i < b.hi:
                return b
        raise IndexError(i)

    def _values(self, k: int) -> tuple[float, float, float]:
        """(Ŝ1_k, Ŝ2_k, D̂_k); k < N, covered."""
        b = self._block(k)
        return float(b.s1[k - b.lo]), float(b.s2[k - b.lo]), float(b.d[k - b.lo])

    def _suffix_maxima(self, k: int) -> tuple[float, ...]:
        """(ν_k, ν_{k+1}, M1_{k+1}, M2_{k+1}, MD_{k+1}): the largest |Ŝ1|, |Ŝ2|, |D̂| at indices
        > k and the largest negative G̃ at ≥ k, > k (0 above the window); k < N, covered."""
        got = self._maxima.get(k)
        if got is not None:
            return got
        m = [0.0, 0.0, 0.0, 0.0]  # |S1|, |S2|, |D|, ν above k
        for b in self._blocks:
            if b.lo > k:
                m = [max(u, v) for u, v in zip(m, b.top)]
            elif b.hi > k + 1:
                j = k + 1 - b.lo
                part = (
                    _absmax(b.s1[j:]),
                    _absmax(b.s2[j:]),
                    _absmax(b.d[j:]),
                    max(0.0, -float(self.g[k + 1 : b.hi].min())),
                )
                m = [max(u, v) for u, v in zip(m, part)]
        got = (max(m[3], -float(self.g[k])), m[3], m[0], m[1], m[2])
        if len(self._maxima) >= 64:
            self._maxima.clear()
        self._maxima[k] = got
        return got

    # ----------------------------------------------------------------------------------- δ(ε)
    def fast(self, k: int) -> bool:
        """Whether δ(ε) with first loss index k above ε is read from the recurrences: when r1
        decays within the window above ε (λΔ·(N − k) ≥ 18; Σ w² of the window is then its
        infinite sum but e^{−36}). Else (a small tilt, a short window) the window's own sums are
        taken directly, O(N − k), as the recurrences' error bounds would exceed theirs."""
        return self.lam * self.step * (self.g.size - k) >= 18.0

    def cheap(self, k: int) -> bool:
        """Whether δ(ε) with first loss index k < N above ε comes from the recurrences (O(1)):
        :meth:`fast`, and k not below the bulk of the sums — no value of |Ŝ1|, |Ŝ2| or |D̂| above k
        exceeds 8× its own at k (else the error bounds, by those largest values, would be loose)."""
        if not self.fast(k):
            return False
        self.extend(k)
        s1, s2, d = self._values(k)
        _nu, _nu1, mx1n, mx2n, mxdn = self._suffix_maxima(k)
        return not (mx1n > 8.0 * abs(s1) or mx2n > 8.0 * abs(s2) or mxdn > 8.0 * abs(d))

    def delta(self, epsilon: float) -> tuple[float, float]:
        """(certified δ(ε), the numerical error bound included in it)."""
        lam, n, losses = self.lam, self.g.size, self.losses
        k = int(np.searchsorted(losses, epsilon, side="right"))  # the first loss > ε
        err = self.cl_alias
        s = 0.0
        if k >= 1 and epsilon - float(losses[k - 1]) <= 1.02 * U * abs(float(losses[k - 1])):
            # the loss below ε may lie above it exactly: its w ≤ that rounding
            near = 1.02 * U * abs(float(losses[k - 1]))
            err += near * abs(float(self.g[k - 1])) + near * self.err2
        if k < n:
            got = self._sum(k, epsilon) if self.fast(k) else None
            s, rnd, w2 = got if got is not None else self._direct(k, epsilon)
            err += rnd + math.sqrt(w2) * self.err2
        err *= 1.0 + 8 * U
        logc = self.log_scale - lam * epsilon
        c = math.exp(logc) * (1.0 + 4 * U * (abs(logc) + 2.0)) if logc < 709.0 else math.inf
        fin = c * (max(s, 0.0) + err) * (1.0 + 4 * U)  # the sum and the product rounded up
        return min(1.0, (fin + self.inf) * (1.0 + 2 * U)), min(1.0, c * err * (1.0 + 2 * U))

    def _direct(self, k: int, epsilon: float) -> tuple[float, float, float]:
        """(s(ε), its rounding bound, Σ w² over the window) by sums over the window above ε: a
        dot product of n terms rounds by ≤ (n + 8)u·Σ|w G̃|; w = e^{−λt} − e^{−λt}e^{−t} is within
        6u·e^{−λt} of its value at the computed t, and t = fl(L̂ − ε) within 1.02u(|L̂| + t) of the
        exact loss minus ε, where |dw/dt| ≤ e^{−λt}(λ·min(t, 1) + 1)."""
        lam = self.lam
        tp = self.losses[k:] - epsilon
        gp = self.g[k:]
        ag = np.abs(gp)
        e1 = np.exp(-lam * tp)
        w = e1 - e1 * np.exp(-tp)
        s = _dot(w, gp)
        terr = 1.02 * U * (np.abs(self.losses[k:]) + tp)  # per loss: |t computed − t exact|
        tmax = float(terr[-1]) + 1.02 * U * abs(float(self.losses[k]))
        grow = math.exp(lam * tmax) * (1.0 + 4 * U)  # e^{−λt} at the exact t ≤ this × at the computed
        slope = e1 * (lam * np.minimum(tp + tmax, 1.0) + 1.01)  # ≥ |dw/dt| / grow (module docstring)
        rnd = (tp.size + 8) * U * _dot(w, ag) + 6 * U * _dot(e1, ag) + 1.01 * grow * _dot(terr * slope, ag)
        w2 = _dot(w, w) * (1.0 + (tp.size + 8) * U) * grow * grow + tp.size * (2.0 * tmax) ** 2
        if float(tp[0]) <= float(terr[0]):  # the first loss above ε may lie at or below it exactly
            rnd += 1.01 * float(terr[0]) * float(ag[0])
        return s, rnd, w2

    def _sum(self, k: int, epsilon: float) -> tuple[float, float, float] | None:
        """(s(ε) computed, its rounding bound, the bound of Σ w² over the window) at k < N from
        the recurrences, or None where their error bounds (by the largest values above k) would
        be loose: when k lies below the bulk of the sums (a value above k exceeds 8× its own)."""
        if not self.cheap(k):
            return None
        lam = self.lam
        lk = float(self.losses[k])
        tau = lk - epsilon
        terr = 1.02 * U * (abs(lk) + abs(tau))
        s1, _s2, d = self._values(k)
        nu, nu1, mx1n, mx2n, mxdn = self._suffix_maxima(k)
        e1 = math.exp(-lam * tau)
        m1 = -math.expm1(-tau)
        b = math.exp(-tau)
        s = e1 * (m1 * s1 + b * d)
        # the recurrences' errors (module docstring)
        sl = self.slack_n * (1.0 + 4 * U)
        terms = float(self.g.size - k)  # Σ_j r^j over the window ≤ min(1/(1 − r), its length)
        inv1, inv2 = min(self.inv1, terms), min(self.inv2, terms)
        err1 = sl * (U * abs(s1) + inv1 * (2 * U * nu + self.phi1 * mx1n))
        err2max = sl * (U * mx2n + inv2 * (2 * U * nu1 + self.phi2 * mx2n))
        errd = (
            sl
            * inv1
            * (
                self.c12 * (1.0 + 2 * self.th12) * ((self.th12 + 2.01 * U) * mx2n + err2max)
                + self.phi1 * mxdn
            )
        )
        e_hi = math.exp(-lam * (tau - terr)) * (1.0 + 4 * U)  # ≥ e^{−λτ} over τ's rounding interval
        m1_hi = max(-math.expm1(-(tau + terr)), math.expm1(max(terr - tau, 0.0))) * (1.0 + 4 * U)
        a1, ad = abs(s1) + err1, abs(d) + errd
        moved = terr * 1.01 * e_hi * ((lam * min(m1_hi, 1.0) + 1.01) * a1 + (lam + 1.0) * 1.01 * ad)
        evaluated = (lam * abs(tau) + 12.0) * 1.01 * U * e1 * (m1 * abs(s1) + b * abs(d))
        rnd = (m1_hi * err1 + 1.01 * errd) * e_hi + moved + evaluated
        if tau <= terr:  # the first loss above ε may lie at or below it exactly (w ≤ its rounding)
            rnd += 1.01 * terr * abs(float(self.g[k]))
        # (fast regime: the window holds all of Σ w² but e^{−36} of it, so its infinite sum)
        w2 = e_hi * e_hi * (self.w_p + m1_hi * (self.w_b + m1_hi * self.w_c)) * (1.0 + 1e-12)
        return s, rnd, w2

    # --------------------------------------------------------------------------------- crossing
    def _approx_hits(self, i0: int, i1: int, bar: float, stride: int) -> NDArray[np.intp]:
        """Grid indices i = i0, i0 + stride, … < i1 where log of the approximate δ(L̂_i) − δ_∞
        (the bracket at τ = Δ plus the error terms' rough size) exceeds ``bar`` (covered from
        i0 + 1)."""
        m1, q = -math.expm1(-self.step) * self.r1, math.exp(-self.step) * self.r1
        em = -math.expm1(-self.step)  # the error terms at τ = Δ, roughly: where they dominate δ
        w2 = math.exp(-2.0 * self.lam * self.step) * (self.w_p + em * (self.w_b + em * self.w_c))
        floor = self.err2 * math.sqrt(w2 if math.isfinite(w2) else float(self.g.size)) + self.cl_alias
        hits = []
        for b in self._blocks:  # at L̂_i: the sums at m = i + 1
            first = i0 + 1 + (-(b.lo - i0 - 1) % stride if b.lo > i0 + 1 else 0)
            lo, hi = max(b.lo, first), min(b.hi, i1 + 1)
            if lo >= hi:
                continue
            t = m1 * b.s1[lo - b.lo : hi - b.lo : stride] + q * b.d[lo - b.lo : hi - b.lo : stride]
            with np.errstate(divide="ignore", invalid="ignore"):
                lhs = np.log(t + floor) - self.lam * self.losses[lo - 1 : hi - 1 : stride]
            hits.append(np.flatnonzero(lhs > bar) * stride + (lo - 1))
        out: NDArray[np.intp] = np.sort(np.concatenate(hits)) if hits else np.empty(0, dtype=np.intp)
        return out

    def last_above(self, i0: int, i1: int, delta: float) -> int | None:
        """The largest grid index i in [i0, i1) (i1 < N) where an *approximate* δ(L̂_i) exceeds
        ``delta`` — from every 32nd index first, then the 32 after the last one above (δ falls
        with ε, so the crossing lies there) — or None: only a guide for the certified search."""
        self.extend(i0 + 1)
        room = delta - self.inf
        if not room > 0:
            return i1 - 1 if i1 > i0 else None
        bar = math.log(room) - self.log_scale
        coarse = self._approx_hits(i0, i1, bar, 32)
        if coarse.size == 0:
            fine = self._approx_hits(max(i0, i1 - 32), i1, bar, 1)  # the top stretch past the last stride
            return int(fine[-1]) if fine.size else None
        c = int(coarse[-1])
        fine = self._approx_hits(c, min(i1, c + 33), bar, 1)
        return int(fine[-1]) if fine.size else c
