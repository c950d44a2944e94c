"""``privacy-accountant``: run the service, compute at the terminal without a server, or manage
the budget ledger of a running service.

    privacy-accountant serve --host 127.0.0.1 --port 8000 [--workers N] [--log-level info]
    privacy-accountant epsilon --mechanism shuffle --n 1000000 --epsilon0 0.5 --count 100000 --delta 1e-8
    privacy-accountant delta   --mechanism shuffle --n 1000000 --epsilon0 0.5 --count 100000 --epsilon 2
    privacy-accountant rdp     --mechanism shuffle --n 10000 --epsilon0 1 --orders 2,3,10.5 --bound u1
    privacy-accountant calibrate --solve-for epsilon0 --epsilon 4 --delta 1e-5 \\
        --mechanism subsampled_shuffle --n 100000 --k 1000 --count 1000
    privacy-accountant users put alice --epsilon 4 --delta 1e-6      (ledger: see app.cli_ledger)

One flag scheme everywhere: ``--epsilon``/``--delta`` are the (ε, δ) the command is about (the
given side of a conversion, a calibration target, a budget); an event's own fields have their own
flags (generated from the event declarations; ``--event-epsilon`` for ``pure_dp``). Events come
from flags (one event) or ``--event '<JSON>'`` (repeatable; compose several). Output is a readable
table; ``--json`` prints the same JSON the HTTP API returns. Errors go to stderr with exit status 2
(bad input) or 1 (other failure); a refused charge exits with 3.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
import warnings
from collections.abc import Sequence

EXIT_USAGE = 2


class CliError(Exception):
    pass


# ------------------------------------------------------------------------------------------ helpers
def _event_flags() -> dict[str, tuple[str, object, str]]:
    """One CLI flag per declared event field (accountant.EVENT_TYPES): dest → (flag, spec, help).
    A field name shared by several event types is one flag; ``Spec.cli`` renames a flag whose
    plain name a command option already takes."""
    import accountant

    flags: dict[str, tuple[str, object, dict[str, list[str]]]] = {}
    for mech, cls in accountant.EVENT_TYPES.items():
        for name, spec in cls.specs().items():
            flag = spec.cli or name.replace("_", "-")
            dest = "ev_" + flag.replace("-", "_")
            flags.setdefault(dest, (flag, spec, {}))[2].setdefault(spec.description, []).append(mech)
    return {
        d: (f, sp, "; ".join(f"{', '.join(m)}: {desc}" for desc, m in h.items()))
        for d, (f, sp, h) in flags.items()
    }


def _flag_type(spec) -> object:
    return {"integer": _int, "number": float, "numbers": _floats, "events": _json_events}.get(spec.kind, str)


def _add_event_flags(p: argparse.ArgumentParser, partial: bool = False) -> None:
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
        kw: dict = {
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


def _floats(s: str) -> list[float]:
    try:
        out = [float(x) for x in s.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {s!r}") from None
    if not out:
        raise argparse.ArgumentTypeError("expected at least one number")
    return out


def _flag_event(a: argparse.Namespace) -> dict | None:
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


def _json_events(s: str) -> list:
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


def _json_event(s: str) -> dict:
    try:
        d = json.loads(s, parse_constant=lambda c: (_ for _ in ()).throw(CliError(f"{c} is not a number")))
    except json.JSONDecodeError as exc:
        raise CliError(f"--event is not valid JSON: {exc}") from None
    if not isinstance(d, dict):
        raise CliError('--event must be a JSON object like {"mechanism": "shuffle", ...}')
    return d


def _validate_events(dicts: list[dict]) -> list[dict]:
    from pydantic import ValidationError

    from app.schemas.events import parse_event

    out = []
    for i, d in enumerate(dicts):
        try:
            out.append(parse_event(d).to_event().to_dict())
        except ValidationError as exc:
            raise CliError(f"event #{i + 1} is invalid:\n{_pydantic_msg(exc)}") from None
    return out


def _pydantic_msg(exc) -> str:
    lines = []
    for e in exc.errors():
        loc = ".".join(str(x) for x in e["loc"] if not _is_model_tag(x))
        lines.append(f"  {loc or 'event'}: {e['msg']}")
    return "\n".join(lines)


def _is_model_tag(x) -> bool:
    """pydantic's union tags in error locations (event type names) say nothing to a user."""
    import accountant

    return isinstance(x, str) and (x in accountant.EVENT_TYPES or x.startswith(("Partial", "Inner")))


