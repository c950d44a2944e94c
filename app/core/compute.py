"""The computation behind ``/v1/rdp``, ``/v1/epsilon``, ``/v1/delta`` and ``/v1/calibrate``.

Pure functions from api.md request dicts to api.md response dicts, shared by the HTTP routes and
the command line (so both print the same numbers). They raise :class:`accountant.AccountantError`
for domain errors and :class:`WorkLimitExceeded` (also an ``AccountantError``) when a request
asks for more computation than one request may use.

JSON safety: every float in a result is finite; a curve value that is unbounded (e.g. an
``rdp_curve`` event above its largest known order) is ``None`` (JSON ``null``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

import numpy as np
from numpy.typing import ArrayLike
from typing_extensions import NotRequired

import accountant
from accountant import AccountantError, Event, InvalidParameter, RoutedGuarantee
from accountant._validation import check_orders
from accountant.calibration import CalibrationResult
from accountant.combination import Answer
from accountant.composition import conversion_orders
from accountant.events import HeavyPart
from accountant.orders import EXTENSION_ORDERS, is_default_grid
from app.core.admission import current_deadline
from app.schemas.events import MAX_USERS

#: per-order cost floor in the work estimate (small orders cost about as much as α = 1000)
_MASS_FLOOR = 1000.0
#: orders the ε/δ conversion adds around the optimum (accountant.composition._REFINE_POINTS)
_REFINE = 24
#: the work of the orders the conversion may add above the default grid (accountant.orders
#: .EXTENSION_ORDERS, one evaluation), per distinct costly curve: each order counted as
#: α = 1.25·10⁴ (above 10⁴ the bounds' cost no longer grows with α — the clone engines' windows,
#: U1's windowed sums; measured in bench/results_orders.md)
_EXTENSION_MASS = EXTENSION_ORDERS.size * 1.25e4


def _is_heavy(mechanism: str) -> bool:
    """Whether events of this type may need costly curves (a probe with its example event)."""
    cls = accountant.EVENT_TYPES.get(mechanism)
    return cls is not None and bool(accountant.event_from_dict(cls.EXAMPLE).heavy_parts())


class EventSource(TypedDict):
    """Which bound gave an event's value at the optimal order."""

    event: int  #: the event's position in the request
    mechanism: str
    bound: str


class RdpAnswer(TypedDict):
    """The ``/v1/rdp`` answer (docs/api.md)."""

    orders: list[float | None]
    rdp: list[float | None]
    bound: str
    event: dict[str, Any]
    sources: list[str]
    notes: list[str]
    default_orders: bool
    grid_version: NotRequired[int]  #: on the default grid only


class GuaranteeAnswer(TypedDict):
    """The ``/v1/epsilon`` and ``/v1/delta`` answer (docs/api.md)."""

    epsilon: float
    delta: float
    route: str
    routes: list[dict[str, Any]]
    order: float | None
    orders: list[float | None]
    rdp: list[float | None]
    sources: list[EventSource]
    notes: list[str]
    default_orders: bool
    grid_version: NotRequired[int]  #: on the default grid only


class _CalibrationHead(TypedDict):
    event: dict[str, Any]
    epsilon: float
    delta: float
    order: float
    accounting: str
    route: str
    solve_for: str
    value: float
    target: dict[str, float]
    default_orders: bool
    direction: str


class _GridVersion(TypedDict, total=False):
    grid_version: int


class CalibrationAnswer(_CalibrationHead, _GridVersion):
    """The ``/v1/calibrate`` answer (docs/api.md)."""

    at_limit: bool
    notes: list[str]
    evaluations: int


class WorkLimitExceeded(InvalidParameter):
    """The request asks for more computation than one request may use."""


def _finite_list(a: ArrayLike) -> list[float | None]:
    return [float(x) if math.isfinite(x) else None for x in np.asarray(a, dtype=float).tolist()]


def _orders_array(orders: Sequence[float] | None) -> np.ndarray:
    if orders is None:
        return np.asarray(accountant.DEFAULT_ORDERS, dtype=float)
    return check_orders(orders)


