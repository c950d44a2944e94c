"""Pydantic v2 models of the api.md event objects: a discriminated union on ``mechanism``.

One model per type in :data:`accountant.EVENT_TYPES`. Field bounds mirror the accountant's own
checks (``accountant/_validation.py``) so that the published schema says what is accepted; the
accountant stays the final judge (its errors become ``400``).

Numbers must be JSON numbers: strings (``"1000"``) and booleans are refused, as are NaN and
±Infinity. Integer fields accept integral floats (``1e6``). Unknown fields are refused.

Use :data:`Event` as a field type, :data:`EventAdapter` to validate a dict, and
``event.to_accountant()`` to get the api.md dict that :func:`accountant.event_from_dict` accepts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter

import accountant
from accountant._validation import MAX_COUNT, MAX_EPSILON0, MAX_ORDER

#: most points an ``rdp_curve`` event (or an ``orders`` list) may carry over HTTP
MAX_CURVE_POINTS = 1000
#: most users (n, k) an event may describe over HTTP: 10¹² is already ~100× any real population;
#: 10¹⁵ (the accountant's own ceiling) is refused as a likely mistake
MAX_USERS = 10**12


def _json_number(v: Any) -> Any:
    """Refuse strings and booleans where a number is expected (pydantic's lax mode would coerce)."""
    if isinstance(v, bool):
        raise ValueError("must be a JSON number, not a boolean")
    if isinstance(v, (str, bytes)):
        raise ValueError("must be a JSON number, not a string (write 1000, not \"1000\")")
    return v


_NUMBER = BeforeValidator(_json_number)


def num(**constraints) -> Any:
    """A finite JSON number with the given pydantic constraints (ge, gt, le, description, ...)."""
    return Annotated[float, Field(**constraints), _NUMBER]


def integer(**constraints) -> Any:
    """A JSON integer (integral floats like 1e6 accepted) with the given constraints."""
    return Annotated[int, Field(**constraints), _NUMBER]


Num = num()
Int = integer()
PositiveInt = integer(ge=1, le=MAX_USERS)
Count = integer(ge=1, le=MAX_COUNT, description="how many times the release is repeated")
Epsilon0 = num(ge=0, le=MAX_EPSILON0, description="local privacy parameter ε0 of each report")
Order = num(gt=1, le=MAX_ORDER, description="a Rényi order α > 1")
Output = Literal["discrete", "continuous"]


class StrictModel(BaseModel):
    """Base: unknown fields refused, NaN/Infinity refused in every float."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _EventBase(StrictModel):
    def to_accountant(self) -> dict:
        """The api.md dict of this event (accepted by :func:`accountant.event_from_dict`)."""
        return self.model_dump(mode="python", exclude_none=True)

    def to_event(self):
        """The :mod:`accountant` event object (raises :class:`accountant.AccountantError`)."""
        return accountant.event_from_dict(self.to_accountant())


class ShuffleEvent(_EventBase):
    """n users each send one ε0-LDP report through a shuffler (thesis §5.3)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100}]},
    )
    mechanism: Literal["shuffle"]
    n: PositiveInt = Field(description="number of users whose reports are shuffled (1 … 10¹²)")
    epsilon0: Epsilon0
    count: Count = 1
    output: Output = Field(
        "discrete",
        description="output range of the local randomizer: 'discrete' (thesis ch. 5 bounds apply) or "
        "'continuous' (only the pure-DP cap and the clone bound apply)",
    )


class SubsampledShuffleEvent(_EventBase):
    """k of n users sampled uniformly without replacement, each sends one ε0-LDP report, the k
    reports are shuffled (thesis §5.4)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"mechanism": "subsampled_shuffle", "n": 1000000, "k": 1000, "epsilon0": 2.0, "count": 100000}
            ]
        },
    )
    mechanism: Literal["subsampled_shuffle"]
    n: PositiveInt = Field(description="population size (1 … 10¹²)")
    k: PositiveInt = Field(description="users sampled per round (1 ≤ k ≤ n)")
    epsilon0: Epsilon0
    count: Count = 1
    output: Output = "discrete"
    sampling: Literal["without_replacement"] = Field(
        "without_replacement",
        description="only uniform sampling of k of n without replacement is covered by the theorems",
    )


class RdpCurveEvent(_EventBase):
    """An explicit RDP curve from elsewhere; extended between known orders by convexity, unknown
    (not used) above the largest known order."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"mechanism": "rdp_curve", "orders": [2, 4, 8], "rdp": [0.01, 0.03, 0.09], "count": 1}]
        },
    )
    mechanism: Literal["rdp_curve"]
    orders: list[Order] = Field(min_length=1, max_length=MAX_CURVE_POINTS)
    rdp: list[num(ge=0, le=1e300)] = Field(
        min_length=1, max_length=MAX_CURVE_POINTS, description="RDP ε(α) at each order (same length as orders)"
    )
    count: Count = 1


class GaussianEvent(_EventBase):
    """Central Gaussian mechanism, σ = noise_multiplier × ℓ2 sensitivity (Mironov 2017, Prop. 7)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"mechanism": "gaussian", "noise_multiplier": 1.1, "count": 1000}]},
    )
    mechanism: Literal["gaussian"]
    noise_multiplier: num(gt=0, le=1e12)
    count: Count = 1


class LaplaceEvent(_EventBase):
    """Central Laplace mechanism, b = scale × ℓ1 sensitivity (Mironov 2017, Prop. 6)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"mechanism": "laplace", "scale": 2.0, "count": 10}]},
    )
    mechanism: Literal["laplace"]
    scale: num(gt=0, le=1e12)
    count: Count = 1


class PureDpEvent(_EventBase):
    """Any ε-DP release (e.g. one ε0-LDP report sent without a shuffler)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"mechanism": "pure_dp", "epsilon": 0.5, "count": 3}]},
    )
    mechanism: Literal["pure_dp"]
    epsilon: num(ge=0, le=MAX_EPSILON0)
    count: Count = 1


EVENT_MODELS: dict[str, type[_EventBase]] = {
    "shuffle": ShuffleEvent,
    "subsampled_shuffle": SubsampledShuffleEvent,
    "rdp_curve": RdpCurveEvent,
    "gaussian": GaussianEvent,
    "laplace": LaplaceEvent,
    "pure_dp": PureDpEvent,
}

#: The api.md event, discriminated on ``mechanism``.
Event = Annotated[
    Union[
        ShuffleEvent,
        SubsampledShuffleEvent,
        RdpCurveEvent,
        GaussianEvent,
        LaplaceEvent,
        PureDpEvent,
    ],
    Field(discriminator="mechanism"),
]

EventAdapter: TypeAdapter = TypeAdapter(Event)


def parse_event(data: Any):
    """Validate an api.md event dict (raises :class:`pydantic.ValidationError`)."""
    return EventAdapter.validate_python(data)


__all__ = [
    "Event", "EventAdapter", "EVENT_MODELS", "parse_event", "StrictModel", "ShuffleEvent", "SubsampledShuffleEvent",
    "RdpCurveEvent", "GaussianEvent", "LaplaceEvent", "PureDpEvent", "MAX_CURVE_POINTS", "MAX_USERS", "Num", "Int",
    "num", "integer",
]
