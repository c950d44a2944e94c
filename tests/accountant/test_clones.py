"""Clone-reduction RDP (accountant.clones, FMT21 §3; bounds.md §8).

The references (accountant.clones.reference and tests/helpers/clone_reference.py) are written independently of the module: an
exact, untruncated float summation over every (C, A, ξ) cell (no mixture over x, no binning, no
window), checked itself against a 40-digit mpmath evaluation at small n; an all-positive χ² form
at α = 2; the exact binary-RR lower bound; the ε0-DP cap in mpmath; and, at n = 10⁶, a fine-grid
quadrature over C of brute-force per-c sums.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accountant.clones import CLONES_MAX_N, clone_cap, clone_rdp, route
from accountant.clones.reference import exact_clone

from ..helpers.clone_reference import chi2_clone, fine_reference, mp_cap, mp_clone, rr_lower

# ----------------------------------------------------------------------------------------------
# exactness at small n
# ----------------------------------------------------------------------------------------------


def test_reference_sum_matches_mpmath():
    for n, eps0, a in [(2, 1.0, 2.0), (5, 0.3, 3.5), (7, 2.0, 10.0), (6, 0.05, 1.1)]:
        assert exact_clone(n, eps0, [a])[0] == pytest.approx(mp_clone(n, eps0, a), rel=1e-11)


@pytest.mark.parametrize(
    "n,eps0,alpha,ref",
    [
        (100, 1.0, 2.0, 0.02336090757),
        (100, 1.0, 10.0, 0.117706439),
        (1000, 2.0, 5.0, 0.04309414183),
        (1000, 2.0, 40.5, 0.3983191086),
        (3000, 0.3, 100.0, 0.001994788145),
        # The brief quotes 3.989637571e-05 here; two independent all-positive evaluations (the
        # χ² form below and the φ-form cell sum) agree on 3.98963805261e-05 — the quoted value
        # has a relative error of 1.2e-7, the size of the cancellation in log E[R²] summed naively.
        (3000, 0.3, 2.0, 3.98963805261e-05),
    ],
)
def test_reference_values(n, eps0, alpha, ref):
    assert clone_rdp(n, eps0, np.array([alpha]))[0] == pytest.approx(ref, rel=1e-9)


def test_alpha2_value_two_ways():
    assert chi2_clone(3000, 0.3) == pytest.approx(3.98963805261e-05, rel=1e-10)
    assert exact_clone(3000, 0.3, [2.0])[0] == pytest.approx(3.98963805261e-05, rel=1e-10)


def _random_points(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(np.exp(rng.uniform(math.log(2), math.log(3000))))
        eps0 = float(np.exp(rng.uniform(math.log(0.02), math.log(4.0))))
        a_int = float(rng.integers(2, 201))
        a_real = round(float(np.exp(rng.uniform(math.log(1.05), math.log(200.0)))), 3)
        yield n, eps0, np.array([a_real, a_int])


@pytest.mark.parametrize("n,eps0,orders", list(_random_points(32, seed=20241126)))
def test_equals_exact_untruncated_sum(n, eps0, orders):
    got = clone_rdp(n, eps0, orders)
    ref = exact_clone(n, eps0, orders)
    np.testing.assert_allclose(got, ref, rtol=1e-9)
    assert np.all(got >= ref * (1 - 1e-12))


# ----------------------------------------------------------------------------------------------
# properties
# ----------------------------------------------------------------------------------------------

_orders = st.lists(st.floats(1.01, 1e4, allow_nan=False), min_size=1, max_size=3).map(np.array)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 10**6), eps0=st.floats(1e-6, 20.0), orders=_orders)
def test_finite_nonnegative_capped(n, eps0, orders):
    got = clone_rdp(n, eps0, orders)
    assert got.shape == orders.shape
    assert np.all(np.isfinite(got)) and np.all(got >= 0)
    cap = np.array([mp_cap(eps0, a) for a in orders])
    assert np.all(got <= cap * (1 + 1e-12))


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 3000), eps0=st.floats(0.01, 6.0), alpha=st.floats(1.01, 400.0))
def test_never_below_exact_rr_lower_bound(n, eps0, alpha):
    assert clone_rdp(n, eps0, np.array([alpha]))[0] >= rr_lower(n, eps0, alpha) * (1 - 1e-12)


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(1, 2000),
    factor=st.floats(1.0, 3.0),
    eps0=st.floats(0.01, 6.0),
    alpha=st.floats(1.01, 300.0),
)
def test_monotone_in_n_exact_regime(n, factor, eps0, alpha):
    """Exactly evaluated (small n, one order), so monotone to rounding."""
    n2 = max(n, int(n * factor))
    a = np.array([alpha])
    assert clone_rdp(n2, eps0, a)[0] <= clone_rdp(n, eps0, a)[0] * (1 + 1e-10)


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(1, 2000), eps0=st.floats(0.01, 6.0), step=st.floats(0.0, 2.0), alpha=st.floats(1.01, 300.0)
)
def test_monotone_in_eps0_exact_regime(n, eps0, step, alpha):
    a = np.array([alpha])
    assert clone_rdp(n, eps0 + step, a)[0] >= clone_rdp(n, eps0, a)[0] * (1 - 1e-10)


@settings(max_examples=8, deadline=None)
@given(n=st.integers(10**4, 10**6), eps0=st.floats(0.05, 4.0), alpha=st.sampled_from([1.5, 4.0, 32.0, 500.0]))
def test_monotone_large_n_up_to_slack(n, eps0, alpha):
    """The certified discretisation has a relative slack ≲ 0.5% (documented), so at large n the
    bound is monotone up to that slack; the exact value decreases ~1/n, far more than that."""
    a = np.array([alpha, 2 * alpha])
    lo, hi = clone_rdp(2 * n, eps0, a), clone_rdp(n, eps0, a)
    assert np.all(lo <= hi * 1.01)
    assert np.all(clone_rdp(n, 1.2 * eps0, a) >= hi * 0.99)


def test_edge_cases():
    o = np.array([[1.5, 2.0], [10.0, 1e6]])
    assert np.all(clone_rdp(50, 0.0, o) == 0.0)
    assert clone_rdp(50, 1.0, o).shape == (2, 2)
    cap = np.array([mp_cap(1.0, a) for a in o.ravel()]).reshape(2, 2)
    np.testing.assert_allclose(clone_rdp(1, 1.0, o), cap, rtol=1e-12)  # no clones: the cap
    assert np.all(np.isinf(clone_rdp(CLONES_MAX_N + 1, 1.0, o)))
    big = clone_rdp(10**6, 50.0, np.array([2.0, 1e6]))  # C = 0 almost surely: the cap
    assert np.all(np.isfinite(big)) and big[1] == pytest.approx(50.0, rel=1e-6)


# ----------------------------------------------------------------------------------------------
# large n: binning on the safe side and tight; the headline composition
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n,eps0,force",
    [(500, 0.3, False), (800, 1.0, False), (1000, 0.5, False), (400, 3.0, True), (1000, 2.0, True)],
)
def test_discretised_path_safe_and_tight(n, eps0, force):
    """The certified discretisation (cell engine for small log f, geometric-bin engine for large
    log f, adaptive C-grid) against the exact untruncated sum, on every 3rd order of the default
    grid (up to 1e4). The full grid exceeds the exact-evaluation budget for the first three; the
    last two force the discretised path (the adaptive engine)."""
    from accountant.orders import DEFAULT_ORDERS

    o = np.asarray(DEFAULT_ORDERS, dtype=float)
    if force:
        got = clone_rdp(n, eps0, o, engine="adaptive")
    else:
        assert route(n, eps0, o) != "exact"
        got = clone_rdp(n, eps0, o)
    sel = np.arange(0, o.size, 3)
    ref = exact_clone(n, eps0, o[sel])
    assert np.all(got[sel] >= ref * (1 - 1e-12))
    assert np.all(got[sel] <= ref * 1.01)


@pytest.mark.parametrize("engine", ["histogram", "adaptive"])
def test_large_n_binning_safe_and_tight(engine):
    """Both engines (the merged histogram, the default here, and the adaptive one) against a
    near-exact quadrature at n = 10⁶."""
    a = np.array([1.5, 2.0, 8.0, 28.0, 128.0, 2000.0])
    got = clone_rdp(10**6, 0.5, a, engine=engine)
    ref = fine_reference(10**6, 0.5, a)
    assert np.all(got >= ref * (1 - 1e-6))
    assert np.all(got <= ref * 1.01)


def _epsilon(orders, rdp, delta):
    """ε = min_α [ε(α) + (log(1/δ) + (α−1)log(1−1/α) − log α)/(α−1)] (bounds.md §4)."""
    return float(
        np.min(
            rdp + (math.log(1 / delta) + (orders - 1) * np.log1p(-1 / orders) - np.log(orders)) / (orders - 1)
        )
    )


def test_headline_shuffle_composition():
    from accountant.orders import DEFAULT_ORDERS

    o = np.asarray(DEFAULT_ORDERS, dtype=float)
    eps = _epsilon(o, 1e5 * clone_rdp(10**6, 0.5, o), 1e-8)
    assert eps == pytest.approx(1.08, rel=0.015)


# ----------------------------------------------------------------------------------------------
# precision at the edges (red-team findings, session 2): tiny ε0 and orders next to 1
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n,eps0,alpha",
    [
        (5, 1e-6, 2.0),
        (2, 1e-6, 2.0),
        (20, 1e-6, 2.0),
        (5, 3e-6, 2.0),
        (5, 1e-8, 2.0),
        (2, 1e-9, 10.0),
        (60, 2e-6, 3.5),
    ],
)
def test_tiny_eps0_never_below_the_40_digit_value(n, eps0, alpha):
    """g = log R ≈ ε0·u/(c+1) must keep its relative accuracy when ε0 is tiny (log1p, not a
    difference of logs), or the 1e-11 safety margin is eaten (was −1.4e-7 at ε0 = 1e-9)."""
    got = clone_rdp(n, eps0, np.array([alpha]))[0]
    ref = mp_clone(n, eps0, alpha, dps=60)
    assert ref <= got <= ref * (1 + 1e-9)


@pytest.mark.parametrize("eps0", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("alpha", [1.0001, 1.000001, 1.00000001])
def test_orders_next_to_one_never_below_the_40_digit_value(eps0, alpha):
    """φ_α(r) = r^α − 1 − α(r − 1) without cancellation as α → 1 (the cap and the clone bound
    were 1e-7 too low at α = 1 + 1e-8)."""
    cap = clone_cap(eps0, np.array([alpha]))[0]
    assert mp_cap(eps0, alpha) <= cap <= mp_cap(eps0, alpha) * (1 + 1e-12)
    got = clone_rdp(2, eps0, np.array([alpha]))[0]
    ref = mp_clone(2, eps0, alpha, dps=50)
    assert ref <= got <= ref * (1 + 1e-9)


def test_log_phi_matches_mpmath_near_alpha_one():
    from accountant.numerics import log_phi as _log_phi

    a = np.array([1.0 + 1e-9, 1.0 + 1e-6, 1.001, 1.3, 1.9, 2.5, 40.0])
    for x in (-3.0, -0.3, -0.02, 0.004, 0.2, 1.5, 8.0):
        got = _log_phi(a, np.full(a.shape, x))
        with mp.workdps(50):
            ref = [
                float(mp.log(mp.e ** (mp.mpf(al) * x) - 1 - mp.mpf(al) * (mp.e ** mp.mpf(x) - 1))) for al in a
            ]
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13)


# ----------------------------------------------------------------------------------------------
# orders above the default grid (the conversion's extension to 3.2·10⁵, bounds.md §6)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,eps0", [(300, 0.5), (900, 0.2), (900, 2.0), (600, 0.05)])
def test_above_the_grid_never_below_the_exact_sum(n, eps0):
    """The engines that serve orders above 10⁴ (exact, adaptive) against the untruncated sum, in a
    call that mixes them with grid orders (``auto`` splits such a call at 10⁴)."""
    from accountant.orders import EXTENSION_ORDERS

    o = np.concatenate([[2.0, 500.0, 9000.0], EXTENSION_ORDERS[::3], [2.5e4 + 0.5]])
    ref = exact_clone(n, eps0, o)
    for engine in ("auto", "adaptive"):
        got = clone_rdp(n, eps0, o, engine=engine)
        assert np.all(got >= ref * (1 - 1e-12))
        assert np.all(got <= ref * 1.01)


def test_mixed_call_keeps_the_grid_values():
    """``auto`` routes the orders above 10⁴ apart: the grid's orders get the histogram's values
    whatever else the call holds."""
    from accountant.orders import DEFAULT_ORDERS, EXTENSION_ORDERS

    o = np.asarray(DEFAULT_ORDERS, dtype=float)
    alone = clone_rdp(10**6, 0.5, o)
    mixed = clone_rdp(10**6, 0.5, np.concatenate([o, EXTENSION_ORDERS]))
    np.testing.assert_array_equal(mixed[: o.size], alone)
    assert np.all(np.isfinite(mixed)) and np.all(np.diff(mixed[o.size - 1 :]) > 0)
