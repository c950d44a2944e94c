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
   * *below the window*: δ_B(ε) ≤ δ_B(ℓ_0) + M_Q·(e^{ℓ_0} − e^ε), since |dδ_B/dx| (x = e^ε) is
     Σ_{ℓ>ε} e^{−ℓ}B(ℓ) ≤ M_Q = M_f(−1)^{T₁}.

   The window is the smaller of two such certified windows: the FFT untilted (relative accuracy
   in the bulk and below) and tilted by λ = 2/(the block's scale) (relative accuracy in the upper
   tail, which a large tilt of the final composition weighs heavily). With the tilt λ the sum is
   C e^{−λℓ_k}·Σ_{j≥1}(r1^j − r2^j)G_{k+j}, r1 = e^{−λΔ_f}, r2 = e^{−(λ+1)Δ_f}, by the recurrences
   S_k = G⁺_k + r2 S_{k+1}, D_k = r1 D_{k+1} + (r1 − r2)S_{k+1}; the FFT error is then weighed by
   ‖w‖₂ ≤ (Σ_j r1^{2j})^{½} and the outside mass by c(λ).

4. B on the shared grid jΔ by connect-the-dots (:mod:`.discretise`): dominates B.
5. The composition (:mod:`.compose`) takes ⌊T/T₁⌋ blocks and T mod T₁ rounds of X's PLD on jΔ;
   the latter is read off X's fine curve at every m-th point (one evaluation of X's curve serves
   both grids; the values are the same certified upper values) — or, next to fewer than 16
   blocks, those rounds as one more block of T mod T₁ rounds.

Blocks are used only where the finer grid can gain (:func:`.discretise.finer_pays`) and for a
pair whose PLD fills the fine grid (:func:`_smooth`; not a few atoms).

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
from .compose import Composed, log_mgf, tilted_compose
from .discretise import (
    _MAX_POINTS,
    FINE,
    SHORT_ROUNDS,
    Discretised,
    U,
    cached,
    finer_pays,
    from_curve,
    grid_curve,
    remember,
)
from .tail import suffix, weight_max

__all__ = ["BLOCK", "FINE", "block_pair", "blocked", "eligible"]

#: rounds per block (the block's own grid is FINE times finer; counts from SHORT_ROUNDS = 2·BLOCK)
BLOCK = SHORT_ROUNDS // 2
_THETAS = 48
#: below this many blocks the remainder rounds are one more block (composed on the fine grid)
_FINE_REMAINDER_BELOW = 16
#: the block's second FFT is tilted by λ = this / (the block's loss scale): its upper tail, which a
#: large tilt of the final composition weights heavily, then carries relative (not absolute) errors
_TILT_SDS = 2.0

_BLOCKS: BoundedCache[tuple[object, ...], Discretised] = BoundedCache(
    64, 32 * MiB, sizeof=lambda _k, v: 2 * int(v.probs.nbytes) + 256, name="pld_blocks"
)


def eligible(pair: HockeyStickPair, count: int, step: float) -> bool:
    """Whether ``count`` rounds of ``pair`` are composed in blocks on the grid ``step`` (module
    docstring; :func:`.discretise.finer_pays` says when the finer grid can gain)."""
    return (
        count >= SHORT_ROUNDS
        and finer_pays(pair.scale, count, step / FINE)  # (a positive scale included)
        and pair.product is None
        and pair.inf_mass == 0.0
        and math.isfinite(pair.lo)
        and math.isfinite(pair.hi)
    )


def blocked(pair: HockeyStickPair, count: int, step: float) -> list[tuple[Discretised, int]]:
    """``count`` rounds of ``pair`` on the grid jΔ: ⌊count/T₁⌋ blocks and the remaining rounds
    (module docstring); [] when the fine grid would be too long (the caller composes rounds)."""
    got = _fine_and_rounds(pair, step)
    if got is None:
        return []
    f, rounds = got
    if not _smooth(f, pair):
        return []
    q, r = divmod(count, BLOCK)
    parts = [(_block(pair, f, step, BLOCK), q)]
    if r and q < _FINE_REMAINDER_BELOW:  # the remainder's share of the excess is large: one block
        parts.append((_block(pair, f, step, r), 1))
    elif r:
        parts.append((rounds, r))
    return parts


