"""Named bounds and the default (tightest valid) upper bound, per model (bounds.md §1–3, §8).

``shuffle_rdp`` and ``subsampled_shuffle_rdp`` are the public entry points; each named bound is
one function in :mod:`accountant.shuffle`, :mod:`accountant.subsampled`, :mod:`accountant.clones`,
:mod:`accountant.wbk19` or :mod:`accountant.subsampled_clones` whose docstring names its theorem
and validity conditions. The default
``upper`` is the order-wise minimum of every valid upper bound implemented, extended to real
orders through the convexity of (α−1)ε(α) (Remark 5.3.2); ``*_detail`` also says which bound
gave each value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import shuffle as _sh
from . import subsampled as _ss
from ._numerics import also_at, convex_tighten, interpolate_integer_bound, round_up
from ._numerics import checked_curve as _checked
from ._numerics import safe_bound as _safe
from ._validation import check_epsilon0, check_int, check_n, check_orders
from .clones import CLONES_MAX_N, RANDOMIZERS, clone_rdp
from .errors import BoundNotApplicable, InvalidParameter
from .nested import wbk19_over, wbk_inner_orders
from .store import BoundedCache, MiB, cached_curve, checkpoint
from .subsampled_clones import subsampled_clone_rdp
from .subsampled_floor import dominated

#: whether the default curves include the tighter bounds of bounds.md §8 (clones, WBK19)
_TIGHT: ContextVar[bool] = ContextVar("accountant_tight_bounds", default=True)


def tight_bounds() -> bool:
    """Whether the default (``upper``) curves use the bounds beyond the thesis (bounds.md §8)."""
    return _TIGHT.get()


@contextmanager
def _tight() -> Iterator[None]:
    """Named bounds (``clones``, ``wbk19``) are computed whatever the default's setting."""
    token = _TIGHT.set(True)
    try:
        yield
    finally:
        _TIGHT.reset(token)


@contextmanager
def gir23_only() -> Iterator[None]:
    """Within this block (this thread or task only), the default ``upper`` curves use the
    thesis's bounds ([Gir23]: Girgis, PhD thesis, UCLA 2023) and the pure-DP caps alone — no clone reduction, no WBK19: for comparisons
    with the thesis and for fast tests of the machinery around the curves. Cached curves are
    keyed by this setting, so the two never mix."""
    token = _TIGHT.set(False)
    try:
        yield
    finally:
        _TIGHT.reset(token)


OUTPUTS = ("discrete", "continuous")
SHUFFLE_BOUNDS = (
    "upper",
    "u1",
    "u1_simplified",
    "u2",
    "cap",
    "clones",
    "thesis",
    "lower",
    "lower_simplified",
    "efm19",
    "fmt23",
)
SUBSAMPLED_BOUNDS = ("upper", "su", "wbk19", "subsampled_clones", "cap", "thesis", "lower")
# bounds of ch. 5 that need a discrete output range
_DISCRETE_ONLY = {"u1", "u1_simplified", "u2", "thesis", "su", "lower", "lower_simplified"}


@dataclass
class CurveDetail:
    """An upper curve with, per order, the name of the bound that gave it, and notes."""

    orders: NDArray[np.float64]
    rdp: NDArray[np.float64]
    sources: list[str]
    notes: list[str] = field(default_factory=list)


def _hull(
    o: NDArray[np.float64], vals: NDArray[np.float64], sources: list[str]
) -> tuple[NDArray[np.float64], list[str]]:
    """Apply the convexity tightening (see :func:`accountant._numerics.convex_tighten`)."""
    tight = convex_tighten(o, vals)
    return tight, [s if t >= v else "convex hull" for s, t, v in zip(sources, tight.tolist(), vals.tolist())]


_DETAILS: BoundedCache[tuple[object, ...], CurveDetail] = BoundedCache(256, 32 * MiB, name="shuffle_details")


def _cached_detail(
    kind: str, compute: Callable[[], CurveDetail], *params: object, orders: ArrayLike
) -> CurveDetail:
    """The default curves with their sources are asked for twice per answer (the composition,
    then the per-order sources of the response): kept in a small LRU, keyed by the parameters,
    the orders and :func:`tight_bounds`."""
    o = np.ascontiguousarray(orders, dtype=float)
    key = (kind, *params, o.tobytes(), _TIGHT.get())
    got = _DETAILS.get(key)
    if got is None:
        checkpoint()
        got = compute()
        got.rdp.setflags(write=False)
        _DETAILS.put(key, got)
    return CurveDetail(got.orders, got.rdp, list(got.sources), list(got.notes))


