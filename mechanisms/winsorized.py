"""Winsorized mean estimation — Levy et al., "Learning with User-Level Privacy" (NeurIPS 2021),
Algorithms 1 and 2, Theorems 1 and 2, Corollary 1 — and the user-mean helpers.

**1-D (Algorithm 1).** Per-user values X ∈ [−B, B]^n, budget ε per use:
[a, b] = PrivateRange(X, ε/2, τ, B) with width w (``width_factor``·τ: 6τ by default; the paper's
is 4τ), then μ̄ = (1/n)·Σ Π_[a,b](X_i) + Lap(2w/(nε)). The clipped mean has replace-one
sensitivity w/n, so its Laplace share ε/2 needs scale (w/n)/(ε/2) = 2w/(nε) (12τ/(nε) at 6τ).
Privacy: ε-DP by basic composition, at any width; events ``exponential`` at ε/2 and ``laplace``
with scale b/Δ₁ = 2/ε.

Utility (Thm 1, at w ≥ 6τ): if X is (τ, γ)-concentrated, the output is β-close in total variation
to mean(X) + Lap(2w/(nε)) (= Lap(12τ/(nε)) at the default), β = min(1, γ + (B/τ)·e^{−nε/8}).
Proof. Outside probability γ every X_i lies within τ of some x₀. The bins [−B + 2τk, −B + 2τ(k+1))
(the last one closed at B, possibly narrower) have width ≤ 2τ and every value in bin k is within τ
of its centre c_k; an interval of length 2τ meets at most two bins, so at most two are occupied and
the one holding the median has score ≥ n/2, every unoccupied one score 0. The exponential
mechanism at ε/2 (P ∝ e^{(ε/2)·s/2}) picks an unoccupied bin with probability at most
(K − 2)·e^{−nε/8} ≤ (B/τ)·e^{−nε/8} (K = ⌈B/τ⌉ < B/τ + 1; no unoccupied bin when K ≤ 2). An
occupied centre c holds some X_j with |X_j − c| ≤ τ, so |c − x₀| ≤ 2τ and every |X_i − c| ≤ 3τ ≤ w/2:
nothing is clipped and the output is exactly mean(X) + Lap(2w/(nε)). Coupling the two laws on
these events gives the bound. 6τ is the smallest width for which this holds for every τ-cluster:
values at e − η and e + 2τ − 2η around a bin edge e lie within τ of e + τ − η, and when the lower
bin (centre e − τ) holds more of them it is the likely pick, 3τ − 2η from the upper values.
At the paper's w = 4τ the theorem as printed (β-close to mean + Lap(8τ/(nε))) fails: τ = 1,
B = 12, n = 100, ε = 0.615, 60 values at −0.01 and 40 at 1.99 give a release biased by −0.38
against a Laplace scale of 0.13, at total variation 0.74 from the claimed law with β = 5.5·10⁻³
(tests/mechanisms/test_winsorized_theorem1.py computes it exactly). ``width_factor=4`` remains
available: as private, but it meets the printed theorem only for clusters inside a single bin.

**High-d (Algorithm 2).** X_i ∈ R^d. Random signs ω (public, data-independent), U = H·diag(ω)/√d'
(Sylvester Hadamard, d' = 2^⌈log₂ d⌉, vectors zero-padded — the source has no appendix for d not a
power of two, so d' is used everywhere, as a reconstruction); Y_i = U X_i; per rotated coordinate j
the 1-D algorithm at ε' with radius τ' = 10τ·√(log(d'n/γ)/d') on the range [−√d'·B, √d'·B]
(‖Y_i‖_∞ ≤ ‖X_i‖₂ ≤ √d·B for X_i ∈ [−B, B]^d; with ``norm="l2"`` the inputs have ‖X_i‖₂ ≤ B and the
range is B); X̄ = Uᵀ Ȳ. Paper calibration (Thm 2): ε' = ε/√(8d'·log(1/δ)), which by advanced
composition (Dwork–Rothblum–Vadhan) of the d' pure ε'-DP releases gives (ε, δ)-DP. The tight
calibration composes the 2d' releases (exponential at ε'/2, Laplace of scale 2/ε') with the
accountant instead. Utility (Thm 2): β-close to a law with mean X̄ and total variance
≤ c₀·d·τ²·log(dn/γ)·log(1/δ)/(n²ε²), c₀ = 102,400, β = min(1, 2γ + d²·B·√log(dn/γ)/τ ·
exp(−nε/(24√(d·log(1/δ))))) — printed with log(dn/α) in the source; α is undefined there.

**User means (Corollary 1).** Each user averages its m items; :func:`tau_bounded` and
:func:`tau_subgaussian` give a radius τ within which all n user means lie around the population
mean with probability ≥ 1 − γ (proofs in their docstrings); :func:`winsorized_user_mean` runs the
whole estimate. Neighbouring relation everywhere: replace one user's whole data (n fixed).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from accountant.events import MAX_USERS, Event, ExponentialEvent, LaplaceEvent

from ._base import D_MAX, InputError, Param, ParameterError, as_float_array, check_rng
from ._central import CentralMechanism
from .catalog import register
from .hadamard import fwht, next_power_of_two
from .private_range import PrivateRange
from .user_level import user_means

# --------------------------------------------------------------------------------------------------------
# τ from the number of items per user
# --------------------------------------------------------------------------------------------------------


def tau_bounded(B: float, m: int, n: int, gamma: float) -> float:
    """Radius τ = (B/√m)·(1 + √(2 ln(n/γ))) such that, with probability ≥ 1 − γ, every one of n user
    means of m i.i.d. items in the ℓ2 ball of radius B lies within τ of the population mean μ.

    Proof. For one user, X̄ = (1/m)Σ z_j: E‖X̄ − μ‖ ≤ √(E‖X̄ − μ‖²) ≤ √(E‖z‖²/m) ≤ B/√m; changing one
    item moves ‖X̄ − μ‖ by at most 2B/m, so McDiarmid gives P(‖X̄ − μ‖ ≥ B/√m + t) ≤
    exp(−2t²/(m·(2B/m)²)) = exp(−mt²/(2B²)); t = B√(2 ln(n/γ)/m) makes it γ/n, and a union bound over
    the n users gives γ. (Levy et al. Cor. 1 leave the constant unspecified; this is one valid choice.)"""
    _check_tau_args(m, n, gamma)
    return B / math.sqrt(m) * (1.0 + math.sqrt(2.0 * math.log(n / gamma)))


def tau_subgaussian(sigma: float, d: int, m: int, n: int, gamma: float) -> float:
    """Radius τ = (σ/√m)·√(2d·ln(2nd/γ)) such that, with probability ≥ 1 − γ, every one of n user means
    of m i.i.d. items whose coordinates are σ²-sub-Gaussian lies within τ (ℓ2) of the mean.

    Proof. Each coordinate of a user mean is (σ²/m)-sub-Gaussian, so P(|X̄_j − μ_j| ≥ t) ≤
    2·exp(−mt²/(2σ²)); t = σ√(2 ln(2nd/γ)/m) makes it γ/(nd); a union bound over the d coordinates
    and n users gives γ, and then ‖X̄ − μ‖₂ ≤ √d·t."""
    _check_tau_args(m, n, gamma)
    if not (d >= 1 and sigma > 0):
        raise ParameterError("tau_subgaussian needs sigma > 0 and d >= 1")
    return sigma / math.sqrt(m) * math.sqrt(2.0 * d * math.log(2.0 * n * d / gamma))


def _check_tau_args(m: int, n: int, gamma: float) -> None:
    """``ParameterError`` unless m, n >= 1 and γ ∈ (0, 1)."""
    if not (m >= 1 and n >= 1 and 0 < gamma < 1):
        raise ParameterError("m and n must be >= 1 and gamma in (0, 1)")


def rotated_tau(tau: float, d_rot: int, n: int, gamma: float) -> float:
    """τ' = 10τ·√(log(d'n/γ)/d') — Levy et al. Alg. 2 line 3 (at the padded dimension d')."""
    return 10.0 * tau * math.sqrt(math.log(d_rot * n / gamma) / d_rot)


# --------------------------------------------------------------------------------------------------------
# The mechanism
# --------------------------------------------------------------------------------------------------------


@register
class WinsorizedMean(CentralMechanism):
    """Winsorized mean of per-user values (Levy et al. Alg. 1, d = 1) or vectors (Alg. 2, d > 1).

    ``epsilon`` is the budget of ONE coordinate's 1-D algorithm (ε/2 to its private range, ε/2 to
    its Laplace noise); for d = 1 it is the whole pure ε. Inputs: per-user values/vectors
    (users,) / (users, d), or per-user datasets (users, items[, d]) averaged per user.
    ``randomize`` returns {"mean", "intervals" (per rotated coordinate), "signs" (the public
    rotation, d > 1)}; ``estimate`` the mean. Events per use: ``exponential`` at ε/2 and ``laplace``
    with scale 2/ε, each d' times (d' = 1 for d = 1).
    """

    POSITION = 14
    name = "winsorized_mean"
    description = (
        "Central user-level winsorized mean: private range (exponential mechanism) then the clipped mean "
        "plus Laplace noise; d > 1 per coordinate after a random Hadamard rotation."
    )
    source = "Levy et al. 2021 (seed 001) Algorithms 1–2, Theorems 1–2, Corollary 1"
    PARAMETERS = {
        "epsilon": Param(
            "number",
            "ε of one coordinate's 1-D algorithm (half to the range, half to the Laplace noise); the whole pure ε for d = 1",
            minimum=0.0,
            exclusive_minimum=True,
            maximum=50.0,
        ),
        "tau": Param(
            "number",
            "concentration radius τ of the users' values (ℓ2 for d > 1)",
            minimum=0.0,
            exclusive_minimum=True,
        ),
        "B": Param(
            "number",
            "bound of the values: [−B, B] per coordinate (or ‖x‖₂ ≤ B with norm='l2')",
            minimum=0.0,
            exclusive_minimum=True,
        ),
        "d": Param("integer", "dimension", default=1, minimum=1, maximum=D_MAX),
        "width_factor": Param(
            "number",
            "interval width over the (rotated) radius: 6 (the default: always contains a τ-cluster, so Thm 1 holds with Laplace scale 12τ/(nε)) or 4 (the paper's: can clip a τ-cluster split across a bin edge)",
            default=6.0,
            minimum=0.0,
            exclusive_minimum=True,
        ),
        "norm": Param(
            "string",
            "d > 1: the inputs' bound B is per coordinate ('linf': rotated range √d'·B) or on the ℓ2 norm ('l2': range B)",
            default="linf",
            choices=("linf", "l2"),
        ),
        "n": Param(
            "integer",
            "d > 1: number of users τ' is computed for (public)",
            default=None,
            minimum=1,
            maximum=MAX_USERS,
            nullable=True,
        ),
        "gamma": Param(
            "number",
            "d > 1: failure probability in τ'",
            default=1e-3,
            minimum=0.0,
            exclusive_minimum=True,
            maximum=1.0,
        ),
        "tau_rotated": Param(
            "number",
            "d > 1: the rotated radius τ' itself (default 10τ·√(log(d'n/γ)/d'), which needs n)",
            default=None,
            minimum=0.0,
            exclusive_minimum=True,
            nullable=True,
        ),
        "rotation_seed": Param(
            "integer",
            "d > 1: seed of the public random signs (default: drawn from the run's generator)",
            default=None,
            minimum=0,
            nullable=True,
        ),
    }

    def _setup(self) -> None:
        """d' = 2^⌈log₂ d⌉ (1 for d = 1); the rotated radius τ' (given, or :func:`rotated_tau`); the range B,
        or √d·B for ``norm='linf'`` (‖Ux‖_∞ ≤ ‖x‖₂ ≤ √d·B); the width w = width_factor·τ'; the private
        range at ε/2."""
        p = self.params
        self.epsilon: float = p["epsilon"]
        self.tau: float = p["tau"]
        self.B: float = p["B"]
        self.d: int = p["d"]
        self.D = 1 if self.d == 1 else next_power_of_two(self.d)
        self.tau_r: float
        self.range: float
        if self.d == 1:
            self.tau_r, self.range = self.tau, self.B
        else:
            if p["tau_rotated"] is not None:
                self.tau_r = p["tau_rotated"]
            elif p["n"] is not None:
                self.tau_r = rotated_tau(self.tau, self.D, p["n"], p["gamma"])
            else:
                raise ParameterError("winsorized_mean with d > 1 needs 'n' (for τ') or 'tau_rotated'")
            self.range = math.sqrt(self.d) * self.B if p["norm"] == "linf" else self.B
        self.width: float = p["width_factor"] * self.tau_r
        self.ranger = PrivateRange(epsilon=self.epsilon / 2.0, tau=self.tau_r, B=self.range, width=self.width)

    def internals(self) -> dict[str, Any]:
        return {
            "rotated_dimension": self.D,
            "tau_rotated": self.tau_r,
            "range": self.range,
            "interval_width": self.width,
            "range_epsilon": self.epsilon / 2.0,
            "laplace_scale_times_n": 2.0 * self.width / self.epsilon,
            "bins": self.ranger.K,
        }

    def laplace_scale(self, n: int) -> float:
        """b = 2w/(nε): the clipped mean's sensitivity w/n over its budget ε/2."""
        return 2.0 * self.width / (n * self.epsilon)

    def run_events(self, count: int) -> list[Event]:
        """Per use and rotated coordinate (d' of them): the private range, ``exponential`` at ε/2, and the
        clipped mean's noise, ``laplace`` with scale b/Δ₁ = (2w/(nε))/(w/n) = 2/ε."""
        c = int(count) * self.D
        return [
            ExponentialEvent(epsilon=float(self.epsilon / 2.0), count=c),
            LaplaceEvent(scale=float(2.0 / self.epsilon), count=c),
        ]

    @classmethod
    def paper_params(cls, epsilon: float, delta: float, count: int, params: dict[str, Any]) -> dict[str, Any]:
        """d = 1: ε per use = target/count (pure, basic composition). d > 1: Thm 2's
        ε' = ε₀/√(8d'·log(1/δ₀)) with (ε₀, δ₀) = (ε, δ) for one use, or, for ``count`` adaptive uses,
        the per-query budget of Levy et al. Thm 10 (reconstructed as Alg. 3's): ε₀ = ε/(2√(2·count·log(2/δ))),
        δ₀ = δ/(2·count)."""
        d = int(params.get("d", 1))
        if d == 1:
            return {"epsilon": epsilon / count}
        D = next_power_of_two(d)
        e0, d0 = (
            (epsilon, delta)
            if count == 1
            else (
                epsilon / (2.0 * math.sqrt(2.0 * count * math.log(2.0 / delta))),
                delta / (2.0 * count),
            )
        )
        return {"epsilon": e0 / math.sqrt(8.0 * D * math.log(1.0 / d0))}

    # ------------------------------------------------------------------------------------------ server
    def _inputs(self, x: ArrayLike) -> NDArray[np.float64]:
        """Per-user vectors (users, d) (datasets averaged per user, ``user_means``)."""
        v = user_means(x, self.d, self.name)
        if v.shape[0] < 1:
            raise InputError(f"{self.name}: needs at least one user")
        return v

    def signs(self, rng: np.random.Generator) -> NDArray[np.float64]:
        """The public random signs ω ∈ {±1}^{d'} of the rotation U = H·diag(ω)/√d' (Levy et al. Alg. 2
        line 2): from ``rotation_seed`` when set, else drawn from ``rng``. Data-independent."""
        seed = self.params["rotation_seed"]
        g = np.random.default_rng(seed) if seed is not None else rng
        return g.choice(np.array([-1.0, 1.0]), size=self.D)

    def rotate(self, X: NDArray[np.float64], signs: NDArray[np.float64] | None) -> NDArray[np.float64]:
        """Y_i = U X_i = H·diag(ω)·X_i/√d' per row (X zero-padded to d'); the identity for d = 1
        (``signs`` may be None only then)."""
        if self.d == 1:
            return X
        w = np.zeros((X.shape[0], self.D))
        w[:, : self.d] = X
        return fwht(w * _required_signs(signs)) / math.sqrt(self.D)

    def unrotate(self, Y: NDArray[np.float64], signs: NDArray[np.float64] | None) -> NDArray[np.float64]:
        """X = Uᵀ Y = diag(ω)·H·Y/√d' per row (H symmetric), cut back to the first d coordinates; the
        identity for d = 1 (``signs`` may be None only then)."""
        if self.d == 1:
            return Y
        out: NDArray[np.float64] = (fwht(Y) * _required_signs(signs) / math.sqrt(self.D))[..., : self.d]
        return out

    def release(
        self, X: NDArray[np.float64], rng: np.random.Generator, signs: NDArray[np.float64] | None = None
    ) -> dict[str, Any]:
        """One use on per-user vectors X (n, d): the noisy mean and what was released with it."""
        n = X.shape[0]
        if signs is None:
            signs = self.signs(rng) if self.d > 1 else None
        Y = self.rotate(X, signs)
        b = self.laplace_scale(n)
        out = np.empty(self.D)
        intervals = np.empty((self.D, 2))
        for j in range(self.D):
            a = self.ranger.choose(Y[:, j], rng)
            lo, hi = a - self.width / 2.0, a + self.width / 2.0
            out[j] = np.clip(Y[:, j], lo, hi).mean() + rng.laplace(0.0, b)
            intervals[j] = (lo, hi)
        mean = self.unrotate(out[None, :], signs)[0]
        return {
            "mean": float(mean[0]) if self.d == 1 else mean,
            "intervals": intervals,
            "signs": None if signs is None else signs,
            "n": n,
        }

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> dict[str, Any]:
        """Per-user values or datasets → :meth:`release` (the noisy mean, the intervals, the signs)."""
        rng = check_rng(rng)
        return self.release(self._inputs(x), rng)

    def estimate(self, reports: object) -> float | NDArray[np.float64]:
        """The released mean (a float for d = 1), checked to be d finite numbers."""
        if not isinstance(reports, dict) or "mean" not in reports:
            raise InputError(f"{self.name}: reports must be the release {{'mean': ..., 'intervals': ...}}")
        m = as_float_array(reports["mean"], self.name)
        if m.size != self.d or not np.all(np.isfinite(m)):
            raise InputError(f"{self.name}: 'mean' must be {self.d} finite number(s)")
        return float(m.reshape(-1)[0]) if self.d == 1 else m.reshape(-1)

    # ------------------------------------------------------------------------------------------ utility
    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """The Laplace noise's E‖noise‖² = d·2b² with b = 2w/(nε): i.i.d. noise of variance 2b² on the d'
        rotated coordinates stays isotropic after the orthogonal un-rotation, and d of the d'
        coordinates are kept. The whole error when nothing is clipped and the ranges succeed (Thm 1/
        Thm 2's β-closeness)."""
        if x is not None:
            n = self._inputs(x).shape[0]
        n = 1 if n is None else int(n)
        return self.d * 2.0 * self.laplace_scale(n) ** 2

    def failure_probability(self, n: int) -> float:
        """Probability that some coordinate's private range picks a centre outside the data's bins,
        for data within τ' of a point in every rotated coordinate: d'·K·e^{−nε/8} (each range runs at
        ε/2; module :mod:`mechanisms.private_range`)."""
        return min(1.0, self.D * self.ranger.failure_probability(n))


