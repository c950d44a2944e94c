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


#: The randomizers whose clone probability the engines know (:func:`clone_law`).
RANDOMIZERS = ("any", "rr")


class Precision(NamedTuple):
    """How fine a histogram design is (steering only: every design gives a valid bound): the
    C-grid's target relative slack (:func:`accountant.clones.grid.cgrid.c_grid`), the widest g-bin
    and the geometric ratio of the g-bins near 0 (:func:`accountant.clones.histogram.bins.bin_edges`)."""

    rho: float
    dg: float
    ratio: float


#: Per randomizer. Randomized response's curve replaced the subsampled clone engine's
#: (:mod:`accountant.subsampled_clones` at γ = 1), whose exact window sums have ~10⁻³ less slack at
#: large n and at orders ≳ 10³; its design is finer so that it is not looser (bounds.md §12:
#: within 7·10⁻⁴ relative at every order of the default grid, n 10³–10⁷, ε0 0.1–8), at ~1.5× the cost.
PRECISION = {"any": Precision(1.5e-3, 7.5e-4, 1.03), "rr": Precision(7.5e-4, 1e-4, 1.005)}


def clone_law(eps0: float, randomizer: str = "any") -> tuple[float, float]:
    """(p, 1 − p), p the clone probability of the decomposition every other user's report admits
    (bounds.md §12): e^{−ε0} for ANY ε0-LDP randomizer (FMT21 §3); 2/(e^{ε0}+1) for binary and
    k-ary randomized response (``"rr"``), 1 − p = tanh(ε0/2) then (both accurate for every ε0)."""
    if randomizer == "rr":
        return (2.0 / (math.exp(eps0) + 1.0) if eps0 < 700 else 0.0), math.tanh(eps0 / 2.0)
    if randomizer != "any":
        raise ValueError(f"unknown randomizer {randomizer!r}; use one of {', '.join(RANDOMIZERS)}")
    return math.exp(-eps0), -math.expm1(-eps0)


class Ctx:
    """Constants of one (n, ε0, randomizer): N = n − 1 other users, q = e^{−ε0} (the changed
    user's odds: Q_c = (b_c(x) + q·b_c(x−1))/(1 + q)), s = tanh(ε0/2) and w = 1 − s =
    2e^{−ε0}/(1 + e^{−ε0}) (accurate when s rounds to 1), the clone probability p and p1 = 1 − p
    (:func:`clone_law`: p = q for any randomizer), the mean c0 and standard deviation σ_C of
    C ~ Bin(N, p), and a memo of log f_α(0) per order (and per array of orders). Only the law of
    C depends on the randomizer: f_α(c), its monotonicity in c and f_α(0) (the cap) do not."""

    def __init__(self, n: int, eps0: float, randomizer: str = "any"):
        self.N = n - 1
        self.eps0 = eps0
        self.randomizer = randomizer
        self.q = math.exp(-eps0)
        self.q1 = -math.expm1(-eps0)  # 1 − q
        self.p, self.p1 = clone_law(eps0, randomizer)
        self.precision = PRECISION[randomizer]
        self.s = math.tanh(eps0 / 2.0)
        self.w = 2.0 * math.exp(-eps0) / (1.0 + math.exp(-eps0))  # 1 − s, accurately
        self.log1pq = math.log1p(self.q)
        self.c0 = self.N * self.p
        self.sig_c = math.sqrt(self.N * self.p * self.p1)
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