#: work estimate of a cheap event (no costly curve, e.g. ``rdp_curve``): a fixed cost per distinct
#: event, plus a cost per given point and per order evaluated (in the units of the order mass:
#: ~1e-7 s each on the reference machine)
_LIGHT_EVENT = 1000.0
_LIGHT_ITEM = 2.0


def _items(ev: Event) -> int:
    """How many numbers an event carries in its list fields (an rdp_curve's points)."""
    return sum(len(v) for v in vars(ev).values() if isinstance(v, tuple))


def work_estimate(events: Sequence[Event | _Mech], orders: np.ndarray, convert: bool) -> tuple[float, int]:
    """(estimated cost, number of distinct costly curves) of evaluating ``events`` on ``orders``.

    Costly curves (``Event.heavy_parts``, e.g. the clone bound of a shuffle event): Σ over the
    distinct ones of Σ_α max(α, 1000), plus the conversion's refinement around the optimum. Cheap
    events (no costly part, e.g. ``rdp_curve``): per distinct event a fixed cost plus a cost per
    point it carries and per order it is evaluated at (the grid, and the refinement)."""
    heavy = frozenset().union(*(e.heavy_parts() for e in events))
    per_heavy = float(np.maximum(orders, _MASS_FLOOR).sum())
    if convert:
        per_heavy += _REFINE * max(float(orders.max()) * 1.25, _MASS_FLOOR)
    # a _Mech stands for a costly curve: never a cheap unit
    units = {
        (e.with_count(1) if e.count != 1 else e)
        for e in events
        if isinstance(e, Event) and not e.heavy_parts()
    }
    evaluations = orders.size + (_REFINE if convert else 0)
    light = sum(_LIGHT_EVENT + _LIGHT_ITEM * (_items(u) + evaluations) for u in units)
    return per_heavy * len(heavy) + light, len(heavy)


def extension_fits(events: Sequence[Event], orders: np.ndarray, max_mass: float) -> bool:
    """Whether a conversion on ``orders`` may try the orders above the default grid
    (``accountant.epsilon_guarantee(..., extend=...)``): only on the default grid, and only while
    the estimate with their work (:data:`_EXTENSION_MASS` per distinct costly curve) stays within
    ``max_mass`` — a request is never refused for them, they are left out instead."""
    if not is_default_grid(orders):
        return False
    mass, n_heavy = work_estimate(events, orders, True)
    return mass + n_heavy * _EXTENSION_MASS <= max_mass


def check_work(events: Sequence[Event | _Mech], orders: np.ndarray, max_mass: float, convert: bool) -> None:
    """Refuse requests whose estimated cost (:func:`work_estimate`) exceeds ``max_mass``."""
    mass, n_heavy = work_estimate(events, orders, convert)
    if mass > max_mass:
        what = (
            f"{n_heavy} distinct shuffle-model event(s) × orders up to {orders.max():g}; the bounds cost time "
            "roughly proportional to the order α. Ask for fewer or smaller orders (the default grid reaches 10⁴, "
            "which is enough for any practical δ), or fewer distinct events per request"
            if n_heavy
            else f"{len(events)} events × {orders.size} orders. Ask for fewer orders or fewer distinct events per request"
        )
        raise WorkLimitExceeded(
            f"this request asks for too much computation (work estimate {mass:.3g} > limit {max_mass:.3g}: {what})"
        )


def _curve_sources(ev: Event, orders: np.ndarray, bound: str) -> tuple[list[str], list[str]]:
    """Per-order name of the bound that gave each value, and the accountant's notes."""
    return ev.curve_sources(orders, bound)


def rdp_result(
    event: dict[str, Any],
    orders: Sequence[float] | None = None,
    bound: str = "upper",
    max_mass: float = math.inf,
) -> RdpAnswer:
    """``/v1/rdp``: the curve of one event (× count), which bound gave each value, and notes."""
    ev = accountant.event_from_dict(event)
    grid = _orders_array(orders)
    check_work([ev], grid, max_mass, convert=False)
    rdp = accountant.event_rdp(ev, grid, bound=bound)
    sources, notes = _curve_sources(ev, grid, bound)
    if ev.zeta > 0:
        notes = [*notes, _zeta_note(ev)]
    out: RdpAnswer = {
        "orders": _finite_list(grid),
        "rdp": _finite_list(rdp),
        "bound": bound,
        "event": ev.to_dict(),
        "sources": sources,
        "notes": notes,
        "default_orders": orders is None,
    }
    if orders is None:
        out["grid_version"] = accountant.DEFAULT_GRID_VERSION
    return out


