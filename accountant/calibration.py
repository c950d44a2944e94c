"""Calibration and planning: solve one parameter of an event against a target (ε, δ).

Training teams ask "what ε0 can each client use so that 1,000 rounds stay within ε = 4 at
δ = 10⁻⁵", "how many rounds can we afford", "how many clients do we need". Two entry points:

    calibrate(event, solve_for, target_epsilon, delta, orders=None, progress=None)
        -> CalibrationResult  (result.event == result["event"], .epsilon, .delta, .order, …)
    epsilon_over_rounds(event, delta, counts, orders=None)
        -> RoundsCurve  (ε and optimal order after each count, one curve, vectorised)

What "meets the target" means. The answer is judged by exactly the function every other part of
the accountant uses: ``epsilon_guarantee([event], delta, orders)`` — the default (tightest valid)
upper curve on the grid, the Lemma 2.1.3 conversion, and the refinement of the optimum between
grid points at real orders. Call it F. Every returned answer x is recomputed with F and satisfies
``F(x) <= target`` (the reported ε is F(x)), and one step further is already above the target:

* ``epsilon0`` — the largest ε0: ``F(ε0·(1 + 1e-5)) > target`` (the search brackets the crossing
  to a relative width of 1e-6, then checks that nudge explicitly with F);
* ``count`` — the most rounds: ``F(count + 1) > target``;
* ``n`` — the fewest users: ``F(n − 1) > target``;
* ``k`` — the LARGEST sample size per round (see below): ``F(k + 1) > target``;

unless the answer sits at the end of the parameter's domain (ε0 = 50, count = 10¹², n = 1 or
n = k, k = n): then ``result.at_limit`` is True and the note says so. When no value of the
parameter meets the target, :class:`~accountant.errors.InfeasibleTarget` is raised with the best
ε that is achievable (``best_epsilon``): ε0 → 0 (ε0 = 1e-10), one round, n = 10¹⁵ users, k = 1.

Direction of ``k`` (subsampled shuffle, n fixed). Mostly one round's RDP grows with k: the
sampling probability γ = k/n rises, and the amplification by sampling weakens faster than the
extra shuffling amplification helps — in the leading term of SU (Thm 5.4.1) γ²/k̄ ≈ 2E·k/n². So
for a fixed number of rounds the useful question is the LARGEST k (the most clients per round,
i.e. the best utility) that keeps the target; that is what ``k`` solves for. Numerically the
default curve is NOT monotone in k everywhere, and the feasible k need not start at 1:

* with the thesis bounds alone, SU's Chernoff slack Υ decays like exp(−(k−1)/(8e^{ε0})) and,
  where it dominates, ε falls with k over a factor 2–3 in k (n = 5.2·10⁶, ε0 = 4.6, T = 2029,
  δ = 9.3·10⁻⁵: ε = 2.18 at k = 1867, 1.93 at k = 4124, 2.07 at k = 6131);
* with the default including WBK19 over the clone curve (bounds.md §8), for large ε0 shuffling
  amplifies only once k ≫ e^{ε0}, and that gain can outgrow the larger γ: n = 65,719, ε0 = 4.82,
  T = 4, δ = 2.2·10⁻⁸ gives ε = 2.65 at k = 2000, 1.65 at k = 8000, 1.70 at k = 12,000 — the
  feasible k can be an interval in the middle. (In a scan of 25 random settings, ε0 ≤ 5, 8 had
  such a stretch, all at ε0 > 3.6.)

The search therefore comes down from the infeasible end — k = n, n/2, n/4, … until the target is
met — looks between scanned points where the scanned ε has a local minimum (golden section), and
finds the crossing in the last bracket: the largest feasible k unless a feasible island narrower
than the scan's spacing hides above it. If no k is found, the error reports the lowest ε seen
and its k. ε is also, by construction of the core's refinement (it refines only around the grid
minimiser) and the n̄ = ⌊(n−1)/(2e^{ε0})⌋ + 1 steps, slightly non-monotone or discontinuous in n
and ε0 in places (≈ 0.2 % in ε); every answer is a verified crossing (feasible, one step further
infeasible) and is the extreme feasible value wherever F is monotone.

Search design (the default curve costs up to seconds per new (n, ε0) on the whole grid once the
tighter bounds of bounds.md §8 are in): few curve evaluations, most of them cheap.

* ``count`` needs no search: RDP is linear in the count, so per order the largest feasible count
  is ⌊(target − c_α)/ε₁(α)⌋ with c_α the conversion's offset (and the KL guard's count where
  ε = 0); the answer is the maximum over the orders, extended through the refinement (the same
  closed form on the refinement's real orders, in each run of counts with one grid minimiser),
  then checked with F at the answer and the answer + 1. One unit curve, two evaluations of F.
* ``epsilon0``, ``n``, ``k``: the thesis bounds' curve on the whole grid at the starting point
  (milliseconds, no tighter bound involved) locates the optimal order. The bracket is found by
  secant steps in u against log ε, with u = log(e^{ε0} − 1) for ε0 (the bounds grow like
  (e^{ε0} − 1)², so log ε is close to linear in u for small and large ε0 alike) and u = log x
  for n and k (ε ∝ 1/n); ``k`` instead halves from k = n (see above). Brent's method closes it
  (inverse quadratic or secant interpolation, bisection whenever its steps stop halving, a
  tolerance step past the best end, never leaving the bracket) to a relative 1e-6 in ε0 or to
  adjacent integers. These search evaluations compute the default curve only on the grid's
  PREFIX up to a few orders above the optimum, plus the refinement's real orders: equal to F
  whenever F's grid minimiser is in the prefix (the high orders, where the bounds cost the most,
  are skipped; all lower orders are kept, so the pure-DP cap's own minimum at low orders is never
  missed; the prefix grows when the minimum reaches its top). Then F itself at the answer and at
  its nudge. If F disagrees with the prefix (a minimum above it), the search restarts from F's
  optimal order with the F-evaluated points, then with F alone, then by plain bisection with F.
  Every loop is bounded; a search is typically 8–14 evaluations, two of them full.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._validation import MAX_COUNT, MAX_EPSILON0, check_delta, check_orders
from .composition import UNBOUNDED, Guarantee, _refine_orders, epsilon_guarantee, event_rdp
from .conversion import epsilon_vector
from .errors import AccountantError, InfeasibleTarget, InvalidEvent, InvalidParameter
from .events import EVENT_TYPES, MAX_USERS, ShuffleEvent, SubsampledShuffleEvent, as_event, event_from_dict
from .orders import DEFAULT_ORDERS

SOLVE_FOR = ("epsilon0", "count", "n", "k")
# the parameters each mechanism can be solved for
_SOLVABLE = {
    "epsilon0": ("shuffle", "subsampled_shuffle"),
    "n": ("shuffle", "subsampled_shuffle"),
    "k": ("subsampled_shuffle",),
}
EPSILON0_RTOL = 1e-6  # relative width of the final ε0 bracket
EPSILON0_NUDGE = 1e-5  # F(ε0·(1 + EPSILON0_NUDGE)) must exceed the target
EPSILON0_FLOOR = 1e-10  # smallest ε0 searched: below it a report carries essentially no information
_WINDOW = 3  # grid orders on each side of the optimum in a search evaluation
_MAX_EVALS = 600  # hard cap on curve evaluations of one calibration (never reached in practice)

ProgressCallback = Callable[[float, float], Any]


# ---------------------------------------------------------------------------------------------
# result objects


@dataclass(frozen=True)
class CalibrationResult:
    """The answer of :func:`calibrate`: the completed event and its recomputed guarantee.

    Attribute and item access are equivalent (``result.event == result["event"]``); ``event`` is
    the api.md dict of the completed event, ``value`` the solved parameter (also found in the
    event), ``epsilon``/``order`` the guarantee of that event recomputed with
    ``epsilon_guarantee`` (never above ``target_epsilon``).
    """

    event: dict
    epsilon: float
    delta: float
    order: float
    solve_for: str
    value: float | int
    target_epsilon: float
    orders: tuple = field(repr=False)
    at_limit: bool = False
    note: str = ""
    evaluations: int = 0

    def __getitem__(self, key: str):
        if not isinstance(key, str) or key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key) -> bool:
        return key in self.keys()

    def keys(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self))

    def get(self, key: str, default=None):
        return getattr(self, key) if key in self.keys() else default

    def to_dict(self) -> dict:
        """JSON-ready form: api.md's ``{"event", "epsilon", "delta", "order"}`` plus the rest."""
        d = {k: getattr(self, k) for k in self.keys()}
        d["event"] = dict(self.event)
        d["orders"] = [float(o) for o in self.orders]
        return d


