"""Exact-divergence audit of the central accounting primitives: ``exponential``, ``above_threshold``,
``approx_dp`` and events with an additive δ (``zeta``).

Each event is compared with the exact output laws of real neighbouring pairs of a release it
describes (see _check.py for the RDP and (ε, δ) assertions):

* ``exponential`` — exponential mechanisms on small output sets, scores of sensitivity 1;
* ``above_threshold`` — AboveThreshold on a tiny stream, its output law (where it stops) by
  quadrature over the threshold noise;
* ``approx_dp`` — the worst (ε, δ)-DP pair (KOV15's randomized response with δ-atoms), several
  copies with two different (ε, δ), alone and with a Gaussian release: exact hockey-stick
  divergences from binomial sums (an (ε, δ) release has no Rényi bound, so only (ε, δ) is audited);
* ``zeta`` — a Gaussian whose sensitivity holds except on a failure event of probability ζ
  (a mixture whose other component is far away): hockey-stick divergence by quadrature.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.stats import norm

import accountant

from ..helpers import exact as X
from ..helpers.above_threshold import at_law
from ._check import Discrete, assert_sound

SET = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REL = 1e-9


# ---------------------------------------------------------------------------------------------------
# Exponential mechanism
# ---------------------------------------------------------------------------------------------------


def em_law(scores: np.ndarray, eps: float) -> np.ndarray:
    """P(y) ∝ exp(ε·u(y)/2), sensitivity 1."""
    w = np.exp(eps * (scores - scores.max()) / 2.0)
    return w / w.sum()


@SET
@given(
    st.floats(0.01, 12.0),
    st.lists(st.integers(0, 6), min_size=2, max_size=7),
    st.data(),
    st.integers(1, 3),
)
def test_exponential_mechanism(eps, base, data, rounds):
    """u(x, ·) arbitrary integers, u(x', ·) = u(x, ·) + d with d ∈ {−1, 0, 1}: P_x vs P_x'."""
    u = np.array(base, dtype=float)
    d = np.array(
        data.draw(st.lists(st.sampled_from([-1, 0, 1]), min_size=u.size, max_size=u.size)), dtype=float
    )
    pair = X.ShuffledPair.from_laws(em_law(u + d, eps), em_law(u, eps))
    ev = {"mechanism": "exponential", "epsilon": eps, "count": rounds}
    assert_sound([ev], Discrete(pair), rounds, f"exponential, u = {u}, d = {d}")


def test_exponential_is_tight_on_the_bounded_range_extreme():
    """The two-point ε-BR pair at the maximising p attains the curve (a lower bound the curve must
    reach within its rounding): the curve is the supremum, not a loose bound."""
    eps = 1.3
    for a in (2.0, 5.0, 20.0):
        A, B = math.expm1(a * eps), math.expm1(eps)
        p = (A - a * B) / ((a - 1) * A * B)
        t = -math.log1p(p * B)  # loss values t, t + ε under Q: Q-masses 1 − p, p
        q = np.array([1 - p, p])
        P = q * np.exp(np.array([t, t + eps]))
        exact = X.renyi(X.ShuffledPair.from_laws(P, q), [a])[0]
        curve = accountant.event_rdp({"mechanism": "exponential", "epsilon": eps}, [a])[0]
        assert exact <= curve <= exact * (1 + 1e-9)


def test_exponential_curve_against_mpmath_supremum():
    """The curve is the supremum over p of the two-point bound, by mpmath (50 digits) at the
    stationary point and on a grid of p: never below, at most 1e-9 above."""
    mp.mp.dps = 50
    for eps in (1e-6, 1e-3, 0.2, 1.0, 4.0, 30.0):
        for a in (1.001, 1.5, 3.0, 32.0, 1e3, 1e5):
            E, al = mp.mpf(eps), mp.mpf(a)
            A, B = mp.expm1(al * E), mp.expm1(E)

            def g(p, A=A, B=B, al=al):
                return (mp.log1p(p * A) - al * mp.log1p(p * B)) / (al - 1)

            best = max(g((A - al * B) / ((al - 1) * A * B)), max(g(mp.mpf(i) / 200) for i in range(1, 200)))
            curve = accountant.event_rdp({"mechanism": "exponential", "epsilon": eps}, [a])[0]
            pure = accountant.event_rdp({"mechanism": "pure_dp", "epsilon": eps}, [a])[0]
            assert curve >= float(best) or curve == pure
            assert curve <= float(best) * (1 + 1e-9) + 1e-300


# ---------------------------------------------------------------------------------------------------
# AboveThreshold on a tiny stream
# ---------------------------------------------------------------------------------------------------


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.floats(0.2, 6.0),
    st.lists(st.floats(-3.0, 3.0), min_size=1, max_size=3),
    st.data(),
    st.sampled_from([1.0, 2.0]),
)
def test_above_threshold_stream(eps, qs, data, sens):
    q = np.array(qs) * sens
    d = np.array(data.draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=q.size, max_size=q.size))) * sens
    law, law_prime = at_law(q, 0.0, eps, sens), at_law(q + d, 0.0, eps, sens)
    pair = X.ShuffledPair.from_laws(law_prime, law)
    ev = {"mechanism": "above_threshold", "epsilon": eps}
    assert_sound([ev], Discrete(pair), 1, f"above_threshold, q = {q}, d = {d}")
    # the whole stream is ε-DP: the likelihood ratio never exceeds e^ε
    assert np.max(np.abs(np.log(law_prime / law))) <= eps * (1 + 1e-9)


# ---------------------------------------------------------------------------------------------------
# (ε, δ) releases: the worst pair, composed
# ---------------------------------------------------------------------------------------------------


def rr_product_hockey(groups: list[tuple[float, float, int]], eps_g: float, gauss_mu: float = 0.0) -> float:
    """Exact H_{e^{ε_g}}(P‖Q) for P = ⊗ P̃_i, Q = ⊗ Q̃_i, the (ε_i, δ_i) randomized-response pairs
    of KOV15 (P̃ = (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0), Q̃ its mirror), times N(μ, 1) vs N(0, 1)
    when ``gauss_mu`` > 0. Outcomes with a δ-atom have Q-mass 0 (counted in full); the others have
    privacy loss Σ ε_i(c_i − 2l_i) for l_i flips (binomial). mpmath, 40 digits."""
    mp.mp.dps = 40
    atoms_free = mp.mpf(1)
    for _e, d, c in groups:
        atoms_free *= (1 - mp.mpf(d)) ** c
    total = mp.mpf(0)
    ranges = [range(c + 1) for _, _, c in groups]

    def gauss_h(t):
        if gauss_mu == 0:
            return mp.mpf(1) - mp.e ** (t) if t < 0 else mp.mpf(0)
        m = mp.mpf(gauss_mu)
        return mp.ncdf(m / 2 - t / m) - mp.e**t * mp.ncdf(-m / 2 - t / m)

    import itertools

    for ls in itertools.product(*ranges):
        lp = mp.mpf(1)
        loss = mp.mpf(0)
        for (e, _, c), l_ in zip(groups, ls):
            E = mp.mpf(e)
            q = 1 / (1 + mp.e**E)
            lp *= mp.binomial(c, l_) * q**l_ * (1 - q) ** (c - l_)
            loss += E * (c - 2 * l_)
        if gauss_mu == 0:
            total += lp * max(mp.mpf(0), 1 - mp.e ** (mp.mpf(eps_g) - loss))
        else:
            total += lp * gauss_h(mp.mpf(eps_g) - loss)
    return float((1 - atoms_free) + atoms_free * total)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.floats(0.01, 2.0),
    st.floats(1e-9, 1e-6),
    st.integers(1, 40),
    st.one_of(st.none(), st.tuples(st.floats(0.01, 2.0), st.floats(0.0, 1e-6), st.integers(1, 20))),
    st.sampled_from([1e-5, 1e-3]),
    st.sampled_from([0.0, 0.5, 2.0]),
)
def test_approx_dp_against_the_worst_pair(eps, dlt, k, second, delta, gauss_mu):
    """accountant ε at δ for (ε, δ) releases (one or two kinds), optionally with a Gaussian release
    N(μ,1) vs N(0,1), must have exact δ ≤ δ on the product of the worst pairs; δ at ε likewise."""
    groups = [(eps, dlt, k)] + ([] if second is None else [second])
    evs = [{"mechanism": "approx_dp", "epsilon": e, "delta": d, "count": c} for e, d, c in groups]
    if gauss_mu > 0:
        evs.append({"mechanism": "gaussian", "noise_multiplier": 1.0 / gauss_mu})
    if sum(d * c for _, d, c in groups) >= delta:
        with pytest.raises(accountant.ZetaExceedsDelta):
            accountant.epsilon_guarantee(evs, delta)
        return
    g = accountant.epsilon_guarantee(evs, delta)
    exact = rr_product_hockey(groups, g.epsilon, gauss_mu)
    assert exact <= delta * (1 + REL), (g.epsilon, exact, g.detail)
    for e_at in (0.3, g.epsilon):
        d_acc = accountant.delta_guarantee(evs, e_at).delta
        assert rr_product_hockey(groups, e_at, gauss_mu) <= d_acc * (1 + REL)


def test_approx_dp_homogeneous_is_kov15():
    """One kind of (ε, δ) release alone: the answer is KOV15's optimal composition (to the search
    tolerance), never below the exact δ of the worst pair's product."""
    from accountant.baselines.composition import kov15_epsilon

    for eps, dlt, k, delta in ((0.1, 1e-8, 30, 1e-5), (0.5, 0.0, 12, 1e-6), (0.02, 1e-9, 2000, 1e-4)):
        g = accountant.epsilon_guarantee(
            [{"mechanism": "approx_dp", "epsilon": eps, "delta": dlt, "count": k}], delta
        )
        opt = kov15_epsilon(k, eps, dlt, delta)
        assert g.epsilon == pytest.approx(opt, rel=1e-6)
        if k <= 40:
            assert rr_product_hockey([(eps, dlt, k)], g.epsilon) <= delta * (1 + REL)


