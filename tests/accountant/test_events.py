"""Events: immutable, api.md JSON round trip, strict parsing, composition and caching."""

import dataclasses

import numpy as np
import pytest

import accountant as A
from accountant.errors import BoundNotApplicable, InvalidEvent, InvalidParameter

EXAMPLES = [
    {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100},
    {"mechanism": "subsampled_shuffle", "n": 1000000, "k": 1000, "epsilon0": 2.0, "count": 100000},
    {"mechanism": "rdp_curve", "orders": [2, 4, 8], "rdp": [0.01, 0.03, 0.09], "count": 1},
]


@pytest.mark.parametrize("d", EXAMPLES)
def test_round_trip(d):
    ev = A.event_from_dict(d)
    back = ev.to_dict()
    assert back == {**d, **({"orders": [float(x) for x in d["orders"]]} if "orders" in d else {})}
    assert A.event_from_dict(back) == ev
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.count = 3
    hash(ev)


def test_dicts_and_objects_compose_the_same():
    objs = [A.event_from_dict(d) for d in EXAMPLES[:2]]
    assert np.array_equal(A.compose(EXAMPLES[:2]), A.compose(objs))
    assert A.epsilon(EXAMPLES[:2], 1e-8) == A.epsilon(objs, 1e-8)


def test_composition_is_orderwise_sum_and_count_is_linear():
    a, b = EXAMPLES[0], EXAMPLES[1]
    s = A.compose([a, b])
    assert np.allclose(s, A.event_rdp(a) + A.event_rdp(b), rtol=1e-15)
    one = A.event_rdp({**a, "count": 1})
    assert np.allclose(A.event_rdp(a), 100 * one, rtol=1e-15)
    assert np.allclose(A.compose([{**a, "count": 1}] * 100), A.event_rdp(a), rtol=1e-12)


def test_rdp_curve_event_interpolation_is_valid():
    ev = {"mechanism": "rdp_curve", "orders": [2, 8], "rdp": [0.01, 0.09], "count": 2}
    r = A.event_rdp(ev, [1.5, 2, 5, 8, 9])
    assert r[0] == pytest.approx(0.02)  # below: monotonicity
    assert r[1] == pytest.approx(0.02)
    assert r[2] == pytest.approx(2 * min((0.5 * 1 * 0.01 + 0.5 * 7 * 0.09) / 4, 0.09))
    assert np.isinf(r[4])  # above the largest known order: unknown
    eps, order = A.epsilon([ev], 1e-5)
    assert np.isfinite(eps) and order <= 8


@pytest.mark.parametrize(
    "bad,match",
    [
        ({"mechanism": "laplaceish", "n": 3}, "unknown mechanism"),
        ({"n": 3, "epsilon0": 1}, "mechanism"),
        ({"mechanism": "shuffle", "n": 100}, "missing required field.*epsilon0"),
        ({"mechanism": "shuffle", "n": 100, "epsilon0": 1, "k": 3}, "unknown field"),
        ({"mechanism": "shuffle", "n": 0, "epsilon0": 1}, "n must be >= 1"),
        ({"mechanism": "shuffle", "n": 10, "epsilon0": -1}, "epsilon0 must be >= 0"),
        ({"mechanism": "shuffle", "n": 10, "epsilon0": float("nan")}, "epsilon0"),
        ({"mechanism": "shuffle", "n": 10, "epsilon0": 1, "count": 0}, "count must be >= 1"),
        ({"mechanism": "shuffle", "n": 10.5, "epsilon0": 1}, "n must be an integer"),
        ({"mechanism": "subsampled_shuffle", "n": 10, "k": 11, "epsilon0": 1}, "k must be <= 10"),
        (
            {"mechanism": "subsampled_shuffle", "n": 10, "k": 5, "epsilon0": 1, "sampling": "poisson"},
            "Poisson",
        ),
        ({"mechanism": "rdp_curve", "orders": [2, 3], "rdp": [0.1]}, "same length"),
        ({"mechanism": "shuffle", "n": 10, "epsilon0": 1, "output": "analog"}, "output"),
    ],
)
def test_bad_events(bad, match):
    with pytest.raises(InvalidEvent.__mro__[1], match=match):
        A.event_from_dict(bad)


def test_bound_conditions_are_errors_not_numbers():
    with pytest.raises(BoundNotApplicable, match="integer"):
        A.shuffle_rdp(1000, 1.0, [2.5], bound="u1")
    with pytest.raises(BoundNotApplicable, match="α⁴"):
        A.shuffle_rdp(1000, 1.0, [10], bound="u1_simplified")
    with pytest.raises(BoundNotApplicable, match="k >= 2"):
        A.subsampled_shuffle_rdp(1000, 1, 1.0, [2], bound="su")
    with pytest.raises(BoundNotApplicable, match="integer"):
        A.subsampled_shuffle_rdp(1000, 10, 1.0, [2.5], bound="su")
    with pytest.raises(BoundNotApplicable, match="discrete"):
        A.shuffle_rdp(1000, 1.0, [2], bound="u1", output="continuous")
    with pytest.raises(InvalidParameter, match="unknown bound"):
        A.shuffle_rdp(1000, 1.0, [2], bound="su")
    with pytest.raises(InvalidParameter, match="> 1"):
        A.shuffle_rdp(1000, 1.0, [1])
    with pytest.raises(InvalidParameter, match="n must be >= 1"):
        A.shuffle_rdp(0, 1.0, [2])
    with pytest.raises(InvalidParameter, match="k must be"):
        A.subsampled_shuffle_rdp(10, 11, 1.0, [2])
    with pytest.raises(InvalidParameter, match="empty"):
        A.compose([])


