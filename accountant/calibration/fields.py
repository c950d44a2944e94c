"""The unknown of a calibration: which event fields can be solved for, and their domains.

The unknown is a top-level numeric field of the event (api.md form). Everything the search needs
to know about it comes from :func:`field_domain`: its limits (integer or real, lower and upper
end, from the accountant's parameter limits and the event's other fields: n ≥ k) and how ε moves
with it:

* ``epsilon0`` — real in [1e-10, 50]; ε grows with ε0 (searched in u = log(e^{ε0} − 1));
* ``count`` — integer in [1, 10¹²]; ε grows with the count (RDP is linear in it: closed form);
* ``n`` — integer in [k (or 1), 10¹²]; ε falls as n grows;
* ``k`` — integer in [1, n]; mostly grows with k but is not monotone everywhere (the search comes
  down from the infeasible end k = n; see :mod:`accountant.calibration`).

Any event type with such a field can be calibrated for it; an event without it is a clear error.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from .._validation import check_delta
from ..errors import InfeasibleTarget, InvalidEvent, InvalidParameter
from ..events import EVENT_TYPES, Event, event_from_dict
from .crossing import Domain, Number

SOLVE_FOR = ("epsilon0", "count", "n", "k")
#: what calibration accepts as the event: an api.md dict, an event object or a
#: ``functools.partial`` of an event class (checked by :func:`base_event`)
EventLike = Mapping[str, Any] | Event | functools.partial[Event]
EPSILON0_FLOOR = 1e-10  # smallest ε0 searched: below it a report carries essentially no information


@dataclass(frozen=True)
class _Behaviour:
    """How ε moves with an unknown (the :class:`Domain` fields other than its limits)."""

    increasing: bool
    monotone: bool = True
    coord: str = "log"
    slope: float = 1.0
    start: Number | None = None


# how ε moves with each unknown (the limits come from _limits)
_BEHAVIOUR: dict[str, _Behaviour] = {
    "epsilon0": _Behaviour(increasing=True, coord="logexpm1", slope=2.0, start=1.0),
    "count": _Behaviour(increasing=True),
    "n": _Behaviour(increasing=False),
    "k": _Behaviour(increasing=True, monotone=False),
}
# what the feasible end of each domain means, for the error when even it misses the target
_FEASIBLE_END = {
    "epsilon0": "reports carrying essentially no information",
    "count": "a single round",
    "n": "the largest n supported",
    "k": "one sampled user per round",
}


def _int_field(event: Mapping[str, object], name: str, lo: Number, hi: Number) -> int | None:
    v = event.get(name)
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not lo <= int(v) <= hi:
        return None
    return int(v)


def _limits(event: Mapping[str, object], field: str) -> tuple[Number, Number, bool]:
    """(lower end, upper end, integer) of ``field`` given the event's other fields: the limits
    declared for the field by its event type (:class:`accountant.events.Spec`), narrowed by
    k ≤ n and by the ε0 search floor."""
    mech = event.get("mechanism")
    cls = EVENT_TYPES.get(mech) if isinstance(mech, str) else None
    spec = cls.specs().get(field) if cls is not None else None
    if spec is None or field not in _BEHAVIOUR:
        raise InvalidParameter(f"solve_for must be one of {list(SOLVE_FOR)}, got {field!r}")
    assert spec.lo is not None and spec.hi is not None  # a solvable field declares both ends
    integer = spec.kind == "integer"
    lo: Number
    hi: Number
    lo, hi = (int(spec.lo), int(spec.hi)) if integer else (float(spec.lo), float(spec.hi))
    if field == "epsilon0":
        lo = max(lo, EPSILON0_FLOOR)
    if field == "n":
        lo = _int_field(event, "k", lo, hi) or lo
    if field == "k":
        hi = _int_field(event, "n", lo, hi) or hi
    return lo, hi, integer


def field_domain(event: Mapping[str, object], field: str) -> Domain:
    """The search domain of the unknown ``field`` of ``event`` (an api.md dict; the value of
    ``field`` itself, if present, is ignored)."""
    lo, hi, integer = _limits(event, field)
    behaviour = _BEHAVIOUR[field]
    start = behaviour.start
    if field == "n":
        start = min(10 * lo, hi) if lo > 1 else 1000
    return Domain(
        lo=lo,
        hi=hi,
        integer=integer,
        increasing=behaviour.increasing,
        monotone=behaviour.monotone,
        coord=behaviour.coord,
        slope=behaviour.slope,
        start=start,
    )


def event_fields(mechanism: str) -> tuple[str, ...]:
    """The fields calibration may solve for in events of this type (declared ``solvable``)."""
    return tuple(name for name, s in EVENT_TYPES[mechanism].specs().items() if s.solvable)


def _event_dict(event: EventLike) -> tuple[dict[str, Any], bool]:
    """(api.md dict, whether it came from a complete event object)."""
    registered: tuple[type[Event], ...] = tuple(EVENT_TYPES.values())
    if isinstance(event, registered):
        return event.to_dict(), True
    if isinstance(event, functools.partial) and event.func in EVENT_TYPES.values() and not event.args:
        cls = cast("type[Event]", event.func)  # one of EVENT_TYPES (tested just above)
        return {"mechanism": cls.mechanism, **event.keywords}, False
    if isinstance(event, Mapping):
        return dict(event), False
    raise InvalidEvent(
        f"event must be an api.md event object (a dict with 'mechanism'), an event instance or a "
        f"functools.partial of an event class, got {type(event).__name__}"
    )


def _check_mechanism(d: dict[str, Any], field: str) -> None:
    mech = d.get("mechanism")
    if mech is None:
        raise InvalidEvent(f"event is missing the field 'mechanism' (one of {sorted(EVENT_TYPES)})")
    if mech not in EVENT_TYPES:
        raise InvalidEvent(f"unknown mechanism {mech!r}; known mechanisms: {sorted(EVENT_TYPES)}")
    if field not in event_fields(mech):
        having = [m for m in EVENT_TYPES if field in event_fields(m)]
        raise InvalidParameter(
            f"solve_for {field!r} applies to mechanism(s) {having} (the events with a field {field!r}), "
            f"not to {mech!r}, whose fields are {list(event_fields(mech))}"
        )


def base_event(event: EventLike, field: str) -> tuple[Event, Number | None]:
    """Validate the partial ``event`` for the unknown ``field``; return (the event with the
    unknown at its domain's lower end, the caller's guess — the value a complete event object
    carried — or None)."""
    if not isinstance(field, str) or field not in SOLVE_FOR:
        raise InvalidParameter(f"solve_for must be one of {list(SOLVE_FOR)}, got {field!r}")
    d, complete = _event_dict(event)
    _check_mechanism(d, field)
    guess = None
    if field in d:
        if not complete:
            raise InvalidEvent(
                f"the event must leave out {field!r}: it is the field being solved for "
                f"(got {field}={d[field]!r})"
            )
        guess = d[field]
    d[field] = _limits(d, field)[0]
    return event_from_dict(d), guess


def check_target(target_epsilon: object) -> float:
    if isinstance(target_epsilon, bool) or not isinstance(target_epsilon, numbers.Real):
        raise InvalidParameter(f"target_epsilon must be a number > 0, got {target_epsilon!r}")
    t = float(target_epsilon)
    if not math.isfinite(t) or t <= 0:
        raise InvalidParameter(f"target_epsilon must be a finite number > 0, got {target_epsilon!r}")
    return t


def check_target_delta(delta: object) -> float:
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not (0.0 < float(delta) < 1.0):
        raise InvalidParameter(f"delta must be a number strictly between 0 and 1, got {delta!r}")
    return check_delta(delta)


def _show(x: Number) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def infeasible(field: str, dom: Domain, t: float, delta: float, at: Number, best: float) -> InfeasibleTarget:
    """The error for a target no value of ``field`` meets; ``at`` gives ``best`` (an F value)."""
    if at == dom.feasible_end:
        what = f"even {field} = {_show(at)} ({_FEASIBLE_END[field]}) gives"
    else:
        what = f"epsilon is not monotone in {field} here; the lowest found, at {field} = {_show(at)}, is"
    return InfeasibleTarget(
        f"no value of {field!r} meets the target epsilon <= {t:g} at delta = {delta:g}: {what} "
        f"epsilon = {best:.6g}, the best achievable. Raise the target epsilon or delta, or change the "
        f"event's other parameters.",
        best_epsilon=float(best),
        best_value=at,
    )


def at_limit_note(field: str, dom: Domain, value: Number) -> str:
    end = "largest" if value == dom.hi else "smallest"
    return f"{field} = {_show(value)} is the {end} value possible here and still meets the target"


__all__ = ["EPSILON0_FLOOR", "SOLVE_FOR", "EventLike", "base_event", "event_fields", "field_domain"]
