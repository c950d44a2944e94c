"""The unknown of a calibration: which event fields can be solved for, and their domains.

The unknown is a numeric field the event declarations mark as calibratable (a
:class:`accountant.events.Calibrate` marker on the field: ``epsilon0``, ``count``, ``n``, ``k``,
the ``noise_multiplier`` of a Gaussian, the ``scale`` of a Laplace, the ``epsilon`` of a pure-DP,
exponential or AboveThreshold release) — of the event itself, or of one of the inner events of a
sampled event (``inner[i].noise_multiplier``; the bare name when it picks one inner event out:
:func:`resolve`). Everything the search needs to know about it comes from :func:`field_domain`:
its limits (integer or real, lower and upper end, from the field's declaration narrowed by the
event's other fields: n ≥ k) and how ε moves with it (the marker: ε grows with ε0, ε, the count
and — mostly — k; it falls as the noise or n grows; :mod:`accountant.calibration` on k).

Any event type with such a field can be calibrated for it; an event without it is a clear error.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from .._validation import check_delta
from ..errors import InfeasibleTarget, InvalidEvent, InvalidParameter
from ..events import EVENT_TYPES, Calibrate, Event, Spec, event_from_dict
from .crossing import Domain, Number

#: every field name some event type lets calibration solve for (from the declarations)
SOLVE_FOR: tuple[str, ...] = tuple(
    dict.fromkeys(n for c in EVENT_TYPES.values() for n, s in c.specs().items() if s.solvable)
)
#: what calibration accepts as the event: an api.md dict, an event object or a
#: ``functools.partial`` of an event class (checked by :func:`base_event`)
EventLike = Mapping[str, Any] | Event | functools.partial[Event]
_PATH = re.compile(r"^([a-z_]+)\[([0-9]{1,4})\]\.([a-z_0-9]+)$")


@dataclass(frozen=True)
class Unknown:
    """The field a calibration solves for: ``field`` of the event itself (``parent`` None), or of
    its inner event ``index`` in the events field ``parent``; ``name`` says which
    (``noise_multiplier``, ``inner[0].noise_multiplier``)."""

    name: str
    field: str
    spec: Spec
    parent: str | None = None
    index: int | None = None

    @property
    def marker(self) -> Calibrate:
        assert self.spec.calibrate is not None  # only calibratable fields become unknowns
        return self.spec.calibrate

    def holder(self, d: Mapping[str, Any]) -> Mapping[str, Any]:
        """The api.md dict that holds the field (the event, or its inner event)."""
        if self.parent is None:
            return d
        return _item(d[self.parent][self.index])

    def put(self, d: Mapping[str, Any], x: Any) -> dict[str, Any]:
        """A copy of the api.md dict ``d`` with the unknown set to ``x``."""
        out = dict(d)
        if self.parent is None:
            out[self.field] = x
            return out
        items = [_item(e) for e in d[self.parent]]
        items[cast(int, self.index)] = {**items[cast(int, self.index)], self.field: x}
        out[self.parent] = items
        return out


def _item(e: Any) -> dict[str, Any]:
    return e.inner_dict() if isinstance(e, Event) else dict(e)


def _inner_unknowns(cls: type[Event], d: Mapping[str, Any], name: str) -> list[Unknown]:
    """Every inner event of ``d`` (of type ``cls``) whose type lets calibration solve for ``name``
    (a field implied by the sample size, like an inner shuffle's n, is not one)."""
    out: list[Unknown] = []
    for parent, ps in cls.specs().items():
        items = d.get(parent) if ps.kind == "events" else None
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, (list, tuple)):
            continue
        for i, item in enumerate(items):
            if isinstance(item, Event):
                mech: object = item.mechanism
            else:
                mech = item.get("mechanism") if isinstance(item, Mapping) else None
            inner = EVENT_TYPES.get(mech) if isinstance(mech, str) else None
            s = inner.specs().get(name) if inner is not None else None
            if s is not None and s.solvable and not s.population:
                out.append(Unknown(f"{parent}[{i}].{name}", name, s, parent, i))
    return out


def _event_class(d: Mapping[str, Any]) -> type[Event]:
    mech = d.get("mechanism")
    if mech is None:
        raise InvalidEvent(f"event is missing the field 'mechanism' (one of {sorted(EVENT_TYPES)})")
    cls = EVENT_TYPES.get(mech) if isinstance(mech, str) else None
    if cls is None:
        raise InvalidEvent(f"unknown mechanism {mech!r}; known mechanisms: {sorted(EVENT_TYPES)}")
    return cls


def _not_solvable(cls: type[Event], name: str) -> InvalidParameter:
    having = [m for m in EVENT_TYPES if name in event_fields(m)]
    inner = " (or of its inner events)" if any(s.kind == "events" for s in cls.specs().values()) else ""
    return InvalidParameter(
        f"solve_for {name!r} applies to mechanism(s) {having} (the events with a field {name!r}), "
        f"not to {cls.mechanism!r}{inner}, whose fields are {list(event_fields(cls.mechanism))}"
    )