def _check_output(output: str) -> str:
    if output not in OUTPUTS:
        raise InvalidParameter(f"output must be one of {list(OUTPUTS)}, got {output!r}")
    return output


def _check_bound(bound: str, allowed: tuple[str, ...], model: str, output: str) -> str:
    if bound not in allowed:
        raise InvalidParameter(
            f"unknown bound {bound!r} for the {model} model; choose one of {list(allowed)}"
        )
    if output == "continuous" and bound in _DISCRETE_ONLY:
        raise BoundNotApplicable(
            f"bound {bound!r} (thesis ch. 5) holds only for randomizers with a discrete output range; "
            "for output 'continuous' use 'upper', 'cap' or 'clones'"
        )
    return bound


CLONES_VERSION = 5  # bump when the clone evaluation changes, so stored curves are not reused


def _clones(n: int, epsilon0: float, orders: NDArray[np.float64]) -> NDArray[np.float64]:
    """The clone bound, from the curve store when this (n, ε0, orders) was computed before."""
    if not _TIGHT.get() or n > CLONES_MAX_N:
        return np.full(orders.shape, np.inf)
    if epsilon0 == 0.0:
        return np.zeros(orders.shape)
    # D_α is non-decreasing in α, so orders within 1e-6 of 1 use the value at 1 + 1e-6 (valid,
    # and away from the 0/0 of log E[R^α]/(α−1))
    at = np.maximum(orders, 1.0 + 1e-6)
    return _safe(
        lambda: cached_curve(
            "clones",
            CLONES_VERSION,
            orders,
            lambda: _checked(clone_rdp(n, epsilon0, at), orders),
            n=int(n),
            epsilon0=float(epsilon0),
        ),
        "clones",
        orders,
        (n, epsilon0),
    )


SUBSAMPLED_CLONES_VERSION = 1  # bump when the subsampled clone evaluation changes


def _subsampled_clones(n: int, k: int, epsilon0: float, orders: NDArray[np.float64]) -> NDArray[np.float64]:
    """The subsampled clone bound (bounds.md §9), from the curve store when this (n, k, ε0,
    orders) was computed before; +inf where it is switched off (gir23_only), beyond its cell
    budget, or if it fails (logged)."""
    if not _TIGHT.get():
        return np.full(orders.shape, np.inf)
    if epsilon0 == 0.0:
        return np.zeros(orders.shape)
    return _safe(
        lambda: cached_curve(
            "subsampled_clones",
            SUBSAMPLED_CLONES_VERSION,
            orders,
            lambda: _checked(subsampled_clone_rdp(n, k, epsilon0, orders), orders),
            n=int(n),
            k=int(k),
            epsilon0=float(epsilon0),
        ),
        "subsampled_clones",
        orders,
        (n, k, epsilon0),
    )


RR_CLONES_VERSION = 2  # bump when the randomized-response clone evaluation changes
Named = list[tuple[str, NDArray[np.float64]]]  # named candidate curves (_shuffle_upper_detail)


def _rr_clone_rdp(n: int, k: int, epsilon0: float, orders: NDArray[np.float64]) -> NDArray[np.float64]:
    """The randomized-response clone pair's certified curve: all n users (k = n) by the clone
    engine with C ~ Bin(n−1, 2/(e^{ε0}+1)) (:func:`accountant.clones.clone_rdp`, ``randomizer="rr"``:
    the subsampled pair at γ = 1, for a fifth of the subsampled engine's time and with no cell
    budget) while n ≤ CLONES_MAX_N, else the subsampled clone engine (bounds.md §9, §12)."""
    if k == n and n <= CLONES_MAX_N:
        return clone_rdp(n, epsilon0, np.maximum(orders, 1.0 + 1e-6), randomizer="rr")
    return subsampled_clone_rdp(n, k, epsilon0, orders, randomizer="rr")


