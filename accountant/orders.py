"""The default grid of Rényi orders (bounds.md §6).

The optimal order moves a lot: with ε0 = 0.1, n = 10⁴, δ = 10⁻⁶ it lies above 2,000; after many
rounds it falls to 2–30. The grid therefore reaches 10⁴: fine steps at small orders (the range of
many-round compositions), every integer to 16, then integers spaced geometrically (ratio ≈ 1.12)
up to 10⁴. Conversions refine the optimum between grid points with real orders.

Above the grid: when the conversion's optimum on the default grid is its last order (one round of
a very private event, e.g. one shuffle of n = 10⁷ reports at ε0 = 0.5), the conversion also tries
:data:`EXTENSION_ORDERS` — 24 integers spaced geometrically (ratio 32^{1/24} ≈ 1.155) up to
3.2·10⁵ — in one evaluation, dense enough to need no refinement of its own, besides the usual
refinement around 10⁴ (:mod:`accountant.composition`). The grid itself, which versions stored curves
(``DEFAULT_GRID_VERSION``: the ledger's), is unchanged.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

DEFAULT_GRID_VERSION = 1


def _make_default_orders() -> NDArray[np.float64]:
    small = [1.1, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.5, 4.0, 4.5]
    ints = list(range(5, 17))
    geo = np.unique(np.round(np.geomspace(16, 10_000, 58)).astype(int))
    grid = np.unique(np.concatenate([small, ints, geo.astype(float)]))
    grid.setflags(write=False)
    return grid


DEFAULT_ORDERS: NDArray[np.float64] = _make_default_orders()


#: Orders the conversion tries above the default grid when its optimum is the grid's last order
#: (bounds.md §6): integers 10⁴·32^{j/24}, j = 1..24 (11,555 … 320,000), read-only.
EXTENSION_ORDERS: NDArray[np.float64] = np.round(10_000.0 * 32.0 ** (np.arange(1, 25) / 24.0))
EXTENSION_ORDERS.setflags(write=False)


def is_default_grid(orders: NDArray[np.float64]) -> bool:
    """Whether ``orders`` is the default grid (the only grid the conversion extends)."""
    return orders.shape == DEFAULT_ORDERS.shape and bool(np.array_equal(orders, DEFAULT_ORDERS))


def extension_orders(orders: NDArray[np.float64], i: int) -> NDArray[np.float64]:
    """:data:`EXTENSION_ORDERS` when ``orders`` is the default grid and ``i`` its last index (the
    conversion's optimum sits at the grid's end), else an empty array."""
    if i == orders.size - 1 and is_default_grid(orders):
        return EXTENSION_ORDERS
    return np.empty(0)
