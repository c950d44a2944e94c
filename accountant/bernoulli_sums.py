"""Sums of independent Bernoullis (Poisson binomial counts) away from their centre: where their
likelihood ratio is bounded, and how little mass lies beyond (docs/bounds.md §13, "the far tails").

S = Σ_f Bin(n_f, p_f) (p_f = expit(θ_f), θ_f its logit), s its pmf, t(y) = s(y − 1)/s(y).

Tilting. S_λ, the count with pmf ∝ s(y)·e^{λy}, is again a sum of Bernoullis (logits θ_f + λ),
with mean μ(λ) = Σ n_f expit(θ_f + λ), increasing in λ, and log-MGF
K(λ) = log E e^{λS} = Σ n_f log1p(p_f·expm1(λ)). Its ratio is t_λ(y) = t(y)·e^{−λ}.

Darroch's rule (Darroch 1964, Ann. Math. Statist. 35:1317; Samuels 1965, Ann. Math. Statist.
36:1272, Thm 1): every mode of a sum of independent Bernoullis is ⌊μ⌋ or ⌈μ⌉, and the pmf (log-concave)
is non-decreasing up to its smallest mode. So t_λ(y) ≤ 1 for every integer y ≤ μ(λ), i.e.

    t(y) ≤ e^{λ}   for every y ≤ μ(λ), at every real λ.                                  (1)

Chernoff. For λ ≥ 0 and every y,

    log Pr[S ≥ y] ≤ K(λ) − λy.                                                            (2)

Both in floating point: μ is summed from a few terms, each within a few ulps (expit), so
μ_lo = μ(1 − 10⁻¹²) is a lower bound; K is a sum of same-signed log1p terms, each within a few
ulps, and gets a slack of 10⁻¹²(|K| + 1), (2) another 10⁻¹²·λy.

A grid of tilts λ_0 = 0 < λ_1 < … turns (1) and (2) into segments (μ(λ_{j−1}), μ(λ_j)] of the
count, each with a ratio bound e^{λ_j} and a mass bound — what :mod:`accountant.shuffled_rr` needs
where its pmf windows end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._lazy import lazy

special = lazy("scipy.special")

__all__ = ["Tilts", "at", "tilts"]

#: tilts in units of the count's standard deviation: 0, then geometric from a quarter to ~10⁴
_Z = np.concatenate([[0.0], 0.25 * 1.05 ** np.arange(220)])
_REL = 1e-12


@dataclass(frozen=True)
class Tilts:
    """Per row (one count each) and tilt λ_j (rows × J, λ_0 = 0, non-decreasing along a row):
    ``lam``; ``mu_lo``, a lower bound on μ(λ_j) (so t(y) ≤ e^{λ_j} for y ≤ ``mu_lo``, (1));
    ``log_mgf``, an upper bound on K(λ_j)."""

    lam: NDArray[np.float64]
    mu_lo: NDArray[np.float64]
    log_mgf: NDArray[np.float64]


def tilts(counts: NDArray[np.int64], logits: NDArray[np.float64], lam_max: float) -> Tilts:
    """The tilts of the counts S_i = Σ_f Bin(counts[i, f], expit(logits[f])): λ_j = z_j/σ_i (σ_i
    the standard deviation of S_i, at least 1; z_j from 0 to ~10⁴ standard deviations), cut at
    ``lam_max`` (beyond it the caller's bound no longer improves)."""
    n = np.asarray(counts, dtype=np.float64)  # (R, F)
    th = np.asarray(logits, dtype=np.float64)  # (F,)
    p = special.expit(th)
    sd = np.sqrt(np.maximum(n @ (p * special.expit(-th)), 1.0))  # (R,)
    lam = np.minimum(_Z[None, :] / sd[:, None], lam_max)  # (R, J)
    mu = np.einsum("rf,rjf->rj", n, special.expit(lam[:, :, None] + th[None, None, :]))
    K = np.einsum("rf,rjf->rj", n, np.log1p(p[None, None, :] * np.expm1(lam)[:, :, None]))
    return Tilts(lam, mu * (1.0 - _REL), K + _REL * (np.abs(K) + 1.0))


def at(tl: Tilts, ys: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """For each row i and each y of its row of ``ys``: the least tilt λ_j with y ≤ μ_lo(λ_j)
    (+inf if none), so that t(y) ≤ e^λ by (1); and an upper bound on log Pr[S_i ≥ y] by (2) at
    the tilts just below and just above y's place among the tilted means (0 where y is at most the
    mean)."""
    J = tl.lam.shape[1]
    y = np.asarray(ys, dtype=np.float64)
    j = np.stack([np.searchsorted(tl.mu_lo[i], y[i], side="left") for i in range(y.shape[0])])
    above = np.take_along_axis(tl.lam, np.minimum(j, J - 1), axis=1)
    log_sf = np.zeros(y.shape)
    for jj in (np.minimum(j, J - 1), np.maximum(j - 1, 0)):
        lam = np.take_along_axis(tl.lam, jj, axis=1)
        K = np.take_along_axis(tl.log_mgf, jj, axis=1)
        log_sf = np.minimum(log_sf, K - lam * y + _REL * lam * np.abs(y))
    return np.where(j < J, above, np.inf), log_sf
