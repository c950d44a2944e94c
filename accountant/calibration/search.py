"""The verified search: a crossing found by :func:`find_crossing`, accepted only if F agrees.

Rounds, each from the points F has judged so far:

1. the crossing of F's prefix form (cheap; :class:`Evaluator`), then verification with F;
2. the crossing of F itself (``brentq``), then verification;
3. bisection with F (for an F that is not monotone near the crossing), then verification —
   repeated, each round starting from every F value known, until an answer passes.

Verification of an answer x: F(x) ≤ target, and one step further (x ± 1, or x·(1 + 1e-5) for
a real unknown) F > target — unless x is the infeasible end of the domain (``at_limit``). A
crossing with no feasible point is confirmed with F at the feasible end of the domain (and, when
ε is not monotone in the unknown, at the lowest ε seen) before :class:`InfeasibleTarget` is
raised with the best ε achievable.
"""

from __future__ import annotations

from ..composition import Guarantee
from ..errors import AccountantError
from .crossing import Crossing, Domain, Number, find_crossing
from .evaluator import Evaluator
from .fields import infeasible

_BISECTION_ROUNDS = 30

Answer = tuple[Number, Guarantee, bool]  # (value, F's guarantee at it, at_limit)


def _confirm_infeasible(ev: Evaluator, dom: Domain, t: float, c: Crossing) -> None:
    """Raise InfeasibleTarget if F confirms that nothing meets the target; return if it does not."""
    best_x = dom.feasible_end
    best = ev.epsilon(best_x)
    if best <= t:
        return
    if not dom.monotone:  # the lowest ε seen need not be at the end
        x_low = min(c.points, key=lambda x: (c.points[x], x))
        e_low = ev.epsilon(x_low)
        if e_low <= t:
            return
        if e_low < best:
            best_x, best = x_low, e_low
    raise infeasible(ev.unknown, dom, t, ev.delta, best_x, best)


def verify(ev: Evaluator, dom: Domain, t: float, c: Crossing) -> Answer | None:
    """The answer of crossing ``c`` if F confirms it (see the module docstring), else None."""
    if c.good is None:
        _confirm_infeasible(ev, dom, t, c)
        return None
    g = ev.guarantee(c.good)
    if not g.epsilon <= t:  # (a NaN is never accepted)
        return None
    if c.bad is None or c.good == dom.infeasible_end:
        return (c.good, g, True) if c.good == dom.infeasible_end else None
    nxt = dom.step(c.good)
    if not dom.contains(nxt):  # a real unknown within a nudge of its end
        end = dom.infeasible_end
        g_end = ev.guarantee(end)
        return (end, g_end, True) if g_end.epsilon <= t else (c.good, g, False)
    if ev.epsilon(nxt) > t:
        return c.good, g, False
    return None


def solve(
    ev: Evaluator, dom: Domain, t: float, start: Number | None = None, first: Crossing | None = None
) -> Answer:
    """The verified extreme feasible value of the unknown (see the module docstring), searched
    from ``start`` (default: the domain's). ``first``: a crossing found otherwise (the count's
    closed form), verified before any search."""
    rounds = [(ev.epsilon, "brentq")] + [(ev.epsilon, "bisect")] * _BISECTION_ROUNDS
    if first is not None:
        answer = verify(ev, dom, t, first)
    else:
        answer = None
        ev.start_prefix(dom.first_point(start))
        rounds.insert(0, (ev.search_epsilon, "brentq"))
    for f, method in rounds:
        if answer is not None:
            return answer
        known = ev.full_points() if f == ev.epsilon else None
        answer = verify(ev, dom, t, find_crossing(f, dom, t, start=start, known=known, method=method))
    if answer is None:  # pragma: no cover - F feasible again one nudge further, 30 times running
        raise AccountantError(f"calibration of {ev.field!r} did not converge")
    return answer


__all__ = ["solve", "verify"]
