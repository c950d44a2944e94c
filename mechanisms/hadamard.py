"""Fast Walsh–Hadamard transform and Hadamard-matrix helpers.

The Hadamard matrix used throughout is Sylvester's (thesis §3.4):
``H_1 = [1]``, ``H_{2d} = [[H_d, H_d], [H_d, -H_d]]``, so that ``H[i, j] = (-1)^{popcount(i & j)}``.
It is symmetric and ``H H = d I``.

``fwht`` applies ``H`` (unnormalised) along the last axis of a batch in ``O(d log d)`` per row,
vectorised over the batch with the reshaping trick: the last axis is viewed as a tensor with one axis
per group of butterfly stages, and each group is one small dense Hadamard product along its axis.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray


def is_power_of_two(d: int) -> bool:
    """d = 2^j for some j ≥ 0 (d & (d − 1) clears the lowest set bit)."""
    return d >= 1 and (d & (d - 1)) == 0


def next_power_of_two(d: int) -> int:
    """The least 2^j ≥ d, for d ≥ 1."""
    if d < 1:
        raise ValueError("d must be at least 1")
    return 1 << (int(d) - 1).bit_length()


def log2_ceil(d: int) -> int:
    """⌈log₂ d⌉ for d ≥ 1 (0 for d = 1)."""
    return (int(d) - 1).bit_length()


_BLOCK_BITS = 5


@lru_cache(maxsize=16)
def _factor(bits: int) -> NDArray[np.float64]:
    """The Sylvester Hadamard matrix H_{2^bits}, read-only and cached (the Kronecker factors of ``fwht``)."""
    h = hadamard_matrix(1 << bits)
    h.setflags(write=False)
    return h


def fwht(x: ArrayLike) -> NDArray[np.float64]:
    """Unnormalised fast Walsh–Hadamard transform ``H x`` row-wise along the last axis (``d`` a power of 2).

    The log₂ d butterfly stages are grouped into blocks of at most 5 stages; a block of b stages is the
    Kronecker factor H_{2^b} (H_{2^{a+b}} = H_{2^a} ⊗ H_{2^b}), applied to the whole batch as one small
    dense matrix product along its axis (BLAS). Cost d·Σ 2^{b_i} ≤ 32·d·⌈log₂ d / 5⌉ flops per row —
    O(d log d) — with a handful of passes over memory instead of one per stage. Returns a new float64
    array (the input is not modified).
    """
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    if not is_power_of_two(d):
        raise ValueError(f"fwht needs a power-of-two length, got {d}")
    lead = x.shape[:-1]
    rows = int(np.prod(lead)) if lead else 1
    y = x.reshape(rows, d)
    total_bits = d.bit_length() - 1
    blocks = max(1, -(-total_bits // _BLOCK_BITS))
    sizes = [total_bits // blocks + (1 if i < total_bits % blocks else 0) for i in range(blocks)]
    pre, post = 1, d
    for b in sizes:
        f = 1 << b
        post //= f
        h = _factor(b)
        y = y.reshape(-1, f) @ h if post == 1 else np.matmul(h, y.reshape(rows * pre, f, post))
        pre *= f
    if y is x.reshape(rows, d) or np.shares_memory(y, x):
        y = y.copy()
    return y.reshape(*lead, d)


def hadamard_coefficients(x: ArrayLike, j: ArrayLike) -> NDArray[np.float64]:
    """``(H x_i)_{j_i}`` for every row i of ``x`` (batch, d) — one coefficient per row in O(d).

    With d = a·b (a = 2^⌊L/2⌋, b = 2^⌈L/2⌉), H_d = H_a ⊗ H_b, so for j = j₁b + j₂ and x viewed as (a, b):
    (H x)_j = Σ_{i₁} H_a[j₁, i₁] Σ_{i₂} H_b[j₂, i₂] x[i₁, i₂] — two batched contractions, one pass over x.
    """
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    if not is_power_of_two(d):
        raise ValueError(f"hadamard_coefficients needs a power-of-two length, got {d}")
    total_bits = d.bit_length() - 1
    la = total_bits // 2
    lb = total_bits - la
    j = np.asarray(j, dtype=np.int64)
    z = np.einsum("nab,nb->na", x.reshape(n, 1 << la, 1 << lb), _factor(lb)[j & ((1 << lb) - 1)])
    out: NDArray[np.float64] = np.einsum("na,na->n", z, _factor(la)[j >> lb])
    return out


def hadamard_entries(rows: ArrayLike, cols: ArrayLike) -> NDArray[np.int8]:
    """``H[rows, cols]`` elementwise (±1 as int8) without building ``H``: ``(-1)^{popcount(r & c)}``."""
    v = np.bitwise_and(np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))
    parity = np.zeros(v.shape, dtype=np.int64)
    while np.any(v):
        parity ^= v & 1
        v = v >> 1
    return (1 - 2 * parity).astype(np.int8)


def hadamard_matrix(d: int) -> NDArray[np.float64]:
    """The dense ``d × d`` Sylvester Hadamard matrix (only for small ``d``: tests and tables)."""
    if not is_power_of_two(d):
        raise ValueError(f"Hadamard matrix order must be a power of two, got {d}")
    i = np.arange(d)
    return hadamard_entries(i[:, None], i[None, :]).astype(np.float64)