def _events(a: argparse.Namespace) -> list[dict]:
    dicts = [_json_event(s) for s in a.event]
    fe = _flag_event(a)
    if fe is not None:
        dicts.append(fe)
    if not dicts:
        raise CliError("give an event: --mechanism shuffle --n … --epsilon0 … [--count …], or --event '{…}'")
    return _validate_events(dicts)


def _fmt(x) -> str:
    if x is None:
        return "unbounded"
    if isinstance(x, (list, dict)):
        return json.dumps(x, separators=(",", ":"))
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _event_str(e: dict) -> str:
    return e["mechanism"] + " " + " ".join(f"{k}={_fmt(v)}" for k, v in e.items() if k != "mechanism")


def _table(rows: Sequence[Sequence], header: Sequence[str] | None = None) -> str:
    rows = [[_fmt(c) if not isinstance(c, str) else c for c in r] for r in rows]
    allr = ([list(header)] if header else []) + rows
    widths = [max(len(r[i]) for r in allr) for i in range(len(allr[0]))]
    lines = []
    if header:
        lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return "\n".join(lines)


def _orders_line(res: dict) -> str:
    if res.get("default_orders"):
        return (
            f"default grid, version {res.get('grid_version')} ({len(res['orders'])} orders, "
            f"{_fmt(res['orders'][0])} … {_fmt(res['orders'][-1])})"
        )
    return (
        ", ".join(_fmt(o) for o in res["orders"])
        if len(res["orders"]) <= 8
        else f"{len(res['orders'])} orders, {_fmt(res['orders'][0])} … {_fmt(res['orders'][-1])}"
    )


def _notes(res: dict) -> str:
    notes = res.get("notes") or []
    return "".join(f"\nnote: {n}" for n in notes)


# --------------------------------------------------------------------------------------- commands
def cmd_rdp(a) -> tuple[dict, str]:
    from app.core.compute import rdp_result

    evs = _events(a)
    if len(evs) != 1:
        raise CliError("rdp takes exactly one event")
    res = rdp_result(evs[0], a.orders, a.bound)
    rows = [(o, r, s) for o, r, s in zip(res["orders"], res["rdp"], res["sources"])]
    text = (
        f"event: {_event_str(res['event'])}\nbound: {res['bound']}\norders: {_orders_line(res)}\n\n"
        + _table(rows, ("order α", "RDP ε(α)", "source"))
        + _notes(res)
    )
    return res, text


def _guarantee_text(res: dict, events: list[dict]) -> str:
    rows = [
        ("epsilon (ε)", res["epsilon"]),
        ("delta (δ)", res["delta"]),
        ("optimal order (α)", res["order"]),
        ("orders", _orders_line(res)),
    ]
    text = _table(rows)
    ev_rows = [(str(s["event"] + 1), _event_str(events[s["event"]]), s["bound"]) for s in res["sources"]]
    text += "\n\n" + _table(ev_rows, ("#", "event", "bound at the optimal order"))
    return text + _notes(res)


def cmd_epsilon(a) -> tuple[dict, str]:
    from app.core.compute import epsilon_result

    evs = _events(a)
    res = epsilon_result(evs, a.delta, a.orders)
    return res, _guarantee_text(res, evs)


def cmd_delta(a) -> tuple[dict, str]:
    from app.core.compute import delta_result

    evs = _events(a)
    res = delta_result(evs, a.epsilon, a.orders)
    return res, _guarantee_text(res, evs)


