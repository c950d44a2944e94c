"""The split of the clone boxes (accountant.clones.histogram.boxes.box_cover: numpy, and compiled in
accountant.clones.compiled.boxes) against the plain top-down split that defines it (below: every
run tested from scratch at both ends, halved until it passes or is at most MIN_RUN cells long):
the same cell ranges and boxes on random windows and on the engine's own plans, the same curves
through the whole engine, and the negligibility table filled on demand against a direct maximum
over the orders (accountant.clones.reference).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.clones import clear_cache, clone_rdp, compiled
from accountant.clones.closed_form import log_q_at, log_ratio
from accountant.clones.histogram import boxes as B
from accountant.clones.histogram import engine as H
from accountant.clones.reference import ref_log_phi
from accountant.clones.routing import HIST_DESIGN
from accountant.clones.types import Ctx
from accountant.orders import DEFAULT_ORDERS

ORDERS = np.asarray(DEFAULT_ORDERS, dtype=float)


def _numba_installed() -> bool:
    was = compiled.available()
    try:
        return compiled.use(True)
    finally:
        compiled.use(was)


pytestmark = pytest.mark.skipif(not _numba_installed(), reason="numba not installed")


def _plain_split(c, lw, x_l, x_h, ctx, negl):
    """The definition (boxes module docstring): each run [a, b] on one side of L = ⌊(c+1)/2⌋ is
    a box when lw + log(b − a + 1) + log Q(x_q) + negl(g(x_g)) ≤ −λ (x_q, x_g the ends where Q
    and ψ are largest), else cells when at most MIN_RUN long, else halved."""
    cells, boxes = [], []
    for jj in range(c.size):
        cj, half = int(c[jj]), (int(c[jj]) + 1) // 2
        todo = [(int(x_l[jj]), min(int(x_h[jj]), half)), (max(int(x_l[jj]), half + 1), int(x_h[jj]))]
        while todo:
            a, b = todo.pop()
            if a > b:
                continue
            right = a > half
            xq, xg = (a, b) if right else (b, a)
            lq = log_q_at(np.array([float(xq)]), np.array([cj]), ctx)[0]
            g = log_ratio(cj + 1.0, 2.0 * xg - cj - 1.0, ctx)
            lbox = lw[jj] + math.log(b - a + 1.0) + lq
            if lbox + negl(np.array([g]))[0] <= -B.LAMBDA_BOX:
                boxes.append((jj, a, b, lbox, g))
            elif b - a + 1 <= B.MIN_RUN:
                cells.append((jj, a, b))
            else:
                mid = (a + b) // 2
                todo += [(a, mid), (mid + 1, b)]
    cells.sort()
    merged = []
    for jj, a, b in cells:
        if merged and merged[-1][0] == jj and merged[-1][2] == a - 1:
            merged[-1][2] = b
        else:
            merged.append([jj, a, b])
    boxes.sort()
    rng = tuple(np.array([m[k] for m in merged], dtype=np.int64) for k in range(3))
    bx = tuple(np.array([v[k] for v in boxes], dtype=float if k > 2 else np.int64) for k in range(5))
    return rng, bx


def _cover(on: bool, c, lw, x_l, x_h, ctx, levels, alphas=ORDERS):
    """box_cover on the numpy or the compiled path, each with a fresh table (filled by itself)."""
    was = compiled.available()
    compiled.use(on)
    try:
        negl = B.Negligible(ctx, alphas, levels + B.MARGIN)
        return B.box_cover(c, lw, x_l, x_h, ctx, negl), negl
    finally:
        compiled.use(was)


def _assert_same(got, want):
    (rj, ra, rb), (bj, ba, bb, blw, bg) = got
    (rj0, ra0, rb0), (bj0, ba0, bb0, blw0, bg0) = want
    for x, y in ((rj, rj0), (ra, ra0), (rb, rb0), (bj, bj0), (ba, ba0), (bb, bb0)):
        np.testing.assert_array_equal(x, y)
    # Loader's pmf from numba's and numpy's log: a few ulps of x·log(x/m) (x ≲ 10⁸)
    np.testing.assert_allclose(blw, blw0, rtol=1e-13, atol=1e-10)
    np.testing.assert_allclose(bg, bg0, rtol=1e-13, atol=1e-300)


@settings(max_examples=60, deadline=None)
@given(
    log_n=st.floats(math.log(1e3), math.log(1e9)),
    eps0=st.floats(0.3, 10.0),
    npts=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    kappa=st.floats(-30.0, 0.0),
)
def test_split_gives_the_plain_splits_ranges_and_boxes(log_n, eps0, npts, seed, kappa):
    n = int(math.exp(log_n))
    ctx = Ctx(n, eps0)
    rng = np.random.default_rng(seed)
    c = np.unique(rng.integers(1, max(2, min(n - 1, 200_000)), npts))
    lw = rng.uniform(-80.0, 0.0, c.size)
    lw[rng.random(c.size) < 0.1] = -np.inf  # (a bin whose mass underflows)
    f = np.sort(rng.random((c.size, 2)), axis=1)
    x_l = np.floor(f[:, 0] * (c + 2)).astype(np.int64)
    x_h = np.minimum(np.floor(f[:, 1] * (c + 2)).astype(np.int64), c + 1)
    x_l = np.minimum(x_l, x_h)
    levels = kappa + np.log(ORDERS * (ORDERS - 1.0)) + rng.uniform(0.0, 1.0) * np.log(ORDERS)
    want = _plain_split(c, lw, x_l, x_h, ctx, B.Negligible(ctx, ORDERS, levels + B.MARGIN))
    for on in (False, True):
        got, _ = _cover(on, c, lw, x_l, x_h, ctx, levels)
        _assert_same(got, want)
    # sorted by point then x, cell ranges merged: no two adjacent ranges of one point
    (rj, ra, rb), (bj, ba, _, _, _) = got
    assert np.all(np.diff(rj * (n + 2) + ra) > 0) and np.all(np.diff(bj * (n + 2) + ba) > 0)
    assert not np.any((rj[1:] == rj[:-1]) & (ra[1:] == rb[:-1] + 1))


@pytest.mark.parametrize("n,eps0", [(10**5, 2.0), (10**6, 3.0), (10**7, 5.0), (10**8, 7.5)])
def test_split_on_the_engines_plans(n, eps0, monkeypatch):
    """The plans of the worst cold curves: many boxes and many cell ranges, the same on both paths
    and (where affordable) as the plain split's."""
    seen = {}
    real = B.box_cover

    def spy(c, lw, x_l, x_h, ctx, negl):
        seen["args"] = (c, lw, x_l, x_h, ctx, negl.levels, negl.alphas)
        return real(c, lw, x_l, x_h, ctx, negl)

    monkeypatch.setattr(B, "box_cover", spy)
    H.HistPlan(Ctx(n, eps0), HIST_DESIGN)
    c, lw, x_l, x_h, ctx, levels, alphas = seen["args"]
    want, _ = _cover(False, c, lw, x_l, x_h, ctx, levels, alphas)
    got, negl = _cover(True, c, lw, x_l, x_h, ctx, levels, alphas)
    _assert_same(got, want)
    if n <= 10**5:  # (the plain split is slow: one run at a time)
        _assert_same(want, _plain_split(c, lw, x_l, x_h, ctx, B.Negligible(ctx, alphas, levels + B.MARGIN)))
    assert got[0][0].size > 100 and got[1][0].size > 1000
    # the table entries the compiled split filled: the maximum over the orders, and no other
    used = np.flatnonzero(negl.done)
    assert 0 < used.size < negl.grid.size // 2
    direct = np.max(ref_log_phi(alphas[:, None], negl.grid[None, used]) - levels[:, None], axis=0)
    np.testing.assert_allclose(negl.table[used], direct, rtol=1e-10, atol=1e-12)  # (the reference: ≲ 1e-11)
    assert np.all(np.isnan(np.delete(negl.table, used)))


