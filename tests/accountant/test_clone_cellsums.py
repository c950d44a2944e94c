"""The exact engine's per-point sums over single cells (accountant.clones.exact.cellsums): the numpy
path against the dense log-sum-exp it replaces, the compiled φ-form against the numpy one (both
against 40-digit mpmath), and whole exact curves with and without the compiled kernels."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from accountant import clones as C
from accountant._numerics import log_phi, segment_logsumexp
from accountant.clones import compiled
from accountant.clones.exact import cellsums as CS
from accountant.orders import DEFAULT_ORDERS

ORDERS = np.asarray(DEFAULT_ORDERS, dtype=float)
ALPHAS = np.array([1.01, 1.1, 1.5, 1.99, 2.0, 3.0, 7.0, 50.0, 1000.0, 1e4])


def _dense(lm, g, starts, alphas, phi):
    """The sums as main_sums formed them: dense exponents, then segment_logsumexp."""
    a = alphas[:, None]
    main = lm[None, :] + (log_phi(a, g[None, :]) if phi else a * g[None, :])
    return segment_logsumexp(main, starts, axis=1).T


def _cells(seed: int, spread: float = 40.0, g_scale: float = 1.0, size: int = 400):
    """Random points of random cell counts: log-weights spanning ``spread`` nats, g of both
    signs (the tilt log R of a clone cell), g = 0 included."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 40, size=size // 20)
    n = int(counts.sum())
    lm = -rng.uniform(0.0, spread, n)
    g = g_scale * rng.uniform(-1.0, 1.0, n) ** 3
    g[rng.integers(0, n, 3)] = 0.0
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return lm, g, starts


CASES = [
    ("typical", 40.0, 1.0),
    ("wide weights", 900.0, 1.0),  # e^{lm − max} below e^{−700}: the compiled φ-form's log path
    ("large g", 40.0, 5.0),  # α·g > 600 for the large orders: log path again
    ("tiny g", 40.0, 1e-170),  # φ ≈ α(α−1)g²/2 underflows in linear space: log path
    ("small g", 40.0, 1e-4),
]


@pytest.mark.parametrize("phi", [False, True])
@pytest.mark.parametrize("name,spread,g_scale", CASES)
def test_numpy_sums_equal_the_dense_log_sum_exp(name, spread, g_scale, phi):  # noqa: ARG001
    lm, g, starts = _cells(7, spread, g_scale)
    was = compiled.available()
    compiled.use(False)
    try:
        got = CS.cell_logsums(lm, g, starts, ALPHAS, phi)
    finally:
        compiled.use(was)
    ref = _dense(lm, g, starts, ALPHAS, phi)
    assert np.array_equal(np.isfinite(got), np.isfinite(ref))
    ok = np.isfinite(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=1e-15, atol=1e-15)


def _mp_phi(a, x):
    """φ_a(e^x) in the working precision: the series Σ_{k≥2} (a^k − a)·x^k/k! for |a·x| < 1 (no
    cancellation however small x is), else the closed form."""
    if abs(a * x) >= 1:
        return mp.e ** (a * x) - 1 - a * (mp.e**x - 1)
    tot, k, xk = mp.mpf(0), 2, x * x / 2
    while True:
        t = (a**k - a) * xk
        tot += t
        if abs(t) <= abs(tot) * mp.mpf(10) ** (-mp.mp.dps):
            return tot
        k += 1
        xk = xk * x / k


def _mp_phi_sum(lm, g, a) -> float:
    with mp.workdps(40):
        tot = mp.mpf(0)
        for lw, x in zip(lm, g):
            tot += mp.e ** mp.mpf(float(lw)) * _mp_phi(a, mp.mpf(float(x)))
        return float(mp.log(tot))


@pytest.mark.parametrize("name,spread,g_scale", CASES)
def test_numpy_phi_sums_match_mpmath(name, spread, g_scale):  # noqa: ARG001
    lm, g, starts = _cells(11, spread, g_scale, size=120)
    was = compiled.available()
    compiled.use(False)
    try:
        got = CS.cell_logsums(lm, g, starts, ALPHAS, True)
    finally:
        compiled.use(was)
    ends = np.append(starts[1:], lm.size)
    for j in range(0, starts.size, 2):
        for k, a in enumerate(ALPHAS):
            ref = _mp_phi_sum(lm[starts[j] : ends[j]], g[starts[j] : ends[j]], mp.mpf(float(a)))
            assert got[j, k] == pytest.approx(ref, rel=1e-13, abs=1e-13), (j, a)


_HAS_NUMBA = True
try:
    import numba  # noqa: F401
except ImportError:
    _HAS_NUMBA = False
_fast = pytest.mark.skipif(not _HAS_NUMBA, reason="numba not installed (the numpy path is used)")


@_fast
@pytest.mark.parametrize("name,spread,g_scale", CASES)
def test_compiled_phi_sums_equal_numpy(name, spread, g_scale):  # noqa: ARG001
    lm, g, starts = _cells(3, spread, g_scale)
    was = compiled.available()
    try:
        compiled.use(False)
        ref = CS.cell_logsums(lm, g, starts, ALPHAS, True)
        assert compiled.use(True)
        got = CS.cell_logsums(lm, g, starts, ALPHAS, True)
    finally:
        compiled.use(was)
    assert np.array_equal(np.isfinite(got), np.isfinite(ref))
    ok = np.isfinite(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=1e-13, atol=1e-13)


@_fast
@pytest.mark.parametrize("n,eps0", [(100, 0.1), (100, 0.5), (100, 1.0), (40, 1e-6), (700, 5.0)])
def test_exact_curves_equal_with_and_without_the_compiled_kernels(n, eps0):
    was = compiled.available()
    try:
        compiled.use(False)
        ref = C.clone_rdp(n, eps0, ORDERS, engine="exact")
        assert compiled.use(True)
        got = C.clone_rdp(n, eps0, ORDERS, engine="exact")
    finally:
        compiled.use(was)
    np.testing.assert_allclose(got, ref, rtol=1e-13)
