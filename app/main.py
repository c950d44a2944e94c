"""The FastAPI application: ``uvicorn app.main:app`` (or ``privacy-accountant serve``)."""

from __future__ import annotations

import importlib
import logging
import math
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

import accountant
from app.core.config import get_settings
from app.core.logging import request_id_var
from app.core.metrics import DOMAIN_ERRORS
from app.core.middleware import ServiceMiddleware
from app.ledger import errors as ledger_errors

log = logging.getLogger("app")

DESCRIPTION = """
Shuffle-model Rényi-DP accountant: RDP curves of shuffle and subsampled-shuffle releases (the
thesis's bounds and the tightest valid combination), composition, conversion to (ε, δ), calibration
of ε0 / rounds / n / k against a target, and a per-user budget ledger.

* The computation endpoints (`/v1/rdp`, `/v1/epsilon`, `/v1/delta`, `/v1/calibrate`) need no key.
  `orders` is optional everywhere (default grid: bounds.md §6); every answer says which orders it used.
* Ledger endpoints need `Authorization: Bearer <key>` (roles admin, pipeline, viewer).
* Every error body is JSON with a human-readable `detail`: malformed input `422` (FastAPI's
  validation shape: strings for numbers, NaN/Infinity, unknown fields, out-of-range values), domain
  errors `400` (a bound outside its validity, a parameter outside its domain) or `422` (an
  infeasible target, with `best_epsilon`), bodies over 1 MiB `413`, auth `401`/`403`, refusals `409`.
* No response contains NaN or Infinity; a curve value with no finite bound is `null`.
* Every response carries `X-Request-ID` (echoed from the request when given).
"""


_MAX_ERRORS = 20


def _sanitize(obj, depth: int = 0):
    """JSON-safe, bounded copy of a validation error (no NaN/inf, no echo of huge inputs)."""
    if depth > 6:
        return "…"
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else repr(obj)
    if isinstance(obj, (int, bool)) or obj is None:
        return obj
    if isinstance(obj, str):
        return obj if len(obj) <= 200 else obj[:200] + f"… ({len(obj)} characters)"
    if isinstance(obj, dict):
        items = list(obj.items())
        out = {str(k): _sanitize(v, depth + 1) for k, v in items[:20]}
        if len(items) > 20:
            out["…"] = f"{len(items) - 20} more keys"
        return out
    if isinstance(obj, (list, tuple)):
        out = [_sanitize(v, depth + 1) for v in obj[:10]]
        if len(obj) > 10:
            out.append(f"… ({len(obj)} items)")
        return out
    if isinstance(obj, BaseException):
        return str(obj)
    return str(obj)[:200]


#: the HTTP status of each ledger error (the most specific class listed wins)
LEDGER_STATUS: dict[type[ledger_errors.LedgerError], int] = {
    ledger_errors.NotFound: 404,
    ledger_errors.Conflict: 409,
    ledger_errors.Refused: 409,
    ledger_errors.Invalid: 422,
}


def _ledger_status(exc: ledger_errors.LedgerError) -> int:
    return next((LEDGER_STATUS[c] for c in type(exc).__mro__ if c in LEDGER_STATUS), 400)


def _error(status: int, detail, request: Request | None = None, **extra) -> JSONResponse:
    body = {"detail": detail, **extra}
    rid = request_id_var.get()
    if rid:
        body["request_id"] = rid
    return JSONResponse(status_code=status, content=body)


@asynccontextmanager
async def _lifespan(app: FastAPI):
    yield
    # curves computed by this process but not yet written to the shared store
    from accountant.store import flush_store

    await anyio.to_thread.run_sync(flush_store)


def create_app() -> FastAPI:
    settings = get_settings()
    logging.captureWarnings(True)  # warnings become (JSON) log records, not raw stderr text
    if settings.malloc_tuning:
        from app.core.tuning import tune_allocator

        tune_allocator()
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
    app.add_middleware(ServiceMiddleware, max_body_bytes=settings.max_body_bytes)
    if settings.curve_store == "database":
        from app.db.curve_store import install

        install(settings.database_url)

    @app.exception_handler(accountant.AccountantError)
    async def accountant_error(request: Request, exc: accountant.AccountantError):
        name = type(exc).__name__
        DOMAIN_ERRORS.labels(name).inc()
        if isinstance(exc, accountant.InfeasibleTarget):
            best = exc.best_epsilon
            best = float(best) if best is not None and math.isfinite(best) else None
            return _error(422, str(exc), request, error=name, best_epsilon=best)
        return _error(400, str(exc), request, error=name)

    @app.exception_handler(ledger_errors.LedgerError)
    async def ledger_error(request: Request, exc: ledger_errors.LedgerError):
        """Every ledger refusal or lookup failure as JSON: ``detail`` and the error's structured details."""
        body = {"detail": exc.detail, **exc.extra}
        rid = request_id_var.get()
        if rid:
            body["request_id"] = rid
        return JSONResponse(status_code=_ledger_status(exc), content=body)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        errors = list(exc.errors())
        out = []
        for e in errors[:_MAX_ERRORS]:
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
            out.append(item)
        extra = {"errors_omitted": len(errors) - _MAX_ERRORS} if len(errors) > _MAX_ERRORS else {}
        return _error(422, out, request, **extra)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            # FastAPI's answer to a body that is not UTF-8 JSON (or nested too deeply): malformed → 422
            cause = exc.__cause__
            msg = "the body is not valid JSON text (UTF-8)"
            if isinstance(cause, RecursionError):
                msg = "the JSON body is nested too deeply"
            return _error(
                422,
                [{"type": "json_invalid", "loc": ["body"], "msg": msg, "input": None, "ctx": {"error": msg}}],
                request,
            )
        resp = _error(exc.status_code, _sanitize(exc.detail), request)
        if exc.headers:
            resp.headers.update(exc.headers)
        return resp

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception):  # pragma: no cover - a bug, logged
        log.exception("unhandled error", extra={"path": request.url.path})
        return _error(500, "internal error; the request id identifies the log line", request)

    # ---- routers (one line each) -----------------------------------------------------------------
    from app.api.routes import compute

    app.include_router(compute.router)
    app.include_router(importlib.import_module("app.api.routes.ledger").router)
    app.include_router(importlib.import_module("app.api.routes.mechanisms").router)
    importlib.import_module("app.api.routes.dashboard").install(app)  # /dashboard, /static, offline /docs
    return app


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("privacy-accountant")
    except PackageNotFoundError:  # pragma: no cover
        return "0.0.0"


app = create_app()
