"""The merged-histogram engine of the clone bound (accountant.clones.histogram) and the routing
in accountant.clones between it and the adaptive engine.

References are independent of the module: the exact untruncated float summation of
accountant.clones.reference (checked against mpmath in test_clones.py), direct per-cell sums
for the histogram step, and the adaptive engine (certified separately) at large n.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accountant import clones as C
from accountant.clones import compiled
from accountant.clones import routing as Rt
from accountant.clones.histogram import bins as HB
from accountant.clones.histogram import engine as H
from accountant.clones.reference import exact_clone, ref_log_phi
from accountant.clones.types import Ctx
from accountant.orders import DEFAULT_ORDERS

from ..helpers.clone_reference import rr_lower

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
    up, _ = HB.hist_sum(HB.Bins(lw, g, seg, np.zeros(50)), alphas)
    ref = _direct(lw, g, alphas)
    assert np.all(up >= ref - 1e-12)
    # chord/Jensen slack: ≲ (Δg/g)²/4 near 0, ≲ (αΔg)²/8 (relative) in the exponential part
    assert np.all(up - ref <= np.maximum(2e-3, 0.15 * alphas * HB.DG) + 1e-9)


def test_histogram_bound_exact_for_cells_on_bin_edges():
    """Values exactly on bin edges land in the bin they bound (no extrapolated chord), and a bin
    holding one value of g is evaluated exactly."""
    ed, _, _ = HB.bin_edges(1e-4, 0.5)
    g = np.concatenate([ed[1:], -ed[1:]])
    lw = np.zeros(g.size)
    alphas = np.array([1.5, 3.0, 40.0])
    up, _ = HB.hist_sum(HB.Bins(lw, g, np.zeros(g.size, dtype=np.int64), np.zeros(1)), alphas)
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
    plan = H.HistPlan(Ctx(n, eps0), Rt.HIST_DESIGN)
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
    monkeypatch.setattr(H, "CHECK", -1.0)
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


# ----------------------------------------------------------------------------------------------
# merged bins per order, the compiled kernels, and the split upper window tail
# ----------------------------------------------------------------------------------------------


def _random_cells(seed: int):
    rng = np.random.default_rng(seed)
    eps0 = float(rng.uniform(0.1, 4.0))
    g = rng.uniform(-eps0, eps0, 20_000) * rng.uniform(0, 1, 20_000) ** 3
    g = g[g != 0.0]
    lw = rng.normal(-8.0, 3.0, g.size)
    seg = np.sort(rng.integers(0, 50, g.size))
    return lw, g, seg


@pytest.mark.parametrize("seed", range(6))
def test_merged_bins_never_below_the_direct_sum(seed):
    """Every merge level, and the per-order choice of levels, stays a bound on the cell-by-cell
    sum (a merged bin is the union of its bins' cells); the per-order choice keeps the slack
    within the same limits as the unmerged histogram."""
    lw, g, seg = _random_cells(seed)
    alphas = np.array([1.05, 1.5, 2.0, 5.0, 30.0, 300.0, 5000.0])
    bins = HB.Bins(lw, g, seg, np.zeros(50))
    ref = _direct(lw, g, alphas)
    for level in range(0, 9):
        up, _ = HB.hist_sum(bins.coarse(level), alphas)
        assert np.all(up >= ref - 1e-12)
    up, _ = HB.hist_sum_merged(bins, alphas)
    assert np.all(up >= ref - 1e-12)
    assert np.all(up - ref <= np.maximum(2e-3, 0.15 * alphas * HB.DG) + 1e-9)


def test_merged_bins_keep_mass_mean_and_extremes():
    lw, g, seg = _random_cells(11)
    bins = HB.Bins(lw, g, seg, np.zeros(50))
    for level in (1, 3, 6):
        cb = bins.coarse(level)
        assert cb.LM.size < bins.LM.size
        from scipy.special import logsumexp

        np.testing.assert_allclose(logsumexp(cb.LM), logsumexp(bins.LM), rtol=1e-13)
        for sign in (True, False):  # positive and negative g separately
            a, b = bins.hi > 0 if sign else bins.hi <= 0, cb.hi > 0 if sign else cb.hi <= 0
            assert bins.lo[a].min() == cb.lo[b].min() and bins.hi[a].max() == cb.hi[b].max()
            w1, w2 = np.exp(bins.LM[a]), np.exp(cb.LM[b])
            np.testing.assert_allclose((w1 * bins.mu[a]).sum(), (w2 * cb.mu[b]).sum(), rtol=1e-10)
        assert np.all((cb.mu >= cb.lo) & (cb.mu <= cb.hi))


try:
    import numba  # noqa: F401

    _HAS_NUMBA = True
except ImportError:
    _HAS_NUMBA = False
_fast = pytest.mark.skipif(not _HAS_NUMBA, reason="numba not installed (the numpy path is used)")


@_fast
@pytest.mark.usefixtures("kernels_on")
@pytest.mark.parametrize("n,eps0", [(1000, 2.0), (5000, 0.3), (10**5, 2.0), (10**7, 1.0), (300, 40.0)])
def test_compiled_histogram_equals_numpy_histogram(n, eps0):
    """The compiled cell → bin kernel gives the numpy path's histogram: the same bins (up to
    cells on a bin edge), the same statistics to rounding, hence the same bound (checked with
    the pure-numpy path forced)."""
    from accountant.clones import compiled as F

    ctx = Ctx(n, eps0)
    plan = H.HistPlan(ctx, Rt.HIST_DESIGN)
    fast = H.Prepared(plan)
    F.use(False)  # the pure-numpy path
    slow = H.Prepared(plan)
    if slow.bins is None:
        assert fast.bins is None
        return
    # the same bins up to cells lying on a bin edge whose g differs by an ulp between numpy's
    # log1p and the kernel's artanh series (either side is a valid histogram)
    from scipy.special import logsumexp

    same = np.isin(fast.bins.keys, slow.bins.keys)
    assert same.mean() > 0.995 and np.isin(slow.bins.keys, fast.bins.keys).mean() > 0.995
    np.testing.assert_allclose(logsumexp(fast.bins.LM), logsumexp(slow.bins.LM), rtol=0, atol=1e-12)
    k_f = fast.bins.keys[same]
    pos = np.searchsorted(np.sort(slow.bins.keys), k_f)
    srt = np.argsort(slow.bins.keys)
    j = srt[pos]
    close = np.abs(fast.bins.LM[same] - slow.bins.LM[j]) <= 1e-12 * np.maximum(1.0, np.abs(slow.bins.LM[j]))
    assert close.mean() > 0.99
    assert fast.bins.lo.min() == pytest.approx(slow.bins.lo.min(), rel=1e-14)
    assert fast.bins.hi.max() == pytest.approx(slow.bins.hi.max(), rel=1e-14)
    v_slow, _ = slow.evaluate(ORDERS)
    assert F.use(True)
    v_fast, _ = fast.evaluate(ORDERS)
    np.testing.assert_allclose(v_fast, v_slow, rtol=1e-13, atol=1e-11)


@_fast
@pytest.mark.usefixtures("kernels_on")
@pytest.mark.parametrize("seed", range(4))
def test_compiled_hist_sum_equals_numpy(seed):
    from accountant.clones import compiled as F

    lw, g, seg = _random_cells(seed)
    bins = HB.Bins(lw, g, seg, np.random.default_rng(seed).normal(0, 1, 50))
    alphas = np.array([1.001, 1.05, 1.5, 2.0, 2.5, 5.0, 30.0, 300.0, 5000.0])
    for level in (0, 2):
        b = bins.coarse(level)
        up, low = F.hist_sum(b, alphas, HB.PRUNE)
        up_np, low_np = HB.hist_sum(b, alphas)
        np.testing.assert_allclose(up, up_np, rtol=0, atol=1e-12)
        np.testing.assert_allclose(low, low_np, rtol=0, atol=1e-12)
        assert np.all(up >= _direct(lw, g, alphas) - 1e-12)


@_fast
@pytest.mark.usefixtures("kernels_on")
@pytest.mark.parametrize("seed,shift", [(0, -800.0), (1, 800.0), (2, None), (3, None)])
def test_compiled_hist_sum_with_extreme_weights_equals_numpy(seed, shift):
    """Cell weights spread over thousands of nats and right-end weights e^{±700} away from the
    left ones: the compiled sum keeps in linear space only the terms that are normal numbers
    relative to the largest pruning bound (the others, and large values, in log space); it gives
    the numpy path's values to rounding, never below the cell-by-cell sum."""
    from accountant.clones import compiled as F

    rng = np.random.default_rng(1000 + seed)
    eps0 = float(rng.uniform(0.05, 6.0))
    g = rng.uniform(-eps0, eps0, 20_000) * rng.uniform(0, 1, 20_000) ** 3
    g = g[g != 0.0]
    lw = rng.normal(-300.0, 400.0, g.size)
    seg = np.sort(rng.integers(0, 50, g.size))
    shifts = rng.choice([-800.0, -3.0, 0.0, 2.0, 800.0], 50) if shift is None else np.full(50, shift)
    bins = HB.Bins(lw, g, seg, shifts)
    alphas = np.array([1.001, 1.05, 1.5, 2.0, 2.5, 5.0, 30.0, 300.0, 5000.0, 10000.0])
    ref = _direct(lw, g, alphas)
    for level in (0, 3):
        b = bins.coarse(level)
        up, low = F.hist_sum(b, alphas, HB.PRUNE)
        up_np, low_np = HB.hist_sum(b, alphas)
        np.testing.assert_allclose(up, up_np, rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(low, low_np, rtol=1e-13, atol=1e-12)
        assert np.all(up >= ref - 1e-12 * np.maximum(1.0, np.abs(ref)))


@_fast
@settings(max_examples=200, deadline=None)
@given(
    a=st.one_of(st.floats(1.0 + 1e-9, 3.0), st.floats(3.0, 1e4), st.floats(-50.0, -1e-6)),
    x=st.one_of(st.floats(-1e-3, 1e-3), st.floats(-8.0, 8.0)).filter(lambda v: v != 0.0),
)
def test_compiled_log_phi_matches_mpmath(a, x):
    """The scalar log φ of the compiled kernel (every branch of accountant._numerics.log_phi)
    against a high-precision evaluation."""
    import mpmath as mp

    from accountant.clones.compiled.histogram_sum import log_phi as lp

    # (the difference cancels to ~x² relative: enough digits for that, plus 40)
    with mp.workdps(40 + int(2 * max(0.0, -math.log10(abs(x))))):
        ma, mx = mp.mpf(a), mp.mpf(x)
        ref = mp.e ** (ma * mx) - 1 - ma * (mp.e**mx - 1)
        if ref <= 0:
            return
        ref = float(mp.log(ref))
    assert lp(a, x) == pytest.approx(ref, rel=0, abs=1e-12 * max(1.0, abs(ref)))


def _direct_upper_tail(c: int, x_from: int, alpha: float, ctx) -> float:
    """log Σ_{x ≥ x_from} Q_c(x)·R_c(x)^α, cell by cell (scipy pmf, float)."""
    from scipy.special import logsumexp
    from scipy.stats import binom

    x = np.arange(x_from, c + 2)
    q = math.exp(-ctx.eps0)
    lq = np.logaddexp(binom.logpmf(x, c, 0.5), math.log(q) + binom.logpmf(x - 1, c, 0.5)) - math.log1p(q)
    t = ctx.s / (c + 1.0)
    u = 2.0 * x - c - 1.0
    return float(logsumexp(lq + alpha * (np.log1p(t * u) - np.log1p(-t * u))))


@pytest.mark.parametrize("n,eps0", [(10**8, 7.5), (10**7, 5.0), (10**6, 5.0), (10**5, 3.0)])
def test_split_upper_tail_never_below_the_cells_it_replaces(n, eps0):
    """Where the tilted sequence is not concave up to the edge (large ε0), the window stops at
    x_hi anyway and the tail is bounded in two pieces (concave up to y_e, crude beyond): never
    below the direct sum of the cells above the window, and negligible next to the window."""
    from accountant.clones.grid.windows import tails, windows

    ctx = Ctx(n, eps0)
    c = np.array([int(ctx.c0)], dtype=np.int64)
    for a_hi in (50.0, 300.0):
        x_l, x_h, y_e = windows(c, 1.5, a_hi, ctx, False)
        assert x_h[0] < c[0] + 1
        alphas = np.array([2.0, a_hi / 2, a_hi])
        _, t_hi, _ = tails(c, x_l, x_h, alphas, ctx, y_e)
        for k, a in enumerate(alphas):
            ref = _direct_upper_tail(int(c[0]), int(x_h[0]) + 1, float(a), ctx)
            assert t_hi[0, k] >= ref - 1e-9
            whole = _direct_upper_tail(int(c[0]), int(x_l[0]), float(a), ctx)
            assert t_hi[0, k] <= whole - 30.0


@settings(max_examples=25, deadline=None)
@given(
    c=st.integers(50, 20_000),
    eps0=st.floats(2.0, 10.0),
    a=st.floats(2.0, 2000.0),
    frac=st.floats(0.05, 0.45),
    cut=st.floats(0.55, 0.999),
)
def test_concavity_check_on_a_partial_range_is_sound(c, eps0, a, frac, cut):
    """Whenever concave_above(…, y_e) says the tilted sequence z_y = log b(y) + a·g(u(y+1)) is
    concave on [x_h, y_e], its second differences there are ≤ 0 (direct evaluation)."""
    from scipy.stats import binom

    from accountant.clones.closed_form import log_ratio
    from accountant.clones.grid.windows import concave_above

    ctx = Ctx(10, eps0)
    x_h = int(c / 2 + frac * c / 2) + 1
    y_e = max(x_h + 3, int(x_h + cut * (c - x_h)))
    if y_e > c:
        return
    ok = concave_above(np.array([c]), np.array([x_h]), a, ctx, np.array([y_e]))[0]
    if not ok:
        return
    y = np.arange(x_h, y_e + 1, dtype=float)
    z = binom.logpmf(y, c, 0.5) + a * log_ratio(c + 1.0, np.minimum(2.0 * y + 1.0 - c, c + 1.0), ctx)
    d2 = np.diff(z, 2)
    assert np.all(d2 <= 1e-9 * np.maximum(1.0, np.abs(z[1:-1])))


@settings(max_examples=40, deadline=None)
@given(
    c=st.integers(50, 5000),
    eps0=st.floats(3.0, 12.0),
    a_hi=st.floats(5.0, 500.0),
    frac=st.floats(0.0, 1.0),
)
def test_split_upper_tail_never_below_the_direct_sum(c, eps0, a_hi, frac):
    """Random points whose window stops below the edge with a concave range ending at y_e < c:
    the two-piece tail bound is never below the direct sum of the cells above the window."""
    from accountant.clones.grid.windows import tails, windows

    ctx = Ctx(10, eps0)
    cc = np.array([c], dtype=np.int64)
    x_l, x_h, y_e = windows(cc, 1.5, a_hi, ctx, False)
    if not (x_h[0] < c + 1 and y_e[0] < c):
        return
    alpha = 1.5 + frac * (a_hi - 1.5)
    _, t_hi, _ = tails(cc, x_l, x_h, np.array([alpha]), ctx, y_e)
    ref = _direct_upper_tail(c, int(x_h[0]) + 1, alpha, ctx)
    assert t_hi[0, 0] >= ref - 1e-9 * max(1.0, abs(ref))


@_fast
@pytest.mark.usefixtures("kernels_on")
@pytest.mark.parametrize("seed", range(3))
def test_compiled_tilt_search_gives_numpy_tilt_bit_for_bit(seed):
    """The compiled grid search of closed_form.tilt picks the same grid index as numpy's argmax (the
    same operations in the same order), so the tilted peaks, widths and edge flags that steer the
    design are the same bits on either path."""
    from accountant.clones.closed_form import tilt

    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(10 ** rng.uniform(1, 8))
        eps0 = float(10 ** rng.uniform(-3, 1.5))
        ctx = Ctx(n, eps0)
        cs = np.unique(rng.integers(0, n, 60))
        orders = np.sort(10 ** rng.uniform(0.01, 4, 25))
        fast = tilt(cs, orders, ctx.s)
        compiled.use(False)
        plain = tilt(cs, orders, ctx.s)
        assert compiled.use(True)
        for got, ref in zip(fast, plain):
            np.testing.assert_array_equal(got, ref)