def rr_clones(
    n: int, k: int, epsilon0: float, orders: NDArray[np.float64], named: bool = False
) -> NDArray[np.float64]:
    """The ``clones_rr`` bound (bounds.md §12): the (subsampled, k < n) clone pair of clone
    probability 2/(e^{ε0}+1), valid when every user applies binary or k-ary randomized response,
    capped by the pure-DP cap; from the curve store when computed before; +inf where switched
    off (gir23_only; ``named``: asked for by name, computed whatever that setting), beyond its
    cell budget, or if it fails (logged). It dominates the generic clone pair of the same n, k
    (bounds.md §12: a Markov kernel maps the generic pair onto it), so the default curves of the
    randomized-response events use it in place of the generic pair."""
    if not (named or _TIGHT.get()):
        return np.full(orders.shape, np.inf)
    if epsilon0 == 0.0:
        return np.zeros(orders.shape)
    return _safe(
        lambda: cached_curve(
            "clones_rr",
            RR_CLONES_VERSION,
            orders,
            lambda: _checked(_rr_clone_rdp(n, k, epsilon0, orders), orders),
            n=int(n),
            k=int(k),
            epsilon0=float(epsilon0),
        ),
        "clones_rr",
        orders,
        (n, k, epsilon0),
    )


def _check_randomizer(randomizer: str) -> str:
    if randomizer not in RANDOMIZERS:
        raise InvalidParameter(f"randomizer must be one of {list(RANDOMIZERS)}, got {randomizer!r}")
    return randomizer


def _clone_note(n: int, randomizer: str = "any") -> list[str]:
    if not _TIGHT.get():
        return [
            "the bounds beyond the thesis are switched off (gir23_only): thesis bounds and pure-DP caps only"
        ]
    if n > CLONES_MAX_N and randomizer == "any":
        return [
            f"the clone bound is certified only up to n = {CLONES_MAX_N:,} within the time budget; "
            f"n = {n:,} uses the thesis bounds and the pure-DP cap"
        ]
    return []


def shuffle_upper_detail(
    n: int, epsilon0: float, orders: ArrayLike, output: str = "discrete", randomizer: str = "any"
) -> CurveDetail:
    """Default shuffle upper bound with its per-order source.

    discrete: min(interp(min(U1, U2, cap) at integers), U2, cap, clones);
    continuous: min(cap, clones) (only the bounds valid for every ε0-LDP randomizer).
    ``randomizer="rr"`` (every user applies binary or k-ary randomized response, the default of
    ``shuffle_rr``): the clone pair of randomized response (``clones_rr``, :func:`rr_clones`) in
    place of the generic one, which it dominates (bounds.md §12) — the generic pair is not computed.
    """
    o = check_orders(orders)
    n = check_n(n)
    epsilon0 = check_epsilon0(epsilon0)
    _check_output(output)
    _check_randomizer(randomizer)
    return _cached_detail(
        "shuffle",
        lambda: _shuffle_upper_detail(n, epsilon0, o, output, randomizer),
        n,
        epsilon0,
        output,
        randomizer,
        orders=o,
    )


def _shuffle_upper_detail(
    n: int, epsilon0: float, o: NDArray[np.float64], output: str, randomizer: str, extra: Named | None = None
) -> CurveDetail:
    rr = randomizer == "rr"  # extra: curves in place of the clone pair's (binary shuffle_rr, bounds.md §13)
    if extra is None:
        extra = [("clones_rr", rr_clones(n, n, epsilon0, o))] if rr else [("clones", _clones(n, epsilon0, o))]
    names, cands = ["cap"] + [name for name, _ in extra], [vals for _, vals in extra]
    cap_i, cap_o = also_at(lambda x: _sh.cap(epsilon0, x), o)
    u2_i, u2_o = also_at(lambda x: _sh.u2(n, epsilon0, x), o)
    if output == "discrete":

        def int_min(ints: NDArray[np.int64]) -> NDArray[np.float64]:
            return np.asarray(np.minimum.reduce([_sh._u1_int(n, epsilon0, ints), u2_i(ints), cap_i(ints)]))

        # at an integer order the interpolated minimum is min(U1, U2, cap) itself
        names += ["u1", "u2"]
        cands += [round_up(interpolate_integer_bound(o, int_min)), u2_o()]
    stack = np.stack([cap_o(), *cands])
    idx = np.argmin(stack, axis=0)
    vals = stack[idx, np.arange(o.size)]
    is_int = (o == np.floor(o)).tolist()
    sources = [
        ("u1" if is_int[j] else "u1/u2 interpolated") if names[i] == "u1" else names[i]
        for j, i in enumerate(idx.tolist())
    ]
    vals, sources = _hull(o, vals, sources)
    return CurveDetail(o, vals, sources, _clone_note(n, randomizer))


