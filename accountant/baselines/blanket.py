"""(ε, δ) amplification-by-shuffling bounds of BBG19 (privacy blanket) and EFM19.

Both hold for n users each applying an ε0-LDP local randomizer and a shuffler; they are the
approximate-DP baselines of the thesis's Figure 5.3.

BBG19 — privacy blanket, generic ε0-LDP randomizer
--------------------------------------------------
Balle, Bell, Gascón, Nissim, "The Privacy Blanket of the Shuffle Model", CRYPTO 2019, §5: the
amplification bounds from Hoeffding's and Bennett's inequalities, with the parameters they give
for a *generic* ε0-LDP randomizer, in the form the authors evaluate them in their public code
(github.com/BorjaBalle/amplification-by-shuffling, ``shuffleddp/``: ``Hoeffding``,
``BennettExact`` with the generic ``LDPMechanism``). The soundness argument, re-derived here:

* *Blanket.* Every ε0-LDP randomizer is R(x) = (1 − γ)·LR_x + γ·ω with blanket probability
  γ = Σ_y inf_x R(x)(y) ≥ e^{−ε0} (a smaller γ is also a valid decomposition, so γ = e^{−ε0} is
  used). Revealing which of users 2..n drew from the blanket (post-processing of a richer view)
  leaves user 1's report hidden among M ~ Bin(n−1, γ) i.i.d. ω-samples, and the hockey-stick
  divergence of that multiset is E[(Σ_{j=0}^{M} ℓ_j)_+]/(M + 1), ℓ_j = (R_{x1} − e^ε R_{x1'})(W_j)/ω(W_j),
  W_j ~ ω, E ℓ = 1 − e^ε = −a. With Pr[Bin(n−1,γ) = m−1]/m = Pr[Bin(n,γ) = m]/(γn):

      δ(ε) ≤ 1/(γn) · E_{M~Bin(n,γ)}[ 1{M ≥ 1} · E(Σ_{j=1}^{M} ℓ_j)_+ ].

* *Generic parameters* (R_x/ω ∈ [e^{−ε0}, e^{ε0}]): range b = (e^ε + 1)(e^{ε0} − e^{−ε0}), maximum
  b₊ = e^{ε0} − e^{ε−ε0}, second moment E ℓ² ≤ v = e^{ε0}(e^{2ε} + 1) − 2e^{ε−3ε0}.
* *Hoeffding:* E(Σ_{1}^{m} ℓ)_+ = ∫_0^∞ Pr[Σℓ > t] dt ≤ ∫_{ma}^∞ e^{−2u²/(mb²)} du ≤ b²/(4a)·e^{−2ma²/b²}, so
  δ ≤ b²/(4aγn) · [(1 − γ(1 − e^{−2a²/b²}))^n − (1 − γ)^n].
* *Bennett* (uncentred form: ℓ ≤ b₊, E ℓ² ≤ v): Pr[Σℓ ≥ t] ≤ exp(−(mv/b₊²)·h(b₊(t + ma)/(mv))),
  h(u) = (1+u)log(1+u) − u; bounding h by its tangent at u₀ = ab₊/v and integrating,
  E(Σℓ)_+ ≤ b₊/log(1 + u₀) · e^{−mκ}, κ = (v/b₊²)·h(u₀), so
  δ ≤ b₊/(γn·log(1 + u₀)) · [(1 − γ(1 − e^{−κ}))^n − (1 − γ)^n].

(The authors' code sums the M = 0 term too, which only adds; the binomial expectation is closed.)
Valid for 0 < ε < ε0 (δ = 0 at ε ≥ ε0: the shuffle is ε0-DP). Not tight: the clone pair
(:mod:`.clone_dp`) is smaller by a factor of a few in ε.

EFM19 — amplification by shuffling
----------------------------------
Erlingsson, Feldman, Mironov, Raghunathan, Talwar, Thakurta, "Amplification by Shuffling: From
Local to Central Differential Privacy via Anonymity", SODA 2019, Corollary 9 (thesis Lemma 2.3.1
item 2): for ε0 < 1/2, δ ∈ (0, 1/100) and n ≥ 1000, the shuffle is (12·ε0·√(log(1/δ)/n), δ)-DP.
Outside those conditions it is not a bound (BoundNotApplicable).
"""

from __future__ import annotations

import math

import numpy as np

from .._lazy import lazy
from .._validation import check_delta, check_epsilon0, check_n
from ..errors import BoundNotApplicable

optimize = lazy("scipy.optimize")  # loaded on first use (memory, import time)

__all__ = ["bbg19_delta", "bbg19_epsilon", "efm19_epsilon"]

_KINDS = ("hoeffding", "bennett", "best")


