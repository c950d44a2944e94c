"""Amplification of an (ε, δ) guarantee by sampling without replacement.

Source: Balle, Barthe, Gaboardi, "Privacy Amplification by Subsampling: Tight Analyses via
Couplings and Divergences", NeurIPS 2018, §5 (sampling without replacement under the substitution
— replace-one — relation): if M is (ε, δ)-DP with respect to substitution on datasets of size m,
then M ∘ (uniform sample of m of the n records, without replacement) is (ε', δ')-DP with respect to
substitution on datasets of size n, with γ = m/n and

    ε' = log(1 + γ·(e^ε − 1)),   δ' = γ·δ.

The pure-DP case (δ = 0) is the thesis's Lemma 2.1.1. The bound is tight for the worst-case
mechanism. (Poisson sampling is a different relation and a different formula; not covered.)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["amplify_without_replacement"]


def amplify_without_replacement(epsilon: float, delta: float, gamma: float) -> tuple[float, float]:
    """(ε', δ') = (log(1 + γ(e^ε − 1)), γδ) for sampling a fraction γ ∈ [0, 1] without replacement.

    Computed as log1p(γ·expm1(ε)) (no cancellation for small γε) and rounded up by one ulp each.
    """
    if not (0.0 <= gamma <= 1.0):
        raise ValueError(f"gamma must be in [0, 1], got {gamma!r}")
    if not (epsilon >= 0.0):
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    if not (0.0 <= delta <= 1.0):
        raise ValueError(f"delta must be in [0, 1], got {delta!r}")
    if math.isinf(epsilon):
        return (math.inf if gamma > 0 else 0.0), gamma * delta
    eps = math.log1p(gamma * math.expm1(epsilon))
    d = gamma * delta
    return float(np.nextafter(eps, math.inf)) if eps > 0 else 0.0, float(
        np.nextafter(d, 2.0)
    ) if d > 0 else 0.0
