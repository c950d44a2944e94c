"""RDP of subsampling without replacement: Wang–Balle–Kasiviswanathan, Theorem 9 (bounds.md §8).

Source
------
Y.-X. Wang, B. Balle, S. Kasiviswanathan, "Subsampled Rényi Differential Privacy and Analytical
Moments Accountant", AISTATS 2019 (arXiv:1808.00087), Theorem 9. Setting: a dataset of n records;
the subsampled mechanism draws m = γ·n records uniformly *without replacement* and runs M on
them; neighbouring datasets differ by *replacing* one record. If M is (j, ε(j))-RDP at every
integer j ≥ 2 and ε(∞)-DP, then for every integer α ≥ 2

    ε'(α) ≤ 1/(α−1) · log( 1 + γ²·C(α,2)·min{ 4(e^{ε(2)} − 1), e^{ε(2)}·min{2, (e^{ε(∞)} − 1)²} }
                             + Σ_{j=3..α} γ^j·C(α,j)·e^{(j−1)·ε(j)}·min{2, (e^{ε(∞)} − 1)^j} ).

What was checked: the formula above (bounds.md §8) term by term against the
authors' reference implementation (autodp, ``rdp_acct.anaRDPacct.compose_subsampled_mechanism``,
"Theorem 9 of arXiv:1808.00087"): second moment
``2 log γ + log C(α,2) + min(log 4 + ε(2) + log(1 − e^{−ε(2)}), ε(2) + min(log 2, 2(ε∞ + log(1 − e^{−ε∞}))))``
and j-th moment ``min(j(ε∞ + log(1 − e^{−ε∞})), log 2) + (j−1)·ε(j) + j log γ + log C(α,j)``,
summed with 1 inside the log — identical. autodp additionally takes the minimum with the inner
curve (α−1)ε(α) and with the amplified pure-DP level; those are separate valid bounds the caller
may combine, not part of this function. Only integer α ≥ 2 are covered; the caller extends to real orders.

Numerics: all terms in log space (gammaln for C(α,j), tabulated at integers, log(e^x − 1) via expm1/log1p), the ragged
sums over j for many α at once as segmented log-sum-exps over concatenated segments, log1p for the final log; results are rounded up by a relative 1e-12. The sum over j
stops at J = ⌈2eλ⌉ + 60 (λ = γ·α·e^{ε∞}); the rest is replaced by a geometric bound of its terms
(ε(j) ≤ ε∞, ratio < ½ beyond J), so large orders at small γ cost O(λ) terms, not O(α).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._lazy import gammaln
from ._numerics import int_tables, log_expm1, segment_logsumexp

__all__ = ["wbk19_inner_extent", "wbk19_rdp"]

_SEGMENT_BUDGET = 1 << 22  # elements of the ragged (α, j) arrays processed at once


def _last_terms(gamma: float, eps_inf: float, uniq: NDArray[np.float64]) -> NDArray[np.float64]:
    """The last j of the sum at each order α: min(α, J), J = ⌈2eλ⌉ + 60, λ = γ·α·e^{ε∞}."""
    with np.errstate(over="ignore"):
        lam = gamma * uniq * np.exp(min(eps_inf, 700.0))
    jcut = np.where(np.isfinite(lam) & (eps_inf < 700.0), np.ceil(2.0 * np.e * lam) + 60.0, np.inf)
    out: NDArray[np.float64] = np.minimum(uniq, jcut)
    return out


def _factor(
    j: NDArray[np.float64], ej: NDArray[np.float64], l_inf: float, log_terms: NDArray[np.float64] | None
) -> NDArray[np.float64]:
    """log of the j-th term's factor: (j−1)·ε(j) + min(log 2, j·log(e^{ε∞} − 1)), or the smaller
    ``log_terms[j − 3]`` where given (:func:`wbk19_rdp`)."""
    out: NDArray[np.float64] = (j - 1.0) * ej + np.minimum(float(np.log(2.0)), j * l_inf)
    if log_terms is not None and log_terms.size:
        ji = j.astype(np.int64) - 3
        has = ji < log_terms.size
        out = np.where(has, np.minimum(out, log_terms[np.minimum(ji, log_terms.size - 1)]), out)
    return out


def wbk19_inner_extent(gamma: float, eps_inf: float, max_order: float) -> int:
    """The largest j at which :func:`wbk19_rdp` reads the inner curve ε(j) for orders up to
    ``max_order`` (at least 2; the last j of the sum grows with α): its inner curve may be left
    unevaluated (any value, e.g. +inf) above it."""
    return max(2, int(_last_terms(gamma, eps_inf, np.array([float(max_order)]))[0]))


def wbk19_rdp(
    gamma: float,
    inner_int: Callable[[NDArray[np.float64]], ArrayLike],
    eps_inf: float,
    orders: ArrayLike,
    log_terms: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """WBK19 Theorem 9: RDP of an inner mechanism under subsampling without replacement.

    Args:
        gamma: sampling fraction γ = m/n in [0, 1].
        inner_int: the inner mechanism's RDP at integer orders; called once with
            ``np.arange(2, max_alpha + 1)`` (float array), must return ε(j) ≥ 0 of the same shape
            (+inf allowed); only j up to :func:`wbk19_inner_extent` are read.
        eps_inf: the inner mechanism's pure-DP level ε(∞) ≥ 0 (+inf allowed).
        orders: integer orders α ≥ 2 (validated by the caller), any shape.
        log_terms: optional, for j = 3, 4, …, 2 + len: another valid upper bound, in log, of the
            j-th term's factor e^{(j−1)ε(j)}·min{2, (e^{ε∞} − 1)^j}; the smaller of the two is used
            (WBK19 Theorem 27 for the Gaussian mechanism: :mod:`accountant.sampled_gaussian`).

    Returns:
        float64 array of ε'(α), the same shape as ``orders`` (0 when γ = 0 or ε(∞) = 0).
    """
    a = np.asarray(orders, dtype=np.float64)
    if a.size == 0:
        return np.zeros(a.shape)
    if gamma <= 0.0 or eps_inf == 0.0:
        return np.zeros(a.shape)
    uniq, inv = np.unique(a.ravel(), return_inverse=True)
    amax = int(uniq[-1])
    js = np.arange(2, amax + 1, dtype=np.float64)
    eps_j = np.asarray(inner_int(js), dtype=np.float64).reshape(js.shape)
    log_g = float(np.log(gamma))
    l_inf = float(log_expm1(np.array(eps_inf)))  # log(e^{ε∞} − 1)
    log2 = float(np.log(2.0))

    # j = 2: γ²·C(α,2)·min{4(e^{ε(2)} − 1), e^{ε(2)}·min{2, (e^{ε∞} − 1)²}}
    e2 = eps_j[0]
    with np.errstate(invalid="ignore"):
        m2 = min(float(np.log(4.0) + log_expm1(np.array(e2))), float(e2 + min(log2, 2.0 * l_inf)))
    lc2 = np.log(uniq * (uniq - 1.0) / 2.0)
    log_sum = 2.0 * log_g + lc2 + m2  # log of the j = 2 term, per α

    # j = 3..J(α): γ^j·C(α,j)·e^{(j−1)ε(j)}·min{2, (e^{ε∞} − 1)^j}, ragged over α. Terms with
    # j > J are bounded, with ε(j) ≤ ε∞, by u_j = 2·γ^j·C(α,j)·e^{(j−1)ε∞}, whose ratio
    # u_{j+1}/u_j = γ·e^{ε∞}·(α−j)/(j+1) ≤ λ/(j+1), λ = γ·α·e^{ε∞}: with J = ⌈2eλ⌉ + 60 it is < ½
    # beyond J, so the tail is at most 2·u_{J+1} (added below) — and far below the sum itself.
    lg_a = gammaln(uniq + 1.0)
    jmax = _last_terms(gamma, eps_inf, uniq)
    nterm = np.maximum(jmax.astype(np.int64) - 2, 0)
    cut = jmax < uniq
    if cut.any():
        jt = jmax[cut] + 1.0
        ac = uniq[cut]
        lu = (
            np.log(2.0)
            + jt * log_g
            + lg_a[cut]
            - gammaln(jt + 1.0)
            - gammaln(ac - jt + 1.0)
            + (jt - 1.0) * eps_inf
            + log2
        )
        log_sum[cut] = np.logaddexp(log_sum[cut], lu)
    lfact = int_tables(amax)[0]
    uniq_i = uniq.astype(np.int64)
    start = 0
    while start < uniq.size:
        csum = np.cumsum(nterm[start:])
        stop = start + max(1, int(np.searchsorted(csum, _SEGMENT_BUDGET, side="right")))
        sizes = nterm[start:stop]
        tot = int(sizes.sum())
        if tot:
            seg = np.repeat(np.arange(start, stop), sizes)
            first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            ji = np.arange(tot) - np.repeat(first, sizes) + 3
            j = ji.astype(float)
            ej = eps_j[ji - 2]
            with np.errstate(invalid="ignore"):
                lt = (
                    j * log_g
                    + lg_a[seg]
                    - lfact[ji]  # log j! and log (α−j)!: the very values of gammaln, tabulated
                    - lfact[uniq_i[seg] - ji]
                    + _factor(j, ej, l_inf, log_terms)
                )
            lt = np.where(np.isnan(lt), np.inf, lt)  # inf·0 cannot occur for valid inputs; be safe
            has = sizes > 0
            st = first[has]
            lsj = segment_logsumexp(lt, st)
            idx = np.arange(start, stop)[has]
            log_sum[idx] = np.logaddexp(log_sum[idx], lsj)
        start = stop

    out = np.logaddexp(0.0, log_sum) / (uniq - 1.0)  # log(1 + Σ) / (α − 1)
    out = np.where(np.isnan(out), np.inf, out) * (1.0 + 1e-12)
    return out[inv].reshape(a.shape)