def _log_blanket_sum(n: int, gamma: float, kappa: float) -> float:
    """log[(1 − γ(1 − e^{−κ}))^n − (1 − γ)^n], κ > 0 (log space; −inf if it underflows to 0)."""
    l1 = n * math.log1p(-gamma * (-math.expm1(-kappa)))
    l0 = n * math.log1p(-gamma) if gamma < 1 else -math.inf
    diff = l0 - l1  # < 0
    if diff == -math.inf:
        return l1
    return l1 + math.log(-math.expm1(diff)) if diff < 0 else -math.inf


def _bbg19_log_delta(n: int, eps0: float, eps: float, kind: str) -> float:
    if eps >= eps0:
        return -math.inf
    gamma = math.exp(-eps0)
    a = math.expm1(eps)
    if a <= 0.0:
        return 0.0  # ε = 0: the bounds degenerate (δ ≤ 1 trivially)
    out = math.inf
    if kind in ("hoeffding", "best"):
        b = (math.exp(eps) + 1.0) * (2.0 * math.sinh(eps0))
        kappa = 2.0 * a * a / (b * b)
        out = min(
            out, 2 * math.log(b) - math.log(4 * a) - math.log(gamma * n) + _log_blanket_sum(n, gamma, kappa)
        )
    if kind in ("bennett", "best"):
        bp = math.exp(eps0) - math.exp(eps - eps0)
        v = math.exp(eps0) * (math.exp(2 * eps) + 1.0) - 2.0 * math.exp(eps - 3 * eps0)
        u0 = a * bp / v
        h = (1.0 + u0) * math.log1p(u0) - u0
        if h <= 0.0:  # u0 below ~1e-8: h(u) ≥ u²/2 − u³/6 is tiny; fall back to the series (lower bound of h)
            h = max(0.0, u0 * u0 / 2.0 - u0**3 / 6.0)
        kappa = v / (bp * bp) * h
        if kappa > 0:
            out = min(
                out, math.log(bp) - math.log(gamma * n * math.log1p(u0)) + _log_blanket_sum(n, gamma, kappa)
            )
    return min(out, 0.0)


def bbg19_delta(n: int, epsilon0: float, epsilon: float, kind: str = "best") -> float:
    """BBG19 privacy-blanket δ(ε) for a generic ε0-LDP randomizer (module docstring).

    kind: ``hoeffding``, ``bennett`` or ``best`` (the smaller of the two; both are valid).
    Returns δ ∈ [0, 1], rounded up by a relative 1e-12.
    """
    n = check_n(n)
    eps0 = check_epsilon0(epsilon0)
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    eps = float(epsilon)
    if eps0 == 0.0 or eps >= eps0:
        return 0.0
    if eps < 0:
        raise ValueError("epsilon must be >= 0")
    return min(1.0, math.exp(_bbg19_log_delta(n, eps0, eps, kind)) * (1.0 + 1e-12))


def bbg19_epsilon(n: int, epsilon0: float, delta: float, kind: str = "best") -> float:
    """Smallest ε (relative tolerance 1e-10, rounded up) with :func:`bbg19_delta` ≤ δ; ε0 if none
    below ε0 (the shuffle is always ε0-DP)."""
    n = check_n(n)
    eps0 = check_epsilon0(epsilon0)
    delta = check_delta(delta)
    if eps0 == 0.0:
        return 0.0
    ld = math.log(delta)

    def f(x: float) -> float:
        return max(_bbg19_log_delta(n, eps0, x, kind), -745.0) - ld

    # bracket [lo, hi] with f(lo) > 0 ≥ f(hi) on a geometric ladder down from ε0 (δ(ε0) = 0). Any ε
    # with f ≤ 0 is a valid answer (monotonicity is not needed for soundness).
    hi, lo = eps0, None
    x = eps0
    for _ in range(400):
        x *= 0.8
        if f(x) <= 0:
            hi = x
        else:
            lo = x
            break
    if lo is None:
        return float(hi)
    r = optimize.brentq(f, lo, hi, xtol=1e-300, rtol=1e-10)
    for _ in range(100):  # certify the returned ε on δ itself (as bbg19_delta reports it)
        if bbg19_delta(n, eps0, r, kind) <= delta:
            return float(r)
        r = min(hi, r * (1 + 2e-10))
    return float(hi)


def efm19_epsilon(n: int, epsilon0: float, delta: float) -> float:
    """EFM19 Corollary 9: ε = 12·ε0·√(log(1/δ)/n), valid for ε0 < 1/2, δ < 1/100, n ≥ 1000."""
    n = check_n(n)
    eps0 = check_epsilon0(epsilon0)
    delta = check_delta(delta)
    if not (eps0 < 0.5 and delta < 0.01 and n >= 1000):
        raise BoundNotApplicable(
            f"EFM19 Corollary 9 needs ε0 < 1/2, δ < 1/100 and n >= 1000; got ε0 = {eps0:g}, δ = {delta:g}, n = {n}"
        )
    return float(np.nextafter(12.0 * eps0 * math.sqrt(math.log(1.0 / delta) / n), math.inf))
