"""User-level reports (seed 000 — Girgis, Data, Diggavi, ISIT 2022; thesis §3.7): range and mean."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeGuard

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
    as_float_array,
    check_rng,
    eps0_param,
    n_from,
    weighted_counts,
)
from .catalog import register
from .hadamard import fwht, log2_ceil, next_power_of_two
from .hadamard_response import check_index_bit, hr_frequencies_from_sums, hr_randomize, hr_sign_sums
from .vectors import LEVELS_MAX, LinfBox

BINS_MAX = 1 << 20


def user_means(x: ArrayLike, d: int, what: str) -> NDArray[np.float64]:
    """Each user's mean, shape (users, d).

    d = 1: a 1-D array is one value (already the mean) per user; a 2-D array (users, samples) or a list
    of per-user sequences (ragged allowed) is averaged per user.
    d > 1: (users, d) means, (users, samples, d) datasets, or a list of per-user (samples, d) arrays.
    A user's mean is (1/m)·Σ_j z_j over its m items (the user-level input of seed 000 §3.7 and Levy et
    al. 2021 Cor. 1); ``InputError`` for no user, a user without items, or non-finite inputs.
    """
    if _is_list_of_datasets(x):
        arrs = _user_arrays(x, what)
        if len({a.shape for a in arrs}) != 1:  # ragged: average each user separately
            return _ragged_user_means(arrs, d, what)
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{what}: inputs must be numbers (one mean or one dataset per user)") from None
    res = _scalar_user_means(arr, what) if d == 1 else _vector_user_means(arr, d, what)
    if res.shape[0] < 1 or not np.all(np.isfinite(res)):
        raise InputError(f"{what}: need at least one user and finite inputs")
    return res


def _is_list_of_datasets(x: ArrayLike) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    """A non-empty list or tuple whose first entry is itself a sequence (one dataset per user)."""
    return isinstance(x, (list, tuple)) and bool(x) and isinstance(x[0], (list, tuple, np.ndarray))


def _user_arrays(x: list[Any] | tuple[Any, ...], what: str) -> list[NDArray[np.float64]]:
    """Each user's dataset as a float64 array."""
    try:
        return [np.asarray(u, dtype=np.float64) for u in x]
    except (TypeError, ValueError):
        raise InputError(f"{what}: user datasets must be numbers") from None


def _ragged_user_means(arrs: list[NDArray[np.float64]], d: int, what: str) -> NDArray[np.float64]:
    """The means of datasets of different sizes, one at a time: each must be a non-empty list of
    numbers (d = 1) or of length-d vectors."""
    out = []
    for a in arrs:
        if (d > 1 or a.ndim <= 1) and a.size % d == 0:  # else the shape check below refuses it
            a = a.reshape(-1, d)
        if a.size == 0 or a.ndim != 2 or a.shape[1] != d:
            raise InputError(
                f"{what}: each user's dataset must be a non-empty list of "
                f"{'numbers' if d == 1 else f'length-{d} vectors'}"
            )
        out.append(a.mean(axis=0))
    res = np.array(out, dtype=np.float64)
    if not np.all(np.isfinite(res)):
        raise InputError(f"{what}: inputs must be finite")
    return res


def _scalar_user_means(arr: NDArray[np.float64], what: str) -> NDArray[np.float64]:
    """d = 1: (users,) means as (users, 1), or (users, samples) datasets averaged per user."""
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim == 1:
        return arr.reshape(-1, 1)
    if arr.ndim == 2 and arr.shape[1] >= 1:
        means: NDArray[np.float64] = arr.mean(axis=1, keepdims=True)
        return means
    raise InputError(f"{what}: inputs must be (users,) means or (users, samples) datasets")


def _vector_user_means(arr: NDArray[np.float64], d: int, what: str) -> NDArray[np.float64]:
    """d > 1: (users, d) means as they are, or (users, samples, d) datasets averaged per user."""
    if arr.ndim == 2 and arr.shape[1] == d:
        return arr
    if arr.ndim == 3 and arr.shape[2] == d and arr.shape[1] >= 1:
        means: NDArray[np.float64] = arr.mean(axis=1)
        return means
    raise InputError(
        f"{what}: inputs must be (users, {d}) means or (users, samples, {d}) datasets (got shape {arr.shape})"
    )


