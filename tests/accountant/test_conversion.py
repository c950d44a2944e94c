"""RDP → (ε, δ) conversion against Google's dp_accounting on the same curves."""

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa

import accountant as A
from accountant.errors import InvalidParameter


def _random_curves(count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        m = int(rng.integers(1, 300))
        orders = np.sort(rng.uniform(1.001, 5000, size=m))
        rdp = np.abs(rng.normal(0, 1, size=m)) * 10 ** rng.uniform(-8, 1)
        yield orders, rdp, float(10 ** rng.uniform(-15, -0.5))


def test_epsilon_matches_dp_accounting():
    for orders, rdp, delta in _random_curves(300, 1):
        want, want_order = dpa.compute_epsilon(orders, rdp, delta)
        got, got_order = A.epsilon_from_rdp(orders, rdp, delta)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-300)
        assert got_order == want_order


def test_delta_matches_dp_accounting():
    for orders, rdp, _ in _random_curves(300, 2):
        eps = float(np.random.default_rng(len(orders)).uniform(0, 5))
        want, want_order = dpa.compute_delta(orders, rdp, eps)
        got, got_order = A.delta_from_rdp(orders, rdp, eps)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-300)
        if want < 1:
            assert got_order == want_order


def test_on_shuffle_curves_too():
    curve = A.shuffle_rdp(10**5, 1.0, A.DEFAULT_ORDERS) * 1000
    for delta in (1e-12, 1e-8, 1e-5):
        want, _ = dpa.compute_epsilon(A.DEFAULT_ORDERS, curve, delta)
        assert A.epsilon_from_rdp(A.DEFAULT_ORDERS, curve, delta)[0] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("delta", [0, 1, -1e-3, 1.5, float("nan")])
def test_bad_delta(delta):
    with pytest.raises(InvalidParameter, match="delta"):
        A.epsilon_from_rdp([2, 3], [0.1, 0.2], delta)


def test_bad_curves():
    with pytest.raises(InvalidParameter, match="same length"):
        A.epsilon_from_rdp([2, 3], [0.1], 1e-5)
    with pytest.raises(InvalidParameter, match="> 1"):
        A.epsilon_from_rdp([1, 3], [0.1, 0.2], 1e-5)
    with pytest.raises(InvalidParameter, match="rdp"):
        A.epsilon_from_rdp([2, 3], [0.1, -0.2], 1e-5)
    with pytest.raises(InvalidParameter, match="epsilon"):
        A.delta_from_rdp([2, 3], [0.1, 0.2], -1)


def test_refined_epsilon_is_valid_and_not_worse_than_grid():
    ev = {"mechanism": "shuffle", "n": 10**5, "epsilon0": 1.0, "count": 500}
    g = A.epsilon_guarantee([ev], 1e-6)
    grid_eps, _ = A.epsilon_from_rdp(g.orders, g.rdp, 1e-6)
    assert g.epsilon <= grid_eps
    # the refined order really gives that ε: recompute the curve at that single order
    at = A.event_rdp(ev, [g.order])
    assert A.epsilon_from_rdp([g.order], at, 1e-6)[0] == pytest.approx(g.epsilon, rel=1e-12)


def test_optimal_order_is_large_for_small_epsilon0():
    # bounds.md §6: ε0 = 0.1, n = 10⁴, δ = 10⁻⁶ has its optimum above 2,000
    eps, order = A.epsilon([{"mechanism": "shuffle", "n": 10**4, "epsilon0": 0.1}], 1e-6)
    assert order > 2000
    grid64 = [o for o in A.DEFAULT_ORDERS if o <= 64]
    eps64, _ = A.epsilon_from_rdp(grid64, A.shuffle_rdp(10**4, 0.1, grid64), 1e-6)
    assert eps64 > 1.5 * eps


# ----------------------------------------------------------------------------------------------
# the extension above the default grid (bounds.md §6)
# ----------------------------------------------------------------------------------------------

_END = {"mechanism": "shuffle", "n": 10**7, "epsilon0": 0.5, "count": 1}  # optimum at the grid's end


def test_extension_lowers_epsilon_when_the_optimum_is_at_the_grid_end():
    from accountant.orders import EXTENSION_ORDERS

    grid_only = A.epsilon_guarantee([_END], 1e-8, extend=False)
    g = A.epsilon_guarantee([_END], 1e-8)
    assert A.epsilon_from_rdp(g.orders, g.rdp, 1e-8)[1] == A.DEFAULT_ORDERS[-1]
    assert A.DEFAULT_ORDERS[-1] < g.order < EXTENSION_ORDERS[-1] and g.epsilon < 0.9 * grid_only.epsilon
    # the reported order really gives that ε: the curve recomputed at that single order (above 10⁴
    # the clone bound's adaptive engine refines per set of orders: equal up to its slack)
    at = A.event_rdp(_END, [g.order])
    assert A.epsilon_from_rdp([g.order], at, 1e-8)[0] == pytest.approx(g.epsilon, rel=1e-4)
    # and no order of the extension or of a fine scan above the grid does better than it by more
    # than the refinement's resolution
    scan = np.geomspace(1e4, 3.2e5, 60)
    assert g.epsilon <= A.epsilon_from_rdp(scan, A.event_rdp(_END, scan), 1e-8)[0] * (1 + 1e-3)
    d = A.delta_guarantee([_END], g.epsilon)
    assert d.delta <= 1e-8 * (1 + 1e-9) and d.order > A.DEFAULT_ORDERS[-1]
    assert d.delta < A.delta_guarantee([_END], g.epsilon, extend=False).delta


