"""The default grid of Rényi orders (bounds.md §6).

The optimal order moves a lot: with ε0 = 0.1, n = 10⁴, δ = 10⁻⁶ it lies above 2,000; after many
rounds it falls to 2–30. The grid therefore reaches 10⁴: fine steps at small orders (the range of
many-round compositions), every integer to 16, then integers spaced geometrically (ratio ≈ 1.12)
up to 10⁴. Conversions refine the optimum between grid points with real orders.
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