def cmd_calibrate(a) -> tuple[dict, str]:
    from pydantic import ValidationError

    from app.core.compute import calibrate_result
    from app.schemas.compute import CalibrateRequest

    if a.target_epsilon is None:
        raise CliError("give the target ε: --epsilon E (with --delta D)")
    if a.event:
        ev = _json_event(a.event)
    else:
        ev = _flag_event(a)
        if ev is None:
            raise CliError("give the event without the unknown: --mechanism … (or --event '{…}')")
    try:
        req = CalibrateRequest.model_validate(
            {
                "solve_for": a.solve_for,
                "target": {"epsilon": a.target_epsilon, "delta": a.delta},
                "event": ev,
                **({"orders": a.orders} if a.orders else {}),
            }
        )
    except ValidationError as exc:
        raise CliError(f"invalid calibration request:\n{_pydantic_msg(exc)}") from None

    t0 = time.monotonic()
    last = {"t": t0, "eps": None, "fraction": 0.0}

    def say(msg: str) -> None:
        if not a.quiet:
            print(msg, file=sys.stderr, flush=True)

    def progress(fraction: float, eps: float) -> None:
        last.update(eps=eps, fraction=fraction)
        now = time.monotonic()
        if now - last["t"] >= 0.5:
            last["t"] = now
            say(f"  {100 * fraction:5.1f}%  last ε = {eps:.6g}  ({now - t0:.1f} s)")

    done = threading.Event()

    def ticker():  # a single slow evaluation still shows signs of life
        while not done.wait(2.0):
            say(f"  … still searching ({time.monotonic() - t0:.0f} s)")

    say(f"calibrating {req.solve_for} for ε ≤ {req.target.epsilon:g} at δ = {req.target.delta:g} …")
    th = threading.Thread(target=ticker, daemon=True)
    th.start()
    try:
        res = calibrate_result(
            req.event.to_accountant(),
            req.solve_for,
            req.target.epsilon,
            req.target.delta,
            req.orders,
            progress=progress,
        )
    finally:
        done.set()
    say(f"done in {time.monotonic() - t0:.2f} s ({res.get('evaluations', '?')} curve evaluations)")
    value = res["value"] if isinstance(res["value"], int) else f"{res['value']:.10g}"
    rows = [
        (f"{res['solve_for']} (solved)", value),
        ("epsilon (ε)", f"{res['epsilon']:.10g}"),
        ("target ε", res["target"]["epsilon"]),
        ("delta (δ)", res["delta"]),
        ("optimal order (α)", res["order"]),
    ]
    if res.get("direction"):
        rows.append(("direction", res["direction"]))
    if res.get("at_limit"):
        rows.append(("at limit of domain", "yes"))
    text = f"event: {_event_str(res['event'])}\n\n" + _table(rows) + _notes(res)
    return res, text


def cmd_serve(a) -> int:
    import logging

    import uvicorn
    from pydantic import ValidationError

    from app.core.config import Settings, settings_errors
    from app.core.logging import configure_logging

    try:
        settings = Settings()
    except ValidationError as exc:
        raise CliError("invalid settings:\n" + settings_errors(exc)) from None
    level = (a.log_level or settings.log_level).upper()
    configure_logging(level)
    log = logging.getLogger("app.serve")
    try:
        _migrate(settings.database_url, log)
    except Exception as exc:  # a database we cannot reach or migrate: say so, do not serve
        log.error(
            "could not bring the database to the latest migration; not serving",
            extra={"database": _redact(settings.database_url), "error": f"{type(exc).__name__}: {exc}"},
        )
        print(
            f"error: could not migrate {_redact(settings.database_url)}: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return 1
    options = uvicorn_options(settings, level)
    log.info("starting", extra={"host": a.host, "port": a.port, "workers": a.workers})
    if a.workers == 1:
        from app.main import create_app

        uvicorn.run(create_app(settings, served=True), host=a.host, port=a.port, **options)
        return 0
    # several workers: uvicorn starts each from an import string, and each reads the same environment
    # the settings above came from; prometheus-client reads its multiprocess directory from the
    # environment when it is first imported, so that one variable is set for the workers here
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        import tempfile

        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="accountant-metrics-")
    uvicorn.run(
        "app.main:create_served_app", factory=True, host=a.host, port=a.port, workers=a.workers, **options
    )
    return 0


