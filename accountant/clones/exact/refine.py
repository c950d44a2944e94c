"""The exact and the adaptive engines of the clone bound: a C-grid refined per chunk of orders
(FMT21 §3; bounds.md §8), bounding the sum of :mod:`accountant.clones.reference` from above.

*Monotone in c.* f_α(c) is non-increasing in c: (P_{c+1}, Q_{c+1}) is (P_c, Q_c) with an
independent fair coin added to the first coordinate (the same Markov kernel for P and Q), so
D_α cannot increase (data processing). For C in a bin [c_j, c_{j+1}) we use f_α(c_j) with the
bin's mass (:class:`accountant.clones.grid.cmass.CMass`); the lowest grid point is c = 0, where
f_α(0) is exactly the ε0-DP cap, and the last bin [c_last, n−1] uses f_α(c_last). Each chunk of
orders has its own C-grid, refined until log(1+U) − log(1+L) ≤ ρ_C(α)·log(1+U) for every order,
where U is the bound and L the same sum with f(c_{j+1}) in bin j (so the discretisation error of
ε(α) is at most that fraction); ρ_C(α) = 2e-3·max(1, α/64)^{1/4}.

Per point, f_α(c) − 1 is bounded from binned cells (:mod:`.binned`) or, for chunks whose log f
is large (≳ 6), by geometric bins without cells (:mod:`.geometric`).

*Exact* mode: every cell is its own bin, ρ_C = 1e-13 (the C-grid is refined to single integers
wherever the mass matters) and window tails are ≲ e^{−38}; all orders form one chunk (one window
covering every order's tilted peak, one C-grid refined for all of them). The result equals the
untruncated sum to ~1e-12. Used where it is cheap (:func:`exact_work`).
"""

from __future__ import annotations

import math

import numpy as np

from ..._numerics import logsumexp
from ..closed_form import lf_est, log_cap_f
from ..grid.cmass import CMass
from ..grid.windows import windows
from ..types import Array, Ctx
from .binned import eval_cells
from .geometric import eval_geo

RHO_C = 2.0e-3  # bound on the relative slack of the C-discretisation (adaptive mode)
RHO_C_EXACT = 1e-13
_CELL_BATCH = 2_000_000
_MAX_ROUNDS = 40
_CHUNK_SPAN = 4.0  # orders of one chunk span at most this factor
WHOLE_MAX = 1 << 17  # C-windows summed whole (the grids are asked for again and again)
LF_GEO = 6.0  # orders with estimated log f ≥ this (at the mean c) use the geometric-bin engine


def is_geo(ch: np.ndarray, ctx: Ctx) -> bool:
    """Whether a chunk goes to the geometric-bin path (log f ≳ 6 at the mean c for all its orders)."""
    return bool(np.all(lf_est(ch, max(ctx.c0, 0.0), ctx, log_cap_f(ch, ctx)) >= LF_GEO))


def eval_points(c: np.ndarray, chunks: list[np.ndarray], ctx: Ctx, exact: bool) -> np.ndarray:
    """Upper bounds on log(f_α(c) − 1) for every c and every order, shape (c.size, Σ chunk sizes);
    evaluated in batches of c whose windows hold ≲ 2e6 cells (memory)."""
    if c.size <= 1 or float(np.sum(c + 2.0)) <= _CELL_BATCH:  # (a window holds ≤ c + 2 cells)
        return _eval_batch(c, chunks, ctx, exact)
    alphas = np.concatenate(chunks)
    x_l, x_h, _ = windows(c, float(alphas.min()), float(alphas.max()), ctx, exact)
    cum = np.cumsum(x_h - x_l + 1)
    if cum[-1] > _CELL_BATCH:
        cut = int(np.clip(np.searchsorted(cum, _CELL_BATCH), 1, c.size - 1))
        return np.vstack([eval_points(c[:cut], chunks, ctx, exact), eval_points(c[cut:], chunks, ctx, exact)])
    return _eval_batch(c, chunks, ctx, exact)


def _eval_batch(c: Array, chunks: list[Array], ctx: Ctx, exact: bool) -> Array:
    """:func:`eval_points` for one batch of points: each chunk by the geometric bins or the cells."""
    out = np.empty((c.size, sum(ch.size for ch in chunks)))
    starts = np.concatenate([[0], np.cumsum([ch.size for ch in chunks])])
    geo = np.array([not exact and is_geo(ch, ctx) for ch in chunks], dtype=bool)
    for i in np.flatnonzero(geo):
        out[:, starts[i] : starts[i + 1]] = eval_geo(c, chunks[i], ctx)
    cell_idx = np.flatnonzero(~geo)
    if cell_idx.size:
        res = eval_cells(c, [chunks[i] for i in cell_idx], ctx, exact)
        cols = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in cell_idx])
        out[:, cols] = res
    return out


def rho_c(ch: np.ndarray) -> np.ndarray:
    """C-grid tolerance per order: ρ_C·(α/64)^{1/4} above α = 64 (large orders matter only for
    tiny δ and their tilted C-distribution is wide), bounding the relative error of ε(α)."""
    return RHO_C * np.maximum(1.0, ch / 64.0) ** 0.25


