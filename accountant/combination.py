"""The (ε, δ) of a composition with three parts: an RDP curve, an additive δ (ζ) and (ε, δ) releases.

Every list of events is summarised by :class:`Account`:

* ``rdp`` — the order-wise sum of the curves of the RDP events (count included);
* ``zeta`` — Z = Σ count·ζ over the events that carry a failure probability ζ;
* ``approx`` — the (ε_i, δ_i) releases of ``approx_dp`` events, kept apart as additive
  statistics (:class:`ApproxPart`): K = Σ c_i, S₁ = Σ c_i ε_i, S₂ = Σ c_i ε_i², S_μ = Σ c_i ε_i
  tanh(ε_i/2), S_δ = Σ c_i δ_i and M = max ε_i. Every statistic is an upper bound (sums rounded
  up), so the summary of a union of charges is the element-wise sum (max for M) — what the ledger
  stores per budget class.

One function turns a summary into ε at δ (:func:`epsilon_of`) or δ at ε (:func:`delta_of`); the
accountant's ``epsilon_guarantee``/``delta_guarantee``, the service's ``/v1/epsilon`` and
``/v1/delta``, calibration and the ledger's budget check all call it.

Definitions
-----------
A curve ε(·) holds *outside a failure event of probability ζ* (an event with ``zeta``) if for
every ordered pair of neighbouring datasets (x, x') — and for every history of earlier outputs —
there is a law P̂ with d_TV(M(x), P̂) ≤ ζ and D_α(P̂ ‖ M(x')) ≤ ε(α) for all α > 1. ζ = 0 is RDP.
(If M(x) = (1−ζ)P₀ + ζE and M(x') = (1−ζ)Q₀ + ζE' with D_α(P₀‖Q₀) ≤ ε(α), e.g. a Gaussian whose
sensitivity holds under a coupling that fails with probability ζ, then P̂ = (1−ζ)P₀ + ζE' works:
d_TV(M(x), P̂) = ζ·d_TV(E, E') ≤ ζ, and D_α(P̂ ‖ M(x')) ≤ max(D_α(P₀‖Q₀), D_α(E'‖E')) by the
joint quasi-convexity of D_α — van Erven & Harremoës 2014, Thm 13.)

Theorem (soundness). Let an adaptive interaction run mechanisms M_1, M_2, … (in any order, each
chosen from earlier outputs): the RDP/ζ steps j with curves ε_j(·) and failure probabilities ζ_j,
and the (ε_i, δ_i)-DP steps i. Let R = Σ_j ε_j, Z = Σ_j ζ_j. Then for every ε₁, ε₂ ≥ 0 the whole
interaction is (ε₁ + ε₂, δ_R(ε₁) + δ_A(ε₂) + Z)-DP, where δ_R(ε₁) is the RDP→DP conversion of R
(:mod:`accountant.conversion`, Canonne–Kamath–Steinke 2020) and δ_A is any bound on the
hockey-stick divergence of the (ε_i, δ_i) steps composed alone (:class:`ApproxPart`).

Proof. Fix x, x'. (1) Replace, step by step, each RDP/ζ kernel M_j(x; h) by its P̂_j(h); call the
result P̂. Swapping one kernel changes the joint law by at most sup_h d_TV ≤ ζ_j (couple the two
runs until that step), so d_TV(P_x, P̂) ≤ Z and P_x(S) ≤ P̂(S) + Z for every set S. (2) With Q =
P_x', the log-likelihood ratio of a whole transcript splits as log dP̂/dQ = L_R + L_A: L_R sums the
RDP steps' log p̂_j/q_j, L_A the (ε, δ) steps' log m_i(x)/m_i(x'). L_R = log dP̂/dH₁ for the
hybrid H₁ that runs the RDP steps on x' and the (ε, δ) steps on x; L_A = log dP̂/dH₂ for H₂ that
runs the RDP steps with P̂_j and the (ε, δ) steps on x'. (3) For a, b real,
(1 − e^{−a−b})₊ ≤ (1 − e^{−a})₊ + (1 − e^{−b})₊ (if a, b ≥ 0 it is (1 − e^{−a})(1 − e^{−b}) ≥ 0;
if one is negative the other alone dominates). With a = L_R − ε₁, b = L_A − ε₂ and
H_γ(P‖Q) = E_P[(1 − γe^{−L})₊]: H_{e^{ε₁+ε₂}}(P̂‖Q) ≤ H_{e^{ε₁}}(P̂‖H₁) + H_{e^{ε₂}}(P̂‖H₂).
(4) P̂ and H₁ differ only in the RDP kernels, each with D_α(P̂_j‖M_j(x')) ≤ ε_j(α) for every
history (the (ε, δ) kernels are common), so by the chain rule D_α(P̂‖H₁) ≤ R(α) and the
conversion bounds the first term by δ_R(ε₁). P̂ and H₂ differ only in the (ε, δ) kernels, an
adaptive composition of (ε_i, δ_i)-DP mechanisms (the common kernels act as the adversary's
randomness), so the second term is at most δ_A(ε₂). (5) P_x(S) ≤ P̂(S) + Z ≤ e^{ε₁+ε₂}P_x'(S) +
δ_R(ε₁) + δ_A(ε₂) + Z, and the argument is symmetric in (x, x'). ∎

Hence the answers: with no (ε, δ) release, ε(δ) is the conversion of R at δ − Z (δ ≤ Z: no ε
exists; refused); δ(ε) = δ_R(ε) + Z. With (ε, δ) releases two sound candidates are computed
and the smaller is reported:

* **split** — min over ε₂ (a grid on [0, S₁] refined around its best point) of
  ε_R(δ − Z − δ_A(ε₂)) + ε₂; for δ at ε, min over ε₂ ≤ ε of δ_R(ε − ε₂) + δ_A(ε₂) + Z;
* **pure** — each (ε_i, δ_i) release as a pure ε_i release outside a failure event of probability
  δ_i. Kairouz–Oh–Viswanath 2015, Thm 2.5: for a fixed pair, M(x) = T(P̃) and M(x') = T(Q̃) for a
  randomised map T and the (ε, δ) randomised-response pair P̃ = (1−δ)RR⁺ + δ·[atom 0],
  Q̃ = (1−δ)RR⁻ + δ·[atom 3]; so M(x) = (1−δ)T(RR⁺) + δ·T(atom 0) and likewise for x', with
  D_α(T(RR⁺)‖T(RR⁻)) ≤ ĉ_ε(α) ≤ min(ε, αε²/2) (data processing; Bun–Steinke 2016, Prop. 3.3),
  which by the definition's remark is a curve outside a failure event of probability δ. So R is
  raised by min(S₁, αS₂/2) and Z by S_δ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .baselines.composition import kov15_delta, kov15_epsilon
from .conversion import epsilon_vector, log_delta_vector
from .errors import InvalidParameter

#: the (ε, δ) part uses KOV15 at max ε when it holds at most this many releases (above, each
#: evaluation costs O(√K) terms; Hoeffding's bound is then within a few percent of it)
KOV15_MAX_COUNT = 10_000
_SPLIT_GRID = 96
_SPLIT_REFINE = 24

ZETA_REFUSAL = (
    "the events' additive delta (the sum of count·zeta over events whose guarantee holds outside a failure "
    "event{approx}) is {z:.6g} >= delta = {d:.6g}: no epsilon exists at this delta. Ask for a larger delta, or "
    "lower the events' zeta / count"
)


class ZetaExceedsDelta(InvalidParameter):
    """The additive δ alone (Σ count·ζ, plus Σ count·δ_i of (ε, δ) releases where they must be
    paid in full) reaches the δ asked for: no ε exists."""


def _up(x: float) -> float:
    return float(np.nextafter(x, math.inf)) if x > 0 else 0.0


def _down(x: float) -> float:
    return float(np.nextafter(x, -math.inf)) if x > 0 else x


def _add(a: float, b: float) -> float:
    """a + b rounded up (exact when either is 0)."""
    if a == 0.0 or b == 0.0:
        return a + b
    return _up(a + b)


@dataclass(frozen=True)
class ApproxPart:
    """Additive statistics of (ε_i, δ_i) releases (c_i copies each), all upper bounds:
    ``count`` K = Σ c_i, ``eps_sum`` S₁ = Σ c_i ε_i, ``eps_sq_sum`` S₂ = Σ c_i ε_i²,
    ``eps_tanh_sum`` S_μ = Σ c_i ε_i·tanh(ε_i/2), ``eps_max`` M = max ε_i, ``delta_sum`` S_δ = Σ c_i δ_i.

    Bounds on the hockey-stick divergence δ_A(ε₂) of their adaptive composition (either direction):

    * basic composition: ε₂ ≥ S₁ ⇒ δ_A ≤ 1 − Π(1 − δ_i) ≤ S_δ;
    * KOV15 at M: every (ε_i, δ_i)-DP mechanism is (M, δ_i)-DP, hence a post-processing of the
      (M, δ_i) randomised-response pair (KOV15 Thm 2.5), and an adaptive composition is a
      post-processing of the product of those pairs. An outcome holding a δ-atom has Q-mass 0
      and the atoms have P-probability 1 − Π(1 − δ_i) ≤ S_δ; without them the product is K-fold
      ε-randomised response at M, whose divergence is KOV15's sum
      (:func:`accountant.baselines.composition.kov15_delta` with δ = 0). So δ_A(ε₂) ≤ S_δ +
      kov15_delta(K, M, 0, ε₂) — KOV15 Thm 3.3 exactly when every release is (M, δ). Used for
      K ≤ :data:`KOV15_MAX_COUNT`;
    * Hoeffding (KOV15 Thm 3.5, heterogeneous advanced composition): with the pairs RR(ε_i) the
      privacy loss is L = Σ X_i, X_i = ±ε_i independent with E L = Σ ε_i tanh(ε_i/2) ≤ S_μ, and
      H(P‖Q) = E_P[(1 − e^{ε₂−L})₊] ≤ P(L > ε₂) ≤ exp(−(ε₂ − S_μ)²/(2S₂)) for ε₂ > S_μ
      (Hoeffding's inequality with ranges 2ε_i); plus S_δ for the atoms as above.
    """

    count: int = 0
    eps_sum: float = 0.0
    eps_sq_sum: float = 0.0
    eps_tanh_sum: float = 0.0
    eps_max: float = 0.0
    delta_sum: float = 0.0

    @classmethod
    def of(cls, epsilon: float, delta: float, count: int) -> ApproxPart:
        e, d, c = float(epsilon), float(delta), int(count)
        return cls(
            count=c,
            eps_sum=_up(c * e),
            eps_sq_sum=_up(c * _up(e * e)),
            eps_tanh_sum=_up(c * _up(e * math.tanh(e / 2.0))),
            eps_max=e,
            delta_sum=_up(c * d),
        )

    def __add__(self, other: ApproxPart) -> ApproxPart:
        return ApproxPart(
            count=self.count + other.count,
            eps_sum=_add(self.eps_sum, other.eps_sum),
            eps_sq_sum=_add(self.eps_sq_sum, other.eps_sq_sum),
            eps_tanh_sum=_add(self.eps_tanh_sum, other.eps_tanh_sum),
            eps_max=max(self.eps_max, other.eps_max),
            delta_sum=_add(self.delta_sum, other.delta_sum),
        )

    @property
    def empty(self) -> bool:
        return self.count == 0

    def delta_at(self, eps2: float) -> float:
        """Upper bound on the composed (ε, δ) releases' hockey-stick divergence at ε₂ (≤ 1)."""
        if self.count == 0:
            return 0.0
        best = 1.0
        if eps2 >= self.eps_sum:
            best = min(best, self.delta_sum)
        if self.count <= KOV15_MAX_COUNT:
            best = min(best, _add(self.delta_sum, kov15_delta(self.count, self.eps_max, 0.0, eps2)))
        if eps2 > self.eps_tanh_sum and self.eps_sq_sum > 0:
            tail = _up(math.exp(-((eps2 - self.eps_tanh_sum) ** 2) / (2.0 * self.eps_sq_sum)))
            best = min(best, _add(self.delta_sum, tail))
        return best

    def epsilon_at(self, delta2: float) -> float:
        """An ε₂ with :meth:`delta_at` (ε₂) ≤ δ₂ — the least of the three bounds' answers (+inf when
        δ₂ ≤ S_δ, except that δ₂ = S_δ allows basic composition)."""
        if self.count == 0:
            return 0.0
        best = self.eps_sum if delta2 >= self.delta_sum else math.inf
        r = delta2 - self.delta_sum
        if r <= 0:
            return best
        r = _down(r)
        if r >= 1.0:
            return 0.0
        if self.count <= KOV15_MAX_COUNT:
            best = min(best, kov15_epsilon(self.count, self.eps_max, 0.0, r))
        if self.eps_sq_sum > 0:
            best = min(best, _up(self.eps_tanh_sum + math.sqrt(2.0 * self.eps_sq_sum * math.log(1.0 / r))))
        return best


@dataclass(frozen=True)
class Account:
    """The summary of a composition on ``orders``: RDP part, additive δ, (ε, δ) releases."""

    orders: NDArray[np.float64]
    rdp: NDArray[np.float64]
    zeta: float = 0.0
    approx: ApproxPart = field(default_factory=ApproxPart)

    @property
    def plain(self) -> bool:
        """Only an RDP curve (no additive δ, no (ε, δ) release)."""
        return self.zeta == 0.0 and self.approx.empty


@dataclass(frozen=True)
class Answer:
    """ε and δ of a composition and how they were obtained.

    ``order``: the order minimising the converted RDP part (None if that part is zero);
    ``delta_rdp``: the δ at which the RDP part was converted (or the δ it contributes at the
    ``epsilon_rdp`` it was given); ``epsilon_approx``/``delta_approx``: the (ε, δ) releases' share;
    ``zeta``: the additive δ paid in full; ``method``: ``rdp``, ``split`` or ``pure``."""

    epsilon: float
    delta: float
    order: float | None
    zeta: float = 0.0
    epsilon_rdp: float = 0.0
    delta_rdp: float = 0.0
    epsilon_approx: float = 0.0
    delta_approx: float = 0.0
    method: str = "rdp"


def _zeta_refusal(z: float, d: float, approx: bool) -> ZetaExceedsDelta:
    extra = ", and the deltas of (epsilon, delta) releases" if approx else ""
    return ZetaExceedsDelta(ZETA_REFUSAL.format(approx=extra, z=z, d=d))


def _rdp_epsilon(
    orders: NDArray[np.float64], rdp: NDArray[np.float64], delta: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """(min over orders of the conversion, argmin) for one δ or a column of δs."""
    d = np.asarray(delta, dtype=np.float64)
    vec = epsilon_vector(orders[None, :], rdp[None, :], d.reshape(-1, 1))
    i = np.argmin(vec, axis=1)
    return vec[np.arange(vec.shape[0]), i], i


def _rdp_log_delta(
    orders: NDArray[np.float64], rdp: NDArray[np.float64], eps: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """(min over orders of log δ, argmin) for one ε or each of several."""
    e = np.atleast_1d(np.asarray(eps, dtype=np.float64))
    rows = np.vstack([log_delta_vector(orders, rdp, float(x)) for x in e])
    i = np.argmin(rows, axis=1)
    return rows[np.arange(rows.shape[0]), i], i


def _eps2_grid(a: ApproxPart, top: float, ds: float) -> NDArray[np.float64]:
    """Candidate ε₂ for the split: 0, a linear grid on [0, top], a geometric one from a
    thousandth of the (ε, δ) part's own ε at δ/2 (its scale) up to ``top``, and the kinks of the
    optimal-composition term, ε₂ = (K − 2i)·ε_max (where δ_A drops by a step, so a grid point just
    below one misses it; both directions then search the same kinks). Any ε₂ gives a valid bound;
    the grid only decides how close to the best split the answer is."""
    if top <= 0:
        return np.array([0.0])
    if top < 1e-300:  # no geometric grid down there (subnormals); the ends are enough
        return np.array([0.0, top])
    scale = min(top, a.epsilon_at(ds / 2.0)) if ds > 0 else top
    lo = max(scale * 1e-3, top * 1e-12)
    geo = np.geomspace(lo, top, _SPLIT_GRID)
    parts: list[NDArray[np.float64]] = [np.zeros(1), geo, np.linspace(0.0, top, _SPLIT_GRID // 2)]
    if 0 < a.count <= KOV15_MAX_COUNT and a.eps_max > 0:
        kinks: NDArray[np.float64] = (
            a.count - 2.0 * np.arange(a.count // 2 + 1, dtype=np.float64)
        ) * a.eps_max
        parts.append(kinks[(kinks > 0) & (kinks <= top)])
    return np.unique(np.concatenate(parts))


def _pure_candidate_curve(acc: Account) -> NDArray[np.float64]:
    a = acc.approx
    extra = np.minimum(a.eps_sum, acc.orders * a.eps_sq_sum / 2.0)
    return np.nextafter(acc.rdp + extra, np.inf)


def epsilon_of(acc: Account, delta: float) -> Answer:
    """ε at ``delta`` of the summary (module docstring); raises :class:`ZetaExceedsDelta` when
    the additive δ leaves nothing, and ``InvalidParameter`` when every usable order is unbounded."""
    orders, rdp, a = acc.orders, acc.rdp, acc.approx
    ds = delta - acc.zeta
    if not ds > 0:
        raise _zeta_refusal(acc.zeta, delta, False)
    if acc.zeta > 0:
        ds = _down(ds)
    zero = not np.any(rdp)
    if a.empty:
        e, i = _rdp_epsilon(orders, rdp, ds)
        order = None if zero else float(orders[int(i[0])])
        eps = max(0.0, float(e[0]))
        return Answer(eps, delta, order, acc.zeta, eps, ds, 0.0, 0.0, "rdp")
    best: Answer | None = None
    # pure: (ε_i, δ_i) as pure ε_i outside a failure event δ_i
    dp = _down(ds - a.delta_sum)
    if dp > 0:
        curve = _pure_candidate_curve(acc)
        e, i = _rdp_epsilon(orders, curve, dp)
        if np.isfinite(e[0]):
            eps = max(0.0, float(e[0]))
            best = Answer(
                eps, delta, float(orders[int(i[0])]), _add(acc.zeta, a.delta_sum), eps, dp, 0.0, 0.0, "pure"
            )
    # split: RDP part at δ − Z − δ_A(ε₂) plus ε₂
    if zero:
        e2 = a.epsilon_at(ds)
        if math.isfinite(e2) and (best is None or e2 < best.epsilon):
            best = Answer(e2, delta, None, acc.zeta, 0.0, 0.0, e2, ds, "split")
    else:
        split = _best_split(orders, rdp, a, ds)
        if split is not None and (best is None or split[0] < best.epsilon):
            tot, e1, d1, e2, d2, order = split
            best = Answer(tot, delta, order, acc.zeta, e1, d1, e2, d2, "split")
    if best is None:
        raise _zeta_refusal(_add(acc.zeta, a.delta_sum), delta, True)
    return best


#: per candidate ε₂ of a split: (total ε, ε₁, δ₁, δ₂, index of the order that gave ε₁)
_SplitValues = tuple[
    NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]
]
#: the best split found: (total ε, ε₁, δ₁, ε₂, δ₂, order)
_Split = tuple[float, float, float, float, float, float]


def _split_values(
    orders: NDArray[np.float64], rdp: NDArray[np.float64], a: ApproxPart, ds: float, grid: NDArray[np.float64]
) -> _SplitValues:
    d2 = np.array([a.delta_at(float(x)) for x in grid])
    d1 = np.nextafter(ds - d2, -np.inf)
    ok = d1 > 0
    tot = np.full(grid.size, np.inf)
    e1 = np.full(grid.size, np.inf)
    idx = np.zeros(grid.size, dtype=np.intp)
    if np.any(ok):
        v, i = _rdp_epsilon(orders, rdp, d1[ok])
        e1[ok] = np.maximum(v, 0.0)
        idx[ok] = i
        tot[ok] = np.nextafter(e1[ok] + grid[ok], np.inf)
    return tot, e1, d1, d2, idx


def _refined_argmin(
    values: Callable[[NDArray[np.float64]], tuple[NDArray[Any], ...]], grid: NDArray[np.float64]
) -> tuple[NDArray[np.float64], tuple[NDArray[Any], ...], int]:
    """The best point of ``grid`` for ``values(points)[0]``, then refined twice on
    :data:`_SPLIT_REFINE` points between its neighbours (the split's objective can dip sharply:
    a Gaussian part's δ changes 40× over a hundredth of ε). Returns the points, their values and
    the index of the best. Every point is a valid split; this only finds a better one."""
    vals = values(grid)
    j = int(np.argmin(vals[0]))
    for _ in range(2):
        lo = grid[j - 1] if j > 0 else grid[j]
        hi = grid[j + 1] if j + 1 < grid.size else grid[j]
        if not (hi > lo and np.isfinite(vals[0][j])):
            break
        fine = np.linspace(lo, hi, _SPLIT_REFINE + 2)[1:-1]
        fv = values(fine)
        k = int(np.argmin(fv[0]))
        if not fv[0][k] < vals[0][j]:
            break
        grid, vals, j = fine, fv, k
    return grid, vals, j


def _best_split(
    orders: NDArray[np.float64], rdp: NDArray[np.float64], a: ApproxPart, ds: float
) -> _Split | None:
    pts, (tot, e1, d1, d2, idx), j = _refined_argmin(
        lambda g: _split_values(orders, rdp, a, ds, g), _eps2_grid(a, a.eps_sum, ds)
    )
    if not np.isfinite(tot[j]):
        return None
    return float(tot[j]), float(e1[j]), float(d1[j]), float(pts[j]), float(d2[j]), float(orders[idx[j]])


def delta_of(acc: Account, epsilon: float) -> Answer:
    """δ at ``epsilon`` of the summary (module docstring), at most 1."""
    orders, rdp, a = acc.orders, acc.rdp, acc.approx
    zero = not np.any(rdp)
    if a.empty:
        ld, i = _rdp_log_delta(orders, rdp, epsilon)
        dr = (
            0.0 if zero else (1.0 if not np.isfinite(ld[0]) and ld[0] > 0 else min(1.0, float(np.exp(ld[0]))))
        )
        order = None if zero else float(orders[int(i[0])])
        return Answer(epsilon, min(1.0, _add(dr, acc.zeta)), order, acc.zeta, epsilon, dr, 0.0, 0.0, "rdp")
    cands: list[Answer] = []
    curve = _pure_candidate_curve(acc)
    ld, i = _rdp_log_delta(orders, curve, epsilon)
    dr = 1.0 if not np.isfinite(ld[0]) and ld[0] > 0 else min(1.0, float(np.exp(ld[0])))
    z = _add(acc.zeta, a.delta_sum)
    cands.append(
        Answer(epsilon, min(1.0, _add(dr, z)), float(orders[int(i[0])]), z, epsilon, dr, 0.0, 0.0, "pure")
    )
    grid = _eps2_grid(a, min(a.eps_sum, epsilon), 1e-6)
    grid = grid[grid <= epsilon]
    if zero:
        d2 = a.delta_at(epsilon)
        cands.append(
            Answer(epsilon, min(1.0, _add(d2, acc.zeta)), None, acc.zeta, 0.0, 0.0, epsilon, d2, "split")
        )
    else:
        cands.append(_delta_split(acc, epsilon, grid))
    return min(cands, key=lambda c: c.delta)


def _delta_split(acc: Account, epsilon: float, grid: NDArray[np.float64]) -> Answer:
    """The split candidate of :func:`delta_of` when the RDP part is not zero: the best ε₂ on
    ``grid`` (the RDP part converted at ε − ε₂), refined between its neighbours."""
    orders, rdp, a = acc.orders, acc.rdp, acc.approx
    e2, (tot, d1, d2, idx), j = _refined_argmin(
        lambda g: _delta_split_values(orders, rdp, a, epsilon, g), grid
    )
    return Answer(
        epsilon,
        min(1.0, _add(float(tot[j]), acc.zeta)),
        float(orders[idx[j]]),
        acc.zeta,
        float(epsilon - e2[j]),
        float(d1[j]),
        float(e2[j]),
        float(d2[j]),
        "split",
    )


def _delta_split_values(
    orders: NDArray[np.float64],
    rdp: NDArray[np.float64],
    a: ApproxPart,
    epsilon: float,
    grid: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
    lds, idx = _rdp_log_delta(orders, rdp, epsilon - grid)
    d1 = np.where(np.isfinite(lds), np.minimum(1.0, np.exp(lds)), np.where(lds > 0, 1.0, 0.0))
    d2 = np.array([a.delta_at(float(x)) for x in grid])
    return np.nextafter(d1 + d2, np.inf), d1, d2, idx


def with_orders(acc: Account, orders: ArrayLike, rdp: ArrayLike) -> Account:
    """The same summary on other orders (the RDP part recomputed there by the caller)."""
    return replace(acc, orders=np.asarray(orders, dtype=np.float64), rdp=np.asarray(rdp, dtype=np.float64))


__all__ = [
    "KOV15_MAX_COUNT",
    "Account",
    "Answer",
    "ApproxPart",
    "ZetaExceedsDelta",
    "delta_of",
    "epsilon_of",
    "with_orders",
]