@dataclass(frozen=True)
class RoundsCurve:
    """ε (and the optimal order) after each number of rounds, from :func:`epsilon_over_rounds`."""

    counts: np.ndarray
    epsilon: np.ndarray
    order: np.ndarray
    delta: float
    orders: np.ndarray = field(repr=False)

    def __getitem__(self, key: str):
        if key not in ("counts", "epsilon", "order", "delta", "orders"):
            raise KeyError(key)
        return getattr(self, key)

    def __len__(self) -> int:
        return int(self.counts.size)

    def to_dict(self) -> dict:
        return {
            "counts": [int(c) for c in self.counts],
            "epsilon": [float(e) for e in self.epsilon],
            "order": [float(o) for o in self.order],
            "delta": self.delta,
            "orders": [float(o) for o in self.orders],
        }


# ---------------------------------------------------------------------------------------------
# input handling


def _check_target(target_epsilon) -> float:
    if isinstance(target_epsilon, bool) or not isinstance(target_epsilon, numbers.Real):
        raise InvalidParameter(f"target_epsilon must be a number > 0, got {target_epsilon!r}")
    t = float(target_epsilon)
    if not math.isfinite(t) or t <= 0:
        raise InvalidParameter(f"target_epsilon must be a finite number > 0, got {target_epsilon!r}")
    return t


def _check_delta(delta) -> float:
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not (0.0 < float(delta) < 1.0):
        raise InvalidParameter(f"delta must be a number strictly between 0 and 1, got {delta!r}")
    return check_delta(delta)


def _event_dict(event) -> tuple[dict, bool]:
    """(api.md dict, whether it came from a complete event object)."""
    if isinstance(event, tuple(EVENT_TYPES.values())):
        return event.to_dict(), True
    if isinstance(event, functools.partial) and event.func in EVENT_TYPES.values() and not event.args:
        return {"mechanism": event.func.mechanism, **event.keywords}, False
    if isinstance(event, Mapping):
        return dict(event), False
    raise InvalidEvent(
        f"event must be an api.md event object (a dict with 'mechanism'), an event instance or a "
        f"functools.partial of an event class, got {type(event).__name__}"
    )


def _base_event(event, solve_for: str):
    """Validate the partial event; return (event with a placeholder value, initial guess or None)."""
    if not isinstance(solve_for, str) or solve_for not in SOLVE_FOR:
        raise InvalidParameter(f"solve_for must be one of {list(SOLVE_FOR)}, got {solve_for!r}")
    d, complete = _event_dict(event)
    mech = d.get("mechanism")
    if mech is None:
        raise InvalidEvent(f"event is missing the field 'mechanism' (one of {sorted(EVENT_TYPES)})")
    if mech not in EVENT_TYPES:
        raise InvalidEvent(f"unknown mechanism {mech!r}; known mechanisms: {sorted(EVENT_TYPES)}")
    allowed = _SOLVABLE.get(solve_for)
    if allowed is not None and mech not in allowed:
        raise InvalidParameter(
            f"solve_for {solve_for!r} applies to mechanism(s) {list(allowed)}, not to {mech!r}"
        )
    guess = None
    if solve_for in d:
        if not complete:
            raise InvalidEvent(
                f"the event must leave out {solve_for!r}: it is the field being solved for "
                f"(got {solve_for}={d[solve_for]!r})"
            )
        guess = d[solve_for]
    if solve_for == "epsilon0":
        d["epsilon0"] = 1.0
    elif solve_for == "count":
        d["count"] = 1
    elif solve_for == "n":
        k = d.get("k")
        d["n"] = k if (mech == "subsampled_shuffle" and isinstance(k, numbers.Integral) and k >= 1) else 1
    else:  # k
        d["k"] = 1
    base = event_from_dict(d)
    return base, guess