def _zeta_note(ev: Event) -> str:
    return (
        f"this curve holds outside a failure event of probability zeta = {ev.zeta:.6g} per repetition: it is "
        f"not an RDP bound alone; /v1/epsilon and /v1/delta add count·zeta = {ev.additive_delta():.6g} to delta"
    )


def _combination_note(d: Answer) -> str:
    """How the RDP part, the additive δ and the (ε, δ) releases were joined (accountant.combination)."""
    if d.method == "split":
        return (
            f"RDP part (ε = {d.epsilon_rdp:.6g}, δ = {d.delta_rdp:.6g}) and (ε, δ) releases (ε = {d.epsilon_approx:.6g}, "
            f"δ = {d.delta_approx:.6g}) joined by basic composition (split optimised), plus the additive δ "
            f"{d.zeta:.6g}; 'rdp' is the RDP part alone"
        )
    if d.method == "pure":
        return (
            f"(ε, δ) releases counted as pure ε outside failure events (their δ added): additive δ {d.zeta:.6g}, "
            f"the RDP part with them converted at δ = {d.delta_rdp:.6g}; 'rdp' is the RDP part without them"
        )
    return f"additive δ {d.zeta:.6g} (Σ count·zeta); the RDP part was converted at δ − {d.zeta:.6g} = {d.delta_rdp:.6g}"


def _event_sources(evs: list[Event], grid: np.ndarray, order: float) -> tuple[list[EventSource], list[str]]:
    """For each event, the bound that gave its value at the optimal order. A costly event is asked
    on the orders its curve was computed on (so the answer comes from the curve caches); a cheap
    one only at the optimal order."""
    o_full: np.ndarray | None = None
    at = np.array([order])
    sources: list[EventSource] = []
    notes: list[str] = []
    seen: dict[Event, tuple[str, list[str]]] = {}
    for i, ev in enumerate(evs):
        unit = ev.with_count(1) if ev.count != 1 else ev
        if unit not in seen:
            if unit.heavy_parts():
                if o_full is None:
                    o_full = conversion_orders(grid, order)
                j = int(np.flatnonzero(o_full == order)[0])
                per_order, unit_notes = _curve_sources(unit, o_full, "upper")
                seen[unit] = (per_order[j], unit_notes)
            else:
                per_order, unit_notes = _curve_sources(unit, at, "upper")
                seen[unit] = (per_order[0], unit_notes)
        bound, unit_notes = seen[unit]
        sources.append({"event": i, "mechanism": ev.mechanism, "bound": bound})
        notes.extend(x for x in unit_notes if x not in notes)
    return sources, notes


def _prewarm(evs: list[Event], grid: np.ndarray, deadline: float | None) -> None:
    """Compute each distinct event's curve (cached by the accountant) one at a time, so that a
    request with many expensive events stops at the deadline instead of running for minutes;
    a retry continues from the cache."""
    if deadline is None:
        return
    done: set[Event] = set()
    for ev in evs:
        unit = ev.with_count(1) if ev.count != 1 else ev
        if unit in done or not unit.heavy_parts():
            continue
        if time.monotonic() > deadline:
            raise WorkLimitExceeded(
                f"this composition needs more computation than one request may use ({len(done)} of "
                f"{len({(e.with_count(1) if e.count != 1 else e) for e in evs})} distinct curves computed "
                "within the time limit). The curves computed so far are cached: send the same request again "
                "to continue, or split the events into smaller requests"
            )
        accountant.event_rdp(unit, grid)
        done.add(unit)


def _order_note(order: float, grid: np.ndarray, extended: bool) -> str:
    """Where the optimal order, not a grid order, came from."""
    if extended and order > grid[-1]:
        return (
            f"the optimal order {order:.6g} lies above the grid's last order {grid[-1]:g}: the grid's optimum was "
            f"its last order, so the conversion also tried {EXTENSION_ORDERS.size} orders up to "
            f"{EXTENSION_ORDERS[-1]:g}; 'rdp' is the composed curve on 'orders'"
        )
    return (
        f"the optimal order {order:.6g} was found by refining between grid points; "
        "'rdp' is the composed curve on 'orders'"
    )


