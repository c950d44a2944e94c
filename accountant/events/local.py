"""Events of the shuffle model: every user (or a sample of k users) sends ε0-LDP reports to a
shuffler (thesis ch. 5; bounds.md §1–3, §8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .. import bounds as _b
from ..dominating import HockeyStickPair, clone_pair_curve, subsampled_clone_pair_curve
from ..errors import InvalidEvent
from ._declare import (
    POPULATION,
    REPLACE_ONE,
    SAMPLE_SIZE,
    Event,
    HeavyPart,
    epsilon0_field,
    output_field,
    register,
    sampling_field,
    users_field,
)


@register
@dataclass(frozen=True, kw_only=True)
class ShuffleEvent(Event):
    """n users each send one ε0-LDP report through a shuffler; the server sees the multiset."""

    PURE_EXACT: ClassVar[bool] = True  # pure_epsilon() is a declared field
    mechanism: ClassVar[str] = "shuffle"
    POSITION: ClassVar[int] = 0
    RELATION: ClassVar[str] = REPLACE_ONE
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
    RELATION: ClassVar[str] = REPLACE_ONE
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
