"""The audit's assertions: the accountant's answers for some events against the exact divergences of a
real neighbouring pair of the release those events describe.

For T rounds (independent releases, fresh randomness and a fresh sample each):

* RDP: accountant.compose(events, α) ≥ T·D_α(P_{D'}‖P_D) and ≥ T·D_α(P_D‖P_{D'}) at α = 2..16
  (D_α of a T-fold product is T·D_α);
* (ε, δ): at the ε that accountant.epsilon_guarantee (the RDP route) and accountant.epsilon_routed
  (the best of every route: RDP, PLD, pure composition) report for δ, the exact hockey-stick
  divergence of the T-fold product (both directions) is ≤ δ; at the δ that delta_guarantee and
  delta_routed report for ε, likewise.

The only slack is a relative 1e-9 for floating-point rounding of the exact values, and an absolute
1e-15 on δ (a probability summed in floating point: an exact δ of 0, e.g. a pure release at its own ε,
comes out as a few 1e-17).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

import accountant
from accountant.events import EventLike

from ..helpers import exact as X

ORDERS = np.arange(2.0, 17.0)
DELTAS = (1e-3, 1e-5)
REL = 1e-9
ABS_DELTA = 1e-15


class ExactPair(Protocol):
    def renyi(self, orders, reverse: bool) -> np.ndarray: ...
    def hockey_stick(self, epsilon: float, reverse: bool, rounds: int) -> float: ...


class Discrete:
    """Independent finite releases (``ShuffledPair`` factors, e.g. one per shuffler of an unsampled
    round, or one sampled round) as one ``ExactPair``: Rényi divergences add over the factors, the
    hockey-stick divergence is that of the product law (over ``rounds`` copies of all factors)."""

    def __init__(self, *factors: X.ShuffledPair):
        self.factors = list(factors)

    def renyi(self, orders, reverse: bool) -> np.ndarray:
        return sum(X.renyi(f, orders, reverse) for f in self.factors)

    def hockey_stick(self, epsilon: float, reverse: bool, rounds: int) -> float:
        if len(self.factors) == 1:
            return X.hockey_stick(self.factors[0], epsilon, reverse, rounds)
        return X.hockey_stick_product(self.factors * rounds, epsilon, reverse)

    def size(self, rounds: int) -> int:
        return X.product_size(self.factors * rounds)


def violations(
    events: Sequence[EventLike],
    exact: ExactPair,
    rounds: int = 1,
    deltas=DELTAS,
    epsilons: Sequence[float] = (0.5,),
    orders=ORDERS,
) -> list[str]:
    """Every way in which the accountant's answer for ``events`` (already covering ``rounds`` rounds)
    is below the exact privacy loss of ``exact`` composed ``rounds`` times; empty when sound."""
    out: list[str] = []
    acc = accountant.compose(events, orders)
    for rev in (False, True):
        name = "D_α(P_D‖P_D')" if rev else "D_α(P_D'‖P_D)"
        ex = rounds * exact.renyi(orders, rev)
        bad = acc < ex * (1 - REL)
        for a, x, y in zip(np.asarray(orders)[bad], acc[bad], ex[bad]):
            out.append(f"{name} at α = {a:g}: accountant {x:.6g} < exact {y:.6g} (×{y / x:.3g})")
    eps_points = list(epsilons)
    for delta in deltas:
        # the RDP route, and the best of every route (accountant.routes: PLD, pure composition)
        g = accountant.epsilon_guarantee(events, delta)
        best = accountant.epsilon_routed(events, delta)
        for label, eps in (("", g.epsilon), (f" [{best.route} route]", best.epsilon)):
            eps_points.append(eps)
            for rev in (False, True):
                hs = exact.hockey_stick(eps, rev, rounds)
                if hs > delta * (1 + REL) + ABS_DELTA:
                    out.append(
                        f"accountant{label} (ε = {eps:.6g}, δ = {delta:g}) but the exact δ at that ε is "
                        f"{hs:.6g} (×{hs / delta:.3g}){' [reverse]' if rev else ''}"
                    )
    for eps in eps_points:
        d_rdp = accountant.delta_guarantee(events, eps).delta
        d_best = accountant.delta_routed(events, eps)
        for label, d_acc in (("", d_rdp), (f" [{d_best.route} route]", d_best.delta)):
            for rev in (False, True):
                hs = exact.hockey_stick(eps, rev, rounds)
                if hs > d_acc * (1 + REL) + ABS_DELTA:
                    out.append(
                        f"accountant{label} δ = {d_acc:.6g} at ε = {eps:.6g} but the exact δ is {hs:.6g}"
                        f"{' [reverse]' if rev else ''}"
                    )
    return out


def assert_sound(
    events: Sequence[EventLike], exact: ExactPair, rounds: int = 1, what: str = "", **kw
) -> None:
    bad = violations(events, exact, rounds, **kw)
    assert not bad, f"{what}\nevents = {list(events)}\nrounds = {rounds}\n" + "\n".join(bad[:8])
