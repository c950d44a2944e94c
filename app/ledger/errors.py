"""Domain errors of the ledger.

Each error carries a sentence for a person (``detail``: what is wrong and what to change) and
structured details for a program (``extra``: JSON-ready values such as the unknown or refused
users). They know nothing about transports: which HTTP status each becomes is decided in one
place, the exception handler of :mod:`app.main`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: most user ids named in one error (the counts are always exact)
MAX_LISTED = 1000


class LedgerError(Exception):
    """Base class: ``detail`` (a sentence) and ``extra`` (structured details)."""

    def __init__(self, detail: str, **extra: Any):
        super().__init__(detail)
        self.detail = detail
        self.extra: dict[str, Any] = extra


class NotFound(LedgerError):
    """An unknown user or cohort; nothing was changed."""


class UnknownUsers(NotFound):
    """Some of the named users do not exist; nothing was changed."""

    def __init__(self, missing: Sequence[str], consequence: str, hint: str = ""):
        listed = list(missing[:MAX_LISTED])
        super().__init__(
            f"unknown user(s) {listed}; {consequence}{hint}", unknown_users=listed, unknown_count=len(missing)
        )


class Conflict(LedgerError):
    """The request conflicts with the stored state (an id exists, a key was used differently)."""


class UsersExist(Conflict):
    """Bulk creation with ``on_conflict='error'`` named existing users; nothing was created."""

    def __init__(self, existing: Sequence[str]):
        super().__init__(
            f"{len(existing)} user(s) already exist; nothing was created (use on_conflict='skip' "
            "to create only the new ones)",
            existing_users=list(existing[:MAX_LISTED]),
            existing_count=len(existing),
        )


class IdempotencyConflict(Conflict):
    """An idempotency key already named a different request; nothing was charged."""

    def __init__(self, key: str):
        super().__init__(
            f"idempotency key {key!r} was already used for a different request; nothing was charged. "
            "Use a new key for a new charge",
            status="conflict",
        )


class Invalid(LedgerError):
    """A budget or event the ledger cannot use (the sentence says what to change)."""


class BadPage(LedgerError):
    """A page that cannot be served as asked: an offset above the maximum, or a cursor that this
    listing did not hand out (the sentence says to follow ``next_cursor``)."""


class BadQuery(LedgerError):
    """A filter that cannot be applied as given (a malformed time, an empty range): the sentence
    says what to change."""


class Refused(LedgerError):
    """A charge some users cannot afford: nothing was recorded.

    ``extra``: ``status`` = ``"refused"``, ``refused_users`` (≤ :data:`MAX_LISTED`, in request
    order for explicit charges), ``refused_count`` (exact), ``cost`` and ``remaining`` (see
    :class:`app.ledger.records.RefusalCosts`)."""

    def __init__(
        self,
        refused_users: Sequence[str],
        refused_count: int,
        cost: dict[str, Any] | None = None,
        remaining: dict[str, float] | None = None,
    ):
        super().__init__(
            f"charge refused: {refused_count} user(s) cannot afford this event within their budget; nothing was "
            "recorded. Refusals depend only on the event's public parameters and the public budgets, never on data.",
            status="refused",
            refused_users=list(refused_users[:MAX_LISTED]),
            refused_count=refused_count,
            **({"cost": cost} if cost is not None else {}),
            **({"remaining": remaining} if remaining is not None else {}),
        )


__all__ = [
    "MAX_LISTED",
    "BadPage",
    "BadQuery",
    "Conflict",
    "IdempotencyConflict",
    "Invalid",
    "LedgerError",
    "NotFound",
    "Refused",
    "UnknownUsers",
    "UsersExist",
]
