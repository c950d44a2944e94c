"""Privacy-loss distribution (PLD) of the FMT21 clone pair, composed T times by FFT.

Needs ``dp_accounting`` (optional extra ``[pld]``), imported when a function here is called.

Construction (every step pessimistic, so the composed (ε, δ) is an upper bound for the shuffle)
-----------------------------------------------------------------------------------------------
1. *Dominating pair.* The clone pair (P, Q) of :mod:`.clone_dp` dominates one shuffle of n ε0-LDP
   reports under replace-one neighbours (FMT21 §3), in both directions (Q is P with the coordinates
   swapped), so one symmetric PLD describes both. T adaptive rounds are dominated by the T-fold
   product of dominating pairs.
2. *Binning C.* Replacing C by the lower edge c_b of its bin (C observed, bins as in
   :mod:`.clone_dp`) gives a pair that dominates (P, Q): from (P_{c_b}, Q_{c_b}) one recovers
   (P_C, Q_C) by drawing C from its conditional law given the bin and adding C − c_b independent
   fair coins to the first coordinate — the same kernel under P and Q. Its hockey-stick curve is
   the certified upper curve ``ClonePair.delta``; bins are coarser here (``rel`` = 1e-4: the loss
   scale moves by ≤ 1e-4 relative inside a bin).
3. *Connect-the-dots.* The pessimistic "connect the dots" discretisation (Doroshenko, Ghazi,
   Kamath, Kumar, Manurangsi, PETS 2022, Algorithm 1; ``dp_accounting``'s
   ``create_pmf_pessimistic_connect_dots_fixed_gap``) builds, from the curve δ(ε_j) on the grid
   ε_j = jΔ, a PLD on that grid that dominates the pair; mass below the first grid point is
   moved up to it and δ(ε_last) becomes mass at +∞. The grid spans [−10σ_L, ε_top] where
   σ_L = 2·tanh(ε0/2)/√(E[C]+1) is the loss scale and δ(ε_top) ≤ 1e-30 (or ε_top = ε0).
4. *Composition.* ``self_compose(T)`` convolves by FFT and truncates tails of total mass
   ``tail_mass_truncation`` into the +∞ mass (pessimistic). Not certified: the floating-point
   error of the FFT itself (≈ 1e-16 × the largest entry per bin, amplified ~T-fold in the
   exponentiated spectrum); the tests compare T = 2 with an exact enumeration, and the measured
   drift from a different FFT path at T ≤ 10⁵ is reported in docs/results.md.

Δ defaults to σ_L/50: connect-the-dots errors are second order in Δ, and halving Δ changes the
composed ε by < 1e-4 relative at T ≤ 10⁵ (measured; see tests).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from .._validation import check_delta, check_epsilon0, check_n
from .clone_dp import ClonePair, loss_scale

if TYPE_CHECKING:
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

__all__ = ["CloneShufflePLD", "clone_pld", "clone_pld_epsilon"]

_REL_PLD = 1e-4
_LOW_SIGMAS = 10.0
_TOP_DELTA = 1e-30
_STEPS_PER_SIGMA = 50.0


def _dp_accounting() -> tuple[ModuleType, ModuleType]:
    try:
        from dp_accounting.pld import pld_pmf, privacy_loss_distribution
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "the PLD baseline needs dp_accounting: pip install -e '.[pld]' (in a clone of the repository)"
        ) from exc
    return pld_pmf, privacy_loss_distribution


@dataclass
class CloneShufflePLD:
    """The single-round pessimistic PLD of the clone pair of (n, ε0), with what it cost."""

    n: int
    epsilon0: float
    discretization: float
    pld: PrivacyLossDistribution
    grid_points: int
    bins: int

    def compose(self, rounds: int, tail_mass_truncation: float = 1e-15) -> PrivacyLossDistribution:
        """The T-fold composition (dp_accounting PLD), by FFT."""
        if rounds == 1:
            return self.pld
        return self.pld.self_compose(int(rounds), tail_mass_truncation=tail_mass_truncation)

    def epsilon(self, rounds: int, delta: float, tail_mass_truncation: float = 1e-15) -> float:
        """ε after ``rounds`` rounds at δ (dp_accounting's exact ε of the discretised PLD)."""
        delta = check_delta(delta)
        if self.epsilon0 == 0.0:
            return 0.0
        return float(self.compose(rounds, tail_mass_truncation).get_epsilon_for_delta(delta))

    def delta(self, rounds: int, epsilon: float, tail_mass_truncation: float = 1e-15) -> float:
        if self.epsilon0 == 0.0:
            return 0.0
        return float(self.compose(rounds, tail_mass_truncation).get_delta_for_epsilon(epsilon))


def clone_pld(
    n: int, epsilon0: float, discretization: float | None = None, rel: float = _REL_PLD
) -> CloneShufflePLD:
    """Build (and cache) the single-round PLD of the clone pair (module docstring, steps 1–3)."""
    n = check_n(n)
    epsilon0 = check_epsilon0(epsilon0)
    return _clone_pld(n, epsilon0, discretization, rel)


@lru_cache(maxsize=32)
def _clone_pld(n: int, eps0: float, discretization: float | None, rel: float) -> CloneShufflePLD:
    pld_pmf, privacy_loss_distribution = _dp_accounting()
    if eps0 == 0.0:
        pmf = pld_pmf.create_pmf({0: 1.0}, discretization or 1e-4, 0.0, True)
        return CloneShufflePLD(
            n, eps0, discretization or 1e-4, privacy_loss_distribution.PrivacyLossDistribution(pmf), 1, 0
        )
    pair = ClonePair(n, eps0, rel)
    sig = loss_scale(n, eps0)
    d = float(discretization) if discretization else sig / _STEPS_PER_SIGMA
    # top of the grid: the first ε (in σ_L steps) with δ(ε) ≤ 1e-30, or ε0
    top = eps0
    k = 10.0
    while k * sig < eps0:
        if pair.delta(k * sig) <= _TOP_DELTA:
            top = k * sig
            break
        k *= 1.25
    j_lo = int(math.floor(max(-eps0, -_LOW_SIGMAS * sig) / d))
    j_hi = int(math.ceil(top / d))
    eps = np.arange(j_lo, j_hi + 1) * d
    deltas = np.minimum.accumulate(np.clip(pair.delta(eps), 0.0, 1.0))
    pmf = pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(d, j_lo, j_hi, deltas)
    pld = privacy_loss_distribution.PrivacyLossDistribution(pmf)
    return CloneShufflePLD(n, eps0, d, pld, int(eps.size), int(pair._prep[1].size))


def clone_pld_epsilon(
    n: int, epsilon0: float, rounds: int, delta: float, discretization: float | None = None
) -> float:
    """ε of ``rounds`` shuffles of n ε0-LDP reports at δ, from the composed clone-pair PLD."""
    return clone_pld(n, epsilon0, discretization).epsilon(rounds, delta)
