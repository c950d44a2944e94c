"""The law of C ~ Bin(N, q) summed over C-grid bins (accountant.clones.grid.cmass.CMass): against
40-digit mpmath sums, against the whole-window summation it replaces, and the compiled block sums
against the numpy ones.

Every mass must be an upper bound on the exact one (beyond the pmf's rounding, ≲ 1e-12
relative) and, for bins inside the window W = c0 ± (40σ + 40), exceed it by at most 2⁻⁶⁰
relative plus that rounding. Bins reaching outside W carry the geometric far-tail bound, as
before: only the upper bound is checked there.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.clones import compiled
from accountant.clones.grid import cmass as CM
from accountant.clones.types import Ctx

RTOL = 1e-12  # Loader's pmf and the block sums (tests/accountant/test_binomial_pmf.py)


def _mp_mass(big_n: int, eps: float, a: int, b: int, mode: int) -> mp.mpf:
    """Σ_{k=a}^{b} pmf(k) in 40 digits, from the bin's largest term outward, each side stopped
    once its terms fall below 1e-45 of the sum (the terms keep falling geometrically after)."""
    with mp.workdps(40):
        q = mp.e ** (-mp.mpf(eps))
        q1 = 1 - q
        k0 = min(max(mode, a), b)
        t0 = mp.e ** (
            mp.loggamma(big_n + 1)
            - mp.loggamma(k0 + 1)
            - mp.loggamma(big_n - k0 + 1)
            + k0 * mp.log(q)
            + (big_n - k0) * mp.log(q1)
        )
        tot = t0
        for step, ks in ((1, range(k0 + 1, b + 1)), (-1, range(k0 - 1, a - 1, -1))):
            t = t0
            for k in ks:
                t *= (big_n - k + 1) * q / (k * q1) if step == 1 else (k + 1) * q1 / ((big_n - k) * q)
                tot += t
                if t < tot * mp.mpf(10) ** -45:
                    break
        return tot


def _bins(pts: np.ndarray, big_n: int) -> tuple[np.ndarray, np.ndarray]:
    return pts, np.append(pts[1:] - 1, big_n)


@pytest.fixture
def numpy_path():
    was = compiled.available()
    compiled.use(False)
    yield
    compiled.use(was)


CASES = [
    # (n, ε0, points in units of σ_C around c0): coarse grids (the mode's bin by the complement),
    # fine ones (every bin summed), far tails inside W, bins reaching outside W
    (10**8, 0.1, [-30.0, -12.5, -9.0, -8.5, -7.5, 7.5]),
    (10**8, 1.0, [-45.0, -20.0, -3.0, -0.5, 0.25, 2.0, 9.0, 39.0]),
    (10**7, 5.0, [-39.0, -25.0, -6.0, -1.0, 0.0, 1.0, 6.0, 25.0, 39.5]),
    (10**6, 0.5, list(np.linspace(-10.0, 10.0, 41))),
    (10**8, 9.0, [-15.0, -2.0, 2.0, 15.0, 38.0]),  # Poisson-like: q ≈ 1.2e-4
]


@pytest.mark.parametrize("n,eps0,zs", CASES)
def test_masses_are_tight_upper_bounds_against_mpmath(n, eps0, zs, numpy_path):  # noqa: ARG001
    ctx = Ctx(n, eps0)
    cm = CM.CMass(ctx)
    assert cm.lpmf is None  # the truncated path (W wider than FULL_MAX)
    pts = np.unique(np.concatenate([[0], np.round(ctx.c0 + np.array(zs) * ctx.sig_c).astype(np.int64)]))
    pts = pts[(pts >= 0) & (pts <= ctx.N)]
    got = cm.bins(pts)
    a, b = _bins(pts, ctx.N)
    checked = 0
    for j in range(pts.size):
        lo, hi = max(a[j], cm.lo), min(b[j], cm.hi)
        if lo > hi:
            continue
        ref = float(mp.log(_mp_mass(ctx.N, eps0, int(lo), int(hi), cm.mode)))
        assert got[j] >= ref - RTOL * max(1.0, abs(ref)), (j, got[j], ref)
        if a[j] >= cm.lo and b[j] <= cm.hi:  # inside W: excess ≤ 2⁻⁶⁰ + rounding
            assert got[j] <= ref + 2.0**-59 + RTOL * max(1.0, abs(ref)), (j, got[j], ref)
            checked += 1
    assert checked >= 2


def test_the_bin_of_the_mode_by_the_complement_equals_its_direct_sum(numpy_path):  # noqa: ARG001
    """A coarse grid (one bin holds almost all of the law): its mass by 1 − Σ others is the
    mpmath sum of its terms to rounding."""
    ctx = Ctx(10**8, 0.5)
    cm = CM.CMass(ctx)
    pts = np.array([0, round(ctx.c0 - 7.5 * ctx.sig_c), round(ctx.c0 + 7.5 * ctx.sig_c)])
    got = cm.bins(pts)
    with mp.workdps(40):
        # the exact complement: 1 minus the two other bins' masses (both tiny: ~e^{−30})
        lower = _mp_mass(ctx.N, 0.5, 0, int(pts[1]) - 1, cm.mode)
        upper = _mp_mass(ctx.N, 0.5, int(pts[2]), ctx.N, cm.mode)
        ref = float(mp.log(1 - lower - upper))
    assert ref - 1e-15 <= got[1] <= ref + 2.0**-59 + 1e-15


@pytest.mark.parametrize("n,eps0", [(10**8, 0.1), (10**7, 1.0), (10**6, 0.5), (2 * 10**6, 3.0)])
def test_truncated_sums_equal_the_whole_window_sum(n, eps0, numpy_path, monkeypatch):  # noqa: ARG001
    """The truncated sums (plus bounds, or the complement) against summing every term of W
    (Loader-anchored, as the masses were computed before): equal to rounding on every bin of the
    histogram engine's grid and of a fine grid."""
    from accountant.clones.histogram.engine import HistPlan
    from accountant.clones.routing import HIST_DESIGN

    ctx = Ctx(n, eps0)
    grids = [
        HistPlan(ctx, HIST_DESIGN).pts,
        np.unique(np.append(0, np.round(ctx.c0 + np.linspace(-11, 11, 301) * ctx.sig_c).astype(np.int64))),
    ]
    trunc = [CM.CMass(ctx).bins(p) for p in grids]
    monkeypatch.setattr(CM, "FULL_MAX", 10**9)
    full = [CM.CMass(ctx).bins(p) for p in grids]
    for t, f in zip(trunc, full):
        assert np.array_equal(np.isfinite(t), np.isfinite(f))
        ok = np.isfinite(f)
        np.testing.assert_allclose(t[ok], f[ok], rtol=1e-14, atol=2e-12)