def shuffle_rdp(
    n: int, epsilon0: float, orders: ArrayLike, bound: str = "upper", output: str = "discrete"
) -> NDArray[np.float64]:
    """RDP of the shuffle model at each order, for the named bound.

    bound: ``upper`` (default; the tightest valid bound, bounds.md §1/§8), ``u1`` (Thm 5.3.1),
    ``u1_simplified`` (Cor. 5.3.1), ``u2`` (Thm 5.3.2), ``cap`` (pure DP), ``clones``
    (Feldman–McMillan–Talwar 2021), ``thesis`` (the thesis's bounds alone), ``lower`` (exact
    Thm 5.3.3), ``lower_simplified`` (Cor. 5.3.2), ``efm19`` and ``fmt23`` (comparison curves).
    output: ``discrete`` (default) or ``continuous`` — ch. 5's bounds need a discrete output
    range; for continuous outputs only ``upper``/``cap``/``clones`` apply.
    """
    o = check_orders(orders)
    n = check_n(n)
    epsilon0 = check_epsilon0(epsilon0)
    _check_output(output)
    _check_bound(bound, SHUFFLE_BOUNDS, "shuffle", output)
    if bound == "upper":
        return shuffle_upper_detail(n, epsilon0, o, output).rdp
    if bound == "clones":
        if n > CLONES_MAX_N:
            raise BoundNotApplicable(_clone_note(n)[0])
        with _tight():
            return _clones(n, epsilon0, o)
    if bound == "cap":
        return _sh.cap(epsilon0, o)
    fn = {
        "u1": _sh.u1,
        "u1_simplified": _sh.u1_simplified,
        "u2": _sh.u2,
        "thesis": _sh.gir23_upper,
        "lower": _sh.lower,
        "lower_simplified": _sh.lower_simplified,
        "efm19": _sh.efm19,
        "fmt23": _sh.fmt23,
    }[bound]
    return fn(n, epsilon0, o)


def _check_nk(n: int, k: int) -> tuple[int, int]:
    n = check_n(n)
    k = check_int("k", k, 1, n) if not (isinstance(k, (int, np.integer)) and 1 <= k <= n) else int(k)
    return n, k


def _wbk19(
    n: int,
    k: int,
    epsilon0: float,
    ints: NDArray[np.int64],
    output: str,
    k_curve: Callable[[NDArray[np.float64]], NDArray[np.float64]] | None = None,
) -> NDArray[np.float64]:
    """WBK19 Thm 9 with the tightest inner curve of the k-user shuffle at integer orders
    (:func:`accountant.nested.wbk19_over`; any valid inner curve is allowed, since WBK19's bound
    is increasing in each ε(j)).

    ``k_curve(orders)`` returns that inner curve at given orders (default: the k-user shuffle's
    default upper bound, computed here); the subsampled default passes one it shares with its
    own "k-user shuffle" candidate, so the costly clone curve of k users is computed once."""
    if epsilon0 == 0.0:
        return np.zeros(ints.shape)
    if not _TIGHT.get():
        return np.full(ints.shape, np.inf)
    if k_curve is None:

        def k_curve(os_: NDArray[np.float64]) -> NDArray[np.float64]:
            return shuffle_upper_detail(k, epsilon0, os_, output).rdp

    return _safe(
        lambda: _checked(wbk19_over(k / n, k_curve, epsilon0, ints.astype(float)), ints),
        "wbk19",
        ints,
        (n, k, epsilon0),
    )


def subsampled_upper_detail(
    n: int, k: int, epsilon0: float, orders: ArrayLike, output: str = "discrete", randomizer: str = "any"
) -> CurveDetail:
    """Default subsampled-shuffle upper bound with its per-order source:
    min(interp(min(SU, WBK19, cap) at integers), cap, the k-user shuffle's own default curve,
    the subsampled clone pair (bounds.md §9)). SU only for discrete outputs and k ≥ 2.
    ``randomizer="rr"`` (the default of ``subsampled_shuffle_rr``, bounds.md §12): the k-user
    curve (WBK19's inner curve and a candidate) is the ``rr`` one of :func:`shuffle_upper_detail`
    and the subsampled pair is randomized response's (``clones_rr``, :func:`rr_clones`): each
    dominates the generic pair it replaces, which is not computed."""
    o = check_orders(orders)
    n, k = _check_nk(n, k)
    epsilon0 = check_epsilon0(epsilon0)
    _check_output(output)
    _check_randomizer(randomizer)
    return _cached_detail(
        "subsampled",
        lambda: _subsampled_upper_detail(n, k, epsilon0, o, output, randomizer),
        n,
        k,
        epsilon0,
        output,
        randomizer,
        orders=o,
    )