def _required_signs(signs: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """The rotation's signs, which every d > 1 rotation needs."""
    if signs is None:
        raise InputError("winsorized_mean with d > 1: the rotation needs its signs")
    return signs


def theorem1_beta(n: int, epsilon: float, tau: float, B: float, gamma: float) -> float:
    """Levy et al. Thm 1: β = min(1, γ + (B/τ)·e^{−nε/8}) — the release is β-close to mean + Lap(2w/(nε))
    at widths w ≥ 6τ (the default; module docstring), not at the paper's 4τ."""
    return min(1.0, gamma + B / tau * math.exp(-n * epsilon / 8.0))


def theorem2_beta(n: int, d: int, epsilon: float, delta: float, tau: float, B: float, gamma: float) -> float:
    """Levy et al. Thm 2: β = min(1, 2γ + d²·B·√log(dn/γ)/τ · exp(−nε/(24√(d·log(1/δ)))))."""
    lg = math.log(d * n / gamma)
    return min(
        1.0,
        2 * gamma
        + d
        * d
        * B
        * math.sqrt(lg)
        / tau
        * math.exp(-n * epsilon / (24 * math.sqrt(d * math.log(1 / delta)))),
    )


def theorem2_variance(n: int, d: int, epsilon: float, delta: float, tau: float, gamma: float) -> float:
    """Levy et al. Thm 2: Var ≤ c₀·d·τ²·log(dn/γ)·log(1/δ)/(n²ε²), c₀ = 102,400 (eq. (6), with
    log(dn/γ) for the printed log(dn/α))."""
    return 102_400.0 * d * tau**2 * math.log(d * n / gamma) * math.log(1 / delta) / (n * epsilon) ** 2


def winsorized_user_mean(
    data: ArrayLike,
    epsilon: float,
    delta: float,
    B: float,
    rng: np.random.Generator,
    gamma: float = 1e-3,
    tau: float | None = None,
    sigma: float | None = None,
    mode: str = "tight",
    width_factor: float = 6.0,
) -> tuple[float | NDArray[np.float64], WinsorizedMean]:
    """Levy et al. Corollary 1: the user-level private mean of per-user datasets.

    ``data``: (users, items) or (users, items, d) items in [−B, B] per coordinate (d = 1) or in the
    ℓ2 ball of radius B (d > 1); every user must hold the same number m of items (pad or truncate
    first). τ from m: ``tau`` if given, else :func:`tau_subgaussian` with ``sigma`` if given, else
    :func:`tau_bounded`. The mechanism is calibrated to (ε, δ) (``mode`` tight or paper) and run once.
    Returns (estimate, mechanism) — the mechanism's ``events()`` are what the release costs."""
    arr = np.asarray(data, dtype=float)
    if arr.ndim not in (2, 3):
        raise InputError(
            "data must be (users, items) or (users, items, d) with the same number of items per user"
        )
    n, m = arr.shape[0], arr.shape[1]
    d = 1 if arr.ndim == 2 else arr.shape[2]
    if tau is None:
        tau = tau_subgaussian(sigma, d, m, n, gamma) if sigma is not None else tau_bounded(B, m, n, gamma)
    params: dict[str, Any] = {"tau": tau, "B": B, "d": d, "width_factor": width_factor}
    if d > 1:
        params.update(n=n, gamma=gamma, norm="l2")
    mech = WinsorizedMean.calibrated(epsilon, delta, mode=mode, **params)
    return mech.estimate(mech.randomize(arr if d > 1 else arr, rng)), mech


__all__ = [
    "WinsorizedMean",
    "rotated_tau",
    "tau_bounded",
    "tau_subgaussian",
    "theorem1_beta",
    "theorem2_beta",
    "theorem2_variance",
    "winsorized_user_mean",
]
