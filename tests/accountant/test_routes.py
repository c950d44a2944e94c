"""The routes of ``accounting`` (accountant.routes): which route applies, the best of them, and
the pure route's exact sums. Soundness against exact divergences: tests/audit."""

from __future__ import annotations

import math

import pytest

import accountant as A
from accountant.routes import epsilon_routed

PURE_1 = {"mechanism": "pure_dp", "epsilon": 1.0}


@pytest.mark.parametrize("delta", [1e-12, 1e-8, 1e-6])
def test_a_pure_release_costs_its_epsilon(delta):
    """One ε-DP release at ε = 1 costs at most 1: the pure route says exactly 1, the PLD route of its
    randomized-response pair slightly less at δ > 0 (the RDP conversion alone gives 1.00025+)."""
    r = A.epsilon_routed([PURE_1], delta)
    routes = {v.route: v for v in r.routes}
    assert routes["pure"].epsilon == 1.0
    # every route is a valid bound: ≥ the exact ε of ε-randomized response at δ,
    # log(e − δ(1 + e)) (the worst ε-DP mechanism, KOV15)
    exact = math.log(math.e - delta * (1 + math.e))
    assert all(v.epsilon >= exact for v in r.routes if v.applies)
    assert r.epsilon <= 1.0 and r.route in ("pure", "pld")
    assert A.epsilon([PURE_1], delta)[0] <= 1.0
    assert A.delta([PURE_1], 1.0)[0] == 0.0


def test_pure_sums_are_exact_then_rounded_up():
    """Σ count·ε summed exactly: 3 × 0.3 + Laplace(scale 1) is the float just above 1.9 or 1.9
    itself — never below the exact rational sum of the floats."""
    from fractions import Fraction

    evs = [{"mechanism": "pure_dp", "epsilon": 0.3, "count": 3}, {"mechanism": "laplace", "scale": 1.0}]
    r = A.epsilon_routed(evs, 1e-6)
    exact = 3 * Fraction(0.3) + 1
    pure = next(v for v in r.routes if v.route == "pure").epsilon
    assert Fraction(pure) >= exact and Fraction(float(math.nextafter(pure, 0))) < exact
    assert r.epsilon <= pure


def test_approx_releases_pay_their_delta_in_the_pure_route():
    evs = [{"mechanism": "approx_dp", "epsilon": 0.5, "delta": 1e-7, "count": 2}]
    r = A.epsilon_routed(evs, 1e-6)
    pure = next(v for v in r.routes if v.route == "pure")
    assert pure.epsilon == 1.0
    with pytest.raises(A.ZetaExceedsDelta):  # no route affords δ below the releases' own
        A.epsilon_routed(evs, 1.5e-7)


def test_best_is_the_smallest_route_and_rdp_alone_is_the_rdp_guarantee():
    evs = [{"mechanism": "gaussian", "noise_multiplier": 4.0, "count": 10}]
    best = A.epsilon_routed(evs, 1e-6)
    assert best.epsilon == min(v.epsilon for v in best.routes if v.applies)
    pure = next(v for v in best.routes if v.route == "pure")
    assert not pure.applies and "not pure" in pure.note
    rdp = A.epsilon_routed(evs, 1e-6, accounting="rdp")
    g = A.epsilon_guarantee(evs, 1e-6)
    assert rdp.route == "rdp" and rdp.epsilon == g.epsilon and rdp.order == g.order
    assert [v.route for v in rdp.routes] == ["rdp"]


def test_unknown_accounting_is_refused():
    with pytest.raises(A.InvalidParameter, match="accounting must be one of"):
        epsilon_routed([PURE_1], 1e-6, accounting="fastest")


def test_calibration_judged_by_the_best_route_goes_further():
    """count of pure releases at ε = 0.1 within ε = 1: pure composition affords 10 exactly; the RDP
    route alone affords fewer."""
    ev = {"mechanism": "pure_dp", "epsilon": 0.1}
    best = A.calibrate(ev, "count", 1.0, 1e-9)
    rdp = A.calibrate(ev, "count", 1.0, 1e-9, accounting="rdp")
    assert best.value >= rdp.value
    assert best.epsilon <= 1.0 and A.epsilon_routed([best.event], 1e-9).epsilon == best.epsilon
    assert A.epsilon_routed([{**best.event, "count": best.value + 1}], 1e-9).epsilon > 1.0
