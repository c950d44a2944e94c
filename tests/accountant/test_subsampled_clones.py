"""The subsampled clone pair (bounds.md §9): its certified Rényi and hockey-stick divergences
against brute-force sums over every cell written from the definitions
(tests/helpers/subsampled_clone_reference.py: mpmath at 40 digits for small k, float64 for
larger k), hypothesis properties, γ = 1 against the clone bound, and the wiring as a named bound
and in the default."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import accountant as A
from accountant import subsampled_clones as SC
from accountant.clones import clone_rdp
from accountant.subsampled_clone_delta import subsampled_clone_pair

from ..helpers.subsampled_clone_reference import delta_mp, renyi_float, renyi_mp

REAL_AND_INTEGER = [1.01, 1.3, 2.0, 2.5, 3.0, 4.75, 8.0, 17.3, 64.0, 300.0]
SMALL = [
    (20, 8, 1.0),
    (50, 10, 2.0),
    (100, 30, 0.5),
    (30, 30, 1.5),
    (1000, 5, 3.0),
    (40, 1, 1.0),
    (7, 3, 6.0),
]


@pytest.mark.parametrize("n,k,eps0", SMALL)
def test_rdp_against_mpmath(n, k, eps0):
    got = SC.subsampled_clone_pair_rdp(n, k, eps0, REAL_AND_INTEGER)
    for a, g in zip(REAL_AND_INTEGER, got):
        exact = renyi_mp(n, k, eps0, a)
        assert g >= exact, (a, g, exact)
        assert g <= exact * (1 + 1e-7) + 1e-15, (a, g, exact)


@pytest.mark.parametrize("n,k,eps0", SMALL)
def test_delta_against_mpmath(n, k, eps0):
    pair = subsampled_clone_pair(n, k, eps0)
    eps = np.array([-1.0, -0.2, 0.0, 0.003, 0.05, 0.3, 1.0, pair.max_log_ratio * 0.999, pair.max_log_ratio])
    got = pair.delta(eps)
    for e, g in zip(eps, got):
        exact = delta_mp(n, k, eps0, float(e))
        assert g >= exact, (e, g, exact)
        assert g <= exact * (1 + 1e-5) + 1e-10, (e, g, exact)  # CDF-cancellation slack
    assert pair.delta(float(eps[3])) == pytest.approx(got[3], rel=1e-15)
    assert pair.delta(pair.max_log_ratio * 1.0001) == 0.0


@pytest.mark.parametrize(
    "n,k,eps0", [(2000, 300, 2.0), (10**5, 2000, 1.0), (3000, 1500, 0.3), (10**6, 800, 4.0)]
)
def test_rdp_against_every_cell_in_float(n, k, eps0):
    """Larger k: the bins, windows and tail bounds against the plain sum over all (k+1)(k+2)/2 cells."""
    orders = [1.1, 2.0, 3.5, 10.0, 42.0, 200.0, 1500.0]
    got = SC.subsampled_clone_pair_rdp(n, k, eps0, orders)
    ref = renyi_float(n, k, eps0, orders)
    assert np.all(got >= ref * (1 - 1e-8)), (got, ref)  # the float reference is good to ~1e-9
    assert np.all(got <= ref * (1 + 2e-3)), got / ref - 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 12),
    st.integers(0, 400),
    st.floats(0.05, 6.0),
    st.floats(1.0001, 200.0),
)
def test_never_below_the_exact_sum(k, extra, eps0, alpha):
    n = k + extra
    got = SC.subsampled_clone_pair_rdp(n, k, eps0, [alpha])[0]
    assert got >= renyi_mp(n, k, eps0, alpha)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 12), st.integers(0, 400), st.floats(0.05, 6.0), st.floats(-2.0, 3.0))
def test_delta_never_below_the_exact_sum(k, extra, eps0, eps):
    n = k + extra
    assert subsampled_clone_pair(n, k, eps0).delta(eps) >= delta_mp(n, k, eps0, eps)


@pytest.mark.parametrize(
    "k,eps0,rel", [(1000, 1.0, 1e-6), (300, 3.0, 1e-6), (20, 2.0, 1e-6), (5000, 0.5, 2e-3)]
)
def test_gamma_one_is_the_clone_bound(k, eps0, rel):
    """γ = 1: the pair is the clone pair of k users. Bins of one m each while ρ·m < 2 (here
    kp ≤ 500): equal to ~1e-7; wider bins (k = 5000) cost at most their relative width ρ."""
    orders = np.array([1.5, 2.0, 3.0, 5.0, 10.0, 20.0])
    ours = SC.subsampled_clone_pair_rdp(k, k, eps0, orders)
    ref = clone_rdp(k, eps0, orders)
    assert np.all(ours >= ref * (1 - 1e-9))
    assert ours == pytest.approx(ref, rel=rel)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 5000), st.integers(0, 10**6), st.floats(0.01, 8.0))
def test_curve_shape_and_cap(k, extra, eps0):
    """Non-decreasing in α, (α−1)·ε(α) convex on the grid up to the evaluation's slack, never above
    the pure-DP cap once capped, and the capped curve never above the pair's."""
    n = k + extra
    o = A.DEFAULT_ORDERS
    pair = SC.subsampled_clone_pair_rdp(n, k, eps0, o)
    fin = np.isfinite(pair)
    # the certificate's absolute slack is divided by α − 1, so where the pair's divergence is
    # ~1e-15 (k = 1 of 3·10⁵ users, ε0 = 0.01) the bound may dip by about 1e-12 as α grows
    assert np.all(np.diff(pair[fin]) >= -1e-9 * pair[fin][1:] - 1e-11)
    y = (o[fin] - 1) * pair[fin]
    x = o[fin]
    chord = y[:-2] + (y[2:] - y[:-2]) * (x[1:-1] - x[:-2]) / (x[2:] - x[:-2])
    assert np.all(y[1:-1] <= chord * (1 + 1e-6) + 1e-12)
    capped = SC.subsampled_clone_rdp(n, k, eps0, o)
    cap = A.subsampled_shuffle_rdp(n, k, eps0, o, bound="cap")
    assert np.all(capped[fin] <= np.minimum(pair[fin], cap[fin]))