@settings(max_examples=40, deadline=None)
@given(
    log_n=st.floats(math.log(2e4), math.log(1e8)),
    eps0=st.floats(1e-3, 20.0),
    zs=st.lists(st.floats(-60.0, 60.0), min_size=0, max_size=12),
    with_zero=st.booleans(),
)
def test_masses_cover_the_law_and_never_fall_below_the_whole_sum(log_n, eps0, zs, with_zero):
    """Any grid (with or without the point 0): every mass ≥ the whole-window sum of its terms to
    rounding, and the masses of the bins (with the mass below the first point) add up to ≥ 1."""
    ctx = Ctx(int(math.exp(log_n)), eps0)
    pts = np.round(ctx.c0 + np.array(zs) * max(ctx.sig_c, 1.0)).astype(np.int64)
    pts = np.unique(np.clip(np.append(pts, [0] if with_zero else []), 0, ctx.N)).astype(np.int64)
    if pts.size == 0:
        pts = np.array([0])
    cm = CM.CMass(ctx)
    got = cm.bins(pts)
    if cm.lpmf is None:
        ref = CM.CMass.__new__(CM.CMass)
        ref.__dict__.update(cm.__dict__)
        ref.lpmf = CM.log_binom_pmf_range(cm.lo, cm.hi, ctx.N, ctx.q, ctx.q1, block=32)
        whole = ref.bins(pts)
        assert np.all(got >= whole - 1e-12 * np.maximum(1.0, np.abs(whole)))
    below = math.exp(float(cm._tail(pts[:1] - 1, True)[0])) if pts[0] > 0 else 0.0
    assert float(np.exp(got).sum()) + below >= 1.0 - 1e-12


