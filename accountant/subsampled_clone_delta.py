"""Certified hockey-stick divergence of the subsampled clone pair (bounds.md §9), for the PLD
and (ε, δ) routes: :class:`SubsampledClonePair`. The pair, its bins of m and the two
monotonicities that make the bins valid are in :mod:`accountant.subsampled_clones`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from ._binomial import log_binom_pmf
from ._lazy import lazy
from .subsampled_clones import _bins, _prepare, _weight, clone_probability

stats = lazy("scipy.stats")

__all__ = ["SubsampledClonePair", "subsampled_clone_pair"]

_CDF_SLACK = 1e-10
_DELTA_SLACK = 1e-9
_TINY = 1e-300  # absolute allowance for underflowed binomial tails
_TABLE_MAX = 4_096  # bins with m up to this use tables of Pr[Bin(m, ½) ≥ j]


@lru_cache(maxsize=16)
def _tables(xs: tuple[int, ...]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """S_m(j) = Pr[Bin(m, ½) ≥ j], j = 0..m+1, for every m in ``xs`` (≤ _TABLE_MAX), laid end to
    end (``flat[off[i] + j]``): suffix sums of Loader's pmf (positive terms from the small end:
    relative error ≲ 10⁻¹³, inside _CDF_SLACK), S_m(0) = 1 and S_m(m + 1) = 0 exactly."""
    parts, offs, at = [], [], 0
    for m in xs:
        pm = np.exp(log_binom_pmf(np.arange(m + 1, dtype=float), float(m), 0.5, 0.5))
        tab = np.append(np.cumsum(pm[::-1])[::-1], 0.0)
        tab[0] = 1.0
        parts.append(tab)
        offs.append(at)
        at += m + 2
    return (np.concatenate(parts) if parts else np.zeros(0)), np.asarray(offs, dtype=np.int64)


def _survival(j: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
    """Pr[Bin(m, ½) ≥ j] for m (column) × j: from tables where m ≤ _TABLE_MAX, else scipy."""
    out = np.empty(np.broadcast_shapes(j.shape, m.shape))
    jb = np.broadcast_to(j, out.shape)
    mm = m[:, 0]
    small = mm <= _TABLE_MAX
    if small.any():
        flat, off = _tables(tuple(int(v) for v in mm[small]))
        jj = np.clip(jb[small], 0, mm[small][:, None] + 1).astype(np.int64)
        out[small] = flat[off[:, None] + jj]
    if (~small).any():
        jl, ml = jb[~small], m[~small]
        got = stats.binom.sf(np.maximum(jl, 0.0) - 1.0, ml, 0.5)
        out[~small] = np.where(jl <= 0, 1.0, np.where(jl > ml, 0.0, got))
    return out


def _delta_bins(
    x: NDArray[np.float64], ws: NDArray[np.float64], eps: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Certified δ(w, x; ε) for bins (column vectors) × ε ≥ 0 (row): the positive set of
    P' − e^ε Q' is {a ≥ j}, j = ⌊x(1 + τ)/2⌋ + 1, τ = tanh(ε/2)/(w·s), and
    δ = (1+e^ε)ws·S_{x−1}(j−1) − ((1+e^ε)ws + e^ε − 1)·S_x(j) (Σ_{a≥j} a·b_x(a) = (x/2)·S_{x−1}(j−1)).
    Any threshold gives at most δ, so where x(1+τ)/2 is within float error of an integer the
    neighbouring thresholds are tried too; the CDF error is covered by a relative slack."""
    ee = np.exp(eps)
    c1 = (1.0 + ee) * ws
    c2 = c1 + np.expm1(eps)
    with np.errstate(divide="ignore"):
        tau = np.tanh(eps / 2.0) / ws
    t = x * (1.0 + tau) / 2.0
    j0 = np.floor(t) + 1.0
    sure = np.abs(t - np.rint(t)) > 1e-9 * (np.abs(t) + 1.0)

    def at(j: NDArray[np.float64]) -> NDArray[np.float64]:
        s1 = _survival(j - 1.0, x - 1.0)
        s0 = _survival(j, x)
        return c1 * s1 - c2 * s0 + _CDF_SLACK * (c1 * s1 + c2 * s0) + _TINY

    best = at(j0)
    if not np.all(sure):
        best = np.where(sure, best, np.maximum.reduce([best, at(j0 - 1.0), at(j0 + 1.0)]))
    return np.where(tau >= 1.0 + 1e-9, 0.0, np.maximum(best, 0.0))  # float slack on the last cell


