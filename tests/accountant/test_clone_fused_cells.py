"""The compiled histogram build of the clone engine (accountant.clones.compiled.histogram_build): its g and
1 − z per segment against mpmath, its segment and ratio-product bounds, its power-of-two scales,
its run sums, and the statistics it builds against the numpy path's histogram on random windows.
Skipped without numba (the numpy path is then used)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from accountant.clones import compiled  # noqa: E402
from accountant.clones.compiled import histogram_build as FC  # noqa: E402
from accountant.clones.grid.cells import hist_cells  # noqa: E402
from accountant.clones.histogram import bins as HB  # noqa: E402
from accountant.clones.types import Ctx  # noqa: E402

ULP = 2.0**-52


def _segments(x: float, x_end: float, m: float, ctx: Ctx):
    """The segments of cells x … x_end as the kernel cuts them, with the g and 1 − z it computes
    for their cells (:func:`fused_cells._block` without the weights)."""
    h = 2.0 * ctx.s / m
    buf = (np.empty(FC.BLOCK), np.empty(FC.BLOCK), np.empty(FC.BLOCK), np.empty(FC.BLOCK, dtype=np.int64))
    while x <= x_end:
        xe, xc = FC._segment(x, x_end, m, ctx.s, ctx.w, h)
        ep, d_c, g_c = FC._sides_g(xc, m, ctx.s, ctx.w)
        n = int(xe - x) + 1
        a = h / ep if n > 1 else 0.0
        b = h / d_c if n > 1 else 0.0
        FC._series_pass(x, n, (xc, g_c, d_c, h, a + b, a - b), m, buf)
        yield x, xe, xc, a, b, buf[0][:n].copy(), buf[1][:n].copy()
        x = xe + 1.0


def _exact(x: float, m: float, eps0: float):
    import mpmath as mp

    with mp.workdps(50):
        z = mp.tanh(mp.mpf(eps0) / 2) * (2 * mp.mpf(x) - m) / m
        return float(mp.log((1 + z) / (1 - z))), float(1 - z)


@settings(max_examples=120, deadline=None)
@given(
    log_m=st.floats(math.log(3.0), math.log(1e8)),
    log_eps=st.floats(math.log(1e-6), math.log(30.0)),
    where=st.sampled_from(["centre", "edge", "low", "any"]),
    frac=st.floats(0.0, 1.0),
    length=st.integers(1, FC.BLOCK),
)
def test_segment_g_and_one_minus_z_match_mpmath(log_m, log_eps, where, frac, length):
    """Per cell of every segment of a block: g by the series of _g_at within 16 ulps of
    log((1 + z)/(1 − z)) and 1 − z by the linear form within 8 ulps (mpmath), near g = 0, near
    the edge x = m, near x = 0 and anywhere; each segment of one sign of g, expanded at its cell
    of smallest |g|, with |k|·max(a, b) ≤ 1/8."""
    m = float(round(math.exp(log_m)))
    eps0 = math.exp(log_eps)
    ctx = Ctx(10, eps0)
    start = {
        "centre": m / 2 - frac * length,
        "edge": m - frac * length,
        "low": frac * length,
        "any": frac * m,
    }[where]
    x0 = float(min(max(math.floor(start), 0.0), m))
    x_end = min(m, x0 + length - 1.0)
    for x, xe, xc, a, b, g, d in _segments(x0, x_end, m, ctx):
        ks = np.arange(x, xe + 1.0) - xc
        signs = np.sign(2.0 * np.arange(x, xe + 1.0) - m)
        assert np.all(signs == signs[0])
        assert xc == (x if signs[0] >= 0 else xe)
        assert np.all(np.abs(ks) * max(a, b) <= 0.125 * (1 + 1e-12))
        pick = np.unique(np.linspace(0, ks.size - 1, min(ks.size, 12)).astype(int))
        for q in pick:
            ge, de = _exact(x + q, m, eps0)
            assert abs(g[q] - ge) <= 16 * ULP * abs(ge), (x + q, g[q], ge)
            assert abs(d[q] - de) <= 8 * ULP * de + 1e-300, (x + q, d[q], de)


@settings(max_examples=150, deadline=None)
@given(
    log_m=st.floats(math.log(3.0), math.log(1e8)),
    log_eps=st.floats(math.log(1e-6), math.log(30.0)),
    frac=st.floats(0.0, 1.0),
)
def test_segments_keep_the_ratio_product_in_range(log_m, log_eps, frac):
    """From r ∈ [½, 1), the product of the ratios b_m(y + 1)/b_m(y) over a segment stays in
    [2⁻⁵⁹¹, 2⁶⁰] (log-gamma reference), wherever the segment starts (steep tails included)."""
    m = float(round(math.exp(log_m)))
    ctx = Ctx(10, math.exp(log_eps))
    x0 = float(math.floor(frac * m))
    x_end = min(m, x0 + FC.BLOCK - 1.0)

    def log2_b(y: float) -> float:
        return (math.lgamma(m + 1) - math.lgamma(y + 1) - math.lgamma(m - y + 1)) / math.log(2.0)

    for x, xe, _, _, _, _, _ in _segments(x0, x_end, m, ctx):
        ys = np.arange(x, xe + 1.0)
        rel = np.array([log2_b(y) for y in ys]) - log2_b(x)
        assert rel.min() - 1.0 >= -591.0 - 1e-6 and rel.max() <= 60.0 + 1e-6


@settings(max_examples=300, deadline=None)
@given(
    k=st.integers(-255, 255).filter(lambda v: v != 0),
    at_bound=st.booleans(),
    shrink=st.floats(1e-12, 1.0),
    log_ratio=st.floats(-14.0, 0.0),
    a_larger=st.booleans(),
)
def test_series_of_g_matches_mpmath_up_to_its_largest_argument(k, at_bound, shrink, log_ratio, a_larger):
    """The series part of _g_at alone (g_c = 0): 2·artanh(u) = log((1 + k·a)/(1 − k·b)) within
    3 ulps (mpmath) for every |k|·max(a, b) ≤ 1/8, the segment bound, at the bound included (the
    last term of the series weighs ≈ 5 ulps there)."""
    import mpmath as mp

    mx = 0.125 / abs(k) * (1.0 if at_bound else shrink)
    a, b = (mx, mx * 10.0**log_ratio) if a_larger else (mx * 10.0**log_ratio, mx)
    got = FC._g_at(float(k), 0.0, a + b, a - b)
    with mp.workdps(50):
        ref = float(mp.log1p(k * mp.mpf(a)) - mp.log1p(-k * mp.mpf(b)))
    assert abs(got - ref) <= 3 * ULP * abs(ref)


def _paths_tables(m: float, eps0: float, x0: float, x_end: float):
    """One block's cells into a table by the kernel's passes and, separately, by its cell-by-cell
    path (the segments cut alike)."""
    ctx = Ctx(10, eps0)
    lo, hi = FC.g_range(np.array([m - 1.0]), np.array([x0]), np.array([x_end]), np.zeros(1), ctx.s, ctx.w)
    if not hi > 0.0:
        return None
    ed, ksw, dg = HB.bin_edges(lo, hi)
    lay = (int(ksw), float(dg), float(lo), math.log(HB._R))
    tabs = []
    for fast in (True, False):
        tab = np.zeros((2 * (ed.size - 1), 8))
        tab[:, 0] = tab[:, 3] = FC.NO_SCALE
        tab[:, 5], tab[:, 6] = np.inf, -np.inf
        pend = np.zeros((ed.size - 1, 4))
        pend[:, 2], pend[:, 3] = np.inf, -np.inf
        buf = (np.empty(FC.BLOCK), np.empty(FC.BLOCK), np.empty(FC.BLOCK), np.empty(FC.BLOCK, dtype=np.int64))
        h = 2.0 * ctx.s / m
        r, ex, x, prev = 1.0, 0, x0, -1
        while x <= x_end:
            r, e = math.frexp(r)
            ex += e
            xe, xc = FC._segment(x, x_end, m, ctx.s, ctx.w, h)
            ep, d_c, g_c = FC._sides_g(xc, m, ctx.s, ctx.w)
            n = int(xe - x) + 1
            a = h / ep if n > 1 else 0.0
            b = h / d_c if n > 1 else 0.0
            cell = (xc, g_c, d_c, h, a + b, a - b)
            sc = (ex, 1.0, ex, 1.0)
            if fast and n > 1 and g_c != 0.0 and d_c > 0.0:
                FC._series_pass(x, n, cell, m, buf)
                FC._index_pass(n, ed, lay, buf)
                r1, span, status = FC._sum_pass(n, r, ed, lay, buf, pend)
                assert status == 0
                FC._flush_pending(span, int(g_c < 0.0), sc, pend, tab, True)
                q, r = n, r1
            else:
                q, r, prev = FC._slow_seg(x, n, cell, r, m, ed, lay, sc, tab, prev)
                assert prev != -3 and q > 0
            x += q
        tabs.append(tab)
    return tabs


@settings(max_examples=60, deadline=None)
@given(
    log_m=st.floats(math.log(3.0), math.log(1e7)),
    log_eps=st.floats(math.log(0.01), math.log(25.0)),
    where=st.sampled_from(["centre", "edge", "any"]),
    frac=st.floats(0.0, 1.0),
)
def test_branch_free_runs_equal_the_cell_by_cell_path(log_m, log_eps, where, frac):
    """The passes of a fast segment (bins by index, branch-free run sums) and the cell-by-cell
    path (runs by bin tests) give the same table for a block: the same keys, sums and extremes
    (the same additions in the same order)."""
    m = float(round(math.exp(log_m)))
    start = {"centre": m / 2 - frac * FC.BLOCK, "edge": m - frac * FC.BLOCK, "any": frac * m}[where]
    x0 = float(min(max(math.floor(start), 0.0), m))
    got = _paths_tables(m, math.exp(log_eps), x0, min(m, x0 + FC.BLOCK - 1.0))
    if got is not None:
        fast, slow = got
        np.testing.assert_array_equal(fast, slow)


def test_ln2_split_is_exact_in_its_high_part():
    """ex·LN2_HI is exact for |ex| < 2²⁹ (24 significant bits) and LN2_HI + LN2_LO is ln 2 to
    1e-23 relative: the scales 2^{ex} and LM = ex·ln 2 + log(sum) agree."""
    import mpmath as mp

    assert (FC.LN2_HI * 2**24).is_integer()
    with mp.workdps(60):
        err = mp.mpf(FC.LN2_HI) + mp.mpf(FC.LN2_LO) - mp.log(2)
        assert abs(err) <= 1e-23 * mp.log(2)
        for la in (-7.3e7, -31234.56789, -1.25, 0.0, 0.3, 2.0, 700.0):
            ex, fr = FC._split(la)
            assert 1.0 <= fr <= 2.0
            assert abs(mp.log(fr) + ex * mp.log(2) - mp.mpf(la)) <= 4 * ULP * max(1.0, abs(la))


def _edges():
    ed = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    return ed, (1, 0.1, 0.1, math.log(1.03))


def test_sum_pass_runs_equal_direct_sums_and_non_monotone_bins_are_refused():
    """The branch-free run sums of _sum_pass are the direct per-bin sums (weights r·(1 − z) with
    the running ratio product); a bin sequence that is not monotone, or a ratio product leaving
    its range, is refused (status 1) so that the caller redoes the segment cell by cell."""
    ed, lay = _edges()
    g = np.array([0.11, 0.15, 0.19, 0.25, 0.31, 0.32, 0.55])
    d = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])
    rat = np.array([1.5, 0.5, 2.0, 0.25, 1.0, 3.0, 7.0])
    ib = np.array([1, 0, 1, 2, 3, 3, 5])  # (the second is off by one: corrected against the edges)
    pend = np.zeros((ed.size - 1, 4))
    pend[:, 2], pend[:, 3] = np.inf, -np.inf
    n = g.size
    r_end, (i0, i1, base), st = FC._sum_pass(n, 0.75, ed, lay, (g, d, rat, ib), pend)
    assert st == 0 and (i0, i1) == (1, 5)
    r = 0.75 * np.concatenate([[1.0], np.cumprod(rat[:-1])])
    assert r_end == pytest.approx(r[-1] * rat[-1], rel=1e-15)
    bins = np.searchsorted(ed, g, side="left") - 1
    for i in range(i0, i1 + 1):
        sel = bins == i
        row = pend[i - base]
        if not sel.any():
            assert row[0] == 0.0
            continue
        assert row[0] == pytest.approx((r * d)[sel].sum(), rel=1e-15)
        assert row[1] == pytest.approx((r * d * g)[sel].sum(), rel=1e-15)
        assert (row[2], row[3]) == (g[sel].min(), g[sel].max())
    pend[:] = 0.0
    g2 = np.array([0.11, 0.25, 0.15, 0.31])  # bins 1, 2, 1, 3: not monotone
    ib2 = np.array([1, 2, 1, 3])
    _, _, st = FC._sum_pass(4, 0.75, ed, lay, (g2, d[:4], rat[:4], ib2), pend)
    assert st == 1
    _, _, st = FC._sum_pass(4, 2.0**-599, ed, lay, (g[:4], d[:4], np.full(4, 0.25), ib[:4]), pend)
    assert st == 1


def test_bin_of_takes_the_top_edge_up_to_rounding_only():
    """A |g| above the last edge by rounding (the window end's g by the series instead of the
    log) joins the last bin; one above it by more has no bin."""
    ed, (ksw, dg, gmin, log_r) = _edges()
    top = ed[ksw]
    assert FC._bin_of(0.6 * (1 + 1e-15), -1, ed, top, ksw, dg, gmin, log_r) == ed.size - 2
    assert FC._bin_of(0.6 * (1 + 1e-9), -1, ed, top, ksw, dg, gmin, log_r) == -1
    assert FC._bin_of(math.nan, 3, ed, top, ksw, dg, gmin, log_r) == -1
    assert FC._bin_of(0.3, -1, ed, top, ksw, dg, gmin, log_r) == 2
    assert FC._bin_of(0.30000000000000004, 0, ed, top, ksw, dg, gmin, log_r) == 3


def _random_windows(rng: np.random.Generator, npts: int):
    n = int(10 ** rng.uniform(2.5, 7.5))
    eps0 = float(10 ** rng.uniform(-1.5, math.log10(25.0)))
    c = np.unique(rng.integers(1, max(n // 20, 10), npts)).astype(np.int64)
    m = c + 1
    kind = rng.integers(0, 4, c.size)
    width = np.minimum(m, rng.integers(1, 3000, c.size))
    lo = np.where(
        kind == 0,
        m // 2 - width // 2,  # around g = 0
        np.where(kind == 1, m - width, np.where(kind == 2, 0, rng.integers(0, m))),  # edge, x = 0, any
    )
    x_l = np.clip(lo, 0, m).astype(np.int64)
    x_h = np.minimum(m, x_l + width).astype(np.int64)
    lw = rng.normal(-30.0, 40.0, c.size)
    lw[rng.uniform(size=c.size) < 0.05] = -np.inf
    shift = rng.normal(0.0, 5.0, c.size)
    shift[rng.uniform(size=c.size) < 0.05] = rng.choice([-800.0, 800.0, -np.inf])
    return Ctx(n, eps0), c, x_l, x_h, lw, shift


@pytest.mark.usefixtures("kernels_on")
@pytest.mark.parametrize("seed", range(12))
def test_compiled_stats_equal_numpy_histogram_on_random_windows(seed):
    """Random points and windows (around g = 0, at the edge x = m, from x = 0, anywhere; ε0 up to
    25; weights spread over hundreds of nats, some −inf; right-end shifts up to ±800): the
    compiled statistics are the numpy path's histogram — the same bins but for cells on a bin
    edge, per bin the same log-mass (1e-12 relative), right-end log-mass, mean and extreme values
    of g to rounding, and the same total mass."""
    from scipy.special import logsumexp

    rng = np.random.default_rng(7000 + seed)
    ctx, c, x_l, x_h, lw, shift = _random_windows(rng, 40)
    st = compiled.hist_stats(c, x_l, x_h, lw, shift, ctx, HB.bin_edges, math.log(HB._R))
    lbw, den, g, segc = hist_cells(c, x_l, x_h, lw, ctx)
    valid = np.isfinite(lbw) & (g != 0.0) & (den > 0.0)
    if not valid.any():
        assert st is None
        return
    fast = HB.Bins.from_stats(*st)
    slow = HB.Bins(lbw, g, segc, shift, lin=den)
    tol = 1e-12 * np.maximum(1.0, np.abs(slow.LM))
    assert logsumexp(fast.LM) == pytest.approx(logsumexp(slow.LM), rel=1e-12, abs=1e-12)
    common, i_f, i_s = np.intersect1d(fast.keys, slow.keys, return_indices=True)
    assert common.size >= 0.99 * max(fast.keys.size, slow.keys.size)
    close = np.abs(fast.LM[i_f] - slow.LM[i_s]) <= tol[i_s]
    assert close.mean() >= 0.99
    ok = close & np.isfinite(slow.LML[i_s])
    np.testing.assert_allclose(fast.LML[i_f][ok], slow.LML[i_s][ok], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fast.mu[i_f][close], slow.mu[i_s][close], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(fast.lo[i_f][close], slow.lo[i_s][close], rtol=2e-15)
    np.testing.assert_allclose(fast.hi[i_f][close], slow.hi[i_s][close], rtol=2e-15)
    assert fast.hi.max() == pytest.approx(slow.hi.max(), rel=2e-15)
    assert fast.lo.min() == pytest.approx(slow.lo.min(), rel=2e-15)
