"""The command line of ``privacy-accountant``: every command, its flags and its help."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from app.cli.compute import cmd_calibrate, cmd_delta, cmd_epsilon, cmd_rdp
from app.cli.events import add_event_flags, floats
from app.cli.ledger import add_ledger_commands
from app.cli.serve import cmd_serve, settings_epilog


def _int_in(lo: int, hi: int) -> Callable[[str], int]:
    def parse(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer from {lo} to {hi}, got {v}")
        return v

    return parse


def _solve_for(names: tuple[str, ...]) -> Callable[[str], str]:
    """--solve-for: a calibratable field name, or ``inner[I].FIELD`` (checked by the request model)."""

    def parse(s: str) -> str:
        if s in names or (s.startswith("inner[") and "]." in s):
            return s
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(names)} or inner[I].FIELD, got {s!r}")

    return parse


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("privacy-accountant")
    except PackageNotFoundError:  # pragma: no cover - a source tree that is not installed
        return "0.0.0"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="privacy-accountant",
        description="Shuffle-model Rényi-DP accountant: run the service, compute at the terminal, or manage "
        "the budget ledger of a running service. 'privacy-accountant COMMAND --help' describes each command.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser(
        "serve",
        help="run the HTTP service (migrates the database first)",
        description="Run the HTTP service: the API, its docs, the budget dashboard.",
        epilog=settings_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0: all)"
    )
    s.add_argument("--port", type=_int_in(1, 65535), default=8000, help="TCP port (default 8000)")
    s.add_argument(
        "--workers",
        type=_int_in(1, 1024),
        default=1,
        help="worker processes (default 1); they share the database and its curve cache",
    )
    s.add_argument(
        "--log-level",
        choices=["critical", "error", "warning", "info", "debug"],
        type=str.lower,
        help="log level (default: $ACCOUNTANT_LOG_LEVEL or info)",
    )
    s.set_defaults(func=cmd_serve, serve=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument(
            "--orders", type=floats, help="comma-separated Rényi orders (default: the service's grid)"
        )
        q.add_argument(
            "--json", action="store_true", help="print the JSON answer (as the HTTP API returns it)"
        )

    def accounting(q: argparse.ArgumentParser) -> None:
        q.add_argument(
            "--accounting",
            choices=["best", "rdp", "pld"],
            default="best",
            help="best (default: the smallest certified answer of the RDP, PLD and pure routes), rdp or pld alone",
        )

    r = sub.add_parser("rdp", help="the RDP curve of one event (no server needed)")
    add_event_flags(r)
    r.add_argument(
        "--bound", default="upper", help="upper (default), u1, u1_simplified, u2, cap, lower, su, …"
    )
    common(r)
    r.set_defaults(func=cmd_rdp)

    e = sub.add_parser("epsilon", help="compose events and convert to ε at δ (no server needed)")
    add_event_flags(e)
    e.add_argument("--delta", type=float, required=True, help="δ of the answer")
    accounting(e)
    common(e)
    e.set_defaults(func=cmd_epsilon)

    d = sub.add_parser("delta", help="compose events and convert to δ at ε (no server needed)")
    add_event_flags(d)
    d.add_argument("--epsilon", type=float, required=True, help="ε of the answer")
    accounting(d)
    common(d)
    d.set_defaults(func=cmd_delta)

    import accountant

    c = sub.add_parser(
        "calibrate",
        help="solve for one parameter (a noise multiplier, ε0, the rounds, …) to meet a target (ε, δ) "
        "(no server needed)",
    )
    c.add_argument(
        "--solve-for",
        required=True,
        type=_solve_for(accountant.SOLVE_FOR),
        metavar="FIELD",
        help="the unknown, left out of the event: one of "
        + ", ".join(accountant.SOLVE_FOR)
        + " (the field's declared direction: the largest ε0/ε/count/k, the smallest noise/n), or an inner "
        "event's field of a subsampled event, inner[I].FIELD (the bare name when one inner event leaves it out)",
    )
    c.add_argument(
        "--epsilon", dest="target_epsilon", metavar="EPSILON", type=float, help="target ε (required)"
    )
    c.add_argument("--delta", type=float, required=True, help="target δ")
    add_event_flags(c, partial=True)
    c.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    accounting(c)
    common(c)
    c.set_defaults(func=cmd_calibrate)

    add_ledger_commands(sub, add_event_flags)
    return p
