"""dp_accounting ``DpEvent`` objects ↔ the service's api.md event dicts: the one mapping table.

Pipelines that describe their mechanisms as dp_accounting ``DpEvent`` objects (TensorFlow Privacy, JAX
privacy code, Google's FL stacks) hand them over as they are: the SDK converts them here (every
client method that takes events accepts them), and ``accountant.from_dp_event`` /
``accountant.to_dp_event`` use this same table. Reading a ``DpEvent`` imports nothing — not
dp_accounting, not numpy — the classes are recognised by name; only :func:`to_dp_event` imports
dp_accounting (it builds its objects).

**Neighbouring relation.** A ``DpEvent`` has none of its own: dp_accounting's accountants take one
(``NeighboringRelation``). Every event of this service is replace-one and user-level, so a
``DpEvent`` is read as dp_accounting's ``REPLACE_ONE`` accountant reads it: a Gaussian's
``noise_multiplier`` is σ over the ℓ2 sensitivity under replacing one user's data (its RDP
α/(2z²) there), a Laplace's over the ℓ1 sensitivity under replacement. (A noise multiplier stated
against a clipping norm C with add/remove neighbours is σ/C; the replace-one sensitivity is 2C:
hand over z/2.) The mapping:

=================================== ==========================================================
``GaussianDpEvent(z)``              ``{"mechanism": "gaussian", "noise_multiplier": z}``
``LaplaceDpEvent(b)``               ``{"mechanism": "laplace", "scale": b}``
``RandomizedResponseDpEvent(p, k)`` ``{"mechanism": "pure_dp", "epsilon": log(1 + k(1−p)/p)}``
                                    (k-ary randomized response is that ε-DP; rounded up; the
                                    pure-DP curve is never below k-RR's, so the answer can only
                                    be larger than dp_accounting's — there is no way back)
``SelfComposedDpEvent(e, c)``       the events of ``e``, each ``count`` × c
``ComposedDpEvent(es)``             the events of each, in order
``SampledWithoutReplacementDpEvent`` ``{"mechanism": "subsampled", "n": N, "k": n, "inner": …}``
``(N, n, e)``                       (k of n without replacement, replace-one: the same theorem)
``NoOpDpEvent()``                   no event
=================================== ==========================================================

Refused with :class:`UnsupportedDpEvent` (the message says why): Poisson sampling (no bound here
covers a random number of users per round; dp_accounting accounts it only under add/remove),
sampling with replacement, nested sampling, tree aggregation (dp_accounting: REPLACE_SPECIAL),
non-private releases and every other type. The way back (:func:`to_dp_event`) exists only where a
``DpEvent`` means the same under ``REPLACE_ONE``: gaussian, laplace (without ``zeta``) and
subsampled events of those.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["UnsupportedDpEvent", "dp_event_dicts", "is_dp_event", "to_dp_event"]


class UnsupportedDpEvent(ValueError):
    """A ``DpEvent`` (or an event) that has no faithful counterpart on the other side; the
    message names the event and why."""


_SAMPLING_RELATION = (
    "the bounds here hold for sampling k of n users uniformly without replacement under replace-one "
    "neighbours (SampledWithoutReplacementDpEvent)"
)
_REFUSED = {
    "PoissonSampledDpEvent": "Poisson sampling (each user included independently: a random number of users per "
    "round) is not covered: " + _SAMPLING_RELATION + "; dp_accounting itself accounts Poisson sampling only "
    "under add/remove-one neighbours, not the ledger's replace-one",
    "SampledWithReplacementDpEvent": "sampling with replacement is not covered: " + _SAMPLING_RELATION,
    "SingleEpochTreeAggregationDpEvent": "tree aggregation is accounted by dp_accounting only under "
    "REPLACE_SPECIAL neighbours; no bound here covers it under replace-one",
    "NonPrivateDpEvent": "a non-private release carries no guarantee: nothing can be charged for it",
}


def _name(obj: Any) -> str:
    return type(obj).__name__


def is_dp_event(obj: Any) -> bool:
    """Whether ``obj`` is a dp_accounting ``DpEvent`` (recognised without importing dp_accounting)."""
    return any(
        c.__name__ == "DpEvent" and c.__module__.startswith("dp_accounting") for c in type(obj).__mro__
    )


def _times(events: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    return [{**e, "count": e.get("count", 1) * count} for e in events]


def _rr_epsilon(p: float, k: int) -> float:
    """ε of k-ary randomized response with noise parameter p: log(1 + k(1 − p)/p), rounded up."""
    if k == 1 or p == 1:
        return 0.0
    eps = math.log1p(k * (1.0 - p) / p)
    return math.nextafter(math.nextafter(eps, math.inf), math.inf)  # a few ulps up: never an under-report


def _sampled(e: Any) -> list[dict[str, Any]]:
    inner = dp_event_dicts(e.event)
    if not inner:
        return []
    if any(d["mechanism"] == "subsampled" for d in inner):
        raise UnsupportedDpEvent(
            f"{_name(e)} of a sampled event: sampling again inside a sampled round is not covered "
            "(the inner events describe one round on the users already sampled)"
        )
    return [
        {"mechanism": "subsampled", "n": int(e.source_dataset_size), "k": int(e.sample_size), "inner": inner}
    ]


def _randomized_response(e: Any) -> list[dict[str, Any]]:
    p, k = float(e.noise_parameter), int(e.num_buckets)
    if not 0.0 < p <= 1.0 or k < 1:
        raise UnsupportedDpEvent(
            f"RandomizedResponseDpEvent(noise_parameter={p}, num_buckets={k}): a noise parameter in (0, 1] and at "
            "least one bucket are needed (p = 0 releases the input: no guarantee)"
        )
    return [{"mechanism": "pure_dp", "epsilon": _rr_epsilon(p, k)}]


_FROM = {
    "NoOpDpEvent": lambda _e: [],
    "GaussianDpEvent": lambda e: [{"mechanism": "gaussian", "noise_multiplier": float(e.noise_multiplier)}],
    "LaplaceDpEvent": lambda e: [{"mechanism": "laplace", "scale": float(e.noise_multiplier)}],
    "RandomizedResponseDpEvent": _randomized_response,
    "SelfComposedDpEvent": lambda e: _times(dp_event_dicts(e.event), int(e.count)),
    "ComposedDpEvent": lambda e: [d for sub in e.events for d in dp_event_dicts(sub)],
    "SampledWithoutReplacementDpEvent": _sampled,
}


def dp_event_dicts(event: Any) -> list[dict[str, Any]]:
    """The api.md event dicts of a dp_accounting ``DpEvent`` (read under ``REPLACE_ONE``; see the
    module docstring): a list, since a composition is several events (a ``NoOpDpEvent``: none).
    Raises :class:`UnsupportedDpEvent` naming why for what no bound here covers."""
    if not is_dp_event(event):
        raise UnsupportedDpEvent(f"expected a dp_accounting DpEvent, got {type(event).__name__}")
    name = _name(event)
    convert = _FROM.get(name)
    if convert is None:
        why = _REFUSED.get(name, "no bound of this service covers it")
        raise UnsupportedDpEvent(f"{name} cannot be accounted here: {why}")
    return convert(event)


# ------------------------------------------------------------------------------- the way back


def _to_one(d: Mapping[str, Any], de: Any) -> Any:
    mech = d.get("mechanism")
    if d.get("zeta", 0):
        raise UnsupportedDpEvent(f"a {mech!r} event with zeta > 0 (an additive δ) has no DpEvent counterpart")
    if mech == "gaussian":
        out = de.GaussianDpEvent(d["noise_multiplier"])
    elif mech == "laplace":
        out = de.LaplaceDpEvent(d["scale"])
    elif mech == "subsampled" and d.get("sampling", "without_replacement") == "without_replacement":
        inner = [_to_one(i, de) for i in d["inner"]]
        out = de.SampledWithoutReplacementDpEvent(
            d["n"], d["k"], inner[0] if len(inner) == 1 else de.ComposedDpEvent(inner)
        )
    else:
        raise UnsupportedDpEvent(
            f"no DpEvent means what a {mech!r} event means under REPLACE_ONE (faithful counterparts exist for "
            "gaussian, laplace and subsampled events of those)"
        )
    count = int(d.get("count", 1))
    return out if count == 1 else de.SelfComposedDpEvent(out, count)


def to_dp_event(events: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> Any:
    """The dp_accounting ``DpEvent`` of one api.md event dict or a list of them (composed), for
    dp_accounting's accountants with ``NeighboringRelation.REPLACE_ONE``; imports dp_accounting.
    Raises :class:`UnsupportedDpEvent` where no ``DpEvent`` has the same meaning."""
    from dp_accounting import dp_event as de

    if isinstance(events, Mapping):
        return _to_one(events, de)
    parts = [_to_one(d, de) for d in events]
    return parts[0] if len(parts) == 1 else de.ComposedDpEvent(parts)
