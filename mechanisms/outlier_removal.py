"""Outlier-removal mean estimation for concentrated data — Asi & Liu, "User-level DP-SCO: efficient
algorithms with optimal rates", Algorithm 1 (stateful over T adaptive queries), with the
AboveThreshold gate of their Algorithm 4 (Dwork–Roth). Privacy re-derived here (:func:`privacy_proof`):
the printed noise calibration is not provably private as printed (its gate score has sensitivity 2,
not 1; its Lemma 3.3 constant is wrong; its condition on n is too weak; its σ drops a log(1/ζ)
factor), so the ``tight`` calibration uses the conservative analysis below, and ``paper`` only
reproduces the printed numbers (its ``events()`` still describe honestly what then runs).

Algorithm, per query i = 1..T (q_i maps a user to a vector in R^d, chosen adaptively):

1. concentration score s_i = (1/n)·Σ_j Σ_k 1(‖q_i(Z_j) − q_i(Z_k)‖ ≤ τ) (ordered pairs, diagonal
   included);
2. gate: AboveThreshold with threshold θn (θ = 4/5), threshold noise ρ ~ Lap(2Δ_s/ε_g) drawn once,
   query noise ν_i ~ Lap(4Δ_s/ε_g), Δ_s = 2; ⊥ and halt (for good) if s_i + ν_i < θn − ρ;
3. otherwise f_j = #{k : ‖q_i(Z_j) − q_i(Z_k)‖ ≤ 2τ}, keep user j with probability
   p_j = clip((f_j − n/2)/(n/6), 0, 1) independently, g_i = mean of the kept vectors (0 if none), and
   release g_i + N(0, σ²I_d).

Accounting (per run of T queries, charged up front): ``above_threshold`` at ε_g with ``zeta`` =
ζ_g (the gate's noise failure, below) and ``gaussian`` with noise multiplier σ/Δ₂, count T,
``zeta`` = ζ_c (the coupling's failure), where Δ₂ = min(6τ, 9τ(K + 1)/n) and K is the (1 − ζ_c)
Chernoff quantile of a sum of independent Bernoullis of mean < 6.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from accountant.events import AboveThresholdEvent, Event, GaussianEvent

from ._base import D_MAX, InputError, Param, ParameterError, check_rng
from ._central import CentralMechanism, accounted_epsilon, check_mode, check_target, largest_feasible
from .catalog import register

GATE_SENSITIVITY = 2.0
COUPLING_MEAN = 6.0

_Outlier = TypeVar("_Outlier", bound="OutlierRemovalMean")


def privacy_proof() -> str:
    """Theorem. For every n, τ, T, σ, ε_g and ζ_c the mechanism's T answers (⊥ included) satisfy the
    accountant's definition of "curve ĉ_{ε_g}(α) + T·α/(2z²) outside a failure event of probability
    ζ_g + T·ζ_c" (accountant.combination), z = σ/Δ₂: its events are exactly that.

    Setting. Replace-one neighbours x, x' (n fixed, user u replaced). For a query, v_j = q(Z_j);
    N_j = #{k : ‖v_j − v_k‖ ≤ τ}, so s = (1/n)Σ_j N_j.

    (a) Gate sensitivity. Replacing u changes 1(‖v_j − v_k‖ ≤ τ) only for the 2(n − 1) ordered pairs
    that contain u off the diagonal: |s(x) − s(x')| ≤ 2(n − 1)/n < 2 = Δ_s. With noises Lap(2Δ_s/ε_g)
    and Lap(4Δ_s/ε_g) the gate is AboveThreshold, ε_g-DP for the whole stream (Dwork–Roth Thm 3.23,
    scaled by Δ_s; halting below the threshold is the same algorithm on −s).

    (b) Safe queries. Call x safe for a query if s(x) ≥ 2n/3 + 1. Then some j* has N_{j*} ≥ s ≥ 2n/3 + 1
    (a maximum is at least the mean); let c = v_{j*} and B = B(c, τ). |B ∩ x| ≥ 2n/3 + 1 and
    |B ∩ x'| ≥ 2n/3. (i) Any two points of B are within 2τ, so each of them has f ≥ |B ∩ ·| ≥ 2n/3,
    i.e. keep probability 1: both kept sets contain B's points and have at least m = 2n/3 elements.
    (ii) A kept point of x has f_j > n/2 and |B ∩ x| > n/2, so some point lies within 2τ of v_j and
    within τ of c: ‖v_j − c‖ ≤ 3τ; in x', f_j > n/2 and |B ∩ x'| ≥ 2n/3 > n/2 likewise. So every kept
    point of either dataset lies in B(c, 3τ).

    (c) Coupled sensitivity. For j ≠ u, f_j changes by at most 1 between x and x', so
    |p_j − p'_j| ≤ 6/n; couple each user's keep coins maximally (independently over users): they
    differ with probability |p_j − p'_j|, so the number D of users j ≠ u kept in exactly one of
    the two runs is a sum of independent Bernoullis of total mean μ ≤ 6(n − 1)/n < 6, and by
    Chernoff P(D ≥ k) ≤ e^{−μ}(eμ/k)^k ≤ e^{−6}(6e/k)^k for k > 6. K is the least integer with
    e^{−6}(6e/(K + 1))^{K + 1} ≤ ζ_c, so D ≤ K except with probability ≤ ζ_c. Write S = A ∪ 𝔅 and
    S' = A ∪ 𝔅' with A the users kept in both (u excluded), b = |𝔅|, b' = |𝔅'| ≤ D + 1 (u may
    sit in each). Centring every point at c (‖w‖ ≤ 3τ) and with a = |A|:
    g − g' = w_A·(b' − b)/((a+b)(a+b')) + w_𝔅/(a+b) − w_𝔅'/(a+b'), so for b ≥ b' (symmetric)
    ‖g − g'‖ ≤ 3τ[(b − b') + b + b']/m = 6τ·max(b, b')/m ≤ 6τ(D + 1)/m ≤ 9τ(D + 1)/n; and always
    ‖g − g'‖ ≤ 6τ (both in B(c, 3τ)). So Δ₂ = min(6τ, 9τ(K + 1)/n) bounds it outside a coupling
    failure of probability ζ_c. The released law is the coupling's mixture of N(g, σ²I) against
    N(g', σ²I): with P₀, Q₀ the mixtures over the good coupling event (weight 1 − ζ_c on both
    sides), D_α(P₀‖Q₀) ≤ max over good pairs D_α(N(g)‖N(g')) ≤ αΔ₂²/(2σ²) by the joint
    quasi-convexity of D_α — a Gaussian curve outside a failure event ζ_c.

    (d) The gate makes the Gaussian steps safe. Let F be the event that |ρ| > a₀ or |ν_i| > a₁ for
    some i ≤ T; P(F) = ζ_g ≤ e^{−a₀/b₀} + T·e^{−a₁/b₁} (b₀, b₁ the noise scales) for any a₀ + a₁ = A
    := θn − (2n/3 + 1) (the split minimising the bound is used); F involves the noise only, so it
    has the same probability under x and x'. Outside F, a pass means s ≥ θn − a₀ − a₁ = 2n/3 + 1:
    every Gaussian step reached is safe for x.

    (e) Assembly (for the ordered pair (x, x'); the other order is the same). Let P̂ run the gate
    as the mechanism does on x, each Gaussian step at which x is safe with the law P̂_t of the
    definition (accountant.combination: P̂_t = (1 − ζ_c)P₀ + ζ_c·E'), and each unsafe Gaussian step
    with the kernel of x'. Running P_x and that hybrid with shared randomness they agree until the
    first unsafe Gaussian step, which P_x reaches only on F: d_TV ≤ ζ_g; replacing the safe steps'
    kernels costs ≤ ζ_c each: d_TV(P_x, P̂) ≤ ζ_g + T·ζ_c. Against Q = P_{x'}: the gate is an
    interactive ε_g-DP mechanism on x vs x', which is an interactive post-processing of one
    ε_g-randomized-response draw (Vadhan–Zhang 2023), contributing ĉ_{ε_g}(α); safe Gaussian steps
    contribute αΔ₂²/(2σ²) each for every history, unsafe ones 0 (same kernel); by the chain rule
    D_α(P̂‖Q) ≤ ĉ_{ε_g}(α) + T·αΔ₂²/(2σ²). ∎

    Other mechanisms may be interleaved with the queries (the argument is step by step), and the
    run is charged for T queries whether or not it halts early.
    """
    return privacy_proof.__doc__ or ""


def coupling_quantile(zeta: float) -> int:
    """The least K ≥ 6 with e^{−6}·(6e/(K + 1))^{K + 1} ≤ ζ (Chernoff bound of P(D ≥ K + 1) for a sum of
    independent Bernoullis of mean ≤ 6)."""
    if not 0 < zeta < 1:
        raise ParameterError(f"zeta_coupling must be in (0, 1) (got {zeta!r})")
    k = 7
    log_z = math.log(zeta)
    while -COUPLING_MEAN + k * math.log(COUPLING_MEAN * math.e / k) > log_z:
        k += 1
    return k - 1


def gate_failure(
    n: int, epsilon_gate: float, T: int, threshold_fraction: float
) -> tuple[float, float, float]:
    """(ζ_g, a₀, a₁): the probability that the gate's noise leaves [−a₀, a₀] (threshold) or [−a₁, a₁]
    (one of T queries), minimised over a₀ + a₁ = A = θn − 2n/3 − 1 (part (d) of
    :func:`privacy_proof`); ζ_g ≥ 1 when A ≤ 0 (no n-independent guarantee)."""
    b0 = 2.0 * GATE_SENSITIVITY / epsilon_gate
    b1 = 4.0 * GATE_SENSITIVITY / epsilon_gate
    A = threshold_fraction * n - 2.0 * n / 3.0 - 1.0
    if A <= 0:
        return 1.0 + T, 0.0, 0.0
    # stationary point of e^{−a0/b0} + T e^{−(A−a0)/b1}, clipped to [0, A]
    a0 = (math.log(b1 / (T * b0)) + A / b1) / (1.0 / b0 + 1.0 / b1)
    a0 = min(max(a0, 0.0), A)
    a1 = A - a0
    z = math.exp(-a0 / b0) + T * math.exp(-a1 / b1)
    return float(np.nextafter(z, math.inf)), a0, a1


def n_min(epsilon_gate: float, T: int, zeta_gate: float, threshold_fraction: float = 0.8) -> int:
    """The least n with gate failure ζ_g(n) ≤ ``zeta_gate`` (the privacy-critical condition on n)."""
    if not threshold_fraction > 2.0 / 3.0:
        raise ParameterError("threshold_fraction must exceed 2/3 (the gate must certify s ≥ 2n/3 + 1)")
    lo, hi = 1, 2
    while gate_failure(hi, epsilon_gate, T, threshold_fraction)[0] > zeta_gate:
        hi *= 2
        if hi > 10**15:
            raise ParameterError("no n meets this gate failure probability")
    while lo < hi:
        mid = (lo + hi) // 2
        if gate_failure(mid, epsilon_gate, T, threshold_fraction)[0] <= zeta_gate:
            hi = mid
        else:
            lo = mid + 1
    return lo


def paper_sigma(epsilon: float, delta: float, tau: float, T: int, n: int) -> float:
    """Asi–Liu Alg. 1's printed noise: σ² = 8τ²T·log(e^{ε/2}T/δ)·log(e^{ε/2}/δ)/(n²ε²) (valid only up to
    an unspecified constant and a missing log(1/ζ') factor: see the module docstring)."""
    return math.sqrt(
        8 * tau**2 * T * (epsilon / 2 + math.log(T / delta)) * (epsilon / 2 + math.log(1 / delta))
    ) / (n * epsilon)


def paper_n_min(epsilon: float, delta: float, T: int) -> float:
    """Asi–Liu Lemma 3.6's printed condition n ≥ 40·log(4T/δ)/ε (too weak: see the module docstring)."""
    return 40.0 * math.log(4 * T / delta) / epsilon


class AboveThreshold:
    """AboveThreshold (Dwork–Roth Alg. 1 / Thm 3.23) with Asi–Liu's orientation: halt at the first
    query below the noisy threshold. Threshold noise Lap(2Δ/ε) drawn once at construction, query
    noise Lap(4Δ/ε) fresh per query, Δ the queries' sensitivity: ε-DP for the whole stream."""

    def __init__(
        self, threshold: float, epsilon: float, sensitivity: float, rng: np.random.Generator
    ) -> None:
        """Draw the threshold noise ρ ~ Lap(2Δ/ε) once: the noisy threshold is ``threshold`` − ρ."""
        self.rng = check_rng(rng)
        self.scale_threshold = 2.0 * sensitivity / epsilon
        self.scale_query = 4.0 * sensitivity / epsilon
        self.noisy_threshold = threshold - float(self.rng.laplace(0.0, self.scale_threshold))
        self.halted = False
        self.answered = 0

    def passes(self, value: float) -> bool:
        """True (⊤) or False (⊥, and the stream halts for good)."""
        if self.halted:
            raise InputError("the AboveThreshold stream has halted; start a new one (and charge it)")
        self.answered += 1
        if value + float(self.rng.laplace(0.0, self.scale_query)) < self.noisy_threshold:
            self.halted = True
            return False
        return True


def neighbour_counts(V: ArrayLike, radius: float, block: int = 512) -> NDArray[np.int64]:
    """#{k : ‖v_j − v_k‖₂ ≤ radius} for every j (itself included), in row blocks.

    Squared distances come from ‖a‖² + ‖b‖² − 2a·b on centred data (BLAS), whose error is at most
    (d + 2)·u·(‖a‖² + ‖b‖²) (u the unit roundoff); pairs within 4× that of radius² are recomputed
    from the coordinate differences, so each comparison is that of the true distance up to a relative
    O(d·u) — covered by the 1e-9 margin on Δ₂ (:class:`OutlierRemovalMean`)."""
    X = np.asarray(V, dtype=np.float64)
    X = X - X.mean(axis=0)
    n, d = X.shape
    sq = np.einsum("ij,ij->i", X, X)
    r2 = radius * radius
    u = np.finfo(float).eps
    out = np.empty(n, dtype=np.int64)
    for s in range(0, n, block):
        rows = X[s : s + block]
        d2 = sq[s : s + block, None] + sq[None, :] - 2.0 * rows @ X.T
        tol = 4.0 * (d + 2) * u * (sq[s : s + block, None] + sq[None, :])
        near = np.abs(d2 - r2) <= tol
        cnt = np.count_nonzero((d2 <= r2) & ~near, axis=1)
        if np.any(near):
            i, j = np.nonzero(near)
            diff = rows[i] - X[j]
            exact = np.einsum("ij,ij->i", diff, diff) <= r2
            cnt += np.bincount(i[exact], minlength=rows.shape[0])
        out[s : s + block] = cnt
    return out


class OutlierRemovalSession:
    """One run of at most T adaptive queries (the run is charged for all T when it starts)."""

    def __init__(self, mech: OutlierRemovalMean, rng: np.random.Generator) -> None:
        """A run of ``mech``'s T queries behind its own AboveThreshold gate (threshold θn, ε_g, Δ_s = 2)."""
        self.mech = mech
        self.rng = check_rng(rng)
        self.gate = AboveThreshold(mech.threshold, mech.epsilon_gate, GATE_SENSITIVITY, self.rng)
        self.queries = 0

    @property
    def halted(self) -> bool:
        """True once the gate answered ⊥ (the run answers no more queries)."""
        return self.gate.halted

    def query(self, values: ArrayLike) -> NDArray[np.float64] | None:
        """The users' vectors for this query, shape (n, d) — exactly the n users the run was
        calibrated for (n is part of the privacy argument). Returns the noisy mean, or None (⊥: the
        data failed the concentration test and the run halted)."""
        m = self.mech
        V = np.asarray(values, dtype=np.float64)
        if V.ndim == 1 and m.d == 1:
            V = V[:, None]
        if V.ndim != 2 or V.shape != (m.n, m.d) or not np.all(np.isfinite(V)):
            raise InputError(
                f"{m.name}: each query needs the (n, d) = ({m.n}, {m.d}) finite user vectors the run was "
                "calibrated for (n is part of the privacy argument)"
            )
        if self.queries >= m.T:
            raise InputError(
                f"{m.name}: the run's T = {m.T} queries are used up; start (and charge) a new run"
            )
        self.queries += 1
        if self.halted:
            return None
        s = neighbour_counts(V, m.tau).sum() / m.n
        if not self.gate.passes(float(s)):
            return None
        f = neighbour_counts(V, 2.0 * m.tau)
        p = np.clip((f - m.n / 2.0) / (m.n / 6.0), 0.0, 1.0)
        keep = self.rng.random(m.n) < p
        g = V[keep].mean(axis=0) if np.any(keep) else np.zeros(m.d)
        out: NDArray[np.float64] = g + self.rng.normal(0.0, m.sigma, size=m.d)
        return out


@register
class OutlierRemovalMean(CentralMechanism):
    """Asi–Liu Algorithm 1: AboveThreshold-gated outlier-removal mean of n users' vectors, stateful
    over T adaptive queries (:meth:`session`). ``randomize`` runs a one-query session. The
    precondition n ≥ n_min is privacy-critical: the gate's failure ζ_g(n) is part of the events, and
    ``calibrated`` refuses n below the n_min of its δ share."""

    POSITION = 15
    name = "outlier_removal_mean"
    description = (
        "Central user-level mean of concentrated vectors over T adaptive queries: an AboveThreshold gate on the "
        "pairwise concentration score, soft outlier removal, Gaussian noise (conservative re-derived calibration)."
    )
    source = (
        "Asi–Liu (seed 003) Algorithm 1, Theorem 3.2, Algorithm 4 (AboveThreshold, Dwork–Roth Thm 3.23); privacy "
        "re-derived (mechanisms/outlier_removal.py, privacy_proof)"
    )
    KNOB = "sigma"
    PARAMETERS = {
        "epsilon_gate": Param(
            "number",
            "ε of the AboveThreshold gate (whole run)",
            minimum=0.0,
            exclusive_minimum=True,
            maximum=50.0,
        ),
        "sigma": Param(
            "number", "Gaussian noise standard deviation per coordinate", minimum=0.0, exclusive_minimum=True
        ),
        "tau": Param("number", "pair threshold τ (keep scores use 2τ)", minimum=0.0, exclusive_minimum=True),
        "T": Param("integer", "queries per run (charged up front)", minimum=1, maximum=10**9),
        "n": Param(
            "integer", "number of users (fixed: part of the privacy argument)", minimum=2, maximum=10**9
        ),
        "d": Param("integer", "dimension of the query vectors", default=1, minimum=1, maximum=D_MAX),
        "zeta_coupling": Param(
            "number",
            "failure probability ζ_c of the coupled sensitivity per query (sets K and Δ₂)",
            default=1e-10,
            minimum=0.0,
            exclusive_minimum=True,
            maximum=0.5,
        ),
        "threshold_fraction": Param(
            "number",
            "gate threshold θ (pass if s ≥ θn, noisy); > 2/3",
            default=0.8,
            minimum=0.67,
            maximum=1.0,
        ),
    }

    def _setup(self) -> None:
        """The gate's failure ζ_g and margins (:func:`gate_failure`), the coupling quantile K
        (:func:`coupling_quantile`) and Δ₂ = min(6τ, 9τ(K + 1)/n)·(1 + 10⁻⁹) (:func:`privacy_proof` (c);
        the margin covers the rounding of the distance comparisons). ``ParameterError`` when ζ_g ≥ 1."""
        p = self.params
        self.epsilon_gate: float = p["epsilon_gate"]
        self.sigma: float = p["sigma"]
        self.tau: float = p["tau"]
        self.T: int = p["T"]
        self.n: int = p["n"]
        self.d: int = p["d"]
        self.zeta_coupling: float = p["zeta_coupling"]
        self.theta: float = p["threshold_fraction"]
        self.threshold = self.theta * self.n
        self.zeta_gate, self.a0, self.a1 = gate_failure(self.n, self.epsilon_gate, self.T, self.theta)
        if self.zeta_gate >= 1.0:
            raise ParameterError(
                f"n = {self.n} is too small for this gate (ε_g = {self.epsilon_gate:g}, T = {self.T}): its noise "
                f"failure bound is {self.zeta_gate:.3g} >= 1; n must be at least "
                f"{n_min(self.epsilon_gate, self.T, 0.5, self.theta)} for even a 0.5 failure probability"
            )
        self.K = coupling_quantile(self.zeta_coupling)
        # ×(1 + 1e-9): the distance comparisons are exact up to a relative O(d·u) (neighbour_counts)
        self.sensitivity = min(6.0 * self.tau, 9.0 * self.tau * (self.K + 1) / self.n) * (1.0 + 1e-9)

    def internals(self) -> dict[str, Any]:
        return {
            "gate_sensitivity": GATE_SENSITIVITY,
            "gate_threshold": self.threshold,
            "gate_threshold_noise_scale": 2 * GATE_SENSITIVITY / self.epsilon_gate,
            "gate_query_noise_scale": 4 * GATE_SENSITIVITY / self.epsilon_gate,
            "gate_failure": self.zeta_gate,
            "gate_margins": [self.a0, self.a1],
            "coupling_quantile": self.K,
            "coupled_sensitivity": self.sensitivity,
            "noise_multiplier": self.sigma / self.sensitivity,
        }

    def run_events(self, count: int) -> list[Event]:
        """Per use, one run of T queries: ``above_threshold`` at ε_g with ζ = ζ_g (the gate's noise
        failure) and ``gaussian`` with noise multiplier σ/Δ₂ and ζ = ζ_c, T per use (:func:`privacy_proof`)."""
        return [
            AboveThresholdEvent(epsilon=float(self.epsilon_gate), zeta=self.zeta_gate, count=int(count)),
            GaussianEvent(
                noise_multiplier=float(self.sigma / self.sensitivity),
                zeta=float(self.zeta_coupling),
                count=int(count) * self.T,
            ),
        ]

    @classmethod
    def calibrated(
        cls: type[_Outlier],
        epsilon: float,
        delta: float,
        mode: str = "tight",
        count: int = 1,
        rel_tol: float = 1e-4,
        gate_fraction: float = 0.5,
        **params: Any,
    ) -> _Outlier:
        """``paper``: the printed σ (:func:`paper_sigma`) with the printed gate noise Lap(4/ε), Lap(8/ε) —
        which, at the score's true sensitivity 2, is ε_g = ε (not ε/2). ``tight``: ε_g =
        ``gate_fraction``·ε, ζ_c = δ/(4T), n ≥ n_min with ζ_g ≤ δ/4 (else ParameterError), and the
        smallest σ whose events meet (ε, δ) with the accountant."""
        epsilon, delta = check_target(epsilon, delta)
        check_mode(mode)
        if "sigma" in params or "epsilon_gate" in params:
            raise ParameterError(
                "leave 'sigma' and 'epsilon_gate' out when calibrating: they are what is solved for"
            )
        for req in ("tau", "T", "n"):
            if req not in params:
                raise ParameterError(f"calibrating {cls.name} needs '{req}'")
        T, n = int(params["T"]), int(params["n"])
        if mode == "paper":
            return cls(
                **{
                    **params,
                    "epsilon_gate": epsilon,
                    "sigma": paper_sigma(epsilon, delta, params["tau"], T * count, n),
                }
            )
        if not 0 < gate_fraction < 1:
            raise ParameterError("gate_fraction must be in (0, 1)")
        eg = gate_fraction * epsilon
        theta = params.get("threshold_fraction", 0.8)
        need = n_min(eg, T, delta / (4 * count), theta)
        if n < need:
            raise ParameterError(
                f"n = {n} users is below n_min = {need} for this target (the gate must certify concentration "
                f"with failure ≤ δ/4; privacy-critical): add users, raise epsilon or delta, or lower T"
            )
        params = {"zeta_coupling": delta / (4.0 * T * count), **params}

        def f(inv_sigma: float) -> float:
            """Accounted ε at δ of the runs with σ = 1/inv_sigma (non-decreasing in inv_sigma)."""
            return accounted_epsilon(
                cls(**{**params, "epsilon_gate": eg, "sigma": 1.0 / inv_sigma}).events(count=count), delta
            )

        inv = largest_feasible(f, epsilon, 1e-12, 1e12, "1/sigma", rel_tol)
        return cls(**{**params, "epsilon_gate": eg, "sigma": 1.0 / inv})

    def session(self, rng: np.random.Generator) -> OutlierRemovalSession:
        """A new run of at most T queries (charge ``events()`` first)."""
        return OutlierRemovalSession(self, rng)

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> dict[str, Any]:
        """One query on the users' vectors (n, d): {"mean": the noisy mean or None, "halted": bool}."""
        s = self.session(rng)
        g = s.query(x)
        return {"mean": None if g is None else (float(g[0]) if self.d == 1 else g), "halted": s.halted}

    def estimate(self, reports: object) -> float | NDArray[np.float64]:
        """The released noisy mean (a float for d = 1); ``InputError`` for a halted run (⊥)."""
        if not isinstance(reports, dict) or "mean" not in reports:
            raise InputError(f"{self.name}: reports must be the release {{'mean': ..., 'halted': ...}}")
        if reports["mean"] is None:
            raise InputError(f"{self.name}: the run halted (⊥): there is no estimate")
        m = np.asarray(reports["mean"], dtype=np.float64).reshape(-1)
        return float(m[0]) if self.d == 1 else m

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """d·σ²: the error of a passed query when no user is removed (Asi–Liu Lemma 3.7 gives that for
        (τ/2)-concentrated data with high probability)."""
        del n, x  # the same for every population and input
        return self.d * self.sigma**2

    def theorem_variance(self, epsilon: float, delta: float) -> float:
        """Asi–Liu Thm 3.2 up to its unspecified constant (set to 1): d·τ²·T·log(T/δ)·log(1/δ)/(n²ε²)
        (the printed statement omits the factor d of isotropic noise)."""
        return (
            self.d
            * self.tau**2
            * self.T
            * math.log(self.T / delta)
            * math.log(1 / delta)
            / (self.n * epsilon) ** 2
        )


__all__ = [
    "AboveThreshold",
    "OutlierRemovalMean",
    "OutlierRemovalSession",
    "coupling_quantile",
    "gate_failure",
    "n_min",
    "neighbour_counts",
    "paper_n_min",
    "paper_sigma",
    "privacy_proof",
]
