"""The log-space numerical kernels the bounds are computed with, as a public interface: each is
specified in closed form, so it can be checked directly against high-precision arithmetic.

* :func:`log_phi` — log φ_α(e^x) with φ_α(r) = r^α − 1 − α(r − 1) ≥ 0, the non-negative summand
  of E[R^α] − 1 for a likelihood ratio R with E[R] = 1; for every real α > 1 or α < 0, by
  branches none of which cancels by more than a factor 2 (also as α → 1 and x → 0).
* :func:`log_binom_pmf` — the Bin(N, p) log-pmf in Loader's saddle-point form (Loader, "Fast and
  accurate computation of binomial probabilities", 2000), absolute error ~1e-15 at any size;
  :func:`log_binom_pmf_range` — the same at every integer of a range (Loader's value at the first
  integer of each block, exact pmf ratios within it).
"""

from __future__ import annotations

from ._binomial import log_binom_pmf, log_binom_pmf_range
from ._numerics import log_phi

__all__ = ["log_binom_pmf", "log_binom_pmf_range", "log_phi"]