def _ledger_error(exc: Exception) -> int | None:
    """Print a ledger command's failure (from the service or the SDK); its exit status, or None if
    ``exc`` is no such failure."""
    from app.cli_ledger import LedgerCliError

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


def uvicorn_options(settings, level: str) -> dict:
    """uvicorn's settings, each on purpose (README "Operating it"):

    * ``limit_concurrency``: connections + requests in progress per worker; beyond it uvicorn answers
      ``503`` at once instead of queueing without bound;
    * ``timeout_keep_alive``: an idle keep-alive connection is closed after this many seconds;
    * ``backlog``: connections the kernel queues before ``accept`` (uvicorn's default, stated);
    * ``http``: uvicorn's httptools protocol with a bound on the request head (16 KiB, ``431``) and
      on the time to receive it (10 s, ``408``), which uvicorn itself lacks
      (:mod:`app.core.protocol`); ``h11_max_incomplete_event_size`` gives the h11 parser the same
      16 KiB where httptools is not installed;
    * ``timeout_graceful_shutdown``: requests in progress get 10 s to finish on SIGTERM;
    * no access log from uvicorn (the service's middleware writes one JSON line per request), no
      ``server`` header.
    """
    from app.core.logging import logging_config

    try:
        from app.core.protocol import BoundedHttpToolsProtocol as http
    except ImportError:  # pragma: no cover - httptools not installed: uvicorn's h11 protocol
        http = "auto"
    return {
        "http": http,
        "log_config": logging_config(level),
        "log_level": level.lower(),
        "access_log": False,
        "server_header": False,
        "limit_concurrency": settings.limit_concurrency,
        "timeout_keep_alive": settings.keepalive_timeout,
        "backlog": 2048,
        "h11_max_incomplete_event_size": 16 * 1024,
        "timeout_graceful_shutdown": 10,
    }


def _migrate(database_url: str, log) -> None:
    """Bring the ledger schema to head before accepting requests (api.md "Starting it"), in a
    short-lived child process: the server itself never loads Alembic."""
    import multiprocessing

    t0 = time.monotonic()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        head = pool.apply(_upgrade, (database_url,))
    log.info(
        "database at head",
        extra={
            "revision": head,
            "seconds": round(time.monotonic() - t0, 3),
            "database": _redact(database_url),
        },
    )


def _upgrade(database_url: str) -> str:
    from app.db.migrate import upgrade_to_head

    return upgrade_to_head(database_url)


