"""A warm answer (the same event at another count) reuses work, and must answer exactly what a
cold one does (issue 23, item 7).

The references here are the plain computations the shortcuts replace, written out in the test:
the PLD bracket's approximation over the whole composed window in one pass, δ(ε) of a fresh
composition, and the subsampled clone curve from its narrow cell table with empty caches.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("dp_accounting")

from accountant import subsampled_clones as sc  # noqa: E402
from accountant.composition import refine_orders  # noqa: E402
from accountant.orders import DEFAULT_ORDERS  # noqa: E402
from accountant.pld import convert, single_round_pmfs  # noqa: E402
from accountant.pld.compose import best_tilt, tilted_compose  # noqa: E402

SHUFFLE = {"mechanism": "shuffle", "n": 10**5, "epsilon0": 1.0}
SUBSAMPLED = {"mechanism": "subsampled_shuffle", "n": 10**5, "k": 300, "epsilon0": 2.0}


def whole_window_bracket(comp, delta):
    """The bracket from the approximation at every grid point of the window (one pass)."""
    from scipy.signal import lfilter

    lam, step, g = comp.lam, comp.step, comp.G
    s1 = lfilter([1.0], [1.0, -math.exp(-lam * step)], g[::-1])[::-1] - g
    s2 = lfilter([1.0], [1.0, -math.exp(-(lam + 1.0) * step)], g[::-1])[::-1] - g
    eps = (comp.a + np.arange(g.size, dtype=np.float64)) * step
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        approx = np.exp(comp.log_scale - lam * eps + np.log(np.maximum(s1 - s2, 1e-300))) + comp.inf
    above = np.flatnonzero(approx > delta)
    if above.size == 0 or above[-1] + 2 >= g.size or above[-1] < 1:
        return None
    k = int(above[-1])
    return float(eps[k - 1]), float(eps[k + 2])


def _composition(event, count, at):
    parts = single_round_pmfs([{**event, "count": count}])
    return tilted_compose(parts, best_tilt(parts, at))


@pytest.mark.parametrize("event", [SHUFFLE, SUBSAMPLED], ids=["shuffle", "subsampled"])
@pytest.mark.parametrize("count", [30, 3000])
def test_blockwise_bracket_is_the_whole_windows(event, count):
    comp = _composition(event, count, 0.5)
    losses = comp.losses
    tops = [-math.inf, losses[0] - 1.0, losses[0], float(np.median(losses)), losses[-1], losses[-1] + 1.0]
    tops += [math.inf, float("nan")]
    for delta in (1e-3, 1e-6, 1e-9, 1e-12):
        want = whole_window_bracket(comp, delta)
        for top in tops:
            assert convert._grid_bracket(comp, delta, top) == want, (delta, top)


def test_the_bracket_crosses_where_the_certified_delta_does():
    comp = _composition(SHUFFLE, 3000, 0.5)
    lo, hi = convert._grid_bracket(comp, 1e-8, 2.0)
    assert comp.delta(lo)[0] > 1e-8 >= comp.delta(hi)[0]


def test_delta_remembered_is_delta_computed():
    parts = single_round_pmfs([{**SHUFFLE, "count": 500}])
    lam = best_tilt(parts, 0.4)
    warm, fresh = tilted_compose(parts, lam), tilted_compose(parts, lam)
    eps = [0.2 + 0.01 * i for i in range(80)]
    for e in eps:  # asked twice, more often than the memo holds
        assert warm.delta(e) == warm.delta(e)
    for e in reversed(eps):
        assert warm.delta(e) == fresh._delta(e)
    assert len(warm._seen) <= 64


def _narrow_group(k, e0, gamma, orders):
    """The subsampled clone sum with the cell table of the orders' own largest window (the
    computation before the table was kept per level)."""
    order = np.argsort(orders, kind="stable")
    chunks = [order[i : i + sc._CHUNK] for i in range(0, orders.size, sc._CHUNK)]
    tops = [float(orders[c].max()) for c in chunks]
    _, bins, _ = sc._admitted(k, e0, gamma, tops, sc._BUDGET, math.exp(-e0))
    s = math.tanh(e0 / 2.0)
    x, ws = bins.x, bins.w * s
    lrmax = np.log1p(ws) - np.log1p(-ws)
    cells = sc._cells_of(x, ws, sc._windows(x, lrmax, max(tops))[1], sc._windows(x, lrmax, 1.0)[0])
    out = np.full(orders.shape, np.inf)
    out[np.concatenate(chunks)] = sc._group(bins, s, chunks, orders, cells)
    return out


@pytest.mark.parametrize(("n", "k", "e0"), [(10**6, 1000, 2.0), (10**4, 100, 0.5), (400, 3, 1.0)])
def test_subsampled_clone_cells_per_level(n, k, e0):
    sc._level_cells.cache_clear()
    for i in (12, 30, 31):
        orders = refine_orders(DEFAULT_ORDERS, i)
        assert orders.max() <= sc._FIRST_GROUP  # one group of orders
        got, _ = sc._log_excess(k, e0, k / n, orders, math.inf, math.exp(-e0))
        np.testing.assert_array_equal(got, _narrow_group(k, e0, k / n, orders))
    assert sc._level_cells.cache_info().hits >= 1


def test_subsampled_clone_curve_same_cold_and_warm():
    orders = refine_orders(DEFAULT_ORDERS, 40)
    sc._level_cells.cache_clear()
    cold = sc.subsampled_clone_rdp(10**5, 300, 2.0, orders)
    sc.subsampled_clone_rdp(10**5, 300, 2.0, refine_orders(DEFAULT_ORDERS, 38))
    np.testing.assert_array_equal(sc.subsampled_clone_rdp(10**5, 300, 2.0, orders), cold)


def test_subsampled_clone_cells_are_kept_per_clone_probability():
    """The generic pair and randomized response's pair (bounds.md §12) share (k, ε0, γ, level) but
    not their bins: a warm answer of one never comes from the other's cell table."""
    orders = np.array([2.0, 9.5, 40.0])
    sc._level_cells.cache_clear()
    rr_cold = sc.subsampled_clone_pair_rdp(10**5, 500, 1.5, orders, randomizer="rr")
    sc._level_cells.cache_clear()
    generic = sc.subsampled_clone_pair_rdp(10**5, 500, 1.5, orders)
    rr_warm = sc.subsampled_clone_pair_rdp(10**5, 500, 1.5, orders, randomizer="rr")
    assert np.array_equal(rr_warm, rr_cold)
    assert np.all(rr_cold < generic)