def test_extension_only_on_the_default_grid_and_only_at_its_end():
    custom = np.asarray(A.DEFAULT_ORDERS)[:-1]
    g = A.epsilon_guarantee([_END], 1e-8, custom)
    assert g.order <= custom[-1] * 1.25  # the refinement above a given grid's last order only
    interior = {"mechanism": "shuffle", "n": 10**5, "epsilon0": 1.0, "count": 1}
    a, b = A.epsilon_guarantee([interior], 1e-8), A.epsilon_guarantee([interior], 1e-8, extend=False)
    assert (a.epsilon, a.order) == (b.epsilon, b.order) and a.order < 1e4


def test_extension_order_is_found_again_by_the_service_helper():
    from accountant.composition import conversion_orders

    g = A.epsilon_guarantee([_END], 1e-8)
    o = conversion_orders(np.asarray(A.DEFAULT_ORDERS), g.order)
    assert o.size > 1 and np.any(o == g.order)


def test_rdp_curve_event_is_not_extended_past_its_points():
    """An explicit curve is unknown above its largest order: the extension never uses it there."""
    o = [2.0, 100.0, 10_000.0]
    ev = {"mechanism": "rdp_curve", "orders": o, "rdp": [1e-7, 5e-6, 5e-4], "count": 1}
    g = A.epsilon_guarantee([ev], 1e-8)
    assert g.order <= 10_000.0


@pytest.mark.parametrize(
    "ev",
    [
        {"mechanism": "shuffle", "n": 1000, "epsilon0": 0.5},
        {"mechanism": "shuffle", "n": 10**6, "epsilon0": 2.0},
        {"mechanism": "subsampled_shuffle", "n": 10**5, "k": 1000, "epsilon0": 1.0},
        {"mechanism": "subsampled_shuffle", "n": 10**4, "k": 5000, "epsilon0": 4.0},
    ],
)
def test_default_curves_above_the_grid_never_below_the_exact_lower_bound(ev):
    """Every bound in the default minimum holds at the extension's orders (and at real orders
    between them): never below the exact RDP of shuffled binary randomized response."""
    from accountant.orders import EXTENSION_ORDERS

    o = np.concatenate([EXTENSION_ORDERS, [15_000.5, 2.0e5 + 0.25]])
    got = A.event_rdp(ev, o)
    low = A.event_rdp(ev, o, bound="lower")
    assert np.all(np.isfinite(got)) and np.all(got >= low * (1 - 1e-12))


@pytest.mark.parametrize(
    "ev",
    [
        {"mechanism": "gaussian", "noise_multiplier": 3000.0},  # optimum just above 10⁴: the refinement wins
        {"mechanism": "laplace", "scale": 1e5},
        _END,
        {
            "mechanism": "subsampled",
            "n": 10**7,
            "k": 1000,
            "inner": [{"mechanism": "gaussian", "noise_multiplier": 30}],
        },
    ],
)
def test_the_extension_never_makes_an_answer_worse(ev):
    for delta in (1e-10, 1e-8):
        with_ext, without = A.epsilon_guarantee([ev], delta), A.epsilon_guarantee([ev], delta, extend=False)
        assert with_ext.epsilon <= without.epsilon
        rounds = A.epsilon_over_rounds(ev, delta, [1, 2])
        assert rounds.epsilon[0] == with_ext.epsilon and rounds.order[0] == with_ext.order


@pytest.mark.parametrize("alpha", [11_555.0, 20_586.5, 113_137.0, 320_000.0])
def test_closed_form_curves_above_the_grid_match_mpmath(alpha):
    """The central closed forms the extension reads (Laplace, pure ε-DP, Gaussian) at its orders,
    against 60-digit mpmath: never below, within 1e-9."""
    import mpmath as mp

    with mp.workdps(60):
        a = mp.mpf(alpha)
        for scale in (3e3, 1e5):
            lam = 1 / mp.mpf(scale)
            want = mp.log(
                a / (2 * a - 1) * mp.exp((a - 1) * lam) + (a - 1) / (2 * a - 1) * mp.exp(-a * lam)
            ) / (a - 1)
            got = A.event_rdp({"mechanism": "laplace", "scale": scale}, [alpha])[0]
            assert float(want) <= got <= float(want) * (1 + 1e-9)
        for eps in (1e-4, 0.01):
            e = mp.mpf(eps)
            want = mp.log((mp.exp(a * e) + mp.exp((1 - a) * e)) / (mp.exp(e) + 1)) / (a - 1)
            got = A.event_rdp({"mechanism": "pure_dp", "epsilon": eps}, [alpha])[0]
            assert float(want) <= got <= float(want) * (1 + 1e-9)
        got = A.event_rdp({"mechanism": "gaussian", "noise_multiplier": 3000.0}, [alpha])[0]
        assert float(a / (2 * mp.mpf(3000) ** 2)) <= got <= float(a / (2 * mp.mpf(3000) ** 2)) * (1 + 1e-9)
