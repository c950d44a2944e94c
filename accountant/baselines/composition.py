"""Composition of k (ε, δ)-DP mechanisms: KOV15 optimal composition and DRV10 advanced composition.

KOV15 — optimal composition
---------------------------
Kairouz, Oh, Viswanath, "The Composition Theorem for Differential Privacy", ICML 2015, Theorem 3.3:
the k-fold adaptive composition of (ε, δ)-DP mechanisms is, for every i = 0..⌊k/2⌋,

    ((k − 2i)·ε,  1 − (1 − δ)^k·(1 − δ_i))-DP,   δ_i = Σ_{l=0}^{i−1} C(k,l)(e^{(k−l)ε} − e^{(k−2i+l)ε}) / (1 + e^ε)^k,

and no better pair holds for all such mechanisms. The proof shows every (ε, δ)-DP mechanism is a
post-processing of the (ε, δ) randomized-response pair P̃ = (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0),
Q̃ = (0, (1−δ)/(1+e^ε), (1−δ)e^ε/(1+e^ε), δ), so the composition is dominated by the k-fold product
of that pair. Its hockey-stick divergence at any ε_g (not only at the grid (k − 2i)ε) is

    δ_k(ε_g) = 1 − (1 − δ)^k + (1 − δ)^k · Σ_{l=0}^{k} C(k,l)·(e^{(k−l)ε} − e^{ε_g + lε})_+ / (1 + e^ε)^k

(outcomes holding a δ-atom of P̃ have Q̃-mass 0; the rest is the product of ε-randomized
responses with l "flips"), which equals Theorem 3.3 at ε_g = (k − 2i)ε. :func:`kov15_delta`
evaluates it in log space over the terms that are positive, vectorised; terms outside a ±40σ
window of the binomial mass are replaced by that mass (an upper bound of each term).
:func:`kov15_epsilon` finds the smallest ε_g with δ_k(ε_g) ≤ δ_total (brentq; δ_k is
non-increasing in ε_g), certified by re-evaluating.

DRV10 — advanced composition
----------------------------
Dwork, Rothblum, Vadhan, "Boosting and Differential Privacy", FOCS 2010, Theorem III.3: for every
δ' > 0 the k-fold adaptive composition of (ε, δ)-DP mechanisms is (ε', kδ + δ')-DP with
ε' = √(2k·ln(1/δ'))·ε + k·ε·(e^ε − 1). (Never better than KOV15, which is optimal.)

Choosing the per-round δ
------------------------
A baseline such as "FMT21 + KOV15" has a free per-round δ̃: the shuffle is (ε̃(δ̃), δ̃)-DP for every
δ̃ and the composition must meet δ_total. :func:`best_split_epsilon` minimises the composed ε
over log δ̃ (scipy's bounded Brent), optionally searching with a cheap approximate ε̃(·), then
evaluates the answer at the chosen δ̃ with the exact (certified) ε̃ — valid whatever δ̃ is chosen.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._lazy import gammaln, lazy
from .._validation import check_delta

optimize = lazy("scipy.optimize")  # loaded on first use (memory, import time)
stats = lazy("scipy.stats")

__all__ = ["best_split_epsilon", "drv_epsilon", "kov15_delta", "kov15_epsilon"]

_WINDOW = 40.0


def _check(k: int, epsilon: float, delta: float) -> tuple[int, float, float]:
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    if not (0 <= delta <= 1):
        raise ValueError(f"delta must be in [0, 1], got {delta!r}")
    return int(k), float(epsilon), float(delta)


def _log_rr_hockey(k: int, eps: float, eps_g: float) -> float:
    """log Σ_l C(k,l)(e^{(k−l)ε} − e^{ε_g+lε})_+ / (1+e^ε)^k (−inf when no term is positive)."""
    if eps == 0.0:
        return -math.inf
    x = (k * eps - eps_g) / (2.0 * eps)  # terms l < x are positive
    if x <= 0:
        return -math.inf
    l_max = min(k, int(math.ceil(x)) - 1)
    q = 1.0 / (1.0 + math.exp(eps))  # P-probability of a "flip"
    mu, sd = k * q, math.sqrt(k * q * (1 - q))
    l_lo = max(0, int(math.floor(mu - _WINDOW * sd)))
    l_hi = min(l_max, int(math.ceil(mu + _WINDOW * sd)))
    parts = []
    if l_lo > 0:  # terms below the window: each ≤ its P-mass C(k,l) q^l (1−q)^{k−l}
        parts.append(math.log(max(stats.binom.cdf(min(l_lo - 1, l_max), k, q), 1e-320)))
    if l_hi < l_max:  # terms above the window, likewise
        parts.append(math.log(max(stats.binom.cdf(l_max, k, q) - stats.binom.cdf(l_hi, k, q), 1e-320)))
    if l_lo <= l_hi:
        ll = np.arange(l_lo, l_hi + 1, dtype=float)
        z = eps_g - (k - 2.0 * ll) * eps  # < 0 for every l ≤ l_max
        le = np.logaddexp(0.0, eps)
        with np.errstate(divide="ignore"):
            lt = (
                gammaln(k + 1.0)
                - gammaln(ll + 1.0)
                - gammaln(k - ll + 1.0)
                + (k - ll) * eps
                - k * le
                + np.log(-np.expm1(np.minimum(z, 0.0)))
            )
        mx = float(np.max(lt))
        if mx > -math.inf:
            parts.append(mx + math.log(float(np.sum(np.exp(lt - mx)))))
    if not parts:
        return -math.inf
    m = max(parts)
    return m + math.log(sum(math.exp(p - m) for p in parts))


def kov15_delta(k: int, epsilon: float, delta: float, epsilon_total: float) -> float:
    """δ at which the k-fold composition of (ε, δ)-DP mechanisms is (ε_total, δ)-DP (KOV15, optimal).

    Rounded up by a relative 1e-10 (gammaln and the sums lose ~1e-13 relative)."""
    k, eps, delta = _check(k, epsilon, delta)
    eg = float(epsilon_total)
    log_keep = k * math.log1p(-delta) if delta < 1 else -math.inf  # log (1−δ)^k
    base = -math.expm1(log_keep)  # 1 − (1−δ)^k
    lh = _log_rr_hockey(k, eps, eg)
    rest = math.exp(log_keep + lh) if lh > -math.inf and log_keep > -math.inf else 0.0
    return min(1.0, (base + rest) * (1.0 + 1e-10))


def kov15_epsilon(k: int, epsilon: float, delta: float, delta_total: float) -> float:
    """Smallest ε_total (relative tolerance 1e-10, certified) with :func:`kov15_delta` ≤ δ_total;
    +inf when even ε_total = kε needs more (1 − (1−δ)^k > δ_total)."""
    k, eps, delta = _check(k, epsilon, delta)
    dt = check_delta(delta_total)
    if kov15_delta(k, eps, delta, k * eps) > dt:
        return math.inf
    if kov15_delta(k, eps, delta, 0.0) <= dt:
        return 0.0
    ldt = math.log(dt)

    def f(x: float) -> float:
        return math.log(max(kov15_delta(k, eps, delta, x), 1e-320)) - ldt

    hi = k * eps
    r = optimize.brentq(f, 0.0, hi, xtol=1e-300, rtol=1e-10)
    for _ in range(100):  # certify on δ itself (a log comparison can hide the last ulp)
        if kov15_delta(k, eps, delta, r) <= dt:
            return float(r)
        r = min(hi, r * (1 + 2e-10) + 1e-300)
    return float(hi)


def drv_epsilon(k: int, epsilon: float, delta: float, delta_total: float) -> float:
    """DRV10 Theorem III.3 with δ' = δ_total − kδ: √(2k ln(1/δ'))·ε + kε(e^ε − 1); +inf if δ' ≤ 0."""
    k, eps, delta = _check(k, epsilon, delta)
    dt = check_delta(delta_total)
    dp = dt - k * delta
    if dp <= 0:
        return math.inf
    val = math.sqrt(2.0 * k * math.log(1.0 / dp)) * eps + k * eps * math.expm1(eps)
    return float(np.nextafter(val, math.inf))