# ---------------------------------------------------------------------------------------------
# the evaluators: F (full epsilon_guarantee) and its windowed emulation


class _Budget(AccountantError):
    """Internal: the evaluation cap was reached (turned into a clear error)."""


class _Evaluator:
    """Evaluates the guarantee of ``make(x)`` at ``delta`` on ``grid``.

    ``full`` is F itself (``epsilon_guarantee``). ``window`` emulates it for the search on the
    grid's PREFIX up to a few orders above the optimum, plus the refinement's real orders around
    the prefix's minimiser: the high orders, where the bounds cost the most (U1/SU sums of α terms,
    the clone bound's widening windows), are left out while the optimum is below them, and every
    lower order is kept, so a second local minimum of ε over the orders at low orders (the
    pure-DP cap's) is never missed. When the minimiser is at the prefix's top the prefix grows;
    when it is lower, the next evaluation's prefix shrinks. The result equals F whenever F's grid
    minimiser lies in the prefix (up to the convexity tightening of the default curve, which is
    computed over the orders asked for)."""

    def __init__(self, make, grid: np.ndarray, delta: float, target: float, progress):
        self.make = make
        self.grid = grid
        self.key = tuple(grid.tolist())
        self.delta = delta
        self.target = target
        self.progress = progress
        self.top: int | None = None  # last grid index of the prefix
        self.f_top = 0  # F's latest grid minimiser + _WINDOW
        self.full_cache: dict = {}
        self.window_cache: dict = {}  # x -> (ε, prefix top used)
        self.evaluations = 0
        self.fraction = 0.0

    def _tick(self, eps: float):
        self.evaluations += 1
        if self.evaluations > _MAX_EVALS:
            raise _Budget("calibration did not converge within the evaluation budget")
        if self.progress is not None:
            self.progress(self.fraction, float(eps))

    def _set_top(self, argmin: int, full: bool = False):
        """The next prefix ends 2·_WINDOW grid orders above this minimiser (a second local
        minimum a little higher is still seen), and never below F's latest minimiser + _WINDOW."""
        if full:
            self.f_top = argmin + _WINDOW
        self.top = min(self.grid.size - 1, max(argmin + 2 * _WINDOW, self.f_top))

    def start(self, x) -> float:
        """First evaluation: locate the optimal order cheaply — the thesis bounds' curve on the
        whole grid (milliseconds, no tighter bound involved) — then evaluate the window there.
        Falls back to F itself when no such proxy applies."""
        ev = self.make(x)
        for bound in ("thesis", "cap"):
            try:
                proxy = event_rdp(ev, self.key, bound=bound)
            except AccountantError:
                continue
            eps = epsilon_vector(self.grid, proxy, self.delta)
            if np.all(np.isinf(eps)):
                break
            self._set_top(int(np.argmin(eps)))
            return self.window(x)
        return self.full_eps(x)

    def full(self, x) -> Guarantee:
        g = self.full_cache.get(x)
        if g is None:
            g = epsilon_guarantee([self.make(x)], self.delta, self.key)
            self.full_cache[x] = g
            self._set_top(int(np.argmin(epsilon_vector(self.grid, g.rdp, self.delta))), full=True)
            self._tick(g.epsilon)
        return g

    def full_eps(self, x) -> float:
        return self.full(x).epsilon

    def window(self, x, refresh: bool = False) -> float:
        """F emulated on the prefix (see the class docstring). With ``refresh``, a cached value
        computed on a shorter prefix than the current one is recomputed (it can only go down: a
        short prefix can miss a better order above it, so its value may be stale)."""
        if x in self.full_cache:
            return self.full_cache[x].epsilon
        got = self.window_cache.get(x)
        if got is not None and (not refresh or got[1] >= self.top):
            return got[0]
        if self.top is None:
            return self.full_eps(x)
        ev = self.make(x)
        m = self.grid.size
        top = max(self.top, got[1]) if got is not None else self.top
        for _ in range(m):
            sub = self.grid[: top + 1]
            eps = epsilon_vector(sub, event_rdp(ev, sub), self.delta)
            j = int(np.argmin(eps))
            if j >= top - 1 and top < m - 1:
                top = min(m - 1, j + 2 * _WINDOW)  # the optimum is at the top: grow the prefix
                continue
            break
        self._set_top(j)
        best = float(eps[j])
        if not math.isfinite(best):
            best = math.inf
        elif best > 0:
            fine = _refine_orders(self.grid, j)
            if fine.size:
                feps = epsilon_vector(fine, event_rdp(ev, fine), self.delta)
                best = min(best, float(np.min(feps)))
        best = max(0.0, best)
        if got is not None:
            best = min(best, got[0])
        self.window_cache[x] = (best, top)
        self._tick(best)
        return best

    def window_points(self) -> list:
        return [(x, v[0]) for x, v in self.window_cache.items()] + [(x, g.epsilon) for x, g in self.full_cache.items()]


# ---------------------------------------------------------------------------------------------
# bracketed search on one parameter


@dataclass
class _Param:
    name: str
    lo: float  # domain
    hi: float
    integer: bool
    increasing: bool  # ε increases with the parameter (the feasible side is the low end)
    from_infeasible_end: bool = False  # bracket by halving from the infeasible end (k)
    slope: float = 1.0  # assumed |d log ε / d u| before two points are known
    coord: str = "log"  # the search coordinate u: log x, or log(e^x − 1) for ε0

    def fwd(self, x) -> float:
        """u(x). For ε0, u = log(e^{ε0} − 1): the shuffle bounds grow like (e^{ε0} − 1)², so log ε is
        close to linear in u both for small ε0 (u ≈ log ε0) and for large ε0 (u ≈ ε0)."""
        return math.log(math.expm1(x)) if self.coord == "logexpm1" else math.log(x)

    def inv(self, u: float) -> float:
        if self.coord == "logexpm1":
            return u + math.log1p(math.exp(-u)) if u > 30 else math.log1p(math.exp(u))
        return math.exp(u)

    def du_dlogx(self, x) -> float:
        return x / -math.expm1(-x) if self.coord == "logexpm1" else 1.0

    @property
    def d(self) -> int:
        """Direction (in x) from feasible towards infeasible."""
        return 1 if self.increasing else -1

    def clamp(self, x):
        x = min(max(x, self.lo), self.hi)
        return int(round(x)) if self.integer else float(x)

    def feasible_end(self):
        return self.lo if self.increasing else self.hi

    def infeasible_end(self):
        return self.hi if self.increasing else self.lo

    def step(self, x):
        """One step towards the infeasible side (the nudge)."""
        if self.integer:
            return x + self.d
        return x * (1.0 + EPSILON0_NUDGE)


