"""Stage 3 of the PLD route: compose single-round PLDs by an exponentially tilted FFT, with a
rigorous bound on every numerical error.

Tilting. For events k with single-round measures f_k (finite part, on the grid lΔ) repeated T_k
times, the composed finite part is z = ∗_k f_k^{∗T_k}. For λ ≥ 0 let M_k = Σ_l f_k(l) e^{λlΔ} and
g_k = f_k e^{λlΔ}/M_k (a probability vector up to rounding); tilting commutes with convolution, so
z_l = Π_k M_k^{T_k} · e^{−λlΔ} · G_l with G = ∗_k g_k^{∗T_k}, and

    δ_fin(ε) = Σ_l (1 − e^{ε − lΔ})_+ z_l = C(ε) · Σ_l w(lΔ − ε) G_l,   C(ε) = Π_k M_k^{T_k} e^{−λε},
    w(t) = (1 − e^{−t}) e^{−λt} for t > 0 (0 otherwise),  0 ≤ w ≤ c(λ) = (λ/(1+λ))^λ / (1+λ).

C(ε)·c(λ) is a Chernoff bound of δ_fin; with λ near its optimum (:func:`best_tilt`) δ sits at the
peak of G, so an error of size η in G (ℓ1) or of size η₂ (ℓ2) moves δ by at most C·c(λ)·η or
C·‖w‖₂·η₂: relative to δ, a factor C·c(λ)/δ (a Chernoff-to-exact ratio, 10–100) above η.

Error budget (every term is added to δ; :class:`Composed` keeps them, :meth:`Composed.delta`
adds them up, u = 2⁻⁵³):

1. *Tilt rounding.* g̃_k = fl(f_k e^{λlΔ − m}/M̃_k): each entry within a relative γ_k = 3u·(|λlΔ| +
   |m|) + 6u of the exact one, so f_k e^{λlΔ} ≤ e^{m} M̃_k (1 + γ_k) g̃_k entry by entry and the
   factor Π (1 + γ_k)^{T_k} goes into C (monotonicity: every weight is ≥ 0); so does
   (1 + 2u⌈len/N⌉)^{T_k} when a vector longer than N is folded onto N points by float additions.
   From here on G is the exact convolution of the (folded) float vectors.
2. *Aliasing.* The FFT of length N computes the circular convolution: the window of N grid
   points [a, a + N) receives G plus the mass of G outside it folded in (non-negative, so the
   window's sum only grows) and misses G outside the window, whose weight is ≤ c(λ)·A with
   A = G(l < a) + G(l ≥ a + N) bounded by Chernoff: G(l ≥ b) ≤ e^{−θbΔ} Π_k m_k(θ)^{T_k},
   m_k(θ) = Σ_l g̃_k(l) e^{θlΔ} (θ > 0; θ < 0 for the lower tail). N is doubled until A ≤ 1e-13
   (or the full support fits: then A = 0).
3. *FFT rounding* (numpy's pocketfft, power-of-two N). For a radix-2/4 Cooley–Tukey transform with
   twiddles accurate to 2u, ‖fl(FFT x) − FFT x‖₂ ≤ η_N ‖FFT x‖₂ with η_N = L·(2u + γ₄(√2 + 2u)),
   L = log₂N levels (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., Thm 24.2);
   we take η_N = 10u·(log₂N + 2) (two extra levels for the real-input packing), and the tests
   measure the actual error against a 64-digit DFT far below it. So per frequency |ĝ̃_kj − ĝ_kj| ≤
   ρ_k = η_N √N ‖g̃_k‖₂ and |ĝ_kj| ≤ s_k = ‖g̃_k‖₁.
4. *Powers.* Ĝ_j = Π_k ĝ_kj^{T_k} is computed as exp(Σ_k T_k log ĝ̃_kj). From exact inputs the
   T-fold power moves the error by |Πa_k^{T_k} − Πb_k^{T_k}| ≤ Σ_k T_k|a_k − b_k| Π_k' max(|a_k'|,
   |b_k'|)^{T_k'}/max(…): ‖ΔĜ‖₂ ≤ P Σ_k T_k ρ_k/(s_k + ρ_k), P = Π_k (s_k + ρ_k)^{T_k}. The power is
   computed as e^{Σ T_k log|z_k|}·(cos + i sin)(Σ T_k arg z_k): log, atan2 (libm, ≤ 2 ulp) and the
   products and sums perturb the exponent by τ_j ≤ Σ_k T_k·4u·(|log|z|| + |arg z| + 1) +
   4u·K·(|Re| + |Im|) of the exponent, exp/cos/sin and the products add ≤ 4u relative, so that entry
   is off by at most |Ĝ̃_j|·e^{τ_j}(e^{τ_j}(1 + 4u) − 1)(1 + 8u) ≈ |Ĝ̃_j|(τ_j + 4u). Frequencies where
   the exponent Σ_k T_k log|ĝ̃_kj| is below −790 (for a short part, log(s_k + ρ_k) ≥ log|ĝ̃_kj|
   stands in) are exactly 0 in floating point and are not evaluated (most of them after many
   rounds: 106 of 65,537 at T = 10⁵).
3b. *Short parts.* A part other than the main one (the largest T_k × support) whose support is
   at most N/64 — the remainder rounds next to blocks (:mod:`.blocks`) — is transformed only at
   the frequencies kept, by direct sums ĝ̃_j = Σ_l g̃_l e^{−2πi j p_l/N} (p_l its positions mod N;
   the angle 2π·((j p_l) mod N)/N within 26u, cos/sin within an ulp, the sums of L terms within
   (L + 2)u·Σ|g̃| per component): ρ_k = max(2(L + 32)u·s_k, the FFT's) per frequency; where that
   would cost more than 4N products, its FFT is taken instead.
5. *Inverse FFT.* ‖G̃ − G_circ‖₂ ≤ √2·‖ΔĜ_half‖₂/√N + η_N·‖G̃‖₂(1 + 2η_N) (irfft; the √2 turns the
   half spectrum's ℓ2 into the full one's; the 1/N scaling is exact).
6. *The final sums.* Σ_l w G̃_l for every ε from three suffix recurrences over G̃, O(1) per ε, with
   their rounding and that of the float loss grid bounded (:mod:`.tail`); by direct sums over the
   window where those bounds would be loose (a small tilt, a short window, ε below the bulk).

Mass at +∞: with totals S_k = ‖f_k‖₁ + a_k (a_k the mass at +∞), the composition puts
Π S_k^{T_k} − Π (S_k − a_k)^{T_k} = Π S_k^{T_k}·(1 − Π (1 − a_k/S_k)^{T_k}) at +∞ (exact formula,
evaluated with log1p/expm1 and raised by 1e-12 relative), added to δ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..store import BoundedCache, MiB
from .discretise import Discretised, U
from .tail import Tail

__all__ = ["Composed", "best_tilt", "inf_mass", "log_mgf", "tilted_compose"]

_ALIAS_TARGET = 1e-13
_MAX_LOG2N = 24
_LOG_SLACK = 1e-10  # per round, on computed log-mgfs (logsumexp rounding ≪ this)

#: the tilted single-round PLD per (pmf, λ), and its spectrum and modulus per
#: (pmf, λ, N): a warm answer (same events, another count or ε) reuses them
_TILTS: BoundedCache[tuple[object, ...], _Tilted] = BoundedCache(
    64, 32 * MiB, sizeof=lambda _k, v: int(v.g.nbytes) + 256, name="pld_tilts"
)
_SPECTRA: BoundedCache[tuple[object, ...], _Spectrum] = BoundedCache(
    32, 64 * MiB, sizeof=lambda _k, v: int(v.z.nbytes + v.mod.nbytes) + 256, name="pld_spectra"
)


def _dot(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """x·y without BLAS (whose threads stall on a shared machine): numpy's own loop."""
    return float(np.einsum("i,i->", x, y))


