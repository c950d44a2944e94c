"""Stage 2 of the clone engine: where the sum of :mod:`accountant.clones.reference` is evaluated.

* :mod:`.cgrid` — the C-grid: points 0 = c_0 < c_1 < … whose C-bins [c_j, c_{j+1}) are bounded
  by their left end (f_α non-increasing in c), placed from cheap estimates of each order's
  tilted C-distribution;
* :mod:`.cmass` — the law of C ~ Bin(n−1, e^{−ε0}) summed over those bins (the weights W_j);
* :mod:`.windows` — per point the cells [x_lo, x_hi] evaluated, and certified bounds on the tails
  outside them;
* :mod:`.cells` — the cells of every window: log Q, g = log R, in blocks sharing one binomial
  anchor.
"""