@register
class UserRange(Mechanism):
    """User-level range report — seed 000 Algorithms 3–4 (Range_scalar, Range^user_scalar), Lemma 1.

    [−B, B] is split into k = ⌈B/τ⌉ bins of width 2τ with centres a_j = −B + (2j+1)τ; each user sends the
    binary Hadamard response (``hadamard_response``, K = 2^⌈log₂ k⌉) of the bin closest to the mean of
    its whole dataset. That is exactly ε0-LDP at the user level (any change of the dataset changes only
    the bin). Alg. 4's report ±H_k(j)(e^{ε0}+1)/(e^{ε0}−1) with P(+) = ½ + √k m(j)(e^{ε0}−1)/(2(e^{ε0}+1))
    is the same distribution as the Hadamard response's (j, y), so it is implemented once.
    Server: ``estimate`` gives the unbiased bin frequencies (MSE (c²k − 1)/n); ``interval`` takes the top
    bin a_max and returns the broadcast range [a_max − 3τ, a_max + 3τ] (Alg. 3 line 8).
    """

    POSITION = 8
    name = "user_range"
    description = (
        "User-level range report: Hadamard response of the bin (width 2τ over [−B, B]) holding the "
        "user's mean; the server broadcasts [a−3τ, a+3τ] around the top bin."
    )
    source = "Girgis–Data–Diggavi (ISIT 2022, seed 000) Algorithms 3–4 and Lemma 1; thesis §3.7"
    PARAMETERS = {
        "epsilon0": eps0_param("user-level local privacy level of the range report"),
        "B": Param(
            "number", "bound on every sample: values lie in [−B, B]", minimum=0.0, exclusive_minimum=True
        ),
        "tau": Param(
            "number",
            "concentration radius τ of the users' means (bin width 2τ)",
            minimum=0.0,
            exclusive_minimum=True,
        ),
    }

    epsilon0: float
    bits_per_report: int
    output_alphabet_size: int

    def _setup(self) -> None:
        """k = ⌈B/τ⌉ bins of width 2τ with centres a_j = −B + (2j+1)τ (k ≥ 2, at most BINS_MAX),
        K = 2^⌈log₂ k⌉ Hadamard groups, c = (e^{ε0}+1)/(e^{ε0}−1)."""
        self.epsilon0 = self.params["epsilon0"]
        self.B: float = self.params["B"]
        self.tau: float = self.params["tau"]
        self.k: int = math.ceil(self.B / self.tau - 1e-12)
        if self.k < 2:
            raise ParameterError(
                f"tau must be smaller than B (got B = {self.B}, tau = {self.tau}): "
                "with a single bin there is no range to estimate"
            )
        if self.k > BINS_MAX:
            raise ParameterError(
                f"B/tau gives {self.k} bins; at most {BINS_MAX} are supported — increase tau"
            )
        self.K = next_power_of_two(self.k)
        self.centres = -self.B + (2.0 * np.arange(self.k) + 1.0) * self.tau
        self.bits_per_report = log2_ceil(self.K) + 1
        self.output_alphabet_size = 2 * self.K
        e = math.exp(self.epsilon0)
        self.c = (e + 1.0) / (e - 1.0)

    def internals(self) -> dict[str, Any]:
        return {
            "bins": self.k,
            "groups": self.K,
            "bin_width": 2 * self.tau,
            "first_centre": float(self.centres[0]),
            "last_centre": float(self.centres[-1]),
        }

    def bins(self, means: NDArray[np.float64]) -> NDArray[np.int64]:
        """Each user's bin j = clip(⌊(ȳ + B)/(2τ)⌋, 0, k − 1): the centre a_j = −B + (2j+1)τ closest to
        its mean ȳ (Algorithm 4)."""
        return np.clip(np.floor((means + self.B) / (2.0 * self.tau)), 0, self.k - 1).astype(np.int64)

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> ReportArrays:
        """Users' means (users,) or datasets (users, samples) → {"index": group, "bit": answer}."""
        rng = check_rng(rng)
        y = user_means(x, 1, self.name)[:, 0]
        j, bit = hr_randomize(self.bins(y), self.K, self.epsilon0, rng)
        return {"index": j, "bit": bit}

    def estimate(self, reports: ReportArraysLike) -> NDArray[np.float64]:
        """Unbiased estimate of the fraction of users whose mean falls in each bin."""
        j, bit = check_index_bit(reports, self.K, self.name)
        return hr_frequencies_from_sums(hr_sign_sums(j, bit, self.K), j.size, self.epsilon0)[: self.k]

    def interval(self, reports: ReportArraysLike) -> tuple[float, float]:
        """The broadcast range [a_max − 3τ, a_max + 3τ] around the top estimated bin."""
        a = float(self.centres[int(np.argmax(self.estimate(reports)))])
        return (a - 3.0 * self.tau, a + 3.0 * self.tau)

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """E‖f̂ − f‖² of the bin frequencies = (c² k − 1)/n for every input."""
        if x is not None:
            n = user_means(x, 1, self.name).shape[0]
        return (self.c**2 * self.k - 1.0) / n_from(n, None)


