"""Compiled sums of the clone engines besides the histogram's (imported only when numba is
installed and the compiled kernels are on, :func:`accountant.clones.fused.available`; module-level
functions so that numba caches them on disk).

* :func:`pmf_block_sums` — the blocks of binomial pmf terms of :mod:`accountant.clones._cmass`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from numba import njit

from .kernels import Array

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(fn: _F) -> _F:
    """numba's ``njit`` (on-disk cache, no GIL, numpy's floating-point error model)."""
    return cast(_F, njit(cache=True, nogil=True, error_model="numpy")(fn))


@_jit
def pmf_block_sums(x0: Array, last: Array, t0: Array, big_n: float, p: float, q1: float, out: Array) -> None:
    """Per block b: Σ_{k = x0[b]}^{last[b]} t_k with t_{x0} = t0[b] and t_k = t_{k−1}·(N − k + 1)·p/(k·q1)
    (the exact pmf ratios): the numpy path's cumulative products, in the same order."""
    for b in range(x0.size):
        t = t0[b]
        s = t
        k = x0[b] + 1.0
        while k <= last[b]:
            t *= (big_n - k + 1.0) * p / (k * q1)
            s += t
            k += 1.0
        out[b] = s
