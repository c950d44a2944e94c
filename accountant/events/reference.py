"""The user-facing reference of every event type, generated from the declarations
(``python -m accountant.events.reference > docs/events.md``; a test keeps the file in sync)."""

from __future__ import annotations

import json
import sys

from ._declare import EVENT_TYPES, Spec

_INTRO = """# Events: what each release means and how it is accounted

An event describes one private release, repeated `count` times. The same JSON object is used
everywhere: `/v1/rdp`, `/v1/epsilon`, `/v1/delta`, `/v1/calibrate`, ledger charges, the SDK and
the command line. Every event protects **users** (user-level privacy): neighbouring datasets differ
by replacing one user's whole data. Composition adds RDP curves, which is valid only for
independent mechanisms: messages of one round that share a sample of users are ONE sampled event
(`subsampled`, with the round's messages as `inner` events), never several.

Some central events carry `zeta`, a failure probability: their curve holds outside a failure event
of probability ζ (for every ordered pair of neighbours there is a law within total variation ζ of
the release whose Rényi divergence to the neighbour's release is at most the curve). Their
count·ζ is added to δ: the composed curve is converted at δ − Σζ, and no ε exists (the service
answers 400, the ledger refuses) once Σζ reaches δ. An `approx_dp` event is an (ε, δ) release with
no curve; such releases are composed apart (optimal or advanced composition) and joined to the
RDP part by basic composition with the δ split optimised, or counted as pure ε outside a failure
event δ — whichever is smaller (`accountant/combination.py` proves both).

An event's meaning never changes; a new meaning is a new event type. This page is generated from
the declarations in `accountant/events/` (`python -m accountant.events.reference`).
"""


def _limits(s: Spec) -> str:
    if s.kind == "choice":
        return " or ".join(f"`{c}`" for c in s.choices)
    if s.kind == "events":
        return f"list of 1–{s.max_items} inner events"
    lo = "" if s.lo is None else f"{'>' if s.lo_open else '≥'} {s.lo:g}"
    hi = "" if s.hi is None else f"{'<' if s.hi_open else '≤'} {s.hi:g}"
    rng = ", ".join(x for x in (lo, hi) if x)
    if s.kind == "numbers":
        return f"list of 1–{s.max_items} numbers, each {rng}"
    return f"{s.kind} {rng}"


def markdown() -> str:
    out = [_INTRO]
    for name, cls in EVENT_TYPES.items():
        doc = " ".join((cls.__doc__ or "").split()).replace("``", "`")
        out.append(f"## `{name}`\n\n{doc}\n")
        out.append(f"- **Neighbouring relation**: {cls.relation_text()}.")
        out.append(f"- **Sampling**: {cls.SAMPLING}.")
        out.append(f"- **Source of the curve**: {cls.SOURCE}.")
        if cls.BOUNDS != ("upper",):
            out.append(
                "- **Named bounds** (`/v1/rdp` `bound`): " + ", ".join(f"`{b}`" for b in cls.BOUNDS) + "."
            )
        out.append("\n| field | required | limits | meaning |\n|---|---|---|---|")
        defaults = cls.defaults()
        for field, s in cls.specs().items():
            req = "no (default `" + json.dumps(defaults[field]) + "`)" if field in defaults else "yes"
            extra = f" Calibration can solve for it ({s.calibrate.answer})." if s.calibrate else ""
            out.append(f"| `{field}` | {req} | {_limits(s)} | {s.description}.{extra} |")
        out.append(f"\nExample:\n\n```json\n{json.dumps(cls.EXAMPLE)}\n```\n")
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(markdown())
