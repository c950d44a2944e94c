"""The nested sampled event: one round of inner events among k sampled users."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accountant as A
from accountant.errors import InvalidEvent

ORDERS = np.asarray(A.DEFAULT_ORDERS, dtype=float)


def nested(n, k, inner, count=1):
    return {"mechanism": "subsampled", "n": n, "k": k, "inner": inner, "count": count}


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(10, 10**7),
    frac=st.floats(1e-4, 1.0),
    eps0=st.floats(0.05, 6.0),
    output=st.sampled_from(["discrete", "continuous"]),
)
def test_one_inner_shuffle_is_never_looser_than_subsampled_shuffle(n, frac, eps0, output):
    k = max(1, min(n, int(n * frac)))
    one = A.event_rdp(nested(n, k, [{"mechanism": "shuffle", "epsilon0": eps0, "output": output}]))
    ref = A.event_rdp({"mechanism": "subsampled_shuffle", "n": n, "k": k, "epsilon0": eps0, "output": output})
    assert np.all(one <= ref * (1 + 1e-12))


def test_headline_nested_equals_subsampled_shuffle():
    ev = nested(10**6, 1000, [{"mechanism": "shuffle", "epsilon0": 2.0}], 10**5)
    ss = {"mechanism": "subsampled_shuffle", "n": 10**6, "k": 1000, "epsilon0": 2.0, "count": 10**5}
    assert A.epsilon([ev], 1e-8)[0] == pytest.approx(A.epsilon([ss], 1e-8)[0], rel=1e-12)


def test_shared_sampling_is_not_the_sum_of_separately_amplified_messages():
    """Pure DP shows why: one sampled round of two ε-DP releases is log(1+γ(e^{2ε}−1))-DP, more
    than twice log(1+γ(e^ε−1)); at large orders the RDP approaches the pure level."""
    n, k, eps = 1000, 10, 1.0
    gamma = k / n
    shared = A.event_rdp(nested(n, k, [{"mechanism": "pure_dp", "epsilon": eps, "count": 2}]), [10**5])[0]
    separate = 2 * A.event_rdp(nested(n, k, [{"mechanism": "pure_dp", "epsilon": eps}]), [10**5])[0]
    # the RDP at a huge order of an ε'-DP mechanism exceeds ε' minus the conversion's log term; the
    # exact sampled pure-DP pair (randomized response inside the sample) attains the amplified level
    assert shared <= math.log1p(gamma * math.expm1(2 * eps)) * (1 + 1e-12)
    assert separate < math.log1p(gamma * math.expm1(2 * eps))
    assert shared > separate


def test_every_candidate_is_an_upper_bound_of_the_result():
    n, k = 20_000, 200
    inner = [{"mechanism": "shuffle", "epsilon0": 0.6, "count": 3}, {"mechanism": "laplace", "scale": 4.0}]
    got = A.event_rdp(nested(n, k, inner), ORDERS)
    inner_curve = 3 * A.event_rdp({"mechanism": "shuffle", "n": k, "epsilon0": 0.6}, ORDERS) + A.event_rdp(
        {"mechanism": "laplace", "scale": 4.0}, ORDERS
    )
    assert np.all(got <= inner_curve * (1 + 1e-12))
    eps_inf = 3 * 0.6 + 0.25
    cap = A.event_rdp({"mechanism": "pure_dp", "epsilon": math.log1p(k / n * math.expm1(eps_inf))}, ORDERS)
    assert np.all(got <= cap * (1 + 1e-12))
    assert np.all(np.isfinite(got)) and np.all(got > 0)


def test_sources_and_json_form():
    ev = A.event_from_dict(nested(1000, 10, [{"mechanism": "shuffle", "epsilon0": 1.0, "count": 2}], 7))
    d = ev.to_dict()
    assert d == {
        "mechanism": "subsampled",
        "n": 1000,
        "k": 10,
        "count": 7,
        "inner": [{"mechanism": "shuffle", "epsilon0": 1.0, "count": 2}],
    }  # inner n implied
    assert ev.inner[0].n == 10 and A.event_from_dict(d) == ev
    # the inner n may be given when it is k
    assert (
        A.event_from_dict(
            nested(1000, 10, [{"mechanism": "shuffle", "n": 10, "epsilon0": 1.0, "count": 2}], 7)
        )
        == ev
    )
    sources, _ = ev.curve_sources(np.array([2.0, 10.0, 2.5]))
    assert len(sources) == 3 and all(isinstance(s, str) and s for s in sources)
    hash(ev)


def test_k_substitution_in_the_json_form_moves_the_inner_population():
    d = A.event_from_dict(nested(1000, 10, [{"mechanism": "shuffle", "epsilon0": 1.0}])).to_dict()
    d["k"] = 20
    assert A.event_from_dict(d).inner[0].n == 20


@pytest.mark.parametrize(
    "bad,match",
    [
        (nested(100, 10, [{"mechanism": "shuffle", "n": 11, "epsilon0": 1}]), "must be 10"),
        (
            nested(100, 10, [{"mechanism": "subsampled_shuffle", "n": 10, "k": 2, "epsilon0": 1}]),
            "cannot sample again",
        ),
        (nested(100, 10, [nested(10, 2, [{"mechanism": "pure_dp", "epsilon": 1}])]), "cannot sample again"),
        (nested(100, 10, []), "1 to 100 events"),
        (nested(100, 10, {"mechanism": "pure_dp", "epsilon": 1}), "list of events"),
        (nested(100, 101, [{"mechanism": "pure_dp", "epsilon": 1}]), "k must be <= 100"),
        (nested(100, 10, [{"mechanism": "shuffle", "epsilon0": -1}]), r"inner\[0\]: epsilon0 must be >= 0"),
        ({**nested(100, 10, [{"mechanism": "pure_dp", "epsilon": 1}]), "sampling": "poisson"}, "Poisson"),
    ],
)
def test_bad_nested_events(bad, match):
    with pytest.raises(InvalidEvent, match=match):
        A.event_from_dict(bad)


def test_gaussian_inner_event_has_a_finite_curve():
    """A non-pure inner mechanism (ε(∞) = ∞): WBK19 with min{2, ·} = 2 and the inner curve remain."""
    ev = nested(10**5, 100, [{"mechanism": "gaussian", "noise_multiplier": 2.0}], 1000)
    eps, order = A.epsilon([ev], 1e-6)
    alone = A.epsilon([{"mechanism": "gaussian", "noise_multiplier": 2.0, "count": 1000}], 1e-6)[0]
    assert 0 < eps < alone and math.isfinite(order)


@pytest.mark.parametrize("solve_for,target", [("count", 1.0), ("n", 1.0), ("k", 0.5)])
def test_calibration_solves_the_outer_fields(solve_for, target):
    full = nested(200_000, 500, [{"mechanism": "shuffle", "epsilon0": 1.0, "count": 3}], 400)
    part = {k: v for k, v in full.items() if k != solve_for}
    r = A.calibrate(part, solve_for, target, 1e-6)
    assert r.epsilon <= target and A.epsilon([r.event], 1e-6)[0] == pytest.approx(r.epsilon, rel=1e-12)
    if not r.at_limit:  # one step further misses the target
        step = {"count": 1, "n": -1, "k": 1}[solve_for]
        assert A.epsilon([{**r.event, solve_for: r.event[solve_for] + step}], 1e-6)[0] > target
    assert A.event_from_dict(r.event).inner[0].n == r.event["k"]
