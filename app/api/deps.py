"""FastAPI dependencies of the ledger: the database session source and API-key authentication.

Keys come from ``ACCOUNTANT_API_KEYS`` (``key:role,...``; roles ``admin``, ``pipeline``,
``viewer``). A request presents ``Authorization: Bearer <key>``. The presented key is compared
with *every* configured key using :func:`hmac.compare_digest` (no early exit, so timing does not
reveal which key or how much of it matched). Keys never appear in a log line, an error body or a
charge record: a charge records the key's *name* (``<role>-<position>`` in the setting) and role.

Roles: ``admin`` — everything (users, cohorts, charges, reads); ``pipeline`` — charges and reads;
``viewer`` — reads only. A missing or unknown key is ``401``; a known key without the role is
``403``.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.db.session import Database, get_database
from app.ledger.service import Actor

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


def _settings():
    from app.core.config import get_settings

    return get_settings()


def get_api_keys() -> list[tuple[bytes, str, str]]:
    """Configured keys as (key bytes, role, name). Overridable in tests."""
    keys = _settings().api_keys
    out = []
    for i, (key, role) in enumerate(keys.items()):
        out.append((key.encode("utf-8"), role, f"{role}-{i + 1}"))
    return out


def get_db(request: Request) -> Database:
    """The ledger database: ``app.state.ledger_db`` if set (tests), else ``DATABASE_URL``."""
    db = getattr(request.app.state, "ledger_db", None)
    if db is not None:
        return db
    return get_database(_settings().database_url)


def authenticate(
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),
    keys: list[tuple[bytes, str, str]] = Depends(get_api_keys),
) -> Actor:
    if credentials is None or (credentials.scheme or "").lower() != "bearer" or not credentials.credentials:
        raise AuthError(
            401, "missing API key: send 'Authorization: Bearer <key>' with a key from ACCOUNTANT_API_KEYS"
        )
    presented = credentials.credentials.encode("utf-8", "surrogateescape")
    found: Actor | None = None
    for key, role, name in keys:  # no early exit: every key is compared
        if hmac.compare_digest(presented, key) and found is None:
            found = Actor(name=name, role=role)
    if found is None:
        raise AuthError(401, "invalid API key")
    return found


def require_roles(*roles: str) -> Callable[..., Actor]:
    allowed = tuple(roles)

    def dep(actor: Actor = Depends(authenticate)) -> Actor:
        if actor.role not in allowed:
            raise AuthError(403, f"role {actor.role!r} may not do this; allowed roles: {list(allowed)}")
        return actor

    dep.__name__ = f"require_{'_'.join(allowed)}"
    return dep


require_reader = require_roles(*READ_ROLES)
require_charger = require_roles(*CHARGE_ROLES)
require_admin = require_roles(*ADMIN_ROLES)