def initial_points(ctx: Ctx, exact: bool, rho: float = RHO_C) -> np.ndarray:
    """Starting C-grid: 0 (the exact cap point), a core around the mean, coarser tails."""
    big_n, c0, sd = ctx.N, ctx.c0, ctx.sig_c
    pts = {0}
    if exact:
        lo = max(0, int(math.floor(c0 - 8.0 * sd)) - 2)
        hi = min(big_n, int(math.ceil(c0 + 9.5 * sd)) + 2)
        pts.update(range(lo, hi + 1))
    else:
        step = max(1.0, rho * c0)
        z = np.concatenate(
            [
                np.arange(-2.5 * sd, 2.5 * sd + step, step),
                sd * np.array([-6, -5, -4, -3.25, 3.25, 4, 5, 6.5, 8, 9.5]),
            ]
        )
        pts.update(int(v) for v in np.clip(np.round(c0 + z), 0, big_n))
    d = 7.0 * sd + 1.0
    while c0 - d > 0:
        pts.add(int(c0 - d))
        d *= 1.6
    return np.array(sorted(pts), dtype=np.int64)


def chunk_orders(a: np.ndarray, ctx: Ctx) -> list[np.ndarray]:
    """Consecutive orders in chunks (one bin layout and one C-grid each), spanning a factor ≤ 4;
    the orders for the geometric-bin path apart, and for the cell path the tilted peaks
    (u* ≈ 2αs) of a chunk lie within 3 standard deviations of u at the mean c."""
    span = 3.0 * math.sqrt(max(ctx.c0, 1.0) + 1.0) / (2.0 * max(ctx.s, 1e-300))
    big = lf_est(a, max(ctx.c0, 0.0), ctx, log_cap_f(a, ctx)) >= LF_GEO
    chunks = []
    for part, lim in ((a[~big], span), (a[big], np.inf)):
        if part.size == 0:
            continue
        cur = [part[0]]
        for v in part[1:]:
            if v > _CHUNK_SPAN * cur[0] or v - cur[0] > lim or len(cur) >= 24:
                chunks.append(np.array(cur))
                cur = [v]
            else:
                cur.append(v)
        chunks.append(np.array(cur))
    return chunks


def exact_work(ctx: Ctx, alphas: np.ndarray) -> float:
    """Estimated (C-values × x-cells × orders) of an exact evaluation."""
    c0 = np.array([int(round(ctx.c0))])
    xl, xh, _ = windows(c0, float(alphas[0]), float(alphas[-1]), ctx, True)
    cells = float(xh[0] - xl[0] + 1)
    ncs = min(ctx.N + 1.0, 18.0 * ctx.sig_c + 20.0)
    return ncs * cells * alphas.size


