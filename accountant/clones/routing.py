"""Stage 5: which engine evaluates a clone-bound call, and the process-wide cache of prepared
histograms (the engines and their certificates: :mod:`accountant.clones`)."""

from __future__ import annotations

import math

import numpy as np

from .._numerics import log_expm1
from ..orders import DEFAULT_ORDERS
from ..store import BoundedCache
from .closed_form import log_cap_f
from .exact.refine import exact_work, refine_log_fm1
from .histogram.engine import MEMO_MAX, HistPlan, Prepared
from .types import ArrayLike, Ctx

ENGINES = ("auto", "exact", "adaptive", "histogram")

EXACT_BUDGET = 2.5e6  # estimated C-values × x-cells × orders under which a call is evaluated exactly
EXACT_MAX_ORDERS = 8  # … for calls with at most this many orders; with more, only under this budget:
EXACT_BUDGET_MANY = 6e5  # (above, the histogram engine is faster, its refinement orders almost free)
EXACT_MAX_N = 6_000  # … and n at most this (above, the estimate misses the cost of wide tilted windows)
HIST_CELL_BUDGET = 1.6e6  # cells up to which "auto" uses the histogram engine
HIST_EPS0 = (1e-6, 30.0)  # ε0 range of the histogram engine (its design estimates need s² > 0)
#: The orders every histogram is designed for (the default grid and 1.01): a value then depends on
#: (n, ε0, α) only, whatever else a request holds.
HIST_DESIGN = np.union1d(np.asarray(DEFAULT_ORDERS, dtype=float), [1.01])

#: (n, ε0, randomizer) → the prepared histogram (< 1 MB each; emptied with the other caches by
#: :func:`accountant.store.clear_caches`)
_PREPARED: BoundedCache[tuple[int, float, str], Prepared] = BoundedCache(8, name="clone_histograms")


def clear_cache() -> None:
    """Forget the prepared histograms (the next call of each (n, ε0) is cold)."""
    _PREPARED.clear()


def prepared(n: int, eps0: float, randomizer: str = "any") -> Prepared | None:
    """The cached histogram of (n, ε0, randomizer), if any."""
    return _PREPARED.get((n, eps0, randomizer))


def _exact_is_cheap(ctx: Ctx, alphas: np.ndarray) -> bool:
    work = exact_work(ctx, alphas) if ctx.N <= EXACT_MAX_N else math.inf
    return work <= (EXACT_BUDGET if alphas.size <= EXACT_MAX_ORDERS else EXACT_BUDGET_MANY)


def _in_hist_domain(ctx: Ctx, alphas: np.ndarray) -> bool:
    return (
        (HIST_EPS0[0] <= ctx.eps0 <= HIST_EPS0[1])
        and HIST_DESIGN[0] <= alphas[0]
        and alphas[-1] <= HIST_DESIGN[-1]
    )


def histogram_engine(ctx: Ctx, force: bool = False) -> Prepared | None:
    """The prepared histogram of (n, ε0, randomizer) — cached, or built if its plan fits the cell budget (or
    ``force``) — else None. Designed for :data:`HIST_DESIGN` whatever orders are asked."""
    key = (ctx.N + 1, ctx.eps0, ctx.randomizer)
    prep = _PREPARED.get(key)
    if prep is not None:
        return prep
    plan = HistPlan(ctx, HIST_DESIGN)
    if plan.cells > HIST_CELL_BUDGET and not force:
        return None
    prep = Prepared(plan)
    _PREPARED.put(key, prep)
    return prep


def _adaptive_near(ctx: Ctx, alphas: np.ndarray) -> np.ndarray:
    """The adaptive engine at ``alphas``, evaluated together with the two design orders on either
    side of each (its C-grid is refined per chunk of neighbouring orders, so the result depends
    on (n, ε0, α) only and is as tight as inside the full grid)."""
    d = HIST_DESIGN
    j = np.searchsorted(d, alphas)
    near = d[np.clip(np.concatenate([j - 2, j - 1, j, j + 1]), 0, d.size - 1)]
    allo = np.union1d(alphas, near)
    vals = refine_log_fm1(Ctx(ctx.N + 1, ctx.eps0, ctx.randomizer), allo, exact=False)
    return vals[np.searchsorted(allo, alphas)]


