"""PrivateRange — Levy et al., "Learning with User-Level Privacy" (NeurIPS 2021), App. D.1, as
reconstructed from its call site in Algorithm 1 (the appendix is not in the source text): the
approximate-median range of Feldman & Steinke 2017 by the exponential mechanism on a grid.

Algorithm (one scalar per user, X ∈ [−B, B]^n; the server sees them in the clear):

1. cut [−B, B] into K = ⌈B/τ⌉ bins of width 2τ, centres c_k = −B + τ + 2τk;
2. round each value to its bin, k(i) = clip(⌊(X_i + B)/(2τ)⌋, 0, K − 1);
3. score each centre by s(c_k) = min(#{i : k(i) ≤ k}, #{i : k(i) ≥ k}) — replacing one user
   moves each count by at most 1, so s has replace-one sensitivity 1;
4. pick a centre a by the exponential mechanism, P(c_k) ∝ exp(ε·s(c_k)/2) (sampled over runs of
   equal score: O(n log n), not O(K));
5. return the interval [a − w/2, a + w/2]; the paper's width is w = 4τ.

Privacy: ε-DP and ε-bounded-range (the exponential mechanism), whatever the data and the width:
one ``exponential`` event at ε per use. Utility (Levy et al. Thm 1's failure term): if all values
lie within τ of some x₀, at most two adjacent bins are occupied and the better of them scores
≥ n/2, so a centre of score 0 (one outside the data's bins) is picked with probability at most
(K − 2)·e^{−εn/4} ≤ K·e^{−εn/4} (with Algorithm 1's ε/2 this is the paper's (B/τ)·e^{−nε/8}).
Width: w = 4τ around the chosen occupied bin's centre need not contain the whole cluster (60% of
the values at 0.99τ and 40% at 2.99τ with bin centres 0, 2τ: the chosen centre 0 and [−2τ, 2τ]
clip the 40%); w = 6τ always does (every value is within 3τ of an occupied bin's centre). Privacy
holds for any fixed w.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from accountant.events import Event, ExponentialEvent

from ._base import InputError, Param, ParameterError, check_rng
from ._central import CentralMechanism, exponential_log_probabilities, exponential_sample
from .catalog import register
from .user_level import user_means

BINS_MAX = 1 << 40  # K = ⌈B/τ⌉; only the occupied bins are ever materialised


def bin_runs(
    bins: NDArray[np.int64], K: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """(starts, lengths, scores) of the runs of equal score over the K bins, given each user's bin.

    le(k) = #{i : bin_i ≤ k}, ge(k) = n − le(k − 1); s(k) = min(le(k), ge(k)). Both change only at
    occupied bins, so the runs are: the empty bins before the first occupied one (score 0), each
    occupied bin, each gap between consecutive occupied bins (le and ge constant), and the empty
    bins after the last (score 0). Runs of length 0 are dropped."""
    n = bins.size
    occ, cnt = np.unique(bins, return_counts=True)
    le = np.cumsum(cnt)  # #≤ occupied bin
    ge = n - le + cnt  # #≥ occupied bin
    starts: list[int] = []
    lengths: list[int] = []
    scores: list[int] = []
    if occ[0] > 0:
        starts.append(0)
        lengths.append(int(occ[0]))
        scores.append(0)
    for j, k in enumerate(occ):
        starts.append(int(k))
        lengths.append(1)
        scores.append(int(min(le[j], ge[j])))
        nxt = int(occ[j + 1]) if j + 1 < occ.size else K
        if nxt > k + 1:
            starts.append(int(k) + 1)
            lengths.append(nxt - int(k) - 1)
            scores.append(0 if j + 1 == occ.size else int(min(le[j], n - le[j])))
    return (
        np.array(starts, dtype=np.int64),
        np.array(lengths, dtype=np.int64),
        np.array(scores, dtype=np.int64),
    )


@register
class PrivateRange(CentralMechanism):
    """Private range of per-user values by the exponential mechanism ([LSA] App. D.1, reconstructed).

    Inputs: one value per user (users,), or each user's items (users, items) averaged per user.
    ``randomize`` returns {"centre": a, "interval": [a − w/2, a + w/2]}; ``estimate`` the interval.
    Events: one ``exponential`` event at ``epsilon`` per use. Calibration: ``paper`` — ε = the target
    (pure ε-DP); ``tight`` — the largest ε whose accounted ε at δ (bounded-range RDP) meets the target.
    """

    POSITION = 13
    name = "private_range"
    description = (
        "Central user-level private range: exponential-mechanism approximate median on a grid of width 2τ "
        "over [−B, B]; returns an interval of width w (default 4τ; 6τ always contains a τ-cluster)."
    )
    source = (
        "Levy et al. 2021 (seed 001) App. D.1 / Alg. 1 step 1 (reconstructed: Feldman–Steinke approximate median "
        "by the exponential mechanism); exponential mechanism McSherry–Talwar 2007"
    )
    PARAMETERS = {
        "epsilon": Param(
            "number",
            "ε of the exponential mechanism (pure ε-DP per use)",
            minimum=0.0,
            exclusive_minimum=True,
            maximum=50.0,
        ),
        "tau": Param("number", "concentration radius τ (bin width 2τ)", minimum=0.0, exclusive_minimum=True),
        "B": Param(
            "number", "range bound: values are clipped into [−B, B]", minimum=0.0, exclusive_minimum=True
        ),
        "width": Param(
            "number",
            "width w of the returned interval (default 4τ, the paper's; 6τ always contains a τ-concentrated cluster)",
            default=None,
            minimum=0.0,
            exclusive_minimum=True,
            nullable=True,
        ),
    }

    def _setup(self) -> None:
        """Interval width w (default 4τ) and K = ⌈B/τ⌉ bins of width 2τ (at most BINS_MAX)."""
        p = self.params
        self.epsilon: float = p["epsilon"]
        self.tau: float = p["tau"]
        self.B: float = p["B"]
        self.width: float = 4.0 * self.tau if p["width"] is None else p["width"]
        self.K: int = max(1, math.ceil(self.B / self.tau - 1e-12))
        if self.K > BINS_MAX:
            raise ParameterError(
                f"B/tau gives {self.K} bins; at most {BINS_MAX} are supported — increase tau"
            )

    def internals(self) -> dict[str, Any]:
        return {"bins": self.K, "bin_width": 2 * self.tau, "width": self.width, "pure_epsilon": self.epsilon}

    def run_events(self, count: int) -> list[Event]:
        """One ``exponential`` event at ε per use: the exponential mechanism with a sensitivity-1 score is
        ε-DP and ε-bounded-range (McSherry–Talwar 2007; Durfee–Rogers 2019)."""
        return [ExponentialEvent(epsilon=float(self.epsilon), count=int(count))]

    @classmethod
    def paper_params(cls, epsilon: float, delta: float, count: int, params: dict[str, Any]) -> dict[str, Any]:
        """Pure ε-DP per use: ε = target/count (basic composition)."""
        del delta, params  # pure DP: neither enters
        return {"epsilon": epsilon / count}

    # ------------------------------------------------------------------------------------------ server
    def centres(self) -> NDArray[np.float64]:
        """The bin centres c_k = −B + τ + 2τk, k = 0..K−1."""
        c: NDArray[np.float64] = -self.B + self.tau + 2.0 * self.tau * np.arange(self.K, dtype=np.float64)
        return c

    def bins(self, values: NDArray[np.float64]) -> NDArray[np.int64]:
        """Each value's bin k = clip(⌊(clip(X, −B, B) + B)/(2τ)⌋, 0, K − 1)."""
        k = np.floor((np.clip(values, -self.B, self.B) + self.B) / (2.0 * self.tau))
        return np.clip(k, 0, self.K - 1).astype(np.int64)

    def _values(self, x: ArrayLike) -> NDArray[np.float64]:
        """One value per user (the mean of its items, ``user_means``); at least one user."""
        v = user_means(x, 1, self.name)[:, 0]
        if v.size < 1:
            raise InputError(f"{self.name}: needs at least one user")
        return v

    def probabilities(self, x: ArrayLike) -> NDArray[np.float64]:
        """The exact law of the chosen bin index (dense, K entries; for audits and tests)."""
        if self.K > 1 << 20:
            raise ParameterError("probabilities() is dense: at most 2^20 bins")
        starts, lengths, scores = bin_runs(self.bins(self._values(x)), self.K)
        lp = exponential_log_probabilities(lengths, scores, self.epsilon)
        out = np.empty(self.K, dtype=np.float64)
        for s, length, l_ in zip(starts.tolist(), lengths.tolist(), lp.tolist()):
            out[s : s + length] = math.exp(l_) / length
        return out

    def choose(self, values: NDArray[np.float64], rng: np.random.Generator) -> float:
        """The chosen centre a for per-user values (already one per user)."""
        starts, lengths, scores = bin_runs(self.bins(values), self.K)
        k = exponential_sample(starts, lengths, scores, self.epsilon, rng)
        return float(-self.B + self.tau + 2.0 * self.tau * k)

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> dict[str, Any]:
        """Per-user values (or datasets) → {"centre": a, "interval": [a − w/2, a + w/2]}."""
        rng = check_rng(rng)
        a = self.choose(self._values(x), rng)
        return {"centre": a, "interval": [a - self.width / 2.0, a + self.width / 2.0]}

    def estimate(self, reports: object) -> list[float]:
        """The released interval [lo, hi] (the release is already the estimate: post-processing)."""
        if not isinstance(reports, dict) or "interval" not in reports:
            raise InputError(
                f"{self.name}: reports must be the release {{'centre': a, 'interval': [lo, hi]}}"
            )
        lo, hi = (float(v) for v in reports["interval"])
        return [lo, hi]

    # ------------------------------------------------------------------------------------------ utility
    def failure_probability(self, n: int) -> float:
        """P(a centre of score 0 is picked) ≤ K·e^{−εn/4} for τ-concentrated data (module docstring)."""
        return min(1.0, self.K * math.exp(-self.epsilon * n / 4.0))

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """Bound on E(a − x₀)² for data within τ of x₀: the centre of an occupied bin is within 2τ of x₀
        (probability ≥ 1 − β), any centre within 2B + 2τ: (1 − β)(2τ)² + β(2B + 2τ)², β the failure
        probability at n users (or the data's number of users)."""
        if x is not None:
            n = self._values(x).size
        n = 1 if n is None else int(n)
        b = self.failure_probability(n)
        return (1.0 - b) * (2.0 * self.tau) ** 2 + b * (2.0 * self.B + 2.0 * self.tau) ** 2


__all__ = ["PrivateRange", "bin_runs"]
