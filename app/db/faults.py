"""Database faults as explicit errors: which driver exceptions mean the database cannot serve now
(:class:`DatabaseUnavailable`, answered ``503`` with ``Retry-After``), and which a rerun of the
whole write unit can fix."""

from __future__ import annotations

from typing import Protocol

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout


class OpState(Protocol):
    """What :func:`classify` reads of an operation (``app.db.limits.Op``; a protocol, so that this
    module does not import the one that imports it)."""

    expired: bool
    in_commit: bool


RETRYABLE_PG_CODES = {"40001", "40P01", "55P03"}  # serialization failure, deadlock, lock not available


READ_ONLY_PG_CODES = {"25006"}  # read_only_sql_transaction


TIMEOUT_PG_CODES = {"57014"}  # query_canceled (statement_timeout)


class RetryTransaction(Exception):
    """Raised inside a write unit when an optimistic check failed: roll back and run it again."""


class DatabaseUnavailable(Exception):
    """The database cannot serve this operation now (``cause``: timeout, locked, read_only,
    connection, busy). Nothing was recorded — unless ``in_commit``, when the commit was sent and
    its outcome is unknown."""

    def __init__(self, cause: str, reason: str, in_commit: bool = False, retry_after: int = 2):
        self.cause = cause
        self.reason = reason
        self.in_commit = in_commit
        self.retry_after = retry_after
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        if self.cause == "read_only":
            return (
                f"the database is read-only ({self.reason}): nothing was recorded; reads keep working. "
                "Retry once the operator has made it writable again"
            )
        outcome = (
            "the commit was sent but not confirmed, so the outcome is unknown: retry with the same "
            "idempotency key (a key is charged at most once)"
            if self.in_commit
            else "nothing was recorded; retry (with the same idempotency key, for a charge)"
        )
        return f"the database is unavailable ({self.reason}); {outcome}"


def _message(exc: BaseException) -> str:
    """The first line of the driver's message (at most 200 characters), or the exception's type
    name when there is no message."""
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return lines[0][:200] if str(exc) and lines else type(exc).__name__


def classify(exc: BaseException, op: OpState | None = None) -> DatabaseUnavailable | None:
    """The :class:`DatabaseUnavailable` an exception stands for, or None (a bug, an integrity
    error: not an availability problem)."""
    if isinstance(exc, DatabaseUnavailable):
        return exc
    in_commit = bool(op and op.in_commit)
    if op is not None and op.expired:
        return DatabaseUnavailable("timeout", "no answer within the time limit", in_commit)
    if isinstance(exc, PoolTimeout):
        return DatabaseUnavailable("busy", "no database connection free within the time limit", in_commit, 1)
    if isinstance(exc, IntegrityError) or not isinstance(exc, DBAPIError):
        return None
    return _classify_driver_error(exc, in_commit)


#: (cause, SQLSTATEs, fragments of the driver's message, reason; None: the driver's message), in the
#: order they are tried
_DRIVER_CAUSES: tuple[tuple[str, set[str], tuple[str, ...], str | None], ...] = (
    ("read_only", READ_ONLY_PG_CODES, ("readonly", "read-only"), None),
    ("timeout", TIMEOUT_PG_CODES, ("timeout", "timed out"), "a statement exceeded the time limit"),
    (
        "locked",
        RETRYABLE_PG_CODES,
        ("database is locked", "database is busy"),
        "the database stayed locked by another writer",
    ),
)


def _classify_driver_error(exc: DBAPIError, in_commit: bool) -> DatabaseUnavailable | None:
    code = getattr(exc.orig, "sqlstate", None)
    msg = _message(exc).lower()
    for cause, codes, fragments, reason in _DRIVER_CAUSES:
        if code in codes or any(f in msg for f in fragments):
            return DatabaseUnavailable(cause, reason or _message(exc), in_commit)
    if exc.connection_invalidated or type(exc).__name__ in ("OperationalError", "InterfaceError"):
        return DatabaseUnavailable("connection", _message(exc), in_commit)
    if code is not None and code[:2] in ("08", "53", "57", "58"):  # connection, resources, operator, system
        return DatabaseUnavailable("connection", _message(exc), in_commit)
    return None


def is_retryable(exc: BaseException) -> bool:
    """A failure a rerun of the whole unit can fix: a lost optimistic check, a deadlock, a
    serialization failure, a lock not available, SQLite busy, or a connection that broke before
    the commit was sent (a stale pooled connection after a server restart)."""
    if isinstance(exc, RetryTransaction):
        return True
    if isinstance(exc, IntegrityError):
        return False
    if isinstance(exc, DBAPIError):
        code = getattr(getattr(exc, "orig", None), "sqlstate", None)
        if code in RETRYABLE_PG_CODES:
            return True
        msg = str(getattr(exc, "orig", exc)).lower()
        if "database is locked" in msg or "deadlock" in msg or "could not serialize" in msg:
            return True
        return bool(exc.connection_invalidated)
    return False
