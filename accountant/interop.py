"""dp_accounting interop: ``from_dp_event`` (a ``DpEvent`` → this accountant's events) and
``to_dp_event`` (the way back, where a ``DpEvent`` means the same).

The mapping table is the SDK's (:mod:`privacy_accountant.dp_events`, pure Python: the SDK converts
``DpEvent`` objects without this package), so there is one copy of it; its docstring states the mapping
and the neighbouring relation: a ``DpEvent`` is read as dp_accounting's ``REPLACE_ONE`` accountant
reads it, the relation of every event here (replace-one, user-level).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import UnsupportedDpEvent
from .events import Event, EventLike, as_event, event_from_dict


def from_dp_event(dp_event: Any) -> list[Event]:
    """This accountant's events for a dp_accounting ``DpEvent`` (a list: a composition is several
    events; ``NoOpDpEvent``: none). Raises :class:`UnsupportedDpEvent` saying why for what no bound
    here covers (Poisson sampling, add/remove-only events, tree aggregation, …)."""
    from privacy_accountant import dp_events

    try:
        dicts = dp_events.dp_event_dicts(dp_event)
    except dp_events.UnsupportedDpEvent as exc:
        raise UnsupportedDpEvent(str(exc)) from None
    return [event_from_dict(d) for d in dicts]


def to_dp_event(events: EventLike | Sequence[EventLike]) -> Any:
    """The dp_accounting ``DpEvent`` of an event or a list of events (composed), for dp_accounting's
    accountants with ``NeighboringRelation.REPLACE_ONE``. Raises :class:`UnsupportedDpEvent` for
    events no ``DpEvent`` means the same as (shuffles, pure-DP or exponential releases, explicit
    curves, events with ``zeta``)."""
    from privacy_accountant import dp_events

    single = isinstance(events, Event) or hasattr(events, "keys")
    evs = [as_event(events)] if single else [as_event(e) for e in events]  # type: ignore[union-attr]
    try:
        return dp_events.to_dp_event(evs[0].to_dict() if single else [e.to_dict() for e in evs])
    except dp_events.UnsupportedDpEvent as exc:
        raise UnsupportedDpEvent(str(exc)) from None


__all__ = ["UnsupportedDpEvent", "from_dp_event", "to_dp_event"]
