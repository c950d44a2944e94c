"""Certified RDP of the shuffle model from the clone reduction (bounds.md §8).

Source
------
Feldman, McMillan, Talwar, "Hiding Among the Clones: A Simple and Nearly Optimal Analysis of
Privacy Amplification by Shuffling", FOCS 2021 (arXiv:2012.12803), section 3 — the reduction for
a general ε0-LDP randomizer, *not* the 2023 "stronger clones" (which carries an erratum). For any
ε0-LDP local randomizers (discrete or continuous outputs, adaptively chosen), the shuffled outputs
on two replace-one neighbouring datasets are one post-processing of the pair

    C ~ Bin(n−1, e^{−ε0}),  A | C ~ Bin(C, 1/2),  Δ ~ Bern(e^{ε0}/(e^{ε0}+1)),
    P = (A + Δ, C − A + 1 − Δ),        Q = (A + 1 − Δ, C − A + Δ),

so by data processing ε(α) ≤ D_α(P‖Q) at every real α > 1 (and D_α(P‖Q) = D_α(Q‖P): Q is P with
its coordinates swapped, so both directions are covered). C has the same law under P and Q.
Writing x for the first coordinate, u = 2x − C − 1 and s = tanh(ε0/2), the likelihood ratio is

    R(u, C) = (1 + s·u/(C+1)) / (1 − s·u/(C+1))   ∈ [e^{−ε0}, e^{ε0}],

(P(x)/Q(x) = ((C+1−x) + E·x)/(E·(C+1−x) + x) with E = e^{ε0}), and under Q,
u = (2A − C) + ξ with ξ = −1 w.p. E/(E+1), else +1. Hence

    ε_clones(α) = log E_Q[R^α] / (α − 1) = log Σ_c P(C=c)·f_α(c) / (α − 1),
    f_α(c) = E_Q[R^α | C = c] = Σ_x Q_c(x)·R_c(x)^α,
    Q_c(x) = (b_c(x) + e^{−ε0}·b_c(x−1)) / (1 + e^{−ε0}),  b_c = Bin(c, 1/2) pmf.

Randomized response (``randomizer="rr"``, bounds.md §12): the same pair with
C ~ Bin(n−1, 2/(e^{ε0}+1)), the clone probability of binary and k-ary randomized response. Only the
law of C changes (``Ctx.p``, read by :mod:`.grid.cgrid` and :mod:`.grid.cmass` alone); f_α(c),
its monotonicity in c and f_α(0) = the cap do not depend on it, so every engine and certificate
below holds as written.

:mod:`.reference` is this sum written out cell by cell (every cell (C, A, ξ), no bound, no
window): the executable definition of what every engine bounds, and what their tests compare with.

Certified evaluation
--------------------
Every engine bounds Σ_c P(c)(f_α(c) − 1) = E_Q[R^α] − 1 from above in log space, where f − 1 is
small as a sum of non-negative terms (the φ-form, :func:`accountant._numerics.log_phi`). The
stages, in reading order (each imports only earlier ones, except that the compiled kernels of
stage 4 import only stage 1 and are called by stages 2–3 when they are on;
tests/accountant/test_clone_layout.py checks it):

1. :mod:`.types` — the per-(n, ε0) context ``Ctx`` and the types the stages share;
   :mod:`.closed_form` — g = log R without cancellation, log Q_c at single cells, the tilted
   peak of Q·R^α, geometric sums, rough estimates of log f that steer the designs, the ε0-DP cap.
2. :mod:`.grid` — where the sum is evaluated: the C-grid (:mod:`.grid.cgrid`; monotonicity in c,
   f_α(c) non-increasing by data processing, bounds each C-bin by its left end, with f_α(0) the
   ε0-DP cap), the law of C summed over its bins (:mod:`.grid.cmass`), the cell window of each
   point with certified bounds on the cells outside it (:mod:`.grid.windows`), and the cells
   themselves (:mod:`.grid.cells`).
3. The engines, bounding f_α(c) − 1 at each point:
   a. :mod:`.exact` — the exact and adaptive engines: the C-grid refined per chunk of orders,
      every cell its own bin (exact) or per-bin Taylor bounds on binned cells
      (:mod:`.exact.binned`) and log-concave geometric sums (:mod:`.exact.geometric`);
   b. :mod:`.histogram` — one design per (n, ε0), all cells binned once on g
      (:mod:`.histogram.bins`: chord/Jensen per bin), runs of cells no order needs bounded by
      boxes (:mod:`.histogram.boxes`).
4. :mod:`.compiled` — optional numba kernels (off unless ``ACCOUNTANT_NUMBA=1``) for the loops of
   stages 2–3: the same histogram and per-order sums in fused loops, the same bounds.
5. :mod:`.routing` — which engine a call uses, and the cache of prepared histograms.

The result is inflated by a relative 1e-11 (rounding of sums and pmfs) and capped by the ε0-DP
cap ĉ(α) (valid: f_α(c) ≤ f_α(0) for every c), so it is never below the exact value.

Glossary
--------
The sum runs over C = c (the law of the number of clones) and, for each c, over x (the first
coordinate); the engines group its terms with these nouns:

* **point** — one value c_j of the C-grid; it stands for its **C-bin** [c_j, c_{j+1}) (bounded by
  f_α(c_j) times the bin's exact mass W_j, :mod:`.grid.cmass`).
* **cell** — one term (c, x): weight P(C=c)·Q_c(x), likelihood ratio R_c(x), g = log R.
* **window** — the cells [x_lo, x_hi] of a point that are evaluated; the rest (the **tails**) is
  bounded in closed form (:mod:`.grid.windows`).
* **block** — a fixed number of consecutive cells of one point that share one binomial anchor
  (Loader's pmf) and a product of exact ratios (:mod:`.grid.cells`, :mod:`.compiled`).
* **segment** — the cells (or blocks, or bins) of one point laid end to end in a flat array
  (``seg``: the point of each; ``starts``: where each point's begin); in
  :mod:`.compiled.histogram_build` also a stretch of cells whose g comes from one series.
* **bin** — a set of cells bounded together from its mass, mean and extreme values of g: by x
  within a point (:mod:`.exact.binned`, :mod:`.exact.geometric`) or by g over all points (the
  histogram, :mod:`.histogram.bins`); a **key** is a histogram bin's index on |g| with the sign
  of g (2·bin + [g < 0]).
* **run** — consecutive cells of one point in one histogram key, reduced before they are
  scattered (:mod:`.histogram.runs`); in :mod:`.histogram.boxes`, consecutive cells of one point
  on one side of Q's mode and of g = 0.
* **box** — a run of cells that no order needs, bounded by its width × its largest Q × ψ_α at its
  end, one histogram entry for every order (:mod:`.histogram.boxes`).
* **chunk** — neighbouring orders evaluated together on one refined C-grid (:mod:`.exact`).

Engines (``engine=`` of :func:`clone_rdp`)
-----------------------------------------
* ``"exact"`` — every cell, the C-grid refined to single integers where the mass matters; equals
  the untruncated sum to ~1e-12 (cost grows like n^{3/2}: small n only);
* ``"adaptive"`` — the same C-grid refinement per chunk of orders with binned cells;
* ``"histogram"`` — one C-grid and window design per (n, ε0), made for the default grid and 1.01
  whatever orders are asked (a value depends on (n, ε0, α) only), all cells binned once on g,
  each order then costs its bins only; ε0 ∈ [1e-6, 30] and orders in [1.01, 10⁴];
* ``"auto"`` (default) — exact where cheap (n ≤ 6,000 and an estimated C-values × cells × orders
  ≤ 2.5e6 for ≤ 8 orders, ≤ 6e5 for more), else the histogram within its domain and cell budget
  (orders whose a-posteriori slack check fails get the smaller of the chord of their checked
  neighbours, by convexity of (α−1)·D_α, and the adaptive engine), else adaptive. A call with
  orders on both sides of 10⁴ (the conversion's extension above the default grid, up to
  3.2·10⁵) is split there: the orders above go to exact/adaptive, which hold at every real α.

The prepared histograms of the last few (n, ε0) are kept in the process (:func:`clear_cache`), so
later orders of the same (n, ε0) — the real-order refinement of an ε answer — are almost free.
Timings: ``bench/results_clones.md``.

Limits
------
``CLONES_MAX_N`` = 10⁸: above it :func:`clone_rdp` returns +inf at every order, so the caller
falls back to the thesis bounds and says so.
"""