_HAS_NUMBA = True
try:
    import numba  # noqa: F401
except ImportError:
    _HAS_NUMBA = False


@pytest.mark.skipif(not _HAS_NUMBA, reason="numba not installed (the numpy path is used)")
@pytest.mark.parametrize("n,eps0", [(10**8, 0.1), (10**8, 7.5), (10**6, 0.5), (3 * 10**5, 2.0)])
def test_compiled_block_sums_equal_numpy(n, eps0):
    """The compiled block sums multiply the same ratios in the same order as the numpy path."""
    ctx = Ctx(n, eps0)
    pts = np.unique(np.append(0, np.round(ctx.c0 + np.linspace(-15, 15, 97) * ctx.sig_c).astype(np.int64)))
    pts = pts[pts <= ctx.N]
    was = compiled.available()
    try:
        compiled.use(False)
        ref = CM.CMass(ctx).bins(pts)
        assert compiled.use(True)
        got = CM.CMass(ctx).bins(pts)
    finally:
        compiled.use(was)
    np.testing.assert_allclose(got, ref, rtol=1e-15, atol=1e-15)


def test_an_instance_asked_again_gives_the_same_masses(numpy_path):  # noqa: ARG001
    """Bins are evaluated once per instance (the adaptive engine refines its grids): the masses
    of a grid do not depend on the grids asked for before, including the mode's bin left to the
    complement on a coarse grid and summed on its own where the complement is not certified."""
    ctx = Ctx(10**8, 0.5)
    z = [np.array([-40.0, -7.5, 7.5]), np.linspace(-9.0, 9.0, 37), np.array([-40.0, -7.5, -0.1, 0.1, 7.5])]
    grids = [np.unique(np.append(0, np.round(ctx.c0 + v * ctx.sig_c).astype(np.int64))) for v in z]
    grids.append(np.unique(np.append(grids[0], grids[0][-1] + 50)))  # a small change of a grid
    fresh = [CM.CMass(ctx).bins(p) for p in grids]
    cm = CM.CMass(ctx)
    for _ in range(2):
        for p, ref in zip(grids, fresh):
            np.testing.assert_array_equal(cm.bins(p), ref)
    cm = CM.CMass(ctx)
    for p, ref in zip(grids[::-1], fresh[::-1]):
        np.testing.assert_array_equal(cm.bins(p), ref)


def test_a_full_memo_starts_afresh(numpy_path, monkeypatch):  # noqa: ARG001
    """When the bins remembered would exceed the limit, the instance forgets them and evaluates
    the grid at hand whole: the same masses as a fresh instance."""
    monkeypatch.setattr(CM, "_MEMO_MAX", 40)
    ctx = Ctx(10**7, 1.0)
    grids = [
        np.unique(np.append(0, np.round(ctx.c0 + np.linspace(-9.0, 9.0, k) * ctx.sig_c).astype(np.int64)))
        for k in (25, 31, 26)
    ]
    cm = CM.CMass(ctx)
    for p in grids:
        np.testing.assert_array_equal(cm.bins(p), CM.CMass(ctx).bins(p))


def test_the_bin_of_the_mode_summed_when_the_complement_is_refused(numpy_path, monkeypatch):  # noqa: ARG001
    """The complement refused (forced here): the bin's own run is summed instead — the mpmath
    mass to rounding, now and when the instance is asked again."""
    ctx = Ctx(10**8, 0.5)
    pts = np.array([0, round(ctx.c0 - 7.5 * ctx.sig_c), round(ctx.c0 + 7.5 * ctx.sig_c)])
    with_complement = CM.CMass(ctx).bins(pts)
    monkeypatch.setattr(CM, "_complement", lambda *_: None)
    cm = CM.CMass(ctx)
    first, again = cm.bins(pts), cm.bins(pts)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first[[0, 2]], with_complement[[0, 2]])
    with mp.workdps(40):
        ref = float(mp.log(_mp_mass(ctx.N, 0.5, int(pts[1]), int(pts[2]) - 1, cm.mode)))
    assert ref - 1e-12 <= first[1] <= ref + 2.0**-59 + 1e-12
    assert first[1] == pytest.approx(with_complement[1], abs=1e-12)
