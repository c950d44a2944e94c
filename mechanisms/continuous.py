"""Continuous-output local reports (Laplace) and central trusted-server mechanisms (Gaussian, Laplace)."""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np
from numpy.typing import ArrayLike, NDArray

from accountant.events import Event, GaussianEvent, LaplaceEvent

from ._base import (
    D_MAX,
    EPS0_MAX,
    InputError,
    Mechanism,
    Param,
    ParameterError,
    as_float_array,
    as_float_batch,
    check_population,
    check_rng,
    eps0_param,
    n_from,
)
from .catalog import register


def _project_l1(x: NDArray[np.float64], r: float) -> NDArray[np.float64]:
    """Rows with ‖x‖₁ > r scaled radially onto the ℓ1 sphere, x·r/‖x‖₁ (the others unchanged)."""
    norms = np.abs(x).sum(axis=1)
    over = norms > r
    if np.any(over):
        x = x.copy()
        x[over] *= (r / norms[over])[:, None]
    return x


def _project_l2(x: NDArray[np.float64], r: float) -> NDArray[np.float64]:
    """Rows scaled onto the ℓ2 ball, x·min(1, r/‖x‖₂) (the Euclidean projection)."""
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    over = norms > r
    if np.any(over):
        x = x.copy()
        x[over] *= (r / norms[over])[:, None]
    return x


@register
class LaplaceMean(Mechanism):
    """Local Laplace mean report — seed 000 App. D (Laplace Mean^user_scalar), seed 004 clipped Laplace mean.

    Each client projects x onto the ℓ1 ball of radius r (for d = 1: the interval [−r, r]) and sends
    x + Lap(2r/ε0)^d (ℓ1 sensitivity 2r under replacement): pure ε0-LDP with a **continuous** output, so
    the thesis's chapter-5 shuffle bounds do not apply — every event carries "output": "continuous" and
    the accountant may use only the bounds valid for any ε0-LDP randomizer (pure-DP cap, clone bound).
    Server: the mean of the reports, unbiased, MSE = 2d(2r/ε0)²/n exactly (inputs inside the ball).
    """

    POSITION = 10
    name = "laplace_mean"
    description = (
        "Local Laplace report of a clipped value/vector (continuous output: shuffle amplification "
        "only through bounds valid for every ε0-LDP randomizer)."
    )
    source = "Girgis–Data–Diggavi (seed 000) App. D / Remark 3; seed 004 clipped Laplace mean"
    output = "continuous"
    PARAMETERS = {
        "epsilon0": eps0_param(),
        "d": Param("integer", "dimension", default=1, minimum=1, maximum=D_MAX),
        "r": Param(
            "number",
            "ℓ1 radius of the inputs (d = 1: inputs in [−r, r])",
            default=1.0,
            minimum=0.0,
            exclusive_minimum=True,
        ),
    }

    epsilon0: float

    def _setup(self) -> None:
        """Laplace scale b = 2r/ε0: the ℓ1 sensitivity of a projected input under replacement is 2r."""
        self.epsilon0 = self.params["epsilon0"]
        self.d: int = self.params["d"]
        self.r: float = self.params["r"]
        self.scale: float = 2.0 * self.r / self.epsilon0
        self.bits_per_report = 64 * self.d  # float64 per coordinate
        self.output_alphabet_size = None

    def internals(self) -> dict[str, Any]:
        return {"laplace_scale": self.scale, "encoding": "float64 per coordinate"}

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        """Vectors (batch, d) (or (batch,) when d = 1) → noisy reports (batch, d) float64."""
        rng = check_rng(rng)
        xs = _project_l1(as_float_batch(x, self.d, self.name), self.r)
        return xs + rng.laplace(0.0, self.scale, size=xs.shape)

    def estimate(self, reports: ArrayLike) -> NDArray[np.float64]:
        """The mean of the reports, (1/n)·Σ (x_i + Lap(b)^d): unbiased for the mean of the projected inputs."""
        y = as_float_batch(reports, self.d, f"{self.name} reports")
        if y.shape[0] == 0:
            raise InputError(f"{self.name}: need at least one report to estimate")
        mean: NDArray[np.float64] = y.mean(axis=0)
        return mean

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """E‖x̂ − x̄‖² = 2 d b²/n with b = 2r/ε0 (plus the projection bias for inputs outside the ball)."""
        if x is None:
            return 2.0 * self.d * self.scale**2 / n_from(n, None)
        raw = as_float_batch(x, self.d, self.name)
        xs = _project_l1(raw, self.r)
        n = xs.shape[0]
        bias = xs.mean(axis=0) - raw.mean(axis=0)
        return float(2.0 * self.d * self.scale**2 / n + bias @ bias)