def test_zero_epsilon0_and_validation():
    assert np.all(SC.subsampled_clone_rdp(100, 10, 0.0, [2.0, 5.0]) == 0.0)
    assert subsampled_clone_pair(100, 10, 0.0).delta(0.1) == 0.0
    with pytest.raises(A.InvalidParameter):
        SC.subsampled_clone_rdp(10, 11, 1.0, [2.0])


def test_budget_gives_inf_not_a_wrong_value(monkeypatch):
    monkeypatch.setattr(SC, "_BUDGET", 1.0)
    assert np.all(np.isinf(SC.subsampled_clone_rdp(10**6, 1000, 2.0, [2.0, 10.0])))
    with A.bounds._tight():
        detail = A.bounds.subsampled_upper_detail(10**6 + 1, 1000, 2.0, A.DEFAULT_ORDERS)
    assert "subsampled_clones" not in detail.sources
    assert any("subsampled clone bound" in s for s in detail.notes)


def test_named_bound_and_default():
    o = A.DEFAULT_ORDERS
    named = A.subsampled_shuffle_rdp(10**6, 1000, 2.0, o, bound="subsampled_clones")
    assert np.all(np.isfinite(named))
    detail = A.bounds.subsampled_upper_detail(10**6, 1000, 2.0, o)
    assert np.all(detail.rdp <= named)
    assert "subsampled_clones" in detail.sources
    cont = A.subsampled_shuffle_rdp(10**6, 1000, 2.0, o, bound="subsampled_clones", output="continuous")
    assert np.array_equal(cont, named)
    with A.bounds.gir23_only():
        thesis = A.bounds.subsampled_upper_detail(10**6, 1000, 2.0, o)
    assert "subsampled_clones" not in thesis.sources


