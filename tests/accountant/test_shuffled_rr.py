"""Shuffled binary randomized response at the worst split (accountant/shuffled_rr.py; bounds.md §13).

Expected values are exact divergences computed here independently: mpmath sums over the count of
reported ones (40 digits), or scipy's binomial pmfs convolved directly (no FFT) — never the module's
own brackets.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

import accountant
from accountant import shuffled_rr as S
from accountant.conversion import epsilon_from_rdp
from accountant.orders import DEFAULT_ORDERS


def split_pair(n: int, ones: int, eps0: float) -> tuple[np.ndarray, np.ndarray]:
    """P (changed user holds 1), Q (holds 0): laws of the count of ones, ``ones`` of the n − 1 others
    holding 1 — direct convolution of scipy's binomial pmfs."""
    r = 1.0 / (math.exp(eps0) + 1.0)
    zeros = n - 1 - ones
    s = np.convolve(binom.pmf(np.arange(zeros + 1), zeros, r), binom.pmf(np.arange(ones + 1), ones, 1 - r))
    p, q = np.zeros(n + 1), np.zeros(n + 1)
    p[1:] += (1 - r) * s
    p[:-1] += r * s
    q[1:] += r * s
    q[:-1] += (1 - r) * s
    return p, q


def hockey(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    return float(np.maximum(p - math.exp(eps) * q, 0.0).sum())


def sup_over_splits(n: int, eps0: float, eps: np.ndarray) -> np.ndarray:
    """max over every split and both directions of the exact hockey-stick divergence."""
    out = np.zeros(eps.size)
    for ones in range(n):
        p, q = split_pair(n, ones, eps0)
        for a, b in ((p, q), (q, p)):
            out = np.maximum(out, [hockey(a, b, e) for e in eps])
    return out


def split_mp(n: int, ones: int, eps0: float) -> tuple[list, list]:
    """The same pair in 40-digit arithmetic."""
    mp.mp.dps = 40
    E = mp.e ** mp.mpf(eps0)
    r = 1 / (E + 1)
    q = 1 - r
    zeros = n - 1 - ones
    a = [mp.binomial(zeros, j) * r**j * q ** (zeros - j) for j in range(zeros + 1)]
    b = [mp.binomial(ones, j) * q**j * r ** (ones - j) for j in range(ones + 1)]
    s = [mp.fsum(a[j] * b[y - j] for j in range(max(0, y - ones), min(zeros, y) + 1)) for y in range(n)]
    s_ = [mp.mpf(0)] + s + [mp.mpf(0)]
    P = [q * s_[y] + r * s_[y + 1] for y in range(n + 1)]
    Q = [r * s_[y] + q * s_[y + 1] for y in range(n + 1)]
    return P, Q


EPS = np.array([-0.6, -0.1, 0.0, 0.03, 0.1, 0.25, 0.5, 0.9, 1.4, 1.9])


@pytest.mark.parametrize("n, eps0", [(1, 1.0), (2, 1.0), (7, 3.0), (40, 0.7), (120, 2.0), (256, 0.5)])
def test_every_split_exactly_up_to_256_users(n, eps0):
    """Up to 256 users every split is its own representative: the curve is the supremum of the
    exact curves, never below it and within 1e-8 of it where it is above 1e-200."""
    eps = EPS[np.abs(EPS) < eps0]  # at ±ε0 and beyond the curve is exact (1 − e^ε, 0)
    got = S.split_curve(n, eps0).delta(eps)
    want = sup_over_splits(n, eps0, eps)
    assert np.all(got >= want * (1 - 1e-13) - 1e-300), (got, want)
    big = want > 1e-200
    assert np.all(got[big] <= want[big] * (1 + 1e-8)), (got, want)


@pytest.mark.parametrize(
    "n, eps0, ones", [(30, 1.0, 27), (64, 2.5, 32), (200, 0.4, 0), (6, 40.0, 3), (300, 38.0, 150)]
)
def test_split_curve_against_40_digits(n, eps0, ones):
    """The 40-digit hockey-stick divergence of a split (both directions) is below the curve —
    also at ε0 = 38–40, where 1 − r is 1 in floating point (the reports of the users holding 1 are
    built as reflected Bin(m, r), never from a rounded 1 − r)."""
    P, Q = split_mp(n, ones, eps0)
    eps = np.concatenate([EPS, [10.0, 25.0, 37.0, 39.5]])
    eps = eps[np.abs(eps) < eps0]
    got = S.split_curve(n, eps0).delta(eps)
    for e, g in zip(eps.tolist(), got.tolist()):
        x = mp.e ** mp.mpf(e)
        for a, b in ((P, Q), (Q, P)):
            exact = mp.fsum(max(pa - x * qb, 0) for pa, qb in zip(a, b))
            assert g >= float(exact) * (1 - 1e-14), (e, g, exact)


def test_the_cover_holds_every_split_beyond_256_users():
    """n = 700: representatives (w users per interval, a blanket count kept) — the curve is above
    the exact curve of EVERY split in both directions (the cover is the new argument to check),
    within 2% of their supremum where δ > 1e-3 (the cover's cost; in the tail it grows)."""
    n, eps0 = 700, 1.5
    c = S.split_curve(n, eps0)
    assert c.cover > 1
    eps = np.array([-0.3, 0.0, 0.05, 0.15, 0.3, 0.5, 0.8])
    got = c.delta(eps)
    want = sup_over_splits(n, eps0, eps)
    assert np.all(got >= want * (1 - 1e-12)), got / want
    assert np.all(got[want > 1e-3] <= want[want > 1e-3] * 1.02), got / want


def test_pmf_anchor_is_within_its_stated_error():
    """scipy's binomial pmf at the mode against 40 digits (the module assumes 1e-12 relative)."""
    mp.mp.dps = 40
    for m, p in ((10, 0.3), (1000, 0.1192), (10**6, 0.3775), (10**8, 0.0180), (123457, 0.5)):
        k = math.floor((m + 1) * p)
        exact = mp.binomial(m, k) * mp.mpf(p) ** k * (1 - mp.mpf(p)) ** (m - k)
        got = binom.pmf(k, m, p)
        assert abs(got / exact - 1) < S._ANCHOR / 10, (m, p)


@pytest.mark.parametrize("ones", [0, 500, 1300])
def test_pmf_brackets_hold_the_exact_pmf_into_the_far_tails(ones):
    """The FFT brackets (three tilts) contain the 40-digit pmf of S at points from the far lower
    to the far upper tail — up to the mass the factors' windows leave out (``tails``, < 1e-39), the
    only part the brackets do not hold — and are relatively tight (1e-6) within 9 standard deviations."""
    n, eps0 = 2001, 1.0
    r = 1.0 / (math.exp(eps0) + 1.0)
    A = n - 1
    parts = [(np.array([A - ones]), r, False), (np.array([ones]), r, True), (np.array([0]), 0.5, False)]
    sd = math.sqrt(A * r * (1 - r))
    s_lo, s_hi, tails, _ = S._pmf_bracket(parts, sd)
    assert tails[0] < 1e-39
    f = S._factor(np.array([A - ones]), r, (0.0,))
    g = S._factor(np.array([ones]), r, (0.0,), reflect=True)
    y0 = int(f.lo[0] + g.lo[0])
    mean = (A - ones) * r + ones * (1 - r)
    mp.mp.dps = 40
    R = mp.mpf(1) / (mp.e ** mp.mpf(eps0) + 1)
    for k in (-14, -11, -9, -5, 0, 3, 8, 11, 14):
        y = int(round(mean + k * sd))
        i = y - y0
        if not 0 <= i < s_lo.shape[1]:
            continue
        exact = mp.fsum(
            mp.binomial(A - ones, j)
            * R**j
            * (1 - R) ** (A - ones - j)
            * mp.binomial(ones, y - j)
            * (1 - R) ** (y - j)
            * R ** (ones - y + j)
            for j in range(max(0, y - ones), min(A - ones, y) + 1)
        )
        lo, hi = s_lo[0, i], s_hi[0, i]
        assert lo <= float(exact) * (1 + 1e-15) and float(exact) <= hi * (1 + 1e-15) + tails[0], (
            k,
            lo,
            exact,
            hi,
        )
        if abs(k) <= 9:
            assert hi <= lo * (1 + 1e-6), (k, lo, hi)


def exact_split_rdp(n: int, ones: int, eps0: float, orders: np.ndarray) -> np.ndarray:
    """The exact Rényi divergence of one split, both directions (log-space sums of the direct pmfs)."""
    p, q = split_pair(n, ones, eps0)
    keep = (p > 0) & (q > 0)
    lp, lq = np.log(p[keep]), np.log(q[keep])
    return np.max(
        [
            [np.logaddexp.reduce(al * a + (1 - al) * b) / (al - 1) for al in orders]
            for a, b in ((lp, lq), (lq, lp))
        ],
        axis=0,
    )


@settings(max_examples=6, deadline=None)
@given(st.integers(2, 60), st.floats(0.05, 6.0))
def test_split_rdp_is_above_every_split(n, eps0):
    """The RDP of the splits (orders ≤ RDP_MAX_ORDER) is above the exact Rényi divergence of every
    split in both directions (log-space sums of the direct pmfs) and within 1% of their maximum."""
    orders = np.array([1.5, 2.0, 4.0, 10.0, 40.0])
    got = S.split_rdp(n, eps0, orders)
    want = np.max([exact_split_rdp(n, ones, eps0, orders) for ones in range(n)], axis=0)
    assert np.all(got >= want * (1 - 1e-9)), (got, want)
    assert np.all(got <= want * 1.01 + 1e-12), (got, want)


@pytest.mark.parametrize(("n", "eps0"), [(700, 0.5), (700, 2.0), (300, 1.0)])
def test_split_rdp_holds_every_split_up_to_order_256(n, eps0):
    """Beyond 256 users (the cover) and up to the largest order, the splits' RDP is above every
    split's exact divergence and within 20% of the largest (2% up to order 10): the windows'
    far tails are bounded by Darroch's rule and Chernoff (bernoulli_sums), not at the loss ε0 —
    which made order 256 at n = 700, ε0 = 0.5 three times too large."""
    orders = np.array([1.5, 2.0, 4.0, 10.0, 50.0, 128.0, 256.0])
    got = S.split_rdp(n, eps0, orders)
    want = np.max([exact_split_rdp(n, ones, eps0, orders) for ones in range(n)], axis=0)
    assert np.all(got >= want * (1 - 1e-9)), (got, want)
    assert np.all(got <= want * 1.2), got / want
    assert np.all(got[:4] <= want[:4] * 1.02), got / want


@pytest.mark.parametrize(("zeros", "ones", "eps0"), [(40, 20, 1.0), (300, 0, 0.5), (5, 90, 3.0)])
def test_segments_bound_a_whole_count_at_every_order(zeros, ones, eps0):
    """The segments that bound the blanket mixture's pair (the count without the blanket's coins,
    over its whole range: mass ≤ 1 up to its mean at loss ≤ 0, then Darroch's ratio bound and
    Chernoff's mass bound) are above the exact Σ_y P^α Q^{1−α} of that pair (changed user 1 vs 0)."""
    r = 1.0 / (math.exp(eps0) + 1.0)
    parts = [(np.array([zeros]), r, False), (np.array([ones]), r, True)]
    tl = S._tilts(parts, 1, eps0)[0]
    logm, ell = S._segments(tl, np.zeros(1), None, r, eps0)
    n = zeros + ones + 1
    for al in (1.5, 2.0, 10.0, 64.0, 256.0):
        bound = np.logaddexp.reduce(logm[0] + (al - 1) * ell[0])
        p, q = split_pair(n, ones, eps0)
        keep = (p > 0) & (q > 0)
        exact = np.logaddexp.reduce(al * np.log(p[keep]) + (1 - al) * np.log(q[keep]))
        assert bound >= exact, (al, bound, exact)


def all_zeros_rdp(n: int, eps0: float, orders: np.ndarray) -> np.ndarray:
    """D_α of the pair with every other user holding 0 (both directions), from the binomial's exact
    ratio t(y) = s(y−1)/s(y) = y·q/((N − y + 1)·r) in log space: Σ_y s(y)·(q·t + r)·e^{(α−1)ℓ(y)},
    ℓ = log((q·t + r)/(r·t + q)), over ±40 standard deviations, scipy's pmf renormalised there."""
    r = 1.0 / (math.exp(eps0) + 1.0)
    q, N = 1.0 - r, n - 1
    sd = math.sqrt(N * r * q)
    y = np.arange(max(1, int(N * r - 40 * sd)), min(N, int(N * r + 40 * sd))).astype(np.float64)
    ls = binom.logpmf(y, N, r)
    ls -= np.logaddexp.reduce(ls)
    lt = np.log(y * q) - np.log((N - y + 1) * r)
    t = np.exp(lt)
    out = []
    for al in orders:
        d = []
        for up, down in (((q, r), (r, q)), ((r, q), (q, r))):  # changed user 1 vs 0, then 0 vs 1
            lp = ls + np.log(up[0] * t + up[1])
            lq = ls + np.log(down[0] * t + down[1])
            d.append(np.logaddexp.reduce(al * lp + (1 - al) * lq) / (al - 1))
        out.append(max(d))
    return np.array(out)


def test_split_rdp_at_ten_million_users_up_to_order_256():
    """At n = 10⁷, ε0 = 1 (issue 24's RDP gap: its optimal order is ≈ 150, where the windows' 10⁻⁴⁰
    tails counted at the loss ε0 had made the bound useless) the splits' RDP is above the exact
    all-zeros pair's at every order from 10 to 256 and within 2% of it; so is the RDP route's ε."""
    orders = np.array([10.0, 32.0, 64.0, 128.0, 160.0, 200.0, 256.0])
    got = S.split_rdp(10**7, 1.0, orders)
    want = all_zeros_rdp(10**7, 1.0, orders)
    assert np.all(got >= want), got / want
    assert np.all(got <= want * 1.02), got / want
    grid = DEFAULT_ORDERS[(DEFAULT_ORDERS > 1) & (DEFAULT_ORDERS <= 256)]
    ev = [{"mechanism": "shuffle_rr", "n": 10**7, "epsilon0": 1.0, "count": 10**4}]
    got_eps = accountant.epsilon(ev, 1e-8, accounting="rdp")[0]
    want_eps = epsilon_from_rdp(grid, 10**4 * all_zeros_rdp(10**7, 1.0, grid), 1e-8)[0]
    assert want_eps <= got_eps <= 1.02 * want_eps, (got_eps, want_eps)


def test_shuffle_rr_binary_uses_the_splits_and_k_ary_does_not():
    ev = accountant.event_from_dict({"mechanism": "shuffle_rr", "n": 5000, "epsilon0": 2.0})
    assert ev.dominating_pair().key[0] == "shuffled_binary_rr"
    k3 = accountant.event_from_dict({"mechanism": "shuffle_rr", "n": 5000, "epsilon0": 2.0, "categories": 3})
    assert k3.dominating_pair().key[0] != "shuffled_binary_rr"
    src = ev.curve_sources(DEFAULT_ORDERS)[0]
    assert "shuffled_rr" in src


def exact_split_epsilon(n: int, eps0: float, T: int, delta: float, ones: int = 0) -> tuple[float, float]:
    """(optimistic, pessimistic) ε of T rounds of the exact pair with ``ones`` of the other users
    holding 1 (both directions), by dp_accounting's PLD of the pair's pmfs (its own discretisation)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    p, q = split_pair(n, ones, eps0)
    out = []
    for pessimistic in (False, True):
        dists = []
        for a, b in ((p, q), (q, p)):
            keep = (a > 0) & (b > 0)
            idx = np.flatnonzero(keep).tolist()
            dists.append(
                pld.from_two_probability_mass_functions(
                    dict(zip(idx, np.log(b[keep]).tolist())),  # lower: the second law
                    dict(zip(idx, np.log(a[keep]).tolist())),  # upper: the first
                    pessimistic_estimate=pessimistic,
                    value_discretization_interval=1e-4,
                    symmetric=False,
                )
            )
        eps = max(d.self_compose(T).get_epsilon_for_delta(delta) for d in dists)
        out.append(eps)
    return out[0], out[1]


@pytest.mark.slow
def test_issue_point_within_two_percent_of_the_exact_loss():
    """Issue 24's third point (n = 10⁴, ε0 = 4, T = 100, δ = 1e-8): the default answer is within 2% of
    the exact shuffled binary RR with every other user holding 0 and never below its optimistic PLD;
    the RDP route within 8%."""
    n, eps0, T, delta = 10**4, 4.0, 100, 1e-8
    ev = [{"mechanism": "shuffle_rr", "n": n, "epsilon0": eps0, "count": T}]
    best = accountant.epsilon(ev, delta)[0]
    rdp = accountant.epsilon(ev, delta, accounting="rdp")[0]
    lo, hi = exact_split_epsilon(n, eps0, T, delta)
    assert best >= lo
    assert best <= 1.02 * hi, (best, hi)
    assert rdp <= 1.08 * hi, (rdp, hi)


@pytest.mark.parametrize("T", [1, 20])
def test_pld_route_against_exact_splits_beyond_256_users(T):
    """The split curve's own PLD, checked directly where the cover is in use (n = 700, ε0 = 2,
    δ = 1e-6): the default answer is never below dp_accounting's optimistic PLD of five exact splits
    (all 0, a quarter, half, three quarters, all 1 holding 1; both directions) and within 1.5% of the
    largest pessimistic one."""
    n, eps0, delta = 700, 2.0, 1e-6
    best = accountant.epsilon([{"mechanism": "shuffle_rr", "n": n, "epsilon0": eps0, "count": T}], delta)[0]
    exact = [exact_split_epsilon(n, eps0, T, delta, ones) for ones in (0, 175, 350, 525, 699)]
    assert best >= max(lo for lo, _ in exact), (best, exact)
    assert best <= 1.015 * max(hi for _, hi in exact), (best, exact)


def test_reports_of_ones_at_large_eps0_keep_their_flip_probability():
    """At ε0 = 40, r ≈ 4e-18 and 1 − r is 1 in floating point: the users holding 1 are built as
    m − Bin(m, r) (reflected), so the chance that one of them reports 0 (≈ m·r) is kept — in the
    window or in the tail mass — rather than lost to a rounded Bin(m, 1.0)."""
    r = 1.0 / (math.exp(40.0) + 1.0)
    m = 1000
    f = S._factor(np.array([m]), r, (0.0,), reflect=True)
    below_m = float(f.tails[0]) + (f.hi[0] - f.lo[0] > 0) * 1.0  # mass off m is in the tails or the window
    assert f.hi[0] == m
    assert below_m >= 0.99 * m * r
