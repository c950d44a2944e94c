"""The three-part accounting (accountant.combination): RDP part, additive δ, (ε, δ) releases.

Exact checks of the combination against real pairs are in tests/audit/test_central_events.py;
here: the rules that make it the one place computing (ε, δ) — consistency between the two
directions, monotonicity, refusals, the summary's additivity (what the ledger stores), and that
events without the new parts are answered exactly as before.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import accountant
from accountant.combination import Account, ApproxPart, delta_of, epsilon_of
from accountant.conversion import delta_from_rdp, epsilon_from_rdp

SET = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

gaussians = st.builds(
    lambda z, c: {"mechanism": "gaussian", "noise_multiplier": z, "count": c},
    st.floats(0.5, 20.0),
    st.integers(1, 500),
)
approx = st.builds(
    lambda e, d, c: {"mechanism": "approx_dp", "epsilon": e, "delta": d, "count": c},
    st.floats(0.0, 1.0),
    st.floats(0.0, 1e-8),
    st.integers(1, 50),
)


@pytest.mark.parametrize(
    "eps,count,delta_i,z,rounds",
    [
        (1.0, 50, 0.0, 1.0, 10),
        (0.9, 46, 1e-9, 20.0, 1),
        (0.96875, 46, 1e-9, 5.0, 1),
        (0.3, 30, 1e-9, 2.0, 100),
    ],
)
def test_the_two_directions_find_the_same_split(eps, count, delta_i, z, rounds):
    """Cases where δ at the ε reported for δ = 1e-5 came out 4–5 % above 1e-5: the split's
    objective dips sharply (a kink of the optimal-composition term; a Gaussian part's δ changing
    40× over a hundredth of ε) and one direction's grid missed the dip."""
    evs = [
        {"mechanism": "approx_dp", "epsilon": eps, "delta": delta_i, "count": count},
        {"mechanism": "gaussian", "noise_multiplier": z, "count": rounds},
    ]
    g = accountant.epsilon_guarantee(evs, 1e-5, refine=False)
    d = accountant.delta_guarantee(evs, g.epsilon, refine=False)
    assert d.delta <= 1e-5 * 1.01


@SET
@given(st.lists(gaussians, min_size=1, max_size=3), st.sampled_from([1e-8, 1e-5, 1e-2]))
def test_plain_events_are_the_rdp_conversion(evs, delta):
    """Without ζ or (ε, δ) releases the answer is the plain conversion of the composed curve on
    the grid (refinement can only lower it) — the behaviour every earlier test pins down."""
    g = accountant.epsilon_guarantee(evs, delta, refine=False)
    curve = accountant.compose(evs)
    eps, order = epsilon_from_rdp(accountant.DEFAULT_ORDERS, curve, delta)
    assert g.epsilon == eps and g.order == order and g.detail is None
    d = accountant.delta_guarantee(evs, 1.0, refine=False)
    assert d.delta == delta_from_rdp(accountant.DEFAULT_ORDERS, curve, 1.0)[0]


@SET
@given(st.lists(gaussians, min_size=1, max_size=2), st.floats(1e-9, 1e-6), st.sampled_from([1e-5, 1e-3]))
def test_zeta_costs_exactly_the_conversion_at_delta_minus_zeta(evs, zeta, delta):
    evz = [{**evs[0], "zeta": zeta}, *evs[1:]]
    z = evs[0]["count"] * zeta
    if z >= delta:
        with pytest.raises(accountant.ZetaExceedsDelta):
            accountant.epsilon_guarantee(evz, delta)
        return
    g = accountant.epsilon_guarantee(evz, delta, refine=False)
    assert g.epsilon == pytest.approx(
        epsilon_from_rdp(accountant.DEFAULT_ORDERS, accountant.compose(evs), delta - z)[0], rel=1e-12
    )
    assert g.epsilon >= accountant.epsilon_guarantee(evs, delta, refine=False).epsilon
    assert g.zeta == pytest.approx(z, rel=1e-12) and g.zeta >= z
    d = accountant.delta_guarantee(evz, g.epsilon)
    assert d.delta >= z
    assert d.delta <= delta * (1 + 1e-9)  # the two directions agree


@SET
@given(
    st.lists(approx, min_size=1, max_size=3), st.lists(gaussians, max_size=2), st.sampled_from([1e-5, 1e-3])
)
def test_the_two_directions_agree(apx, gs, delta):
    """δ at the ε reported for δ is δ up to the search grids (both come from the same bounds; the
    split of the budget is searched on a grid in each direction, the orders likewise)."""
    evs = apx + gs
    if sum(e["delta"] * e["count"] for e in apx) >= delta * 0.99:
        return
    g = accountant.epsilon_guarantee(evs, delta, refine=False)
    d = accountant.delta_guarantee(evs, g.epsilon, refine=False)
    assert d.delta <= delta * 1.01
    assert accountant.delta_guarantee(evs, g.epsilon * 1.01, refine=False).delta <= delta


@SET
@given(st.lists(approx, min_size=1, max_size=3), st.lists(gaussians, max_size=2), st.floats(0.1, 5.0))
def test_adding_a_release_never_lowers_the_loss(apx, gs, eps):
    evs = apx + gs
    base = accountant.delta_guarantee(evs, eps).delta
    more = accountant.delta_guarantee(
        evs + [{"mechanism": "approx_dp", "epsilon": 0.1, "delta": 1e-9}], eps
    ).delta
    assert more >= base * (1 - 1e-9)


