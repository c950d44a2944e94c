"""Shuffle-model Rényi-DP accountant: bounds, conversion, composition, calibration.

Pure numpy/scipy; no web, no database. Public API::

    shuffle_rdp(n, epsilon0, orders, bound="upper")
    subsampled_shuffle_rdp(n, k, epsilon0, orders, bound="upper")
    epsilon_from_rdp(orders, rdp, delta) -> (epsilon, order)
    delta_from_rdp(orders, rdp, epsilon) -> (delta, order)
    compose(events, orders=None) -> curve
    epsilon(events, delta, accounting="best");  delta(events, epsilon, accounting="best")
    epsilon_routed / delta_routed -> RoutedGuarantee (the route that won, every route's value)
    account(events, orders=None) -> Account (RDP part, additive δ, (ε, δ) releases)
    DEFAULT_ORDERS, event classes and event_from_dict
    from_dp_event(dp_event) -> [Event];  to_dp_event(events) -> DpEvent  (dp_accounting interop)

Formulas and their corrections: see each function's docstring (bounds.md in the docs).
"""

from .bounds import (
    SHUFFLE_BOUNDS,
    SUBSAMPLED_BOUNDS,
    CurveDetail,
    shuffle_rdp,
    shuffle_upper_detail,
    subsampled_shuffle_rdp,
    subsampled_upper_detail,
)
from .calibration import SOLVE_FOR, CalibrationResult, RoundsCurve, calibrate, epsilon_over_rounds
from .combination import Account, ApproxPart, ZetaExceedsDelta
from .composition import (
    Guarantee,
    account,
    compose,
    delta_guarantee,
    epsilon_guarantee,
    event_rdp,
)
from .conversion import delta_from_rdp, epsilon_from_rdp
from .errors import (
    AccountantError,
    BoundNotApplicable,
    InfeasibleTarget,
    InvalidEvent,
    InvalidParameter,
    UnsupportedDpEvent,
)
from .events import (
    EVENT_TYPES,
    AboveThresholdEvent,
    ApproxDpEvent,
    Event,
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    NeighboringRelation,
    PureDpEvent,
    RdpCurveEvent,
    ShuffleEvent,
    ShuffleRREvent,
    SubsampledEvent,
    SubsampledShuffleEvent,
    SubsampledShuffleRREvent,
    as_event,
    event_from_dict,
)
from .interop import from_dp_event, to_dp_event
from .orders import DEFAULT_GRID_VERSION, DEFAULT_ORDERS
from .routes import ACCOUNTING, RoutedGuarantee, RouteValue, delta, delta_routed, epsilon, epsilon_routed

__all__ = [
    "UnsupportedDpEvent",
    "from_dp_event",
    "to_dp_event",
    "SOLVE_FOR",
    "CalibrationResult",
    "RoundsCurve",
    "calibrate",
    "epsilon_over_rounds",
    "SHUFFLE_BOUNDS",
    "SUBSAMPLED_BOUNDS",
    "CurveDetail",
    "shuffle_rdp",
    "shuffle_upper_detail",
    "subsampled_shuffle_rdp",
    "subsampled_upper_detail",
    "Account",
    "ApproxPart",
    "ZetaExceedsDelta",
    "Guarantee",
    "account",
    "compose",
    "delta",
    "delta_guarantee",
    "epsilon",
    "epsilon_guarantee",
    "event_rdp",
    "delta_from_rdp",
    "epsilon_from_rdp",
    "AccountantError",
    "BoundNotApplicable",
    "InfeasibleTarget",
    "InvalidEvent",
    "InvalidParameter",
    "EVENT_TYPES",
    "AboveThresholdEvent",
    "ApproxDpEvent",
    "Event",
    "ExponentialEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "PureDpEvent",
    "RdpCurveEvent",
    "ShuffleEvent",
    "ShuffleRREvent",
    "NeighboringRelation",
    "SubsampledEvent",
    "SubsampledShuffleEvent",
    "SubsampledShuffleRREvent",
    "as_event",
    "event_from_dict",
    "ACCOUNTING",
    "RoutedGuarantee",
    "RouteValue",
    "delta_routed",
    "epsilon_routed",
    "DEFAULT_GRID_VERSION",
    "DEFAULT_ORDERS",
]