def _eta(n: int) -> float:
    return 10.0 * U * (math.log2(n) + 2.0)


def _logsumexp(x: NDArray[np.float64]) -> float:
    m = float(np.max(x))
    if not math.isfinite(m):
        return m
    return m + math.log(float(np.sum(np.exp(x - m))))


def log_mgf(d: Discretised, lam: float) -> float:
    """log Σ_l f(l) e^{λlΔ} of the finite part of ``d`` (an upper bound, `_LOG_SLACK` added)."""
    idx = np.arange(d.probs.size, dtype=np.float64)
    return _logsumexp(d.log_probs + lam * idx * d.step) + lam * d.start * d.step + _LOG_SLACK


def best_tilt(parts: Sequence[tuple[Discretised, int]], epsilon: float, lam_max: float = 400.0) -> float:
    """λ ∈ [0, lam_max] minimising the Chernoff exponent Σ T_k log M_k(λ) − λε (golden section)."""
    from scipy.optimize import minimize_scalar

    def f(lam: float) -> float:
        return sum(t * log_mgf(d, lam) for d, t in parts) - lam * epsilon

    res = minimize_scalar(f, bounds=(0.0, lam_max), method="bounded", options={"xatol": 1e-3})
    lam = float(f"{float(res.x):.3g}")  # any λ ≥ 0 is valid; 3 digits let spectra be reused
    return lam if f(lam) < f(0.0) else 0.0