def test_approx_part_is_additive():
    """The ledger stores the summary and adds charges' summaries: the sum of parts equals the
    summary of the union (up to outward rounding), and max for the largest ε."""
    a = ApproxPart.of(0.3, 1e-8, 7) + ApproxPart.of(0.1, 2e-9, 3)
    b = accountant.account(
        [
            {"mechanism": "approx_dp", "epsilon": 0.3, "delta": 1e-8, "count": 7},
            {"mechanism": "approx_dp", "epsilon": 0.1, "delta": 2e-9, "count": 3},
        ]
    ).approx
    assert a.count == b.count == 10 and a.eps_max == b.eps_max == 0.3
    for f in ("eps_sum", "eps_sq_sum", "eps_tanh_sum", "delta_sum"):
        assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-15)
    assert a.eps_sum >= 0.3 * 7 + 0.1 * 3 and a.delta_sum >= 7e-8 + 6e-9


def test_compose_refuses_parts_that_are_not_rdp():
    with pytest.raises(accountant.InvalidParameter, match="approx_dp"):
        accountant.compose([{"mechanism": "approx_dp", "epsilon": 1.0, "delta": 1e-6}])
    with pytest.raises(accountant.InvalidParameter, match="zeta"):
        accountant.compose([{"mechanism": "laplace", "scale": 1.0, "zeta": 1e-9}])
    with pytest.raises(accountant.InvalidParameter, match="approx_dp"):
        accountant.event_rdp({"mechanism": "approx_dp", "epsilon": 1.0, "delta": 1e-6})
    # the curve of a ζ event is its curve (the service notes that it holds outside the failure event)
    assert accountant.event_rdp({"mechanism": "laplace", "scale": 1.0, "zeta": 1e-9}, [2.0])[0] > 0


def test_sampled_events_refuse_additive_delta_inside():
    for inner in (
        {"mechanism": "gaussian", "noise_multiplier": 1.0, "zeta": 1e-9},
        {"mechanism": "approx_dp", "epsilon": 1.0, "delta": 1e-9},
    ):
        with pytest.raises(accountant.InvalidEvent, match="additive"):
            accountant.event_from_dict({"mechanism": "subsampled", "n": 100, "k": 10, "inner": [inner]})


def test_approx_only_and_zero_curve():
    """(ε, δ) releases alone: basic composition is always available (ε = Σε at δ = Σδ + slack)."""
    ev = {"mechanism": "approx_dp", "epsilon": 0.2, "delta": 1e-7, "count": 3}
    g = accountant.epsilon_guarantee([ev], 1e-6)
    assert g.epsilon <= 0.6 * (1 + 1e-12)
    assert accountant.delta_guarantee([ev], 0.6 * (1 + 1e-9)).delta <= 3e-7 * (1 + 1e-9)
    acc = Account(
        accountant.DEFAULT_ORDERS, np.zeros(accountant.DEFAULT_ORDERS.size), 0.0, ApproxPart.of(0.2, 1e-7, 3)
    )
    assert epsilon_of(acc, 1e-6).epsilon == g.epsilon
    assert delta_of(acc, 10.0).delta == pytest.approx(3e-7, rel=1e-9)


def test_calibration_handles_the_additive_delta():
    """count with ζ: the count grows ζ as well, so the largest count keeps count·ζ < δ."""
    r = accountant.calibrate({"mechanism": "laplace", "scale": 50.0, "zeta": 1e-7}, "count", 100.0, 1e-5)
    assert r.value == 99  # 100·1e-7 = δ: no ε exists
    assert r.epsilon <= 100.0
    r2 = accountant.calibrate({"mechanism": "approx_dp", "epsilon": 0.01, "delta": 1e-9}, "count", 1.0, 1e-6)
    g = accountant.epsilon_guarantee(
        [{"mechanism": "approx_dp", "epsilon": 0.01, "delta": 1e-9, "count": r2.value + 1}], 1e-6
    )
    assert r2.epsilon <= 1.0 < g.epsilon
    curve = accountant.epsilon_over_rounds(
        {"mechanism": "laplace", "scale": 50.0, "zeta": 1e-7}, 1e-5, [1, 10, 50]
    )
    assert np.all(np.diff(curve.epsilon) > 0)
    single = accountant.epsilon_guarantee(
        [{"mechanism": "laplace", "scale": 50.0, "zeta": 1e-7, "count": 50}], 1e-5
    )
    assert curve.epsilon[-1] == single.epsilon


def test_exponential_is_below_pure_dp():
    orders = accountant.DEFAULT_ORDERS
    for eps in (0.01, 0.5, 3.0):
        em = accountant.event_rdp({"mechanism": "exponential", "epsilon": eps}, orders)
        pure = accountant.event_rdp({"mechanism": "pure_dp", "epsilon": eps}, orders)
        assert np.all(em <= pure)
        small = orders < 10
        if eps <= 0.01:  # about ε²/8 against ε²/2 at small orders
            assert np.all(em[small] < 0.26 * pure[small])
    assert math.isclose(
        accountant.event_rdp({"mechanism": "above_threshold", "epsilon": 0.5}, [4.0])[0],
        accountant.event_rdp({"mechanism": "pure_dp", "epsilon": 0.5}, [4.0])[0],
    )
