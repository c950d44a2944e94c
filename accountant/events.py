"""Immutable descriptions of private releases (the ``api.md`` event objects).

As in Google's dp_accounting, an event only *describes* a release; the accountant
(:mod:`accountant.composition`) interprets it. Every event is a frozen, hashable dataclass with
``count`` (how many times the release is repeated) and converts to and from exactly the JSON
form of ``api.md``:

    {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100}
    {"mechanism": "subsampled_shuffle", "n": 1000000, "k": 1000, "epsilon0": 2.0, "count": 100000}
    {"mechanism": "rdp_curve", "orders": [2, 4, 8], "rdp": [0.01, 0.03, 0.09], "count": 1}

Neighbouring relation: replace-one (a user's whole data replaced) for every event type.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Union

from ._validation import (
    MAX_COUNT,
    check_curve,
    check_epsilon0,
    check_float,
    check_int,
    check_n,
)
from .errors import InvalidEvent

SAMPLINGS = ("without_replacement",)


@dataclass(frozen=True)
class _Event:
    mechanism: ClassVar[str] = ""
    _optional_defaults: ClassVar[dict[str, Any]] = {}

    def to_dict(self) -> dict:
        """The api.md JSON form (optional fields only when they differ from their default)."""
        d: dict[str, Any] = {"mechanism": self.mechanism}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in self._optional_defaults and v == self._optional_defaults[f.name]:
                continue
            d[f.name] = list(v) if isinstance(v, tuple) else v
        return d

    def with_count(self, count: int):
        from dataclasses import replace

        return replace(self, count=check_int("count", count, 1, MAX_COUNT))


def _count(v) -> int:
    return check_int("count", v, 1, MAX_COUNT)


@dataclass(frozen=True)
class ShuffleEvent(_Event):
    """n users each send one ε0-LDP report through a shuffler (thesis §5.3; bounds.md §1, §8).

    ``output``: ``discrete`` (default; the thesis's ch. 5 bounds apply) or ``continuous``
    (only the pure-DP cap and the clone bound apply).
    """

    n: int
    epsilon0: float
    count: int = 1
    output: str = "discrete"
    mechanism: ClassVar[str] = "shuffle"
    _optional_defaults: ClassVar[dict[str, Any]] = {"output": "discrete"}

    def __post_init__(self):
        object.__setattr__(self, "n", check_n(self.n))
        object.__setattr__(self, "epsilon0", check_epsilon0(self.epsilon0))
        object.__setattr__(self, "count", _count(self.count))
        if self.output not in ("discrete", "continuous"):
            raise InvalidEvent(f"output must be 'discrete' or 'continuous', got {self.output!r}")


@dataclass(frozen=True)
class SubsampledShuffleEvent(_Event):
    """k of n users sampled uniformly without replacement, each sends one ε0-LDP report, the k
    reports are shuffled (thesis §5.4; bounds.md §3, §8). Poisson sampling is not covered."""

    n: int
    k: int
    epsilon0: float
    count: int = 1
    output: str = "discrete"
    sampling: str = "without_replacement"
    mechanism: ClassVar[str] = "subsampled_shuffle"
    _optional_defaults: ClassVar[dict[str, Any]] = {"output": "discrete", "sampling": "without_replacement"}

    def __post_init__(self):
        n = check_n(self.n)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "k", check_int("k", self.k, 1, n))
        object.__setattr__(self, "epsilon0", check_epsilon0(self.epsilon0))
        object.__setattr__(self, "count", _count(self.count))
        if self.output not in ("discrete", "continuous"):
            raise InvalidEvent(f"output must be 'discrete' or 'continuous', got {self.output!r}")
        if self.sampling not in SAMPLINGS:
            raise InvalidEvent(
                f"sampling {self.sampling!r} is not supported: the subsampled-shuffle bounds hold only for "
                "sampling k of n users uniformly without replacement ('without_replacement'); Poisson sampling "
                "and client self-sampling (a random number of reports) are not covered by these theorems"
            )


@dataclass(frozen=True)
class RdpCurveEvent(_Event):
    """An explicit RDP curve (orders, rdp) from elsewhere. Between known orders the curve is
    extended by convexity of (α−1)ε(α) and monotonicity of ε(α); below the smallest known order
    by monotonicity; above the largest it is unknown (+inf, that order is not used)."""

    orders: tuple
    rdp: tuple
    count: int = 1
    mechanism: ClassVar[str] = "rdp_curve"

    def __post_init__(self):
        o, r = check_curve(self.orders, self.rdp)
        object.__setattr__(self, "orders", tuple(float(x) for x in o))
        object.__setattr__(self, "rdp", tuple(float(x) for x in r))
        object.__setattr__(self, "count", _count(self.count))


@dataclass(frozen=True)
class GaussianEvent(_Event):
    """Central Gaussian mechanism with noise standard deviation σ = noise_multiplier × ℓ2
    sensitivity: ε(α) = α/(2σ²) (Mironov 2017, Prop. 7), replace-one neighbours with the
    sensitivity taken over replacing one user's data."""

    noise_multiplier: float
    count: int = 1
    mechanism: ClassVar[str] = "gaussian"

    def __post_init__(self):
        object.__setattr__(self, "noise_multiplier", check_float("noise_multiplier", self.noise_multiplier, 0.0, 1e12, lo_open=True))
        object.__setattr__(self, "count", _count(self.count))


@dataclass(frozen=True)
class LaplaceEvent(_Event):
    """Central Laplace mechanism with scale b = scale × ℓ1 sensitivity (Mironov 2017, Prop. 6):
    ε(α) = 1/(α−1)·log(α/(2α−1)·e^{(α−1)/b} + (α−1)/(2α−1)·e^{−α/b})."""

    scale: float
    count: int = 1
    mechanism: ClassVar[str] = "laplace"

    def __post_init__(self):
        object.__setattr__(self, "scale", check_float("scale", self.scale, 0.0, 1e12, lo_open=True))
        object.__setattr__(self, "count", _count(self.count))


@dataclass(frozen=True)
class PureDpEvent(_Event):
    """Any ε-DP release (e.g. one ε0-LDP report sent without a shuffler): the tight pure-DP curve
    ĉ_ε(α) (bounds.md §1)."""

    epsilon: float
    count: int = 1
    mechanism: ClassVar[str] = "pure_dp"

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon0(self.epsilon, "epsilon"))
        object.__setattr__(self, "count", _count(self.count))