def _guarantee_result(
    fn: Callable[..., RoutedGuarantee],
    events: Sequence[dict[str, Any]],
    value: float,
    orders: Sequence[float] | None,
    max_mass: float,
    time_limit: float | None,
    accounting: str,
) -> GuaranteeAnswer:
    if not events:
        raise InvalidParameter("events must not be empty: give at least one event to compose")
    accountant.routes.check_accounting(accounting)
    deadline = current_deadline() if time_limit is None else time.monotonic() + time_limit
    evs = [accountant.event_from_dict(e) for e in events]
    grid = _orders_array(orders)
    check_work(evs, grid, max_mass, convert=True)
    extend = accounting != "pld" and extension_fits(evs, grid, max_mass)
    if accounting != "pld":
        _prewarm(evs, grid, deadline)
    r = fn(evs, value, grid, accounting, extend=extend)
    g = r.rdp
    out: GuaranteeAnswer = {
        "epsilon": float(r.epsilon),
        "delta": float(r.delta),
        "route": r.route,
        "routes": [v.to_dict() for v in r.routes],
        "order": None,
        "orders": [],
        "rdp": [],
        "sources": [{"event": i, "mechanism": ev.mechanism, "bound": r.route} for i, ev in enumerate(evs)],
        "notes": [],
        "default_orders": orders is None,
    }
    if g is not None:
        sources, notes = _event_sources(evs, grid, g.order)
        if g.detail is not None:
            notes.append(_combination_note(g.detail))
        if g.order not in set(grid.tolist()):
            notes.append(_order_note(g.order, grid, extend))
        out["order"] = float(g.order)
        out["orders"] = _finite_list(g.orders)
        out["rdp"] = _finite_list(g.rdp)
        out["sources"] = sources
        out["notes"] = notes
    if r.route != "rdp":
        won = next(v for v in r.routes if v.route == r.route)
        out["notes"].append(f"the {r.route} route gave the answer: {won.note}")
    if orders is None:
        out["grid_version"] = accountant.DEFAULT_GRID_VERSION
    for k, v in (("epsilon", out["epsilon"]), ("delta", out["delta"])):
        if not math.isfinite(v):  # pragma: no cover - the accountant never returns these
            raise InvalidParameter(f"no finite {k} exists for this composition")
    return out


def epsilon_result(
    events: Sequence[dict[str, Any]],
    delta: float,
    orders: Sequence[float] | None = None,
    max_mass: float = math.inf,
    time_limit: float | None = None,
    accounting: str = "best",
) -> GuaranteeAnswer:
    """``/v1/epsilon``: compose ``events`` and convert to ε at ``delta`` (by ``accounting``)."""
    return _guarantee_result(
        accountant.epsilon_routed, events, delta, orders, max_mass, time_limit, accounting
    )


def delta_result(
    events: Sequence[dict[str, Any]],
    epsilon: float,
    orders: Sequence[float] | None = None,
    max_mass: float = math.inf,
    time_limit: float | None = None,
    accounting: str = "best",
) -> GuaranteeAnswer:
    """``/v1/delta``: compose ``events`` and convert to δ at ``epsilon`` (by ``accounting``)."""
    return _guarantee_result(
        accountant.delta_routed, events, epsilon, orders, max_mass, time_limit, accounting
    )


