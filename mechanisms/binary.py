"""Randomized response: binary (Alg. 2.2.1), k-ary (ch. 7) and binary vectors R^Bin_{v,s} (Alg. 3.3.1–3.3.2)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from accountant.events import Event

from ._base import (
    D_MAX,
    K_MAX,
    InputError,
    Mechanism,
    Param,
    ParameterError,
    ReportArrays,
    ReportArraysLike,
    as_array,
    check_indices,
    check_rng,
    eps0_param,
    n_from,
    one_per_client,
    report_pair,
    rr_events,
    rr_flip_probability,
    rr_variance,
    weighted_counts,
)
from .catalog import register
from .hadamard import log2_ceil


def as_bits(x: ArrayLike, what: str, shape_tail: tuple[int, ...] = ()) -> NDArray[np.uint8]:
    """Inputs checked to be bits 0/1 (booleans allowed), as uint8: flat without ``shape_tail``, else of
    shape (batch, *shape_tail) (one client's (shape_tail[0],) vector is a batch of one)."""
    arr = as_array(x, what)
    if arr.dtype == bool:
        arr = arr.astype(np.uint8)
    if arr.size and not np.issubdtype(arr.dtype, np.number):
        raise InputError(f"{what}: inputs must be bits 0/1")
    if arr.size and not np.all((arr == 0) | (arr == 1)):
        raise InputError(f"{what}: inputs must be bits 0/1 (found other values)")
    bits = arr.astype(np.uint8)
    if not shape_tail:
        return one_per_client(bits, what)
    return _batch_of(bits, shape_tail, what)


def _batch_of(bits: NDArray[np.uint8], shape_tail: tuple[int, ...], what: str) -> NDArray[np.uint8]:
    """``bits`` as a (batch, *shape_tail) array (one client's (shape_tail[0],) vector: a batch of one)."""
    given = bits.shape
    if bits.ndim == 1 and bits.shape[0] == shape_tail[0]:
        bits = bits.reshape(1, -1)
    if bits.ndim != 1 + len(shape_tail) or bits.shape[1:] != shape_tail:
        raise InputError(
            f"{what}: inputs must have shape (batch, {', '.join(map(str, shape_tail))}) (got {given})"
        )
    return bits


@register
class BinaryRR(Mechanism):
    """Unbiased binary randomized response R^{2RR}_p — thesis Algorithm 2.2.1, Theorem 2.4.1.

    Client: keep the bit w.p. 1−p, flip it w.p. p, with p = 1/(1+e^{ε0}) so that the report is exactly
    ε0-LDP (Theorem 2.4.1: ε0 = log((1−p)/p)); Lemma 2.4.1's p only gives ε0 ≤ v and is not used.
    The client sends the (possibly flipped) bit y ∈ {0, 1}; the thesis's real-valued output
    (y−p)/(1−2p) is the server-side de-biasing of that bit. Server: the mean of (y−p)/(1−2p), an
    unbiased estimate of the mean bit with MSE p(1−p)/((1−2p)² n) (eq. 2.5), whatever the inputs.
    """

    POSITION = 1
    name = "binary_rr"
    description = "Binary randomized response on one bit per client; the server estimates the mean bit."
    source = "Girgis thesis, Algorithm 2.2.1 and Theorem 2.4.1 (exact ε0 with p = 1/(1+e^{ε0}))"
    PARAMETERS = {"epsilon0": eps0_param()}

    epsilon0: float
    bits_per_report: int
    output_alphabet_size: int

    def _setup(self) -> None:
        """Flip probability p = 1/(1 + e^{ε0}) (Theorem 2.4.1: exactly ε0-LDP); one bit per report."""
        self.epsilon0 = self.params["epsilon0"]
        self.p = rr_flip_probability(self.epsilon0)
        self.bits_per_report = 1
        self.output_alphabet_size = 2

    def internals(self) -> dict[str, Any]:
        return {"flip_probability": self.p, "per_report_variance": rr_variance(self.p)}

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> NDArray[np.uint8]:
        """Bits (batch,) in {0,1} → reported bits (batch,) uint8."""
        rng = check_rng(rng)
        b = as_bits(x, self.name)
        n: int = b.shape[0]
        flip = rng.random(n) < self.p
        return b ^ flip.astype(np.uint8)

    def estimate(self, reports: ArrayLike) -> float:
        """x̂ = (ȳ − p)/(1 − 2p): unbiased for the mean bit, since E[y] = p + b(1 − 2p) for input b
        (Algorithm 2.2.1, Theorem 2.4.1)."""
        y = as_bits(reports, f"{self.name} reports")
        if y.size == 0:
            raise InputError("binary_rr: need at least one report to estimate")
        return float((y.mean() - self.p) / (1.0 - 2.0 * self.p))

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """E[(estimate − mean bit)²] = p(1−p)/((1−2p)² n), exactly, for any inputs."""
        return rr_variance(self.p) / n_from(n, x)

    def events(self, n: int | None, k: int | None = None, count: int = 1) -> list[Event]:
        """``shuffle_rr`` (or ``subsampled_shuffle_rr`` with k) at categories = 2: binary randomized
        response's own amplification bound (bounds.md §12)."""
        return rr_events(n, k, self.epsilon0, 2, count)


@register
class KaryRR(Mechanism):
    """k-ary randomized response — thesis ch. 7 (RR row of Table 7.1, [War65]).

    Client with symbol x ∈ {0..k−1}: report x w.p. e^{ε0}/(e^{ε0}+k−1), otherwise one of the other
    k−1 symbols uniformly. Exactly ε0-LDP for k ≥ 2. Server: with empirical report frequencies f̂,
    p̂_x = ((e^{ε0}+k−1) f̂_x − 1)/(e^{ε0}−1), unbiased for the clients' frequencies. Its MSE
    Σ_x E[(p̂_x − p_x)²] = A²(q(1−q) + (k−1)r(1−r))/n with A = (e^{ε0}+k−1)/(e^{ε0}−1),
    q = e^{ε0}/(e^{ε0}+k−1), r = 1/(e^{ε0}+k−1) — the same for every input.
    """

    POSITION = 2
    name = "kary_rr"
    description = "k-ary randomized response on one of k symbols; the server estimates the k frequencies."
    source = "Girgis thesis, ch. 7 (Table 7.1, randomized response [War65])"
    PARAMETERS = {
        "epsilon0": eps0_param(),
        "k": Param("integer", "number of symbols (inputs and reports are 0..k−1)", minimum=2, maximum=K_MAX),
    }

    epsilon0: float
    bits_per_report: int
    output_alphabet_size: int

    def _setup(self) -> None:
        """Keep probability e^{ε0}/(e^{ε0}+k−1), each other symbol 1/(e^{ε0}+k−1); ⌈log₂ k⌉ bits."""
        self.epsilon0 = self.params["epsilon0"]
        self.k: int = self.params["k"]
        e = math.exp(self.epsilon0)
        self.keep_probability: float = e / (e + self.k - 1)
        self.other_probability: float = 1.0 / (e + self.k - 1)
        self.bits_per_report = log2_ceil(self.k)
        self.output_alphabet_size = self.k

    def internals(self) -> dict[str, Any]:
        return {
            "keep_probability": self.keep_probability,
            "each_other_symbol_probability": self.other_probability,
        }

    def _symbols(self, x: ArrayLike, what: str) -> NDArray[np.int64]:
        """Symbols checked to be integers in 0..k−1 (flattened, int64)."""
        arr = as_array(x, what)
        if arr.size and not np.issubdtype(arr.dtype, np.number):
            raise InputError(f"{what} must be integers in 0..{self.k - 1}")
        arr = one_per_client(arr, what)
        if arr.size and (np.any(arr != np.round(arr)) or arr.min() < 0 or arr.max() > self.k - 1):
            raise InputError(f"{what} must be integers in 0..{self.k - 1}")
        return arr.astype(np.int64)

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> NDArray[np.int64]:
        """Symbols (batch,) in 0..k−1 → reported symbols (batch,) in 0..k−1."""
        rng = check_rng(rng)
        s = self._symbols(x, f"{self.name} inputs")
        keep = rng.random(s.shape[0]) < self.keep_probability
        other = (s + rng.integers(1, self.k, size=s.shape[0])) % self.k
        return np.where(keep, s, other)

    def estimate(self, reports: ArrayLike) -> NDArray[np.float64]:
        """p̂_x = ((e^{ε0}+k−1)·f̂_x − 1)/(e^{ε0}−1), f̂ the report frequencies: unbiased, since
        E f̂_x = r + (q − r)·p_x with q − r = (e^{ε0}−1)/(e^{ε0}+k−1), r = 1/(e^{ε0}+k−1)."""
        y = self._symbols(reports, f"{self.name} reports")
        if y.size == 0:
            raise InputError("kary_rr: need at least one report to estimate")
        f = np.bincount(y, minlength=self.k) / y.size
        e = math.exp(self.epsilon0)
        return ((e + self.k - 1) * f - 1.0) / (e - 1.0)

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """Σ_x E(p̂_x − p_x)² = A²·(q(1−q) + (k−1)·r(1−r))/n with A = (e^{ε0}+k−1)/(e^{ε0}−1): each report
        adds q(1−q) + (k−1)r(1−r) to Σ_x n²·Var f̂_x whatever its input (class docstring)."""
        n = n_from(n, x)
        e = math.exp(self.epsilon0)
        a = (e + self.k - 1) / (e - 1)
        q, r = self.keep_probability, self.other_probability
        return a * a * (q * (1 - q) + (self.k - 1) * r * (1 - r)) / n

    def events(self, n: int | None, k: int | None = None, count: int = 1) -> list[Event]:
        """``shuffle_rr`` (or ``subsampled_shuffle_rr`` with k users sampled) at categories = this
        mechanism's k symbols: k-ary randomized response's own bound (bounds.md §12)."""
        return rr_events(n, k, self.epsilon0, self.k, count)


@register
class BinaryVector(Mechanism):
    """Binary vectors R^Bin_{v,s} — thesis Algorithm 3.3.1 (client), 3.3.2 (server), Theorem 3.3.1.

    The d coordinates are split into s blocks of a = ⌈d/s⌉ (the last one zero-padded); for every block
    the client picks one coordinate uniformly and sends (index in block, 2RR bit) with flip probability
    p = 1/(1+e^{ε0/s}) — each message is exactly (ε0/s)-LDP and the whole report exactly ε0-LDP.
    Correction: Alg. 3.3.1 line 4's p (Lemma 2.4.1) only guarantees ε0/s as an upper bound, so the exact
    p is used. Shuffling: one shuffler per slot (proof of Thm 3.3.2), so ``events`` returns s shuffle
    events at ε0/s each; the printed calibration v² = s n min(ε²,ε)/(144 log(1/δ)) is *not* used (it
    gives √3·ε) — use ``mechanisms.calibrate`` (the accountant) instead.

    Server: b̂ = (1/n) Σ a·(y−p)/(1−2p)·e_{coordinate}, unbiased, with the exact MSE of eq. (3.10)
    (1/n²) Σ_i [a·d·p(1−p)/(1−2p)² + (a−1)‖b_i‖²] (a·d = s·a² when s divides d, as in the thesis; with
    padding only the d real coordinates are estimated). Blocks must be non-empty: s must satisfy
    ⌈d/⌈d/s⌉⌉ = s (an all-padding block would spend budget on nothing).
    """

    POSITION = 3
    name = "binary_vector"
    description = (
        "Binary vectors in {0,1}^d: s slots, one random coordinate per block through binary "
        "randomized response at ε0/s; the server estimates the mean vector."
    )
    source = "Girgis thesis, Algorithms 3.3.1–3.3.2, Theorem 3.3.1 (per-slot exact 2RR; calibrate with the accountant)"
    PARAMETERS = {
        "epsilon0": eps0_param("local privacy level ε0 of one whole report (sum over the s slots)"),
        "d": Param("integer", "dimension of the binary vectors", minimum=1, maximum=D_MAX),
        "s": Param(
            "integer", "slots (messages) per report; each is shuffled separately", default=1, minimum=1
        ),
    }

    epsilon0: float
    bits_per_report: int
    output_alphabet_size: int

    def _setup(self) -> None:
        """Blocks of a = ⌈d/s⌉, slot budget ε0/s, flip probability 1/(1 + e^{ε0/s});
        s·(⌈log₂ a⌉ + 1) bits per report."""
        self.epsilon0 = self.params["epsilon0"]
        self.d: int = self.params["d"]
        self.s: int = self.params["s"]
        self.a, self.s = block_layout(self.d, self.s)
        self.slot_epsilon = self.epsilon0 / self.s
        self.p = rr_flip_probability(self.slot_epsilon)
        self.bits_per_report = self.s * (log2_ceil(self.a) + 1)
        self.output_alphabet_size = (2 * self.a) ** self.s

    @property
    def message_epsilons(self) -> list[float]:
        """s messages, one per slot, at ε0/s each (each shuffled separately)."""
        return [self.slot_epsilon] * self.s

    def internals(self) -> dict[str, Any]:
        return {
            "block_size": self.a,
            "slot_epsilon": self.slot_epsilon,
            "flip_probability": self.p,
            "padded_dimension": self.a * self.s,
        }

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> ReportArrays:
        """Bit vectors (batch, d) → {"index": (batch, s) index inside each block, "bit": (batch, s) uint8}."""
        rng = check_rng(rng)
        b = as_bits(x, self.name, (self.d,))
        idx, bits = slot_messages(b, self.a, self.s, rng)
        flip = rng.random(bits.shape) < self.p
        return {"index": idx, "bit": bits ^ flip.astype(np.uint8)}

    def estimate(self, reports: ReportArraysLike) -> NDArray[np.float64]:
        """b̂ = (1/n)·Σ_i Σ_slots a·(y − p)/(1 − 2p)·e_coordinate (Algorithm 3.3.2): unbiased, each
        coordinate of a block being sampled with probability 1/a (padding coordinates dropped)."""
        idx, bit = check_slot_reports(reports, (self.s,), self.a, self.name)
        n: int = idx.shape[0]
        coords = idx + (np.arange(self.s) * self.a)[None, :]
        vals = self.a * (bit.astype(np.float64) - self.p) / (1.0 - 2.0 * self.p)
        tot = weighted_counts(coords.ravel(), vals.ravel(), self.a * self.s)
        return tot[: self.d] / n

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """Exact E‖b̂ − b̄‖²: (1/n²) Σ_i [a d V + (a−1)‖b_i‖²], V = p(1−p)/(1−2p)²; without x the
        supremum over {0,1}^d (‖b_i‖² = d)."""
        v = rr_variance(self.p)
        if x is None:
            n = n_from(n, None)
            return (self.a * self.d * v + (self.a - 1) * self.d) / n
        b = as_bits(x, self.name, (self.d,))
        n = b.shape[0]
        return float((n * self.a * self.d * v + (self.a - 1) * b.sum(dtype=np.float64)) / n**2)


# ---------------------------------------------------------------------------------------------------
# slot machinery shared with the ℓ∞ / ℓ2 mechanisms
# ---------------------------------------------------------------------------------------------------


def block_layout(d: int, s: int) -> tuple[int, int]:
    """Block size a = ⌈d/s⌉ and check that no block is padding only."""
    if s > d:
        raise ParameterError(f"s (slots) must be <= d = {d} (got s = {s})")
    a = -(-d // s)
    if -(-d // a) != s:
        ok = sorted({-(-d // (-(-d // t))) for t in range(1, min(d, 64) + 1)})
        raise ParameterError(
            f"with d = {d} and s = {s} the blocks of size ⌈d/s⌉ = {a} leave a slot with no coordinate; "
            f"choose s with ⌈d/⌈d/s⌉⌉ = s (e.g. one of {ok[:12]}) or a divisor of d"
        )
    return a, s


def slot_messages(
    b: NDArray[np.uint8], a: int, s: int, rng: np.random.Generator
) -> tuple[NDArray[np.int32], NDArray[np.uint8]]:
    """For each client and slot j, a uniform index in block j and the bit there (padding reads 0)."""
    n, d = b.shape
    idx = rng.integers(0, a, size=(n, s), dtype=np.int32)
    coords = idx + (np.arange(s) * a)[None, :]
    valid = coords < d
    rows = np.arange(n)[:, None]
    bits = np.where(valid, b[rows, np.minimum(coords, d - 1)], 0).astype(np.uint8)
    return idx, bits


def check_slot_reports(
    reports: object, tail: tuple[int, ...], a: int, what: str
) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """Slot reports {"index", "bit"} of shape (reports, *tail) (one report may drop the batch axis):
    integer indices in 0..a − 1 (the position inside each slot's block) and bits 0/1."""
    idx, bit = report_pair(reports, ("index", "bit"), what)
    given = (idx.shape, bit.shape)
    if idx.ndim == len(tail):
        idx, bit = idx[None], bit[None]
    if idx.shape != bit.shape or idx.shape[1:] != tail or idx.shape[0] < 1:
        raise InputError(
            f"{what}: 'index' and 'bit' must both have shape (reports, {', '.join(map(str, tail))}), "
            f"got {given[0]} and {given[1]}"
        )
    if not (np.issubdtype(idx.dtype, np.number) and np.issubdtype(bit.dtype, np.number)):
        raise InputError(f"{what}: 'index' and 'bit' must be integer arrays")
    check_indices(idx, a, what)
    if not np.all((bit == 0) | (bit == 1)):
        raise InputError(f"{what}: 'bit' entries must be 0 or 1")
    return idx.astype(np.int64), bit.astype(np.uint8)
