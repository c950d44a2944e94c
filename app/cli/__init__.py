"""``privacy-accountant``: run the service, compute at the terminal without a server, or manage
the budget ledger of a running service.

    privacy-accountant serve --host 127.0.0.1 --port 8000 [--workers N] [--log-level info]
    privacy-accountant epsilon --mechanism shuffle --n 1000000 --epsilon0 0.5 --count 100000 --delta 1e-8
    privacy-accountant delta   --mechanism shuffle --n 1000000 --epsilon0 0.5 --count 100000 --epsilon 2
    privacy-accountant rdp     --mechanism shuffle --n 10000 --epsilon0 1 --orders 2,3,10.5 --bound u1
    privacy-accountant calibrate --solve-for epsilon0 --epsilon 4 --delta 1e-5 \
        --mechanism subsampled_shuffle --n 100000 --k 1000 --count 1000
    privacy-accountant users put alice --epsilon 4 --delta 1e-6      (ledger: see app.cli.ledger)

One flag scheme everywhere: ``--epsilon``/``--delta`` are the (ε, δ) the command is about (the
given side of a conversion, a calibration target, a budget); an event's own fields have their own
flags (generated from the event declarations; ``--event-epsilon`` for ``pure_dp``). Events come
from flags (one event) or ``--event '<JSON>'`` (repeatable; compose several). Output is a readable
table; ``--json`` prints the same JSON the HTTP API returns. Errors go to stderr with exit status 2
(bad input) or 1 (other failure); a refused charge exits with 3.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Sequence

from app.cli.errors import EXIT_USAGE, CliError
from app.cli.ledger import LedgerCliError
from app.cli.parser import build_parser
from app.cli.serve import uvicorn_options


def _ledger_error(exc: Exception) -> int | None:
    """Print a ledger command's failure (from the service or the SDK); its exit status, or None if
    ``exc`` is no such failure."""
    if isinstance(exc, LedgerCliError):
        print(str(exc), file=sys.stderr)
        return exc.code
    try:
        from privacy_accountant import AccountantHTTPError, TransportError
    except ImportError:  # pragma: no cover
        return None
    if isinstance(exc, TransportError):
        print(
            f"error: could not reach the service ({exc}); start it with 'privacy-accountant serve' or give "
            "--url / ACCOUNTANT_URL",
            file=sys.stderr,
        )
        return 1
    if isinstance(exc, AccountantHTTPError):
        print(f"error ({exc.status_code}): {exc.message}", file=sys.stderr)
        return 1
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    if os.environ.get("ACCOUNTANT_MALLOC_TUNING", "1").strip().lower() not in ("0", "false", "no", "off"):
        from app.core.tuning import tune_allocator

        tune_allocator()  # the same process tuning as the service (app.core.tuning)

    try:
        if getattr(a, "serve", False):
            status: int = a.func(a)
            return status
        with warnings.catch_warnings():  # numpy overflow notes (an unbounded curve is reported as such)
            warnings.simplefilter("ignore", RuntimeWarning)
            res, text = a.func(a)
    except (Exception, KeyboardInterrupt) as exc:
        code = _failure(exc)
        if code is None:
            raise
        return code
    try:
        print(json.dumps(res, indent=2, allow_nan=False) if a.json else text)
    except BrokenPipeError:  # e.g. piped into head: the reader has what it wanted
        sys.stderr.close()
    return 0


def _failure(exc: BaseException) -> int | None:
    """Say why a command failed (on stderr); its exit status, or None for an unexpected exception."""
    import accountant

    if isinstance(exc, CliError):
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, accountant.InfeasibleTarget):
        best = ""
        if exc.best_epsilon is not None and "best achievable" not in str(exc):
            best = f" (best achievable ε: {exc.best_epsilon:.6g})"
        print(f"infeasible: {exc}{best}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, accountant.AccountantError):
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, KeyboardInterrupt):
        print("interrupted", file=sys.stderr)
        return 130
    if isinstance(exc, Exception):  # the ledger commands: the SDK's errors, said in one sentence
        return _ledger_error(exc)
    return None


__all__ = ["EXIT_USAGE", "CliError", "build_parser", "main", "uvicorn_options"]
