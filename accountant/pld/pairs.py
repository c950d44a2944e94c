"""Stage 1 of the PLD route: each event's dominating pair.

The pair of an event type is declared once, on the type (``Event.dominating_pair``, built from
:mod:`accountant.dominating`); this module only resolves events to pairs and says why an event
is not covered: a type without a pair (its ``NO_PAIR`` reason), or an event with ``zeta`` > 0
(its curve holds outside a failure event, which no pair describes).
"""

from __future__ import annotations

from ..dominating import HockeyStickPair
from ..errors import AccountantError
from ..events import Event, EventLike, as_event

__all__ = ["PldNotCovered", "covered", "pair_of"]


class PldNotCovered(AccountantError):
    """An event the PLD route has no dominating pair for (the message says which and why)."""


def _reason(event: Event) -> str | None:
    if event.zeta > 0:
        return (
            f"zeta = {event.zeta:g} > 0: its guarantee holds outside a failure event, which no "
            "dominating pair describes"
        )
    if event.dominating_pair() is None:
        return event.NO_PAIR
    return None


def covered(event: EventLike) -> bool:
    """Whether the PLD route has a dominating pair for ``event`` (an event or its dict form)."""
    return _reason(as_event(event)) is None


def pair_of(event: Event) -> HockeyStickPair:
    """The dominating pair of ONE repetition of ``event``, or :class:`PldNotCovered`."""
    why = _reason(event)
    pair = event.dominating_pair()
    if why is not None or pair is None:
        raise PldNotCovered(f"the PLD route does not cover the {event.mechanism!r} event: {why}")
    return pair
