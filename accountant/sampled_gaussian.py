"""RDP of the Gaussian mechanism on a sample drawn without replacement: the Gaussian-specific
bound of Wang–Balle–Kasiviswanathan (bounds.md §8).

Source
------
Y.-X. Wang, B. Balle, S. Kasiviswanathan, "Subsampled Rényi Differential Privacy and Analytical
Moments Accountant", AISTATS 2019 (arXiv:1808.00087), Theorem 27 — the strengthening of Theorem 9
for mechanisms whose likelihood-ratio moments are those of one worst-case pair, which the
Gaussian mechanism satisfies; the form evaluated here is the one Google's dp_accounting
implements for ``SampledWithoutReplacementDpEvent`` over a Gaussian
(``rdp_privacy_accountant._compute_rdp_sample_wor_gaussian_int``) and autodp for
``AmplificationBySampling(PoissonSampling=False)`` with ``improved_bound_flag=True``.

Setting (the ``subsampled`` event's): a dataset of n records, m = γ·n of them drawn uniformly
*without replacement*, a Gaussian mechanism with noise multiplier z (σ = z·Δ₂, Δ₂ the replace-one
ℓ2 sensitivity) run on the sample, neighbours replace one record. For every integer α ≥ 2

    ε'(α) ≤ 1/(α−1)·log(1 + Σ_{j=2..α} γ^j·C(α,j)·B_j),
    B_2 = min{4(e^{1/z²} − 1), 2e^{1/z²}},
    B_j = min{4·√(M_{2⌊j/2⌋}·M_{2⌈j/2⌉}), 2e^{(j−1)·j/(2z²)}}   (j ≥ 3),

with M_{2k} = E_Q[(P/Q − 1)^{2k}] for the Gaussian pair P = N(1, z²), Q = N(0, z²) — the 2k-th
forward difference at 0 of i ↦ E_Q[(P/Q)^i] = e^{i(i−1)/(2z²)} (dp_accounting's ``deltas``). The
second entry of each min is Theorem 9's own term for the Gaussian curve ε(j) = j/(2z²) and
ε(∞) = ∞, so the bound is never above WBK19 Theorem 9 over the Gaussian; the first uses
|E[X^j]| ≤ √(E[X^{2⌊j/2⌋}]·E[X^{2⌈j/2⌉}]) (Cauchy–Schwarz). As dp_accounting does, the first
entry is used for j ≤ :data:`MOMENT_MAX` only (each term is bounded by either entry, so any j may
use Theorem 9's alone).

Certified evaluation
--------------------
M_{2k} is an alternating sum that cancels catastrophically in floating point (dp_accounting
evaluates it so, in log space, and may round it down). Here it is the integral

    M_{2k} = ∫ φ(x)·(e^{y(x)} − 1)^{2k} dx,   y(x) = x/z − 1/(2z²),

of a non-negative integrand whose logarithm h(x) = log φ(x) + 2k·log|e^{y} − 1| is concave on
each side of x₀ = 1/(2z) (where y = 0): log φ is concave and d²/dy² log|e^y − 1| = −e^y/(e^y − 1)²
< 0. On a cell [u, v] of one side, h lies below its tangent at the midpoint t (concavity), so the
cell's integral is at most e^{h(t)}·(v − u)·sinh(a)/a, a = h'(t)(v − u)/2; beyond the last cell of
a side the tangent at its end bounds the tail (e^{h(e)}/|h'(e)|, the slope pointing away). The
cells (width ≤ 0.02: relative slack ≲ 2e-5) cover the right side's peak (found by bisection on
h') ± 20 — the stretch from x₀ to them bounded by the tangent at their start — and the left side
from −√(2k) − 20 to x₀. The sum of the bounds, raised by a relative 1e-6 (the rounding of h, a
difference of terms up to ~x²/2), is an upper bound of M_{2k}; the RDP is then an upper bound,
rounded up.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._numerics import log_expm1, logsumexp, round_up
from .wbk19 import wbk19_rdp

__all__ = ["MOMENT_MAX", "log_gaussian_lr_moments", "sampled_gaussian_log_terms", "sampled_gaussian_rdp"]

#: the forward-difference (moment) entry of B_j is used for j ≤ this (as dp_accounting)
MOMENT_MAX = 256
_WIDTH = 0.02  # largest cell width of the quadrature (relative slack ≲ 2e-5 near a peak)
#: most cells one side's quadrature may use (× 128 exponents × 8 bytes: ≤ 128 MiB); beyond, the
#: Gaussian-specific entry is not available and Theorem 9's entry stands (z ≲ 10⁻³)
_MAX_CELLS = 1 << 17
_REACH = 20.0  # cells cover each side's peak ± this (h falls at least quadratically: h'' ≤ −1)
_SAFETY = 1e-6  # relative margin on each moment: h is a difference of terms up to ~x²/2 (≲ 1e7)
_LOG_SQRT_2PI = 0.5 * float(np.log(2.0 * np.pi))


def _h(
    x: NDArray[np.float64], k2: NDArray[np.float64], s: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(h, h') at x for the exponents k2 = 2k (broadcast): h = log φ(x) + 2k·log|e^y − 1|,
    y = s·x − s²/2, h' = −x + 2k·s·e^y/(e^y − 1)."""
    y = s * x - 0.5 * s * s
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ay = np.abs(y)
        # log|e^y − 1| = log expm1(|y|) + min(y, 0) (e^y − 1 = −e^y·(e^{−y} − 1) for y < 0)
        lg = log_expm1(ay) + np.minimum(y, 0.0)
        h = -0.5 * x * x - _LOG_SQRT_2PI + k2 * lg
        ratio = np.where(y > 0, 1.0, -np.exp(y)) / -np.expm1(-ay)  # e^y/(e^y − 1), both signs
        dh = -x + k2 * s * ratio
    return h, dh


