"""Stage 2b of the PLD route: long compositions of one pair in blocks of T₁ rounds, each block
composed on a grid m times finer and put back on the shared grid once.

Why. Connect-the-dots (:mod:`.discretise`) costs each composed copy of a pair a little, second
order in Δ/scale, and the cost adds up over the T copies: the shuffle headline (n = 10⁶,
ε0 = 0.5, T = 10⁵) is 1.4e-4 relative above its converged ε at Δ = scale/25, and 4× less at
Δ/2 — but a finer shared grid costs the FFT of every answer (the warm one too) in proportion.
Composing T₁ = 64 rounds on Δ/m (m = 4) first and discretising the block once on Δ pays the
fine grid's cost (1/m² of it) on every round and the shared grid's (≈ 4× a round's, measured)
only once per block: about a fifth of the excess, for a block built once per pair and Δ (cached;
a warm answer — another count — reuses it, and its FFT is as long as before).

Construction, for a pair X with bounded losses and no mass at +∞, repeated T ≥ 2T₁ times:

1. f = X's pessimistic PLD on the fine grid jΔ_f, Δ_f = Δ/m (:mod:`.discretise`): f dominates X.
2. B = f^{∗T₁}, by :func:`.compose.tilted_compose` at λ = 0 (every numerical error bounded
   there: the window G̃ on losses ℓ_i = (a + i)Δ_f, its ℓ2 error err₂, the mass A outside it,
   the normaliser C = Π M^{T₁} and the composed mass at +∞). B dominates X^{⊗T₁} (composition of
   dominating pairs).
3. B's hockey-stick curve δ_B(ε) = Σ_ℓ (1 − e^{ε−ℓ})_+ B(ℓ) + B(∞), certified upward at every
   real ε as the smallest of:

   * *the window*, at ε = ℓ_k (and, δ_B being non-increasing, at every ε ∈ [ℓ_k, ℓ_{k+1})):
     C·[D_k + √(N−k−1)·err₂ + A] + B(∞), with D_k = Σ_{j≥1} (1 − r^j) G⁺_{k+j}, r = e^{−Δ_f},
     G⁺ = max(G̃, 0) ≥ G̃. (The weights w_i = 1 − e^{ℓ_k−ℓ_i} ∈ [0, 1]: Σ w G ≤ Σ w G̃ + ‖w‖₂ err₂ by
     Cauchy–Schwarz, and mass outside the window adds ≤ A.) D comes from two suffix recurrences
     with non-negative terms only, S_k = G⁺_k + r S_{k+1} and D_k = D_{k+1} + (1 − r)·S_{k+1}
     (D_k − D_{k+1} = (1 − r)Σ_{j≥1} r^{j−1} G⁺_{k+j}): each of the ≤ 3N roundings of a value is
     relative, so D̂_k(1 + 8Nu) ≥ D_k (u = 2⁻⁵³). A float ε within 1e-9 cells of ℓ_k is taken at
     ℓ_k, with |ε − ℓ_k|·(mass) added (|dδ/dε| ≤ P(L > ε) ≤ the total mass);
   * *Chernoff*, at every ε: (1 − e^{−t})_+ ≤ c(θ)e^{θt} with c(θ) = (θ/(1+θ))^θ/(1+θ), so
     δ_B(ε) − B(∞) ≤ c(θ)·e^{−θε}·M_f(θ)^{T₁}, M_f(θ) = Σ_ℓ f(ℓ)e^{θℓ} (:func:`.compose.log_mgf`,
     an upper bound), over 48 θ from 0.25 to 60 over the block's scale — the curve's tail, down to
     the 1e-30 the grid's top needs, where the window's absolute error floor (≈ 1e-15) would sit;
   * *below the window*: the chord in x = e^ε from (0, total mass) to (e^{ℓ_0}, the window's
     value at ℓ_0) (δ_B is convex in x).

4. B on the shared grid jΔ by connect-the-dots (:mod:`.discretise`): dominates B.
5. The composition (:mod:`.compose`) takes ⌊T/T₁⌋ blocks and T mod T₁ rounds of X's PLD on jΔ;
   the latter is read off X's fine curve at every m-th point (one evaluation of X's curve serves
   both grids; the values are the same certified upper values).

The window's absolute floor (FFT rounding, A) raises δ_B by ≲ 1e-13 where δ_B is tiny, i.e. moves
a mass of that size onto finite losses of the block (not to +∞): over T/T₁ blocks it changes the
composed δ by ≲ (T/T₁)·1e-13·δ, nothing. What would matter is mass at +∞, which step 3's Chernoff
keeps below 1e-30 at the grid's top.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

import numpy as np
from numpy.typing import NDArray

from ..dominating import HockeyStickPair, curve_pair
from ..store import BoundedCache, MiB
from .compose import log_mgf, tilted_compose
from .discretise import _MAX_POINTS, Discretised, U, cached, from_curve, grid_curve, remember

__all__ = ["BLOCK", "FINE", "block_pair", "blocked", "eligible"]

#: rounds per block, and how many times finer the block's own grid is
BLOCK = 64
FINE = 4
_THETAS = 48

_BLOCKS: BoundedCache[tuple[object, ...], Discretised] = BoundedCache(
    64, 32 * MiB, sizeof=lambda _k, v: 2 * int(v.probs.nbytes) + 256, name="pld_blocks"
)


def eligible(pair: HockeyStickPair, count: int) -> bool:
    """Whether ``count`` rounds of ``pair`` are composed in blocks (module docstring)."""
    return (
        count >= 2 * BLOCK
        and pair.product is None
        and pair.inf_mass == 0.0
        and pair.scale > 0.0
        and math.isfinite(pair.lo)
        and math.isfinite(pair.hi)
    )


def blocked(pair: HockeyStickPair, count: int, step: float) -> list[tuple[Discretised, int]]:
    """``count`` rounds of ``pair`` on the grid jΔ: ⌊count/T₁⌋ blocks and the remaining rounds
    (module docstring); falls back to ``count`` rounds when the fine grid would be too long."""
    fine = step / FINE
    key: tuple[Hashable, ...] = ("block", *pair.key, float(step), BLOCK, FINE)
    rounds_key = ("rounds", *key[1:])  # not the plain key: answers must not depend on the cache
    rounds = cached(rounds_key)
    block = _BLOCKS.get(key)
    if block is None or rounds is None:
        j_lo, deltas = grid_curve(pair, fine)
        if deltas.size > _MAX_POINTS:
            return []
        if rounds is None:
            first = -(-j_lo // FINE) * FINE  # the first fine index on the shared grid
            rounds = remember(from_curve(rounds_key, step, first // FINE, deltas[first - j_lo :: FINE]))
        if block is None:
            f = from_curve((*pair.key, float(fine)), fine, j_lo, deltas)
            b_lo, b_deltas = grid_curve(block_pair(pair, f, key), step)
            block = from_curve(key, step, b_lo, b_deltas)
            _BLOCKS.put(key, block)
    q, r = divmod(count, BLOCK)
    return [(block, q)] + ([(rounds, r)] if r else [])


def block_pair(pair: HockeyStickPair, f: Discretised, key: tuple[Hashable, ...]) -> HockeyStickPair:
    """The block B = f^{∗T₁} as a pair with its certified curve (module docstring, steps 2–3);
    ``f`` is ``pair``'s PLD on the fine grid."""
    comp = tilted_compose([(f, BLOCK)], 0.0)
    g = np.maximum(comp.G, 0.0)
    n = g.size
    fine = f.step
    r = math.exp(-fine)
    from scipy.signal import lfilter

    s = lfilter([1.0], [1.0, -r], g[::-1])[::-1]  # S_k = G⁺_k + r·S_{k+1}
    inc = -math.expm1(-fine) * s  # (1 − r)·S_k
    d = np.zeros(n)
    d[:-1] = np.cumsum(inc[:0:-1])[::-1]  # D_k = Σ_{i>k} (1 − r) S_i
    scale_c = math.exp(comp.log_scale) * (1.0 + 4 * U)
    tail = np.sqrt(np.maximum(n - 1.0 - np.arange(n), 0.0)) * comp.err2 + comp.alias
    window = scale_c * (d * (1.0 + 8 * n * U) + tail) * (1.0 + 4 * U) + comp.inf
    total = math.exp(BLOCK * math.log(f.total)) * (1.0 + 4 * U)
    sd = math.sqrt(BLOCK) * pair.scale
    thetas = np.geomspace(0.25 / sd, 60.0 / sd, _THETAS)
    log_m = np.array([BLOCK * log_mgf(f, float(t)) for t in thetas])
    log_c = thetas * np.log(thetas / (1.0 + thetas)) - np.log1p(thetas)
    a = comp.a

    def curve(eps: NDArray[np.float64]) -> NDArray[np.float64]:
        x = eps / fine - a  # the window index of ε, in fine cells
        near = np.rint(x)
        k = np.where(np.abs(x - near) <= 1e-9, near, np.floor(x)).astype(np.int64)
        inside = (k >= 0) & (k < n - 1)
        kk = np.clip(k, 0, n - 1)
        gap = np.abs(eps - (a + kk) * fine) * (1.0 + 1e-9) + 4 * U * (np.abs(eps) + 1.0)
        win = np.where(inside, window[kk] + np.where(k == near, gap * total, 0.0), np.inf)
        below = k < 0  # the chord in x from (0, total) to (e^{ℓ_0}, window[0])
        theta = np.clip(np.exp(np.minimum(eps - a * fine, 0.0)), 0.0, 1.0)
        win = np.where(below, (1.0 - theta) * total + theta * window[0] * (1.0 + 4 * U), win)
        with np.errstate(over="ignore"):
            cher = np.exp(np.min(log_c[:, None] + log_m[:, None] - thetas[:, None] * eps[None, :], axis=0))
        return np.asarray(
            np.minimum(np.minimum(win, cher * (1.0 + 8 * U) + comp.inf), total), dtype=np.float64
        )

    lo, hi = (f.start * fine) * BLOCK, (f.start + f.probs.size - 1) * fine * BLOCK
    center = BLOCK * pair.center
    return curve_pair(curve, lo, hi, center, sd, key, inf_mass=comp.inf)