def resolve(d: Mapping[str, Any], solve_for: object, complete: bool = True) -> Unknown:
    """The unknown ``solve_for`` names in the api.md dict ``d``: a field of the event itself when
    its type declares it calibratable; else ``parent[i].field`` or the bare name of a field of
    the inner events — the one inner event that has it (for a partial dict, ``complete`` False:
    the one that leaves it out). Several → :class:`InvalidParameter` naming the candidates."""
    m = _PATH.match(solve_for) if isinstance(solve_for, str) else None
    if not isinstance(solve_for, str) or (solve_for not in SOLVE_FOR and m is None):
        raise InvalidParameter(
            f"solve_for must be one of {list(SOLVE_FOR)} (or name an inner event's field, like "
            f"'inner[0].noise_multiplier'), got {solve_for!r}"
        )
    cls = _event_class(d)
    if m is not None:
        return _path_unknown(cls, d, solve_for, m.group(3))
    s = cls.specs().get(solve_for)
    if s is not None and s.solvable:
        return Unknown(solve_for, solve_for, s)
    found = _inner_unknowns(cls, d, solve_for)
    if not complete:
        left_out = [u for u in found if solve_for not in u.holder(d)]
        found = left_out or found
    if not found:
        raise _not_solvable(cls, solve_for)
    if len(found) > 1:
        raise InvalidParameter(
            f"solve_for {solve_for!r} is ambiguous: {len(found)} inner events have it; name the one to solve "
            f"for: one of {[u.name for u in found]}"
        )
    return found[0]


def _path_unknown(cls: type[Event], d: Mapping[str, Any], path: str, name: str) -> Unknown:
    for u in _inner_unknowns(cls, d, name):
        if u.name == path:
            return u
    found = [u.name for f in SOLVE_FOR for u in _inner_unknowns(cls, d, f)]
    raise InvalidParameter(
        f"solve_for {path!r} names no calibratable field of an inner event of this {cls.mechanism!r} event; "
        f"the inner fields calibration can solve for here: {found or 'none'}"
    )


def _int_field(event: Mapping[str, object], name: str, lo: Number, hi: Number) -> int | None:
    v = event.get(name)
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not lo <= int(v) <= hi:
        return None
    return int(v)


def _limits(event: Mapping[str, object], u: Unknown) -> tuple[Number, Number, bool]:
    """(lower end, upper end, integer) of the unknown given the event's other fields: the limits
    declared for the field by its event type (:class:`accountant.events.Spec`), raised to the
    marker's ``floor`` and narrowed by k ≤ n."""
    spec = u.spec
    assert spec.lo is not None and spec.hi is not None  # a calibratable field declares both ends
    integer = spec.kind == "integer"
    lo: Number
    hi: Number
    lo, hi = (int(spec.lo), int(spec.hi)) if integer else (float(spec.lo), float(spec.hi))
    if u.marker.floor is not None:
        lo = max(lo, u.marker.floor)
    if u.parent is None and u.field == "n":
        lo = _int_field(event, "k", lo, hi) or lo
    if u.parent is None and u.field == "k":
        hi = _int_field(event, "n", lo, hi) or hi
    return lo, hi, integer


def field_domain(event: Mapping[str, object], field: str) -> Domain:
    """The search domain of the unknown ``field`` of ``event`` (an api.md dict; the value of
    ``field`` itself, if present, is ignored)."""
    return unknown_domain(event, resolve(event, field))


def unknown_domain(event: Mapping[str, object], u: Unknown) -> Domain:
    """The search domain of the unknown ``u`` of ``event`` (an api.md dict)."""
    lo, hi, integer = _limits(event, u)
    c = u.marker
    start: Number | None = c.start
    if integer and not c.increasing:  # the fewest users: start a decade above the lower end
        start = min(10 * lo, hi) if lo > 1 else 1000
    return Domain(
        lo=lo,
        hi=hi,
        integer=integer,
        increasing=c.increasing,
        monotone=c.monotone,
        coord=c.coord,
        slope=c.slope,
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


def base_event(event: EventLike, field: str) -> tuple[Event, Number | None, Unknown]:
    """Validate the partial ``event`` for the unknown ``field`` (:func:`resolve`); return (the
    event with the unknown at its domain's lower end, the caller's guess — the value a complete
    event object carried — or None, the unknown)."""
    d, complete = _event_dict(event)
    u = resolve(d, field, complete)
    guess = None
    held = u.holder(d)
    if u.field in held:
        if not complete:
            raise InvalidEvent(
                f"the event must leave out {u.name!r}: it is the field being solved for "
                f"(got {u.name}={held[u.field]!r})"
            )
        guess = held[u.field]
    return event_from_dict(u.put(d, _limits(d, u)[0])), guess, u


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


def infeasible(u: Unknown, dom: Domain, t: float, delta: float, at: Number, best: float) -> InfeasibleTarget:
    """The error for a target no value of the unknown meets; ``at`` gives ``best`` (an F value)."""
    field = u.name
    if at == dom.feasible_end:
        what = f"even {field} = {_show(at)} ({u.marker.feasible_end}) gives"
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


__all__ = [
    "SOLVE_FOR",
    "EventLike",
    "Unknown",
    "base_event",
    "event_fields",
    "field_domain",
    "resolve",
    "unknown_domain",
]
