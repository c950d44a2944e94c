"""Property tests (hypothesis) of the bounds: ordering, monotonicity, convexity, finiteness."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import accountant as A

SET = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ns = st.integers(min_value=2, max_value=10**6)
eps0s = st.floats(min_value=0.01, max_value=8.0)
orders_st = st.lists(st.floats(min_value=1.05, max_value=400.0), min_size=1, max_size=6)


@SET
@given(n=st.integers(min_value=2, max_value=20_000), eps0=eps0s, orders=orders_st)
def test_default_upper_never_below_exact_lower(n, eps0, orders):
    up = A.shuffle_rdp(n, eps0, orders)
    lo = A.shuffle_rdp(n, eps0, orders, bound="lower")
    assert np.all(up >= lo * (1 - 1e-9)), (up, lo)


@SET
@given(
    n=st.integers(min_value=10, max_value=10**6),
    frac=st.floats(1e-3, 1.0),
    eps0=eps0s,
    orders=st.lists(st.integers(2, 200), min_size=1, max_size=4),
)
def test_subsampled_upper_never_below_exact_lower(n, frac, eps0, orders):
    k = max(2, min(n, int(n * frac)))
    if k > 20_000:
        k = 20_000
    up = A.subsampled_shuffle_rdp(n, k, eps0, orders)
    lo = A.subsampled_shuffle_rdp(n, k, eps0, orders, bound="lower")
    assert np.all(up >= lo * (1 - 1e-9)), (up, lo)


@SET
@given(n=ns, factor=st.floats(1.0, 100.0), eps0=eps0s, orders=orders_st)
def test_upper_non_increasing_in_n(n, factor, eps0, orders):
    n2 = int(n * factor)
    a = A.shuffle_rdp(n, eps0, orders)
    b = A.shuffle_rdp(n2, eps0, orders)
    assert np.all(b <= a * (1 + 1e-9)), (a, b)


@SET
@given(n=ns, eps0=eps0s, bump=st.floats(0.0, 3.0), orders=orders_st)
def test_upper_non_decreasing_in_epsilon0(n, eps0, bump, orders):
    a = A.shuffle_rdp(n, eps0, orders)
    b = A.shuffle_rdp(n, eps0 + bump, orders)
    assert np.all(b >= a * (1 - 1e-9)), (a, b)


@SET
@given(n=ns, eps0=eps0s)
def test_alpha_minus_one_times_upper_is_convex_on_the_grid(n, eps0):
    o = A.DEFAULT_ORDERS
    y = (o - 1) * A.shuffle_rdp(n, eps0, o)
    x = np.concatenate([[1.0], o])
    y = np.concatenate([[0.0], y])
    slopes = np.diff(y) / np.diff(x)
    assert np.all(np.diff(slopes) >= -1e-9 * np.maximum(1.0, np.abs(slopes[1:]))), slopes


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=10**12),
    eps0=st.floats(0.0, 20.0),
    orders=st.lists(st.floats(min_value=1.0001, max_value=1e5), min_size=1, max_size=5),
    count=st.integers(1, 10**8),
)
def test_never_nan_inf_or_negative(n, eps0, orders, count):
    ev = {"mechanism": "shuffle", "n": n, "epsilon0": eps0, "count": count}
    r = A.event_rdp(ev, orders)
    assert np.all(np.isfinite(r)) and np.all(r >= 0), r
    lo = A.shuffle_rdp(n, eps0, orders, bound="lower") if n <= 10**9 else np.zeros(1)
    assert np.all(np.isfinite(lo)) and np.all(lo >= 0)
    eps, order = A.epsilon([ev], 1e-6)
    assert np.isfinite(eps) and eps >= 0 and order > 1


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=10**12),
    frac=st.floats(1e-6, 1.0),
    eps0=st.floats(0.0, 20.0),
    count=st.integers(1, 10**8),
)
def test_subsampled_never_nan_inf_or_negative(n, frac, eps0, count):
    k = max(1, min(n, int(n * frac)))
    ev = {"mechanism": "subsampled_shuffle", "n": n, "k": k, "epsilon0": eps0, "count": count}
    r = A.event_rdp(ev, [1.5, 2, 10, 1000])
    assert np.all(np.isfinite(r)) and np.all(r >= 0), r


def test_epsilon0_zero_is_zero_privacy_loss():
    assert np.all(A.shuffle_rdp(100, 0.0, A.DEFAULT_ORDERS) == 0)
    assert np.all(A.subsampled_shuffle_rdp(100, 10, 0.0, A.DEFAULT_ORDERS) == 0)
    assert A.epsilon([{"mechanism": "shuffle", "n": 10, "epsilon0": 0.0, "count": 10**8}], 1e-9)[0] == 0.0


def test_cap_makes_small_n_sane():
    # n = 100, ε0 = 3, α = 2: U1 = 5.42 > ε0, the default is the pure-DP cap
    assert A.shuffle_rdp(100, 3.0, [2], bound="u1")[0] > 5.4
    assert A.shuffle_rdp(100, 3.0, [2])[0] <= 3.0


def test_exact_lower_accurate_at_large_epsilon0():
    # r(0) = 1/E: computed as 1 + x with x ≈ −1 it lost ~8 digits at ε0 ≈ 19.6, and the "exact"
    # lower bound came out above the ε0-DP cap and above the (valid) clone bound.
    # Reference: 50-digit mpmath sum over K ~ Bin(2, 1/(E+1)).
    n, eps0 = 2, 19.585420770342218
    lo = A.shuffle_rdp(n, eps0, [2.0], bound="lower")[0]
    assert abs(lo - 19.585420764102142347) <= 1e-13 * 19.6
    assert lo <= A.shuffle_rdp(n, eps0, [2.0], bound="cap")[0]
    assert lo <= A.shuffle_rdp(n, eps0, [2.0])[0]
    assert A.subsampled_shuffle_rdp(19, 19, 19.80485892288734, [4.0], bound="lower")[0] <= 19.80485892288734


def test_pure_dp_cap_accurate_near_order_one():
    # the log-cosh difference cancelled near α = 1: at α = 1 + 1e-12, ε0 = 0.5 the cap was 7e-5
    # below its exact value (so the default upper bound too). Reference: 60-digit mpmath.
    v = A.shuffle_rdp(1, 0.5, [1.0 + 1e-12], bound="cap")[0]
    ref = 0.12245933120197206649
    assert ref * (1 - 1e-9) <= v <= ref * (1 + 1e-9)
    assert A.shuffle_rdp(1, 20.0, [1.0 + 1e-15])[0] >= 19.9999999
