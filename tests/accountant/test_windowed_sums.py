"""The windowed log-concave ragged sums (accountant._numerics.ragged_logsumexp with ``concave``):
exact sums with a known value, the full (unwindowed) sum of U1 and SU, and 50-digit mpmath at
orders up to 10⁴; the neglected tails are bounded, never dropped."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from accountant import _numerics as N
from accountant import shuffle as sh
from accountant import subsampled as ss

from . import mp_reference as R

BIG_ORDERS = np.array([2, 3, 50, 128, 129, 130, 131, 200, 777, 1000, 4097, 10_000, 100_000], dtype=np.int64)


def _full(monkeypatch, fn, *args):
    """``fn(*args)`` with every order summed over its whole range."""
    with monkeypatch.context() as m:
        m.setattr(N, "WINDOW_MIN", 10**12)
        return fn(*args)


def _binomial_part(p: float):
    """log C(α,i)·p^i·(1−p)^{α−i}: log-concave in i, summing to exactly 1 over i = 0..α."""
    lfact = N.int_tables(200_000)[0]

    def term(i, ami):
        return lfact[i + ami] - lfact[i] - lfact[ami] + i * math.log(p) + ami * math.log1p(-p)

    return term


def _geometric_part(q: float):
    """log q^i: log-linear (ratio q everywhere), Σ_{i=0..α} q^i = (1 − q^{α+1})/(1 − q)."""

    def term(i, ami):  # noqa: ARG001 - a RaggedTerm takes (i, α − i)
        return i * math.log(q)

    return term


@pytest.mark.parametrize("p", [1e-4, 0.003, 0.2, 0.5, 0.97])
def test_binomial_sum_is_one_over_small_windows(monkeypatch, p):
    term = _binomial_part(p)
    got = N.ragged_logsumexp(BIG_ORDERS, 0, term, concave=((0, term),))
    full = _full(monkeypatch, N.ragged_logsumexp, BIG_ORDERS, 0, term, ((0, term),))
    # log 1 = 0 up to the rounding of log α! − log i! − log (α−i)! (≈ 1e-10 at α = 10⁵)
    np.testing.assert_allclose(got, 0.0, atol=1e-9)
    assert np.all(got >= full - 1e-15) and np.all(got <= full + 1e-15)
    lo, hi, tail = N.concave_windows(BIG_ORDERS, 0, ((0, term),))
    big = BIG_ORDERS + 1 > N.WINDOW_MIN
    assert np.all(lo[~big] == 0) and np.all(hi[~big] == BIG_ORDERS[~big]) and np.all(tail[~big] == -np.inf)
    # a binomial's mass lies within a few standard deviations: O(√α) terms, not α
    sd = np.sqrt(BIG_ORDERS * p * (1 - p))
    assert np.all((hi - lo + 1)[big] <= 40 * sd[big] + 2 * BIG_ORDERS[big] / 64 + 10)
    assert (hi - lo + 1)[-1] < 6_000  # α = 10⁵


@pytest.mark.parametrize("bits", [4, 8, 20])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.999])
def test_neglected_tails_are_bounded_not_dropped(monkeypatch, bits, q):
    """With tails allowed up to 2^-bits of the largest term, the result still bounds the exact
    sum from above (a dropped tail would fall visibly short of it)."""
    monkeypatch.setattr(N, "TAIL_BITS", bits)
    term = _geometric_part(q)
    got = N.ragged_logsumexp(BIG_ORDERS, 0, term, concave=((0, term),))
    with mp.workdps(40):
        ref = [mp.log((1 - mp.mpf(q) ** (int(a) + 1)) / (1 - mp.mpf(q))) for a in BIG_ORDERS]
    for g, r in zip(got, ref):
        assert g >= float(r) - 4e-16 * max(1.0, abs(float(r)))
        assert g <= float(r) + 2.0 ** (1 - bits) + 1e-15
    lo, hi, _ = N.concave_windows(BIG_ORDERS, 0, ((0, term),))
    assert hi[-1] < BIG_ORDERS[-1]  # the window did cut


def test_binomial_tails_with_a_coarse_threshold(monkeypatch):
    monkeypatch.setattr(N, "TAIL_BITS", 6)
    term = _binomial_part(0.01)
    got = N.ragged_logsumexp(BIG_ORDERS, 0, term, concave=((0, term),))
    assert np.all(got >= -1e-9)  # log 1, up to the rounding of the log-factorials
    assert np.all(got <= 2.0**-3)
    assert np.any(got > 1e-6)  # the (coarse) tails were added


def _random_params(seed, count):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n = int(np.exp(rng.uniform(np.log(2), np.log(1e9))))
        eps0 = float(np.exp(rng.uniform(np.log(0.01), np.log(10))))
        k = int(min(n, max(2, round(n * np.exp(rng.uniform(np.log(1e-5), 0.0))))))
        out.append((n, k, eps0))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_windowed_u1_and_su_equal_the_full_sums(monkeypatch, seed):
    """Against the same sums over every i (rounding-level agreement, never below it)."""
    for n, k, eps0 in _random_params(seed, 15) + [(1000, 1000, 2.0), (10**6, 1000, 2.0), (10**6, 10**6, 0.5)]:
        got_u1 = sh._u1_int(n, eps0, BIG_ORDERS)
        full_u1 = _full(monkeypatch, sh._u1_int, n, eps0, BIG_ORDERS)
        got_su = ss._su_int(n, k, eps0, BIG_ORDERS) if k >= 2 else None
        full_su = _full(monkeypatch, ss._su_int, n, k, eps0, BIG_ORDERS)
        for got, full in ((got_u1, full_u1), (got_su, full_su)):
            assert np.all(np.isfinite(got))
            assert np.all(got >= full * (1 - 2.0**-50)), (n, k, eps0)
            assert np.all(got <= full * (1 + 2.0**-50)), (n, k, eps0)


def test_headline_windows_are_small(monkeypatch):
    """U1 of 1,000 users at ε0 = 2 and SU of the subsampled headline on the integers of the
    default grid: ~8% of the Σ(α − 2) terms of the full sums."""
    import accountant as A

    o = np.asarray(A.DEFAULT_ORDERS, dtype=float)
    ints = np.unique(np.concatenate([np.floor(o[o >= 2]), np.ceil(o)])).astype(np.int64)
    seen = []

    def spy(ords, start, parts):
        lo, hi, tail = real(ords, start, parts)
        seen.append(((hi - lo + 1).sum(), (ords - start + 1).sum()))
        return lo, hi, tail

    real = N.concave_windows
    monkeypatch.setattr(N, "concave_windows", spy)
    sh._u1_int(1000, 2.0, ints)
    ss._su_int(10**6, 1000, 2.0, ints)
    assert len(seen) == 2
    for kept, full in seen:
        assert full > 90_000 and kept < 0.12 * full


@pytest.mark.parametrize(
    "n,eps0,alpha", [(1000, 2.0, 10_000), (10**6, 0.5, 10_000), (10**6, 0.5, 300), (50, 5.0, 3000)]
)
def test_u1_matches_mpmath_at_large_orders(n, eps0, alpha):
    ref = float(R.u1(n, eps0, alpha))
    got = sh.u1(n, eps0, [alpha])[0]
    assert ref <= got <= ref * (1 + 1e-11)


@pytest.mark.parametrize(
    "n,k,eps0,alpha", [(10**6, 1000, 2.0, 10_000), (10**6, 1000, 2.0, 500), (10**4, 5000, 4.0, 3000)]
)
def test_su_matches_mpmath_at_large_orders(n, k, eps0, alpha):
    ref = float(R.su(n, k, eps0, alpha))
    got = ss.su(n, k, eps0, [alpha])[0]
    assert ref <= got <= ref * (1 + 1e-11)


def test_orders_of_any_shape():
    o = np.array([[2, 3, 200], [5000, 129, 10_000]])
    np.testing.assert_array_equal(sh.u1(1000, 1.0, o), sh.u1(1000, 1.0, o.ravel()).reshape(o.shape))
    np.testing.assert_array_equal(
        ss.su(10**5, 1000, 1.0, o), ss.su(10**5, 1000, 1.0, o.ravel()).reshape(o.shape)
    )