@dataclass(frozen=True)
class SubsampledClonePair:
    """The subsampled clone pair (P̃, Q̃) of (n, k, ε0) (bounds.md §9).

    ``delta(eps)`` is a certified upper bound of the hockey-stick divergence
    Σ (P̃ − e^ε Q̃)_+ (either direction: Q̃ is P̃ swapped), vectorised over ε: per m-bin the
    closed form of :func:`_delta_bins` at (x_b, w_{y_b}) — valid by the monotonicity in m and
    the linear scaling in w (module docstring) — weighted by the certified bin masses, the sum
    inflated by a relative 10⁻⁹. For ε < 0, δ(ε) = 1 − e^ε + e^ε·δ(−ε) (exact identity, Q̃ ↔ P̃).
    ``max_log_ratio`` is the largest log P̃/Q̃ (δ = 0 beyond it, up to a relative float slack).
    """

    n: int
    k: int
    epsilon0: float
    randomizer: str = "any"  # "rr": clone probability 2/(e^{ε0}+1) (bounds.md §12)

    @property
    def max_log_ratio(self) -> float:
        p = clone_probability(self.epsilon0, self.randomizer)
        ws = float(_weight(np.array([float(self.k)]), self.k / self.n, self.k * p)[0]) * math.tanh(
            self.epsilon0 / 2
        )
        return math.log1p(ws) - math.log1p(-ws)

    def _upper_nonneg(self, e: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.epsilon0 == 0.0 or e.size == 0:
            return np.zeros(e.shape)
        p = clone_probability(self.epsilon0, self.randomizer)
        bins = _bins(self.k, float(self.epsilon0), self.k / self.n, 2.0, p)
        keep = bins.w > 0
        x, ws = bins.x[keep, None], bins.w[keep, None] * math.tanh(self.epsilon0 / 2.0)
        mass = np.exp(bins.log_mass[keep])
        out = np.zeros(e.shape)
        step = max(1, (1 << 20) // max(1, x.size))
        for i in range(0, e.size, step):
            out[i : i + step] = mass @ _delta_bins(x, ws, e[None, i : i + step])
        return np.minimum(out * (1.0 + _DELTA_SLACK), 1.0)

    @overload
    def delta(self, eps: float) -> float: ...
    @overload
    def delta(self, eps: NDArray[np.floating[Any]]) -> NDArray[np.float64]: ...
    def delta(self, eps: float | NDArray[np.floating[Any]]) -> float | NDArray[np.float64]:
        """Certified upper bound of δ(ε) (float for a scalar ε, else an array)."""
        e = np.atleast_1d(np.asarray(eps, dtype=float))
        pos = self._upper_nonneg(np.abs(e))
        out = np.where(e >= 0, pos, np.minimum(1.0, (-np.expm1(e) + np.exp(e) * pos) * (1.0 + 2.0**-48)))
        return float(out[0]) if np.ndim(eps) == 0 else out


def subsampled_clone_pair(n: int, k: int, epsilon0: float, randomizer: str = "any") -> SubsampledClonePair:
    """A validated :class:`SubsampledClonePair` (1 ≤ k ≤ n integers, ε0 ≥ 0; ``randomizer``
    ``"any"`` or ``"rr"``)."""
    n, k, epsilon0 = _prepare(n, k, epsilon0)
    clone_probability(epsilon0, randomizer)  # validates the name
    return SubsampledClonePair(n, k, float(epsilon0), randomizer)
