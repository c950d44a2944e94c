"""Loader's binomial log-pmf and its block-anchored range form (accountant.numerics), against
50-digit mpmath: the error of log pmf is ≤ 2e-12 absolute (so ≤ 2e-12 relative on the pmf, far
inside the clone bound's 1e-11 rounding margin) wherever log pmf ≥ −40, and ≤ 1e-13 relative to
|log pmf| elsewhere; including p next to 1 and tiny n·(1 − p)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.numerics import log_binom_pmf, log_binom_pmf_range


def _close(got: np.ndarray, ref: np.ndarray) -> bool:
    tol = np.where(ref >= -40.0, 2e-12, 1e-13 * np.abs(ref) + 1e-14)
    return bool(np.all(np.abs(got - ref) <= tol))


def _mp_log_pmf(big_n: int, eps: float, ks) -> np.ndarray:
    with mp.workdps(50):
        p = mp.e ** (-mp.mpf(eps))
        return np.array(
            [float(mp.log(mp.binomial(big_n, k)) + k * mp.log(p) + (big_n - k) * mp.log(1 - p)) for k in ks]
        )


@pytest.mark.parametrize(
    "big_n,eps", [(4, 1e-6), (30, 1e-9), (50, 3.0), (1000, 0.5), (999_999, 2.0), (10**8 - 1, 7.5)]
)
def test_range_form_matches_mpmath_near_the_mode(big_n, eps):
    p, q1 = math.exp(-eps), -math.expm1(-eps)
    mode = big_n * p
    half = 12.0 * math.sqrt(big_n * p * q1) + 40.0
    lo, hi = int(max(0, mode - half)), int(min(big_n, mode + half))
    ks = np.unique(np.linspace(lo, hi, 80).astype(int))
    ref = _mp_log_pmf(big_n, eps, ks)
    got = log_binom_pmf_range(lo, hi, big_n, p, q1, block=32)[ks - lo]
    direct = log_binom_pmf(ks.astype(float), float(big_n), p, q1)
    assert _close(got, ref)
    assert _close(direct, ref)


@settings(max_examples=25, deadline=None)
@given(big_n=st.integers(1, 5000), eps=st.floats(1e-9, 12.0))
def test_endpoints_and_range_agree_with_mpmath(big_n, eps):
    """k = 0 and k = N in closed form (N·log(1 − p) with 1 − p never formed) and the range form
    anchored there: p next to 1 used to lose 1e-10 at k = 0."""
    p, q1 = math.exp(-eps), -math.expm1(-eps)
    ks = np.unique(np.array([0, 1, big_n // 2, max(big_n - 1, 0), big_n]))
    ref = _mp_log_pmf(big_n, eps, ks)
    got = log_binom_pmf_range(0, big_n, big_n, p, q1, block=32)[ks]
    assert _close(got, ref)
    assert _close(log_binom_pmf(ks.astype(float), float(big_n), p, q1), ref)