class Release(TypedDict):
    """A central release: the noisy clipped sum over ``n`` users."""

    noisy_sum: NDArray[np.float64]
    n: int


class _Central(Mechanism):
    """The trusted-server noise mechanisms: clip each user's vector, sum, add the noise once.

    Events are replace-one (the relation of the shuffle bounds) whatever the calibration relation:
    the noise is charged over Δ = 2·clip."""

    kind = "central"
    output = "continuous"
    d: int  # dimension, set by each subclass's _setup

    def _sensitivity(self, clip: float) -> float:
        """Δ of the clipped sum: 2·clip under replace-one neighbours (‖u − v‖ ≤ 2·clip for two clipped
        vectors), clip under add/remove."""
        return 2.0 * clip if self.params["neighbouring"] == "replace" else clip

    def _central_events(
        self, n: object, k: object, count: object, ev: GaussianEvent | LaplaceEvent
    ) -> list[Event]:
        """[``ev``] with its ``count``, after checking the population; a central release has no
        sampled form, so ``k`` must be None."""
        if k is not None:
            raise ParameterError(
                f"{self.name} is a central (trusted-server) release: there is no subsampled event for it; "
                "leave k out (privacy amplification by subsampling is not accounted here)"
            )
        if n is not None:
            check_population(n, None, count)
        _, _, count = check_population(1, None, count)
        return [ev.with_count(count)]

    def _project(self, x: NDArray[np.float64]) -> NDArray[np.float64]:  # pragma: no cover - overridden
        """Each user's vector clipped to the mechanism's norm ball (overridden)."""
        raise NotImplementedError

    def _noise(self, rng: np.random.Generator) -> NDArray[np.float64]:  # pragma: no cover - overridden
        """One draw of the release's noise, shape (d,) (overridden)."""
        raise NotImplementedError

    def clip_sum(self, x: ArrayLike) -> NDArray[np.float64]:
        """Server side, streaming: the clipped sum of one batch of users' vectors (no noise yet)."""
        total: NDArray[np.float64] = self._project(as_float_batch(x, self.d, self.name)).sum(axis=0)
        return total

    def release(self, clipped_sum: ArrayLike, n: int, rng: np.random.Generator) -> Release:
        """Add the noise once to a clipped sum over ``n`` users → {"noisy_sum": (d,), "n": n}."""
        rng = check_rng(rng)
        s = as_float_array(clipped_sum, self.name).reshape(-1)
        if s.shape != (self.d,) or not np.all(np.isfinite(s)):
            raise InputError(f"{self.name}: the clipped sum must be {self.d} finite numbers")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InputError(f"{self.name}: n must be a positive integer")
        return {"noisy_sum": s + self._noise(rng), "n": int(n)}

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> Release:
        """Users' vectors (users, d) → the release {"noisy_sum": (d,), "n": users} (server side: clip each
        user's contribution, sum, add the noise once)."""
        rng = check_rng(rng)
        xs = as_float_batch(x, self.d, self.name)
        return self.release(self._project(xs).sum(axis=0), xs.shape[0], rng)

    def estimate(self, reports: Release) -> NDArray[np.float64]:
        """(Σ clip(x_i) + noise)/n: unbiased for the mean of the clipped vectors."""
        if not isinstance(reports, dict) or "noisy_sum" not in reports or "n" not in reports:
            raise InputError(f"{self.name}: reports must be the release {{'noisy_sum': [...], 'n': users}}")
        s = as_float_array(reports["noisy_sum"], self.name).reshape(-1)
        n = reports["n"]
        if s.shape != (self.d,) or not np.all(np.isfinite(s)):
            raise InputError(f"{self.name}: 'noisy_sum' must be {self.d} finite numbers")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InputError(f"{self.name}: 'n' must be a positive integer")
        return s / int(n)