def _y(eps: float, t: float) -> float:
    return math.log(eps / t) if eps > 0 else -math.inf


def _expand(f, p: _Param, t: float, pts: list, ev: _Evaluator, confirm=None):
    """Find good (f ≤ t) and bad (f > t) points adjacent in the ordering of the known points.

    ``pts`` is a list of evaluated (x, eps). Returns (good, g_good, bad, g_bad); good or bad is
    None when the search reached the end of the domain without finding that side."""
    d = p.d
    for it in range(200):
        good = [(x, e) for x, e in pts if e <= t]
        bad = [(x, e) for x, e in pts if e > t]
        if good:
            gx, ge = max(good, key=lambda q: d * q[0])  # the feasible point furthest towards bad
            beyond = [(x, e) for x, e in bad if d * (x - gx) > 0]
            if beyond:
                bx, be = min(beyond, key=lambda q: d * q[0])
                if confirm is not None:
                    e = confirm(bx)  # a window value from another local minimum may be stale
                    if e != be:
                        pts[:] = [(x, (e if x == bx else v)) for x, v in pts]
                        if e <= t:
                            continue
                        be = e
                return gx, ge, bx, be
            if gx == p.infeasible_end():
                return gx, ge, None, None
            cur, towards = (gx, ge), +1  # move towards the infeasible side
        else:
            bx, be = min(bad, key=lambda q: d * q[0])
            if bx == p.feasible_end():
                return None, None, bx, be
            cur, towards = (bx, be), -1
        x0, e0 = cur
        if p.from_infeasible_end and towards == -1:
            ratio = 2.0
        else:
            # secant in (log x, log ε) through the two nearest points, else an assumed slope
            y0 = _y(e0, t)
            slope = None
            others = [(x, e) for x, e in pts if x != x0 and e > 0 and x > 0]
            if others and e0 > 0:
                x1, e1 = min(others, key=lambda q: abs(math.log(q[0] / x0)))
                s = (math.log(e1 / e0)) / (p.fwd(x1) - p.fwd(x0))
                if s * d > 0.05:
                    slope = s
            if slope is None:
                slope = p.slope * d
            if not math.isfinite(y0):
                ratio = 1e3
            else:
                ratio = math.exp(min(abs(y0 / slope) * 1.1 + 0.02, math.log(1e4)))
            ratio = max(ratio, 2.0)
        direction = d * towards  # +1: larger x
        if p.from_infeasible_end and towards == -1:
            x_new = p.clamp(x0 * ratio if direction > 0 else x0 / ratio)
        else:
            u_new = p.fwd(x0) + direction * math.log(ratio)
            x_new = p.clamp(p.inv(u_new)) if u_new < 700 else p.hi
        if x_new == x0:
            x_new = p.clamp(x0 + direction) if p.integer else x_new
            if x_new == x0:  # at the domain end
                if towards == +1:
                    return x0, e0, None, None
                return None, None, x0, e0
        pts.append((x_new, f(x_new)))
        ev.fraction = max(ev.fraction, min(0.3, 0.05 * (it + 1)))
    raise _Budget("bracketing did not converge")


def _yf(eps: float, t: float) -> float:
    """log(ε/t), finite (ε = 0 is mapped far below)."""
    return math.log(max(eps, t * 1e-300) / t)


