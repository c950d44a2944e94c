"""Fast Walsh–Hadamard transform and Hadamard-matrix helpers.

The Hadamard matrix used throughout is Sylvester's (thesis §3.4):
``H_1 = [1]``, ``H_{2d} = [[H_d, H_d], [H_d, -H_d]]``, so that ``H[i, j] = (-1)^{popcount(i & j)}``.
It is symmetric and ``H H = d I``.

``fwht`` applies ``H`` (unnormalised) along the last axis of a batch in ``O(d log d)`` per row,
vectorised over the batch with the reshaping trick: at stage ``h`` the last axis is viewed as
``(d / 2h, 2, h)`` and the two halves of every block are combined with one butterfly.
"""

from __future__ import annotations

import numpy as np


def is_power_of_two(d: int) -> bool:
    return d >= 1 and (d & (d - 1)) == 0


def next_power_of_two(d: int) -> int:
    if d < 1:
        raise ValueError("d must be at least 1")
    return 1 << (int(d) - 1).bit_length()


def log2_ceil(d: int) -> int:
    """⌈log₂ d⌉ for d ≥ 1 (0 for d = 1)."""
    return (int(d) - 1).bit_length()


def fwht(x: np.ndarray, *, inplace: bool = False) -> np.ndarray:
    """Unnormalised fast Walsh–Hadamard transform ``x @ H`` (= ``H x`` row-wise) along the last axis.

    ``x`` has shape ``(..., d)`` with ``d`` a power of two. Returns a float64 array of the same shape.
    With ``inplace=True`` and a float64 C-contiguous input, the input buffer is reused.
    """
    x = np.asarray(x)
    d = x.shape[-1]
    if not is_power_of_two(d):
        raise ValueError(f"fwht needs a power-of-two length, got {d}")
    if inplace and x.dtype == np.float64 and x.flags.c_contiguous:
        y = x
    else:
        y = np.array(x, dtype=np.float64, order="C", copy=True)
    lead = y.shape[:-1]
    flat = y.reshape(-1, d)
    rows = flat.shape[0]
    h = 1
    while h < d:
        v = flat.reshape(rows, d // (2 * h), 2, h)
        top = v[:, :, 0, :]
        bottom = v[:, :, 1, :]
        tmp = top.copy()
        top += bottom           # a + b
        tmp -= bottom           # a - b
        bottom[...] = tmp
        h *= 2
    return flat.reshape(*lead, d)


def hadamard_entries(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``H[rows, cols]`` elementwise (±1 as int8) without building ``H``: ``(-1)^{popcount(r & c)}``."""
    v = np.bitwise_and(np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))
    parity = np.zeros(v.shape, dtype=np.int64)
    while np.any(v):
        parity ^= v & 1
        v = v >> 1
    return (1 - 2 * parity).astype(np.int8)


def hadamard_matrix(d: int) -> np.ndarray:
    """The dense ``d × d`` Sylvester Hadamard matrix (only for small ``d``: tests and tables)."""
    if not is_power_of_two(d):
        raise ValueError(f"Hadamard matrix order must be a power of two, got {d}")
    i = np.arange(d)
    return hadamard_entries(i[:, None], i[None, :]).astype(np.float64)
