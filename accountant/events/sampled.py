"""The nested sampled event: one round among k sampled users, amplification applied once."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import bounds as _b
from .._numerics import interpolate_integer_bound, round_up
from ..dominating import HockeyStickPair, subsampled_clone_pair_curve
from ..errors import InvalidEvent
from ..nested import CurveDetail, amplified_epsilon, sampled_round_detail
from ..sampled_gaussian import sampled_gaussian_rdp
from ..store import MiB, memoize
from ._declare import (
    MAX_EPSILON0,
    POPULATION,
    SAMPLE_SIZE,
    Event,
    HeavyPart,
    parse_inner,
    register,
    sampling_field,
    spec,
    users_field,
)
from .central import GaussianEvent
from .local import ShuffleEvent


@register
@dataclass(frozen=True, kw_only=True)
class SubsampledEvent(Event):
    """Each round, k of n users are sampled uniformly without replacement and the round's
    ``inner`` events run on the k sampled users (e.g. the messages of a multi-message report,
    each through its own shuffler). All inner events share the round's sample, so amplification
    by sampling is applied once, to their composition (:mod:`accountant.nested`).

    The curve is the order-wise minimum of: WBK19 Thm 9 over the composed inner curve with ε(∞)
    the sum of the inner pure-DP levels; the pure-DP cap log(1 + γ(e^{ε(∞)} − 1)); the inner
    curve itself; and, when every inner event is a shuffle (of messages by the same k users), the
    ``subsampled_shuffle`` default (which includes the subsampled clone pair, bounds.md §9) at
    ε0 = the whole report's ε0 = Σ count·ε0; and, when every
    inner event is a Gaussian, WBK19's Gaussian-specific Theorem 27 at the noise multiplier of
    their composition, (Σ count/z²)^{−1/2} (:mod:`accountant.sampled_gaussian`; dp_accounting's
    curve for ``SampledWithoutReplacementDpEvent`` of a Gaussian). The shuffle bound is
    valid because sending a user's messages through separate shufflers is a post-processing of
    shuffling whole reports: a report is the tuple of the user's messages, an (Σ count·ε0)-LDP
    randomizer by basic composition (discrete when every message is); shuffling the k tuples and
    then permuting each message slot independently gives exactly the per-slot shufflers' joint
    output distribution, so by the data-processing inequality its Rényi divergence is at most that
    of the shuffled tuples. With one inner shuffle event the curve is never above today's
    ``subsampled_shuffle`` default (that bound is one of the candidates).
    """

    mechanism: ClassVar[str] = "subsampled"
    POSITION: ClassVar[int] = 2
    SAMPLING: ClassVar[str] = (
        "k of n users uniformly without replacement, independently of the data and in every round; all inner "
        "events of a round use that round's sample; the analyst learns nothing about who was sampled. Poisson "
        "sampling and client self-sampling are not covered"
    )
    SOURCE: ClassVar[str] = (
        "WBK19 Thm 9 over the composed inner curve; thesis Lemma 2.1.1 (pure-DP cap); joint quasi-convexity "
        "of D_α; for rounds of shuffles, the subsampled_shuffle bounds (subsampled clone pair included) at "
        "the whole report's ε0 (post-processing); for rounds of Gaussians, WBK19 Thm 27 (arXiv:1808.00087; the "
        "Gaussian-specific strengthening of Thm 9, as in dp_accounting's SampledWithoutReplacementDpEvent) at the "
        "composed noise multiplier (Σ count/z²)^(−1/2), accountant/sampled_gaussian.py; accountant/nested.py"
    )
    SAMPLED: ClassVar[bool] = True
    NO_PAIR: ClassVar[str] = (
        "a pair dominating a sampled round is proved here only when every inner event is a shuffle (the "
        "subsampled clone pair at the whole report's ε0); the inner events share the sample, so per-event "
        "pairs may not be composed"
    )
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "mechanism": "subsampled",
        "n": 1000000,
        "k": 1000,
        "count": 10000,
        "inner": [{"mechanism": "shuffle", "epsilon0": 0.5, "count": 4}],
    }

    n: int = users_field("population size", calibrate=POPULATION)
    k: int = users_field("users sampled per round (1 ≤ k ≤ n)", calibrate=SAMPLE_SIZE)
    inner: tuple[Event, ...] = spec(
        "events",
        "the events of ONE round on the k sampled users (not themselves sampled); a 'shuffle' inner event's "
        "n is k (leave it out, or give k)",
        max_items=100,
    )
    sampling: str = sampling_field()

    def validate(self) -> None:
        if self.k > self.n:
            raise InvalidEvent(f"k must be <= {self.n} (the population n), got {self.k}")
        object.__setattr__(
            self, "inner", parse_inner("inner", self.inner, self.k, self.specs()["inner"].max_items)
        )

    def inner_epsilon(self) -> float:
        """ε(∞) of one round on the sample: the sum of the inner pure-DP levels (basic composition)."""
        return float(sum(e.count * e.pure_epsilon() for e in self.inner))

    def gaussian_noise_multiplier(self) -> float | None:
        """When every inner event is a Gaussian: the noise multiplier of their composition on the
        sample, z = (Σ count_i/z_i²)^{−1/2} (one Gaussian mechanism on the concatenated queries,
        each scaled by 1/σ_i: its replace-one ℓ2 sensitivity is at most (Σ count_i/z_i²)^{1/2},
        and the scaling is invertible post-processing); else None."""
        if not all(isinstance(e, GaussianEvent) for e in self.inner):
            return None
        try:
            total = math.fsum(e.count / (e.noise_multiplier * e.noise_multiplier) for e in self.inner)  # type: ignore[attr-defined]
        except (OverflowError, ZeroDivisionError):
            return None
        if not 0.0 < total < math.inf:
            return None  # noise too small to compose in floating point: the generic bounds only
        # rounded down (a smaller z is a larger curve: never an under-report from rounding)
        return float(np.nextafter(np.nextafter(1.0 / math.sqrt(total), 0.0), 0.0))

    def report_epsilon0(self) -> float | None:
        """When every inner event is a shuffle: the whole report's ε0 = Σ count·ε0; else None."""
        shuffles = [e for e in self.inner if isinstance(e, ShuffleEvent)]
        if len(shuffles) < len(self.inner):
            return None
        return float(sum(e.count * e.epsilon0 for e in shuffles))

    def unit_curve(self, orders: NDArray[np.float64], bound: str = "upper") -> NDArray[np.float64]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return _detail(self.unit, tuple(np.asarray(orders, dtype=np.float64).tolist()), _b.tight_bounds()).rdp

    def curve_sources(self, orders: NDArray[np.float64], bound: str = "upper") -> tuple[list[str], list[str]]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        d = _detail(self.unit, tuple(np.asarray(orders, dtype=np.float64).tolist()), _b.tight_bounds())
        return list(d.sources), list(d.notes)

    def pure_epsilon(self) -> float:
        return amplified_epsilon(self.k / self.n, self.inner_epsilon())

    def dominating_pair(self) -> HockeyStickPair | None:
        """Rounds of shuffles only: the subsampled clone pair at the whole report's ε0 = Σ count·ε0
        (the tuple of a user's messages is one (Σ count·ε0)-LDP report; the per-slot shufflers are a
        post-processing of shuffling whole reports — class docstring). Else None (``NO_PAIR``)."""
        eps0 = self.report_epsilon0()
        if eps0 is None or eps0 > MAX_EPSILON0:
            return None
        return subsampled_clone_pair_curve(self.n, self.k, eps0)

    def heavy_parts(self) -> frozenset[HeavyPart]:
        parts = frozenset().union(*(e.heavy_parts() for e in self.inner))
        eps0 = self.report_epsilon0()
        if eps0 is not None:
            parts |= {("subsampled_shuffle", self.n, self.k, eps0)}
        return parts


