"""Per-point sums over single cells: the exact engine's main sums (bounds.md §8).

For points j (each a segment of cells b, every cell its own bin) and orders α > 1:

    h-form:  log Σ_b e^{lm_b + α·g_b}          (E_Q[R^α·1_window] with lm = log Q, g = log R),
    φ-form:  log Σ_b e^{lm_b}·φ_α(e^{g_b})     (φ_α(r) = r^α − 1 − α(r − 1) ≥ 0),

the quantities :func:`accountant.clones.exact.binned.main_sums` forms without a Taylor term. Both are
sums of non-negative terms, evaluated

* in numpy: the dense (orders × cells) exponents (with :func:`accountant._numerics.log_phi`),
  then a log-sum-exp per segment whose differences to the largest exponent are raised to −700
  where lower (an exp of such a difference is subnormal and costs ~20× a normal one; the sum
  grows by at most cells·e^{−700} relative, an upper-side change far below rounding);
* or, for the φ-form when the compiled kernels are on (:func:`accountant.clones.compiled.available`),
  in one loop per (point, order) (:func:`accountant.clones.compiled.sums.cell_logsums_phi`):
  e^{max lm}·Σ_b e^{lm_b − max lm}·φ_α(e^{g_b}) in linear space with the formulas of log_phi's
  branches (one exp or expm1 per term instead of a log φ and an exp, the cell-only parts once
  per cell), where that cannot lose more than rounding (every weight ≥ e^{−700}, α·g ≤ 600,
  scaled sum ≥ 1e-280), else in log space with the compiled log φ. (The h-form stays in numpy:
  its cost is one exp per term, and numpy's vectorised exp is the faster.)

The two give the same sums to rounding (tests/accountant/test_clone_cellsums.py).
"""

from __future__ import annotations

import numpy as np

from ..._numerics import log_phi
from .. import compiled
from ..types import Array

_FLOOR = -700.0  # differences to the largest exponent raised to this (no subnormal exps)


def cell_logsums(lm: Array, g: Array, starts: Array, alphas: Array, phi: bool) -> Array:
    """(points × orders) log-sums of the module docstring over the cells of each point; the
    points' cells are consecutive in ``lm``, ``g`` and begin at ``starts`` (increasing, the
    first 0; every point has at least one cell); orders α > 1."""
    kern = compiled.sums_if_on() if phi else None  # (the h-form: numpy's vectorised exp is the faster)
    if kern is not None and alphas.size and float(alphas.min()) > 1.0:
        out = np.empty((starts.size, alphas.size))
        bounds = np.append(starts, lm.size).astype(np.int64)
        a = np.ascontiguousarray(alphas, dtype=float)
        kern.cell_logsums_phi(
            np.ascontiguousarray(lm, dtype=float), np.ascontiguousarray(g, dtype=float), bounds, a, out
        )
        return out
    return _numpy_logsums(lm, g, starts, alphas, phi)


def _numpy_logsums(lm: Array, g: Array, starts: Array, alphas: Array, phi: bool) -> Array:
    a = alphas[:, None]
    main = log_phi(a, g[None, :]) if phi else a * g[None, :]
    main += lm[None, :]
    sizes = np.diff(np.append(starts, lm.size))
    mx = np.maximum.reduceat(main, starts, axis=1)
    ok = np.isfinite(mx)
    safe = np.where(ok, mx, 0.0)
    main -= np.repeat(safe, sizes, axis=1)
    with np.errstate(invalid="ignore"):
        np.maximum(main, _FLOOR, out=main)
    np.exp(main, out=main)
    tot = np.add.reduceat(main, starts, axis=1)
    with np.errstate(divide="ignore"):
        out: Array = np.where(ok, safe + np.log(tot), mx).T
    return out