from __future__ import annotations

import numpy as np

from .._numerics import pure_dp_rdp
from ..orders import DEFAULT_ORDERS
from . import compiled
from .routing import ENGINES, clear_cache, log_fm1, route
from .types import RANDOMIZERS, ArrayLike, clone_law

__all__ = [
    "CLONES_MAX_N",
    "ENGINES",
    "RANDOMIZERS",
    "clear_cache",
    "clone_cap",
    "clone_law",
    "clone_rdp",
    "precompile",
    "route",
]

#: Largest n for which :func:`clone_rdp` certifies a bound; above it every order returns +inf.
CLONES_MAX_N = 10**8

_REL_SAFETY = 1e-11


def clone_cap(epsilon0: float, orders: ArrayLike) -> np.ndarray:
    """The ε0-DP cap ĉ(α) = log((e^{αε0} + e^{(1−α)ε0})/(e^{ε0}+1))/(α−1) = log f_α(0)/(α−1)
    (bounds.md §1): :func:`accountant._numerics.pure_dp_rdp`."""
    return pure_dp_rdp(epsilon0, orders)


def clone_rdp(
    n: int, epsilon0: float, orders: ArrayLike, engine: str = "auto", randomizer: str = "any"
) -> np.ndarray:
    """Certified RDP upper bound of the shuffle model from the clone reduction.

    FMT21 §3 (general ε0-LDP randomizers, replace-one neighbours), evaluated as described in the
    module docstring: ε(α) = log E_Q[R^α]/(α−1) for every real α > 1, rounded outward, never
    below the exact value and never above the ε0-DP cap ĉ(α).

    Args:
        n: number of users (int, 1 ≤ n; validated by the caller). n = 1 gives the cap.
        epsilon0: local privacy level, 0 ≤ ε0 ≤ 50. ε0 = 0 gives zeros.
        orders: real orders α > 1, any shape (≤ 1e6).
        engine: ``"auto"``, ``"exact"``, ``"adaptive"`` or ``"histogram"`` (module docstring);
            every engine gives a certified upper bound, they differ in cost and slack.
        randomizer: ``"any"`` (default: the pair above, valid for every ε0-LDP randomizer) or
            ``"rr"``: binary or k-ary randomized response, whose reports admit the clone
            probability 2/(e^{ε0}+1) (bounds.md §12) — the same pair with C ~ Bin(n−1, 2/(e^{ε0}+1)),
            every engine and certificate unchanged (only the law of C moves: ``types.clone_law``).

    Returns:
        float64 array of the same shape; finite and ≥ 0 for n ≤ ``CLONES_MAX_N``, +inf above it
        (the caller then falls back to the thesis bounds).

    Raises:
        ValueError: an unknown engine, or ``"histogram"`` outside its domain.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown clone engine {engine!r}; use one of {', '.join(ENGINES)}")
    if randomizer not in RANDOMIZERS:
        raise ValueError(f"unknown randomizer {randomizer!r}; use one of {', '.join(RANDOMIZERS)}")
    a = np.asarray(orders, dtype=float)
    if epsilon0 == 0.0 or a.size == 0:
        return np.zeros(a.shape)
    if n > CLONES_MAX_N:
        return np.full(a.shape, np.inf)
    uniq, inv = np.unique(a.ravel(), return_inverse=True)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        lfm1 = log_fm1(int(n), float(epsilon0), uniq, engine, randomizer)
        eps = np.logaddexp(0.0, lfm1) / (uniq - 1.0) * (1.0 + _REL_SAFETY)
        cap = clone_cap(epsilon0, uniq)
    # the cap is a valid bound on the same quantity (f_α(c) ≤ f_α(0)); it also replaces any value
    # a floating-point failure might have left non-finite
    eps = np.where(np.isnan(eps), cap, np.minimum(eps, cap))
    # ε0 > 0 makes ε(α) > 0; a value that underflowed (ε0 ≲ 1e-160) is rounded up, not down
    eps = np.maximum(eps, np.nextafter(0.0, 1.0))
    return eps[inv].reshape(a.shape)


#: The clone curves whose evaluation reaches every compiled kernel (the default engine on a
#: mid-sized population; the adaptive engine's exact mode on a small one), for :func:`precompile`.
_PRECOMPILE_CURVES = ((1_000_000, 0.5, "auto"), (1000, 1.0, "adaptive"))


def precompile() -> list[str]:
    """Turn the compiled kernels on and compile every one of them now by evaluating clone curves
    that reach each (with numba's on-disk cache, ``cache=True``, later processes load them instead
    of compiling: the container image runs this once at build time). Returns the names of the
    compiled kernels. Raises RuntimeError when numba is not installed."""
    if not compiled.use(True):
        raise RuntimeError("the compiled kernels need numba: pip install -e '.[fast]' (in a clone)")
    from .compiled import histogram_build, histogram_sum, sums

    for n, epsilon0, engine in _PRECOMPILE_CURVES:
        clone_rdp(n, epsilon0, DEFAULT_ORDERS, engine=engine)
    kernels = {
        "g_range": histogram_build.g_range,
        "cells_stats": histogram_build.cells_stats,
        "hist_sum": histogram_sum.hist_sum,
        "pmf_block_sums": sums.pmf_block_sums,
        "cell_logsums_phi": sums.cell_logsums_phi,
        "tilt_argmax": sums.tilt_argmax,
    }
    return sorted(name for name, fn in kernels.items() if getattr(fn, "signatures", None))
