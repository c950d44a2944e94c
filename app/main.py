"""The FastAPI application factory: ``create_app(settings)``.

``privacy-accountant serve`` builds the settings once, migrates the database and serves
``create_app(settings, served=True)``; ``uvicorn --factory app.main:create_app`` serves an app with
the settings read from the environment. Importing this module has no side effects: ``app.main.app``
(for ``uvicorn app.main:app``) is created on first access.
"""

from __future__ import annotations

import importlib
import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

import accountant
import mechanisms
from app.core.admission import Overloaded, install_checkpoint
from app.core.config import Settings
from app.core.logging import request_id_var
from app.core.mechanisms import InvalidMechanismRequest
from app.core.metrics import DB_UNAVAILABLE, DOMAIN_ERRORS
from app.core.middleware import ServiceMiddleware
from app.core.services import ComputeTimeLimit, RequestAbandoned, Services
from app.db.session import DatabaseUnavailable
from app.ledger import errors as ledger_errors

log = logging.getLogger("app")

DESCRIPTION = """
Shuffle-model Rényi-DP accountant: RDP curves of shuffle and subsampled-shuffle releases (the
thesis's bounds and the tightest valid combination), composition, conversion to (ε, δ), calibration
of ε0 / rounds / n / k against a target, and a per-user budget ledger.

* The computation endpoints (`/v1/rdp`, `/v1/epsilon`, `/v1/delta`, `/v1/calibrate`, the mechanisms) need
  no key; a valid key gives the request reserved capacity. Anonymous computations get a bounded share: when
  their queue is full the answer is `429`, when no slot frees up in time `503`, both with `Retry-After`.
  `orders` is optional everywhere (default grid: bounds.md §6); every answer says which orders it used.
* Ledger endpoints need `Authorization: Bearer <key>` (roles admin, pipeline, viewer).
* Every error body is JSON with a human-readable `detail`: malformed input `422` (FastAPI's
  validation shape: strings for numbers, NaN/Infinity, unknown fields, out-of-range values), domain
  errors `400` (a bound outside its validity, a parameter outside its domain) or `422` (an
  infeasible target, with `best_epsilon`), bodies over 1 MiB `413` (not received within the body time
  limit `408`), auth `401`/`403`, refusals `409`.
* `503` with `Retry-After` means "not now, nothing was done": the service is busy, or the database is
  unavailable (nothing was recorded). A pipeline retries the same request with the same idempotency key.
* No response contains NaN or Infinity; a curve value with no finite bound is `null`.
* Every response carries `X-Request-ID` (echoed from the request when given).
"""


_MAX_ERRORS = 20


def _sanitize(obj: Any, depth: int = 0) -> Any:
    """JSON-safe, bounded copy of a validation error (no NaN/inf, no echo of huge inputs)."""
    if depth > 6:
        return "…"
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else repr(obj)
    if isinstance(obj, (int, bool)) or obj is None:
        return obj
    if isinstance(obj, str):
        return _sanitize_str(obj)
    if isinstance(obj, dict):
        return _sanitize_dict(obj, depth)
    if isinstance(obj, (list, tuple)):
        return _sanitize_list(obj, depth)
    if isinstance(obj, BaseException):
        return str(obj)
    return str(obj)[:200]


def _sanitize_str(s: str) -> str:
    s = _no_surrogates(s)
    return s if len(s) <= 200 else s[:200] + f"… ({len(s)} characters)"


def _sanitize_dict(obj: dict[Any, Any], depth: int) -> dict[str, Any]:
    items = list(obj.items())
    out = {str(k): _sanitize(v, depth + 1) for k, v in items[:20]}
    if len(items) > 20:
        out["…"] = f"{len(items) - 20} more keys"
    return out


def _sanitize_list(obj: list[Any] | tuple[Any, ...], depth: int) -> list[Any]:
    out = [_sanitize(v, depth + 1) for v in obj[:10]]
    if len(obj) > 10:
        out.append(f"… ({len(obj)} items)")
    return out