_COMPOSERS = {"kov15": kov15_epsilon, "drv": drv_epsilon}


def best_split_epsilon(
    k: int,
    eps_of_delta: Callable[[float], float],
    delta_total: float,
    method: str = "kov15",
    search_eps_of_delta: Callable[[float], float] | None = None,
    log10_range: float = 10.0,
) -> tuple[float, float]:
    """min over the per-round δ̃ of the composed ε, for a mechanism that is (ε̃(δ̃), δ̃)-DP for all δ̃.

    Returns (ε_total, δ̃). ``search_eps_of_delta`` (default ``eps_of_delta``) is used during the
    search only; the returned ε is computed with ``eps_of_delta`` at the returned δ̃, so it is a
    valid bound whenever ``eps_of_delta`` is. δ̃ ranges over [δ_max·10^{−log10_range}, δ_max)
    with δ_max = 1 − (1 − δ_total)^{1/k} (the largest per-round δ the composition can afford).
    """
    compose = _COMPOSERS[method]
    dt = check_delta(delta_total)
    k = int(k)
    search = search_eps_of_delta or eps_of_delta
    d_max = -math.expm1(math.log1p(-dt) / k) if method == "kov15" else dt / k
    hi = math.log(d_max) - 1e-6
    lo = hi - log10_range * math.log(10.0)

    def obj(t: float) -> float:
        v = compose(k, search(math.exp(t)), math.exp(t), dt)
        return v if math.isfinite(v) else 1e300

    res = optimize.minimize_scalar(obj, bounds=(lo, hi), method="bounded", options={"xatol": 1e-3})
    t = float(res.x)
    d = math.exp(t)
    return compose(k, eps_of_delta(d), d, dt), d
