"""Ledger arithmetic: outward-rounded running sums, the two admission policies, status numbers.

All curves live on one order grid (``accountant.DEFAULT_ORDERS``, version
``accountant.DEFAULT_GRID_VERSION``); they are stored as float64 bytes.

Stored vectors. A charge's cost, a class's spent state and a cohort's cumulative state are one
float64 vector: the RDP curve on the grid, followed by :data:`SIDE` slots holding the parts that
are not RDP (:mod:`accountant.combination`): the additive δ Σ count·ζ and the additive statistics
of (ε, δ) releases (count, Σε, Σε², Σε·tanh(ε/2), max ε, Σδ). Every slot is a running sum except
max ε (a running maximum). Vectors stored before these slots existed are exactly the grid's length
and read as having zero side slots (:func:`vector_from_bytes`).

Rounding. A running sum is updated with :func:`add_up`: the float sum rounded to nearest, then one
ulp up wherever the addition may have been inexact. Each step is therefore ≥ the exact real sum,
so the running curve is never below the exactly rounded recomputation from the charge log
(``math.fsum`` over the stored charge curves), whatever the order of summation.

Policies (ledger.md):

* ``declared`` — admit iff ``min_α ε_{δ_B}(α; spent + cost) ≤ ε_B`` over the grid, with the
  conversion of :func:`accountant.conversion.epsilon_vector` (bounds.md §4); with side parts,
  iff ε at δ_B of the three-part summary (:func:`accountant.combination.epsilon_of`: the RDP part
  converted at δ_B − Σζ, joined to the (ε, δ) releases) is ≤ ε_B — refused when Σζ alone
  reaches δ_B.
* ``filter`` (Rényi filter, Feldman & Zrnic) — one designated order α_f and the per-order budget
  ``B(α_f) = ε_B − (log(1/δ_B) + (α_f−1)·log(1−1/α_f) − log α_f)/(α_f−1)`` (> 0);
  admit iff ``spent(α_f) + cost(α_f) ≤ B(α_f)``. Never "any order still has room". Its
  guarantee is for RDP charges at one fixed δ_B: charges with side parts are not admitted under it
  (:func:`has_side`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from accountant import DEFAULT_GRID_VERSION, DEFAULT_ORDERS
from accountant.combination import Account, ApproxPart, ZetaExceedsDelta, epsilon_of
from accountant.conversion import epsilon_vector

GRID_VERSION = DEFAULT_GRID_VERSION
ORDERS = np.asarray(DEFAULT_ORDERS, dtype=float)
_DTYPE = np.dtype("<f8")
#: the side slots after the curve (see the module docstring), in order
SIDE_FIELDS = (
    "zeta",
    "approx_count",
    "approx_eps_sum",
    "approx_eps_sq_sum",
    "approx_eps_tanh_sum",
    "approx_eps_max",
    "approx_delta_sum",
)
SIDE = len(SIDE_FIELDS)
_MAX_OFFSET = SIDE_FIELDS.index("approx_eps_max")


def _n() -> int:
    """Orders on the current grid (read at call time: the grid is a module setting)."""
    return ORDERS.size


def to_bytes(curve: np.ndarray) -> bytes:
    return np.ascontiguousarray(curve, dtype=_DTYPE).tobytes()


def from_bytes(raw: bytes) -> np.ndarray:
    """The float64 array stored in ``raw`` (an order grid, or a vector as stored)."""
    return np.frombuffer(raw, dtype=_DTYPE).astype(float)


def with_side(curve: np.ndarray, side: np.ndarray | None = None) -> np.ndarray:
    """A curve on the grid followed by side slots (zeros when ``side`` is None)."""
    return np.concatenate([np.asarray(curve, dtype=float), np.zeros(SIDE) if side is None else side])


def vector_from_bytes(raw: bytes) -> np.ndarray:
    """A stored cost/spent/cumulative vector; one stored before the side slots existed (exactly
    the grid's length) gets zero side slots."""
    v = from_bytes(raw)
    return with_side(v) if v.size == _n() else v


def zeros() -> np.ndarray:
    return np.zeros(_n() + SIDE)


def rdp_part(v: np.ndarray) -> np.ndarray:
    """The RDP curve on the grid of a vector (or of each row of a matrix)."""
    return v[..., : _n()]


def has_side(v: np.ndarray) -> bool:
    """Whether a vector carries an additive δ or (ε, δ) releases."""
    return bool(np.any(v[_n() :] != 0))


def account(v: np.ndarray) -> Account:
    """The three-part summary (accountant.combination) of a stored vector."""
    z, k, s1, s2, smu, m, sd = (float(x) for x in v[_n() :])
    return Account(ORDERS, rdp_part(v), z, ApproxPart(int(round(k)), s1, s2, smu, m, sd))


def vector_of(acc: Account) -> np.ndarray:
    """The stored vector of a summary on the grid."""
    a = acc.approx
    side = np.array(
        [acc.zeta, float(a.count), a.eps_sum, a.eps_sq_sum, a.eps_tanh_sum, a.eps_max, a.delta_sum]
    )
    return with_side(acc.rdp, side)


def add_up(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b`` rounded outward: never below the exact sum (see module docstring); the max-ε
    slot of the side is a running maximum."""
    s = a + b
    exact = (a == 0) | (b == 0) | ~np.isfinite(s)
    out: np.ndarray = np.where(exact, s, np.nextafter(s, np.inf))
    j = _n() + _MAX_OFFSET
    out[..., j] = np.maximum(a[..., j], b[..., j])
    return out


def conversion_term(order: float, delta: float) -> float:
    """(log(1/δ) + (α−1)·log(1−1/α) − log α)/(α−1): the ε-cost of converting at order α."""
    a = float(order)
    return (math.log(1.0 / delta) + (a - 1.0) * math.log1p(-1.0 / a) - math.log(a)) / (a - 1.0)


def filter_budget(epsilon: float, delta: float, order: float) -> float:
    """B(α_f) of the Rényi filter (ledger.md)."""
    return epsilon - conversion_term(order, delta)


def grid_index(order: float) -> int | None:
    """Index of ``order`` on the grid (relative tolerance 1e-9), or None."""
    i = int(np.argmin(np.abs(ORDERS - order)))
    return i if abs(ORDERS[i] - order) <= 1e-9 * max(1.0, abs(order)) else None


@dataclass(frozen=True)
class Budget:
    epsilon: float
    delta: float
    policy: str = "declared"
    filter_order: float | None = None
    filter_budget: float | None = None

    @property
    def alpha_f(self) -> float:
        """The filter's designated order α_f."""
        if self.filter_order is None:
            raise ValueError("a declared budget has no filter order")
        return self.filter_order

    def filter_index(self) -> int:
        """Index of α_f on the grid."""
        i = grid_index(self.alpha_f)
        if i is None:
            raise ValueError(f"filter order {self.alpha_f} is not on the grid (version {GRID_VERSION})")
        return i


@dataclass(frozen=True)
class Status:
    spent_epsilon: float
    spent_order: float | None
    remaining_epsilon: float
    remaining_fraction: float


def epsilon_at(budget: Budget, curve: np.ndarray) -> tuple[float, float | None]:
    """(ε, order): ε at the budget's δ of an RDP curve on the grid, as the budget's policy reports
    it — declared: max(0, min over the grid of the conversion of bounds.md §4); filter: the same
    conversion at α_f only. ε is +∞ when the curve is unbounded there; 0 for a zero curve.

    A vector with side parts (additive δ, (ε, δ) releases) is converted as a whole by
    :func:`accountant.combination.epsilon_of` at δ_B whatever the policy (the filter admits no such
    charge; this only reports what one costs); +∞ when Σζ reaches δ_B."""
    if has_side(curve):
        try:
            ans = epsilon_of(account(curve), budget.delta)
        except ZetaExceedsDelta:
            return math.inf, None
        return (max(0.0, ans.epsilon) if math.isfinite(ans.epsilon) else math.inf), ans.order
    curve = rdp_part(curve)
    if budget.policy == "filter":
        i = budget.filter_index()
        eps = float(epsilon_vector(ORDERS[i : i + 1], curve[i : i + 1], budget.delta)[0]) if curve[i] else 0.0
        return (max(0.0, eps) if math.isfinite(eps) else math.inf), budget.alpha_f
    if not np.any(curve):
        return 0.0, None
    vec = epsilon_vector(ORDERS, curve, budget.delta)
    i = int(np.argmin(vec))
    if not math.isfinite(vec[i]):
        return math.inf, None
    return max(0.0, float(vec[i])), float(ORDERS[i])


def status(budget: Budget, spent: np.ndarray) -> Status:
    """Spent ε at the budget's δ (declared: minimised over the grid; filter: at α_f)."""
    eps, order = epsilon_at(budget, spent)
    remaining = max(0.0, budget.epsilon - eps) if math.isfinite(eps) else 0.0
    if not math.isfinite(eps):
        eps = 1e308  # never stored as inf; only reachable if an unbounded curve was admitted (it is not)
    return Status(eps, order, remaining, remaining / budget.epsilon)


def pick_filter_order(cost: np.ndarray, delta: float) -> float:
    """(RDP part of ``cost`` only: the filter admits no side parts.)"""
    cost = rdp_part(cost)
    return _pick_filter_order(cost, delta)


def _pick_filter_order(cost: np.ndarray, delta: float) -> float:
    """The grid order minimising ε(δ) of a planned event's curve.

    Minimises cost(α) + conversion term(α) — ε before it is clipped at 0 — which is also the order with
    the most room for the event under the filter (B(α) − cost(α)). With the clipped ε, a nearly free
    event ties at 0 everywhere and the first grid order won, whose B(α) is usually negative."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        conv = (math.log(1.0 / delta) + (ORDERS - 1.0) * np.log1p(-1.0 / ORDERS) - np.log(ORDERS)) / (
            ORDERS - 1.0
        )
    vec = np.where(np.isfinite(cost), cost + conv, np.inf)
    if not np.any(np.isfinite(vec)):
        raise ValueError("the planned event's curve is unbounded at every grid order")
    return float(ORDERS[int(np.argmin(vec))])


def exact_sum(curves: list[np.ndarray]) -> np.ndarray:
    """Exactly rounded order-wise sum (recomputation from the log)."""
    if not curves:
        return zeros()
    m = np.vstack(curves)
    out = np.empty(m.shape[1])
    for j in range(m.shape[1]):
        col = m[:, j]
        if j == _n() + _MAX_OFFSET:
            out[j] = float(np.max(col))
        else:
            out[j] = math.inf if np.any(np.isinf(col)) else math.fsum(col.tolist())
    return out


def evaluate(budgets: list[Budget], after: np.ndarray) -> tuple[np.ndarray, list[Status]]:
    """Admission and :func:`status` for many classes at once (vectorised).

    A class may be charged iff its spent curve would become ``after`` with — declared:
    ``max(0, min_α ε_δ(α; after)) ≤ ε_B`` (finite); filter: ``after(α_f) ≤ B(α_f)`` (finite).

    ``after`` is a (G × vector) matrix of would-be spent vectors, one row per budget. Rows with
    side parts (additive δ, (ε, δ) releases) are judged by :func:`epsilon_at` — the three-part
    conversion at δ_B — under the declared policy, and never admitted under the filter."""
    g = len(budgets)
    if g == 0:
        return np.zeros(0, dtype=bool), []
    side = np.any(after[:, _n() :] != 0, axis=1)
    ok, statuses = _evaluate_rdp(budgets, rdp_part(after))
    for k in np.flatnonzero(side):
        b = budgets[int(k)]
        e, order = epsilon_at(b, after[k])
        ok[k] = b.policy == "declared" and math.isfinite(e) and e <= b.epsilon
        rem = max(0.0, b.epsilon - e) if math.isfinite(e) else 0.0
        statuses[k] = Status(e if math.isfinite(e) else 1e308, order, rem, rem / b.epsilon)
    return ok, statuses


def _evaluate_rdp(budgets: list[Budget], after: np.ndarray) -> tuple[np.ndarray, list[Status]]:
    g = len(budgets)
    eps_b = np.array([b.epsilon for b in budgets])
    delta = np.array([b.delta for b in budgets])[:, None]
    is_filter = np.array([b.policy == "filter" for b in budgets])
    with np.errstate(invalid="ignore"):
        vec = epsilon_vector(ORDERS, after, delta)  # δ broadcasts, one per row
    best_i = np.argmin(vec, axis=1)
    rows = np.arange(g)
    best = vec[rows, best_i]
    fidx = np.array([b.filter_index() if b.policy == "filter" else 0 for b in budgets])
    fbud = np.array([b.filter_budget if b.policy == "filter" else 0.0 for b in budgets])
    f_val = after[rows, fidx]
    f_eps = vec[rows, fidx]
    ok_declared = np.isfinite(best) & (np.maximum(best, 0.0) <= eps_b)
    ok_filter = np.isfinite(f_val) & (f_val <= fbud)
    ok = np.where(is_filter, ok_filter, ok_declared)
    nonzero = np.any(after != 0, axis=1)
    statuses = [
        _rdp_status(budgets[k], is_filter[k], f_val[k], f_eps[k], nonzero[k], best[k], best_i[k])
        for k in range(g)
    ]
    return ok, statuses


def _rdp_status(
    b: Budget, is_filter: Any, f_val: Any, f_eps: Any, nonzero: Any, best: Any, best_i: Any
) -> Status:
    """The status of one class after an RDP charge: under the filter, ε(α_f) of the curve (``f_eps``;
    0 when nothing is spent at α_f, ``f_val`` = 0); declared, the best conversion ``best`` (at order
    index ``best_i``; 0 when nothing is spent). A non-finite ε is reported as 1e308, nothing left."""
    if is_filter:
        e = float(f_eps) if f_val else 0.0  # as status(): nothing spent at α_f is ε = 0
        order = b.alpha_f
    elif not nonzero:
        e, order = 0.0, None
    else:
        e = float(best)
        order = float(ORDERS[best_i]) if math.isfinite(e) else None
    if math.isfinite(e):
        e = max(0.0, e)
        rem = max(0.0, b.epsilon - e)
    else:
        e, rem = 1e308, 0.0
    return Status(e, order, rem, rem / b.epsilon)
