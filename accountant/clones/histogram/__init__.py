"""Stage 3b: the histogram engine, the merged-histogram evaluation of the clone bound (the default
engine of :mod:`accountant.clones` in its domain).

An upper bound on the exact sum of :mod:`accountant.clones.reference` (which its tests compare
with), with the same certificate as the module docstring of :mod:`accountant.clones`:

    F(α) − 1 = Σ_c P(C=c)·(f_α(c) − 1),   f_α(c) − 1 = Σ_x Q_c(x)·ψ_α(g_c(x)),

with g = log R and ψ_α(g) = e^{αg} − 1 − α(e^g − 1) ≥ 0 (the φ-form: Σ_x Q_c R = 1 exactly, so
f − 1 is a sum of non-negative terms and stays accurate when it is 1e-12). What is new is how the
sum is bounded, so that the cost of each order no longer grows with the number of cells:

1. *C-grid* (:mod:`accountant.clones.grid.cgrid`). Points 0 = c_0 < c_1 < … with bins [c_j, c_{j+1}) (the last to N); by monotonicity
   in c (data processing, :mod:`accountant.clones.exact`) each bin is bounded by f_α(c_j) times its exact mass
   W_j. The points are placed once, from cheap estimates of each order's tilted C-distribution
   (density ∝ √(π·|d log f/dc|), optimal for the left-end rule, and log f changing by at most
   ~max(1, allowed slack) across a bin where an order's tilted mass is not negligible), plus a
   geometric ladder below down to c = 0, where f_α(0) is exact (the ε0-DP cap). Estimates only
   decide where points go; the bound holds for any grid.
2. *Cells.* For every point, every cell x of a window [x_lo, x_hi] is evaluated exactly, with the
   weight W_j·Q_{c_j}(x) (log space). Outside the window, the certified tail bounds of :mod:`accountant.clones.grid.windows` are
   added per point and order: T_lo + T_hi + (α−1)·τ (φ ≤ R^α + α − 1). Windows follow the tilted
   peaks of the largest order; for points far in the C-tail (whose mass is e^{−45} below every
   order's estimated total even when multiplied by α) the window starts higher, where the bound
   below it, W_j·e^{α·g(x_lo − 1)}, is equally negligible. Wide windows (large ε0) are then
   split into cell ranges and boxes (:mod:`.boxes`): runs no order needs become one entry each,
   in a histogram of their own, bounding their cells for every order.
3. *One histogram in g for all points* (:mod:`.bins`). Cells are binned on g (geometric bins of ratio 1.03 near
   0, then of width min(7.5e-4, g_max/200)); each bin keeps its mass M, mean μ and the cells' own
   extreme values [g_lo, g_hi]. ψ_α is concave below g* = −log α/(α−1) and convex above, so per
   bin and order: convex — the chord through (g_lo, ψ(g_lo)) and (g_hi, ψ(g_hi)) at μ
   (E ψ ≤ chord(μ)); concave — ψ(μ) (Jensen); straddling g* — M·max(ψ(g_lo), ψ(g_hi)) (ψ is
   monotone on each side of 0, so its maximum on an interval is at an end). A bin holding one
   value of g is exact. Bins whose crude bound (log M + log(α²g²/2) + α·g for g > 0, from
   ψ'' ≤ α²e^{α·max(g,0)}; log M + log(α|g|) or the Taylor form for g < 0) is 45 nats below the
   largest are not evaluated; their count times e^{largest − 45} is added.
   Each order sees the histogram merged as far as its own slack allows (:meth:`.bins.Bins.coarse`):
   in the uniform part, 2^ℓ neighbouring bins of one sign become one (the union of their
   cells: masses add, means average, extremes extend — every per-bin bound above holds for any
   such union), with 2^ℓ·dg·α ≤ 0.05 and the merged width ≤ 3% of g; low orders then cost a
   fraction of the bins. The level depends on the order and the histogram only.
4. *Design once, evaluate many times.* Steps 1–3 do not depend on the order: :class:`.engine.Prepared`
   (:mod:`.engine`) keeps them, and :meth:`.engine.Prepared.evaluate` costs per order only its bins and tail terms. The
   caller (:func:`accountant.clones.routing.histogram_engine`) always designs for the same orders (the
   default grid and 1.01), so a value depends on (n, ε0, α) only.
5. *A-posteriori check.* The same histogram with right-end weights (bin j bounded below by
   f(c_{j+1})) estimates the lower end of the C-discretisation bracket; orders whose gap is
   larger than 2%·(α/64)^¼ of log F are flagged, and the caller replaces them by the smaller of
   the chord of their checked neighbours (convexity of (α−1)·D_α) and the adaptive engine.

Every neglected piece is thus added as a bound, so the result is ≥ the exact sum for any grid,
window or binning; the choices only decide the slack (measured ≲ 0.1% at orders ≤ 256 and ≲ 1%
above against exact summation; see ``bench/results_clones.md``). The cost is dominated by the
number of cells (≈ 35 ns each, 10⁵–10⁶ of them); :mod:`accountant.clones` routes a problem here
when its cell count is within budget and to its own adaptive engine otherwise.
"""
