"""The events of a command line: one CLI flag per declared event field (generated from
:data:`accountant.EVENT_TYPES`), ``--event '<JSON>'``, and their validation by the API's models."""

from __future__ import annotations

import argparse
import json
import math
from typing import TYPE_CHECKING, Any

from app.cli.errors import CliError

if TYPE_CHECKING:
    from pydantic import ValidationError

    from accountant.events import Spec


def _event_flags() -> dict[str, tuple[str, Spec, str]]:
    """One CLI flag per declared event field (accountant.EVENT_TYPES): dest → (flag, spec, help).
    A field name shared by several event types is one flag; ``Spec.cli`` renames a flag whose
    plain name a command option already takes."""
    import accountant

    flags: dict[str, tuple[str, Spec, dict[str, list[str]]]] = {}
    for mech, cls in accountant.EVENT_TYPES.items():
        for name, spec in cls.specs().items():
            flag = spec.cli or name.replace("_", "-")
            dest = "ev_" + flag.replace("-", "_")
            flags.setdefault(dest, (flag, spec, {}))[2].setdefault(spec.description, []).append(mech)
    return {
        d: (f, sp, "; ".join(f"{', '.join(m)}: {desc}" for desc, m in h.items()))
        for d, (f, sp, h) in flags.items()
    }


def _flag_type(spec: Spec) -> object:
    return {"integer": _int, "number": float, "numbers": floats, "events": _json_events}.get(spec.kind, str)


def add_event_flags(p: argparse.ArgumentParser, partial: bool = False) -> None:
    import accountant

    g = p.add_argument_group("event (api.md); or give --event JSON")
    g.add_argument(
        "--mechanism",
        "-m",
        choices=list(accountant.EVENT_TYPES),
        metavar="MECHANISM",
        help="event type: " + " | ".join(accountant.EVENT_TYPES),
    )
    for dest, (flag, spec, help_) in _event_flags().items():
        names = (
            [f"--{flag}"] + (["-T"] if flag == "count" else []) + (["--eps0"] if flag == "epsilon0" else [])
        )
        kw: dict[str, Any] = {
            "dest": dest,
            "help": help_,
            "type": _flag_type(spec),
            "metavar": flag.upper().replace("-", "_"),
        }
        if spec.kind == "choice":
            kw["choices"] = list(spec.choices)
        if flag == "count":
            kw["help"] = "repetitions (rounds), default 1"
        if spec.kind == "choice":
            kw.pop("metavar")
        g.add_argument(*names, **kw)
    if not partial:
        g.add_argument(
            "--event",
            action="append",
            default=[],
            metavar="JSON",
            help="an api.md event as JSON (repeatable: the events are composed)",
        )
    else:
        g.add_argument("--event", metavar="JSON", help="the api.md event as JSON, without the unknown field")


def _int(s: str) -> int:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None
    if not math.isfinite(v) or v != int(v):
        raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}")
    return int(s) if s.strip().lstrip("+-").isdigit() else int(v)


def floats(s: str) -> list[float]:
    try:
        out = [float(x) for x in s.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {s!r}") from None
    if not out:
        raise argparse.ArgumentTypeError("expected at least one number")
    return out


def flag_event(a: argparse.Namespace) -> dict[str, Any] | None:
    fields = {spec_name: getattr(a, dest) for dest, spec_name in _flag_fields().items()}
    if a.mechanism is None:
        if any(v is not None for v in fields.values()):
            raise CliError("give --mechanism with the event flags (e.g. --mechanism shuffle)")
        return None
    return {"mechanism": a.mechanism, **{k: v for k, v in fields.items() if v is not None}}


def _flag_fields() -> dict[str, str]:
    """dest → the event field it sets."""
    import accountant

    out = {}
    for cls in accountant.EVENT_TYPES.values():
        for name, spec in cls.specs().items():
            out["ev_" + (spec.cli or name).replace("-", "_")] = name
    return out


def _json_events(s: str) -> list[dict[str, Any]]:
    try:
        d = json.loads(s)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"expected a JSON list of events: {exc}") from None
    if isinstance(d, dict):
        d = [d]
    if not isinstance(d, list):
        raise argparse.ArgumentTypeError(
            'expected a JSON list of events like [{"mechanism": "shuffle", ...}]'
        )
    return d


def json_event(s: str) -> dict[str, Any]:
    try:
        d = json.loads(s, parse_constant=lambda c: (_ for _ in ()).throw(CliError(f"{c} is not a number")))
    except json.JSONDecodeError as exc:
        raise CliError(f"--event is not valid JSON: {exc}") from None
    if not isinstance(d, dict):
        raise CliError('--event must be a JSON object like {"mechanism": "shuffle", ...}')
    return d


def _validate_events(dicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from pydantic import ValidationError

    from app.schemas.events import parse_event

    out = []
    for i, d in enumerate(dicts):
        try:
            out.append(parse_event(d).to_event().to_dict())
        except ValidationError as exc:
            raise CliError(f"event #{i + 1} is invalid:\n{pydantic_msg(exc)}") from None
    return out


def pydantic_msg(exc: ValidationError) -> str:
    lines = []
    for e in exc.errors():
        loc = ".".join(str(x) for x in e["loc"] if not _is_model_tag(x))
        lines.append(f"  {loc or 'event'}: {e['msg']}")
    return "\n".join(lines)


def _is_model_tag(x: object) -> bool:
    """pydantic's union tags in error locations (event type names) say nothing to a user."""
    import accountant

    return isinstance(x, str) and (x in accountant.EVENT_TYPES or x.startswith(("Partial", "Inner")))


def events_from_args(a: argparse.Namespace) -> list[dict[str, Any]]:
    dicts = [json_event(s) for s in a.event]
    fe = flag_event(a)
    if fe is not None:
        dicts.append(fe)
    if not dicts:
        raise CliError("give an event: --mechanism shuffle --n … --epsilon0 … [--count …], or --event '{…}'")
    return _validate_events(dicts)
