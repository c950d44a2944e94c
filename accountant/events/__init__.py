"""Immutable descriptions of private releases (the ``api.md`` event objects), one declaration
per event type (:mod:`accountant.events._declare` explains the rule and the machinery):

    {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100}
    {"mechanism": "subsampled_shuffle", "n": 1000000, "k": 1000, "epsilon0": 2.0, "count": 100000}
    {"mechanism": "subsampled", "n": 1000000, "k": 1000, "count": 100,
     "inner": [{"mechanism": "shuffle", "epsilon0": 0.5, "count": 4}]}
    {"mechanism": "rdp_curve", "orders": [2, 4, 8], "rdp": [0.01, 0.03, 0.09], "count": 1}
    {"mechanism": "gaussian", "noise_multiplier": 1.1}, {"mechanism": "laplace", "scale": 2.0},
    {"mechanism": "pure_dp", "epsilon": 0.5}

Every type's neighbouring relation, sampling assumption and source are its ``RELATION``,
``SAMPLING`` and ``SOURCE`` attributes.
"""

from ._declare import (
    EVENT_TYPES,
    MAX_COUNT,
    MAX_EPSILON0,
    MAX_ITEMS,
    MAX_ORDER,
    MAX_USERS,
    REPLACE_ONE,
    Event,
    Spec,
    as_event,
    cached_unit_curve,
    count_field,
    epsilon0_field,
    event_from_dict,
    inner_types,
    register,
    spec,
    users_field,
)
from .central import GaussianEvent, LaplaceEvent, PureDpEvent, RdpCurveEvent
from .local import ShuffleEvent, SubsampledShuffleEvent
from .sampled import SubsampledEvent

__all__ = [
    "EVENT_TYPES",
    "MAX_COUNT",
    "MAX_EPSILON0",
    "MAX_ITEMS",
    "MAX_ORDER",
    "MAX_USERS",
    "REPLACE_ONE",
    "Event",
    "Spec",
    "as_event",
    "cached_unit_curve",
    "count_field",
    "epsilon0_field",
    "event_from_dict",
    "inner_types",
    "register",
    "spec",
    "users_field",
    "GaussianEvent",
    "LaplaceEvent",
    "PureDpEvent",
    "RdpCurveEvent",
    "ShuffleEvent",
    "SubsampledShuffleEvent",
    "SubsampledEvent",
]
