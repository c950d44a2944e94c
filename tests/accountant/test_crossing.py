"""The shared crossing-finder (accountant.calibration.find_crossing) and the unknown's domain.

Every expected value here is computed independently of the finder: a closed-form root
(math.sqrt, integer division) or a brute-force scan of the integers near the answer.
"""

from __future__ import annotations

import math

import pytest

import accountant as A
from accountant.calibration import Domain, field_domain, find_crossing


def _counting(f):
    calls = []

    def g(x):
        calls.append(x)
        return f(x)

    return g, calls


def _check_bracket(c, dom: Domain, f, t: float):
    assert c.good is not None and c.bad is not None
    assert f(c.good) <= t < f(c.bad)
    assert dom.narrow(c.good, c.bad)
    assert dom.d * (c.bad - c.good) > 0  # the infeasible point lies beyond the feasible one


@pytest.mark.parametrize("t", [1e-9, 0.3, 2.0, 17.0, 2400.0])
def test_real_increasing(t):
    dom = Domain(lo=1e-6, hi=50.0, integer=False, rtol=1e-6, start=1.0)
    f, calls = _counting(lambda x: x * x)
    c = find_crossing(f, dom, t)
    if math.sqrt(t) < 1e-6:
        assert c.good is None and c.bad == 1e-6
        return
    if math.sqrt(t) > 50.0:
        assert c.good == 50.0 and c.bad is None
        return
    _check_bracket(c, dom, lambda x: x * x, t)
    assert c.good <= math.sqrt(t) <= c.bad
    assert len(calls) <= 25 and len(set(calls)) == len(calls)  # each point evaluated once


def test_real_decreasing_in_the_expm1_coordinate():
    """A noise scale: f falls with x, the feasible values lie above the crossing."""
    dom = Domain(lo=1e-3, hi=1e6, integer=False, increasing=False, coord="logexpm1", rtol=1e-9, start=1.0)
    c = find_crossing(lambda s: 1.0 / (s * s), dom, 0.25)
    _check_bracket(c, dom, lambda s: 1.0 / (s * s), 0.25)
    assert c.bad < 2.0 <= c.good


@pytest.mark.parametrize("x_star", [1, 2, 7, 10**6 + 3, 10**15 - 12346, 10**15])
def test_integer_resolution_up_to_1e15(x_star):
    """log x cannot tell adjacent integers apart near 10¹⁵; the answer is still exact."""
    dom = Domain(lo=1, hi=10**15, integer=True, start=1000)
    t = x_star + 0.5
    c = find_crossing(float, dom, t)
    if x_star == 10**15:
        assert c.good == 10**15 and c.bad is None
        return
    assert (c.good, c.bad) == (x_star, x_star + 1)


def test_integer_decreasing_exact_hit():
    """f(n) = 10⁶/n ≤ 4 exactly from n = 250,000 (ε equal to the target is feasible)."""
    dom = Domain(lo=1, hi=10**15, integer=True, increasing=False, start=1000)
    c = find_crossing(lambda n: 1e6 / n, dom, 4.0)
    assert (c.good, c.bad) == (250_000, 249_999)


def test_plateaus():
    """A step function (ε constant over runs of n, as with n̄ = ⌊(n−1)/(2e^{ε0})⌋ + 1)."""

    def f(n):
        return 1.0 / ((n - 1) // 37 + 1)

    dom = Domain(lo=1, hi=10**9, integer=True, increasing=False, start=10)
    t = 1.0 / 1234.5
    c = find_crossing(f, dom, t)
    smallest = min(n for n in range(1, 10**6) if f(n) <= t)
    assert (c.good, c.bad) == (smallest, smallest - 1)


def _island(k: int) -> float:
    """Feasible (≤ 1) for k ≤ 1000 and on an island around 55,000 that no halving point hits."""
    if k <= 1000:
        return 0.5
    return 1.0 + 0.3 * abs(math.log(k / 55_000)) - 0.006


def test_non_monotone_domain_finds_the_island_top():
    dom = Domain(lo=1, hi=10**6, integer=True, monotone=False)
    c = find_crossing(_island, dom, 1.0)
    top = max(k for k in range(50_000, 60_000) if _island(k) <= 1.0)
    assert (c.good, c.bad) == (top, top + 1)


def test_monotone_domain_takes_the_first_crossing_from_its_start():
    dom = Domain(lo=1, hi=10**6, integer=True, start=10)
    c = find_crossing(_island, dom, 1.0)
    assert c.good is not None and _island(c.good) <= 1.0 < _island(c.bad) and c.bad == c.good + 1


def test_bisect_method_and_known_points():
    """method="bisect" finishes from the points given, without evaluating the start."""
    dom = Domain(lo=1, hi=10**6, integer=True, start=999_999)
    known = {10: 10.0, 100_000: 100_000.0}
    f, calls = _counting(float)
    c = find_crossing(f, dom, 777.25, known=known, method="bisect")
    assert (c.good, c.bad) == (777, 778)
    assert 999_999 not in calls and not set(calls) & set(known)
    assert len(calls) <= 20


def test_no_feasible_value_and_whole_domain_feasible():
    dom = Domain(lo=2, hi=40, integer=True, start=10)
    assert find_crossing(lambda _k: 5.0, dom, 1.0).good is None
    assert find_crossing(lambda _k: 5.0, dom, 1.0).bad == 2
    c = find_crossing(lambda _k: 0.0, dom, 1.0)
    assert (c.good, c.bad) == (40, None)


# ---------------------------------------------------------------------------------------------
# the unknown's domain


def test_field_domains():
    sub = {"mechanism": "subsampled_shuffle", "n": 5000, "k": 70, "epsilon0": 1.0}
    n = field_domain(sub, "n")
    assert (n.lo, n.hi, n.integer, n.increasing) == (70, 10**12, True, False)  # the declared limit
    k = field_domain(sub, "k")
    assert (k.lo, k.hi, k.integer, k.monotone) == (1, 5000, True, False)
    e = field_domain(sub, "epsilon0")
    assert (e.lo, e.hi, e.integer, e.increasing) == (1e-10, 50.0, False, True)
    c = field_domain({"mechanism": "gaussian", "noise_multiplier": 2.0}, "count")
    assert (c.lo, c.hi, c.integer) == (1, 10**12, True)
    assert field_domain({"mechanism": "shuffle", "epsilon0": 1.0}, "n").lo == 1
    with pytest.raises(A.InvalidParameter, match="solve_for must be one of"):
        field_domain(sub, "delta")


@pytest.mark.parametrize(
    "event,field",
    [
        ({"mechanism": "shuffle", "n": 100, "epsilon0": 1.0}, "k"),
        ({"mechanism": "pure_dp", "epsilon": 1.0}, "epsilon0"),
        ({"mechanism": "gaussian", "noise_multiplier": 1.0}, "n"),
    ],
)
def test_a_field_the_event_does_not_have_is_a_clear_error(event, field):
    with pytest.raises(A.InvalidParameter) as info:
        A.calibrate(event, field, 1.0, 1e-6)
    msg = str(info.value)
    assert f"solve_for {field!r} applies to mechanism(s)" in msg and event["mechanism"] in msg
    assert "whose fields are" in msg
