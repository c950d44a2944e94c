"""Events of the shuffle model: every user (or a sample of k users) sends ε0-LDP reports to a
shuffler (thesis ch. 5; bounds.md §1–3, §8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .. import bounds as _b
from .. import shuffled_rr
from ..dominating import HockeyStickPair, clone_pair_curve, subsampled_clone_pair_curve
from ..errors import InvalidEvent
from ._declare import (
    POPULATION,
    SAMPLE_SIZE,
    Event,
    HeavyPart,
    epsilon0_field,
    output_field,
    register,
    sampling_field,
    spec,
    users_field,
)

#: the largest alphabet of the randomized-response events (mechanisms' K_MAX is smaller)
MAX_CATEGORIES = 10**9


@register
@dataclass(frozen=True, kw_only=True)
class ShuffleEvent(Event):
    """n users each send one ε0-LDP report through a shuffler; the server sees the multiset."""

    PURE_EXACT: ClassVar[bool] = True  # pure_epsilon() is a declared field
    mechanism: ClassVar[str] = "shuffle"
    POSITION: ClassVar[int] = 0
    SAMPLING: ClassVar[str] = "none: all n users report in every repetition"
    SOURCE: ClassVar[str] = (
        "thesis Thm 5.3.1 (U1), Thm 5.3.2 (U2, corrected), the pure-DP cap and the clone reduction "
        "(Feldman–McMillan–Talwar, FOCS 2021, §3); bounds.md §1, §8"
    )
    BOUNDS: ClassVar[tuple[str, ...]] = _b.SHUFFLE_BOUNDS
    EXAMPLE: ClassVar[dict[str, Any]] = {"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100}

    n: int = users_field("number of users whose reports are shuffled", calibrate=POPULATION, population=True)
    epsilon0: float = epsilon0_field()
    output: str = output_field()

    def unit_curve(self, orders: NDArray[np.float64], bound: str = "upper") -> NDArray[np.float64]:
        return _b.shuffle_rdp(self.n, self.epsilon0, orders, bound=bound, output=self.output)

    def curve_sources(self, orders: NDArray[np.float64], bound: str = "upper") -> tuple[list[str], list[str]]:
        if bound != "upper":
            return [bound] * orders.size, []
        d = _b.shuffle_upper_detail(self.n, self.epsilon0, orders, self.output)
        return list(d.sources), list(d.notes)

    def pure_epsilon(self) -> float:
        return self.epsilon0

    def dominating_pair(self) -> HockeyStickPair:
        return clone_pair_curve(self.n, self.epsilon0)  # FMT21 §3, discrete or continuous outputs

    def heavy_parts(self) -> frozenset[HeavyPart]:
        return frozenset({("shuffle", self.n, self.epsilon0, self.output)})


@register
@dataclass(frozen=True, kw_only=True)
class SubsampledShuffleEvent(Event):
    """k of n users are sampled uniformly without replacement, each sampled user sends ONE ε0-LDP
    report, the k reports are shuffled. (Several messages per sampled user: use ``subsampled``.)"""

    mechanism: ClassVar[str] = "subsampled_shuffle"
    POSITION: ClassVar[int] = 1
    SAMPLING: ClassVar[str] = (
        "k of n users uniformly without replacement, independently of the data and in every repetition; "
        "the analyst learns nothing about who was sampled; Poisson sampling and client self-sampling are "
        "not covered"
    )
    SOURCE: ClassVar[str] = (
        "thesis Thm 5.4.1 (SU), WBK19 Thm 9 over the tightest k-user shuffle curve, the subsampled clone "
        "pair (FMT21's clone decomposition under sampling), the cap of thesis Lemma 2.1.1; bounds.md §3, §8, §9"
    )
    BOUNDS: ClassVar[tuple[str, ...]] = _b.SUBSAMPLED_BOUNDS
    SAMPLED: ClassVar[bool] = True
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "mechanism": "subsampled_shuffle",
        "n": 1000000,
        "k": 1000,
        "epsilon0": 2.0,
        "count": 100000,
    }

    n: int = users_field("population size", calibrate=POPULATION)
    k: int = users_field("users sampled per round (1 ≤ k ≤ n)", calibrate=SAMPLE_SIZE)
    epsilon0: float = epsilon0_field()
    output: str = output_field()
    sampling: str = sampling_field()

    def validate(self) -> None:
        if self.k > self.n:
            raise InvalidEvent(f"k must be <= {self.n} (the population n), got {self.k}")

    def unit_curve(self, orders: NDArray[np.float64], bound: str = "upper") -> NDArray[np.float64]:
        return _b.subsampled_shuffle_rdp(
            self.n, self.k, self.epsilon0, orders, bound=bound, output=self.output, sampling=self.sampling
        )

    def curve_sources(self, orders: NDArray[np.float64], bound: str = "upper") -> tuple[list[str], list[str]]:
        if bound != "upper":
            return [bound] * orders.size, []
        d = _b.subsampled_upper_detail(self.n, self.k, self.epsilon0, orders, self.output)
        return list(d.sources), list(d.notes)

    def pure_epsilon(self) -> float:
        return float(np.log1p(self.k / self.n * np.expm1(self.epsilon0)))

    def dominating_pair(self) -> HockeyStickPair:
        # the subsampled clone pair (bounds.md §9): any ε0-LDP randomizer, discrete or continuous
        return subsampled_clone_pair_curve(self.n, self.k, self.epsilon0)

    def heavy_parts(self) -> frozenset[HeavyPart]:
        return frozenset(
            {
                ("subsampled_shuffle", self.n, self.k, self.epsilon0, self.output),
                ("shuffle", self.k, self.epsilon0, self.output),
            }
        )


RR_BOUNDS = ("upper", "clones_rr", "generic")
_RR_SOURCE = (
    "the clone decomposition of randomized response: every report is a clone of the changed user's "
    "two components with probability 2/(e^{ε0}+1) (FMT21 §3's reduction with that clone probability), "
    "in place of the generic clone pair it dominates, order-wise minimum with the event's other generic "
    "bounds; bounds.md §12"
)


def categories_field() -> Any:
    return spec(
        "integer",
        "number of symbols of the randomized response (2: binary randomized response, reports are bits; "
        "k ≥ 3: k-ary randomized response, keep the symbol w.p. e^{ε0}/(e^{ε0}+k−1), else another uniformly)",
        default=2,
        lo=2,
        hi=MAX_CATEGORIES,
    )


class _RandomizedResponse(Event):
    """The curve of a randomized-response event: the generic event's construction with the
    ``clones_rr`` pair in place of the generic clone pair (``_detail(orders, "rr")``; the generic
    pair is dominated by it, bounds.md §12, and is not computed), or by name ``clones_rr`` alone or
    the ``generic`` event's curve (``_detail(orders, "any")``). ``_sampled`` is k (n when every
    user reports)."""

    n: int
    epsilon0: float

    @property
    def _sampled(self) -> int:
        return self.n

    def _detail(self, orders: NDArray[np.float64], randomizer: str) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def unit_curve(self, orders: NDArray[np.float64], bound: str = "upper") -> NDArray[np.float64]:
        if bound == "clones_rr":
            return _b.rr_clones(self.n, self._sampled, self.epsilon0, orders, named=True)
        out: NDArray[np.float64] = self._detail(orders, "any" if bound == "generic" else "rr").rdp
        return out

    def curve_sources(self, orders: NDArray[np.float64], bound: str = "upper") -> tuple[list[str], list[str]]:
        if bound != "upper":
            return [bound] * orders.size, []
        d = self._detail(orders, "rr")
        return list(d.sources), list(d.notes)

    def dominating_pair(self) -> HockeyStickPair:
        # the (subsampled) clone pair of randomized response's clone probability (bounds.md §12)
        return subsampled_clone_pair_curve(self.n, self._sampled, self.epsilon0, "rr")


@register
@dataclass(frozen=True, kw_only=True)
class ShuffleRREvent(_RandomizedResponse):
    """n users each send ONE report of binary (categories = 2) or k-ary randomized response at ε0
    through a shuffler. A randomizer known only by its ε0 is a ``shuffle`` event."""

    PURE_EXACT: ClassVar[bool] = True
    mechanism: ClassVar[str] = "shuffle_rr"
    POSITION: ClassVar[int] = 0
    SAMPLING: ClassVar[str] = "none: all n users report in every repetition"
    SOURCE: ClassVar[str] = (
        _RR_SOURCE
        + "; the generic bounds are the shuffle event's. Binary (categories = 2, n ≤ 10⁸): also the exact "
        "shuffled count of ones at the worst split of the other users' inputs — every split up to n = 256, "
        "representatives with a revealed blanket count beyond — as the PLD route's dominating pair and, "
        "up to order 256, as RDP (bounds.md §13)"
    )
    BOUNDS: ClassVar[tuple[str, ...]] = RR_BOUNDS
    EXAMPLE: ClassVar[dict[str, Any]] = {"mechanism": "shuffle_rr", "n": 10000, "epsilon0": 1.0, "count": 100}

    n: int = users_field("number of users whose reports are shuffled", calibrate=POPULATION, population=True)
    epsilon0: float = epsilon0_field(
        "local privacy parameter ε0 of each report (exactly ε0-LDP randomized response)"
    )
    categories: int = categories_field()

    def _detail(self, orders: NDArray[np.float64], randomizer: str) -> Any:
        if randomizer != "rr" or self.categories != 2 or self.n > shuffled_rr.MAX_USERS:
            return _b.shuffle_upper_detail(self.n, self.epsilon0, orders, "discrete", randomizer)
        # binary RR: the exact shuffled count's Rényi divergence at the worst split (bounds.md §13,
        # orders ≤ RDP_MAX_ORDER) and the closed forms; randomized response's clone pair (§12) only
        # above SPLIT_ONLY_ORDER, where it can still be the tighter curve (the only one past 256)
        o = np.asarray(orders, dtype=np.float64)
        clones = np.full(o.size, np.inf)
        high = o > shuffled_rr.SPLIT_ONLY_ORDER
        if np.any(high):
            clones[high] = _b.rr_clones(self.n, self.n, self.epsilon0, o[high])
        extra = [("shuffled_rr", shuffled_rr.split_rdp(self.n, self.epsilon0, o)), ("clones_rr", clones)]
        return _b._shuffle_upper_detail(self.n, self.epsilon0, o, "discrete", randomizer, extra)

    def pure_epsilon(self) -> float:
        return self.epsilon0

    def heavy_parts(self) -> frozenset[HeavyPart]:
        return frozenset({("clones_rr", self.n, self.n, self.epsilon0)})

    def dominating_pair(self) -> HockeyStickPair:
        # binary RR: the exact shuffled count at the worst split of the others' inputs (bounds.md §13)
        if self.categories == 2 and self.n <= shuffled_rr.MAX_USERS:
            return shuffled_rr.binary_rr_pair(self.n, self.epsilon0)
        return super().dominating_pair()


@register
@dataclass(frozen=True, kw_only=True)
class SubsampledShuffleRREvent(_RandomizedResponse):
    """k of n users are sampled uniformly without replacement, each sampled user sends ONE report
    of binary (categories = 2) or k-ary randomized response at ε0, the k reports are shuffled."""

    mechanism: ClassVar[str] = "subsampled_shuffle_rr"
    POSITION: ClassVar[int] = 1
    SAMPLING: ClassVar[str] = SubsampledShuffleEvent.SAMPLING
    SOURCE: ClassVar[str] = (
        _RR_SOURCE
        + " under sampling (the subsampled clone pair of bounds.md §9 with that clone probability); "
        "the generic bounds are the subsampled_shuffle event's"
    )
    BOUNDS: ClassVar[tuple[str, ...]] = RR_BOUNDS
    SAMPLED: ClassVar[bool] = True
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "mechanism": "subsampled_shuffle_rr",
        "n": 1000000,
        "k": 1000,
        "epsilon0": 2.0,
        "count": 100000,
    }

    n: int = users_field("population size", calibrate=POPULATION)
    k: int = users_field("users sampled per round (1 ≤ k ≤ n)", calibrate=SAMPLE_SIZE)
    epsilon0: float = epsilon0_field(
        "local privacy parameter ε0 of each report (exactly ε0-LDP randomized response)"
    )
    categories: int = categories_field()
    sampling: str = sampling_field()

    def validate(self) -> None:
        if self.k > self.n:
            raise InvalidEvent(f"k must be <= {self.n} (the population n), got {self.k}")

    @property
    def _sampled(self) -> int:
        return self.k

    def _detail(self, orders: NDArray[np.float64], randomizer: str) -> Any:
        return _b.subsampled_upper_detail(self.n, self.k, self.epsilon0, orders, "discrete", randomizer)

    def pure_epsilon(self) -> float:
        return float(np.log1p(self.k / self.n * np.expm1(self.epsilon0)))

    def heavy_parts(self) -> frozenset[HeavyPart]:
        return frozenset(
            {("clones_rr", self.n, self.k, self.epsilon0), ("clones_rr", self.k, self.k, self.epsilon0)}
        )
