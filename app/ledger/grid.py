"""Versioned order grids: register the code's grid, carry stored running curves over to it."""

from __future__ import annotations

import json

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.db.models import T_GRIDS
from app.ledger import curves as cv
from app.ledger import repository as repo


def stored_grids(s: Session) -> dict[int, np.ndarray]:
    """Every registered grid: version → orders."""
    return {
        r.version: cv.from_bytes(r.orders) for r in s.execute(select(T_GRIDS.c.version, T_GRIDS.c.orders))
    }


def ensure_grid(s: Session) -> None:
    """Register the current default grid (idempotent); refuse a changed grid under one version.

    When the default grid changed (a new ``DEFAULT_GRID_VERSION``), the running curves of classes
    and cohorts stored on an older grid are carried over to the new one as valid upper bounds
    (:func:`project_curve`). Charge records keep their curves on the grid they were computed on."""
    row = s.execute(select(T_GRIDS.c.orders).where(T_GRIDS.c.version == cv.GRID_VERSION)).first()
    if row is None:
        s.execute(
            insert(T_GRIDS).values(
                version=cv.GRID_VERSION,
                orders=cv.to_bytes(cv.ORDERS),
                orders_json=json.dumps(cv.ORDERS.tolist()),
                created_at=repo.now(),
            )
        )
    elif not np.array_equal(cv.from_bytes(row.orders), cv.ORDERS):
        raise RuntimeError(
            f"order grid version {cv.GRID_VERSION} in the database differs from the code's grid; "
            "a changed grid needs a new DEFAULT_GRID_VERSION"
        )
    grids = stored_grids(s)
    moved = []
    for c in repo.classes_not_on_grid(s, cv.GRID_VERSION):
        b = c.budget
        if b.policy == "filter" and cv.grid_index(b.alpha_f) is None:
            raise RuntimeError(
                f"filter order {b.filter_order} of a budget class is not on the new grid "
                f"(version {cv.GRID_VERSION}); keep it in the new grid"
            )
        spent = project_curve(grids[c.grid_version], c.spent)
        moved.append(c.with_spent(spent, cv.status(b, spent), grid_version=cv.GRID_VERSION))
    for c in moved:
        repo.update_class(
            s,
            c,
            (
                "spent",
                "grid_version",
                "spent_epsilon",
                "spent_order",
                "remaining_epsilon",
                "remaining_fraction",
            ),
        )
    for co in repo.cohorts_not_on_grid(s, cv.GRID_VERSION):
        repo.update_cohort_curves(s, co, project_curve(grids[co.grid_version], co.cumulative))


def project_curve(
    old_orders: np.ndarray, curve: np.ndarray, new_orders: np.ndarray | None = None
) -> np.ndarray:
    """A valid upper bound on the current grid of a vector stored on ``old_orders``: its RDP curve
    by convexity of (α−1)ε(α) and monotonicity of ε(α) between known orders, ε(α_min) below, +∞
    above the largest finite order (``accountant.composition.curve_from_points``), rounded up; its
    side slots (additive δ, (ε, δ) releases: no orders involved) carried over unchanged (zero for
    a vector stored without them). With ``new_orders`` only the curve is returned."""
    old_orders = np.asarray(old_orders, dtype=float)
    side = np.zeros(cv.SIDE)
    extra = curve[old_orders.size : old_orders.size + cv.SIDE]
    side[: extra.size] = extra
    out = _project(old_orders, curve[: old_orders.size], new_orders)
    return out if new_orders is not None else np.concatenate([out, side])


def _project(old_orders: np.ndarray, curve: np.ndarray, new_orders: np.ndarray | None) -> np.ndarray:
    from accountant.composition import curve_from_points

    new = cv.ORDERS if new_orders is None else np.asarray(new_orders, dtype=float)
    fin = np.isfinite(curve)
    if not np.any(fin):
        return np.full(new.size, np.inf)
    if not np.any(curve[fin]):
        out = np.zeros(new.size)
        out[new > np.max(old_orders[fin])] = np.inf
        return out
    out = curve_from_points(old_orders[fin], curve[fin], new)
    return np.where(np.isfinite(out) & (out > 0), np.nextafter(out, np.inf), out)