def inf_mass(parts: Sequence[tuple[Discretised, int]]) -> float:
    """Upper bound of the composed mass at +∞ (module docstring)."""
    log_total, log_keep = 0.0, 0.0
    for d, t in parts:
        s = d.total
        r = min(1.0, d.inf_mass / (s * (1.0 - 8 * U)))
        log_total += t * math.log(s)
        log_keep += t * math.log1p(-r) if r < 1.0 else -math.inf
    keep = -math.expm1(log_keep)
    if keep <= 0.0:
        return 0.0
    log_bound = log_total + math.log(keep)  # in log space: Π S^T overflows for long compositions
    return 1.0 if log_bound >= 0.0 else min(1.0, math.exp(log_bound) * (1.0 + 1e-12))


@dataclass(frozen=True)
class _Tilted:
    g: NDArray[np.float64]  # g̃_k (float vector, sums to ≈ 1)
    start: int
    log_scale: float  # log(e^m M̃_k (1 + γ_k)) ≥ log of the exact tilt normaliser, per round
    mean: float  # in grid units (absolute index)
    var: float


def _tilt(d: Discretised, lam: float) -> _Tilted:
    key = (*d.key, lam)
    got = _TILTS.get(key)
    if got is None:
        got = _tilt_uncached(d, lam)
        _TILTS.put(key, got)
    return got


def _tilt_uncached(d: Discretised, lam: float) -> _Tilted:
    idx = np.arange(d.probs.size, dtype=np.float64)
    expo = lam * (idx + d.start) * d.step
    m = float(np.max(expo))
    v = d.probs * np.exp(expo - m)
    tot = math.fsum(v.tolist())
    g = v / tot
    gamma = 3 * U * (float(np.max(np.abs(expo))) + abs(m)) + 6 * U
    mean = _dot(g, idx)
    var = _dot(g, (idx - mean) ** 2)
    return _Tilted(g, d.start, m + math.log(tot) + math.log1p(gamma) + _LOG_SLACK, mean + d.start, var)