def _new_points(
    p: Array,
    lfm1: Array,
    nxt: Array,
    lmass: Array,
    lf_tot: Array,
    l_up: Array,
    bad: Array,
    rho: float | Array,
    width: Array,
    ctx: Ctx,
) -> set[int]:
    """Where to cut the bins of one chunk whose orders ``bad`` miss the tolerance. G = allowed gap
    (nats) per order; λ_j = log f(c_j) − log f(c_{j+1}); w_j = share of bin j in the bound. Large
    gaps: k_j = ⌈λ_j/(G/2)⌉ pieces for bins with a non-negligible share; small gaps: k_j ∝ √(w_j·λ_j)
    (minimises Σ w_j·λ_j/k_j for a given number of new points)."""
    big_g = np.broadcast_to(rho * l_up, bad.shape)[bad]  # allowed gap, nats
    g_w = big_g / -np.expm1(-l_up[bad])  # the same in units of Σ_j w_j·λ_j (small gaps)
    lam = np.maximum(lfm1[:, bad] - nxt[:, bad], 0.0)
    lam = np.where(np.isfinite(lam), lam, 1e3)
    lam[width == 1] = 0.0
    wsh = np.exp(lmass[:, None] + lfm1[:, bad] - lf_tot[None, bad])
    nb = max(1, int((width > 1).sum()))
    rel = wsh * -np.expm1(-lam) > -np.expm1(-big_g)[None, :] / (4.0 * nb)
    k_log = np.where(
        rel & (big_g[None, :] >= 1.0), np.ceil(lam / (0.5 * np.maximum(big_g, 1.0))[None, :]), 1.0
    )
    sq = np.sqrt(wsh * np.minimum(lam, 1.0))
    k_lin = np.ceil(sq * sq.sum(axis=0)[None, :] / (0.5 * np.minimum(g_w, 1.0))[None, :])
    kj = np.nan_to_num(np.maximum(k_log, k_lin), nan=1.0, posinf=64.0).max(axis=1)
    kj = np.minimum(np.minimum(kj, 64.0), width).astype(np.int64)
    newp: set[int] = set()
    step = max(1, int(math.ceil(ctx.sig_c / 2.0)))
    for j in np.flatnonzero((kj > 1) & (width > 1)):
        if j == p.size - 1:  # the upper tail [c_last, N]: extend geometrically above c_last
            ext = int(p[j]) + step * (2 ** np.arange(min(int(kj[j]), 6)))
            newp.update(np.minimum(ext, ctx.N).tolist())
        else:
            newp.update((int(p[j]) + int(width[j]) * np.arange(1, kj[j]) // kj[j]).tolist())
    return newp


class _Refinement:
    """The C-grids of all chunks of one call, refined in rounds; points requested by several
    chunks in a round are evaluated together (the binomial cells are shared)."""

    def __init__(self, ctx: Ctx, alphas: np.ndarray, exact: bool):
        self.ctx, self.exact = ctx, exact
        # exact mode: one chunk (every cell is its own bin, so a shared window and C-grid cost
        # little extra, and the C-grid is refined for all orders at once)
        self.chunks = [alphas] if exact else chunk_orders(alphas, ctx)
        self.geo = [not exact and is_geo(ch, ctx) for ch in self.chunks]
        self.masses = CMass(ctx, whole_max=WHOLE_MAX)
        self.pts = [initial_points(ctx, exact, float(rho_c(ch)[0])) for ch in self.chunks]
        self.vals: list[dict[int, np.ndarray]] = [{} for _ in self.chunks]
        self.request: list[set[int]] = [set(p.tolist()) for p in self.pts]
        self.active = [True] * len(self.chunks)
        self.result: list[np.ndarray | None] = [None] * len(self.chunks)

    def _groups(self) -> dict[tuple[int, ...], list[int]]:
        """Requested points grouped by the set of chunks asking for them (the geometric-bin chunks
        each at its own points); when the points are few and small (per-call overhead dominates)
        all of them for all the cell chunks."""
        nch = len(self.chunks)
        by_sig: dict[tuple[int, ...], list[int]] = {
            (i,): list(self.request[i]) for i in range(nch) if self.geo[i] and self.request[i]
        }
        by_sig.update(self._cell_groups([i for i in range(nch) if not self.geo[i] and self.request[i]]))
        return by_sig

    def _cell_groups(self, cell: list[int]) -> dict[tuple[int, ...], list[int]]:
        """The requested points of the cell chunks ``cell``, grouped by the chunks asking for them."""
        allc: set[int] = set().union(*[self.request[i] for i in cell])
        if allc and sum(allc) + 2 * len(allc) <= 2.5e5:
            return {tuple(cell): list(allc)}
        by_sig: dict[tuple[int, ...], list[int]] = {}
        for cval in allc:
            sig = tuple(i for i in cell if cval in self.request[i])
            by_sig.setdefault(sig, []).append(cval)
        return by_sig

    def evaluate_requests(self) -> None:
        for sig, cl in self._groups().items():
            carr = np.array(sorted(cl), dtype=np.int64)
            res = eval_points(carr, [self.chunks[i] for i in sig], self.ctx, self.exact)
            col = 0
            for i in sig:
                k = self.chunks[i].size
                self.vals[i].update(zip(carr.tolist(), res[:, col : col + k]))
                col += k
        self.request = [set() for _ in self.chunks]

    def check(self, i: int) -> None:
        """Bound of chunk i on its current grid; new points where its bracket is too wide."""
        ctx, p = self.ctx, self.pts[i]
        lfm1 = np.stack([self.vals[i][int(v)] for v in p])  # (points, orders)
        lmass = self.masses.bins(p)
        lf_tot = logsumexp(lmass[:, None] + lfm1)
        self.result[i] = lf_tot
        # monotonicity: f(c_{j+1}) ≤ f(c) ≤ f(c_j) on bin j, so the exact value lies in [L, U]
        width = np.append(np.diff(p), ctx.N - p[-1] + 1)
        nxt = np.vstack([lfm1[1:], np.full((1, lfm1.shape[1]), -np.inf)])
        nxt[width == 1] = lfm1[width == 1]
        lo_tot = logsumexp(lmass[:, None] + nxt)
        rho = RHO_C_EXACT if self.exact else rho_c(self.chunks[i])
        l_up = np.logaddexp(0.0, lf_tot)
        gap = l_up - np.logaddexp(0.0, lo_tot)  # log(1+U) − log(1+L) ≥ the error of (α−1)ε
        bad = gap > rho * l_up
        newp = _new_points(p, lfm1, nxt, lmass, lf_tot, l_up, bad, rho, width, ctx) if bad.any() else set()
        newp -= set(self.vals[i])
        if not newp:
            self.active[i] = False
            return
        self.pts[i] = np.union1d(p, np.array(sorted(newp), dtype=np.int64))
        self.request[i] = newp


def refine_log_fm1(ctx: Ctx, alphas: np.ndarray, exact: bool) -> np.ndarray:
    """Upper bound on log(E_Q[R^α] − 1) for sorted unique orders (module docstring): the exact
    engine (``exact``) or the adaptive one."""
    ref = _Refinement(ctx, alphas, exact)
    for _ in range(_MAX_ROUNDS):
        ref.evaluate_requests()
        for i in range(len(ref.chunks)):
            if ref.active[i]:
                ref.check(i)
        if not any(ref.request):
            break
    return np.concatenate([r for r in ref.result if r is not None])
