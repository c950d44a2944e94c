"""Pydantic v2 models of the api.md event objects, DERIVED from the accountant's declarations.

Every type in :data:`accountant.EVENT_TYPES` becomes three models, built here from its field
declarations (:class:`accountant.events.Spec`: kind, limits, description), its docstring and its
``RELATION``/``SAMPLING``/``SOURCE``/``EXAMPLE`` attributes — nothing is declared twice:

* ``<Type>`` (e.g. ``ShuffleEvent``): the full event, used by every endpoint that takes events;
* ``Partial<Type>``: the same with every ``solvable`` field optional (``/v1/calibrate`` leaves the
  unknown out);
* ``Inner<Type>``: the event inside a sampled event, where ``population`` fields (a shuffle's n)
  are implied by the sample size and may be omitted;
* ``PartialInner<Type>``: the inner event of a ``Partial`` sampled event — both kinds optional
  (``/v1/calibrate`` may solve for an inner event's field, e.g. a Gaussian's noise multiplier).

:data:`Event`, :data:`PartialEvent` are discriminated unions on ``mechanism``. Numbers must be
JSON numbers: strings (``"1000"``) and booleans are refused, as are NaN and ±Infinity; integer
fields accept integral floats (``1e6``); unknown fields are refused. Cross-field conditions
(k ≤ n, equal lengths) are the accountant's (its errors become ``400``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter

import accountant
from accountant.events import MAX_COUNT, MAX_EPSILON0, MAX_ITEMS, MAX_USERS, Spec, inner_types

#: most points an ``rdp_curve`` event (or an ``orders`` list) may carry
MAX_CURVE_POINTS = MAX_ITEMS


def _json_number(v: Any) -> Any:
    """Refuse strings and booleans where a number is expected (pydantic's lax mode would coerce)."""
    if isinstance(v, bool):
        raise ValueError("must be a JSON number, not a boolean")
    if isinstance(v, (str, bytes)):
        raise ValueError('must be a JSON number, not a string (write 1000, not "1000")')
    return v


#: the validator every JSON-number field carries (strings and booleans refused)
JSON_NUMBER = BeforeValidator(_json_number)


def num(**constraints: Any) -> Any:
    """A finite JSON number with the given pydantic constraints (ge, gt, le, description, ...)."""
    return Annotated[float, Field(**constraints), JSON_NUMBER]


def integer(**constraints: Any) -> Any:
    """A JSON integer (integral floats like 1e6 accepted) with the given constraints."""
    return Annotated[int, Field(**constraints), JSON_NUMBER]


Num = num()
Int = integer()
PositiveInt = integer(ge=1, le=MAX_USERS)
Count = integer(ge=1, le=MAX_COUNT, description="how many times the release is repeated")
Epsilon0 = num(ge=0, le=MAX_EPSILON0, description="local privacy parameter ε0 of each report")


class StrictModel(BaseModel):
    """Base: unknown fields refused, NaN/Infinity refused in every float."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _EventBase(StrictModel):
    def to_accountant(self) -> dict[str, Any]:
        """The api.md dict of this event (accepted by :func:`accountant.event_from_dict`)."""
        return self.model_dump(mode="python", exclude_none=True)

    def to_event(self) -> accountant.Event:
        """The :mod:`accountant` event object (raises :class:`accountant.AccountantError`)."""
        return accountant.event_from_dict(self.to_accountant())


def _bounds(s: Spec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if s.lo is not None:
        out["gt" if s.lo_open else "ge"] = s.lo
    if s.hi is not None:
        out["lt" if s.hi_open else "le"] = s.hi
    return out


def _annotation(s: Spec, inner: Any) -> Any:
    """The pydantic type of one declared field."""
    if s.kind == "integer":
        return integer(**_bounds(s))
    if s.kind == "number":
        return num(**_bounds(s))
    if s.kind == "choice":
        return Literal[s.choices]
    if s.kind == "numbers":
        return Annotated[list[num(**_bounds(s))], Field(min_length=1, max_length=s.max_items)]  # type: ignore[misc]  # a type built at run time
    return Annotated[list[inner], Field(min_length=1, max_length=s.max_items)]


def _doc(cls: type[accountant.Event]) -> str:
    return (
        f"{(cls.__doc__ or '').strip()}\n\nNeighbouring relation: {cls.relation_text()}.\n\n"
        f"Sampling: {cls.SAMPLING}.\n\nSource: {cls.SOURCE}."
    )


def _model(cls: type[accountant.Event], family: str, inner: Any) -> type[_EventBase]:
    """``family``: ``full``, ``partial`` (solvable fields optional), ``inner`` (population
    fields optional) or ``partial_inner`` (both)."""
    annotations: dict[str, Any] = {"mechanism": Literal[cls.mechanism]}
    namespace: dict[str, Any] = {}
    defaults = cls.defaults()
    for name, s in cls.specs().items():
        ann = _annotation(s, inner)
        optional = (family in ("partial", "partial_inner") and s.solvable) or (
            family in ("inner", "partial_inner") and s.population
        )
        if optional:
            annotations[name] = ann | None
            namespace[name] = Field(None, description=s.description)
        else:
            annotations[name] = ann
            namespace[name] = Field(defaults.get(name, ...), description=s.description)
    prefix = {"full": "", "partial": "Partial", "inner": "Inner", "partial_inner": "PartialInner"}[family]
    title = prefix + cls.__name__
    namespace.update(
        __annotations__=annotations,
        __doc__=_model_doc(cls, family, title),
        __module__=__name__,
        __qualname__=title,
        model_config=ConfigDict(title=title, json_schema_extra={"examples": [_example(cls, family)]}),
    )
    return type(title, (_EventBase,), namespace)


def _model_doc(cls: type[accountant.Event], family: str, title: str) -> str:
    if family == "full":
        return _doc(cls)
    where = {
        "partial": " without the field being solved for.",
        "inner": " inside a sampled event.",
        "partial_inner": " inside a sampled event, perhaps without the field being solved for.",
    }[family]
    return f"{title}: the '{cls.mechanism}' event" + where


def _example(cls: type[accountant.Event], family: str) -> dict[str, Any]:
    """The type's example event; inside a sampled event, without the population fields."""
    example = dict(cls.EXAMPLE)
    if family in ("inner", "partial_inner"):
        for name, s in cls.specs().items():
            if s.population:
                example.pop(name, None)
    return example


def _union(models: list[type[_EventBase]]) -> Any:
    return Annotated[Union[tuple(models)], Field(discriminator="mechanism")]


def _build() -> tuple[dict[str, type[_EventBase]], dict[str, type[_EventBase]], dict[str, type[_EventBase]]]:
    types = accountant.EVENT_TYPES
    inner_models = {m: _model(c, "inner", None) for m, c in types.items() if not c.SAMPLED}
    inner_union = _union(list(inner_models.values()))
    partial_inner = _union([_model(c, "partial_inner", None) for c in types.values() if not c.SAMPLED])
    full = {m: _model(c, "full", inner_union) for m, c in types.items()}
    partial = {m: _model(c, "partial", partial_inner) for m, c in types.items()}
    return full, partial, inner_models


EVENT_MODELS, PARTIAL_EVENT_MODELS, INNER_EVENT_MODELS = _build()

#: The api.md event, discriminated on ``mechanism``.
Event = _union(list(EVENT_MODELS.values()))
#: An event without the field ``/v1/calibrate`` solves for.
PartialEvent = _union(list(PARTIAL_EVENT_MODELS.values()))

EventAdapter: TypeAdapter[_EventBase] = TypeAdapter(Event)


def parse_event(data: Any) -> _EventBase:
    """Validate an api.md event dict (raises :class:`pydantic.ValidationError`)."""
    return EventAdapter.validate_python(data)


def solvable_fields() -> list[str]:
    """Every field some event type lets calibration solve for, in declaration order."""
    names: dict[str, None] = {}
    for cls in accountant.EVENT_TYPES.values():
        names.update((n, None) for n, s in cls.specs().items() if s.solvable)
    return list(names)


def inner_solvable_fields() -> list[str]:
    """Every field calibration may solve for inside a sampled event's inner events."""
    names: dict[str, None] = {}
    for cls in inner_types().values():
        names.update((n, None) for n, s in cls.specs().items() if s.solvable and not s.population)
    return list(names)


def solvable_by_type() -> dict[str, list[str]]:
    """Per event type, the fields calibration may solve for."""
    return {m: [n for n, s in c.specs().items() if s.solvable] for m, c in accountant.EVENT_TYPES.items()}


__all__ = [
    "Event",
    "EventAdapter",
    "EVENT_MODELS",
    "PARTIAL_EVENT_MODELS",
    "INNER_EVENT_MODELS",
    "PartialEvent",
    "parse_event",
    "StrictModel",
    "MAX_CURVE_POINTS",
    "MAX_USERS",
    "Num",
    "Int",
    "num",
    "integer",
    "PositiveInt",
    "Count",
    "Epsilon0",
    "solvable_fields",
    "inner_solvable_fields",
    "solvable_by_type",
]
