"""The pydantic event schema covers every accountant event type and round-trips api.md events."""

import math

import pytest
from pydantic import ValidationError

import accountant
from app.schemas.events import EVENT_MODELS, EventAdapter, parse_event

API_MD_EVENTS = [
    {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100},
    {"mechanism": "subsampled_shuffle", "n": 1000000, "k": 1000, "epsilon0": 2.0, "count": 100000},
    {"mechanism": "rdp_curve", "orders": [2, 4, 8], "rdp": [0.01, 0.03, 0.09], "count": 1},
]


def test_every_accountant_event_type_has_a_model():
    assert set(EVENT_MODELS) == set(accountant.EVENT_TYPES)
    mapping = EventAdapter.json_schema()["discriminator"]["mapping"]
    assert set(mapping) == set(accountant.EVENT_TYPES)


def test_every_model_example_is_accepted_by_the_accountant():
    for name, model in EVENT_MODELS.items():
        for ex in model.model_config["json_schema_extra"]["examples"]:
            ev = parse_event(ex)
            assert ev.mechanism == name
            assert (
                accountant.event_from_dict(ev.to_accountant()).to_dict()
                == accountant.event_from_dict(ex).to_dict()
            )


@pytest.mark.parametrize("d", API_MD_EVENTS)
def test_api_md_events_round_trip(d):
    ev = parse_event(d)
    assert ev.to_event() == accountant.event_from_dict(d)


@pytest.mark.parametrize(
    "bad",
    [
        {"mechanism": "shuffle", "n": "1000", "epsilon0": 1.0},
        {"mechanism": "shuffle", "n": True, "epsilon0": 1.0},
        {"mechanism": "shuffle", "n": 0, "epsilon0": 1.0},
        {"mechanism": "shuffle", "n": 10**15, "epsilon0": 1.0},
        {"mechanism": "shuffle", "n": 1.5, "epsilon0": 1.0},
        {"mechanism": "shuffle", "n": 100, "epsilon0": 1e308},
        {"mechanism": "shuffle", "n": 100, "epsilon0": math.nan},
        {"mechanism": "shuffle", "n": 100, "epsilon0": math.inf},
        {"mechanism": "shuffle", "n": 100, "epsilon0": 1.0, "extra": 1},
        {"mechanism": "shuffle", "n": 100},
        {"mechanism": "poisson", "n": 100, "epsilon0": 1.0},
        {"n": 100, "epsilon0": 1.0},
        {"mechanism": "subsampled_shuffle", "n": 100, "k": 10, "epsilon0": 1.0, "sampling": "poisson"},
        {"mechanism": "rdp_curve", "orders": [1], "rdp": [0.1]},
        {"mechanism": "rdp_curve", "orders": [], "rdp": []},
        {"mechanism": "rdp_curve", "orders": [2], "rdp": [-0.1]},
        {"mechanism": "gaussian", "noise_multiplier": 0},
    ],
)
def test_malformed_events_are_refused(bad):
    with pytest.raises(ValidationError):
        parse_event(bad)


def test_integral_float_is_an_integer():
    assert parse_event({"mechanism": "shuffle", "n": 1e6, "epsilon0": 1}).n == 1_000_000