def _redact(url: str) -> str:
    """The database URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        user = cred.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
    return url


# ----------------------------------------------------------------------------------------- parser
def _int_in(lo: int, hi: int):
    def parse(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer from {lo} to {hi}, got {v}")
        return v

    return parse


#: what each setting of app.core.config.Settings does, for ``serve --help`` (a test checks that every
#: setting is described here)
SETTINGS_HELP: dict[str, str] = {
    "DATABASE_URL": "SQLAlchemy URL of the ledger database (default sqlite:///./accountant.db, created on "
    "first start); PostgreSQL: postgresql+psycopg://user:pass@host/db (pip install 'privacy-accountant[postgres]')",
    "ACCOUNTANT_API_KEYS": "comma-separated key:role pairs, roles admin (everything), pipeline (charge, "
    "read), viewer (read), e.g. 's3cret-admin:admin,s3cret-ci:pipeline,s3cret-dash:viewer'. Without keys "
    "the ledger endpoints and the dashboard refuse every request (computation needs no key)",
    "ACCOUNTANT_LOG_LEVEL": "log level of the JSON logs (also LOG_LEVEL): DEBUG, INFO (default), WARNING, ERROR",
    "ACCOUNTANT_MAX_BODY_BYTES": "largest request body accepted (default 1048576; larger: 413)",
    "ACCOUNTANT_ANONYMOUS_COMPUTE": "open (default: the computation endpoints need no key) or key-required",
    "ACCOUNTANT_COMPUTE_CONCURRENCY": "computations running at once per process (default 0: the CPU count, "
    "at least 2)",
    "ACCOUNTANT_KEYED_RESERVED": "of those, slots only requests with a valid key may use (default 1)",
    "ACCOUNTANT_ANONYMOUS_QUEUE": "anonymous computations that may wait for a slot (default 4; more: 429 "
    "with Retry-After)",
    "ACCOUNTANT_KEYED_QUEUE": "keyed computations that may wait for a slot (default 64; more: 503 with "
    "Retry-After)",
    "ACCOUNTANT_QUEUE_TIMEOUT": "seconds a computation may wait for a slot (default 10; then 503)",
    "ACCOUNTANT_COMPUTE_TIME_LIMIT": "seconds from arrival (queue time included) one computation may take "
    "(default 30; then 400, and a retry continues from the cache)",
    "ACCOUNTANT_MAX_ORDER_MASS": "work limit of one request: Σ over its distinct events of Σ max(α, 1000) "
    "over the orders asked for (default 2e7; more: 400)",
    "ACCOUNTANT_BODY_TIMEOUT": "seconds to receive a whole request body (default 10; then 408 and the "
    "connection is closed)",
    "ACCOUNTANT_MAX_INFLIGHT_BODY_BYTES": "bytes of large request bodies held at once (default 32 MiB; "
    "beyond: 503)",
    "ACCOUNTANT_RESPONSE_CACHE_BYTES": "bytes of cached computation answers (default 32 MiB)",
    "ACCOUNTANT_CURVE_CACHE_BYTES": "bytes of expensive curves kept in memory (default 64 MiB)",
    "ACCOUNTANT_CURVE_STORE": "where expensive curves are kept: database (shared by every process and kept "
    "across restarts; what serve selects) or memory",
    "ACCOUNTANT_CURVE_STORE_MAX_ROWS": "curves kept in the shared store (default 50000; oldest evicted)",
    "ACCOUNTANT_LIMIT_CONCURRENCY": "open connections + requests per worker (default 1000; beyond: 503)",
    "ACCOUNTANT_KEEPALIVE_TIMEOUT": "seconds an idle keep-alive connection stays open (default 5)",
    "ACCOUNTANT_MALLOC_TUNING": "1 (default): keep large freed arrays in the heap (glibc), ~10 ms less per "
    "new clone curve at the price of retained memory; 0 to turn off",
    "ACCOUNTANT_DB_TIMEOUT": "seconds a database operation may take: connecting, waiting for a lock, a "
    "statement (default 5; then 503 with Retry-After, nothing recorded)",
    "ACCOUNTANT_DB_CONCURRENCY": "database operations at once per process (default 16; more wait)",
    "ACCOUNTANT_DB_QUEUE": "database operations that may wait (default 256; more: 503)",
    "ACCOUNTANT_DB_WRITE_LANES": "PostgreSQL: ledger writes at once per process (default 4; the others queue "
    "in arrival order; SQLite: always one)",
}


def _settings_epilog() -> str:
    lines = ["settings (environment variables, read at start):"]
    for name, text in SETTINGS_HELP.items():
        lines.append(f"  {name}")
        lines.extend("      " + chunk for chunk in _wrap(text, 90))
    lines.append("")
    lines.append(
        "The service migrates the database to the latest schema before it accepts requests, then serves"
    )
    lines.append("the API (/v1/…), its documentation (/docs, /redoc, /openapi.json), the budget dashboard")
    lines.append("(/dashboard), /health and /metrics.")
    return "\n".join(lines)


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width, break_on_hyphens=False)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("privacy-accountant")
    except PackageNotFoundError:  # pragma: no cover - a source tree that is not installed
        return "0.0.0"


def build_parser() -> argparse.ArgumentParser:
    from app.cli_ledger import add_ledger_commands

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
        epilog=_settings_epilog(),
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

    def common(q):
        q.add_argument(
            "--orders", type=_floats, help="comma-separated Rényi orders (default: the service's grid)"
        )
        q.add_argument(
            "--json", action="store_true", help="print the JSON answer (as the HTTP API returns it)"
        )

    r = sub.add_parser("rdp", help="the RDP curve of one event (no server needed)")
    _add_event_flags(r)
    r.add_argument(
        "--bound", default="upper", help="upper (default), u1, u1_simplified, u2, cap, lower, su, …"
    )
    common(r)
    r.set_defaults(func=cmd_rdp)

    e = sub.add_parser("epsilon", help="compose events and convert to ε at δ (no server needed)")
    _add_event_flags(e)
    e.add_argument("--delta", type=float, required=True, help="δ of the answer")
    common(e)
    e.set_defaults(func=cmd_epsilon)

    d = sub.add_parser("delta", help="compose events and convert to δ at ε (no server needed)")
    _add_event_flags(d)
    d.add_argument("--epsilon", type=float, required=True, help="ε of the answer")
    common(d)
    d.set_defaults(func=cmd_delta)

    c = sub.add_parser(
        "calibrate", help="solve for epsilon0, count, n or k to meet a target (ε, δ) (no server needed)"
    )
    c.add_argument(
        "--solve-for",
        required=True,
        choices=["epsilon0", "count", "n", "k"],
        help="the unknown (left out of the event): epsilon0 largest, count most rounds, n fewest users, k",
    )
    c.add_argument(
        "--epsilon", dest="target_epsilon", metavar="EPSILON", type=float, help="target ε (required)"
    )
    # the old spelling, kept working (hidden)
    c.add_argument("--target-epsilon", dest="target_epsilon", type=float, help=argparse.SUPPRESS)
    c.add_argument("--delta", type=float, required=True, help="target δ")
    _add_event_flags(c, partial=True)
    c.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    common(c)
    c.set_defaults(func=cmd_calibrate)

    g = sub.add_parser(
        "figures", add_help=False, prefix_chars="\0", help="regenerate the thesis's figures (app.figures)"
    )
    g.add_argument("args", nargs="*")  # parsed by app.figures.main (runs on its own, like serve)
    g.set_defaults(func=lambda a: __import__("app.figures", fromlist=["main"]).main(a.args), serve=True)

    add_ledger_commands(sub, _add_event_flags)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    import accountant

    if os.environ.get("ACCOUNTANT_MALLOC_TUNING", "1").strip().lower() not in ("0", "false", "no", "off"):
        from app.core.tuning import tune_allocator

        tune_allocator()  # the same process tuning as the service (app.core.tuning)

    try:
        if getattr(a, "serve", False):
            return a.func(a)
        with warnings.catch_warnings():  # numpy overflow notes (an unbounded curve is reported as such)
            warnings.simplefilter("ignore", RuntimeWarning)
            res, text = a.func(a)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except accountant.InfeasibleTarget as exc:
        best = ""
        if exc.best_epsilon is not None and "best achievable" not in str(exc):
            best = f" (best achievable ε: {exc.best_epsilon:.6g})"
        print(f"infeasible: {exc}{best}", file=sys.stderr)
        return EXIT_USAGE
    except accountant.AccountantError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the ledger commands: the SDK's errors, said in one sentence
        code = _ledger_error(exc)
        if code is None:
            raise
        return code
    try:
        print(json.dumps(res, indent=2, allow_nan=False) if a.json else text)
    except BrokenPipeError:  # e.g. piped into head: the reader has what it wanted
        sys.stderr.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