def test_continuous_output_uses_only_universal_bounds():
    d = A.shuffle_rdp(10**4, 1.0, A.DEFAULT_ORDERS, output="discrete")
    c = A.shuffle_rdp(10**4, 1.0, A.DEFAULT_ORDERS, output="continuous")
    assert np.all(c >= d * (1 - 1e-12))
    assert np.all(c <= A.shuffle_rdp(10**4, 1.0, A.DEFAULT_ORDERS, bound="cap") * (1 + 1e-12))


def test_identical_events_are_computed_once():
    from accountant.events import cached_unit_curve

    cached_unit_curve.cache_clear()
    ev = {"mechanism": "shuffle", "n": 123457, "epsilon0": 0.7, "count": 5}
    A.event_rdp(ev)
    A.event_rdp({**ev, "count": 9})
    A.compose([ev, ev, {**ev, "count": 1}])
    info = cached_unit_curve.cache_info()
    assert info.misses == 1 and info.hits >= 4


@pytest.mark.parametrize("kind", ["integer", "number", "numbers"])
@pytest.mark.parametrize("limits", [{}, {"lo": 0.0}, {"hi": 1.0}])
def test_a_numeric_field_must_declare_both_limits(kind, limits):
    from accountant.events import Spec

    with pytest.raises(ValueError, match="must declare lo and hi"):
        Spec(kind, "a field", **limits)
    assert Spec(kind, "a field", lo=0.0, hi=1.0).kind == kind
    assert Spec("choice", "a field", choices=("a",)).lo is None  # limits only for numeric kinds


def test_memoized_functions_take_positional_arguments_only():
    from accountant.events import cached_unit_curve

    ev = A.event_from_dict({"mechanism": "gaussian", "noise_multiplier": 2.0})
    got = cached_unit_curve(ev, (2.0, 4.0), "upper", True)
    np.testing.assert_allclose(got, [2.0 / 8.0, 4.0 / 8.0], rtol=1e-12)
    with pytest.raises(TypeError, match="by position"):
        cached_unit_curve(ev, (2.0, 4.0), bound="upper")


def test_central_events():
    g = A.event_rdp({"mechanism": "gaussian", "noise_multiplier": 2.0, "count": 3}, [2, 10])
    assert np.allclose(g, 3 * np.array([2, 10]) / 8, rtol=1e-12)
    lap = A.event_rdp({"mechanism": "laplace", "scale": 1.0}, [2.0])[0]
    want = np.log(2 / 3 * np.exp(1) + 1 / 3 * np.exp(-2))
    assert lap == pytest.approx(want, rel=1e-12)
    pure = A.event_rdp({"mechanism": "pure_dp", "epsilon": 1.0}, [2.0])[0]
    assert pure == pytest.approx(A.shuffle_rdp(5, 1.0, [2.0], bound="cap")[0], rel=1e-12)


def test_subsampling_never_looser_than_the_k_user_shuffle():
    """Regression: continuous output at k = n gave ε = 6.97 where the plain shuffle gives 0.049."""
    sub = {
        "mechanism": "subsampled_shuffle",
        "n": 10**5,
        "k": 10**5,
        "epsilon0": 1.0,
        "count": 10,
        "output": "continuous",
    }
    plain = {"mechanism": "shuffle", "n": 10**5, "epsilon0": 1.0, "count": 10, "output": "continuous"}
    # the RDP route (the regression's); the PLD routes of the two pairs differ by discretisation only
    assert A.epsilon([sub], 1e-5, accounting="rdp")[0] <= A.epsilon([plain], 1e-5, accounting="rdp")[0] * (
        1 + 1e-12
    )
    r_sub = A.subsampled_shuffle_rdp(1000, 100, 2.0, A.DEFAULT_ORDERS)
    r_k = A.shuffle_rdp(100, 2.0, A.DEFAULT_ORDERS)
    assert np.all(r_sub <= r_k * (1 + 1e-12))


def test_top_order_and_tiny_delta_edge_cases():
    # refinement above the largest order stays within the order limit
    eps, order = A.epsilon([{"mechanism": "pure_dp", "epsilon": 1.0}], 1e-8, orders=[999999])
    assert np.isfinite(eps) and order <= 1e6
    # a zero curve is ε = 0 even where δ² underflows
    assert A.epsilon([{"mechanism": "pure_dp", "epsilon": 0.0}], 1e-300)[0] == 0.0
    with pytest.raises(InvalidParameter, match="1.01"):
        A.epsilon([{"mechanism": "pure_dp", "epsilon": 1.0}], 1e-8, orders=[1.005])


def test_docs_events_page_is_generated_from_the_declarations():
    from pathlib import Path

    from accountant.events.reference import markdown

    page = Path(__file__).resolve().parents[2] / "docs" / "events.md"
    assert page.read_text() == markdown(), (
        "regenerate: python -m accountant.events.reference > docs/events.md"
    )
