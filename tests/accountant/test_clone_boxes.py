"""Boxes of the clone histogram (accountant.clones.histogram.boxes): runs of cells no order needs, bounded
by one histogram entry each.

References are independent of the module: Q_c(x) from scipy's binomial pmf, g from its closed
form, ψ_α from accountant.clones.reference.ref_log_phi, and the exact untruncated sums of
accountant.clones.reference for whole curves.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp
from scipy.stats import binom

from accountant import clones as C
from accountant.clones import compiled
from accountant.clones import routing as Rt
from accountant.clones.histogram import boxes as B
from accountant.clones.histogram import engine as H
from accountant.clones.reference import exact_clone, ref_log_phi
from accountant.clones.types import Ctx
from accountant.orders import DEFAULT_ORDERS

ORDERS = np.asarray(DEFAULT_ORDERS, dtype=float)


def _log_q(c: int, x: np.ndarray, eps0: float) -> np.ndarray:
    """log Q_c(x) = log((b(x) + q·b(x−1))/(1 + q)), b the Bin(c, ½) pmf."""
    q = math.exp(-eps0)
    return np.logaddexp(binom.logpmf(x, c, 0.5), math.log(q) + binom.logpmf(x - 1, c, 0.5)) - math.log1p(q)


def _g(c: int, x: np.ndarray, eps0: float) -> np.ndarray:
    t = math.tanh(eps0 / 2.0) / (c + 1.0)
    u = 2.0 * x - c - 1.0
    return np.log1p(t * u) - np.log1p(-t * u)


class _Split:
    """A stand-in for boxes.Negligible: runs whose end value |g| is below ``g0`` count as
    negligible, the others not (so box_cover splits some runs and keeps others)."""

    def __init__(self, g0: float) -> None:
        self.g0 = g0

    def __call__(self, g: np.ndarray) -> np.ndarray:
        return np.where(np.abs(g) < self.g0, -np.inf, np.inf)


def _cover(c: int, eps0: float, lo: int, hi: int, g0: float):
    ctx = Ctx(c + 1, eps0)  # Ctx takes n = N + 1; only s, w, q, ε0 matter here
    return B.box_cover(np.array([c]), np.array([0.0]), np.array([lo]), np.array([hi]), ctx, _Split(g0))


@settings(max_examples=80, deadline=None)
@given(
    c=st.integers(1, 2500),
    eps0=st.floats(0.01, 10.0),
    f0=st.floats(0.0, 1.0),
    f1=st.floats(0.0, 1.0),
    frac=st.floats(0.0, 1.2),
    alpha=st.floats(1.01, 1e4),
)
def test_boxes_and_ranges_partition_the_window_and_every_box_bounds_its_cells(c, eps0, f0, f1, frac, alpha):
    lo, hi = sorted((int(f0 * (c + 1)), int(f1 * (c + 1))))
    (rj, ra, rb), (bj, ba, bb, blw, bg) = _cover(c, eps0, lo, hi, frac * eps0)
    # every cell of the window exactly once, in a cell range or in a box
    cover = np.zeros(hi - lo + 1, dtype=int)
    for a, b in zip(np.concatenate([ra, ba]), np.concatenate([rb, bb])):
        assert lo <= a <= b <= hi
        cover[a - lo : b - lo + 1] += 1
    assert np.all(cover == 1)
    assert np.all(rj == 0) and np.all(bj == 0)
    # each box: Σ_{x∈[a,b]} Q(x)·ψ_α(g(x)) ≤ e^{box log-weight}·ψ_α(g_end)
    for a, b, lw, g in zip(ba, bb, blw, bg):
        x = np.arange(a, b + 1, dtype=float)
        direct = logsumexp(_log_q(c, x, eps0) + ref_log_phi(alpha, _g(c, x, eps0)))
        bound = lw + ref_log_phi(alpha, np.array([g]))[0]
        # (cells with g = 0 have ψ = 0: then both sides are −inf)
        assert direct == -np.inf or direct <= bound + 1e-9 * max(1.0, abs(bound)), (a, b, direct, bound)
        # the box's own value is one of its cells' g, on the side where ψ is largest
        assert g == pytest.approx(_g(c, np.array([float(a if g < 0 else b)]), eps0)[0], rel=1e-12, abs=1e-15)


def test_a_negligible_table_bounds_the_maximum_over_orders_between_its_grid_points():
    ctx = Ctx(10**5, 3.0)
    alphas = ORDERS
    levels = np.linspace(-20.0, 300.0, alphas.size)
    negl = B.Negligible(ctx, alphas, levels)
    g = np.random.default_rng(7).uniform(-3.0, 3.0, 400)
    direct = np.max(ref_log_phi(alphas[:, None], g[None, :]) - levels[:, None], axis=0)
    assert np.all(negl(g) >= direct - 1e-9 * np.maximum(1.0, np.abs(direct)))


def test_log_f_estimates_lie_below_the_chords_of_a_convex_curve():
    """Between directly estimated orders the estimate takes the secants extended, which lie below
    a convex curve (log F_α is convex in α), never its chord; at the direct orders it is exact."""
    from accountant.clones.grid.cgrid import log_f_estimates

    alphas = ORDERS
    convex = 0.02 * alphas**2 + 3.0 * alphas  # a convex stand-in for log(F − 1)
    sub = alphas[::2]
    got = log_f_estimates(alphas, sub, convex[::2])
    assert np.all(got <= convex + 1e-9 * np.abs(convex))
    np.testing.assert_array_equal(got[::2], convex[::2])
    chord = np.interp(alphas, sub, convex[::2])
    assert np.all(got[1::2] < chord[1::2])


def _random_points(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(np.exp(rng.uniform(math.log(30), math.log(2500))))
        eps0 = float(np.exp(rng.uniform(math.log(0.05), math.log(8.0))))
        yield n, round(eps0, 6)


@pytest.fixture
def boxes_always(monkeypatch):
    """Boxes for every window, whatever its size (the engine uses them above a cell count)."""
    monkeypatch.setattr(H, "BOX_MIN_CELLS", 0)
    monkeypatch.setattr(H, "BOX_MIN_WIDTH", 0.0)
    C.clear_cache()
    yield
    C.clear_cache()


@pytest.mark.usefixtures("boxes_always")
@pytest.mark.parametrize("on", [False, True])
@pytest.mark.parametrize("n,eps0", list(_random_points(8, seed=20261126)))
def test_histogram_with_boxes_safe_and_tight_against_exact_sum(n, eps0, on):
    """With boxes: never below the exact untruncated sum, within 0.3% of it up to α = 256 and
    1.5% above (the engine's own tolerances), on the numpy and the compiled path."""
    if on and not compiled.use(True):
        pytest.skip("numba not installed")
    try:
        plan = H.HistPlan(Ctx(n, eps0), Rt.HIST_DESIGN)
        assert plan.boxes is not None
        got = C.clone_rdp(n, eps0, ORDERS, engine="histogram")[::4]
    finally:
        compiled.use(False)
    sel = ORDERS[::4]
    ref = exact_clone(n, eps0, sel)
    assert np.all(got >= ref * (1 - 1e-12))
    low = sel <= 256
    assert np.all(got[low] <= ref[low] * 1.003)
    assert np.all(got <= ref * 1.015)


@pytest.mark.parametrize("n,eps0", [(10**6, 5.0), (10**5, 2.0)])
def test_boxes_cut_the_cells_and_keep_the_bound(n, eps0, monkeypatch):
    """At large n and ε0 most window cells matter to no order: boxes replace most of them and
    the bound moves by a few parts in 10⁴ at most (both are certified upper bounds; the cells
    left fall into fewer bins, so the chords can be tighter)."""
    ctx = Ctx(n, eps0)
    with_boxes = H.HistPlan(ctx, Rt.HIST_DESIGN)
    assert with_boxes.boxes is not None and with_boxes.cells < 0.8 * with_boxes.window_cells
    v_box, _ = H.Prepared(with_boxes).evaluate(ORDERS)
    monkeypatch.setattr(H, "BOX_MIN_CELLS", 10**12)
    plain = H.HistPlan(ctx, Rt.HIST_DESIGN)
    assert plain.boxes is None and plain.cells == plain.window_cells
    v_plain, _ = H.Prepared(plain).evaluate(ORDERS)
    eps_box = np.logaddexp(0.0, v_box) / (ORDERS - 1.0)
    eps_plain = np.logaddexp(0.0, v_plain) / (ORDERS - 1.0)
    np.testing.assert_allclose(eps_box, eps_plain, rtol=5e-4)