def _tail_bound(tilted: Sequence[tuple[_Tilted, int]], step: float, a: int, b: int) -> float:
    """Chernoff bound on G(l < a) + G(l ≥ b) (module docstring, item 2)."""
    sd = math.sqrt(max(sum(t * x.var for x, t in tilted), 1e-300))
    total = 0.0
    with np.errstate(divide="ignore"):
        logs = [(np.log(x.g), np.arange(x.g.size, dtype=np.float64) + x.start, t) for x, t in tilted]
    for sign, edge in ((1.0, b), (-1.0, a - 1)):
        best = math.inf
        for mult in (0.25, 0.5, 1.0, 2.0, 4.0):
            th = sign * mult * abs(edge - sum(t * x.mean for x, t in tilted)) / (sd * sd) / step
            if th == 0.0 or not math.isfinite(th * step * max(abs(edge), 1)):
                continue  # (a point mass: sd ≈ 0 makes θ overflow; other multipliers or N ≥ support)
            lm = 0.0
            with np.errstate(invalid="ignore", over="ignore"):
                for lg, idx, t in logs:
                    lm += t * (_logsumexp(lg + th * idx * step) + _LOG_SLACK)
            if math.isfinite(lm):
                best = min(best, lm - th * edge * step)
        total += math.exp(min(best, 0.0))
    return total


def _window(tilted: Sequence[tuple[_Tilted, int]], step: float) -> tuple[int, int, float]:
    """(N, a, alias bound): a power-of-two FFT length and the window [a, a + N) (item 2)."""
    full = sum(t * (x.g.size - 1) for x, t in tilted) + 1
    mean = sum(t * x.mean for x, t in tilted)
    sd = math.sqrt(sum(t * x.var for x, t in tilted))
    n = 1 << max(4, math.ceil(math.log2(2 * (8.0 * sd + 16))))
    while True:
        if n >= full:
            n = 1 << max(4, math.ceil(math.log2(full)))
            return n, sum(t * x.start for x, t in tilted), 0.0
        a = int(round(mean)) - n // 2
        alias = _tail_bound(tilted, step, a, a + n)
        if alias <= _ALIAS_TARGET or n >= 1 << _MAX_LOG2N:
            return n, a, alias
        n *= 2


@dataclass(frozen=True)
class Composed:
    """The tilted composition on the window [a, a + N) and its error terms (module docstring)."""

    step: float
    lam: float
    a: int
    G: NDArray[np.float64]
    err2: float  # ℓ2 bound on G̃ − G_circ (items 3–5)
    alias: float  # bound on G outside the window (item 2)
    log_scale: float  # log Π M_k^{T_k}(1 + γ_k)^{T_k}
    inf: float  # mass at +∞
    losses: NDArray[np.float64] = field(init=False, repr=False)  # (a + i)·Δ, increasing
    #: the suffix sums δ(ε) is read from (:mod:`.tail`), extended down the window on demand
    tail: Tail = field(init=False, repr=False, compare=False)
    #: δ(ε) already evaluated, by ε (the root search and the answer ask for the same ε again)
    _seen: dict[float, tuple[float, float]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "losses", (self.a + np.arange(self.G.size, dtype=np.float64)) * self.step)
        tail = Tail(
            self.G, self.losses, self.lam, self.step, self.log_scale, (self.err2, self.alias, self.inf)
        )
        object.__setattr__(self, "tail", tail)
        object.__setattr__(self, "_seen", {})

    def delta(self, epsilon: float) -> tuple[float, float]:
        """(certified δ(ε), the numerical error bound included in it)."""
        key = float(epsilon)
        got = self._seen.get(key)
        if got is None:
            got = self._delta(key)
            if len(self._seen) >= 64:
                self._seen.clear()
            self._seen[key] = got
        return got

    def _delta(self, epsilon: float) -> tuple[float, float]:
        return self.tail.delta(epsilon)


@dataclass(frozen=True)
class _Spectrum:
    z: NDArray[np.complex128]  # ĝ̃ (half spectrum)
    mod: NDArray[np.float64]  # |ĝ̃_j|
    s: float  # ‖g̃‖₁ (upper bound)
    rho: float  # per-frequency forward-FFT error bound (item 3)


