"""The types shared by every stage of the clone engine: the per-(n, ε0) context, the array
aliases, the g-bin layout and the bin statistics the compiled sum reads (one module, imported by
every stage and importing none, so that no stage imports another for a type)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Protocol

import numpy.typing as npt

#: A numpy array of any shape and dtype (the engines mix float64, int64 and bool arrays).
Array = npt.NDArray[Any]
#: A float or an array of floats (the closed forms broadcast).
ArrayLike = Any


class Ctx:
    """Constants of one (n, ε0): N = n − 1 other users, q = e^{−ε0}, s = tanh(ε0/2) and
    w = 1 − s = 2e^{−ε0}/(1 + e^{−ε0}) (accurate when s rounds to 1), the mean c0 and standard
    deviation σ_C of C ~ Bin(N, q), and a memo of log f_α(0) per order (and per array of orders)."""

    def __init__(self, n: int, eps0: float):
        self.N = n - 1
        self.eps0 = eps0
        self.q = math.exp(-eps0)
        self.q1 = -math.expm1(-eps0)  # 1 − q
        self.s = math.tanh(eps0 / 2.0)
        self.w = 2.0 * math.exp(-eps0) / (1.0 + math.exp(-eps0))  # 1 − s, accurately
        self.log1pq = math.log1p(self.q)
        self.c0 = self.N * self.q
        self.sig_c = math.sqrt(self.N * self.q * self.q1)
        self.lcap_cache: dict[float, float] = {}
        self.lcap_arrays: dict[bytes, Array] = {}


class Layout(NamedTuple):
    """The bin edges on |g|, the index of the first edge of the uniform part and its width
    (:func:`accountant.clones.histogram.bins.bin_edges`)."""

    edges: Array
    first_uniform: int
    width: float


class KeyStats(NamedTuple):
    """Per-key statistics of the cells of a g-histogram, reduced already (the compiled build,
    :func:`accountant.clones.compiled.hist_stats`): log-mass, log-mass under the right-end
    weights, the cells' extreme values of g, their mean, the keys and the layout."""

    LM: Array
    LML: Array
    lo: Array
    hi: Array
    mean: Array
    keys: Array
    layout: Layout


class BinStats(Protocol):
    """The per-bin statistics of a g-histogram that the compiled per-order sum reads (declared
    here for :class:`accountant.clones.histogram.bins.Bins`, which implements them): log-mass,
    log-mass under the right-end weights, the cells' extreme values of g, the mean, whether the
    bin holds one value, the log chord weights, max |g|, the pruning terms and the number of bins
    with positive g (stored first)."""

    LM: Array
    LML: Array
    lo: Array
    hi: Array
    mu: Array
    single: Array
    wl: Array
    wh: Array
    gm: Array
    p1: Array
    p2: Array
    npos: int
