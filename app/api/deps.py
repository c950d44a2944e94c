"""FastAPI dependencies: the app's services, the ledger database, API-key authentication and the
caller class of a computation. They only look things up, so they are ``async`` (run on the event
loop, no worker-thread hop per dependency).

Keys come from ``ACCOUNTANT_API_KEYS`` (``key:role,...``; roles ``admin``, ``pipeline``,
``viewer``). A request presents ``Authorization: Bearer <key>``. The presented key is compared
with *every* configured key using :func:`hmac.compare_digest` (no early exit, so timing does not
reveal which key or how much of it matched). Keys never appear in a log line, an error body or a
charge record: a charge records the key's *name* (``<role>-<position>`` in the setting) and role.

Roles: ``admin`` — everything (users, cohorts, charges, reads); ``pipeline`` — charges and reads;
``viewer`` — reads only. A missing or unknown key is ``401``; a known key without the role is
``403``. The computation endpoints need no key (unless ``ACCOUNTANT_ANONYMOUS_COMPUTE`` is
``key-required``); a valid key there puts the request in the ``keyed`` class, which has reserved
capacity (:mod:`app.core.admission`), and an invalid one is a ``401``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.core.services import ANONYMOUS, ApiKey, Caller, Services, match_key
from app.db.session import Database, get_database, operation_deadline
from app.ledger.service import Actor

T = TypeVar("T")
ROLES = ("admin", "pipeline", "viewer")
READ_ROLES = ("admin", "pipeline", "viewer")
CHARGE_ROLES = ("admin", "pipeline")
ADMIN_ROLES = ("admin",)

_bearer = HTTPBearer(
    auto_error=False, description="An API key from ACCOUNTANT_API_KEYS: `Authorization: Bearer <key>`"
)


class AuthError(HTTPException):
    """401 (unknown/missing key) or 403 (role not allowed); rendered as JSON ``{"detail": ...}``."""

    def __init__(self, status_code: int, detail: str):
        headers = {"WWW-Authenticate": "Bearer"} if status_code == 401 else None
        super().__init__(status_code=status_code, detail=detail, headers=headers)


def services(request: Request) -> Services:
    """The services of the app serving this request (built by :func:`app.main.create_app`; an app
    that only includes these routers gets them from the environment's settings on first use)."""
    state = request.app.state
    svc = getattr(state, "services", None)
    if svc is None:
        from app.core.config import Settings

        svc = state.services = Services.build(Settings())
    return svc


#: what a refused key is told when the service has no keys at all
NO_KEYS = (
    ": the service has no API keys (started without ACCOUNTANT_API_KEYS); "
    "restart it with ACCOUNTANT_API_KEYS='key:role,…'"
)


async def get_api_keys(request: Request) -> list[ApiKey]:
    """Configured keys (from the app's settings). Overridable in tests."""
    return services(request).keys


async def get_db(request: Request) -> Database:
    """The ledger database: ``app.state.ledger_db`` if set (tests), else the settings' URL."""
    db: Database | None = getattr(request.app.state, "ledger_db", None)
    if db is not None:
        return db
    svc = services(request)
    return get_database(svc.settings.database_url, svc.db_options)


@asynccontextmanager
async def held_write_turn(request: Request, db: Database) -> AsyncIterator[None]:
    """A ledger write waits its turn here, on the event loop, before it takes a worker thread
    (:meth:`app.core.services.Services.write_gate`); the wait counts against the database time
    limit (then ``503``). Nothing is computed while the turn is held: a write that needs an
    event's cost computes it first, under admission (:func:`computed`)."""
    gate = services(request).write_gate(db)
    deadline = time.monotonic() + db.options.timeout
    await gate.acquire(db.options.timeout)
    operation_deadline.set(deadline)  # the write's database operations end by then
    try:
        yield
    finally:
        operation_deadline.set(None)
        gate.release()


async def write_turn(request: Request, db: Database = Depends(get_db)) -> AsyncIterator[None]:
    """The write turn as a dependency, for the ledger writes that compute nothing."""
    async with held_write_turn(request, db):
        yield


async def computed(request: Request, actor: Actor, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` (an event's cost) under the computations' admission, work limit and deadline,
    as the caller's keyed computation: a busy service is a ``503``, a request past its time limit a
    ``400`` saying to retry (the curves computed so far are cached)."""
    caller = Caller("keyed", actor)
    result: T = await services(request).compute.run(caller, request, fn, *args)
    return result


#: the keys as configured, or as (key, role, name) triples where tests override them
KeysLike = Sequence[ApiKey | tuple[bytes, str, str]]


def _as_api_keys(keys: KeysLike) -> list[ApiKey]:
    """Accept (key, role, name) triples too (tests override the keys that way)."""
    from app.core.services import idempotency_scope

    out = []
    for k in keys:
        if isinstance(k, ApiKey):
            out.append(k)
        else:
            key, role, name = k
            out.append(ApiKey(key, role, name, idempotency_scope(key)))
    return out


async def authenticate(
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),
    keys: KeysLike = Depends(get_api_keys),
) -> Actor:
    if credentials is None or (credentials.scheme or "").lower() != "bearer" or not credentials.credentials:
        raise AuthError(
            401, "missing API key: send 'Authorization: Bearer <key>' with a key from ACCOUNTANT_API_KEYS"
        )
    found = match_key(credentials.credentials, _as_api_keys(keys))
    if found is None:
        raise AuthError(401, "invalid API key" + ("" if keys else NO_KEYS))
    return found


def require_roles(*roles: str) -> Callable[..., Awaitable[Actor]]:
    allowed = tuple(roles)

    async def dep(actor: Actor = Depends(authenticate)) -> Actor:
        if actor.role not in allowed:
            raise AuthError(403, f"role {actor.role!r} may not do this; allowed roles: {list(allowed)}")
        return actor

    dep.__name__ = f"require_{'_'.join(allowed)}"
    return dep


require_reader = require_roles(*READ_ROLES)
require_charger = require_roles(*CHARGE_ROLES)
require_admin = require_roles(*ADMIN_ROLES)


async def compute_caller(request: Request, keys: KeysLike = Depends(get_api_keys)) -> Caller:
    """The class of a computation request: ``keyed`` with a valid key, ``anonymous`` without one
    (``401`` when anonymous computation is switched off, or the key presented is not valid)."""
    header = request.headers.get("authorization")
    if header is None:
        if services(request).settings.anonymous_compute == "key-required":
            raise AuthError(
                401,
                "this service computes only for callers with an API key: send 'Authorization: Bearer <key>'",
            )
        return ANONYMOUS
    scheme, _, credentials = header.partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        raise AuthError(401, "malformed Authorization header: send 'Authorization: Bearer <key>'")
    actor = match_key(credentials.strip(), _as_api_keys(keys))
    if actor is None:
        raise AuthError(
            401,
            "invalid API key (computations need no key; send none, or a valid one)"
            + ("" if keys else NO_KEYS),
        )
    return Caller("keyed", actor)


# ---- the dependencies routes declare, one line each (FastAPI: "share Annotated dependencies")

#: the ledger database
DbDep = Annotated[Database, Depends(get_db)]
#: a caller with any role (reads)
ReaderDep = Annotated[Actor, Depends(require_reader)]
#: a caller that may charge (admin, pipeline)
ChargerDep = Annotated[Actor, Depends(require_charger)]
#: an admin
AdminDep = Annotated[Actor, Depends(require_admin)]
#: the class of a computation request (keyed or anonymous)
CallerDep = Annotated[Caller, Depends(compute_caller)]
#: the ledger write turn, held for the route (after authentication, so only known callers queue)
WriteTurnDep = Annotated[None, Depends(write_turn, scope="function")]