def _subsampled_upper_detail(
    n: int, k: int, epsilon0: float, o: NDArray[np.float64], output: str, randomizer: str
) -> CurveDetail:
    labels = {0: "cap", 1: "su", 2: "wbk19"}
    chosen: dict[int, int] = {}
    sc, pair_names = _subsampled_pair(n, k, epsilon0, o, randomizer)
    capv = _ss.cap(n, k, epsilon0, o)
    # the k-user curve and the interpolated SU/WBK19 provably above min(cap, pair) at every order
    # (accountant.subsampled_floor; its floors, of shuffled binary RR, hold for ``rr`` too): skipped
    if dominated(n, k, epsilon0, o, output, np.minimum(capv, sc)):
        interp = inner = np.full(o.shape, np.inf)
    else:
        interp, inner = _subsampled_rest(n, k, epsilon0, o, output, chosen, randomizer)
    return _subsampled_min(o, (interp, capv, inner, sc), labels, chosen, k, pair_names, randomizer)


def _subsampled_rest(
    n: int,
    k: int,
    epsilon0: float,
    o: NDArray[np.float64],
    output: str,
    chosen: dict[int, int],
    randomizer: str,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The interpolated min(cap, SU, WBK19) and the k-user shuffle's own curve at ``o``."""
    # The k-user shuffle curve serves twice — WBK19's inner curve (integer orders) and the
    # "k-user shuffle" candidate (the requested orders) — so it is computed once, on the union.
    shared: dict[float, float] = {}
    if epsilon0 > 0:
        union = np.unique(np.concatenate([o, wbk_inner_orders(float(np.ceil(o.max())))]))
        shared = dict(
            zip(union.tolist(), shuffle_upper_detail(k, epsilon0, union, output, randomizer).rdp.tolist())
        )

    def k_curve(os_: ArrayLike) -> NDArray[np.float64]:
        os_ = np.asarray(os_, dtype=float)
        if all(v in shared for v in os_.tolist()):
            return np.array([shared[v] for v in os_.tolist()])
        return shuffle_upper_detail(k, epsilon0, os_, output, randomizer).rdp

    def int_min(ints: ArrayLike) -> NDArray[np.float64]:
        ints = np.asarray(ints, dtype=np.int64)
        c = [_ss.cap(n, k, epsilon0, ints)]
        c.append(
            _ss._su_int(n, k, epsilon0, ints)
            if (output == "discrete" and k >= 2)
            else np.full(ints.shape, np.inf)
        )
        c.append(_wbk19(n, k, epsilon0, ints, output, k_curve))
        st = np.stack(c)
        arg = np.argmin(st, axis=0)
        chosen.update(zip(ints.tolist(), arg.tolist()))
        out: NDArray[np.float64] = st[arg, np.arange(ints.size)]
        return out

    interp = round_up(interpolate_integer_bound(o, int_min))
    # Subsampling never hurts: by joint quasi-convexity of D_α over the (common) sample sets, the
    # subsampled curve is at most the k-user shuffle's own curve.
    inner = k_curve(o) if epsilon0 > 0 else np.zeros(o.shape)
    return interp, inner


def _subsampled_min(
    o: NDArray[np.float64],
    cands: tuple[NDArray[np.float64], ...],
    labels: dict[int, str],
    chosen: dict[int, int],
    k: int,
    pair_names: list[str],
    randomizer: str,
) -> CurveDetail:
    interp, capv, inner, sc = cands
    vals = np.minimum.reduce([interp, capv, inner, sc])
    sources: list[str] = []
    for a, v, c, s, z, pn in zip(
        o.tolist(), interp.tolist(), capv.tolist(), inner.tolist(), sc.tolist(), pair_names
    ):
        if c <= min(v, s, z):
            sources.append("cap")
        elif z < min(v, s):
            sources.append(pn)
        elif s < v:
            sources.append("shuffle_k")
        elif a.is_integer():
            sources.append(labels[chosen.get(int(a), 0)])
        else:
            sources.append("interpolated")
    vals, sources = _hull(o, vals, sources)
    return CurveDetail(o, vals, sources, _clone_note(k, randomizer) + _subsampled_clones_note(sc))


def _subsampled_pair(
    n: int, k: int, epsilon0: float, o: NDArray[np.float64], randomizer: str
) -> tuple[NDArray[np.float64], list[str]]:
    """The subsampled clone pair's curve of ``randomizer`` and the name of each value. For ``"rr"``
    (``clones_rr``) the orders beyond its cell budget (+inf; C grows with the clone probability,
    and so do the cells) take the generic pair's value where that one fits: valid for randomized
    response too (an ε0-LDP randomizer), so the curve is never above the generic pair's."""
    if randomizer == "any":
        sc = _subsampled_clones(n, k, epsilon0, o)
        return sc, ["subsampled_clones"] * o.size
    sc = rr_clones(n, k, epsilon0, o)
    names = ["clones_rr"] * o.size
    miss = np.flatnonzero(np.isinf(sc))
    if miss.size and k < n:
        sc = sc.copy()
        sc[miss] = _subsampled_clones(n, k, epsilon0, o[miss])
        for i in miss.tolist():
            names[i] = "subsampled_clones"
    return sc, names


def _subsampled_clones_note(sc: NDArray[np.float64]) -> list[str]:
    if not _TIGHT.get() or not np.any(np.isinf(sc)):
        return []
    return [
        "the subsampled clone bound is not certified within its time budget at "
        f"{int(np.isinf(sc).sum())} of the orders; those use the other bounds"
    ]


def subsampled_shuffle_rdp(
    n: int,
    k: int,
    epsilon0: float,
    orders: ArrayLike,
    bound: str = "upper",
    output: str = "discrete",
    sampling: str = "without_replacement",
) -> NDArray[np.float64]:
    """RDP of the subsampled shuffle model (k of n sampled uniformly without replacement).

    bound: ``upper`` (default, tightest valid), ``su`` (Thm 5.4.1; integer α, 2 ≤ k ≤ n),
    ``wbk19`` (WBK19 Thm 9 over the tightest k-user shuffle curve; integer α),
    ``subsampled_clones`` (the subsampled clone pair, bounds.md §9; any real α), ``cap``
    (Lemma 2.1.1 + pure DP), ``thesis`` (min(SU, cap) interpolated), ``lower`` (exact Thm 5.4.2).
    Poisson sampling and client self-sampling are refused: these theorems do not cover them.
    """
    if sampling != "without_replacement":
        raise BoundNotApplicable(
            f"sampling {sampling!r} is not covered: the subsampled-shuffle theorems (thesis §5.4, WBK19) hold "
            "for sampling k of n users uniformly without replacement only ('without_replacement'); "
            "Poisson sampling and client self-sampling give a random number of reports"
        )
    o = check_orders(orders)
    n, k = _check_nk(n, k)
    epsilon0 = check_epsilon0(epsilon0)
    _check_output(output)
    _check_bound(bound, SUBSAMPLED_BOUNDS, "subsampled_shuffle", output)
    if bound == "upper":
        return subsampled_upper_detail(n, k, epsilon0, o, output).rdp
    if bound == "cap":
        return _ss.cap(n, k, epsilon0, o)
    if bound == "lower":
        return _ss.lower(n, k, epsilon0, o)
    if bound == "su":
        return _ss.su(n, k, epsilon0, o)
    if bound == "subsampled_clones":
        with _tight():
            return _subsampled_clones(n, k, epsilon0, o)
    from ._validation import integer_orders

    if bound == "wbk19":
        with _tight():
            return _wbk19(n, k, epsilon0, integer_orders(o, "wbk19"), output)
    # thesis: min(SU, cap) at integers, interpolated, min cap
    if k < 2:
        return _ss.cap(n, k, epsilon0, o)

    def int_min(ints: NDArray[np.int64]) -> NDArray[np.float64]:
        out: NDArray[np.float64] = np.minimum(
            _ss._su_int(n, k, epsilon0, ints), _ss.cap(n, k, epsilon0, ints)
        )
        return out

    thesis: NDArray[np.float64] = np.minimum(
        round_up(interpolate_integer_bound(o, int_min)), _ss.cap(n, k, epsilon0, o)
    )
    return thesis