def _no_surrogates(s: str) -> str:
    """``s`` with lone surrogates (which UTF-8 cannot encode) written as ``\\udXXX`` escapes."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


#: the HTTP status of each ledger error (the most specific class listed wins)
LEDGER_STATUS: dict[type[ledger_errors.LedgerError], int] = {
    ledger_errors.NotFound: 404,
    ledger_errors.Conflict: 409,
    ledger_errors.Refused: 409,
    ledger_errors.Invalid: 422,
    ledger_errors.BadPage: 400,
    ledger_errors.BadQuery: 400,
}


def _ledger_status(exc: ledger_errors.LedgerError) -> int:
    return next((LEDGER_STATUS[c] for c in type(exc).__mro__ if c in LEDGER_STATUS), 400)


#: the HTTP status of each error of the mechanisms (the most specific class listed wins)
MECHANISM_STATUS: dict[type[Exception], int] = {
    mechanisms.UnknownMechanismError: 404,
    mechanisms.CalibrationTimeout: 400,
    mechanisms.MechanismError: 422,
    InvalidMechanismRequest: 422,
}


def _error(status: int, detail: Any, headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    body = {"detail": detail, **extra}
    rid = request_id_var.get()
    if rid:
        body["request_id"] = rid
    return JSONResponse(status_code=status, content=body, headers=headers)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    services: Services = app.state.services
    logging.captureWarnings(True)  # warnings become (JSON) log records, not raw stderr text
    if services.settings.malloc_tuning and services.served:
        from app.core.tuning import tune_allocator

        tune_allocator()
    yield
    # curves computed by this process but not yet written to the shared store
    from accountant.store import flush_store

    await anyio.to_thread.run_sync(flush_store)


def _curve_store(settings: Settings, served: bool) -> None:
    """Where expensive curves go: the shared database store when configured (or, by default, when
    served by ``serve``, which migrated the database), else the in-process memory store."""
    from accountant.store import MemoryStore, set_store

    choice = settings.curve_store or ("database" if served else "memory")
    if choice == "database":
        from app.db.curve_store import install

        install(settings.database_url, settings.curve_cache_bytes, settings.curve_store_max_rows)
    else:
        set_store(MemoryStore(settings.curve_cache_bytes))


def create_app(settings: Settings | None = None, *, served: bool = False) -> FastAPI:
    """A new app serving with ``settings`` (default: read from the environment now). ``served``:
    the database was migrated by ``serve`` (so the shared curve store may be used by default, and
    the process-wide allocator tuning applies)."""
    settings = settings if settings is not None else Settings()
    services = Services.build(settings, served)
    install_checkpoint()
    _curve_store(settings, served)
    app = FastAPI(
        lifespan=_lifespan,
        title="Privacy accountant",
        version=_version(),
        description=DESCRIPTION,
        openapi_tags=[
            {
                "name": "compute",
                "description": "Pure computation: curves, composition, conversion, calibration.",
            },
            {"name": "operations", "description": "Health and metrics."},
            {
                "name": "ledger",
                "description": "Per-user budgets: users, charges (all or nothing, idempotent), cohorts, "
                "dashboard reads. Needs `Authorization: Bearer <key>`. A `409` refusal depends only on the event's "
                "public parameters and the public budgets, never on data, so it leaks nothing.",
            },
            {
                "name": "mechanisms",
                "description": "The local randomizers and central mechanisms of the `mechanisms` "
                "package: catalog, calibrated parameters with their accounting events, and randomize/estimate for "
                "simulation and testing. Real clients randomize on their own device with the SDK, never on the server.",
            },
        ],
    )
    app.state.services = services
    app.add_middleware(ServiceMiddleware, services=services)
    _install_error_handlers(app)

    # ---- routers (one line each) -----------------------------------------------------------------
    from app.api.routes import compute

    app.include_router(compute.router)
    app.include_router(importlib.import_module("app.api.routes.ledger").router)
    app.include_router(importlib.import_module("app.api.routes.mechanisms").router)
    importlib.import_module("app.api.routes.dashboard").install(app)  # /dashboard, /static, offline /docs
    return app


# ---- how each error becomes an HTTP answer (the one place domain errors get their status) --------------
async def _accountant_error(_request: Request, exc: accountant.AccountantError) -> Response:
    name = type(exc).__name__
    DOMAIN_ERRORS.labels(name).inc()
    if isinstance(exc, accountant.InfeasibleTarget):
        best = exc.best_epsilon
        best = float(best) if best is not None and math.isfinite(best) else None
        return _error(422, str(exc), error=name, best_epsilon=best)
    return _error(400, str(exc), error=name)


async def _ledger_error(_request: Request, exc: ledger_errors.LedgerError) -> Response:
    """Every ledger refusal or lookup failure as JSON: ``detail`` and the error's structured details."""
    body = {"detail": exc.detail, **exc.extra}
    rid = request_id_var.get()
    if rid:
        body["request_id"] = rid
    return JSONResponse(status_code=_ledger_status(exc), content=body)


async def _overloaded(_request: Request, exc: Overloaded) -> Response:
    return _error(exc.status, exc.detail, {"Retry-After": str(exc.retry_after)}, error="Overloaded")


