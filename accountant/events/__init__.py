"""Immutable descriptions of private releases (the ``api.md`` event objects), one declaration
per event type (:mod:`accountant.events._declare` explains the rule and the machinery):

    {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100}
    {"mechanism": "subsampled_shuffle", "n": 1000000, "k": 1000, "epsilon0": 2.0, "count": 100000}
    {"mechanism": "subsampled", "n": 1000000, "k": 1000, "count": 100,
     "inner": [{"mechanism": "shuffle", "epsilon0": 0.5, "count": 4}]}
    {"mechanism": "rdp_curve", "orders": [2, 4, 8], "rdp": [0.01, 0.03, 0.09], "count": 1}
    {"mechanism": "gaussian", "noise_multiplier": 1.1}, {"mechanism": "laplace", "scale": 2.0},
    {"mechanism": "pure_dp", "epsilon": 0.5}, {"mechanism": "exponential", "epsilon": 0.5},
    {"mechanism": "above_threshold", "epsilon": 0.5},
    {"mechanism": "approx_dp", "epsilon": 0.1, "delta": 1e-8, "count": 20},
    {"mechanism": "gaussian", "noise_multiplier": 3.0, "count": 100, "zeta": 1e-10}

Central types may carry ``zeta``: the failure probability outside which their curve holds (an
additive δ; :attr:`Event.zeta` defines it and :mod:`accountant.combination` composes it).

Every type's neighbouring relation (a :class:`NeighboringRelation`, qualified by ``RELATION_NOTE``),
sampling assumption and source are its ``RELATION``, ``SAMPLING`` and ``SOURCE`` attributes.
"""

from ._declare import (
    EVENT_TYPES,
    MAX_COUNT,
    MAX_EPSILON0,
    MAX_ITEMS,
    MAX_ORDER,
    MAX_USERS,
    Calibrate,
    Event,
    EventLike,
    HeavyPart,
    NeighboringRelation,
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
    zeta_field,
)
from .central import GaussianEvent, LaplaceEvent, PureDpEvent, RdpCurveEvent
from .local import ShuffleEvent, ShuffleRREvent, SubsampledShuffleEvent, SubsampledShuffleRREvent
from .primitives import APPROX_NO_CURVE, AboveThresholdEvent, ApproxDpEvent, ExponentialEvent
from .sampled import SubsampledEvent

__all__ = [
    "EVENT_TYPES",
    "MAX_COUNT",
    "MAX_EPSILON0",
    "MAX_ITEMS",
    "MAX_ORDER",
    "MAX_USERS",
    "Calibrate",
    "Event",
    "EventLike",
    "HeavyPart",
    "NeighboringRelation",
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
    "zeta_field",
    "APPROX_NO_CURVE",
    "AboveThresholdEvent",
    "ApproxDpEvent",
    "ExponentialEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "PureDpEvent",
    "RdpCurveEvent",
    "ShuffleEvent",
    "ShuffleRREvent",
    "SubsampledShuffleEvent",
    "SubsampledShuffleRREvent",
    "SubsampledEvent",
]
