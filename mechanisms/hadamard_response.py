"""Binary Hadamard response (thesis ch. 7, §7.3.2, Theorem 7.3.2)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._base import (
    K_MAX,
    InputError,
    Mechanism,
    Param,
    ReportArrays,
    ReportArraysLike,
    as_array,
    check_indices,
    check_rng,
    eps0_param,
    n_from,
    one_per_client,
    report_pair,
    weighted_counts,
)
from .catalog import register
from .hadamard import fwht, hadamard_entries, log2_ceil, next_power_of_two


def hr_randomize(
    symbols: NDArray[np.int64], K: int, epsilon0: float, rng: np.random.Generator
) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """Each client draws its group j uniformly in 0..K−1 and answers the yes/no question
    "is my symbol in B^j = {x : H[x, j] = +1}?" truthfully w.p. e^{ε0}/(e^{ε0}+1) (eq. 7.27 with
    q = e^{ε0}/(e^{ε0}+1)). Returns (j, bit) with bit = 1 for "yes"."""
    shape = symbols.shape
    j = rng.integers(0, K, size=shape)
    truth = hadamard_entries(symbols, j) > 0
    keep = rng.random(shape) < (1.0 - 1.0 / (1.0 + math.exp(epsilon0)))
    return j, (truth == keep).astype(np.uint8)


def hr_sign_sums(j: NDArray[np.int64], bit: NDArray[np.uint8], K: int) -> NDArray[np.float64]:
    """S_j = Σ (2·bit − 1) over the reports of group j (last axis = groups)."""
    return weighted_counts(j, 2.0 * bit - 1.0, K)


def hr_frequencies_from_sums(sums: NDArray[np.float64], n: int, epsilon0: float) -> NDArray[np.float64]:
    """p̂ = c·H S / n with c = (e^{ε0}+1)/(e^{ε0}−1): eq. (7.31) with |US_j| replaced by its mean n/K."""
    e = math.exp(epsilon0)
    return fwht(sums) * ((e + 1.0) / (e - 1.0) / n)


@register
class HadamardResponse(Mechanism):
    """Binary Hadamard response — thesis ch. 7, §7.3.2 (eqs. 7.27–7.31), Theorem 7.3.2 ([AS19]).

    K = 2^⌈log₂ k⌉ groups; a client with symbol x ∈ {0..k−1} draws its group j uniformly and sends
    (j, y) where y = 1{x ∈ B^j} kept w.p. e^{ε0}/(e^{ε0}+1) and flipped otherwise (B^j: the rows with +1
    in column j of H_K). Exactly ε0-LDP for k ≥ 2. Server: p̂ = c H_K S / n, S_j = Σ_{group j} (2y − 1),
    c = (e^{ε0}+1)/(e^{ε0}−1) — eq. (7.31) with the group sizes |US_j| replaced by their mean n/K, which
    keeps it exactly unbiased for the clients' frequencies when the groups are drawn at random, with the
    exact MSE E‖p̂ − p‖² = (c² k − 1)/n for every input (≤ the 2k c²/n of eq. 7.33).

    Bits: the answer is 1 bit (the thesis's count, with the group known from public randomness); behind
    a shuffler the group must travel with the answer, so ``bits_per_report`` = ⌈log₂ K⌉ + 1 and the
    output alphabet has 2K letters (``payload_bits`` = 1).
    """

    POSITION = 7
    name = "hadamard_response"
    description = (
        "Binary Hadamard response on one of k symbols: one yes/no answer about a random Hadamard set."
    )
    source = "Girgis thesis, ch. 7 §7.3.2 (eqs. 7.27–7.31), Theorem 7.3.2; [AS19]"
    PARAMETERS = {
        "epsilon0": eps0_param(),
        "k": Param("integer", "number of symbols (inputs are 0..k−1)", minimum=2, maximum=K_MAX),
    }

    epsilon0: float
    bits_per_report: int
    output_alphabet_size: int

    def _setup(self) -> None:
        """K = 2^⌈log₂ k⌉ groups and c = (e^{ε0}+1)/(e^{ε0}−1); ⌈log₂ K⌉ + 1 bits per report."""
        self.epsilon0 = self.params["epsilon0"]
        self.k: int = self.params["k"]
        self.K = next_power_of_two(self.k)
        self.payload_bits = 1
        self.bits_per_report = log2_ceil(self.K) + 1
        self.output_alphabet_size = 2 * self.K
        e = math.exp(self.epsilon0)
        self.c = (e + 1.0) / (e - 1.0)

    def internals(self) -> dict[str, Any]:
        return {
            "groups": self.K,
            "truth_probability": 1.0 - 1.0 / (1.0 + math.exp(self.epsilon0)),
            "payload_bits": 1,
            "c": self.c,
        }

    def symbols(self, x: ArrayLike, what: str) -> NDArray[np.int64]:
        """Symbols checked to be integers in 0..k−1 (flattened, int64)."""
        arr = as_array(x, what)
        if arr.size and not np.issubdtype(arr.dtype, np.number):
            raise InputError(f"{what} must be integers in 0..{self.k - 1}")
        arr = one_per_client(arr, what)
        if arr.size and (np.any(arr != np.round(arr)) or arr.min() < 0 or arr.max() > self.k - 1):
            raise InputError(f"{what} must be integers in 0..{self.k - 1}")
        return arr.astype(np.int64)

    def randomize(self, x: ArrayLike, rng: np.random.Generator) -> ReportArrays:
        """Symbols (batch,) in 0..k−1 → {"index": (batch,) group j, "bit": (batch,) answer}."""
        rng = check_rng(rng)
        j, bit = hr_randomize(self.symbols(x, f"{self.name} inputs"), self.K, self.epsilon0, rng)
        return {"index": j, "bit": bit}

    def estimate(self, reports: ReportArraysLike) -> NDArray[np.float64]:
        """p̂ = c·H_K S/n, S_j = Σ_{group j} (2y − 1) (eq. 7.31 with |US_j| replaced by n/K), cut to the
        k real symbols."""
        j, bit = check_index_bit(reports, self.K, self.name)
        return hr_frequencies_from_sums(hr_sign_sums(j, bit, self.K), j.size, self.epsilon0)[: self.k]

    def mse(self, n: int | None = None, x: ArrayLike | None = None) -> float:
        """E‖p̂ − p‖² = (c² k − 1)/n exactly, for every input."""
        return (self.c**2 * self.k - 1.0) / n_from(n, x)


def check_index_bit(reports: object, size: int, what: str) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """Hadamard-response reports {"index": j, "bit": y} (flattened): equal-length non-empty arrays,
    integer indices in 0..size − 1 and bits 0/1."""
    j, bit = report_pair(reports, ("index", "bit"), what)
    j, bit = j.reshape(-1), bit.reshape(-1)
    if j.shape != bit.shape or j.size == 0:
        raise InputError(f"{what}: 'index' and 'bit' must be non-empty arrays of the same length")
    if not (np.issubdtype(j.dtype, np.number) and np.issubdtype(bit.dtype, np.number)):
        raise InputError(f"{what}: 'index' and 'bit' must be integer arrays")
    check_indices(j, size, what)
    if not np.all((bit == 0) | (bit == 1)):
        raise InputError(f"{what}: 'bit' entries must be 0 or 1")
    return j.astype(np.int64), bit.astype(np.uint8)