async def _time_limit(_request: Request, exc: ComputeTimeLimit) -> Response:
    if exc.busy:
        headers = {"Retry-After": str(exc.retry_after)}
        return _error(503, exc.detail, headers, error="TimeLimitExceeded")
    return _error(400, exc.detail, error="TimeLimitExceeded")


async def _abandoned(_request: Request, _exc: RequestAbandoned) -> Response:
    return Response(status_code=499)  # nobody reads it: the client left (nginx's "client closed")


async def _database_unavailable(_request: Request, exc: DatabaseUnavailable) -> Response:
    DB_UNAVAILABLE.labels(exc.cause).inc()
    log.warning("database unavailable", extra={"cause": exc.cause, "reason": exc.reason})
    headers = {"Retry-After": str(exc.retry_after)}
    return _error(503, exc.detail, headers, error="DatabaseUnavailable", cause=exc.cause)


async def _mechanism_error(_request: Request, exc: Exception) -> Response:
    status = next((MECHANISM_STATUS[c] for c in type(exc).__mro__ if c in MECHANISM_STATUS), 422)
    return _error(status, _sanitize(str(exc)))


async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
    errors = list(exc.errors())
    out = [_validation_item(e, request) for e in errors[:_MAX_ERRORS]]
    extra: dict[str, Any] = {"errors_omitted": len(errors) - _MAX_ERRORS} if len(errors) > _MAX_ERRORS else {}
    return _error(422, out, **extra)


def _validation_item(e: Any, request: Request) -> dict[str, Any]:
    """One validation error, JSON-safe and bounded."""
    item = {
        "type": str(e.get("type", "")),
        "loc": [x if isinstance(x, (int, str)) else str(x) for x in e.get("loc", ())],
        "msg": str(e.get("msg", ""))[:500],
        "input": _sanitize(e.get("input")),
    }
    if e.get("ctx"):
        item["ctx"] = _sanitize(e["ctx"])
    if (
        item["loc"] == ["body"]
        and item["type"] == "model_attributes_type"
        and isinstance(e.get("input"), (bytes, str))
        and "json" not in request.headers.get("content-type", "").lower()
    ):
        # FastAPI reads a body sent without a JSON content type (curl -d defaults to a form) as raw bytes
        item["msg"] = (
            "the body was not read as JSON: send the header 'Content-Type: application/json' "
            "(curl: -H 'content-type: application/json')"
        )
    return item


async def _http_error(_request: Request, exc: StarletteHTTPException) -> Response:
    if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
        # FastAPI's answer to a body that is not UTF-8 JSON (or nested too deeply): malformed → 422
        cause = exc.__cause__
        msg = "the body is not valid JSON text (UTF-8)"
        if isinstance(cause, RecursionError):
            msg = "the JSON body is nested too deeply"
        return _error(
            422, [{"type": "json_invalid", "loc": ["body"], "msg": msg, "input": None, "ctx": {"error": msg}}]
        )
    resp = _error(exc.status_code, _sanitize(exc.detail))
    if exc.headers:
        resp.headers.update(exc.headers)
    return resp


async def _unexpected(request: Request, _exc: Exception) -> Response:  # pragma: no cover - a bug, logged
    log.exception("unhandled error", extra={"path": request.url.path})
    return _error(500, "internal error; the request id identifies the log line")


def _install_error_handlers(app: FastAPI) -> None:
    handlers: list[tuple[type[Exception], Any]] = [
        (accountant.AccountantError, _accountant_error),
        (ledger_errors.LedgerError, _ledger_error),
        (Overloaded, _overloaded),
        (ComputeTimeLimit, _time_limit),
        (RequestAbandoned, _abandoned),
        (DatabaseUnavailable, _database_unavailable),
        *((exc_class, _mechanism_error) for exc_class in MECHANISM_STATUS),
        (RequestValidationError, _validation_error),
        (StarletteHTTPException, _http_error),
        (Exception, _unexpected),
    ]
    for exc_class, handler in handlers:
        app.add_exception_handler(exc_class, handler)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("privacy-accountant")
    except PackageNotFoundError:  # pragma: no cover
        return "0.0.0"


def create_served_app() -> FastAPI:
    """The factory ``serve --workers N`` gives uvicorn: each worker reads the same environment the
    parent read (and the parent migrated the database)."""
    return create_app(Settings(), served=True)


def __getattr__(name: str) -> FastAPI:
    """``app.main.app``: the app with the environment's settings, created on first access."""
    if name == "app":
        app = create_app()
        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