def _narrow(f, p: _Param, t: float, good, gg, bad, gb, ev: _Evaluator, refresh=None):
    """Close the bracket f(good) ≤ t < f(bad) in (log x, log ε/t) with Brent's method: inverse
    quadratic or secant interpolation from the end with the smaller |log ε/t|, accepted only while
    its steps keep halving, else bisection; a step of tol/2 past that end when the estimate is that
    close (not twice running: ε may jump there). Ends when the bracket is one integer or 1e-6
    relative wide; the bracket is never lost. ``refresh`` (window searches) re-evaluates a bad end
    whose value may be stale when interpolation stalls; if it turns out feasible, returns
    (it, ε, None, None) so that the caller brackets again."""
    tol = math.log1p(EPSILON0_RTOL)
    ug, ub = p.fwd(good), p.fwd(bad)
    yg, yb = _yf(gg, t), _yf(gb, t)
    w0 = abs(math.log(bad / good))
    prev = None  # the end replaced last: the third point of inverse quadratic interpolation
    d = e = ub - ug
    last_tol_step = flat = False
    widths: list[float] = []  # bracket widths since the last bisection
    refreshed: set = set()
    for _ in range(400):
        if p.integer:
            if abs(bad - good) <= 1:
                break
        elif abs(math.log(bad / good)) <= tol:
            break
        best_u, best_y, other_u = (ug, yg, ub) if abs(yg) <= abs(yb) else (ub, yb, ug)
        tol_u = tol * p.du_dlogx(good if best_u == ug else bad)
        m = 0.5 * (other_u - best_u)
        cand = None
        if prev is not None:
            uc, yc = prev
            if yc != yg and yc != yb and yg != yb:
                cand = (ug * yb * yc / ((yg - yb) * (yg - yc)) + ub * yg * yc / ((yb - yg) * (yb - yc))
                        + uc * yg * yb / ((yc - yg) * (yc - yb)))
        if (cand is None or not math.isfinite(cand) or not (min(ug, ub) < cand < max(ug, ub))) and yb != yg:
            cand = ug - yg * (ub - ug) / (yb - yg)
        usable = (cand is not None and math.isfinite(cand) and min(ug, ub) < cand < max(ug, ub)
                  and gg > 0 and gb > 0)
        step = cand - best_u if usable else None
        stalled = len(widths) >= 4 and widths[-1] > 0.5 * widths[-4]  # ε jumps here: bisect
        if usable and 2 * abs(step) < min(3 * abs(m), abs(e)) and not last_tol_step and not flat and not stalled:
            e, d = d, step
        else:
            if refresh is not None and (bad, ev.top) not in refreshed:
                # interpolation is failing: the bad end may be a stale window value
                refreshed.add((bad, ev.top))
                eb = refresh(bad)
                if eb <= t:
                    return bad, eb, None, None  # it is feasible after all: bracket again
                if eb != gb:
                    gb, yb, prev = eb, _yf(eb, t), None
                    continue
            d = e = m  # bisection
            widths = []
        tol_step = not p.integer and abs(d) < 0.5 * tol_u
        if tol_step:
            d = math.copysign(0.5 * tol_u, m)
        prev_tol_step, last_tol_step = last_tol_step, tol_step
        u_new = best_u + d
        if not p.integer:
            x = p.inv(u_new)
            if not (min(good, bad) < x < max(good, bad)):
                x = p.inv(0.5 * (ug + ub))
            if not (min(good, bad) < x < max(good, bad)):
                x = math.sqrt(good * bad)
        else:
            a_, b_ = min(good, bad), max(good, bad)
            x = (a_ + b_) // 2 if b_ - a_ <= 3 else int(round(p.inv(u_new)))
            x = min(max(x, a_ + 1), b_ - 1)
            best_x = good if best_u == ug else bad
            if abs(x - best_x) <= 1 and b_ - a_ > 3:  # the integer analogue of the tolerance step
                if prev_tol_step:
                    x = (a_ + b_) // 2  # twice running: ε is flat or jumps here, bisect
                else:
                    last_tol_step = True
        ex = f(x)
        u, y = p.fwd(x), _yf(ex, t)
        # a plateau (ε equal at two points of one side: n̄ = ⌊(n−1)/(2e^{ε0})⌋ + 1 makes ε a step
        # function of n): interpolation cannot see the step, bisect
        flat = p.integer and (ex == (gg if ex <= t else gb))
        if ex <= t:
            prev = (ug, yg)
            good, gg, ug, yg = x, ex, u, y
        else:
            prev = (ub, yb)
            bad, gb, ub, yb = x, ex, u, y
        nw = abs(math.log(bad / good))
        widths.append(nw)
        if w0 > tol and nw > 0:
            ev.fraction = max(ev.fraction, 0.3 + 0.65 * (1 - max(0.0, math.log(nw / tol)) / math.log(w0 / tol)))
    return good, gg, bad, gb


def _islands(f, p: _Param, t: float, pts: list, good, ev: _Evaluator) -> bool:
    """Look for feasible islands above ``good`` between the points of a halving scan.

    Where the scanned ε has a local minimum above the first feasible point, minimise ε over the
    neighbouring interval (golden section in log x); a feasible point found there is added to
    ``pts``. Returns whether one was found."""
    above = sorted([(x, e) for x, e in pts if p.d * (x - good) > 0], key=lambda q: p.d * q[0], reverse=True)
    if not above:
        return False
    g_e = next(e for x, e in pts if x == good)
    seq = above + [(good, g_e)]  # from the infeasible end down to good
    for i in range(len(seq) - 1):
        e_up = seq[i - 1][1] if i > 0 else math.inf
        if not (seq[i][1] < e_up and seq[i][1] < seq[i + 1][1]):
            continue
        a = math.log(seq[i + 1][0])
        b = math.log(seq[i - 1][0]) if i > 0 else math.log(seq[i][0])
        if b < a:
            a, b = b, a
        phi = (math.sqrt(5.0) - 1.0) / 2.0

        def at(u):
            x = p.clamp(math.exp(u))
            e = f(x)
            pts.append((x, e))
            return e

        c, d = b - phi * (b - a), a + phi * (b - a)
        fc, fd = at(c), at(d)
        for _ in range(18):
            if min(fc, fd) <= t:
                return True
            if b - a < 0.01 or (p.integer and math.exp(b) - math.exp(a) <= 2):
                break
            if fc < fd:
                b, d, fd = d, c, fc
                c = b - phi * (b - a)
                fc = at(c)
            else:
                a, c, fc = c, d, fd
                d = a + phi * (b - a)
                fd = at(d)
        if min(fc, fd) <= t:
            return True
    return False