# ---------------------------------------------------------------------------------------------------
# Additive δ: a Gaussian whose sensitivity fails with probability ζ
# ---------------------------------------------------------------------------------------------------


def mixture_hockey(mu: float, zeta: float, far: float, eps: float, reverse: bool) -> float:
    """H_{e^ε}(P‖Q), P = (1−ζ)N(μ,1) + ζN(far,1), Q = (1−ζ)N(0,1) + ζN(−far,1) (reverse: swapped),
    by quadrature of (p − e^ε q)₊."""

    def p(y):
        return (1 - zeta) * norm.pdf(y, mu) + zeta * norm.pdf(y, far)

    def q(y):
        return (1 - zeta) * norm.pdf(y) + zeta * norm.pdf(y, -far)

    a, b = (q, p) if reverse else (p, q)
    pts = sorted({-far, 0.0, mu, far})
    edges = [-np.inf, -far - 40, *pts, far + 40, np.inf]
    tot = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        tot += integrate.quad(
            lambda y: max(0.0, a(y) - math.exp(eps) * b(y)), lo, hi, limit=400, epsabs=1e-16
        )[0]
    return tot


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.2, 3.0), st.sampled_from([1e-7, 1e-6, 1e-5]), st.sampled_from([1e-4, 1e-3]))
def test_zeta_gaussian_mixture(mu, zeta, delta):
    """With probability 1 − ζ the two means differ by μ (σ = 1), with probability ζ by 2·far:
    the event gaussian(1/μ, zeta = ζ) must cover the exact hockey-stick divergence (both ways)."""
    ev = {"mechanism": "gaussian", "noise_multiplier": 1.0 / mu, "zeta": zeta}
    g = accountant.epsilon_guarantee([ev], delta)
    for rev in (False, True):
        hs = mixture_hockey(mu, zeta, 60.0, g.epsilon, rev)
        assert hs <= delta * (1 + 1e-7), (g.epsilon, hs)
    # the failure event is really paid: without ζ the same ε would not cover it when ζ dominates
    if zeta >= delta / 10:
        plain = accountant.epsilon_guarantee([{"mechanism": "gaussian", "noise_multiplier": 1.0 / mu}], delta)
        assert g.epsilon > plain.epsilon