Event = Union[ShuffleEvent, SubsampledShuffleEvent, RdpCurveEvent, GaussianEvent, LaplaceEvent, PureDpEvent]
EVENT_TYPES: dict[str, type] = {
    cls.mechanism: cls
    for cls in (ShuffleEvent, SubsampledShuffleEvent, RdpCurveEvent, GaussianEvent, LaplaceEvent, PureDpEvent)
}


def event_from_dict(d: Mapping) -> Event:
    """Build an event from its api.md dict form. Unknown mechanisms, missing and unknown fields
    are errors (never silently defaulted)."""
    if not isinstance(d, Mapping):
        raise InvalidEvent(f"an event must be an object with a 'mechanism' field, got {type(d).__name__}")
    mech = d.get("mechanism")
    if mech is None:
        raise InvalidEvent(f"event is missing the field 'mechanism' (one of {sorted(EVENT_TYPES)})")
    cls = EVENT_TYPES.get(mech)
    if cls is None:
        raise InvalidEvent(f"unknown mechanism {mech!r}; known mechanisms: {sorted(EVENT_TYPES)}")
    flds = {f.name: f for f in fields(cls)}
    unknown = sorted(set(d) - set(flds) - {"mechanism"})
    if unknown:
        raise InvalidEvent(f"unknown field(s) {unknown} for mechanism {mech!r}; allowed: {sorted(flds)}")
    required = [name for name, f in flds.items() if _no_default(f)]
    missing = [name for name in required if name not in d]
    if missing:
        raise InvalidEvent(f"event {mech!r} is missing required field(s) {missing}")
    kwargs = {k: v for k, v in d.items() if k != "mechanism"}
    for k, v in kwargs.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise InvalidEvent(f"field {k!r} of event {mech!r} must be finite, got {v!r}")
    return cls(**kwargs)


def _no_default(f) -> bool:
    from dataclasses import MISSING

    return f.default is MISSING and f.default_factory is MISSING


def as_event(e) -> Event:
    """Accept an event object or its api.md dict form."""
    if isinstance(e, tuple(EVENT_TYPES.values())):
        return e
    return event_from_dict(e)