def _sampled_gaussian(gamma: float, z: float, o: NDArray[np.float64]) -> NDArray[np.float64]:
    """WBK19 Theorem 27 for a Gaussian on the sample (:mod:`accountant.sampled_gaussian`), at
    integer orders and interpolated to real ones by convexity (thesis Remark 5.3.2), rounded up."""
    return round_up(interpolate_integer_bound(o, lambda ints: sampled_gaussian_rdp(gamma, z, ints)))


@memoize("sampled_details", max_entries=256, max_bytes=32 * MiB)
def _detail(ev: SubsampledEvent, orders_key: tuple[float, ...], tight: bool) -> CurveDetail:
    """The curve with its sources (``tight``: :func:`accountant.bounds.tight_bounds`, part of
    the cache key)."""
    del tight  # part of the cache key only: the bounds read the setting themselves
    o = np.asarray(orders_key, dtype=np.float64)

    def inner(os_: NDArray[np.float64]) -> NDArray[np.float64]:
        total: NDArray[np.float64] = np.sum([e.curve(os_) for e in ev.inner], axis=0)
        return total

    extra: list[tuple[str, ArrayLike]] = []
    notes: list[str] = []
    eps0 = ev.report_epsilon0()
    if eps0 is not None and eps0 <= MAX_EPSILON0:
        output = (
            "continuous"
            if any(isinstance(e, ShuffleEvent) and e.output == "continuous" for e in ev.inner)
            else "discrete"
        )
        d = _b.subsampled_upper_detail(ev.n, ev.k, eps0, o, output)
        extra.append((f"subsampled_shuffle at the report's epsilon0 = {eps0:.6g}", d.rdp))
        notes.extend(d.notes)
    z = ev.gaussian_noise_multiplier()
    if z is not None:
        extra.append(
            (f"wbk19 gaussian (Thm 27) at noise multiplier {z:.6g}", _sampled_gaussian(ev.k / ev.n, z, o))
        )
    # Theorem 27 is never above Theorem 9 over the Gaussian curve (module docstring of
    # accountant.sampled_gaussian): the generic WBK19 sum is not computed beside it
    got = sampled_round_detail(ev.n, ev.k, inner, ev.inner_epsilon(), o, extra, notes, wbk19=z is None)
    got.rdp.setflags(write=False)
    return got
