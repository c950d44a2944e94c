"""Differential tests: every formula against the independent 50-digit mpmath evaluation
(tests/accountant/mp_reference.py) on 240 random points (fixed seed):
n from 2 to 10⁹, ε0 from 0.01 to 10, integer and real orders from 1.5 to 500."""

import mpmath as mp
import numpy as np
import pytest

import accountant as A
from accountant.errors import BoundNotApplicable

from . import mp_reference as R

UPPER_RTOL = 1e-9
LOWER_RTOL = 1e-7


def _points(count, seed):
    rng = np.random.default_rng(seed)
    pts = []
    for _ in range(count):
        n = int(np.exp(rng.uniform(np.log(2), np.log(1e9))))
        eps0 = float(np.exp(rng.uniform(np.log(0.01), np.log(10))))
        a = float(rng.integers(2, 501)) if rng.random() < 0.5 else float(np.round(rng.uniform(1.5, 500), 3))
        pts.append((n, eps0, a))
    return pts


POINTS = _points(240, 20261126)


def _close(got, want, rtol):
    want = float(want)
    assert np.isfinite(got), got
    assert abs(got - want) <= rtol * abs(want) + 1e-300, (got, want, abs(got - want) / abs(want))


@pytest.mark.parametrize("chunk", range(24))
def test_shuffle_upper_bounds_match_mpmath(chunk):
    for n, eps0, a in POINTS[chunk * 10 : (chunk + 1) * 10]:
        o = [a]
        _close(A.shuffle_rdp(n, eps0, o, bound="u2")[0], R.u2(n, eps0, a), UPPER_RTOL)
        _close(A.shuffle_rdp(n, eps0, o, bound="cap")[0], R.cap(eps0, a), UPPER_RTOL)
        _close(A.shuffle_rdp(n, eps0, o, bound="thesis")[0], R.thesis_upper(n, eps0, a), UPPER_RTOL)
        _close(A.shuffle_rdp(n, eps0, o, bound="efm19")[0], R.efm19(n, eps0, a), UPPER_RTOL)
        if a == int(a):
            _close(A.shuffle_rdp(n, eps0, o, bound="u1")[0], R.u1(n, eps0, int(a)), UPPER_RTOL)
            _close(
                A.shuffle_rdp(n, eps0, o, bound="lower_simplified")[0],
                R.lower_simplified(n, eps0, int(a)),
                UPPER_RTOL,
            )
            if a**4 * np.exp(5 * eps0) < n / 9:
                _close(
                    A.shuffle_rdp(n, eps0, o, bound="u1_simplified")[0],
                    R.u1_simplified(n, eps0, int(a)),
                    UPPER_RTOL,
                )
            else:
                with pytest.raises(BoundNotApplicable, match="u1_simplified"):
                    A.shuffle_rdp(n, eps0, o, bound="u1_simplified")
        else:
            with pytest.raises(BoundNotApplicable, match="integer"):
                A.shuffle_rdp(n, eps0, o, bound="u1")
        if a <= n / (16 * eps0 * np.exp(eps0)):
            _close(A.shuffle_rdp(n, eps0, o, bound="fmt23")[0], R.fmt23(n, eps0, a), UPPER_RTOL)
        else:
            with pytest.raises(BoundNotApplicable, match="fmt23"):
                A.shuffle_rdp(n, eps0, o, bound="fmt23")


LOWER_POINTS = [(int(2 + (n % 1500)), e, a) for n, e, a in POINTS[:60]]


@pytest.mark.parametrize("chunk", range(6))
def test_exact_lower_matches_mpmath(chunk):
    for n, eps0, a in LOWER_POINTS[chunk * 10 : (chunk + 1) * 10]:
        _close(A.shuffle_rdp(n, eps0, [a], bound="lower")[0], R.rr_lower(n, eps0, 1, a), LOWER_RTOL)