def _histogram_checked(ctx: Ctx, prep: Prepared, alphas: np.ndarray) -> np.ndarray:
    """The histogram's bound; orders whose slack check failed (the design's estimates missed
    there) get the smallest of three valid bounds: the value, the chord of its checked neighbours
    (convexity of (α−1)·D_α), the adaptive engine.

    A value depends on (n, ε0, α) only, so each order's final value is kept with the prepared
    histogram and a later request pays only for the orders it has not seen (the composition's
    real-order refinement asks again for most of the grid it asked for before)."""
    memo = prep.memo
    got = {a: memo.get(a) for a in alphas.tolist()}  # one read per order (another thread may clear it)
    new = np.array([a for a, v in got.items() if v is None])
    if new.size:
        out, suspect = prep.evaluate(new)
        if suspect.any():
            sa = new[suspect]
            out = out.copy()
            out[suspect] = np.minimum.reduce([out[suspect], prep.chord_bound(sa), _adaptive_near(ctx, sa)])
        fresh = dict(zip(new.tolist(), out.tolist()))
        got.update(fresh)
        if len(memo) + new.size > MEMO_MAX:
            memo.clear()
        memo.update(fresh)
    return np.array([got[a] for a in alphas.tolist()])


def route(n: int, eps0: float, orders: ArrayLike, randomizer: str = "any") -> str:
    """The engine ``"auto"`` uses for these orders: ``"exact"``, ``"histogram"`` or ``"adaptive"``."""
    alphas = np.unique(np.asarray(orders, dtype=float))
    ctx = Ctx(int(n), float(eps0), randomizer)
    if ctx.N == 0 or _exact_is_cheap(ctx, alphas):
        return "exact"
    if _in_hist_domain(ctx, alphas) and (
        prepared(int(n), float(eps0), randomizer) is not None
        or HistPlan(ctx, HIST_DESIGN).cells <= HIST_CELL_BUDGET
    ):
        return "histogram"
    return "adaptive"


def _histogram_only(ctx: Ctx, alphas: np.ndarray) -> np.ndarray:
    """The histogram engine's bound as it is (``engine="histogram"``), built whatever its cost."""
    if not _in_hist_domain(ctx, alphas):
        raise ValueError(
            f"the histogram engine covers ε0 in [{HIST_EPS0[0]:g}, {HIST_EPS0[1]:g}] and orders in "
            f"[{HIST_DESIGN[0]:g}, {HIST_DESIGN[-1]:g}]; use engine 'adaptive' or 'auto'"
        )
    prep = histogram_engine(ctx, force=True)
    if prep is None:  # (never: a forced build always returns the histogram)
        raise RuntimeError("the clone histogram could not be built")
    return prep.evaluate(alphas)[0]


def log_fm1(
    n: int, eps0: float, alphas: np.ndarray, engine: str = "auto", randomizer: str = "any"
) -> np.ndarray:
    """Upper bound on log(E_Q[R^α] − 1) for sorted unique orders by the chosen engine, the law of
    C that of ``randomizer``'s clone probability (:func:`.types.clone_law`)."""
    ctx = Ctx(n, eps0, randomizer)
    if ctx.N == 0:
        out: np.ndarray = log_expm1(log_cap_f(alphas, ctx))
        return out
    if engine == "exact" or (engine == "auto" and _exact_is_cheap(ctx, alphas)):
        return refine_log_fm1(ctx, alphas, exact=True)
    if engine == "histogram":
        return _histogram_only(ctx, alphas)
    top = int(np.searchsorted(alphas, HIST_DESIGN[-1], side="right"))
    if engine == "auto" and 0 < top < alphas.size:
        # orders within the histogram's domain and above it (the conversion's extension beyond
        # the default grid) are routed apart: the grid's orders keep their histogram values and
        # the adaptive engine (valid at every real order) takes only the orders above 10⁴
        return np.concatenate(
            [
                log_fm1(n, eps0, alphas[:top], engine, randomizer),
                log_fm1(n, eps0, alphas[top:], engine, randomizer),
            ]
        )
    if engine == "auto" and _in_hist_domain(ctx, alphas):
        prep = histogram_engine(ctx)
        if prep is not None:
            return _histogram_checked(ctx, prep, alphas)
    return refine_log_fm1(ctx, alphas, exact=False)
