"""Events of central user-level mechanisms: the exponential mechanism, AboveThreshold, and
(ε, δ) releases known only by their pair (no RDP curve)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .._numerics import pure_dp_rdp, round_up
from ..central_curves import bounded_range_rdp
from ..dominating import HockeyStickPair, bounded_range_pair, randomized_response_pair
from ..errors import InvalidEvent, InvalidParameter
from ._declare import MAX_EPSILON0, PRIVACY_LEVEL, Event, register, spec, zeta_field


@register
@dataclass(frozen=True, kw_only=True)
class ExponentialEvent(Event):
    """The exponential mechanism at ε: it samples y with probability ∝ exp(ε·u(x, y)/(2Δu)), Δu the
    replace-one sensitivity of the score u. It is ε-DP and ε-bounded-range: the privacy loss
    log P_x(y)/P_x'(y) varies by at most ε over the outputs y. Any ε-bounded-range mechanism may
    be charged as this event (e.g. sampling ∝ exp(ε·u/Δu) with a score monotone in the data).
    The curve is the exact worst-case RDP of ε-bounded-range pairs, never above the pure-DP curve
    (about ε²/8 per order at small ε, against ε²/2 for a generic ε-DP release)."""

    PURE_EXACT: ClassVar[bool] = True  # pure_epsilon() is a declared field
    mechanism: ClassVar[str] = "exponential"
    POSITION: ClassVar[int] = 7
    SAMPLING: ClassVar[str] = "none: the mechanism runs on the whole dataset"
    SOURCE: ClassVar[str] = (
        "McSherry–Talwar 2007 (ε-DP); Durfee–Rogers 2019 (ε-bounded range); Cesar–Rogers 2021: the "
        "supremum over ε-bounded-range pairs, sup_p log((1−p+p·e^{αε})/(1−p+p·e^ε)^α)/(α−1) "
        "(accountant/central_curves.py, bounded_range_rdp), capped by the pure-DP curve"
    )
    EXAMPLE: ClassVar[dict[str, Any]] = {"mechanism": "exponential", "epsilon": 0.5, "count": 64}

    epsilon: float = spec(
        "number",
        "ε of the exponential mechanism (sampling ∝ exp(ε·score/(2·sensitivity))): its pure-DP and "
        "bounded-range level",
        lo=0.0,
        hi=MAX_EPSILON0,
        cli="event-epsilon",
        calibrate=dataclasses.replace(PRIVACY_LEVEL, answer="the largest ε"),
    )
    zeta: float = zeta_field()

    def unit_curve(self, orders: NDArray[np.float64], bound: str = "upper") -> NDArray[np.float64]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return np.minimum(
            bounded_range_rdp(self.epsilon, orders), round_up(pure_dp_rdp(self.epsilon, orders))
        )

    def curve_sources(self, orders: NDArray[np.float64], bound: str = "upper") -> tuple[list[str], list[str]]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return ["exponential (ε-bounded range, Cesar–Rogers 2021)"] * orders.size, []

    def pure_epsilon(self) -> float:
        return self.epsilon

    def dominating_pair(self) -> HockeyStickPair:
        return bounded_range_pair(self.epsilon)  # the envelope of ε-bounded-range pairs (dominating.py)


@register
@dataclass(frozen=True, kw_only=True)
class AboveThresholdEvent(Event):
    """One AboveThreshold (sparse vector) stream at ε: the threshold is perturbed once with
    Lap(2Δ/ε), every query of sensitivity Δ with fresh Lap(4Δ/ε), and the stream stops at the
    first answer on the other side of the threshold. The whole stream is ε-DP however many queries
    it answers, so ``count`` counts streams, not queries. Its curve is the pure-DP curve, valid
    even when other mechanisms' releases are interleaved with the stream's answers (an interactive
    ε-DP mechanism is an interactive post-processing of ε-randomized response)."""

    PURE_EXACT: ClassVar[bool] = True  # pure_epsilon() is a declared field
    mechanism: ClassVar[str] = "above_threshold"
    POSITION: ClassVar[int] = 8
    SAMPLING: ClassVar[str] = "none: every query is evaluated on the whole dataset"
    SOURCE: ClassVar[str] = (
        "Dwork–Roth 2014, Thm 3.23 (AboveThreshold is ε-DP for the whole stream); Vadhan–Zhang 2023 "
        "(concurrent composition: an interactive ε-DP mechanism is simulated by post-processing ε-randomized "
        "response, so its RDP under any interleaving is the pure-DP curve of bounds.md §1)"
    )
    EXAMPLE: ClassVar[dict[str, Any]] = {"mechanism": "above_threshold", "epsilon": 0.5, "count": 1}

    epsilon: float = spec(
        "number",
        "ε of the whole stream (threshold noise Lap(2Δ/ε), query noise Lap(4Δ/ε) for queries of sensitivity Δ)",
        lo=0.0,
        hi=MAX_EPSILON0,
        cli="event-epsilon",
        calibrate=dataclasses.replace(PRIVACY_LEVEL, answer="the largest ε"),
    )
    zeta: float = zeta_field()

    def unit_curve(self, orders: NDArray[np.float64], bound: str = "upper") -> NDArray[np.float64]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return round_up(pure_dp_rdp(self.epsilon, orders))

    def curve_sources(self, orders: NDArray[np.float64], bound: str = "upper") -> tuple[list[str], list[str]]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return ["above_threshold (pure-DP curve of the whole stream)"] * orders.size, []

    def pure_epsilon(self) -> float:
        return self.epsilon

    def dominating_pair(self) -> HockeyStickPair:
        return randomized_response_pair(self.epsilon)  # ε-DP: dominated by ε-RR (KOV15 Thm 2.5, δ = 0)


APPROX_NO_CURVE = (
    "an 'approx_dp' event is an (ε, δ) release without an RDP curve: it is composed apart (optimal or "
    "advanced composition) and joined to the RDP part by basic composition; ask for ε or δ "
    "(/v1/epsilon, /v1/delta), not for its curve"
)


@register
@dataclass(frozen=True, kw_only=True)
class ApproxDpEvent(Event):
    """An (ε, δ)-DP release known only by that pair (a black box that cannot enter RDP).
    Such releases are composed apart from the RDP curves — by Kairouz–Oh–Viswanath optimal
    composition, advanced composition or basic composition — and the result is joined to the
    converted RDP part by basic composition (the δ split is optimised), or each is treated as a
    pure ε release outside a failure event of probability δ, whichever gives less
    (accountant/combination.py proves both). It has no RDP curve of its own."""

    mechanism: ClassVar[str] = "approx_dp"
    POSITION: ClassVar[int] = 9
    APPROX: ClassVar[bool] = True
    RELATION_NOTE: ClassVar[str] = "the caller vouches that (ε, δ) holds for it"
    SAMPLING: ClassVar[str] = (
        "whatever the (ε, δ) guarantee's own derivation assumed (the caller's responsibility)"
    )
    SOURCE: ClassVar[str] = (
        "Kairouz–Oh–Viswanath 2015 (Thm 2.5: domination by the (ε, δ) randomized-response pair; Thm 3.3: "
        "optimal composition; the Hoeffding bound of their Thm 3.5 for mixed ε); Dwork–Rothblum–Vadhan 2010; "
        "accountant/combination.py"
    )
    EXAMPLE: ClassVar[dict[str, Any]] = {"mechanism": "approx_dp", "epsilon": 0.1, "delta": 1e-8, "count": 20}

    epsilon: float = spec(
        "number", "ε of the (ε, δ)-DP release", lo=0.0, hi=MAX_EPSILON0, cli="event-epsilon"
    )
    delta: float = spec(
        "number", "δ of the (ε, δ)-DP release", lo=0.0, hi=1.0, hi_open=True, cli="event-delta"
    )

    def validate(self) -> None:
        if self.count * self.delta >= 1.0:
            raise InvalidEvent(
                f"count·delta = {self.count * self.delta:.6g} >= 1: the releases together carry no guarantee; "
                "lower delta or count"
            )

    def unit_curve(self, orders: NDArray[np.float64], bound: str = "upper") -> NDArray[np.float64]:
        del orders, bound  # no curve at any order, under any bound
        raise InvalidParameter(APPROX_NO_CURVE)

    def curve_sources(self, orders: NDArray[np.float64], bound: str = "upper") -> tuple[list[str], list[str]]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return ["approx_dp ((ε, δ) part, composed apart)"] * orders.size, []

    def approx_release(self) -> tuple[float, float]:
        return self.epsilon, self.delta

    def dominating_pair(self) -> HockeyStickPair:
        return randomized_response_pair(self.epsilon, self.delta)  # KOV15 Thm 2.5


__all__ = ["APPROX_NO_CURVE", "AboveThresholdEvent", "ApproxDpEvent", "ExponentialEvent"]