def test_zeta_reaching_delta_is_refused():
    ev = {"mechanism": "gaussian", "noise_multiplier": 3.0, "zeta": 1e-6, "count": 10}
    with pytest.raises(accountant.ZetaExceedsDelta, match="additive delta"):
        accountant.epsilon_guarantee([ev], 1e-5)
    assert accountant.delta_guarantee([ev], 1.0).delta >= 1e-5


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.floats(0.01, 2.0),
    st.sampled_from([0.0, 1e-9, 1e-7]),
    st.integers(1, 30),
    st.one_of(st.none(), st.tuples(st.floats(0.01, 2.0), st.just(0.0), st.integers(1, 10))),
    st.sampled_from([1e-6, 1e-3]),
    st.sampled_from([0.0, 1.0]),
)
def test_best_route_against_the_worst_pair(eps, dlt, k, second, delta, gauss_mu):
    """The best of every route (accountant.routes; the pure route wins for pure releases) against
    the product of the worst pairs: exact δ at the reported ε ≤ δ, and the reported δ at ε ≥ the
    exact one. Pure releases are ``pure_dp`` events, (ε, δ) releases ``approx_dp``."""
    groups = [(eps, dlt, k)] + ([] if second is None else [second])
    evs = [
        {"mechanism": "pure_dp", "epsilon": e, "count": c}
        if d == 0
        else {"mechanism": "approx_dp", "epsilon": e, "delta": d, "count": c}
        for e, d, c in groups
    ]
    if gauss_mu > 0:
        evs.append({"mechanism": "gaussian", "noise_multiplier": 1.0 / gauss_mu})
    if sum(d * c for _, d, c in groups) >= delta:
        return
    r = accountant.epsilon_routed(evs, delta)
    assert r.epsilon <= min(v.epsilon for v in r.routes if v.applies)
    assert rr_product_hockey(groups, r.epsilon, gauss_mu) <= delta * (1 + REL), (r.route, r.epsilon)
    for e_at in (0.3, r.epsilon, sum(e * c for e, _, c in groups)):
        d_acc = accountant.delta_routed(evs, e_at).delta
        assert rr_product_hockey(groups, e_at, gauss_mu) <= d_acc * (1 + REL) + 1e-300