def _search(ev: _Evaluator, p: _Param, t: float, x0):
    """The verified crossing: (x, Guarantee(x), at_limit).

    Rounds: the window search, checked with F; if F disagrees (the window sat in another local
    minimum over the orders than F's), a second window search restarted from F's optimal order
    and the F-evaluated points; then searches with F itself; then plain bisection with F."""
    x0 = p.clamp(x0)
    pts: list | None = [(x0, ev.start(x0))]
    seeds: list = []
    for mode in ("window", "window", "full", "full"):
        windowed = mode == "window"
        f = ev.window if windowed else ev.full_eps
        if not windowed:
            for x in seeds:  # the window search's last bracket, now judged by F
                ev.full(x)
        if not windowed or pts is None:
            ev.window_cache.clear()  # window values from other local minima are stale
            pts = [(x, g.epsilon) for x, g in ev.full_cache.items()]
        bad = None
        confirm = functools.partial(ev.window, refresh=True) if windowed else None
        for _attempt in range(4):
            good, gg, bad, gb = _expand(f, p, t, pts, ev, confirm)
            if good is None and p.from_infeasible_end and windowed:
                # the halving scan reached k = 1 without meeting the target: ε need not be
                # monotone in k, so look between the scanned points for a feasible k
                if _islands(f, p, t, ev.window_points(), p.feasible_end(), ev):
                    good, gg, bad, gb = _expand(f, p, t, ev.window_points(), ev, confirm)
            if good is None or bad is None:
                break
            if p.from_infeasible_end and windowed:
                scan = ev.window_points()
                if _islands(f, p, t, scan, good, ev):
                    good, gg, bad, gb = _expand(f, p, t, ev.window_points(), ev, confirm)
            good, gg, bad, gb = _narrow(f, p, t, good, gg, bad, gb, ev, refresh=confirm)
            if bad is not None:
                break
            pts = ev.window_points() if windowed else [(x, g.epsilon) for x, g in ev.full_cache.items()]
        pts = None
        if windowed:
            seeds = [x for x in (good, bad) if x is not None]
        if good is None:  # the feasible end of the domain misses the target under f
            end = p.feasible_end()
            G = ev.full(end)
            if G.epsilon > t and p.from_infeasible_end:
                # not monotone: the lowest ε seen need not be at the end; report it (checked by F)
                x_low = min(ev.window_points(), key=lambda q: (q[1], q[0]))[0]
                G_low = ev.full(x_low)
                if G_low.epsilon <= t:
                    continue
                if G_low.epsilon < G.epsilon:
                    raise _infeasible(p, t, ev.delta, x_low, G_low.epsilon)
            if G.epsilon > t:
                raise _infeasible(p, t, ev.delta, end, G.epsilon)
            continue
        if bad is None:  # the infeasible end of the domain meets the target under f
            end = p.infeasible_end()
            G = ev.full(end)
            if G.epsilon <= t:
                return end, G, True
            continue
        ev.fraction = max(ev.fraction, 0.95)
        G = ev.full(good)
        if G.epsilon > t:
            continue
        nxt = p.step(good)
        if (p.increasing and nxt > p.hi) or (not p.increasing and nxt < p.lo):
            end = p.infeasible_end()
            Ge = ev.full(end)
            if Ge.epsilon <= t:
                return end, Ge, True
            return good, G, False
        if ev.full(nxt).epsilon > t:
            return good, G, False
    # last resort: plain bisection with F between the F-verified points (always terminates)
    return _bisect_full(ev, p, t)


def _bisect_full(ev: _Evaluator, p: _Param, t: float):
    """Plain bracketing + bisection with F only, from the F-evaluated points (bounded)."""
    for _ in range(60):
        pts = [(x, g.epsilon) for x, g in ev.full_cache.items()]
        good, gg, bad, gb = _expand(ev.full_eps, p, t, pts, ev)
        if good is None:
            end = p.feasible_end()
            raise _infeasible(p, t, ev.delta, end, ev.full(end).epsilon)
        if bad is None:
            end = p.infeasible_end()
            return end, ev.full(end), True
        for _ in range(200):
            if p.integer:
                if abs(bad - good) <= 1:
                    break
                x = (good + bad) // 2
            else:
                if abs(math.log(bad / good)) <= math.log1p(EPSILON0_RTOL):
                    break
                x = math.sqrt(good * bad)
            if ev.full_eps(x) <= t:
                good = x
            else:
                bad = x
        nxt = p.step(good)
        if nxt == bad or not (p.lo <= nxt <= p.hi) or ev.full_eps(nxt) > t:
            return good, ev.full(good), False
        # one step further is feasible after all (ε not monotone there): go on from it
    raise _Budget("bisection did not converge")


def _infeasible(p: _Param, t: float, delta: float, at, best: float) -> InfeasibleTarget:
    """The error for a target no value meets; ``at`` is the value giving ``best`` (an F value)."""
    what = {
        "epsilon0": f"even epsilon0 = {EPSILON0_FLOOR:g} (reports carrying essentially no information) gives",
        "n": f"even n = {int(at):,} users (the largest n supported) give",
        "count": "even a single round (count = 1) gives",
    }.get(p.name)
    if p.name == "k":
        what = ("even k = 1 sampled user per round gives" if at == 1 else
                f"epsilon is not monotone in k here; the lowest found, at k = {int(at):,}, is")
    exc = InfeasibleTarget(
        f"no value of {p.name!r} meets the target epsilon <= {t:g} at delta = {delta:g}: {what} "
        f"epsilon = {best:.6g}, the best achievable. Raise the target epsilon or delta, or change the "
        f"event's other parameters.",
        best_epsilon=float(best),
    )
    exc.best_value = at  # the value of the parameter that gives best_epsilon
    return exc


# ---------------------------------------------------------------------------------------------
# count: closed form