def _log_sinhc(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """An upper bound of log(sinh(a)/a) ≥ 0: a²/6 for |a| ≤ 0.5 (log(sinh a/a) is concave in a²
    with slope 1/6 at 0, so it is ≤ a²/6; the slack, ≤ a⁴/180, is an over-estimate and sizeable only
    where |h'| is large, far from every peak), else |a| + log(1 − e^{−2|a|}) − log(2|a|)."""
    b = np.abs(a)
    out: NDArray[np.float64] = b * b / 6.0
    big = np.flatnonzero(b > 0.5)
    if big.size:
        bb = b.flat[big]
        out.flat[big] = bb + np.log(-np.expm1(-2.0 * bb)) - np.log(2.0 * bb)
    return out


def _peak(
    k2: NDArray[np.float64], s: float, lo: NDArray[np.float64], hi: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Where h' changes sign in (lo, hi) (h' decreasing there: h concave), by bisection."""
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        up = _h(mid, k2, s)[1] > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return 0.5 * (lo + hi)


def _side(
    k2: NDArray[np.float64], s: float, a: NDArray[np.float64], b: NDArray[np.float64]
) -> NDArray[np.float64]:
    """log of an upper bound of ∫_a^b e^h per exponent (a < b on one side of x₀): the midpoint
    tangents of equal cells (width ≤ :data:`_WIDTH`), vectorised over exponents."""
    cells = int(np.ceil(float(np.max(b - a)) / _WIDTH))
    if cells > _MAX_CELLS:  # a tiny noise multiplier: no bound here (+inf: Theorem 9's own entry is used)
        return np.full(k2.shape, np.inf)
    w = (b - a) / cells
    t = a[:, None] + w[:, None] * (np.arange(cells) + 0.5)[None, :]
    h, dh = _h(t, k2[:, None], s)
    return logsumexp(h + np.log(w)[:, None] + _log_sinhc(0.5 * dh * w[:, None]), axis=1)


def _tail(k2: NDArray[np.float64], s: float, e: NDArray[np.float64], outward: float) -> NDArray[np.float64]:
    """log of ∫ e^h beyond the end e, going in the direction ``outward`` (±1): the tangent at e,
    e^{h(e)}/|h'(e)|, valid when h' points inward there (+inf otherwise)."""
    h, dh = _h(e, k2, s)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(dh * outward < 0, h - np.log(np.abs(dh)), np.inf)


@lru_cache(maxsize=32)
def _moments(noise_multiplier: float, k_max: int) -> NDArray[np.float64]:
    s = 1.0 / noise_multiplier
    x0 = 0.5 * s
    k2: NDArray[np.float64] = 2.0 * np.arange(1, k_max + 1, dtype=np.float64)
    # right side (y > 0): the peak of h lies in (x₀, x₀ + 2k·s + √(2k) + 2 + 1/s) (h' < 0 at the
    # right end: e^y/(e^y − 1) ≤ 1 + 1/y), cells over [max(x₀, p − R), p + R] and the tails beyond
    p = _peak(k2, s, np.full(k2.shape, x0), x0 + k2 * s + np.sqrt(k2) + 2.0 + 1.0 / s)
    ra, rb = np.maximum(x0, p - _REACH), p + _REACH
    right = np.logaddexp(_side(k2, s, ra, rb), _tail(k2, s, rb, 1.0))
    left_of_window = ra > x0
    if np.any(left_of_window):  # the stretch (x₀, ra) where h rises: the tangent at ra
        right = np.where(left_of_window, np.logaddexp(right, _tail(k2, s, ra, -1.0)), right)
    # left side (y < 0): its peak lies above −√(2k) (h' ≥ −x − 2k/(x₀ − x) there: e^y/(1 − e^y) ≤
    # 1/|y|); cells over [−L, x₀], L = √(2k) + R, the tangent at −L below it (h'(−L) ≥ L − 2k/L > 0;
    # _tail gives +inf were it not so)
    la = -(np.sqrt(k2) + _REACH)
    left = np.logaddexp(_side(k2, s, la, np.full(k2.shape, x0)), _tail(k2, s, la, -1.0))
    out: NDArray[np.float64] = np.logaddexp(left, right) + np.log1p(_SAFETY)
    out.setflags(write=False)
    return out


def log_gaussian_lr_moments(noise_multiplier: float, k_max: int) -> NDArray[np.float64]:
    """Upper bounds of log M_{2k}, k = 1..k_max, M_{2k} = E_Q[(P/Q − 1)^{2k}] for P = N(1, z²),
    Q = N(0, z²) (module docstring; +inf where a bound is not available)."""
    return _moments(float(noise_multiplier), int(k_max))


def sampled_gaussian_log_terms(noise_multiplier: float) -> NDArray[np.float64]:
    """log(4·√(M_{2⌊j/2⌋}·M_{2⌈j/2⌉})) for j = 3..:data:`MOMENT_MAX` (upper bounds): the
    Gaussian-specific entry of B_j, for :func:`accountant.wbk19.wbk19_rdp`'s ``log_terms``."""
    lm = log_gaussian_lr_moments(noise_multiplier, MOMENT_MAX // 2)  # log M_2, log M_4, …
    jj = np.arange(3, MOMENT_MAX + 1)
    out: NDArray[np.float64] = np.log(4.0) + 0.5 * (lm[jj // 2 - 1] + lm[(jj + 1) // 2 - 1])
    return out


def sampled_gaussian_rdp(gamma: float, noise_multiplier: float, orders: ArrayLike) -> NDArray[np.float64]:
    """WBK19 Theorem 27 (module docstring) at integer orders α ≥ 2 (validated by the caller):
    the RDP of a Gaussian mechanism with noise multiplier z on a γ-fraction drawn without
    replacement, replace-one neighbours — Theorem 9's sum over the Gaussian curve ε(j) = j/(2z²),
    ε(∞) = ∞ (:func:`accountant.wbk19.wbk19_rdp`: log space, ragged over (α, j), rounded up) with
    each term j ≤ :data:`MOMENT_MAX` the smaller of its two entries."""
    inv = 0.5 / (noise_multiplier * noise_multiplier)
    return wbk19_rdp(
        gamma,
        lambda js: round_up(np.asarray(js, dtype=np.float64) * inv),
        float("inf"),
        orders,
        log_terms=sampled_gaussian_log_terms(noise_multiplier),
    )
