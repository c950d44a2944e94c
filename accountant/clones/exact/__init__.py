"""Stage 3a of the clone engine: the exact and the adaptive engines (:mod:`.refine`), upper
bounds on the exact sum of :mod:`accountant.clones.reference` (which their tests compare with).

A C-grid refined per chunk of orders until the C-discretisation slack is within its target; per
point, f_α(c) − 1 from the cells of its window: every cell its own bin (exact mode,
:mod:`.cellsums`), cells binned by x with per-bin Taylor bounds (:mod:`.binned`), or, where
log f is large, log-concave geometric sums without cell data (:mod:`.geometric`).
"""
