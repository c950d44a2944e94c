"""WBK19 Theorem 9 (accountant.wbk19): against a direct mpmath evaluation of the same formula,
properties, and the subsampled headline composition."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.wbk19 import wbk19_rdp


def mp_wbk19(gamma: float, inner, eps_inf: float, alpha: int) -> float:
    """1/(α−1)·log(1 + γ²C(α,2)min{4(e^{ε(2)}−1), e^{ε(2)}min{2,(e^{ε∞}−1)²}}
    + Σ_{j=3..α} γ^j C(α,j) e^{(j−1)ε(j)} min{2,(e^{ε∞}−1)^j}), at 50 digits."""
    with mp.workdps(50):
        g = mp.mpf(gamma)
        d = mp.e ** mp.mpf(eps_inf) - 1 if math.isfinite(eps_inf) else mp.inf
        e2 = mp.mpf(inner(2))
        tot = 1 + g**2 * mp.binomial(alpha, 2) * min(4 * (mp.e**e2 - 1), mp.e**e2 * min(2, d**2))
        for j in range(3, alpha + 1):
            tot += g**j * mp.binomial(alpha, j) * mp.e ** ((j - 1) * mp.mpf(inner(j))) * min(2, d**j)
        return float(mp.log(tot) / (alpha - 1))


def _inner_factory(kind: int, scale: float, eps_inf: float):
    """A few shapes of valid-looking inner curves (increasing in j, capped by ε(∞))."""
    if kind == 0:
        return lambda j: min(scale * j, eps_inf)  # Gaussian-like, linear in the order
    if kind == 1:
        return lambda j: min(scale * math.sqrt(j), eps_inf)
    return lambda j: eps_inf * (1 - math.exp(-scale * j))  # saturating


@pytest.mark.parametrize("seed", range(12))
def test_matches_mpmath_on_random_points(seed):
    rng = np.random.default_rng(seed)
    gamma = float(np.exp(rng.uniform(math.log(1e-5), math.log(0.9))))
    eps_inf = float(np.exp(rng.uniform(math.log(0.01), math.log(8.0))))
    inner = _inner_factory(seed % 3, float(np.exp(rng.uniform(math.log(1e-4), math.log(1.0)))), eps_inf)
    orders = np.unique(rng.integers(2, 120, size=6)).astype(float)
    calls = []

    def inner_int(js):
        calls.append(js.copy())
        return np.array([inner(int(j)) for j in js])

    got = wbk19_rdp(gamma, inner_int, eps_inf, orders)
    ref = np.array([mp_wbk19(gamma, inner, eps_inf, int(a)) for a in orders])
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    assert np.all(got >= ref)  # rounded up
    assert len(calls) == 1 and np.array_equal(calls[0], np.arange(2, orders.max() + 1))


def test_shapes_and_degenerate_cases():
    inner = lambda js: 0.1 * js  # noqa: E731
    o = np.array([[2.0, 3.0], [10.0, 50.0]])
    assert wbk19_rdp(0.1, inner, 1.0, o).shape == (2, 2)
    assert np.all(wbk19_rdp(0.0, inner, 1.0, o) == 0.0)
    assert np.all(wbk19_rdp(0.1, inner, 0.0, o) == 0.0)
    # ε(∞) = ∞: every min{2, (e^{ε∞}−1)^j} is 2
    got = wbk19_rdp(0.01, inner, math.inf, np.array([2.0, 7.0]))
    ref = [mp_wbk19(0.01, lambda j: 0.1 * j, math.inf, a) for a in (2, 7)]
    np.testing.assert_allclose(got, ref, rtol=1e-10)


@settings(max_examples=30, deadline=None)
@given(
    g1=st.floats(1e-5, 0.5),
    factor=st.floats(1.0, 2.0),
    eps_inf=st.floats(0.01, 6.0),
    scale=st.floats(1e-3, 0.5),
    alpha=st.integers(2, 300),
)
def test_monotone_in_gamma(g1, factor, eps_inf, scale, alpha):
    inner = lambda js: np.minimum(scale * js, eps_inf)  # noqa: E731
    a = np.array([float(alpha)])
    lo = wbk19_rdp(g1, inner, eps_inf, a)[0]
    hi = wbk19_rdp(min(1.0, g1 * factor), inner, eps_inf, a)[0]
    assert np.isfinite(lo) and lo >= 0
    assert hi >= lo * (1 - 1e-12)


def test_headline_subsampled_composition():
    """Inner curve: the k-user clone curve (k = 1,000, ε0 = 2), γ = k/n = 1e-3, ε(∞) = ε0;
    T = 1e5 rounds at δ = 1e-8 gives ε ≈ 0.53."""
    from accountant.clones import clone_rdp

    ints = np.arange(2.0, 257.0)
    curve = wbk19_rdp(1e-3, lambda js: clone_rdp(1000, 2.0, js), 2.0, ints)
    delta = 1e-8
    eps = np.min(
        1e5 * curve + (math.log(1 / delta) + (ints - 1) * np.log1p(-1 / ints) - np.log(ints)) / (ints - 1)
    )
    assert eps == pytest.approx(0.53, rel=0.015)


@pytest.mark.parametrize("gamma,eps_inf,alpha", [(1e-3, 2.0, 3000), (1e-4, 0.5, 700), (2e-3, 4.0, 1500)])
def test_truncated_sum_at_large_orders_matches_mpmath(gamma, eps_inf, alpha):
    """The j-sum stops at J = ⌈2eλ⌉ + 60 (λ = γ·α·e^{ε∞}) and adds a geometric bound of the rest:
    still the full 50-digit sum to 1e-10, and never below it."""
    inner = _inner_factory(2, 0.01, eps_inf)
    got = wbk19_rdp(
        gamma, lambda js: np.array([inner(int(j)) for j in js]), eps_inf, np.array([float(alpha)])
    )[0]
    ref = mp_wbk19(gamma, inner, eps_inf, alpha)
    assert ref <= got <= ref * (1 + 1e-10)