def _spectrum(key: tuple[object, ...], x: _Tilted, n: int) -> _Spectrum:
    got = _SPECTRA.get((*key, n))
    if got is None:
        got = _transform(x, n)
        _SPECTRA.put((*key, n), got)
    return got


def _transform(x: _Tilted, n: int) -> _Spectrum:
    """The FFT of the tilted vector folded onto N points, with its error bound (item 3)."""
    pos = (np.arange(x.g.size, dtype=np.int64) + (x.start % n)) % n
    wrapped = np.asarray(np.bincount(pos, weights=x.g, minlength=n), dtype=np.float64)  # (_wrap_slack)
    z = np.fft.rfft(wrapped)
    s = math.fsum(wrapped[wrapped != 0.0].tolist()) * (1.0 + 4 * U)
    rho = _eta(n) * math.sqrt(n) * math.sqrt(_dot(wrapped, wrapped)) * (1.0 + 1e-6)
    return _Spectrum(z, np.abs(z), s, rho)


@dataclass(frozen=True)
class _Short:
    """A short part's spectrum (support ≤ N/64, not the composition's main part), evaluated only at
    the frequencies :func:`_spectrum_error` keeps, by a direct DFT (item 3b of the module
    docstring): |ĝ̃_j| ≤ ``s`` + ``rho`` at every j bounds the skipped ones."""

    x: _Tilted
    n: int
    s: float  # ‖g̃‖₁ (upper bound)
    rho: float  # per-frequency error bound: the larger of the direct DFT's and the FFT's

    def at(self, idx: NDArray[np.int64]) -> NDArray[np.complex128]:
        """ĝ̃_j at the frequencies ``idx`` (direct sums, or the FFT when that is cheaper)."""
        g = self.x.g
        if idx.size * g.size > 4 * self.n:
            return _transform(self.x, self.n).z[idx]
        pos = (np.arange(g.size, dtype=np.int64) + (self.x.start % self.n)) % self.n
        ang = ((idx[:, None] * pos[None, :]) % self.n) * (-2.0 * math.pi / self.n)
        out = np.empty(idx.size, dtype=np.complex128)
        out.real = np.einsum("ij,j->i", np.cos(ang), g)
        out.imag = np.einsum("ij,j->i", np.sin(ang), g)
        return out


def _short(x: _Tilted, n: int) -> _Short:
    s = math.fsum(x.g[x.g != 0.0].tolist()) * (1.0 + 4 * U)
    direct = 2.0 * (x.g.size + 32) * U * s
    fft = _eta(n) * math.sqrt(n) * math.sqrt(_dot(x.g, x.g))
    return _Short(x, n, s, max(direct, fft) * (1.0 + 1e-6))


#: frequencies whose power Π_k ĝ_kj^{T_k} is below e^{−790} are exactly 0 in floating point
#: (exp underflows below −745.2): :func:`_spectrum_error` skips them (module docstring, item 4)
_UNDERFLOW = -790.0


