"""Dominating pairs: certified hockey-stick curves of pairs (P, Q) that dominate one release.

A pair (P, Q) *dominates* a mechanism M under a neighbouring relation when, for every ordered
pair of neighbours (D, D′) and every x = e^ε ≥ 0 (every real ε),

    H_{e^ε}(M(D) ‖ M(D′)) ≤ δ_{P,Q}(ε) = Σ_o (P(o) − e^ε Q(o))_+ = E_P[(1 − e^{ε − L})_+],

L = log(P/Q) the privacy loss (+∞ where Q = 0). By Blackwell's theorem the curve over every real
ε (not only ε ≥ 0) makes M(D), M(D′) a post-processing of (P, Q), so T adaptively chosen releases
are dominated by the product of their pairs (Zhu, Dong, Wang, AISTATS 2022, Thm 10) — the PLD
route composes exactly that product (:mod:`accountant.pld`). Every pair here is symmetric (Q is P
mirrored), so one direction covers both neighbour orders.

A pair is a :class:`HockeyStickPair`: a vectorised *certified upper* curve δ(ε) (never below the
exact divergence; floating-point slack added as stated per pair), the range [lo, hi] of its finite
losses, a centre and spread of its loss (to choose the grid), its mass at +∞ and a hashable key.
Another certified curve plugs in with one line, e.g.
``curve_pair(SubsampledClonePair(n, k, e0).delta, -eps, eps, 0.0, scale, ("subsampled_clones", n, k, e0))``.

The pairs (docs/bounds.md, "The PLD route"):

* **(ε, δ) randomized response** (Kairouz, Oh, Viswanath, ICML 2015, Thm 2.5; pure ε-DP at δ = 0):
  P = (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0), Q = (0, (1−δ)/(1+e^ε), (1−δ)e^ε/(1+e^ε), δ)
  dominates every (ε, δ)-DP mechanism; δ_RR(ε′) = δ + (1−δ)·((e^ε − e^{ε′})_+ + (1 − e^{ε+ε′})_+)/(1+e^ε).
* **Gaussian** N(μ, 1) vs N(0, 1), μ = Δ₂/σ: exact for the Gaussian mechanism (Balle & Wang,
  ICML 2018, Thm 8): δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ). Gaussian pairs compose in closed
  form (``product``): T_i repetitions of μ_i are one pair with μ = √(Σ T_i μ_i²).
* **Laplace** Lap(1, b) vs Lap(0, b), ε0 = Δ₁/b: exact for the Laplace mechanism; losses in
  [−ε0, ε0], δ(ε) = 1 − e^{(ε − ε0)/2} on [−ε0, ε0], 1 − e^ε below, 0 above.
* **ε-bounded range** (the exponential mechanism; Durfee & Rogers 2019, Dong, Durfee & Rogers 2020):
  losses lie in [a, a + ε] with E_P[e^{−L}] = 1, and δ(ε′) = E_P[φ(e^{−L})] with φ(y) = (1 − e^{ε′}y)_+
  convex, so for a fixed a the chord of φ over [e^{−a−ε}, e^{−a}] bounds it: the worst case puts L
  on the two ends {t − ε, t} (t ∈ [0, ε], P(L = t) = (e^ε − e^t)/(e^ε − 1)). Maximising over t in
  closed form (the optimum is e^t = √(e^{ε′+ε})) gives the envelope
  δ(ε′) = max((e^{ε/2} − e^{ε′/2})²/(e^ε − 1), 1 − e^{ε′}) on [−ε, ε] (1 − e^{ε′} below, 0 above):
  a convex curve above every ε-BR pair's at every ε′, which is all the discretisation and the
  composition need (discretise.py). At ε′ = 0 it is tanh(ε/4), against tanh(ε/2) for ε-RR.
* **Clone pair** of Feldman, McMillan, Talwar (FOCS 2021, §3) for one shuffle of n ε0-LDP reports
  (discrete or continuous outputs): :class:`accountant.baselines.clone_dp.ClonePair` (its
  certification is in that module), with the coarser bins ``rel`` = 1e-4.

Floating point: the closed forms are evaluated so that no subtraction of nearly equal terms is
unguarded (expm1 of a difference that is exact by Sterbenz's lemma when it is small) and raised by
a relative ``_SLACK`` = 1e-12; the Gaussian's two normal tails (scipy's ``log_ndtr``, relative error
≲ 1e-14 for |a| ≤ 40, checked against mpmath in the tests) are each moved by ``_SLACK_GAUSS``
= 1e-11 in the pessimistic direction before subtracting.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._lazy import lazy
from .baselines.clone_dp import ClonePair, loss_scale
from .subsampled_clone_delta import subsampled_clone_pair
from .subsampled_clones import clone_probability

special = lazy("scipy.special")

__all__ = [
    "HockeyStickPair",
    "bounded_range_pair",
    "clone_pair_curve",
    "curve_pair",
    "gaussian_pair",
    "laplace_pair",
    "randomized_response_pair",
]

_SLACK = 1e-12
_SLACK_GAUSS = 1e-11
#: bins of the clone pair used for its PLD (the loss scale moves ≤ 1e-4 relative inside a bin)
CLONE_REL = 1e-4

Curve = Callable[[NDArray[np.float64]], NDArray[np.float64]]


@dataclass(frozen=True, eq=False)
class HockeyStickPair:
    """A dominating pair known by its certified upper hockey-stick curve (module docstring).

    ``curve(eps)``: δ(ε) ≥ the exact divergence at every real ε (vectorised); finite losses lie in
    [``lo``, ``hi``] (±inf when unbounded); ``center`` and ``scale`` locate the bulk of the loss
    under P (for the grid); ``inf_mass`` = P(L = +∞) = lim δ(ε) as ε → ∞ (an upper bound);
    ``key`` identifies the pair (equal keys, equal curves) for caches; ``single``, when set, is a
    tighter certified δ(ε) / ε(δ) of ONE release of the same pair (``(delta_of, epsilon_of)``, e.g.
    finer bins than ``curve`` needs for a PLD grid), used when the composition is that one release."""

    curve: Curve = field(repr=False)
    lo: float
    hi: float
    center: float
    scale: float
    inf_mass: float
    key: tuple[Hashable, ...]
    #: pairs whose products are again one pair of the family in closed form: (family, combine),
    #: combine mapping [(pair, count), …] of the family to the one pair of their product
    product: tuple[Hashable, Callable[[Sequence[tuple[HockeyStickPair, int]]], HockeyStickPair]] | None = (
        field(default=None, repr=False)
    )
    single: tuple[Callable[[float], float], Callable[[float], float]] | None = field(default=None, repr=False)

    def delta(self, eps: ArrayLike) -> NDArray[np.float64]:
        """Certified δ(ε) at each ε, clipped to [inf_mass, 1]; exactly ``inf_mass`` at ε ≥ hi."""
        e = np.atleast_1d(np.asarray(eps, dtype=np.float64))
        out = np.clip(np.asarray(self.curve(e), dtype=np.float64), self.inf_mass, 1.0)
        return np.where(e >= self.hi, self.inf_mass, out)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HockeyStickPair) and other.key == self.key


def curve_pair(
    curve: Curve,
    lo: float,
    hi: float,
    center: float,
    scale: float,
    key: tuple[Hashable, ...],
    inf_mass: float = 0.0,
) -> HockeyStickPair:
    """A pair from any certified upper curve (the one-line way to plug a new one in)."""
    return HockeyStickPair(curve, float(lo), float(hi), float(center), float(scale), float(inf_mass), key)


def _up(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(x * (1.0 + _SLACK), dtype=np.float64)


def randomized_response_pair(epsilon: float, delta: float = 0.0) -> HockeyStickPair:
    """The (ε, δ) randomized-response pair of KOV15 (pure ε-DP at δ = 0); symmetric."""
    eps, dl = float(epsilon), float(delta)

    def curve(x: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(over="ignore"):
            # (e^ε − e^x)_+ = e^ε·(−expm1(x − ε))_+ and (1 − e^{ε+x})_+ = (−expm1(ε + x))_+
            a = math.exp(eps) * np.maximum(-np.expm1(x - eps), 0.0)
            b = np.maximum(-np.expm1(eps + x), 0.0)
            return _up(dl + (1.0 - dl) * (a + b) / (1.0 + math.exp(eps)))

    std = eps / math.cosh(eps / 2.0)  # of L = ±ε with probabilities e^ε/(1+e^ε), 1/(1+e^ε)
    return curve_pair(curve, -eps, eps, eps * math.tanh(eps / 2.0), std, ("rr", eps, dl), inf_mass=dl)


def bounded_range_pair(epsilon: float) -> HockeyStickPair:
    """The upper envelope of every ε-bounded-range pair (losses in an interval of width ε):
    δ(ε′) = max((e^{ε/2} − e^{ε′/2})²/(e^ε − 1), 1 − e^{ε′}) on [−ε, ε] (module docstring)."""
    eps = float(epsilon)

    def curve(x: NDArray[np.float64]) -> NDArray[np.float64]:
        below = np.maximum(-np.expm1(np.minimum(x, 0.0)), 0.0)
        if eps == 0.0:
            return _up(below)
        # (e^{ε/2} − e^{x/2})² = e^ε·expm1((x − ε)/2)²
        mid = math.exp(eps) * np.expm1(np.minimum(x - eps, 0.0) / 2.0) ** 2 / math.expm1(eps)
        return _up(np.where(x < -eps, below, np.maximum(mid, below)))

    return curve_pair(curve, -eps, eps, 0.0, eps / 2.0, ("bounded_range", eps))


def gaussian_pair(mu: float) -> HockeyStickPair:
    """N(μ, 1) vs N(0, 1) (μ = sensitivity / σ); loss N(μ²/2, μ²) under P; symmetric."""
    mu = float(mu)

    def curve(x: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(over="ignore", under="ignore"):
            a = np.exp(special.log_ndtr(mu / 2.0 - x / mu)) * (1.0 + _SLACK_GAUSS)
            b = np.exp(x + special.log_ndtr(-mu / 2.0 - x / mu)) * (1.0 - _SLACK_GAUSS)
            return _up(np.maximum(a - np.nan_to_num(b, posinf=0.0), 0.0))

    pair = curve_pair(curve, -math.inf, math.inf, mu * mu / 2.0, mu, ("gaussian", mu))
    return dataclasses.replace(pair, product=("gaussian", _gaussian_product))


def _gaussian_product(items: Sequence[tuple[HockeyStickPair, int]]) -> HockeyStickPair:
    """The product of Gaussian pairs N(μ_i, 1) vs N(0, 1), each T_i times, is N(μ⃗, I) vs N(0, I),
    whose loss μ⃗·x − ‖μ⃗‖²/2 is that of ONE Gaussian pair with μ = ‖μ⃗‖ = √(Σ T_i μ_i²): the same
    PLD, so the same hockey-stick curve (exact; composed in closed form, without an FFT)."""
    return gaussian_pair(math.sqrt(math.fsum(t * p.key[1] ** 2 for p, t in items)))  # type: ignore[operator]


def laplace_pair(epsilon0: float) -> HockeyStickPair:
    """Lap(1, b) vs Lap(0, b), ε0 = sensitivity / b; losses in [−ε0, ε0]; symmetric."""
    e0 = float(epsilon0)

    def curve(x: NDArray[np.float64]) -> NDArray[np.float64]:
        inside = -np.expm1(np.minimum(x - e0, 0.0) / 2.0)
        below = -np.expm1(np.minimum(x, 0.0))
        return _up(np.where(x < -e0, below, inside))

    # L = ±ε0 with P-mass ½·e^{-ε0}… ½; spread ≈ ε0/2 (a scale for the grid, not a bound)
    return curve_pair(curve, -e0, e0, e0 / 2.0, max(e0 / 2.0, 0.0), ("laplace", e0))


def clone_pair_curve(n: int, epsilon0: float) -> HockeyStickPair:
    """The FMT21 clone pair of one shuffle of n ε0-LDP reports (certified ``ClonePair.delta``; for
    one release alone, the finer default bins of :class:`ClonePair`: the baseline's exact (ε, δ))."""
    pair = ClonePair(int(n), float(epsilon0), CLONE_REL)
    fine = ClonePair(int(n), float(epsilon0))
    e0 = float(epsilon0)
    out = curve_pair(
        pair.delta, -e0, e0, 0.0, loss_scale(int(n), e0) if e0 > 0 else 0.0, ("clones", int(n), e0, CLONE_REL)
    )
    return dataclasses.replace(out, single=(fine.delta, fine.epsilon))


def subsampled_clone_pair_curve(n: int, k: int, epsilon0: float, randomizer: str = "any") -> HockeyStickPair:
    """The subsampled clone pair of one round sampling k of n users without replacement, each
    sampled user's ε0-LDP report shuffled (bounds.md §9; certified ``SubsampledClonePair.delta``);
    ``randomizer="rr"``: the pair of randomized response's clone probability 2/(e^{ε0}+1)
    (bounds.md §12; k = n is then the shuffle of n reports). The loss scale for the grid:
    γ·2·tanh(ε0/2)/√(kp + 1) (the sampled users' clone-pair scale, thinned by the sampling rate
    γ = k/n; a scale, not a bound)."""
    pair = subsampled_clone_pair(int(n), int(k), float(epsilon0), randomizer)
    e0 = float(epsilon0)
    top = pair.max_log_ratio if e0 > 0 else 0.0
    p = clone_probability(e0, randomizer)
    scale = (k / n) * 2.0 * math.tanh(e0 / 2.0) / math.sqrt(k * p + 1.0)
    name = "subsampled_clones" if randomizer == "any" else f"subsampled_clones_{randomizer}"
    return curve_pair(pair.delta, -top, top, 0.0, scale, (name, int(n), int(k), e0))
