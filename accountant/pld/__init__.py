"""The PLD route: certified (ε, δ) of a composition of events from their dominating pairs'
privacy-loss distributions (issue 23, item 3; docs/bounds.md, "The PLD route").

Pipeline, one module per stage (as in Microsoft's prv_accountant):

1. :mod:`.pairs` — each event's dominating pair (declared on its type, built from
   :mod:`accountant.dominating`): a certified upper hockey-stick curve δ(ε).
2. :mod:`.discretise` — the pair's pessimistic PLD on one shared grid jΔ (dp_accounting's
   connect-the-dots; tails to +∞, mass below the grid moved up; float error added to the masses);
   :mod:`.blocks` — a pair repeated many times, in blocks of 64 rounds composed on a 4× finer grid
   and discretised on jΔ once (the grid's cost paid per block instead of per round).
3. :mod:`.compose` — composition by an exponentially tilted FFT, every numerical error
   (tilting, aliasing, FFT rounding amplified by the powers, inverse FFT, sums) bounded and added
   to δ; the mass at +∞ composed exactly.
4. :mod:`.convert` — δ(ε), and the smallest certified ε(δ); δ(ε) of a composition is read in O(1)
   per ε from suffix sums over it (:mod:`.tail`).

Needs ``dp_accounting`` (extra ``[pld]``), imported when a PLD is first built.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .._validation import check_delta, check_epsilon
from ..dominating import HockeyStickPair
from ..events import Event, EventLike, as_event
from .blocks import blocked, eligible
from .compose import Composed
from .convert import delta_at, epsilon_at
from .discretise import Discretised, choose_step, discretise_pair
from .pairs import PldNotCovered, covered, pair_of

__all__ = ["PldNotCovered", "PldResult", "covered", "pld_delta", "pld_epsilon", "single_round_pmfs"]


@dataclass(frozen=True)
class PldResult:
    """A certified answer of the PLD route.

    ``delta`` includes ``error`` (the rigorous bound on the numerical error: floating point,
    aliasing, truncation), ``discretization`` is the grid step Δ."""

    epsilon: float
    delta: float
    error: float
    discretization: float
    notes: tuple[str, ...]


def single_round_pmfs(events: Sequence[EventLike]) -> list[tuple[Discretised, int]]:
    """The pessimistic single-round PLDs of ``events`` on one grid, with their counts (events
    with the same pair are merged; cached per pair and Δ)."""
    evs: list[Event] = [as_event(e) for e in events]
    if not evs:
        raise PldNotCovered("the PLD route needs at least one event")
    counts: dict[HockeyStickPair, int] = {}
    families: dict[object, list[tuple[HockeyStickPair, int]]] = {}
    for ev in evs:
        p = pair_of(ev)
        if p.product is not None:
            families.setdefault(p.product[0], []).append((p, ev.count))
        else:
            counts[p] = counts.get(p, 0) + ev.count
    for items in families.values():
        assert items[0][0].product is not None
        merged = items[0][0].product[1](items)
        counts[merged] = counts.get(merged, 0) + 1
    step = choose_step(list(counts), list(counts.values()))
    out: list[tuple[Discretised, int]] = []
    for p, t in counts.items():
        parts = blocked(p, t, step) if eligible(p, t, step) else []
        out.extend(parts or [(discretise_pair(p, step), t)])
    return out


def _notes(parts: Sequence[tuple[Discretised, int]], comp: Composed, err: float) -> tuple[str, ...]:
    keys = ", ".join(f"{d.key[0]}×{t}" for d, t in parts)
    return (
        f"PLD route: pairs {keys} on a grid Δ = {comp.step:.4g}; tilt λ = {comp.lam:.4g}, "
        f"FFT length {comp.G.size}",
        f"numerical error bound {err:.3g} (FFT rounding, aliasing, sums) added to δ",
    )


def _one_release(events: Sequence[EventLike]) -> HockeyStickPair | None:
    """The pair of ``events`` when they are one release (one event, count 1) whose pair has a
    tighter certified curve for a single release (``HockeyStickPair.single``), else None."""
    evs = [as_event(e) for e in events]
    if len(evs) != 1 or evs[0].count != 1:
        return None
    pair = pair_of(evs[0])
    return pair if pair.single is not None else None


_ONE_RELEASE_NOTE = (
    "one release: the dominating pair's certified hockey-stick divergence itself (no composition)"
)


def pld_delta(events: Sequence[EventLike], epsilon: float) -> PldResult:
    """Certified δ at ``epsilon`` of the composition of ``events`` (each ``count`` times)."""
    eps = check_epsilon(epsilon)
    one = _one_release(events)
    if one is not None and one.single is not None:
        return PldResult(eps, float(one.single[0](eps)), 0.0, 0.0, (_ONE_RELEASE_NOTE,))
    parts = single_round_pmfs(events)
    d, err, comp = delta_at(parts, eps)
    return PldResult(eps, d, err, comp.step, _notes(parts, comp, err))


def pld_epsilon(events: Sequence[EventLike], delta: float) -> PldResult:
    """Smallest certified ε at ``delta`` (inf when the mass at +∞ alone reaches δ)."""
    target = check_delta(delta)
    one = _one_release(events)
    if one is not None and one.single is not None:
        e1 = float(one.single[1](target))
        return PldResult(e1, float(one.single[0](e1)), 0.0, 0.0, (_ONE_RELEASE_NOTE,))
    parts = single_round_pmfs(events)
    eps, d, err, comp = epsilon_at(parts, target)
    notes = _notes(parts, comp, err)
    if not math.isfinite(eps):
        notes += ("the composed mass at +∞ (the events' own δ) already reaches δ",)
    return PldResult(eps, d, err, comp.step, notes)
