"""The crossing-finder: the feasible end of {x : f(x) ≤ target} on a domain of x.

Shared by :func:`accountant.calibrate` (f = ε of an event with the unknown filled in) and by
``mechanisms.calibrate`` (f = ε of a mechanism's events). ``f`` is expected to be monotone in
``x`` (increasing: the feasible values lie below the crossing; decreasing: above it). The
answer is a *bracket* of two evaluated points, ``good`` (f(good) ≤ target) and ``bad``
(f(bad) > target), adjacent integers or a relative ``rtol`` apart, so the feasibility of the
answer is never an interpolation: it is a value of f. Steps:

1. **Bracket.** From a start point (or from already evaluated points), secant steps in the
   search coordinate u(x) against log f: u = log x, or u = log(e^x − 1) for an ε0-like unknown,
   in which log f is close to linear (the shuffle bounds grow like (e^{ε0} − 1)², so log ε ≈
   2u + const for small and large ε0 alike). Steps are at least a factor 2 and at most 10⁴ in
   e^u, and stop at the ends of the domain.
   Domains marked non-monotone are bracketed from the infeasible end by halving x instead, and
   the scanned values are searched for feasible *islands*: where they have a local minimum, ε
   is minimised over the neighbouring interval (``scipy.optimize.minimize_scalar``, bounded,
   in log x) and the scan stops at the first feasible point found.
2. **Root.** ``scipy.optimize.brentq`` on the monotone transform y(u) = log(f(x(u))/target)
   (feasible points are mapped to y < 0, so the sign of y is exactly feasibility); for integer
   unknowns x(u) rounds e^u, which makes y a step function — Brent's method still only keeps
   a sign-changing bracket. The bracket is then read off the evaluated points: the feasible
   point furthest towards the infeasible side and the nearest infeasible point beyond it.
3. **Bisection** (in x for integers, geometric for reals) finishes any bracket brentq left
   wider than the tolerance: an integer bracket near 10¹⁵ that log x cannot resolve, or an f
   that is not monotone inside the bracket.

Whether the answer meets its target *and* one step further does not is checked by the
caller with the function it is judged by (the calibration verifies with the full
``epsilon_guarantee``; see :mod:`accountant.calibration.search`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .._lazy import lazy
from ..errors import AccountantError

optimize = lazy("scipy.optimize")

Number = float | int
_MAX_BRACKET_STEPS = 200
_MAX_BISECTIONS = 200
_BRENT_ROUNDS = 4
_MAX_RATIO = math.log(1e4)  # longest bracketing step in u
_MIN_RATIO = math.log(2.0)  # shortest bracketing step in u
_ISLAND_XATOL = 0.01  # resolution in log x of the island search


class NoConvergence(AccountantError):
    """A search step did not end within its (generous) bound."""


@dataclass(frozen=True)
class Domain:
    """The values an unknown ``x`` may take and how ``f`` moves with it.

    ``lo``/``hi``: the ends (inclusive); ``integer``: whole numbers only. ``increasing``: f grows
    with x (feasible values lie below the crossing); False: f falls with x (feasible values lie
    above it). ``monotone``: False when f need not be monotone (bracketed by halving from the
    infeasible end, with the island search). ``coord``: the search coordinate u(x), ``"log"``
    (u = log x) or ``"logexpm1"`` (u = log(e^x − 1)). ``slope``: the assumed |d log f / du| until
    two points are known. ``start``: the first point when no guess is given. ``rtol``: the
    final bracket's relative width for real x; ``nudge``: one step further for real x is
    x·(1 + nudge) towards the infeasible side (nudge > rtol puts it beyond the bracket).
    """

    lo: Number
    hi: Number
    integer: bool
    increasing: bool = True
    monotone: bool = True
    coord: str = "log"
    slope: float = 1.0
    start: Number | None = None
    rtol: float = 1e-6
    nudge: float = 1e-5

    @property
    def d(self) -> int:
        """+1 when the infeasible side is towards larger x, −1 otherwise."""
        return 1 if self.increasing else -1

    @property
    def feasible_end(self) -> Number:
        return self.lo if self.increasing else self.hi

    @property
    def infeasible_end(self) -> Number:
        return self.hi if self.increasing else self.lo

    def clamp(self, x: float) -> Number:
        x = min(max(x, self.lo), self.hi)
        return int(round(x)) if self.integer else float(x)

    def contains(self, x: Number) -> bool:
        return self.lo <= x <= self.hi

    def step(self, x: Number) -> Number:
        """One step from ``x`` towards the infeasible side (the nudge an answer must fail)."""
        if self.integer:
            return x + self.d
        return x * (1.0 + self.nudge) if self.increasing else x / (1.0 + self.nudge)

    def first_point(self, guess: Number | None = None) -> Number:
        """Where a search starts: ``guess`` if it lies in the domain, else ``start``; always the
        infeasible end for a non-monotone domain (the scan comes down from it)."""
        if not self.monotone:
            return self.infeasible_end
        x = guess if guess is not None and self.contains(guess) else self.start
        return self.clamp(self.infeasible_end if x is None else x)

    def narrow(self, good: Number, bad: Number) -> bool:
        """Whether the bracket is final: adjacent integers, or a relative ``rtol`` wide."""
        if self.integer:
            return abs(bad - good) <= 1
        return abs(math.log(bad / good)) <= math.log1p(self.rtol)

    def fwd(self, x: Number) -> float:
        """u(x); for ``logexpm1`` u = log(e^x − 1), in which log ε is close to linear."""
        return math.log(math.expm1(x)) if self.coord == "logexpm1" else math.log(x)

    def inv(self, u: float) -> float:
        """x(u), saturating far beyond any domain instead of overflowing."""
        u = min(u, 700.0)
        if self.coord == "logexpm1":
            return u + math.log1p(math.exp(-u)) if u > 30 else math.log1p(math.exp(u))
        return math.exp(u)


@dataclass
class Crossing:
    """The bracket found: ``good`` (f ≤ target; None when no feasible point was found) and
    ``bad`` (f > target; None when the infeasible end of the domain is feasible), and every
    point f was evaluated at (x → f(x))."""

    good: Number | None
    bad: Number | None
    points: dict[Number, float] = field(repr=False)


class _Values:
    """f with its values remembered: each x is evaluated once."""

    def __init__(self, f: Callable[[Number], float], known: Mapping[Number, float] | None):
        self.f = f
        self.values: dict[Number, float] = dict(known or {})

    def __call__(self, x: Number) -> float:
        v = self.values.get(x)
        if v is None:
            v = self.values[x] = float(self.f(x))
        return v


def _y(eps: float, t: float) -> float:
    """log(ε/t), finite, and < 0 exactly when ε ≤ t (so its sign is feasibility)."""
    y = math.log(eps / t) if eps > 0 else -700.0
    y = min(max(y, -700.0), 700.0)
    return min(y, -1e-300) if eps <= t else max(y, 1e-300)


def tightest(values: Mapping[Number, float], dom: Domain, t: float) -> tuple[Number | None, Number | None]:
    """(good, bad) from evaluated points: the feasible point furthest towards the infeasible side
    and the nearest infeasible point beyond it (None if there is none); with no feasible point,
    (None, the infeasible point nearest the feasible end)."""
    d = dom.d
    feasible = [x for x, e in values.items() if e <= t]
    if not feasible:
        return None, (min(values, key=lambda x: d * x) if values else None)
    good = max(feasible, key=lambda x: d * x)
    beyond = [x for x, e in values.items() if e > t and d * (x - good) > 0]
    return good, (min(beyond, key=lambda x: d * x) if beyond else None)


def _secant_distance(values: Mapping[Number, float], dom: Domain, t: float, x0: Number) -> float:
    """How far in u to step from x0 to reach the crossing: a secant through x0 and the nearest
    other point in (u, log f) when it slopes the expected way, else the assumed slope; 10 %
    beyond the estimate, and between a factor 2 and 10⁴ in e^u."""
    e0 = values[x0]
    if e0 <= 0:
        return math.log(1e3)
    u0 = dom.fwd(x0)
    slope = dom.slope
    others = [(x, e) for x, e in values.items() if x != x0 and e > 0 and dom.fwd(x) != u0]
    if others:
        x1, e1 = min(others, key=lambda q: abs(dom.fwd(q[0]) - u0))
        s = math.log(e1 / e0) / (dom.fwd(x1) - u0) * dom.d
        if s > 0.05:
            slope = s
    return min(max(abs(math.log(e0 / t)) / slope * 1.1 + 0.02, _MIN_RATIO), _MAX_RATIO)


def _next_point(
    values: Mapping[Number, float], dom: Domain, t: float, x0: Number, towards_infeasible: bool
) -> Number:
    direction = dom.d if towards_infeasible else -dom.d  # +1: towards larger x
    if not dom.monotone and not towards_infeasible:
        x = dom.clamp(x0 * 2.0**direction)  # the halving scan from the infeasible end
    else:
        x = dom.clamp(dom.inv(dom.fwd(x0) + direction * _secant_distance(values, dom, t, x0)))
    if x == x0:
        x = dom.clamp(x0 + direction)
    return x


def _bracket(f: _Values, dom: Domain, t: float) -> tuple[Number | None, Number | None]:
    for _ in range(_MAX_BRACKET_STEPS):
        good, bad = tightest(f.values, dom, t)
        if good is not None and bad is not None:
            return good, bad
        if good is not None:
            if good == dom.infeasible_end:
                return good, None
            f(_next_point(f.values, dom, t, good, towards_infeasible=True))
        else:
            assert bad is not None  # f.values is never empty, so there is a nearest point
            if bad == dom.feasible_end:
                return None, bad
            f(_next_point(f.values, dom, t, bad, towards_infeasible=False))
    raise NoConvergence("bracketing the crossing did not converge")


class _Feasible(Exception):
    """Internal: the island search met the target (stops the minimiser)."""


def _minimise_for_feasible(f: _Values, dom: Domain, t: float, a: float, b: float) -> bool:
    """Minimise f over u ∈ [a, b] (bounded Brent), stopping at the first feasible point."""

    def objective(u: float) -> float:
        e = f(dom.clamp(dom.inv(u)))
        if e <= t:
            raise _Feasible
        return math.log(e)

    if not a < b:
        return False
    try:
        optimize.minimize_scalar(
            objective, bounds=(a, b), method="bounded", options={"xatol": _ISLAND_XATOL, "maxiter": 25}
        )
    except _Feasible:
        return True
    return False


def _islands(f: _Values, dom: Domain, t: float, good: Number | None) -> bool:
    """Search the scanned points beyond ``good`` (towards the infeasible end) for a feasible
    island: at each local minimum of the scanned f, minimise f between its two neighbours.
    Returns whether a feasible point was found (it is then among ``f.values``)."""
    d = dom.d
    start = dom.feasible_end if good is None else good
    scan = sorted(((x, e) for x, e in f.values.items() if d * (x - start) > 0), key=lambda q: -d * q[0])
    if not scan:
        return False
    seq = scan + [(start, f(start))]  # from the infeasible end down to the start
    for i in range(len(seq) - 1):
        above = seq[i - 1][1] if i > 0 else math.inf
        if not (seq[i][1] < above and seq[i][1] < seq[i + 1][1]):
            continue
        ends = sorted((dom.fwd(seq[i + 1][0]), dom.fwd(seq[i - 1][0] if i > 0 else seq[i][0])))
        if _minimise_for_feasible(f, dom, t, ends[0], ends[1]):
            return True
    return False


def _brent(f: _Values, dom: Domain, t: float, good: Number, bad: Number) -> None:
    """One ``scipy.optimize.brentq`` run on y(u) = log(f(x(u))/t) between good and bad."""
    (ua, xa), (ub, xb) = sorted(((dom.fwd(good), good), (dom.fwd(bad), bad)))
    lo_x, hi_x = min(good, bad), max(good, bad)

    def y(u: float) -> float:
        if u <= ua:
            x = xa
        elif u >= ub:
            x = xb
        else:
            x = min(max(dom.clamp(dom.inv(u)), lo_x), hi_x)
        return _y(f(x), t)

    # integers: adjacent integers in log x; reals: |Δ log x| ≤ |Δu| for both coordinates
    xtol = 0.5 / (max(abs(good), abs(bad)) + 1.0) if dom.integer else 0.5 * math.log1p(dom.rtol)
    with contextlib.suppress(RuntimeError):  # not converged in maxiter: the bisection below finishes
        optimize.brentq(y, ua, ub, xtol=xtol, maxiter=100)


def _bisect(f: _Values, dom: Domain, t: float) -> tuple[Number | None, Number | None]:
    """Bisect the tightest bracket of the evaluated points until it is final."""
    for _ in range(_MAX_BISECTIONS):
        good, bad = tightest(f.values, dom, t)
        if good is None or bad is None or dom.narrow(good, bad):
            return good, bad
        f((good + bad) // 2 if dom.integer else math.sqrt(good * bad))
    raise NoConvergence("bisection did not converge")


def find_crossing(
    f: Callable[[Number], float],
    dom: Domain,
    target: float,
    start: Number | None = None,
    known: Mapping[Number, float] | None = None,
    method: str = "brentq",
) -> Crossing:
    """The crossing of ``f`` (x → ε) with ``target`` on ``dom``: bracket, ``brentq`` (``method``
    "brentq") and bisection; ``method`` "bisect" bisects only (for an f that is not monotone).

    ``known`` are points already evaluated (x → f(x)); the bracket starts from them, else from
    ``start`` (default ``dom.start``, else the infeasible end for a non-monotone domain)."""
    values = _Values(f, known)
    if not values.values:
        values(dom.first_point(start))
    good, bad = _bracket(values, dom, target)
    if not dom.monotone and bad is not None and _islands(values, dom, target, good):
        good, bad = _bracket(values, dom, target)
    if good is None or bad is None:
        return Crossing(good, bad, values.values)
    if method == "brentq":
        for _ in range(_BRENT_ROUNDS):
            if dom.narrow(good, bad):
                break
            _brent(values, dom, target, good, bad)
            good, bad = tightest(values.values, dom, target)
            assert good is not None and bad is not None  # evaluating more points keeps a bracket
    good, bad = _bisect(values, dom, target)
    return Crossing(good, bad, values.values)


__all__ = ["Crossing", "Domain", "NoConvergence", "find_crossing", "tightest"]