@register
class UserMean(Mechanism):
    """User-level mean report — seed 000 Algorithm 1 (Mean_scalar) with the pure-LDP discrete variant.

    Scalar (d = 1): round 1 is the range report (``user_range``) at ε0/2, the server broadcasts
    I = [a_max − 3τ, a_max + 3τ]; round 2: each user projects its mean onto I, centres it, and sends it
    through the ℓ∞ mechanism with d = 1, r∞ = 3τ and m levels at ε0/2. Correction: seed 000 Alg. 2 adds
    Gaussian (or Laplace, App. D) noise — a continuous output to which the shuffle bounds do not apply;
    the spec replaces it with the discrete unbiased ℓ∞ randomizer so both rounds are shuffle-amplifiable.
    With ``interval`` given (a public range known in advance), there is no range round and the mean report
    gets the whole ε0.

    Vector (d > 1), seed 000 Algorithm 5 adapted: public rotation U = H·D/√d' (``rotation_seed``), per
    coordinate a range report at ε0/(2d') over [−B√d, B√d] with radius τ' = 10τ√(log(n d'/γ)/d'), then the
    ℓ∞ mechanism (m levels, s slots, r∞ = 3τ') on the centred, projected rotated mean at ε0/2; the server
    un-rotates. Every report is exactly ε0-LDP at the user level.

    ``randomize`` simulates both rounds (the server's broadcast between them is computed from the round-1
    reports) and returns {"range": …, "interval": …, "mean": …}; ``estimate`` returns the mean.
    ``events`` charges both rounds: the range message(s) and the m·s mean messages, one event each.
    """

    POSITION = 9
    name = "user_mean"
    description = (
        "User-level mean: a range round (Hadamard response of the user's bin) then the projected, "
        "centred user mean through the discrete ℓ∞ mechanism; ε0 split in halves."
    )
    source = "Girgis–Data–Diggavi (ISIT 2022, seed 000) Algorithms 1, 3, 5, Theorems 1–2, App. D; thesis §3.7"
    PARAMETERS = {
        "epsilon0": eps0_param("user-level local privacy level of the whole protocol (both rounds)"),
        "B": Param(
            "number",
            "bound on every sample coordinate: values lie in [−B, B]",
            minimum=0.0,
            exclusive_minimum=True,
        ),
        "tau": Param(
            "number", "concentration radius τ of the users' means", minimum=0.0, exclusive_minimum=True
        ),
        "m": Param("integer", "levels of the ℓ∞ mean report", default=4, minimum=1, maximum=LEVELS_MAX),
        "d": Param("integer", "dimension of the samples", default=1, minimum=1, maximum=D_MAX),
        "s": Param("integer", "slots per level of the ℓ∞ mean report (d > 1)", default=1, minimum=1),
        "interval": Param(
            "interval",
            "public range [low, high] known in advance (d = 1): skips the range round",
            default=None,
            nullable=True,
        ),
        "n": Param(
            "integer",
            "number of users τ' must cover (d > 1)",
            default=1_000_000,
            minimum=1,
            maximum=MAX_USERS,
        ),
        "gamma": Param(
            "number",
            "failure probability of the rotated radius τ' (d > 1)",
            default=0.01,
            minimum=0.0,
            exclusive_minimum=True,
            maximum=1.0,
        ),
        "rotation_seed": Param(
            "integer", "public seed of the rotation's random signs (d > 1)", default=0, minimum=0
        ),
    }

    epsilon0: float
    bits_per_report: int
    output_alphabet_size: int

    def _setup(self) -> None:
        """The budget split of Algorithms 1 and 5 (class docstring). d = 1: a range round at ε0/2 and the
        ℓ∞ report at ε0/2 with r∞ = 3τ, or, with a public interval, the ℓ∞ report at ε0 with r∞ = half
        its width. d > 1: public signs, τ' = 10τ·√(log(n d'/γ)/d'), d' range reports at ε0/(2d') over
        [−B√d, B√d] with radius τ_r = min(τ', B√d/2), and the ℓ∞ report at ε0/2 with r∞ = 3τ_r."""
        pr = self.params
        self.epsilon0 = pr["epsilon0"]
        self.d: int = pr["d"]
        self.B: float = pr["B"]
        self.tau: float = pr["tau"]
        self.range_mech: UserRange | None
        self.fixed_interval: tuple[float, float] | None
        self.signs: NDArray[np.float64] | None  # the rotation's random signs (d > 1)
        if self.d == 1:
            self.D = 1
            self.signs = None
            self.tau_r = self.tau
            if pr["interval"] is not None:
                lo, hi = pr["interval"]
                self.range_mech = None
                self.fixed_interval = (lo, hi)
                mean_eps, half = self.epsilon0, (hi - lo) / 2.0
            else:
                self.range_mech = UserRange(epsilon0=self.epsilon0 / 2.0, B=self.B, tau=self.tau)
                self.fixed_interval = None
                mean_eps, half = self.epsilon0 / 2.0, 3.0 * self.tau
            self.range_count = 0 if self.range_mech is None else 1
            self.linf = LinfBox(epsilon0=mean_eps, d=1, m=pr["m"], s=1, r_inf=half)
        else:
            if pr["interval"] is not None:
                raise ParameterError(
                    "'interval' is only for d = 1; for d > 1 the ranges are estimated per "
                    "rotated coordinate — leave it out"
                )
            self.D = next_power_of_two(self.d)
            self.signs = np.random.default_rng(pr["rotation_seed"]).choice(np.array([-1.0, 1.0]), size=self.D)
            self.tau_r = 10.0 * self.tau * math.sqrt(math.log(pr["n"] * self.D / pr["gamma"]) / self.D)
            self.fixed_interval = None
            self.range_mech = UserRange(
                epsilon0=self.epsilon0 / (2.0 * self.D),
                B=self.B * math.sqrt(self.d),
                tau=min(self.tau_r, self.B * math.sqrt(self.d) / 2.0),
            )
            self.range_count = self.D
            self.linf = LinfBox(
                epsilon0=self.epsilon0 / 2.0, d=self.D, m=pr["m"], s=pr["s"], r_inf=3.0 * self.range_mech.tau
            )
        rb = 0 if self.range_mech is None else self.range_count * self.range_mech.bits_per_report
        self.bits_per_report = rb + self.linf.bits_per_report
        ra = 1 if self.range_mech is None else self.range_mech.output_alphabet_size**self.range_count
        self.output_alphabet_size = ra * self.linf.output_alphabet_size

    @property
    def message_epsilons(self) -> list[float]:
        """The range round's messages (one at ε0/2 for d = 1; d' at ε0/(2d') for d > 1; none with a
        public interval), then the m·s messages of the ℓ∞ mean report."""
        r = [] if self.range_mech is None else [self.range_mech.epsilon0] * self.range_count
        return r + self.linf.message_epsilons

    def internals(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mean_report": self.linf.internals(),
            "mean_epsilon0": self.linf.epsilon0,
            "mean_r_inf": self.linf.r_inf,
        }
        if self.range_mech is not None:
            out.update(
                {
                    "range_epsilon0": self.range_mech.epsilon0,
                    "range_reports": self.range_count,
                    "range": self.range_mech.internals(),
                }
            )
        if self.d > 1:
            out.update({"rotated_dimension": self.D, "tau_rotated": self.tau_r})
        return out

    # ---------------------------------------------------------------------------------------------
    def _rotate(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        """w = U·y = H·diag(ω)·y/√d' per user (y zero-padded to d'); the identity for d = 1."""
        if self.signs is None:  # d = 1: no rotation
            return y
        w = np.zeros((y.shape[0], self.D))
        w[:, : self.d] = y
        w *= self.signs
        return fwht(w) / math.sqrt(self.D)

    def _unrotate(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        """y = Uᵀ·w = diag(ω)·H·w/√d', cut to the first d coordinates; the identity for d = 1."""
        if self.signs is None:  # d = 1: no rotation
            return w
        return (fwht(w) * (self.signs / math.sqrt(self.D)))[: self.d]

    def _clip_samples(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        """User means clipped to [−B, B] per coordinate (the samples' bound)."""
        return np.clip(y, -self.B, self.B)

    def _range_reports(self, w: NDArray[np.float64], rng: np.random.Generator) -> ReportArrays:
        """Round 1: each user's Hadamard response of its bin, per rotated coordinate."""
        rm = self.range_mech
        assert rm is not None  # called only when there is a range round
        bins = rm.bins(w)  # (users, D)
        j, bit = hr_randomize(bins, rm.K, rm.epsilon0, rng)
        return {"index": j, "bit": bit}

    def _centres_from_range(self, rep: ReportArraysLike) -> NDArray[np.float64]:
        """The server's broadcast centres: per rotated coordinate, the centre of the bin with the
        largest estimated frequency (Algorithm 3 line 8), from the round-1 reports."""
        rm = self.range_mech
        assert rm is not None  # called only when there is a range round
        j = np.asarray(rep["index"])
        bit = np.asarray(rep["bit"])
        if j.ndim == 1:
            j, bit = j[:, None], bit[:, None]
        if j.shape != bit.shape or j.ndim != 2 or j.shape[1] != self.range_count or j.shape[0] < 1:
            raise InputError(
                f"{self.name}: 'range' reports must have 'index' and 'bit' of shape (users, "
                f"{self.range_count})"
            )
        check_index_bit({"index": j, "bit": bit}, rm.K, self.name)
        cols = np.arange(self.range_count)[None, :] * rm.K + j.astype(np.int64)
        sums = weighted_counts(cols.ravel(), (2.0 * bit - 1.0).ravel(), self.range_count * rm.K).reshape(
            self.range_count, rm.K
        )
        freq = hr_frequencies_from_sums(sums, j.shape[0], rm.epsilon0)[:, : rm.k]
        centres: NDArray[np.float64] = rm.centres[np.argmax(freq, axis=1)]
        return centres

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> dict[str, Any]:
        """Users' data (see ``user_means``) → {"range": round-1 reports (absent with a fixed interval),
        "interval": the broadcast [low, high] per coordinate, "mean": round-2 ℓ∞ reports}."""
        rng = check_rng(rng)
        y = self._clip_samples(user_means(x, self.d, self.name))
        w = self._rotate(y)
        out: dict[str, Any] = {}
        if self.range_mech is None:
            assert self.fixed_interval is not None  # the public interval replaces the range round
            lo, hi = self.fixed_interval
            centres = np.array([(lo + hi) / 2.0])
        else:
            rep = self._range_reports(w, rng)
            out["range"] = rep
            centres = self._centres_from_range(rep)
        half = self.linf.r_inf
        out["interval"] = np.stack([centres - half, centres + half], axis=1)
        out["mean"] = self.linf.randomize(np.clip(w - centres, -half, half), rng)
        return out

    def estimate(self, reports: Mapping[str, Any]) -> float | NDArray[np.float64]:
        """The estimated mean over users (float for d = 1, array (d,) otherwise)."""
        if not isinstance(reports, dict) or "mean" not in reports or "interval" not in reports:
            raise InputError(
                f"{self.name}: reports must be a mapping with 'interval' and 'mean' "
                "(as returned by randomize)"
            )
        iv = as_float_array(reports["interval"], self.name)
        if iv.size % 2:
            raise InputError(f"{self.name}: 'interval' must hold [low, high] pairs")
        iv = iv.reshape(-1, 2)
        if iv.shape[0] != self.D or not np.all(np.isfinite(iv)):
            raise InputError(f"{self.name}: 'interval' must hold {self.D} finite [low, high] pairs")
        centres = iv.mean(axis=1)
        est = self._unrotate(centres + self.linf.estimate(reports["mean"]))
        return float(est[0]) if self.d == 1 else est

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """Without x: the ℓ∞ supremum at r∞ = half the interval (valid when every user's mean lies in the
        broadcast interval — w.h.p. by seed 000 Lemma 1). With x: exact variance + projection bias given
        that the range round picks the true most frequent bin (the non-private argmax)."""
        if x is None:
            return self.linf.mse(n=n)
        y = self._clip_samples(user_means(x, self.d, self.name))
        w = self._rotate(y)
        if self.range_mech is None:
            assert self.fixed_interval is not None  # the public interval replaces the range round
            lo, hi = self.fixed_interval
            centres = np.array([(lo + hi) / 2.0])
        else:
            bins = self.range_mech.bins(w)
            top = np.array(
                [np.bincount(bins[:, c], minlength=self.range_mech.k).argmax() for c in range(w.shape[1])]
            )
            centres = self.range_mech.centres[top]
        half = self.linf.r_inf
        wc = np.clip(w - centres, -half, half)
        var = self.linf.mse(x=wc)
        bias = self._unrotate(centres + wc.mean(axis=0)) - y.mean(axis=0)
        return float(var + bias @ bias)
