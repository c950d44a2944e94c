"""``privacy-accountant serve``: the settings it reads, the migration before serving, uvicorn's
options."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from app.cli.errors import CliError

if TYPE_CHECKING:
    from app.core.config import Settings


def cmd_serve(a: argparse.Namespace) -> int:

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
    if not settings.api_keys:
        _warn_no_keys(log)
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


NO_KEYS_WARNING = (
    "warning: ACCOUNTANT_API_KEYS is not set: the ledger endpoints and the dashboard will refuse every key "
    "(computations still answer). Start with ACCOUNTANT_API_KEYS='admin-secret:admin,viewer-secret:viewer' "
    "(roles admin, pipeline, viewer; choose long random keys)."
)


def _warn_no_keys(log: logging.Logger) -> None:
    """Say at start that a service without keys refuses every key (on stderr, and in the logs)."""
    log.warning("no API keys configured (ACCOUNTANT_API_KEYS): the ledger and the dashboard refuse every key")
    print(NO_KEYS_WARNING, file=sys.stderr, flush=True)


def uvicorn_options(settings: Settings, level: str) -> dict[str, Any]:
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

    http: Any
    try:
        from app.core.protocol import BoundedHttpToolsProtocol

        http = BoundedHttpToolsProtocol
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


def _migrate(database_url: str, log: logging.Logger) -> None:
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


def settings_epilog() -> str:
    """The epilog of ``serve --help``: every setting, from its declaration
    (:func:`app.core.settings_reference.epilog`), then what the service serves."""
    from app.core.settings_reference import epilog

    lines = [epilog(90), ""]
    lines.append(
        "The service migrates the database to the latest schema before it accepts requests, then serves"
    )
    lines.append("the API (/v1/…), its documentation (/docs, /redoc, /openapi.json), the budget dashboard")
    lines.append("(/dashboard), /health and /metrics.")
    return "\n".join(lines)