def test_the_table_filled_on_demand_is_the_direct_maximum():
    ctx = Ctx(10**5, 3.0)
    levels = np.linspace(-20.0, 300.0, ORDERS.size)
    negl = B.Negligible(ctx, ORDERS, levels + B.MARGIN)
    assert not negl.done.any()
    g = np.random.default_rng(3).uniform(-3.0, 3.0, 50)
    got = negl(g)
    idx = negl.index(g)
    assert np.array_equal(np.flatnonzero(negl.done), np.unique(idx))
    direct = np.max(ref_log_phi(ORDERS[:, None], negl.grid[None, idx]) - levels[:, None], axis=0)
    np.testing.assert_allclose(got, direct, rtol=1e-10)
    # the grid point farther from 0: |grid| ≥ |g|, the neighbour towards 0 below |g|
    assert np.all(np.abs(negl.grid[idx]) >= np.abs(g))
    towards0 = idx - np.sign(g).astype(int)
    assert np.all(np.abs(negl.grid[towards0]) < np.abs(g))


class _NumpyOnly:
    """accountant.clones.compiled as seen by the boxes module only: the compiled split off."""

    @staticmethod
    def available() -> bool:
        return False


@pytest.mark.parametrize("n,eps0", [(10**5, 2.0), (10**6, 3.0)])
def test_curves_with_the_compiled_split_equal_the_numpy_splits(n, eps0, monkeypatch):
    compiled.use(True)
    try:
        clear_cache()
        got = clone_rdp(n, eps0, ORDERS)
        monkeypatch.setattr(B, "compiled", _NumpyOnly)
        clear_cache()
        want = clone_rdp(n, eps0, ORDERS)
    finally:
        compiled.use(False)
        clear_cache()
    np.testing.assert_allclose(got, want, rtol=1e-12)