def _smooth(f: Discretised, pair: HockeyStickPair) -> bool:
    """Whether the pair's PLD fills the fine grid (≥ half the cells within 3 scales of its centre
    carry mass): a few atoms (randomized response, a clone pair of a handful of users) gain nothing
    from the finer grid, and the blocks' own error bounds would cost them a little."""
    lo = max(0, math.floor((pair.center - 3.0 * pair.scale) / f.step) - f.start)
    hi = min(f.probs.size, math.ceil((pair.center + 3.0 * pair.scale) / f.step) - f.start + 1)
    cells = f.probs[lo:hi]
    return cells.size > 0 and int(np.count_nonzero(cells > 1e-6 * float(cells.max()))) >= 0.5 * cells.size


def _fine_and_rounds(pair: HockeyStickPair, step: float) -> tuple[Discretised, Discretised] | None:
    """``pair``'s PLD on the fine grid, and on jΔ read off the same curve (cached)."""
    fine = step / FINE
    f_key = ("fine", *pair.key, float(fine))  # evaluated at aligned points: not discretise_pair's
    r_key = (
        "rounds",
        *pair.key,
        float(step),
        FINE,
    )  # not the plain key: answers must not depend on the cache
    f, rounds = cached(f_key), cached(r_key)
    if f is None or rounds is None:
        j_lo, deltas = grid_curve(pair, fine, aligned=True)
        if deltas.size > _MAX_POINTS:
            return None
        first = -(-j_lo // FINE) * FINE  # the first fine index on the shared grid
        coarse = deltas[first - j_lo :: FINE]
        j_top = j_lo + deltas.size - 1  # the fine grid's top; the shared grid's last point reaches it
        if (j_top - first) % FINE:
            last = -(-j_top // FINE)
            coarse = np.append(coarse, min(float(deltas[-1]), float(pair.delta(last * step)[0])))
        f = remember(from_curve(f_key, fine, j_lo, deltas))
        rounds = remember(from_curve(r_key, step, first // FINE, coarse))
    return f, rounds


def _block(pair: HockeyStickPair, f: Discretised, step: float, t: int) -> Discretised:
    """``t`` rounds of ``pair`` composed on the fine grid and discretised on jΔ (cached)."""
    key: tuple[Hashable, ...] = ("block", *pair.key, float(step), t, FINE)
    got = _BLOCKS.get(key)
    if got is None:
        b_lo, b_deltas = grid_curve(block_pair(pair, f, key, t), step)
        got = from_curve(key, step, b_lo, b_deltas)
        _BLOCKS.put(key, got)
    return got


def _window_values(comp: Composed, fine: float) -> NDArray[np.float64]:
    """Certified δ_B at every loss ℓ_k of the window (module docstring, step 3): with the tilt λ,
    r1 = e^{−λΔ_f}, r2 = e^{−(λ+1)Δ_f}, δ_fin(ℓ_k) = C e^{−λℓ_k}·Σ_{j≥1} (r1^j − r2^j) G_{k+j}, the sum
    D_k by the non-negative recurrences S_k = G⁺_k + r2·S_{k+1}, D_k = r1·D_{k+1} + (r1 − r2)·S_{k+1}."""
    lam = comp.lam
    g = np.maximum(comp.G, 0.0)
    n = g.size
    r1, r2 = math.exp(-lam * fine), math.exp(-(lam + 1.0) * fine)
    s2, _ = suffix(g, r2, 0.0)  # S_k = G⁺_k + r2·S_{k+1}
    x = np.zeros(n)
    x[:-1] = r1 * -math.expm1(-fine) * s2[1:]  # (r1 − r2)·S_{k+1}
    d, _ = suffix(x, r1, 0.0)  # D_k = x_k + r1·D_{k+1}
    w_inf = 1.0 / math.sqrt(-math.expm1(-2.0 * lam * fine)) if lam > 0 else math.inf  # (Σ_j r1^{2j})^{½}
    w2 = np.minimum(np.sqrt(np.maximum(n - 1.0 - np.arange(n), 0.0)), w_inf)  # ≥ ‖w‖₂ (w ≤ r1^j ≤ 1)
    c_lam = weight_max(lam)
    losses = comp.losses
    expo = comp.log_scale - lam * losses
    grow = 1.0 + 4 * U * (np.abs(lam * losses) + abs(comp.log_scale) + 2.0)
    err = w2 * comp.err2 + c_lam * comp.alias
    return np.asarray(np.exp(expo) * grow * (d * (1.0 + 8 * n * U) + err) + comp.inf, dtype=np.float64)


def block_pair(
    pair: HockeyStickPair, f: Discretised, key: tuple[Hashable, ...], rounds: int | None = None
) -> HockeyStickPair:
    """The block B = f^{∗t} (t = ``rounds``, default T₁) as a pair with its certified curve (module
    docstring, steps 2–3); ``f`` is ``pair``'s PLD on the fine grid."""
    t = BLOCK if rounds is None else rounds
    sd = math.sqrt(t) * pair.scale
    # two windows: untilted (relative accuracy in the bulk and below) and tilted by λ = 2/scale
    # (relative accuracy in the upper tail, which a large tilt of the final composition weights);
    # both certified, so their minimum is, on the losses the two windows share
    comp = tilted_compose([(f, t)], 0.0)
    window = _window_values(comp, f.step)
    tilted = tilted_compose([(f, t)], _TILT_SDS / sd)
    k0 = tilted.a - comp.a
    lo_k, hi_k = max(k0, 0), min(k0 + tilted.G.size, window.size)
    if lo_k < hi_k:
        window[lo_k:hi_k] = np.minimum(
            window[lo_k:hi_k], _window_values(tilted, f.step)[lo_k - k0 : hi_k - k0]
        )
    total = math.exp(t * math.log(f.total)) * (1.0 + 4 * U)
    q_mass = math.exp(t * log_mgf(f, -1.0)) * (1.0 + 4 * U)  # Σ_ℓ e^{−ℓ}B(ℓ), B's Q-mass (upper)
    thetas = np.geomspace(0.25 / sd, 60.0 / sd, _THETAS)
    log_m = np.array([t * log_mgf(f, float(th)) for th in thetas])
    log_c = thetas * np.log(thetas / (1.0 + thetas)) - np.log1p(thetas)
    a, n, fine = comp.a, window.size, f.step

    def curve(eps: NDArray[np.float64]) -> NDArray[np.float64]:
        x = eps / fine - a  # the window index of ε, in fine cells
        near = np.rint(x)
        k = np.where(np.abs(x - near) <= 1e-9, near, np.floor(x)).astype(np.int64)
        inside = (k >= 0) & (k < n - 1)
        kk = np.clip(k, 0, n - 1)
        gap = np.abs(eps - (a + kk) * fine) * (1.0 + 1e-9) + 4 * U * (np.abs(eps) + 1.0)
        win = np.where(inside, window[kk] + np.where(k == near, gap * total, 0.0), np.inf)
        below = k < 0  # δ(ε) ≤ δ(ℓ_0) + M_Q·(e^{ℓ_0} − e^ε): |dδ/dx| ≤ Σ_ℓ e^{−ℓ}B(ℓ) = M_Q
        rise = q_mass * -np.expm1(np.minimum(eps - a * fine, 0.0)) * math.exp(a * fine)
        win = np.where(below, (window[0] + rise) * (1.0 + 8 * U), win)
        with np.errstate(over="ignore"):
            cher = np.exp(np.min(log_c[:, None] + log_m[:, None] - thetas[:, None] * eps[None, :], axis=0))
        return np.asarray(
            np.minimum(np.minimum(win, cher * (1.0 + 8 * U) + comp.inf), total), dtype=np.float64
        )

    lo, hi = (f.start * fine) * t, (f.start + f.probs.size - 1) * fine * t
    center = t * pair.center
    return curve_pair(curve, lo, hi, center, sd, key, inf_mass=comp.inf)