def _spectrum_error(
    tilted: Sequence[tuple[_Tilted, int]], spectra: Sequence[_Spectrum | _Short]
) -> tuple[NDArray[np.complex128], float]:
    """Ĝ̃ (half spectrum) and the ℓ2 bound of its error over the full spectrum (items 3–4).

    Only the frequencies where the power can be non-zero in floating point are evaluated: where
    Σ_k T_k log|ĝ̃_kj| (log(s_k + ρ_k) ≥ log|ĝ̃_kj| for a short part) is below −790, the
    computed exponent (within a relative 10⁻¹³ of the exact one) is below −745.2, so exp gives
    exactly 0 there and so does the entry's error term. The skipped entries are 0, the others
    are computed element by element exactly as over the whole spectrum, and the ℓ2 sum runs over
    the whole (zero-filled) vector in the same order: the result is the same, bit for bit, as
    evaluating every frequency (tests/accountant/test_warm_answers.py)."""
    size = next(sp.z.size for sp in spectra if isinstance(sp, _Spectrum))
    bound = np.zeros(size)
    with np.errstate(divide="ignore"):
        for (_x, t), sp in zip(tilted, spectra):
            bound += t * (np.log(sp.mod) if isinstance(sp, _Spectrum) else math.log(sp.s + sp.rho))
    idx = np.flatnonzero(bound > _UNDERFLOW)
    re = np.zeros(idx.size)
    im = np.zeros(idx.size)
    tau = np.zeros(idx.size)
    prop, log_p = 0.0, 0.0
    for (_x, t), sp in zip(tilted, spectra):
        z = sp.z[idx] if isinstance(sp, _Spectrum) else sp.at(idx)
        mod = sp.mod[idx] if isinstance(sp, _Spectrum) else np.abs(z)
        with np.errstate(divide="ignore"):
            la = np.log(mod)  # log |ĝ̃_j| (−inf where ĝ̃_j = 0)
        ang = np.angle(z)
        re += t * la
        im += t * ang
        # 4u·(|log|ĝ̃_j|| + |arg ĝ̃_j| + 1): the exponent's error per round (item 4)
        tau += t * (4 * U * (np.abs(np.where(np.isfinite(la), la, 0.0)) + np.abs(ang) + 1.0))
        prop += t * sp.rho / (sp.s + sp.rho)
        log_p += t * math.log(sp.s + sp.rho)
    mag = np.exp(re)  # |Ĝ̃_j| (0 where some ĝ̃_kj = 0)
    tau += 4 * U * len(tilted) * (np.abs(np.where(np.isfinite(re), re, 0.0)) + np.abs(im))
    big = np.zeros(size, dtype=np.complex128)
    big.real[idx] = mag * np.cos(im)
    big.imag[idx] = mag * np.sin(im)
    grow = np.exp(tau)
    pow_err = np.zeros(size)
    pow_err[idx] = mag * grow * (np.expm1(tau) + 4 * U * grow) * (1.0 + 8 * U)
    e_full = math.exp(log_p) * prop + math.sqrt(2.0) * math.sqrt(_dot(pow_err, pow_err))
    return big, e_full


def _wrap_slack(x: _Tilted, n: int) -> float:
    """log(1 + 2u·⌈size/N⌉): a vector longer than N is folded onto N points by float additions
    (≤ ⌈size/N⌉ per entry), each entry within that relative error of its exact fold."""
    return math.log1p(2 * U * -(-x.g.size // n)) if x.g.size > n else 0.0


def tilted_compose(parts: Sequence[tuple[Discretised, int]], lam: float) -> Composed:
    """The tilted FFT composition of ``parts`` ((single-round PLD, count) pairs on one grid)."""
    step = parts[0][0].step
    tilted = [(_tilt(d, lam), int(t)) for d, t in parts]
    n, a, alias = _window(tilted, step)
    main = max(range(len(parts)), key=lambda i: (tilted[i][1] * tilted[i][0].g.size, -i))
    spectra = [
        _short(x, n) if i != main and x.g.size <= n // 64 else _spectrum((*d.key, lam), x, n)
        for i, ((d, _t), (x, _t2)) in enumerate(zip(parts, tilted))
    ]
    big, e_full = _spectrum_error(tilted, spectra)
    g_circ = np.fft.irfft(big, n=n)
    eta = _eta(n)
    err2 = e_full / math.sqrt(n) + eta * math.sqrt(_dot(g_circ, g_circ)) * (1.0 + 2 * eta)
    window = np.roll(g_circ, -(a % n))
    log_scale = sum(t * (x.log_scale + _wrap_slack(x, n)) for x, t in tilted)
    return Composed(step, float(lam), int(a), window, err2, alias, log_scale, inf_mass(parts))