@register
class GaussianCentral(_Central):
    """Central Gaussian mechanism (trusted server; seeds 001, 003).

    The server clips each user's vector to ℓ2 norm ``clip``, sums, and adds N(0, σ²I) with
    σ = noise_multiplier · Δ, Δ = 2·clip under replace-one neighbours (the relation of the shuffle bounds;
    Δ = clip with ``neighbouring="add_remove"``). RDP curve α/(2·noise_multiplier²) per release
    (Mironov 2017, Prop. 7 / Table II); event {"mechanism": "gaussian", "noise_multiplier": σ/Δ, "count": T}.
    ``estimate`` divides the noisy sum by n: MSE d σ²/n² (plus clipping bias).
    """

    POSITION = 11
    name = "gaussian"
    description = "Central Gaussian mechanism on the clipped sum (trusted server)."
    source = (
        "Mironov 2017 (RDP of the Gaussian mechanism, α/(2σ²)); seeds 001 (Levy et al.) and 003 (Asi–Liu)"
    )
    PARAMETERS = {
        "noise_multiplier": Param(
            "number",
            "σ/Δ: noise standard deviation over the sensitivity",
            minimum=0.0,
            exclusive_minimum=True,
        ),
        "clip": Param(
            "number",
            "ℓ2 norm bound of each user's contribution",
            default=1.0,
            minimum=0.0,
            exclusive_minimum=True,
        ),
        "d": Param("integer", "dimension", default=1, minimum=1, maximum=D_MAX),
        "neighbouring": Param(
            "string",
            "neighbouring relation: 'replace' (Δ = 2·clip) or 'add_remove' (Δ = clip)",
            default="replace",
            choices=("replace", "add_remove"),
        ),
    }

    def _setup(self) -> None:
        """σ = noise_multiplier·Δ, Δ = 2·clip (replace-one) or clip (add/remove)."""
        self.noise_multiplier: float = self.params["noise_multiplier"]
        self.clip: float = self.params["clip"]
        self.d = self.params["d"]
        self.sensitivity = self._sensitivity(self.clip)
        self.sigma: float = self.noise_multiplier * self.sensitivity
        self.epsilon0 = None
        self.bits_per_report = None
        self.output_alphabet_size = None

    @property
    def message_epsilons(self) -> list[float]:
        """No local messages (a central release)."""
        return []

    def internals(self) -> dict[str, Any]:
        return {"sensitivity": self.sensitivity, "sigma": self.sigma}

    def events(self, n: int | None = None, k: int | None = None, count: int = 1) -> list[Event]:
        # the accountant's events are replace-one (a user's whole data replaced): σ over Δ₂ = 2·clip,
        # whichever relation the noise was calibrated for (add/remove noise is charged at half its multiplier)
        """One ``gaussian`` event with noise multiplier σ/Δ₂, Δ₂ = 2·clip the replace-one sensitivity:
        RDP α/(2(σ/Δ₂)²) per release (Mironov 2017 Prop. 7)."""
        return self._central_events(
            n, k, count, GaussianEvent(noise_multiplier=float(self.sigma / (2.0 * self.clip)))
        )

    def _project(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """ℓ2 clipping to ``clip``."""
        return _project_l2(x, self.clip)

    def _noise(self, rng: np.random.Generator) -> NDArray[np.float64]:
        """N(0, σ²I_d)."""
        return rng.normal(0.0, self.sigma, size=self.d)

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """E‖x̂ − x̄‖² = d·σ²/n², plus the clipping bias ‖mean(clip(x)) − mean(x)‖² for given inputs."""
        if x is None:
            return self.d * self.sigma**2 / n_from(n, None) ** 2
        raw = as_float_batch(x, self.d, self.name)
        xs = _project_l2(raw, self.clip)
        n = xs.shape[0]
        bias = xs.mean(axis=0) - raw.mean(axis=0)
        return float(self.d * self.sigma**2 / n**2 + bias @ bias)


@register
class LaplaceCentral(_Central):
    """Central Laplace mechanism (trusted server; seed 001's private range / winsorized mean).

    The server clips each user's vector to ℓ1 norm ``clip``, sums, and adds Lap(b)^d with
    b = scale · Δ (Δ = 2·clip under replace-one, clip under add/remove): pure (1/scale)-DP per release,
    exact RDP curve of Mironov 2017 Prop. 6 at λ = b/Δ; event {"mechanism": "laplace", "scale": b/Δ,
    "count": T}. ``epsilon0`` is the pure-DP level 1/scale of one release. MSE 2 d b²/n².
    """

    POSITION = 12
    name = "laplace"
    description = "Central Laplace mechanism on the clipped sum (trusted server)."
    source = "Mironov 2017 Prop. 6 (RDP of the Laplace mechanism); seed 001 (Levy et al.)"
    PARAMETERS = {
        "scale": Param(
            "number", "b/Δ: Laplace scale over the ℓ1 sensitivity (pure ε = 1/scale)", minimum=1.0 / EPS0_MAX
        ),
        "clip": Param(
            "number",
            "ℓ1 norm bound of each user's contribution",
            default=1.0,
            minimum=0.0,
            exclusive_minimum=True,
        ),
        "d": Param("integer", "dimension", default=1, minimum=1, maximum=D_MAX),
        "neighbouring": Param(
            "string",
            "neighbouring relation: 'replace' (Δ = 2·clip) or 'add_remove' (Δ = clip)",
            default="replace",
            choices=("replace", "add_remove"),
        ),
    }

    epsilon0: float

    def _setup(self) -> None:
        """b = scale·Δ, Δ = 2·clip (replace-one) or clip (add/remove); pure ε = 1/scale per release."""
        self.scale: float = self.params["scale"]
        self.clip: float = self.params["clip"]
        self.d = self.params["d"]
        self.sensitivity = self._sensitivity(self.clip)
        self.b: float = self.scale * self.sensitivity
        self.epsilon0 = 1.0 / self.scale
        self.bits_per_report = None
        self.output_alphabet_size = None

    @property
    def message_epsilons(self) -> list[float]:
        """No local messages (a central release)."""
        return []

    def internals(self) -> dict[str, Any]:
        return {"sensitivity": self.sensitivity, "laplace_b": self.b, "pure_epsilon": 1.0 / self.scale}

    def events(self, n: int | None = None, k: int | None = None, count: int = 1) -> list[Event]:
        # replace-one events: b over Δ₁ = 2·clip (see GaussianCentral.events)
        """One ``laplace`` event with scale b/Δ₁, Δ₁ = 2·clip the replace-one sensitivity: the exact
        Laplace RDP curve (Mironov 2017 Prop. 6) per release."""
        return self._central_events(n, k, count, LaplaceEvent(scale=float(self.b / (2.0 * self.clip))))

    def _project(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """ℓ1 clipping (radial scaling) to ``clip``."""
        return _project_l1(x, self.clip)

    def _noise(self, rng: np.random.Generator) -> NDArray[np.float64]:
        """Lap(b)^d."""
        return rng.laplace(0.0, self.b, size=self.d)

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """E‖x̂ − x̄‖² = 2d·b²/n², plus the clipping bias ‖mean(clip(x)) − mean(x)‖² for given inputs."""
        if x is None:
            return 2.0 * self.d * self.b**2 / n_from(n, None) ** 2
        raw = as_float_batch(x, self.d, self.name)
        xs = _project_l1(raw, self.clip)
        n = xs.shape[0]
        bias = xs.mean(axis=0) - raw.mean(axis=0)
        return float(2.0 * self.d * self.b**2 / n**2 + bias @ bias)
