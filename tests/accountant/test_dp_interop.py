"""dp_accounting interop (issue 26, item 3): ``from_dp_event`` / ``to_dp_event``.

The reference is dp_accounting itself: its RDP accountant with ``NeighboringRelation.REPLACE_ONE``
(the relation of every event here). At dp_accounting's own orders, our curve for the converted
event is never below its curve for the original (same theorem: equal up to rounding; randomized
response: the pure-DP curve, above k-RR's), and so is our ε converted at those orders (the same
conversion). Our reported ε may be lower only because it also tries real orders between the grid's
(the same valid curve at more orders): it is never below dp_accounting's own ε on a dense grid of
orders by more than 10⁻⁴ relative (checked for the events dp_accounting computes quickly).
"""

from __future__ import annotations

import numpy as np
import pytest

import accountant as A

dpa = pytest.importorskip("dp_accounting")
de = dpa.dp_event
from dp_accounting.rdp import RdpAccountant  # noqa: E402

RELATION = dpa.NeighboringRelation.REPLACE_ONE
DENSE = [1.1 + 0.05 * i for i in range(380)] + [20.0 + i for i in range(380)]
ORDERS = [1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0, 128.0, 256.0]

SUPPORTED = {
    "gaussian": de.GaussianDpEvent(1.3),
    "laplace": de.LaplaceDpEvent(2.0),
    "randomized_response": de.RandomizedResponseDpEvent(0.4, 5),
    "self_composed": de.SelfComposedDpEvent(de.GaussianDpEvent(4.0), 50),
    "composed": de.ComposedDpEvent(
        [de.GaussianDpEvent(3.0), de.SelfComposedDpEvent(de.LaplaceDpEvent(20.0), 3)]
    ),
    "sampled": de.SelfComposedDpEvent(
        de.SampledWithoutReplacementDpEvent(10**6, 10**4, de.GaussianDpEvent(1.1)), 1000
    ),
    "sampled_composed": de.SelfComposedDpEvent(
        de.SampledWithoutReplacementDpEvent(
            10**5,
            500,
            de.ComposedDpEvent([de.GaussianDpEvent(2.0), de.SelfComposedDpEvent(de.GaussianDpEvent(3.0), 2)]),
        ),
        300,
    ),
}


def _theirs(event, delta: float) -> tuple[np.ndarray, float]:
    acc = RdpAccountant(orders=ORDERS, neighboring_relation=RELATION)
    acc.compose(event)
    return np.asarray(acc._rdp, dtype=float), acc.get_epsilon(delta)  # noqa: SLF001 - the curve itself


@pytest.mark.parametrize("name", sorted(SUPPORTED))
def test_converted_events_never_account_less_than_dp_accounting(name):
    original = SUPPORTED[name]
    events = A.from_dp_event(original)
    assert events and all(isinstance(e, A.Event) for e in events)
    curve, eps = _theirs(original, 1e-6)
    ours = A.compose(events, ORDERS)
    assert np.all(ours >= curve * (1 - 1e-9)), (ours, curve)
    at_grid, _ = A.epsilon_from_rdp(ORDERS, ours, 1e-6)
    assert at_grid >= eps * (1 - 1e-12), (at_grid, eps)
    refined = A.epsilon_routed(events, 1e-6, ORDERS, accounting="rdp").epsilon
    assert refined <= at_grid
    if not name.startswith("sampled"):  # dp_accounting's sampled curve takes ~40 s on the dense grid
        acc = RdpAccountant(orders=DENSE, neighboring_relation=RELATION)
        acc.compose(original)
        assert refined >= acc.get_epsilon(1e-6) * (1 - 1e-4)


def test_the_mapping_reads_each_field():
    (g,) = A.from_dp_event(SUPPORTED["gaussian"])
    assert g.to_dict() == {"mechanism": "gaussian", "noise_multiplier": 1.3, "count": 1}
    (s,) = A.from_dp_event(SUPPORTED["sampled_composed"])
    d = s.to_dict()
    assert (d["n"], d["k"], d["count"]) == (10**5, 500, 300)
    assert [(i["noise_multiplier"], i["count"]) for i in d["inner"]] == [(2.0, 1), (3.0, 2)]
    (rr,) = A.from_dp_event(SUPPORTED["randomized_response"])
    assert rr.epsilon >= np.log(5 / 0.4 - 5 + 1) and rr.epsilon == pytest.approx(np.log(8.5), rel=1e-14)
    assert A.from_dp_event(de.NoOpDpEvent()) == []


@pytest.mark.parametrize(
    "event,why",
    [
        (de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1.0)), "Poisson sampling"),
        (de.SampledWithReplacementDpEvent(100, 10, de.GaussianDpEvent(1.0)), "with replacement"),
        (de.SingleEpochTreeAggregationDpEvent(1.0, 8), "REPLACE_SPECIAL"),
        (de.NonPrivateDpEvent(), "no guarantee"),
        (de.ZCDpEvent(0.1), "no bound of this service covers it"),
        (de.UnsupportedDpEvent(), "no bound of this service covers it"),
        (
            de.SampledWithoutReplacementDpEvent(
                100, 10, de.SampledWithoutReplacementDpEvent(10, 5, de.GaussianDpEvent(1.0))
            ),
            "sampling again",
        ),
        (de.RandomizedResponseDpEvent(0.0, 2), "no guarantee"),
        (
            de.ComposedDpEvent(
                [de.GaussianDpEvent(1.0), de.PoissonSampledDpEvent(0.1, de.GaussianDpEvent(1.0))]
            ),
            "Poisson",
        ),
    ],
)
def test_what_no_bound_covers_is_refused_saying_why(event, why):
    with pytest.raises(A.UnsupportedDpEvent, match=why) as info:
        A.from_dp_event(event)
    assert isinstance(info.value, A.InvalidEvent)


@pytest.mark.parametrize(
    "name", ["gaussian", "laplace", "self_composed", "composed", "sampled", "sampled_composed"]
)
def test_to_dp_event_is_faithful_where_it_exists(name):
    events = A.from_dp_event(SUPPORTED[name])
    back = A.to_dp_event(events)
    assert A.from_dp_event(back) == events
    if name in ("gaussian", "self_composed", "sampled"):
        assert back == SUPPORTED[name]


@pytest.mark.parametrize(
    "event",
    [
        {"mechanism": "shuffle", "n": 1000, "epsilon0": 1.0},
        {"mechanism": "pure_dp", "epsilon": 1.0},
        {"mechanism": "gaussian", "noise_multiplier": 1.0, "zeta": 1e-9},
        {"mechanism": "subsampled", "n": 100, "k": 10, "inner": [{"mechanism": "shuffle", "epsilon0": 1.0}]},
    ],
)
def test_to_dp_event_refuses_what_no_dp_event_means(event):
    with pytest.raises(A.UnsupportedDpEvent, match="DpEvent"):
        A.to_dp_event(event)