def calibrate_result(
    event: dict[str, Any],
    solve_for: str,
    target_epsilon: float,
    delta: float,
    orders: Sequence[float] | None = None,
    max_mass: float = math.inf,
    progress: Callable[[float, float], None] | None = None,
    accounting: str = "best",
) -> CalibrationAnswer:
    """``/v1/calibrate``: solve for one unknown of ``event`` so that ε(event) ≤ target at δ.

    ``progress(fraction, epsilon)`` is passed to :func:`accountant.calibrate` (called after each
    curve evaluation)."""
    grid = _calibration_grid(event, solve_for, orders, max_mass)
    kwargs: dict[str, Any] = {}
    if grid is not None:
        kwargs["orders"] = grid
    if progress is not None:
        kwargs["progress"] = progress
    try:
        res = accountant.calibrate(
            dict(event), solve_for, target_epsilon, delta, accounting=accounting, **kwargs
        )
    except accountant.InfeasibleTarget:
        if solve_for != "n":
            raise
        raise _above_the_cap(
            accountant.event_from_dict({**event, "n": MAX_USERS}),
            f"not even n = {MAX_USERS:.0e}",
            target_epsilon,
            delta,
            grid,
            accounting,
        ) from None
    ev: Any = accountant.event_from_dict(res.event)  # solving for n: the event type has an ``n``
    if solve_for == "n" and ev.n > MAX_USERS:
        raise _above_the_cap(ev, f"it would take n = {ev.n:.3g}", target_epsilon, delta, grid, accounting)
    out = _calibration_answer(res, ev.to_dict(), target_epsilon, delta, orders is None)
    if not (math.isfinite(out["epsilon"]) and math.isfinite(out["order"])):  # pragma: no cover
        raise InvalidParameter("calibration returned a non-finite guarantee")
    return out


def _calibration_grid(
    event: dict[str, Any], solve_for: str, orders: Sequence[float] | None, max_mass: float
) -> np.ndarray | None:
    """The orders of a calibration (None: the accountant's default grid), once the request is
    checked: the unknown left out of the event, the search's work within its budget."""
    if solve_for in event:
        raise InvalidParameter(
            f"the event must leave out the field being solved for; remove {solve_for!r} from the event"
        )
    grid = None if orders is None else _orders_array(orders)
    if grid is not None and _is_heavy(str(event.get("mechanism"))):
        # a search evaluates the curve many times: allow a tenth of the one-shot budget per evaluation
        check_work([_Mech(event["mechanism"])], grid, max_mass / 10, convert=True)
    return grid


def _above_the_cap(
    ev: Event, needed: str, target_epsilon: float, delta: float, grid: np.ndarray | None, accounting: str
) -> accountant.InfeasibleTarget:
    """Solving for n: no n up to ``MAX_USERS`` meets the target; the error says what n = MAX_USERS gives."""
    at_cap = accountant.epsilon_routed([_replace_field(ev, "n", MAX_USERS)], delta, grid, accounting)
    return accountant.InfeasibleTarget(
        f"no n <= {MAX_USERS:.0e} users meets the target epsilon <= {target_epsilon:g} at delta = {delta:g} "
        f"({needed}); with n = {MAX_USERS:.0e} epsilon = {at_cap.epsilon:.6g}. Raise the "
        "target, lower epsilon0 or the number of rounds",
        best_epsilon=float(at_cap.epsilon),
    )


def _calibration_answer(
    res: CalibrationResult, evd: dict[str, Any], target_epsilon: float, delta: float, default_orders: bool
) -> CalibrationAnswer:
    """The ``/v1/calibrate`` answer of the accountant's calibration ``res`` (event ``evd`` solved)."""
    head: _CalibrationHead = {
        "event": evd,
        "epsilon": float(res.epsilon),
        "delta": float(delta),
        "order": float(res.order),
        "accounting": res.accounting,
        "route": res.route,
        "solve_for": res.solve_for,
        "value": res.value,
        "target": {"epsilon": float(target_epsilon), "delta": float(delta)},
        "default_orders": default_orders,
        "direction": res.direction,
    }
    grid: _GridVersion = {"grid_version": accountant.DEFAULT_GRID_VERSION} if default_orders else {}
    return {
        **head,
        **grid,
        "at_limit": bool(res.at_limit),
        "notes": [res.note] if res.note else [],
        "evaluations": int(res.evaluations),
    }


def _replace_field(ev: Event, name: str, value: float) -> Event:
    d = ev.to_dict()
    d[name] = value
    return accountant.event_from_dict(d)


class _Mech:
    """Stands for one costly event of a calibration in the work estimate."""

    def __init__(self, mechanism: str):
        self.mechanism = mechanism

    def heavy_parts(self) -> frozenset[HeavyPart]:
        return frozenset({(self.mechanism,)})  # a part no real event has: counted once


__all__ = [
    "AccountantError",
    "WorkLimitExceeded",
    "rdp_result",
    "epsilon_result",
    "delta_result",
    "calibrate_result",
    "check_work",
]