def test_nested_round_of_shuffles_gains_the_pair():
    """A nested subsampled round of shuffles uses the subsampled_shuffle default at the report's
    total ε0, which now includes the pair."""
    ev = {
        "mechanism": "subsampled",
        "n": 10**6,
        "k": 1000,
        "count": 10**5,
        "inner": [{"mechanism": "shuffle", "epsilon0": 1.0, "count": 2}],
    }
    flat = {"mechanism": "subsampled_shuffle", "n": 10**6, "k": 1000, "epsilon0": 2.0, "count": 10**5}
    assert A.epsilon([ev], 1e-8)[0] <= A.epsilon([flat], 1e-8)[0] * (1 + 1e-9)
    assert A.epsilon([ev], 1e-8)[0] <= 0.213


def test_timings_stay_bounded():
    """The headline's curve in well under a second even when nothing is cached (loose limit: CI
    machines are slow; bench numbers are in the report)."""
    import time

    SC._bins.cache_clear()
    t = time.perf_counter()
    SC.subsampled_clone_rdp(10**6, 1000, 2.0, A.DEFAULT_ORDERS)
    assert time.perf_counter() - t < 1.0
    t = time.perf_counter()
    assert np.all(np.isfinite(SC.subsampled_clone_rdp(10**7, 10**5, 2.0, A.DEFAULT_ORDERS)))
    assert time.perf_counter() - t < 5.0


def test_max_log_ratio():
    pair = subsampled_clone_pair(50, 10, 2.0)
    g = 10 / 50
    p, q = math.exp(-2.0), 1 / (1 + math.exp(-2.0))
    # at a = m = k: P_k/B = 2q/p, Q_k/B = 2(1−q)/p
    want = math.log((1 - g + g * 2 * q / p) / (1 - g + g * 2 * (1 - q) / p))
    assert pair.max_log_ratio == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("n,k,eps0", [(40, 1, 1.0), (100, 10, 3.0), (2000, 300, 2.0)])
def test_orders_past_the_cap_limit_get_the_cap(n, k, eps0):
    """Once the pair exceeds the cap's limit ε′ (large orders, where the pair's D_α approaches its
    largest log-ratio, above ε′), the capped bound stops evaluating it and reports the cap — what the
    order-wise minimum would have been."""
    o = A.DEFAULT_ORDERS
    capped = SC.subsampled_clone_rdp(n, k, eps0, o)
    pair = SC.subsampled_clone_pair_rdp(n, k, eps0, o)
    cap = A.subsampled_shuffle_rdp(n, k, eps0, o, bound="cap")
    assert np.all(np.isfinite(capped)) and np.all(capped <= cap)
    assert np.allclose(capped, np.minimum(pair, cap), rtol=1e-12, atol=0)
    eps_prime = math.log1p(k / n * math.expm1(eps0))
    assert np.any(pair > eps_prime)


def test_a_huge_sample_is_refused_before_any_allocation():
    """Found by the OpenAPI fuzzer (a server at 15 GB): k = n = 10¹² made the pair's design allocate
    arrays of ~10⁸ floats per call. It is refused up front (BoundNotApplicable), so the default
    curve falls back to the other bounds and the PLD route is left out, in bounded memory."""
    import tracemalloc

    from accountant.errors import BoundNotApplicable

    with pytest.raises(BoundNotApplicable, match="at most"):
        SC.subsampled_clone_pair_rdp(10**12, 10**12, 1.0, [2.0])
    tracemalloc.start()
    try:
        for ev in (
            {"mechanism": "subsampled_shuffle", "n": 10**12, "k": 10**12, "epsilon0": 1.0},
            {"mechanism": "shuffle_rr", "n": 10**12, "epsilon0": 1.0},
        ):
            eps, _ = A.epsilon([ev], 1e-6)
            assert 0 < eps < 1.0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 300 * 2**20, f"peak {peak / 2**20:.0f} MiB"
