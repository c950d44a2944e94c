"""Winsorized first-order optimization — Levy et al., "Learning with User-Level Privacy" (NeurIPS
2021), Algorithm 3 and Theorem 3: a run planner and the projected-SGD runner.

Every user takes part in all T steps (full batch: no sampling, hence no amplification). Step t:
each user's average gradient g_u = (1/m)Σ_j ∇ℓ(θ_t; z_uj) (clipped to ℓ2 norm G, the bound the
analysis assumes), then the high-dimensional winsorized mean (:class:`WinsorizedMean`, Alg. 2) of
the n user gradients, then θ_{t+1} = Π_Θ(θ_t − η·ḡ_t) (Θ an ℓ2 ball of radius R, or R^d); the
output is the last iterate or the average (Alg. 3's Aggregate; Algorithm 7 is not in the source,
so projected SGD is a reconstruction). Updates, projections and averaging are post-processing.

Privacy: the run is 2·d'·T pure releases on the same users — per step and rotated coordinate an
exponential mechanism at ε''/2 and a Laplace mechanism of scale 2/ε'' (relative to its sensitivity):
events ``exponential`` (ε''/2, count d'·T) and ``laplace`` (2/ε'', count d'·T), composed by the
accountant. Paper calibration (Alg. 3 / Thm 3, advanced composition twice, for ε ≤ 1):
ε' = ε/(2√(2T·log(2/δ))), δ' = δ/(2T), ε'' = ε'/√(8d'·log(1/δ')); tight calibration: the largest ε''
whose events meet (ε, δ) with the accountant — about 50× less noise (the source's own comparison).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from accountant.events import MAX_USERS, Event

from ._base import D_MAX, InputError, Param, ParameterError, check_rng
from ._central import CentralMechanism
from .catalog import register
from .hadamard import next_power_of_two
from .winsorized import WinsorizedMean, rotated_tau

#: ``grad_fn(theta, user_data)`` → that user's average gradient, shape (d,)
GradFn = Callable[[NDArray[np.float64], Any], ArrayLike]


@dataclass
class SGDResult:
    """A finished run: ``theta`` (the output), ``iterates`` (θ_0..θ_T), ``gradients`` (the private
    mean gradients ḡ_t), ``steps`` run."""

    theta: NDArray[np.float64]
    iterates: list[NDArray[np.float64]] = field(default_factory=list)
    gradients: list[NDArray[np.float64]] = field(default_factory=list)
    steps: int = 0


def project_l2_ball(theta: NDArray[np.float64], radius: float | None) -> NDArray[np.float64]:
    """Π_Θ(θ): the Euclidean projection onto the ℓ2 ball Θ of radius R, θ·min(1, R/‖θ‖₂) (θ itself
    when ``radius`` is None: Θ = R^d)."""
    if radius is None:
        return theta
    nrm = float(np.linalg.norm(theta))
    return theta if nrm <= radius else theta * (radius / nrm)


def clip_rows_l2(g: NDArray[np.float64], bound: float) -> NDArray[np.float64]:
    """Each row g_u scaled to ℓ2 norm at most G: g_u·min(1, G/‖g_u‖₂) (the gradient bound Levy et al.
    Thm 3 assume; rows of norm 0 are left at 0)."""
    nrm = np.linalg.norm(g, axis=1)
    scale = np.minimum(1.0, bound / np.maximum(nrm, 1e-300))
    out: NDArray[np.float64] = g * scale[:, None]
    return out


@register
class WinsorizedSGD(CentralMechanism):
    """Levy et al. Alg. 3 as a planner: (ε, δ, T) → per-step parameters and the run's events
    (:meth:`plan`), and a runner (:meth:`run`) for projected SGD with a user-level private gradient.

    ``epsilon`` is ε'' — the budget of one rotated coordinate's 1-D winsorized mean at one step. The
    catalog's ``randomize`` runs ONE step's private mean gradient on per-user gradients (n, d)."""

    POSITION = 16
    name = "winsorized_sgd"
    description = (
        "Central user-level projected SGD: each step's mean of the users' clipped gradients by the "
        "high-dimensional winsorized mean (private range + Laplace per rotated coordinate); every user in every step."
    )
    source = "Levy et al. 2021 (seed 001) Algorithm 3, Theorem 3, Proposition 1 (Algorithm 7 reconstructed as projected SGD)"
    PARAMETERS = {
        "epsilon": Param(
            "number",
            "ε'' of one rotated coordinate's 1-D winsorized mean at one step",
            minimum=0.0,
            exclusive_minimum=True,
            maximum=50.0,
        ),
        "T": Param("integer", "steps (every user in every step)", minimum=1, maximum=10**7),
        "d": Param("integer", "number of parameters", minimum=1, maximum=D_MAX),
        "G": Param(
            "number",
            "ℓ2 bound of a user's average gradient (clipped to it)",
            minimum=0.0,
            exclusive_minimum=True,
        ),
        "tau": Param(
            "number",
            "concentration radius τ of the users' gradients (Prop. 1: ~σ√(d/m)·logs; a parameter)",
            minimum=0.0,
            exclusive_minimum=True,
        ),
        "n": Param("integer", "number of users", minimum=1, maximum=MAX_USERS),
        "gamma": Param(
            "number",
            "failure probability in τ''",
            default=1e-3,
            minimum=0.0,
            exclusive_minimum=True,
            maximum=1.0,
        ),
        "tau_rotated": Param(
            "number",
            "the rotated radius τ'' itself (default 10τ·√(log(d'n/γ)/d'))",
            default=None,
            minimum=0.0,
            exclusive_minimum=True,
            nullable=True,
        ),
        "width_factor": Param(
            "number",
            "interval width over τ'' (4: the paper's, which can clip a τ''-cluster split across a bin edge; 6: never — Thm 1 of winsorized_mean holds at 6, not 4)",
            default=4.0,
            minimum=0.0,
            exclusive_minimum=True,
        ),
        "learning_rate": Param("number", "step size η", default=0.1, minimum=0.0, exclusive_minimum=True),
        "radius": Param(
            "number",
            "radius R of the ℓ2 ball Θ (None: no projection)",
            default=None,
            minimum=0.0,
            exclusive_minimum=True,
            nullable=True,
        ),
        "aggregate": Param(
            "string",
            "output: the last iterate or the average of θ_1..θ_T",
            default="last",
            choices=("last", "average"),
        ),
        "rotation_seed": Param(
            "integer",
            "seed of the public random signs, the same at every step (default: fresh signs per step from the "
            "run's generator)",
            default=None,
            minimum=0,
            nullable=True,
        ),
    }

    def _setup(self) -> None:
        """The per-step :class:`WinsorizedMean` of the clipped gradients (``norm='l2'``, B = G) at ε'' per
        rotated coordinate, with τ'' given or :func:`rotated_tau` (d > 1)."""
        p = self.params
        self.epsilon: float = p["epsilon"]
        self.T: int = p["T"]
        self.d: int = p["d"]
        self.G: float = p["G"]
        self.D = 1 if self.d == 1 else next_power_of_two(self.d)
        tau_r = (
            p["tau_rotated"]
            if p["tau_rotated"] is not None
            else rotated_tau(p["tau"], self.D, p["n"], p["gamma"])
        )
        self.mean = WinsorizedMean(
            epsilon=self.epsilon,
            tau=p["tau"],
            B=self.G,
            d=self.d,
            width_factor=p["width_factor"],
            norm="l2",
            n=p["n"],
            gamma=p["gamma"],
            tau_rotated=tau_r if self.d > 1 else None,
            rotation_seed=p["rotation_seed"],
        )

    def internals(self) -> dict[str, Any]:
        return {**self.mean.internals(), "steps": self.T, "releases_per_step": 2 * self.D}

    def run_events(self, count: int) -> list[Event]:
        """T steps per use, each the d' coordinates' releases of the per-step winsorized mean."""
        return self.mean.run_events(int(count) * self.T)

    def plan(self, n: int | None = None) -> dict[str, Any]:
        """Per-step parameters and the run's events: ε'' per coordinate, its split, τ'', the interval
        width, the Laplace scale at n users, the noise variance of one step's mean gradient."""
        n = self.params["n"] if n is None else n
        return {
            "steps": self.T,
            "rotated_dimension": self.D,
            "epsilon_per_coordinate": self.epsilon,
            "range_epsilon": self.epsilon / 2.0,
            "laplace_epsilon": self.epsilon / 2.0,
            "tau_rotated": self.mean.tau_r,
            "interval_width": self.mean.width,
            "laplace_scale": self.mean.laplace_scale(n),
            "gradient_noise_variance": self.mean.mse(n),
            "range_failure_per_step": self.mean.failure_probability(n),
            "events": self.events(),
        }

    @classmethod
    def paper_params(cls, epsilon: float, delta: float, count: int, params: dict[str, Any]) -> dict[str, Any]:
        """Alg. 3: ε' = ε/(2√(2T·log(2/δ))), δ' = δ/(2T); Alg. 2 inside: ε'' = ε'/√(8d'·log(1/δ')) (count
        runs: T·count steps)."""
        T = int(params["T"]) * count
        d = int(params["d"])
        D = 1 if d == 1 else next_power_of_two(d)
        e1 = epsilon / (2.0 * math.sqrt(2.0 * T * math.log(2.0 / delta)))
        d1 = delta / (2.0 * T)
        return {"epsilon": e1 / math.sqrt(8.0 * D * math.log(1.0 / d1))}

    @staticmethod
    def paper_step(epsilon: float, delta: float, T: int) -> tuple[float, float]:
        """(ε', δ') of Alg. 3 line 1."""
        return epsilon / (2.0 * math.sqrt(2.0 * T * math.log(2.0 / delta))), delta / (2.0 * T)

    # ------------------------------------------------------------------------------------------ runner
    def private_gradient(self, grads: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        """One step's private mean of the users' gradients (n, d), after clipping each to ℓ2 norm G."""
        g = np.asarray(grads, dtype=np.float64)
        if g.ndim != 2 or g.shape[1] != self.d or not np.all(np.isfinite(g)):
            raise InputError(f"{self.name}: per-user gradients must be a finite (users, {self.d}) array")
        r = self.mean.release(clip_rows_l2(g, self.G), rng)
        return np.atleast_1d(np.asarray(r["mean"], dtype=float))

    def run(
        self,
        grad_fn: GradFn,
        users: Sequence[Any],
        theta0: ArrayLike,
        rng: np.random.Generator,
        callback: Callable[[int, NDArray[np.float64]], None] | None = None,
    ) -> SGDResult:
        """Projected SGD for T steps. ``grad_fn(theta, user_data)`` → that user's average gradient (d,);
        ``users``: the n users' data (n must equal the planned n). ``callback(t, theta)`` after each
        step. Charge ``events()`` before calling (the run costs them whatever it does)."""
        rng = check_rng(rng)
        if len(users) != self.params["n"]:
            raise ParameterError(f"the run was planned for n = {self.params['n']} users, got {len(users)}")
        theta = np.asarray(theta0, dtype=np.float64).copy()
        if theta.shape != (self.d,):
            raise InputError(f"theta0 must have shape ({self.d},)")
        res = SGDResult(theta=theta, iterates=[theta.copy()])
        eta, R = self.params["learning_rate"], self.params["radius"]
        for t in range(self.T):
            grads = np.stack([np.asarray(grad_fn(theta, u), dtype=np.float64) for u in users])
            gbar = self.private_gradient(grads, rng)
            theta = project_l2_ball(theta - eta * gbar, R)
            res.iterates.append(theta.copy())
            res.gradients.append(gbar)
            res.steps = t + 1
            if callback is not None:
                callback(t + 1, theta)
        res.theta = np.mean(res.iterates[1:], axis=0) if self.params["aggregate"] == "average" else theta
        return res

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> dict[str, Any]:
        """One step's private mean gradient of per-user gradients x (n, d)."""
        rng = check_rng(rng)
        return {"gradient": self.private_gradient(np.asarray(x, dtype=np.float64).reshape(-1, self.d), rng)}

    def estimate(self, reports: object) -> float | NDArray[np.float64]:
        """The released mean gradient (a float for d = 1)."""
        if not isinstance(reports, dict) or "gradient" not in reports:
            raise InputError(f"{self.name}: reports must be {{'gradient': [...]}}")
        g = np.asarray(reports["gradient"], dtype=np.float64).reshape(-1)
        return float(g[0]) if self.d == 1 else g

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """One step's gradient-noise variance d'·2b² (b the per-coordinate Laplace scale at n users)."""
        del x  # the same for every input
        return self.mean.mse(self.params["n"] if n is None else n)

    def theorem3_convex_rate(self, R: float, H: float, epsilon: float, m: int) -> float:
        """Thm 3 (i) without its hidden constants and logs: R²H/T + R·G̃·√d/(n√m·ε), G̃ = √d·τ·√m
        (τ ≈ G̃/√m); the source prints n√(mε) (a typo for n√m·ε)."""
        n: int = self.params["n"]
        tau: float = self.params["tau"]
        d = self.d
        g_tilde = tau * math.sqrt(m)
        return R * R * H / self.T + R * g_tilde * math.sqrt(d) / (n * math.sqrt(m) * epsilon)


__all__ = ["SGDResult", "WinsorizedSGD", "clip_rows_l2", "project_l2_ball"]
