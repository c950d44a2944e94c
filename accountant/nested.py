"""RDP of one sampled round whose users run a composition of mechanisms (a nested sampled event).

Setting: a population of n users; each round k of them are sampled uniformly WITHOUT replacement
(γ = k/n), and the round runs mechanisms M_1, …, M_m on the k sampled users' data (e.g. the m
messages of a multi-message report, each through its own shuffler). Neighbouring populations
differ by replacing one user's whole data. All the round's mechanisms share ONE sample, so the
round is one subsampled mechanism M = (M_1, …, M_m) applied to the sample; amplification by
sampling applies once, to the composed inner curve. (Adding separately amplified curves of the
M_i is NOT valid: already for pure DP, shared sampling gives log(1 + γ(e^{2ε} − 1)) >
2·log(1 + γ(e^ε − 1)).)

Every valid upper bound below is computed; the reported curve is their order-wise minimum,
tightened by the lower convex hull of (α−1)·ε(α) (valid since the true (α−1)·D_α is convex):

1. **WBK19 Theorem 9** (Wang, Balle, Kasiviswanathan, AISTATS 2019) over the composed inner curve
   ε_M(j) = Σ_i c_i·ε_i(j) (RDP composition, thesis Lemma 2.1.4) with ε(∞) = Σ_i c_i·ε_i(∞), the
   sum of the inner pure-DP levels (basic composition of pure DP; +∞ when an inner mechanism is
   not pure). Integer orders; extended to real orders by Remark 5.3.2. The inner curve is
   evaluated on a sparse set of integers and extended to every integer by linear interpolation
   of (j−1)·ε(j) — an upper bound because (j−1)·D_j is convex and WBK19's bound is increasing in
   every ε(j).
2. **Pure-DP cap**: M is ε(∞)-DP, so the sampled round is ε'-DP with ε' = log(1 + γ(e^{ε(∞)} − 1))
   (sampling without replacement under replace-one, thesis Lemma 2.1.1) and ĉ_{ε'} caps its RDP.
3. **No amplification**: D_α of the sampled round ≤ the inner curve ε_M(α). The output
   distribution on a population is the mixture over sample sets S of M(D_S), with the same
   weights for both neighbours; sets without the changed user give identical components, the
   others are neighbouring k-user datasets; by joint quasi-convexity of D_α the mixture's
   divergence is at most the largest component's.
4. Candidates the caller adds (for a round of shuffles: the single-message bound at the whole
   report's ε0; for a round of Gaussians: WBK19 Theorem 27 at their composed noise multiplier,
   :mod:`accountant.sampled_gaussian`; see :mod:`accountant.events.sampled`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._numerics import convex_tighten, interpolate_integer_bound, pure_dp_rdp, round_up
from .orders import DEFAULT_ORDERS
from .wbk19 import wbk19_inner_extent, wbk19_rdp

#: the inner curve is evaluated at every integer up to here and on the (rounded) default grid
#: above, interpolated in between by convexity
WBK_DENSE = 16

#: an RDP curve known through its values at any array of orders
InnerCurve = Callable[[NDArray[np.float64]], ArrayLike]


@dataclass
class CurveDetail:
    """An upper curve with, per order, the name of the bound that gave it, and notes."""

    orders: NDArray[np.float64]
    rdp: NDArray[np.float64]
    sources: list[str]
    notes: list[str] = field(default_factory=list)


def wbk_inner_orders(jmax: float) -> NDArray[np.float64]:
    """Orders at which WBK19's inner curve is evaluated: every integer up to :data:`WBK_DENSE`,
    the rounded default grid above, and the largest integer needed."""
    grid = np.round(DEFAULT_ORDERS[DEFAULT_ORDERS >= 2])
    sparse = np.unique(np.concatenate([np.arange(2.0, WBK_DENSE + 1.0), grid, [jmax]]))
    return sparse[sparse <= jmax]


def amplified_epsilon(gamma: float, eps_inf: float) -> float:
    """Thesis Lemma 2.1.1: an ε-DP mechanism on a sample of k of n drawn without replacement is
    log(1 + γ(e^ε − 1))-DP under replace-one neighbours (+∞ stays +∞)."""
    if not np.isfinite(eps_inf):
        return float("inf")
    return float(np.log1p(gamma * np.expm1(eps_inf)))


def amplified_cap(gamma: float, eps_inf: float, orders: ArrayLike) -> NDArray[np.float64]:
    """ĉ_{ε'}(α) with ε' = :func:`amplified_epsilon` (any real α > 1; +∞ when ε(∞) is)."""
    eps = amplified_epsilon(gamma, eps_inf)
    if not np.isfinite(eps):
        return np.full(np.shape(orders), np.inf)
    return round_up(pure_dp_rdp(eps, orders))


def wbk19_over(gamma: float, inner: InnerCurve, eps_inf: float, ints: ArrayLike) -> NDArray[np.float64]:
    """WBK19 Thm 9 at integer orders ``ints`` for an inner curve known through ``inner(orders)``.

    ``inner`` is called once, on :func:`wbk_inner_orders`; every other integer gets the chord of
    (j−1)·ε(j) between its known neighbours, and the pure-DP curve ĉ_{ε(∞)} where smaller — up
    to the last j the sum reads (:func:`accountant.wbk19.wbk19_inner_extent`), +inf above.
    """
    ints_f = np.asarray(ints, dtype=np.float64)
    if ints_f.size == 0:
        return np.zeros(0)

    def every_integer(js_all: NDArray[np.float64]) -> NDArray[np.float64]:
        known = wbk_inner_orders(float(js_all.max()))
        vals = np.asarray(inner(known), dtype=np.float64)
        # the sum stops early at small γ: the orders it does not read are left at +inf
        need = js_all <= wbk19_inner_extent(gamma, eps_inf, float(js_all.max()))
        js = js_all[need]
        with np.errstate(invalid="ignore"):
            lin = np.interp(js, known, (known - 1.0) * vals) / (js - 1.0)
        lin = np.where(np.isnan(lin), np.inf, lin)
        if np.isfinite(eps_inf):
            lin = np.minimum(lin, round_up(pure_dp_rdp(eps_inf, js)))
        out = np.full(js_all.shape, np.inf)
        out[need] = lin
        return out

    return wbk19_rdp(gamma, every_integer, eps_inf, ints_f)


def sampled_round_detail(
    n: int,
    k: int,
    inner: InnerCurve,
    eps_inf: float,
    orders: ArrayLike,
    extra: Sequence[tuple[str, ArrayLike]] = (),
    notes: Sequence[str] = (),
    wbk19: bool = True,
) -> CurveDetail:
    """The order-wise minimum of the bounds 1–3 of the module docstring and the ``extra``
    candidates (``(label, values on orders)``), tightened by convexity, with per-order sources.

    ``inner(orders)`` is the composed inner curve (one round on k users) at any orders; it is
    called once, on the union of ``orders`` and the orders WBK19 needs. ``wbk19=False`` leaves
    bound 1 out (+inf), for a caller whose extra candidate is never above it at any order (WBK19
    Theorem 27 for a round of Gaussians: term by term at most Theorem 9's over the same curve).
    """
    o = np.asarray(orders, dtype=np.float64)
    gamma = k / n
    union = np.unique(np.concatenate([o, wbk_inner_orders(float(np.ceil(o.max())))]))
    table = dict(zip(union.tolist(), np.asarray(inner(union), dtype=np.float64).tolist()))

    def known(os_: ArrayLike) -> NDArray[np.float64]:
        return np.array([table[v] for v in np.asarray(os_, dtype=np.float64).tolist()])

    def int_min(ints: NDArray[np.int64]) -> NDArray[np.float64]:
        return np.minimum(wbk19_over(gamma, known, eps_inf, ints), amplified_cap(gamma, eps_inf, ints))

    cands: list[tuple[str, ArrayLike]] = [
        ("wbk19", round_up(interpolate_integer_bound(o, int_min)) if wbk19 else np.full(o.shape, np.inf)),
        ("cap", amplified_cap(gamma, eps_inf, o)),
        ("inner (no amplification)", known(o)),
        *extra,
    ]
    stack = np.stack([np.asarray(v, dtype=np.float64) for _, v in cands])
    arg = np.argmin(stack, axis=0)
    vals = stack[arg, np.arange(o.size)]
    labels = [cands[i][0] for i in arg.tolist()]
    labels = [
        lab if not (lab == "wbk19" and a != np.floor(a)) else "wbk19 (interpolated)"
        for lab, a in zip(labels, o.tolist())
    ]
    tight = convex_tighten(o, vals)
    sources = [s if t >= v else "convex hull" for s, t, v in zip(labels, tight, vals)]
    return CurveDetail(o, tight, sources, list(notes))
