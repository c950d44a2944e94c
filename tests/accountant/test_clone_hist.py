"""The merged-histogram engine of the clone bound (accountant.clones._histogram) and the routing
in accountant.clones between it and the adaptive engine.

References are independent of the module: the exact untruncated float summation of
tests/helpers/clone_reference.py (checked against mpmath in test_clones.py), direct per-cell sums
for the histogram step, and the adaptive engine (certified separately) at large n.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accountant import clones as C
from accountant.clones import _histogram as H
from accountant.clones import _routing as Rt
from accountant.orders import DEFAULT_ORDERS

from ..helpers.clone_reference import exact_clone, ref_log_phi, rr_lower

ORDERS = np.asarray(DEFAULT_ORDERS, dtype=float)


def _hist(n: int, eps0: float, orders: np.ndarray) -> np.ndarray:
    return C.clone_rdp(n, eps0, orders, engine="histogram")


def _random_points(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(np.exp(rng.uniform(math.log(20), math.log(3000))))
        eps0 = float(np.exp(rng.uniform(math.log(0.03), math.log(6.0))))
        yield n, round(eps0, 6)


@pytest.mark.parametrize("n,eps0", list(_random_points(14, seed=20261126)))
def test_hist_engine_safe_and_tight_against_exact_sum(n, eps0):
    """Every 4th order of the default grid (1.1 … 10⁴): never below the exact untruncated sum;
    within 0.3% of it up to α = 256 and 1.5% above (measured: ≲ 0.1% / ≲ 1%)."""
    sel = ORDERS[::4]
    got = _hist(n, eps0, ORDERS)[::4]
    ref = exact_clone(n, eps0, sel)
    assert np.all(got >= ref * (1 - 1e-12))
    low = sel <= 256
    assert np.all(got[low] <= ref[low] * 1.003)
    assert np.all(got <= ref * 1.015)


@pytest.mark.parametrize("n,eps0", [(10**5, 0.4), (10**5, 1.5), (10**6, 0.5), (10**6, 2.0)])
def test_hist_engine_agrees_with_adaptive_engine_at_large_n(n, eps0):
    """Both engines are certified upper bounds of the same quantity; on the default grid they
    agree to a few tenths of a percent up to α = 256 (each has its own small slack)."""
    hist = _hist(n, eps0, ORDERS)
    adaptive = C.clone_rdp(n, eps0, ORDERS, engine="adaptive")
    low = ORDERS <= 256
    np.testing.assert_allclose(hist[low], adaptive[low], rtol=5e-3)
    assert np.all(hist <= adaptive * 1.03)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 3000), eps0=st.floats(0.01, 6.0), k=st.integers(0, ORDERS.size - 1))
def test_hist_engine_never_below_exact_rr_lower_bound(n, eps0, k):
    got = _hist(n, eps0, ORDERS)[k]
    assert got >= rr_lower(n, eps0, float(ORDERS[k])) * (1 - 1e-12)


# ----------------------------------------------------------------------------------------------
# the histogram step on its own: a bound on Σ e^{lw}·ψ_α(g) over arbitrary cells
# ----------------------------------------------------------------------------------------------


def _direct(lw, g, alphas):
    """log Σ_cells e^{lw}·ψ_α(g), ψ_α(g) = e^{αg} − 1 − α(e^g − 1), cell by cell."""
    from scipy.special import logsumexp

    vals = lw[None, :] + np.where(g[None, :] == 0.0, -np.inf, ref_log_phi(alphas[:, None], g[None, :]))
    return logsumexp(vals, axis=1)


@pytest.mark.parametrize("seed", range(6))
def test_histogram_bound_is_valid_and_tight_on_random_cells(seed):
    rng = np.random.default_rng(seed)
    m = 20_000
    eps0 = float(rng.uniform(0.1, 4.0))
    g = rng.uniform(-eps0, eps0, m) * rng.uniform(0, 1, m) ** 3  # many cells near 0
    g = g[g != 0.0]
    lw = rng.normal(-8.0, 3.0, g.size)
    seg = np.sort(rng.integers(0, 50, g.size))
    alphas = np.array([1.05, 1.5, 2.0, 5.0, 30.0, 300.0, 5000.0])
    up, _ = H._hist_sum(H._Bins(lw, g, seg, np.zeros(50)), alphas)
    ref = _direct(lw, g, alphas)
    assert np.all(up >= ref - 1e-12)
    # chord/Jensen slack: ≲ (Δg/g)²/4 near 0, ≲ (αΔg)²/8 (relative) in the exponential part
    assert np.all(up - ref <= np.maximum(2e-3, 0.15 * alphas * H._DG) + 1e-9)


def test_histogram_bound_exact_for_cells_on_bin_edges():
    """Values exactly on bin edges land in the bin they bound (no extrapolated chord), and a bin
    holding one value of g is evaluated exactly."""
    ed, _, _ = H._edges(1e-4, 0.5)
    g = np.concatenate([ed[1:], -ed[1:]])
    lw = np.zeros(g.size)
    alphas = np.array([1.5, 3.0, 40.0])
    up, _ = H._hist_sum(H._Bins(lw, g, np.zeros(g.size, dtype=np.int64), np.zeros(1)), alphas)
    np.testing.assert_allclose(up, _direct(lw, g, alphas), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# routing and the a-posteriori slack check
# ----------------------------------------------------------------------------------------------


def test_routing_over_the_cell_budget_uses_the_adaptive_engine(monkeypatch):
    n, eps0 = 10**5, 1.0
    adaptive = C.clone_rdp(n, eps0, ORDERS, engine="adaptive")
    monkeypatch.setattr(Rt, "HIST_CELL_BUDGET", 0)
    C.clear_cache()
    assert C.route(n, eps0, ORDERS) == "adaptive"
    np.testing.assert_array_equal(C.clone_rdp(n, eps0, ORDERS), adaptive)


def test_routing_within_the_budget_uses_the_histogram_engine():
    n, eps0 = 10**4, 1.0
    plan = H.HistPlan(Rt.Ctx(n, eps0), Rt.HIST_DESIGN)
    assert plan.cells <= Rt.HIST_CELL_BUDGET
    assert C.route(n, eps0, ORDERS) == "histogram"
    res, suspect = H.Prepared(plan).evaluate(ORDERS)
    assert not suspect.any()
    np.testing.assert_array_equal(Rt.log_fm1(n, eps0, ORDERS), res)


def test_a_value_depends_on_n_eps0_and_the_order_only():
    """Whatever else is asked for or was computed before: the histogram is always designed for
    the same orders, so the value at an order is the same in every request."""
    n, eps0 = 30_000, 1.1
    C.clear_cache()
    alone = C.clone_rdp(n, eps0, np.array([3.0, 7.5, 12.0, 40.0, 90.0, 200.0, 600.0, 2000.0, 5000.0]))
    grid = C.clone_rdp(n, eps0, ORDERS)
    C.clear_cache()
    again = C.clone_rdp(n, eps0, np.array([7.5, 600.0, 3.0, 12.0, 40.0, 90.0, 200.0, 2000.0, 5000.0, 44.0]))
    np.testing.assert_array_equal(alone[[1, 6]], again[[0, 1]])
    np.testing.assert_array_equal(grid[ORDERS == 44.0], again[-1:])


def test_prepared_histogram_is_reused_for_other_orders_in_its_range():
    """A later call for other orders of the same (n, ε0) inside the prepared order range reuses
    the histogram and gives the same values as evaluating them on it directly."""
    n, eps0 = 20_000, 0.8
    C.clone_rdp(n, eps0, ORDERS)
    prep = Rt.prepared(n, eps0)
    fine = np.linspace(20.0, 25.0, 24)
    res, suspect = prep.evaluate(fine)
    assert not suspect.any()
    np.testing.assert_array_equal(Rt.log_fm1(n, eps0, fine), res)
    assert Rt.prepared(n, eps0) is prep
    # D_α is non-decreasing in α: the new orders sit between the grid values at 20 and 25
    grid = C.clone_rdp(n, eps0, ORDERS)
    lo, hi = grid[ORDERS == 20.0][0], grid[ORDERS == 25.0][0]
    eps = C.clone_rdp(n, eps0, fine)
    assert np.all(eps >= lo * (1 - 2e-3)) and np.all(eps <= hi * (1 + 2e-3))
    assert np.all(np.diff(eps) >= -1e-12 * eps[1:])


def test_suspect_orders_are_reevaluated_and_the_smaller_bound_kept(monkeypatch):
    """With the check made impossible to pass, every order is re-evaluated by the adaptive
    engine and the minimum of the two valid bounds is returned."""
    n, eps0 = 5000, 1.3
    C.clear_cache()
    hist = C.clone_rdp(n, eps0, ORDERS, engine="histogram")
    adaptive = C.clone_rdp(n, eps0, ORDERS, engine="adaptive")
    monkeypatch.setattr(H, "_CHECK", -1.0)
    got = C.clone_rdp(n, eps0, ORDERS)
    np.testing.assert_array_equal(got, np.minimum(hist, adaptive))


def test_few_orders_at_small_n_stay_exact():
    """Calls with ≤ 8 orders at small n keep the exact evaluation (equal to the untruncated sum
    to 1e-9), whatever engine the default grid uses."""
    a = np.array([1.7, 2.0, 33.0])
    np.testing.assert_allclose(C.clone_rdp(800, 0.9, a), exact_clone(800, 0.9, a), rtol=1e-9)


@pytest.mark.parametrize("n,eps0", [(60, 1.0), (100, 0.5), (150, 2.0)])
def test_cheap_problems_stay_exact_on_the_default_grid(n, eps0):
    """Where the exact evaluation is cheap (≤ 6e5 cell-orders) the default grid is summed
    exactly: equal to the untruncated sum to 1e-9 at every order up to 200."""
    assert C.route(n, eps0, ORDERS) == "exact"
    sel = ORDERS <= 200
    np.testing.assert_allclose(
        C.clone_rdp(n, eps0, ORDERS)[sel], exact_clone(n, eps0, ORDERS[sel]), rtol=1e-9
    )


@pytest.mark.parametrize("eps0", [1e-9, 40.0])
def test_extreme_eps0_falls_back_to_the_adaptive_engine(eps0):
    """Outside ε0 ∈ [1e-6, 30] the histogram engine's design estimates are not used."""
    got = C.clone_rdp(10**4, eps0, ORDERS)
    assert np.all(np.isfinite(got)) and np.all(got >= 0)
    assert np.all(got <= C.clone_cap(eps0, ORDERS) * (1 + 1e-12))
