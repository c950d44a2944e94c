"""Mean estimation of bounded vectors: ℓ1 ball (Alg. 3.4.1), ℓ∞ box (Alg. 3.5.1–3.5.2), ℓ2 ball (Alg. 3.6.1–3.6.2)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from accountant.events import MAX_USERS

from ._base import (
    D_MAX,
    InputError,
    Mechanism,
    Param,
    ParameterError,
    ReportArrays,
    ReportArraysLike,
    as_float_batch,
    check_indices,
    check_rng,
    eps0_param,
    n_from,
    report_pair,
    rr_flip_probability,
    rr_variance,
    weighted_counts,
)
from .binary import block_layout, check_slot_reports
from .catalog import register
from .hadamard import fwht, hadamard_coefficients, log2_ceil, next_power_of_two

LEVELS_MAX = 24


@register
class L1Ball(Mechanism):
    """ℓ1-ball mean estimation R^{ℓ1}_{ε0} — thesis Algorithm 3.4.1, Lemma 3.4.1, Theorem 3.4.1.

    Client with ‖x‖₁ ≤ r₁ (x zero-padded to D = 2^⌈log₂ d⌉): y = H x/√D, pick j uniformly and send
    (j, sign) with P(sign = +1) = ½ + √D·y_j/(2 r₁ c), c = (e^{ε0}+1)/(e^{ε0}−1); the report stands for
    z = sign · r₁ c H(j). Exactly ε0-LDP (the ratio e^{ε0} is attained at x = ±r₁ e_i). Correction: the
    extracted text of eq. (3.13) is garbled, and the prose prints the factor (e^{ε0}+1)/ε0; the
    algorithm's c = (e^{ε0}+1)/(e^{ε0}−1) is the one that makes z unbiased.
    The client needs only the sampled coefficient (H x)_j, computed in O(D) through H_D = H_a ⊗ H_b
    (``hadamard_coefficients``) rather than the whole transform.
    Server: x̂ = (1/n) Σ z_i computed as r₁ c H S / n with S_j the sum of signs at index j (one fast
    Walsh–Hadamard transform). Exact MSE (1/n²) Σ_i (r₁² c² d − ‖x_i‖²) ≤ r₁² c² d/n (Lemma 3.4.1).
    Inputs with ‖x‖₁ > r₁ are scaled down onto the sphere (the guarantee holds; the estimate is biased).
    Bits: log₂ D (index, private randomness) + 1 (sign).
    """

    POSITION = 4
    name = "l1"
    description = "Mean of vectors in the ℓ1 ball of radius r1: one Hadamard coefficient, one signed bit."
    source = "Girgis thesis, Algorithm 3.4.1, Lemma 3.4.1, Theorem 3.4.1"
    PARAMETERS = {
        "epsilon0": eps0_param(),
        "d": Param("integer", "dimension (padded to a power of two internally)", minimum=1, maximum=D_MAX),
        "r1": Param("number", "ℓ1 radius of the inputs", default=1.0, minimum=0.0, exclusive_minimum=True),
    }

    epsilon0: float
    bits_per_report: int
    output_alphabet_size: int

    def _setup(self) -> None:
        """D = 2^⌈log₂ d⌉ and c = (e^{ε0}+1)/(e^{ε0}−1); ⌈log₂ D⌉ + 1 bits per report."""
        self.epsilon0 = self.params["epsilon0"]
        self.d: int = self.params["d"]
        self.r1: float = self.params["r1"]
        self.D = next_power_of_two(self.d)
        e = math.exp(self.epsilon0)
        self.c = (e + 1.0) / (e - 1.0)
        self.bits_per_report = log2_ceil(self.D) + 1
        self.output_alphabet_size = 2 * self.D

    def internals(self) -> dict[str, Any]:
        return {"hadamard_dimension": self.D, "c": self.c, "report_magnitude": self.r1 * self.c}

    def _project(self, x: ArrayLike) -> NDArray[np.float64]:
        """Inputs (batch, d); rows with ‖x‖₁ > r₁ scaled onto the sphere, x·r₁/‖x‖₁."""
        xs = as_float_batch(x, self.d, self.name)
        norms = np.abs(xs).sum(axis=1)
        over = norms > self.r1
        if np.any(over):
            xs = xs.copy()
            xs[over] *= (self.r1 / norms[over])[:, None]
        return xs

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> ReportArrays:
        """Vectors (batch, d) → {"index": (batch,) Hadamard index j, "sign": (batch,) ±1 int8}."""
        rng = check_rng(rng)
        xs = self._project(x)
        n: int = xs.shape[0]
        if self.d == self.D:
            xp = xs
        else:
            xp = np.zeros((n, self.D))
            xp[:, : self.d] = xs
        j = rng.integers(0, self.D, size=n)
        hx_j = hadamard_coefficients(xp, j)  # (H x)_j = √D y_j, only the sampled coefficient: O(D)
        p_plus = 0.5 + hx_j / (2.0 * self.r1 * self.c)
        sign = np.where(rng.random(n) < p_plus, 1, -1).astype(np.int8)
        return {"index": j, "sign": sign}

    def estimate(self, reports: ReportArraysLike) -> NDArray[np.float64]:
        """x̂ = r₁c·H S/n, S_j the sum of the signs reported at index j: the mean of the reports'
        z_i = sign_i·r₁c·H(j_i), unbiased (Lemma 3.4.1), by one fast Walsh–Hadamard transform."""
        j, sign = check_index_sign(reports, self.D, self.name)
        s = weighted_counts(j, sign.astype(np.float64), self.D)
        n: int = j.shape[0]
        return fwht(s)[: self.d] * (self.r1 * self.c / n)

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """Exact E‖x̂ − x̄‖² = (1/n²) Σ_i (r₁² c² d − ‖x_i‖²); without x its supremum r₁² c² d / n."""
        per = (self.r1 * self.c) ** 2 * self.d
        if x is None:
            return per / n_from(n, None)
        xs = self._project(x)
        n = xs.shape[0]
        return float((n * per - np.sum(xs * xs)) / n**2)


def check_index_sign(reports: object, size: int, what: str) -> tuple[NDArray[np.int64], NDArray[np.int8]]:
    """Signed-coordinate reports {"index": j, "sign": ±1} (flattened): equal-length non-empty arrays,
    integer indices in 0..size − 1 and signs ±1."""
    j, sign = report_pair(reports, ("index", "sign"), what)
    j, sign = j.reshape(-1), sign.reshape(-1)
    if j.shape != sign.shape or j.size == 0:
        raise InputError(f"{what}: 'index' and 'sign' must be non-empty arrays of the same length")
    if not (np.issubdtype(j.dtype, np.number) and np.issubdtype(sign.dtype, np.number)):
        raise InputError(f"{what}: 'index' and 'sign' must be numeric")
    check_indices(j, size, what)
    if not np.all((sign == 1) | (sign == -1)):
        raise InputError(f"{what}: 'sign' entries must be +1 or -1")
    return j.astype(np.int64), sign.astype(np.int8)


def level_split(m: int) -> NDArray[np.float64]:
    """Budget fractions f_1..f_m of the ℓ∞ levels (proof of Theorem 3.5.1, corrected).

    f_k ∝ 4^{−k/3} for k < m (the MSE-optimal split for level weights 2^{−k}), and the last level —
    whose bit u carries weight 2^{−(m−1)}, the same as level m−1 — gets the weight of level m−1,
    4^{−(m−1)/3}. Correction: Algorithm 3.5.1 prints 4^{−(m+1)/3} for it (inconsistent with step (e) of
    eq. 3.31, which uses 4^{−(m−1)/3})."""
    w = np.array([4.0 ** (-k / 3.0) for k in range(1, m)] + [4.0 ** (-(m - 1) / 3.0)])
    total: float = w.sum()
    return w / total


@register
class LinfBox(Mechanism):
    """ℓ∞-box mean estimation R^{ℓ∞}_{v,m,s} — thesis Algorithm 3.5.1 (client), 3.5.2 (server), Thm 3.5.1.

    Client with ‖x‖∞ ≤ r∞: z = (x + r∞)/(2r∞) ∈ [0,1]^d is written as m−1 binary digits b^(1..m−1) plus
    an unbiased last bit u = Bern(2^{m−1}(z − z^{(m−1)})) (§3.5.1), so z̃ = Σ_{k<m} 2^{−k} b^(k) + 2^{−(m−1)} u
    is unbiased. Each of the m binary vectors goes through R^Bin with s slots at budget v_k = ε0·f_k
    (``level_split``: f_k ∝ 4^{−k/3}, last level weighted like level m−1), i.e. per-slot 2RR at v_k/s with
    exact flip probability 1/(1+e^{v_k/s}). The report is m·s messages; the whole report is exactly
    ε0-LDP (ratio attained between x = −r∞·1 and x = +r∞·1). The first digit is clamped at z = 1
    (there ⌊2z⌋ = 2 is not a bit: z = 1 is coded as 0.11…1 with u = 1) — the digits are computed as
    q = min(⌊2^{m−1} z⌋, 2^{m−1} − 1). Inputs outside the box are clipped to it.

    Only the digits at the sampled coordinates are computed (u is drawn lazily there) — the same
    distribution as Algorithm 3.5.1, in O(m·s) per client after reading x.

    Server: x̂ = 2r∞ ẑ − r∞ with ẑ = Σ_k w_k b̂^(k) (w_k = 2^{−k}, w_m = 2^{−(m−1)}). Exact MSE
    4r∞²/n² Σ_i [Σ_{k<m} 4^{−k}(a d V_k + (a−1)‖b_i^(k)‖²) + 4^{−(m−1)}(a d V_m + Σ_j (a ρ_ij − ρ_ij²))]
    with V_k = p_k(1−p_k)/(1−2p_k)², ρ = 2^{m−1}(z − z^{(m−1)}), a = ⌈d/s⌉.
    Accounting: ``events`` is m·s shuffle events (one shuffler per level and slot), ε0 = v_k/s each.
    """

    POSITION = 5
    name = "linf"
    description = (
        "Mean of vectors in the ℓ∞ box of radius r_inf: m-level unbiased binary expansion, each "
        "level through binary-vector randomized response with s slots."
    )
    source = "Girgis thesis, Algorithms 3.5.1–3.5.2, Theorem 3.5.1, §3.5.1 (corrected last-level weight)"
    PARAMETERS = {
        "epsilon0": eps0_param("local privacy level ε0 of one whole report (sum over the m·s messages)"),
        "d": Param("integer", "dimension", minimum=1, maximum=D_MAX),
        "m": Param(
            "integer",
            "quantization levels (m−1 binary digits + 1 unbiased bit)",
            default=1,
            minimum=1,
            maximum=LEVELS_MAX,
        ),
        "s": Param("integer", "slots per level (coordinates sent per level)", default=1, minimum=1),
        "r_inf": Param("number", "ℓ∞ radius of the inputs", default=1.0, minimum=0.0, exclusive_minimum=True),
    }

    epsilon0: float
    bits_per_report: int
    output_alphabet_size: int

    def _setup(self) -> None:
        """The box's calibration from the parameters (:meth:`_init_box`)."""
        self._init_box(
            self.params["epsilon0"],
            self.params["d"],
            self.params["m"],
            self.params["s"],
            self.params["r_inf"],
        )

    def _init_box(self, epsilon0: float, d: int, m: int, s: int, r_inf: float) -> None:
        """The ℓ∞ mechanism's calibration: blocks of a = ⌈d/s⌉, level budgets ε0·f_k (``level_split``),
        per-slot budgets ε0·f_k/s with exact 2RR flip probabilities 1/(1+e^{ε0·f_k/s}), and level
        weights w_k = 2^{−k} (k < m), w_m = 2^{−(m−1)} (Algorithm 3.5.1)."""
        self.epsilon0 = epsilon0
        self.d, self.m, self.r_inf = d, m, r_inf
        self.a, self.s = block_layout(d, s)
        self.level_fractions = level_split(m)
        self.level_epsilons = epsilon0 * self.level_fractions
        self.slot_epsilons = self.level_epsilons / self.s
        self.p = np.array([rr_flip_probability(e) for e in self.slot_epsilons])
        if np.any(self.p <= 0.0):
            raise ParameterError("epsilon0 is too large for the 2RR flip probability to be representable")
        self.weights = np.array([2.0 ** (-k) for k in range(1, m)] + [2.0 ** (-(m - 1))])
        self.bits_per_report = m * self.s * (log2_ceil(self.a) + 1)
        self.output_alphabet_size = (2 * self.a) ** (m * self.s)

    @property
    def message_epsilons(self) -> list[float]:
        """m·s messages: for each level k, s slots at ε0·f_k/s each."""
        return [float(e) for e in self.slot_epsilons for _ in range(self.s)]

    def internals(self) -> dict[str, Any]:
        return {
            "block_size": self.a,
            "level_epsilons": self.level_epsilons.tolist(),
            "slot_epsilons": self.slot_epsilons.tolist(),
            "flip_probabilities": self.p.tolist(),
            "level_weights": self.weights.tolist(),
        }

    # digits of z at given positions ----------------------------------------------------------------
    def _digits(self, z: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """(q, ρ) for z ∈ [0, 1]: q = min(⌊2^{m−1}z⌋, 2^{m−1} − 1), whose bits are the m−1 binary digits of
        z, and ρ = clip(2^{m−1}z − q, 0, 1), the probability of the unbiased last bit u (§3.5.1)."""
        scale = float(2 ** (self.m - 1))
        t = z * scale
        q = np.minimum(np.floor(t), scale - 1).astype(np.int64)
        rho = np.clip(t - q, 0.0, 1.0)
        return q, rho

    def _randomize_box(self, x: NDArray[np.float64], rng: np.random.Generator) -> ReportArrays:
        """ℓ∞ reports of x (batch, d), Algorithm 3.5.1 computed at the sampled coordinates only: per
        level and slot a uniform index in the block, that coordinate's digit (at the last level
        u ~ Bern(ρ)), flipped with the level's probability p_k."""
        n = x.shape[0]
        m, s, a, d = self.m, self.s, self.a, self.d
        idx = rng.integers(0, a, size=(n, m, s), dtype=np.int32)
        coords = idx + (np.arange(s) * a)[None, None, :]
        valid = coords < d
        rows = np.arange(n)[:, None, None]
        xv = x[rows, np.minimum(coords, d - 1)]
        z = (np.clip(xv, -self.r_inf, self.r_inf) + self.r_inf) / (2.0 * self.r_inf)
        z = np.where(valid, z, 0.0)  # padding coordinates carry z = 0 (all digits 0, u = 0)
        q, rho = self._digits(z)
        bits = np.empty((n, m, s), dtype=np.uint8)
        for k in range(1, m):  # level k digit of the sampled coordinate
            bits[:, k - 1, :] = (q[:, k - 1, :] >> (m - 1 - k)) & 1
        bits[:, m - 1, :] = rng.random((n, s)) < rho[:, m - 1, :]
        flips = rng.random((n, m, s)) < self.p[None, :, None]
        return {"index": idx, "bit": bits ^ flips.astype(np.uint8)}

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> ReportArrays:
        """Vectors (batch, d) → {"index": (batch, m, s) index in block, "bit": (batch, m, s) uint8}."""
        rng = check_rng(rng)
        return self._randomize_box(as_float_batch(x, self.d, self.name), rng)

    def _estimate_z(self, reports: ReportArraysLike) -> NDArray[np.float64]:
        """ẑ = Σ_k w_k·b̂^(k), b̂^(k) the unbiased binary-vector estimate of level k (Algorithm 3.5.2)."""
        idx, bit = check_slot_reports(reports, (self.m, self.s), self.a, self.name)
        n: int = idx.shape[0]
        coords = idx + (np.arange(self.s) * self.a)[None, None, :]
        coef = (self.weights * self.a / (1.0 - 2.0 * self.p))[None, :, None]
        vals = coef * (bit.astype(np.float64) - self.p[None, :, None])
        tot = weighted_counts(coords.ravel(), vals.ravel(), self.a * self.s)
        return tot[: self.d] / n

    def estimate(self, reports: ReportArraysLike) -> NDArray[np.float64]:
        """x̂ = 2r∞·ẑ − r∞ (Algorithm 3.5.2): unbiased for the mean of the inputs clipped to the box."""
        return 2.0 * self.r_inf * self._estimate_z(reports) - self.r_inf

    def _per_client_z_error(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        """E‖ẑ_i − z_i‖² for each row of z (batch, d) — see the class docstring."""
        a, d, m = self.a, self.d, self.m
        v = np.array([rr_variance(p) for p in self.p])
        q, rho = self._digits(z)
        out = np.zeros(z.shape[0])
        for k in range(1, m):
            ones = ((q >> (m - 1 - k)) & 1).sum(axis=1)
            out += 4.0 ** (-k) * (a * d * v[k - 1] + (a - 1) * ones)
        out += 4.0 ** (-(m - 1)) * (a * d * v[m - 1] + (a * rho - rho * rho).sum(axis=1))
        return out

    def _sup_z_error(self) -> float:
        """sup over z ∈ [0, 1]^d of E‖ẑ_i − z_i‖² (class docstring): every digit vector has ‖b^(k)‖² ≤ d,
        and Σ_j (aρ_j − ρ_j²) ≤ d·max_ρ (aρ − ρ²) = d(a − 1) for a ≥ 2 (at ρ = 1), d/4 for a = 1 (ρ = ½)."""
        a, d, m = self.a, self.d, self.m
        v = np.array([rr_variance(p) for p in self.p])
        tot = sum(4.0 ** (-k) * (a * d * v[k - 1] + (a - 1) * d) for k in range(1, m))
        g = (a - 1.0) if a >= 2 else 0.25
        out: float = tot + 4.0 ** (-(m - 1)) * (a * d * v[m - 1] + d * g)
        return out

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """Exact E‖x̂ − x̄‖² for the given inputs (clipped to the box); without x its supremum over the box."""
        if x is None:
            return 4.0 * self.r_inf**2 * self._sup_z_error() / n_from(n, None)
        xs = as_float_batch(x, self.d, self.name)
        z = (np.clip(xs, -self.r_inf, self.r_inf) + self.r_inf) / (2.0 * self.r_inf)
        n = z.shape[0]
        return float(4.0 * self.r_inf**2 * self._per_client_z_error(z).sum() / n**2)


@register
class L2Ball(LinfBox):
    """ℓ2-ball mean estimation R^{ℓ2}_{v,m,s} — thesis Algorithm 3.6.1 (client), 3.6.2 (server), Thm 3.6.1.

    A shared random rotation U = H·D/√D' (D' = 2^⌈log₂ d⌉, x zero-padded; D = diag of random signs drawn
    from the public ``rotation_seed`` — change it every round) maps ‖x‖₂ ≤ r₂ into the ℓ∞ box of radius
    r∞ = 10 r₂ √(log(n D'/β)/D') with probability ≥ 1 − β over the signs (Theorem 3.6.5); coordinates are
    clipped to [−r∞, r∞] and sent with the ℓ∞ mechanism (m levels, s slots, same accounting: m·s shuffle
    events). Correction: Algorithm 3.6.1 line 4 prints w = W x; it is w = U x. Server: x̂ = Uᵀ ŵ.
    Note |(Ux)_j| ≤ ‖x‖₂, so r_inf = r2 never clips; pass ``r_inf`` to override the thesis radius.

    Privacy: ε0-LDP for every input (post-processing of the ℓ∞ report of the clipped rotation); the ratio
    e^{ε0} is attained when r∞ ≤ r₂/√D'. MSE: exact (variance + clipping bias) for given inputs when d is a
    power of two (an upper bound otherwise); without inputs, the ℓ∞ supremum at r∞ (valid when nothing is
    clipped, i.e. w.p. ≥ 1 − β). Inputs with ‖x‖₂ > r₂ are scaled onto the sphere.
    """

    POSITION = 6
    name = "l2"
    description = (
        "Mean of vectors in the ℓ2 ball of radius r2: public random rotation (Hadamard × random "
        "signs), clipping to an ℓ∞ box, then the ℓ∞ mechanism."
    )
    source = "Girgis thesis, Algorithms 3.6.1–3.6.2, Theorems 3.6.1 and 3.6.5"
    PARAMETERS = {
        "epsilon0": eps0_param("local privacy level ε0 of one whole report (sum over the m·s messages)"),
        "d": Param(
            "integer", "dimension (padded to a power of two for the rotation)", minimum=1, maximum=D_MAX
        ),
        "m": Param(
            "integer", "quantization levels of the ℓ∞ stage", default=1, minimum=1, maximum=LEVELS_MAX
        ),
        "s": Param(
            "integer", "slots per level of the ℓ∞ stage (over the padded dimension)", default=1, minimum=1
        ),
        "r2": Param("number", "ℓ2 radius of the inputs", default=1.0, minimum=0.0, exclusive_minimum=True),
        "n": Param(
            "integer",
            "number of clients the clipping radius must cover (Theorem 3.6.5)",
            default=1_000_000,
            minimum=1,
            maximum=MAX_USERS,
        ),
        "beta": Param(
            "number",
            "failure probability of the clipping radius",
            default=0.01,
            minimum=0.0,
            exclusive_minimum=True,
            maximum=1.0,
        ),
        "rotation_seed": Param("integer", "public seed of the round's random signs D", default=0, minimum=0),
        "r_inf": Param(
            "number",
            "override the clipping radius r∞ (default: 10 r2 √(log(n d'/β)/d'))",
            default=None,
            minimum=0.0,
            exclusive_minimum=True,
            nullable=True,
        ),
    }

    def _setup(self) -> None:
        """r∞ = 10·r₂·√(log(n d'/β)/d') (Theorem 3.6.5) unless ``r_inf`` is given, the ℓ∞ box on the
        padded dimension d', and the public signs from ``rotation_seed``."""
        pr = self.params
        self.d_in: int = pr["d"]
        self.r2: float = pr["r2"]
        dp = next_power_of_two(self.d_in)
        self.r_inf_thesis = 10.0 * self.r2 * math.sqrt(math.log(pr["n"] * dp / pr["beta"]) / dp)
        r_inf = pr["r_inf"] if pr["r_inf"] is not None else self.r_inf_thesis
        self._init_box(pr["epsilon0"], dp, pr["m"], pr["s"], r_inf)
        self.signs = np.random.default_rng(pr["rotation_seed"]).choice(np.array([-1.0, 1.0]), size=dp)

    def internals(self) -> dict[str, Any]:
        out = super().internals()
        out.update({"rotated_dimension": self.d, "r_inf": self.r_inf, "r_inf_thesis": self.r_inf_thesis})
        return out

    def _project(self, x: ArrayLike) -> NDArray[np.float64]:
        """Inputs (batch, d); rows with ‖x‖₂ > r₂ scaled onto the sphere, x·r₂/‖x‖₂."""
        xs = as_float_batch(x, self.d_in, self.name)
        norms = np.sqrt(np.einsum("ij,ij->i", xs, xs))
        over = norms > self.r2
        if np.any(over):
            xs = xs.copy()
            xs[over] *= (self.r2 / norms[over])[:, None]
        return xs

    def rotate(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """w = U x for a batch (batch, d) → (batch, d')."""
        if self.d == self.d_in:
            w = x * self.signs
        else:
            w = np.zeros((x.shape[0], self.d))
            w[:, : self.d_in] = x
            w *= self.signs
        w = fwht(w)
        w *= 1.0 / math.sqrt(self.d)
        return w

    def unrotate(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        """x = Uᵀ w = D H w / √d' (last axis), truncated to the input dimension."""
        return (fwht(w) * (self.signs / math.sqrt(self.d)))[..., : self.d_in]

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> ReportArrays:
        """Vectors (batch, d) → {"index": (batch, m, s), "bit": (batch, m, s)} (ℓ∞ reports of U x)."""
        rng = check_rng(rng)
        w = self.rotate(self._project(x))
        return self._randomize_box(w, rng)

    def estimate(self, reports: ReportArraysLike) -> NDArray[np.float64]:
        """x̂ = Uᵀŵ, ŵ = 2r∞·ẑ − r∞ the ℓ∞ estimate of the rotated inputs (Algorithm 3.6.2)."""
        w_hat = 2.0 * self.r_inf * self._estimate_z(reports) - self.r_inf
        return self.unrotate(w_hat)

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """Without x: the ℓ∞ supremum at r∞ (valid when nothing is clipped, w.p. ≥ 1 − β). With x: the
        ℓ∞ variance of the clipped rotations plus the clipping bias ‖Uᵀ·mean(clip(Ux)) − mean(x)‖²
        (U orthogonal: exact when d is a power of two, an upper bound otherwise)."""
        if x is None:
            return super().mse(n=n)
        xs = self._project(x)
        n = xs.shape[0]
        w = np.clip(self.rotate(xs), -self.r_inf, self.r_inf)
        z = (w + self.r_inf) / (2.0 * self.r_inf)
        var = 4.0 * self.r_inf**2 * self._per_client_z_error(z).sum() / n**2
        bias = self.unrotate(w.mean(axis=0)) - xs.mean(axis=0)
        return float(var + bias @ bias)
