"""Events without a shuffler: central mechanisms, pure-DP releases, explicit curves."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .._numerics import pure_dp_rdp, round_up
from ..central_curves import curve_from_points, curve_point_sources, gaussian_rdp, laplace_rdp
from ..dominating import HockeyStickPair, gaussian_pair, laplace_pair, randomized_response_pair
from ..errors import InvalidEvent
from ._declare import (
    MAX_EPSILON0,
    MAX_ORDER,
    NOISE_SCALE,
    PRIVACY_LEVEL,
    Event,
    register,
    spec,
    zeta_field,
)


@register
@dataclass(frozen=True, kw_only=True)
class RdpCurveEvent(Event):
    """An explicit RDP curve from elsewhere (orders, rdp). Between known orders the curve is
    extended by convexity of (α−1)ε(α) and monotonicity of ε(α); below the smallest known order
    by monotonicity; above the largest it is unknown (+inf: that order is not used)."""

    mechanism: ClassVar[str] = "rdp_curve"
    POSITION: ClassVar[int] = 3
    RELATION_NOTE: ClassVar[str] = "the caller vouches that the curve holds for it"
    SAMPLING: ClassVar[str] = "whatever the curve's own derivation assumed (the caller's responsibility)"
    SOURCE: ClassVar[str] = (
        "the caller's curve, extended by convexity of (α−1)D_α and monotonicity of D_α "
        "(van Erven & Harremoës 2014, Thms 3, 11)"
    )
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "mechanism": "rdp_curve",
        "orders": [2, 4, 8],
        "rdp": [0.01, 0.03, 0.09],
        "count": 1,
    }

    orders: tuple[float, ...] = spec(
        "numbers",
        "Rényi orders α > 1 at which the curve is known",
        lo=1.0,
        hi=MAX_ORDER,
        lo_open=True,
        cli="curve-orders",
    )
    rdp: tuple[float, ...] = spec(
        "numbers", "RDP ε(α) at each order (same length as orders)", lo=0.0, hi=1e300, cli="curve-rdp"
    )
    zeta: float = zeta_field()
    NO_PAIR: ClassVar[str] = (
        "an RDP curve is not a pair of distributions: it does not determine the hockey-stick curve"
    )

    def validate(self) -> None:
        if len(self.orders) != len(self.rdp):
            raise InvalidEvent(
                f"orders and rdp must have the same length, got {len(self.orders)} orders and "
                f"{len(self.rdp)} rdp values"
            )

    def unit_curve(self, orders: NDArray[np.float64], bound: str = "upper") -> NDArray[np.float64]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return curve_from_points(self.orders, self.rdp, orders)

    def curve_sources(self, orders: NDArray[np.float64], bound: str = "upper") -> tuple[list[str], list[str]]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return curve_point_sources(self.orders, orders)


@register
@dataclass(frozen=True, kw_only=True)
class GaussianEvent(Event):
    """Central Gaussian mechanism with noise standard deviation σ = noise_multiplier × Δ₂, the ℓ2
    sensitivity over replacing one user's data."""

    mechanism: ClassVar[str] = "gaussian"
    POSITION: ClassVar[int] = 4
    SAMPLING: ClassVar[str] = "none: the mechanism runs on the whole dataset"
    SOURCE: ClassVar[str] = "Mironov 2017 (Rényi DP), Prop. 7: ε(α) = α/(2z²), exact"
    EXAMPLE: ClassVar[dict[str, Any]] = {"mechanism": "gaussian", "noise_multiplier": 1.1, "count": 1000}

    noise_multiplier: float = spec(
        "number",
        "σ / Δ₂ (noise standard deviation over the replace-one ℓ2 sensitivity; at least 10⁻⁶ — below it "
        "ε(α) = α/(2z²) exceeds 5·10¹¹ at every order)",
        lo=1e-6,
        hi=1e12,
        calibrate=dataclasses.replace(NOISE_SCALE, answer="the smallest noise multiplier"),
    )
    zeta: float = zeta_field()

    def unit_curve(self, orders: NDArray[np.float64], bound: str = "upper") -> NDArray[np.float64]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return gaussian_rdp(self.noise_multiplier, orders)

    def curve_sources(self, orders: NDArray[np.float64], bound: str = "upper") -> tuple[list[str], list[str]]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return ["gaussian (Mironov 2017, Prop. 7: α/(2σ²))"] * orders.size, []

    def dominating_pair(self) -> HockeyStickPair:
        return gaussian_pair(1.0 / self.noise_multiplier)  # N(Δ₂/σ, 1) vs N(0, 1), exact


@register
@dataclass(frozen=True, kw_only=True)
class LaplaceEvent(Event):
    """Central Laplace mechanism with scale b = scale × Δ₁, the ℓ1 sensitivity over replacing one
    user's data."""

    mechanism: ClassVar[str] = "laplace"
    POSITION: ClassVar[int] = 5
    SAMPLING: ClassVar[str] = "none: the mechanism runs on the whole dataset"
    SOURCE: ClassVar[str] = "Mironov 2017 (Rényi DP), Prop. 6, exact; pure (1/scale)-DP"
    EXAMPLE: ClassVar[dict[str, Any]] = {"mechanism": "laplace", "scale": 2.0, "count": 10}

    scale: float = spec(
        "number",
        "number",
        "b / Δ₁ (Laplace scale over the replace-one ℓ1 sensitivity)",
        lo=0.0,
        hi=1e12,
        lo_open=True,
        calibrate=dataclasses.replace(NOISE_SCALE, answer="the smallest Laplace scale", floor=1e-6),
    )
    zeta: float = zeta_field()

    def unit_curve(self, orders: NDArray[np.float64], bound: str = "upper") -> NDArray[np.float64]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return laplace_rdp(self.scale, orders)

    def curve_sources(self, orders: NDArray[np.float64], bound: str = "upper") -> tuple[list[str], list[str]]:
        del bound  # the one bound of this type ("upper"; BOUNDS)
        return ["laplace (Mironov 2017, Prop. 6)"] * orders.size, []

    def pure_epsilon(self) -> float:
        return 1.0 / self.scale

    def pure_epsilon_upper(self) -> Fraction:
        return 1 / Fraction(self.scale)  # exactly 1/scale (the float 1.0/scale may round down)

    def dominating_pair(self) -> HockeyStickPair:
        return laplace_pair(1.0 / self.scale)  # Lap(Δ₁, b) vs Lap(0, b), exact


@register
@dataclass(frozen=True, kw_only=True)
class PureDpEvent(Event):
    """Any ε-DP release (e.g. one ε-LDP report sent without a shuffler)."""

    PURE_EXACT: ClassVar[bool] = True  # pure_epsilon() is a declared field
    mechanism: ClassVar[str] = "pure_dp"
    POSITION: ClassVar[int] = 6
    SAMPLING: ClassVar[str] = "none"
    SOURCE: ClassVar[str] = (
        "the tight pure-DP curve ĉ_ε (the RDP of binary randomized response; bounds.md §1)"
    )
    EXAMPLE: ClassVar[dict[str, Any]] = {"mechanism": "pure_dp", "epsilon": 0.5, "count": 3}

    epsilon: float = spec(
        "number",
        "ε of the ε-DP release",
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
        return ["pure_dp (tight pure-DP curve)"] * orders.size, []

    def pure_epsilon(self) -> float:
        return self.epsilon

    def dominating_pair(self) -> HockeyStickPair:
        return randomized_response_pair(self.epsilon)  # ε-RR dominates every ε-DP release


__all__ = ["GaussianEvent", "LaplaceEvent", "PureDpEvent", "RdpCurveEvent"]