def test_exact_lower_large_n_matches_mpmath_window():
    # n = 10⁶: the mpmath sum over K in a ±12σ window (the rest is below 1e-30 relative here)
    n, eps0, a = 10**6, 0.5, 20.0
    E = mp.e ** mp.mpf(eps0)
    p = 1 / (E + 1)
    mu, sd = n * p, mp.sqrt(n * p * (1 - p))
    lo, hi = int(mu - 12 * sd), int(mu + 12 * sd)
    fwd = rev = mp.mpf(0)
    logpmf0 = None
    for K in range(lo, hi + 1, 1):
        lw = (
            mp.loggamma(n + 1)
            - mp.loggamma(K + 1)
            - mp.loggamma(n - K + 1)
            + K * mp.log(p)
            + (n - K) * mp.log(1 - p)
        )
        w = mp.e**lw
        r = mp.mpf(K) / n * E + mp.mpf(n - K) / n / E
        fwd += w * r**a
        rev += w * r ** (1 - a)
        logpmf0 = lw
    want = max(mp.log(fwd), mp.log(rev)) / (a - 1)
    assert logpmf0 < -50
    _close(A.shuffle_rdp(n, eps0, [a], bound="lower")[0], want, 1e-6)


def _sub_points(count, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n = int(np.exp(rng.uniform(np.log(10), np.log(1e9))))
        k = int(max(2, min(n, round(n * np.exp(rng.uniform(np.log(1e-4), 0))))))
        eps0 = float(np.exp(rng.uniform(np.log(0.01), np.log(10))))
        a = int(rng.integers(2, 201))
        out.append((n, k, eps0, a))
    return out


SUB_POINTS = _sub_points(60, 7)


@pytest.mark.parametrize("chunk", range(6))
def test_subsampled_bounds_match_mpmath(chunk):
    for n, k, eps0, a in SUB_POINTS[chunk * 10 : (chunk + 1) * 10]:
        _close(A.subsampled_shuffle_rdp(n, k, eps0, [a], bound="su")[0], R.su(n, k, eps0, a), UPPER_RTOL)
        _close(
            A.subsampled_shuffle_rdp(n, k, eps0, [a], bound="cap")[0], R.sub_cap(n, k, eps0, a), UPPER_RTOL
        )
        if k <= 1500:
            _close(
                A.subsampled_shuffle_rdp(n, k, eps0, [a], bound="lower")[0],
                R.rr_lower(k, eps0, mp.mpf(k) / n, a),
                LOWER_RTOL,
            )


def test_conversion_matches_mpmath_on_random_curves():
    rng = np.random.default_rng(3)
    for _ in range(50):
        orders = np.sort(rng.uniform(1.02, 300, size=20))
        rdp = np.cumsum(rng.exponential(0.05, size=20))
        delta = float(10 ** rng.uniform(-12, -3))
        eps, _ = A.epsilon_from_rdp(orders, rdp, delta)
        _close(eps, R.conv_epsilon(orders, rdp, delta), 1e-12)


def test_exact_lower_keeps_relative_accuracy_for_tiny_likelihood_offsets():
    """Regression: with tiny γ or ε0 the summand (1+x)^β − 1 − βx cancelled (3e-4 relative error at
    k = 1, n = 4.4e6, ε0 = 1e-6); the binomial series is used there."""
    got = A.subsampled_shuffle_rdp(4405193, 1, 1e-6, [4], bound="lower")[0]
    _close(got, R.rr_lower(1, 1e-6, mp.mpf(1) / 4405193, 4), 1e-9)
    _close(A.shuffle_rdp(500, 0.001, [3.0], bound="lower")[0], R.rr_lower(500, 0.001, 1, 3.0), 1e-9)


def test_laplace_near_order_one_is_not_below_exact():
    for a in (1.0001, 1.001, 1.01, 1.5):
        got = A.event_rdp({"mechanism": "laplace", "scale": 1.0}, [a])[0]
        a_ = mp.mpf(a)
        exact = mp.log(a_ / (2 * a_ - 1) * mp.e ** (a_ - 1) + (a_ - 1) / (2 * a_ - 1) * mp.e ** (-a_)) / (
            a_ - 1
        )
        assert got >= float(exact) * (1 - 1e-15)
