"""``privacy-accountant serve``: the settings it reads, the migration before serving, uvicorn's
options."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from app.cli.errors import CliError


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


def _warn_no_keys(log) -> None:
    """Say at start that a service without keys refuses every key (on stderr, and in the logs)."""
    log.warning("no API keys configured (ACCOUNTANT_API_KEYS): the ledger and the dashboard refuse every key")
    print(NO_KEYS_WARNING, file=sys.stderr, flush=True)


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


#: what each setting of app.core.config.Settings does, for ``serve --help`` (a test checks that every
#: setting is described here)
SETTINGS_HELP: dict[str, str] = {
    "DATABASE_URL": "SQLAlchemy URL of the ledger database (default sqlite:///./accountant.db, created on "
    "first start); PostgreSQL: postgresql+psycopg://user:pass@host/db (pip install -e '.[postgres]' in the clone)",
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
    "ACCOUNTANT_NUMBA": "1: the compiled kernels of the clone engine (needs the [fast] extra; the same "
    "bounds, new clone curves ~2x faster; numba is imported at the first new curve); default off",
    "ACCOUNTANT_DB_TIMEOUT": "seconds a database operation may take: connecting, waiting for a lock, a "
    "statement (default 5; then 503 with Retry-After, nothing recorded)",
    "ACCOUNTANT_DB_CONCURRENCY": "database operations at once per process (default 16; more wait)",
    "ACCOUNTANT_DB_QUEUE": "database operations that may wait (default 256; more: 503)",
    "ACCOUNTANT_DB_WRITE_LANES": "PostgreSQL: ledger writes at once per process (default 4; the others queue "
    "in arrival order; SQLite: always one)",
}


def settings_epilog() -> str:
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