def _conversion_offsets(grid: np.ndarray, delta: float) -> np.ndarray:
    """c_α with ε_α(T) = T·ε₁(α) + c_α (Lemma 2.1.3; +inf where the order is not used)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.log1p(-1.0 / grid) - np.log(delta * grid) / (grid - 1.0)
    return np.where(grid > 1.01, c, np.inf)


def _max_counts(orders: np.ndarray, unit: np.ndarray, delta: float, t: float) -> np.ndarray:
    """Per order, the largest integer T with T·ε₁(α) + c_α ≤ t, or with T·ε₁ below the KL guard
    (ε = 0); MAX_COUNT where ε₁ = 0, −1 where the order is unusable."""
    c = _conversion_offsets(orders, delta)
    kl = -math.log1p(-delta * delta)  # ε = 0 when T·ε₁ < kl
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lin = np.floor((t - c) / unit)
        klc = np.ceil(kl / unit) - 1.0
    out = np.where(np.isfinite(c), lin, -1.0)
    out = np.maximum(out, np.where(np.isfinite(klc), klc, -1.0))
    out = np.where(unit == 0, float(MAX_COUNT), out)
    out = np.where(np.isfinite(unit), out, -1.0)
    out = np.where(np.isnan(out), -1.0, out)
    return np.clip(out, -1.0, float(MAX_COUNT))


def _grid_eps(grid, unit, T, delta):
    return epsilon_vector(grid, np.where(unit == 0, 0.0, unit * T), delta)


def _argmin_interval_end(grid, unit, c, i: int, T: int) -> int:
    """The last count T' ≥ T at which grid order i still minimises the grid ε (argmin takes the
    first index on ties), from the crossing counts of the lines T·ε₁ + c (approximate in the last
    unit; callers verify)."""
    r = unit
    ok = np.isfinite(c) & np.isfinite(r) & (r < r[i])
    if not np.any(ok):
        return MAX_COUNT
    idx = np.nonzero(ok)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (c[idx] - c[i]) / (r[i] - r[idx])
    ends = np.where(idx < i, np.ceil(cross) - 1.0, np.floor(cross))
    ends = ends[np.isfinite(ends)]
    end = float(np.min(ends)) if ends.size else float(MAX_COUNT)
    return int(min(max(end, T), MAX_COUNT))


def _solve_count(base, grid: np.ndarray, delta: float, t: float, progress):
    unit_ev = base.with_count(1) if base.count != 1 else base
    key = tuple(grid.tolist())
    unit = np.asarray(event_rdp(unit_ev, key), dtype=float)
    evals = 0

    def F(T: int) -> Guarantee:
        nonlocal evals
        evals += 1
        g = epsilon_guarantee([unit_ev.with_count(T)], delta, key)
        if progress is not None:
            progress(min(0.99, 0.2 + 0.1 * evals), g.epsilon)
        return g

    per_order = _max_counts(grid, unit, delta, t)
    T = int(per_order.max())
    if T >= MAX_COUNT:
        G = F(MAX_COUNT)
        if G.epsilon <= t:
            return MAX_COUNT, G, True, evals
        T = MAX_COUNT - 1
    c = _conversion_offsets(grid, delta)
    # extend through the refinement: in the run of counts where grid order i minimises the grid ε,
    # F also tries the real orders between i's neighbours, closed form again on those orders
    cur = max(T + 1, 1)
    for _ in range(12):
        if cur > MAX_COUNT:
            break
        e = _grid_eps(grid, unit, cur, delta)
        i = int(np.argmin(e))
        if not np.isfinite(e[i]) or e[i] > t * 1.05 or e[i] == 0:
            break
        end = _argmin_interval_end(grid, unit, c, i, cur)
        fine = _refine_orders(grid, i)
        if fine.size == 0:
            break
        funit = np.asarray(event_rdp(unit_ev, fine), dtype=float)
        tf = int(_max_counts(fine, funit, delta, t).max())
        if tf >= cur:
            T = max(T, min(tf, end))
        cur = end + 1
    # verify with F: the answer must meet the target and one more round must not
    if T < 1:
        G1 = F(1)
        if G1.epsilon > t:
            p = _Param("count", 1, MAX_COUNT, True, True)
            raise _infeasible(p, t, delta, 1, G1.epsilon)
        T = 1
    for _ in range(6):
        G = F(T)
        if G.epsilon > t:
            T -= 1
            if T < 1:
                break
            continue
        if T >= MAX_COUNT:
            return T, G, True, evals
        if F(T + 1).epsilon > t:
            return T, G, False, evals
        T += 1
    # the closed form was off by more than a few rounds (should not happen): bracket with F
    ev = _Evaluator(lambda x: unit_ev.with_count(int(x)), grid, delta, t, progress)
    p = _Param("count", 1, MAX_COUNT, True, True)
    x, G, at_limit = _bisect_full_from(ev, p, t, max(T, 1))
    return x, G, at_limit, evals + ev.evaluations


def _bisect_full_from(ev: _Evaluator, p: _Param, t: float, x0):
    ev.full(p.clamp(x0))
    return _bisect_full(ev, p, t)


# ---------------------------------------------------------------------------------------------
# public API


def calibrate(event, solve_for: str, target_epsilon: float, delta: float, orders=None,
              progress: ProgressCallback | None = None) -> CalibrationResult:
    """Solve one parameter of ``event`` so that its guarantee meets (target_epsilon, delta).

    ``event``: an api.md event dict that leaves out the field solved for (or a complete event
    object, whose value of that field is only the starting guess, or a ``functools.partial`` of
    an event class). ``solve_for``:

    * ``"epsilon0"`` — the largest ε0 (shuffle, subsampled_shuffle): ε0·(1 + 1e-5) misses;
    * ``"count"`` — the most rounds (any mechanism): closed form, count + 1 misses;
    * ``"n"`` — the fewest users (shuffle; subsampled_shuffle with k fixed, n ≥ k): n − 1 misses;
    * ``"k"`` — the LARGEST number of users sampled per round (subsampled_shuffle, n fixed): one
      round's RDP mostly grows with k (γ = k/n), so for a fixed number of rounds the most clients
      per round that keep the target is the useful answer; k + 1 misses. The default curve is not
      monotone in k everywhere (module docstring: SU's Chernoff slack; for large ε0 the shuffle's
      amplification needs k ≫ e^{ε0}), so the search comes down from k = n by halving, looks
      between scanned points, and returns the largest feasible k it finds.

    The result's ε and order are recomputed with :func:`epsilon_guarantee` for the returned event
    (same grid, conversion and refinement as everywhere) and ε ≤ target_epsilon always.
    ``progress(fraction, epsilon)`` is called after each curve evaluation (fraction in [0, 1], an
    estimate from the bracket width; epsilon the guarantee just evaluated) and once with 1.0 at
    the end. Raises :class:`InfeasibleTarget` (with ``best_epsilon``) when no value meets the
    target, and :class:`AccountantError` subclasses for invalid input.
    """
    t = _check_target(target_epsilon)
    delta = _check_delta(delta)
    grid = DEFAULT_ORDERS if orders is None else check_orders(orders)
    grid = np.asarray(grid, dtype=float)
    base, guess = _base_event(event, solve_for)
    if progress is not None and not callable(progress):
        raise InvalidParameter("progress must be a callable progress(fraction, epsilon) or None")

    try:
        if solve_for == "count":
            value, G, at_limit, evals = _solve_count(base, grid, delta, t, progress)
        else:
            value, G, at_limit, evals = _solve_search(base, solve_for, guess, grid, delta, t, progress)
    except _Budget as exc:  # pragma: no cover - defensive
        raise AccountantError(f"calibration of {solve_for!r} did not converge: {exc}") from None
    final = dataclasses.replace(base, **{solve_for: value})
    note = ""
    if at_limit:
        note = {
            "epsilon0": f"epsilon0 is at the largest value supported ({MAX_EPSILON0:g}) and still meets the target",
            "count": f"count is at the largest value supported ({MAX_COUNT:.0e}) and still meets the target",
            "n": "n is at its smallest possible value and already meets the target",
            "k": "k = n (every user sampled every round) already meets the target",
        }[solve_for]
    if progress is not None:
        progress(1.0, float(G.epsilon))
    return CalibrationResult(
        event=final.to_dict(), epsilon=float(G.epsilon), delta=delta, order=float(G.order),
        solve_for=solve_for, value=value, target_epsilon=t, orders=tuple(grid.tolist()),
        at_limit=at_limit, note=note, evaluations=evals,
    )


def _solve_search(base, solve_for: str, guess, grid, delta: float, t: float, progress):
    if solve_for == "epsilon0":
        p = _Param("epsilon0", EPSILON0_FLOOR, MAX_EPSILON0, integer=False, increasing=True, slope=2.0,
                   coord="logexpm1")
        x0 = float(guess) if isinstance(guess, numbers.Real) and guess > 0 else 1.0

        def make(x):
            return dataclasses.replace(base, epsilon0=float(x))

    elif solve_for == "n":
        lo = base.k if isinstance(base, SubsampledShuffleEvent) else 1
        p = _Param("n", lo, MAX_USERS, integer=True, increasing=False)
        if isinstance(guess, numbers.Integral):
            x0 = int(guess)
        else:
            x0 = 10 * base.k if isinstance(base, SubsampledShuffleEvent) else 1000

        def make(x):
            return dataclasses.replace(base, n=int(x))

    else:  # k
        assert isinstance(base, SubsampledShuffleEvent)
        p = _Param("k", 1, base.n, integer=True, increasing=True, from_infeasible_end=True)
        x0 = base.n  # come down from the infeasible end (ε is not monotone in k everywhere)

        def make(x):
            return dataclasses.replace(base, k=int(x))

    ev = _Evaluator(make, grid, delta, t, progress)
    x, G, at_limit = _search(ev, p, t, x0)
    if isinstance(base, ShuffleEvent | SubsampledShuffleEvent) and p.integer:
        x = int(x)
    return x, G, at_limit, ev.evaluations


def epsilon_over_rounds(event, delta: float, counts, orders=None) -> RoundsCurve:
    """ε at ``delta`` (and the optimal order) after each number of rounds in ``counts``.

    One unit curve (the event repeated once; the event's own ``count`` is replaced by each entry
    of ``counts``), then all conversions at once: a counts × orders matrix of
    ``count·ε₁(α)`` converted with Lemma 2.1.3, the minimum per row, and the same refinement
    between grid points as :func:`epsilon_guarantee` (the real orders around each row's grid
    minimiser; rows sharing a minimiser share one refinement curve). Each entry therefore equals
    ``epsilon_guarantee([event with count=c], delta, orders)`` — same curve values, same
    floating-point operations — to the last bit in practice (tested to 1e-12 relative).
    This is the "budget used vs round" series dashboards plot.
    """
    delta = _check_delta(delta)
    d, complete = _event_dict(event)
    d.setdefault("count", 1)
    base = event_from_dict(d) if not complete else as_event(event)
    unit_ev = base.with_count(1)
    try:
        c = np.asarray(counts)
    except Exception as exc:  # pragma: no cover
        raise InvalidParameter(f"counts must be a list of integers >= 1: {exc}") from None
    c = np.atleast_1d(c)
    if c.ndim != 1 or c.size == 0:
        raise InvalidParameter("counts must be a non-empty one-dimensional list of integers >= 1")
    if c.dtype == bool or not (np.issubdtype(c.dtype, np.integer) or np.issubdtype(c.dtype, np.floating)):
        raise InvalidParameter(f"counts must be integers >= 1, got dtype {c.dtype}")
    cf = c.astype(float)
    if not np.all(np.isfinite(cf)) or np.any(cf != np.floor(cf)):
        raise InvalidParameter("counts must be whole numbers >= 1")
    if np.any(cf < 1) or np.any(cf > MAX_COUNT):
        raise InvalidParameter(f"every count must be between 1 and {MAX_COUNT:.0e}")
    ci = cf.astype(np.int64)
    grid = np.asarray(DEFAULT_ORDERS if orders is None else check_orders(orders), dtype=float)
    key = tuple(grid.tolist())
    unit = np.asarray(event_rdp(unit_ev, key), dtype=float)
    out_eps = np.empty(ci.size)
    out_ord = np.empty(ci.size)
    chunk = max(1, 2_000_000 // max(grid.size, 1))
    for s in range(0, ci.size, chunk):
        cc = ci[s:s + chunk].astype(float)[:, None]
        with np.errstate(invalid="ignore"):
            curves = np.where(unit[None, :] == 0, 0.0, unit[None, :] * cc)
        eps = epsilon_vector(grid, curves, delta)
        idx = np.argmin(eps, axis=1)
        rows = np.arange(cc.shape[0])
        best = eps[rows, idx]
        if not np.all(np.isfinite(best)):
            raise InvalidParameter(UNBOUNDED)
        best_ord = grid[idx].copy()
        for i in np.unique(idx[best > 0]):
            sel = np.nonzero((idx == i) & (best > 0))[0]
            fine = _refine_orders(grid, int(i))
            if fine.size == 0:
                continue
            fkey = tuple(check_orders(fine).tolist())
            funit = np.asarray(event_rdp(unit_ev, fkey), dtype=float)
            farr = np.asarray(fkey)
            with np.errstate(invalid="ignore"):
                fcurves = np.where(funit[None, :] == 0, 0.0, funit[None, :] * cc[sel])
            feps = epsilon_vector(farr, fcurves, delta)
            j = np.argmin(feps, axis=1)
            fbest = feps[np.arange(sel.size), j]
            better = fbest < best[sel]
            best[sel[better]] = fbest[better]
            best_ord[sel[better]] = farr[j[better]]
        out_eps[s:s + chunk] = np.maximum(best, 0.0)
        out_ord[s:s + chunk] = best_ord
    return RoundsCurve(counts=ci, epsilon=out_eps, order=out_ord, delta=delta, orders=grid)


__all__ = ["SOLVE_FOR", "CalibrationResult", "RoundsCurve", "calibrate", "epsilon_over_rounds"]
