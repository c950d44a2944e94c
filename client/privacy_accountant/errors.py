"""The SDK's exceptions: one class per kind of failure, each carrying the service's explanation.

Every 4xx/5xx answer raises an :class:`AccountantHTTPError` subclass with ``detail`` (the server's
sentence, or FastAPI's list of validation errors), ``status_code``, ``body`` and ``request_id``:
:class:`BadRequest` (400), :class:`Unauthorized` (401), :class:`Forbidden` (403),
:class:`NotFound` (404), :class:`Conflict` (409; :class:`BudgetExceeded` when a charge is refused),
:class:`PayloadTooLarge` (413), :class:`ValidationFailed` (422; :class:`InfeasibleTarget` when a
calibration target cannot be met), :class:`ServerError` (5xx). Network failures raise
:class:`TransportError`.
"""

from __future__ import annotations

from typing import Any

import httpx

from privacy_accountant.models import Refusal, RefusalCost

__all__ = [
    "AccountantError",
    "AccountantHTTPError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "BudgetExceeded",
    "PayloadTooLarge",
    "ValidationFailed",
    "InfeasibleTarget",
    "ServerError",
    "TransportError",
    "error_from_response",
]


class AccountantError(Exception):
    """Base of every SDK exception."""


class TransportError(AccountantError):
    """The service could not be reached (connection refused, timeout, …) after the allowed retries."""


class AccountantHTTPError(AccountantError):
    """A 4xx/5xx answer. ``detail`` is the server's explanation (a string, or a list of errors)."""

    status_code: int = 0

    def __init__(
        self,
        status_code: int,
        detail: Any,
        body: Any = None,
        request_id: str | None = None,
        method: str = "",
        url: str = "",
    ):
        self.status_code = status_code
        self.detail = detail
        self.body = body
        self.request_id = request_id
        self.method = method
        self.url = url
        super().__init__(f"{status_code} {method} {url}: {self.message}")

    @property
    def message(self) -> str:
        """``detail`` as one readable line (validation errors as ``field: message; …``)."""
        d = self.detail
        if isinstance(d, list):
            parts = []
            for e in d[:5]:
                if isinstance(e, dict):
                    loc = ".".join(str(x) for x in e.get("loc", []) if x != "body")
                    parts.append(f"{loc}: {e.get('msg')}" if loc else str(e.get("msg")))
                else:
                    parts.append(str(e))
            return "; ".join(parts)
        return str(d)

    @property
    def _fields(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}


class BadRequest(AccountantHTTPError):
    """400: a domain error (a bound outside its validity, a parameter outside its domain)."""


class Unauthorized(AccountantHTTPError):
    """401: missing or unknown API key."""


class Forbidden(AccountantHTTPError):
    """403: the key's role may not do this."""


class NotFound(AccountantHTTPError):
    """404: unknown user, cohort or path (``detail`` names it; ``unknown_users`` for charges)."""

    @property
    def unknown_users(self) -> list[str]:
        return list(self._fields.get("unknown_users") or [])


class Conflict(AccountantHTTPError):
    """409: a refusal (budget), an idempotency-key conflict, or something that exists already."""


class BudgetExceeded(Conflict):
    """409 refusal of a charge: nothing was recorded.

    ``refused_users`` could not afford the event (at most 1000 listed, ``refused_count`` in all);
    ``cost`` is what the event alone would have cost them (``cost.epsilon``: the largest ε at a
    refused user's δ, ``cost.by_user``; ``None`` = unbounded) and ``remaining`` what each listed
    refused user has left (ε at its budget's δ). ``refusals`` pairs them per user."""

    @property
    def refused_users(self) -> list[str]:
        return list(self._fields.get("refused_users") or [])

    @property
    def refused_count(self) -> int:
        return int(self._fields.get("refused_count") or len(self.refused_users))

    @property
    def cost(self) -> RefusalCost:
        raw = self._fields.get("cost") or {}
        return RefusalCost(epsilon=raw.get("epsilon"), by_user=dict(raw.get("by_user") or {}))

    @property
    def remaining(self) -> dict[str, float]:
        return dict(self._fields.get("remaining") or {})

    @property
    def refusals(self) -> list[Refusal]:
        """Each listed refused user with its remaining ε and the event's cost to it."""
        rem, by_user = self.remaining, self.cost.by_user
        return [
            Refusal(user_id=u, remaining_epsilon=rem.get(u), cost_epsilon=by_user.get(u))
            for u in self.refused_users
        ]


class PayloadTooLarge(AccountantHTTPError):
    """413: the request body is larger than the service accepts."""


class ValidationFailed(AccountantHTTPError):
    """422: malformed input (``detail`` is FastAPI's list of validation errors) or an invalid budget/event."""


class InfeasibleTarget(ValidationFailed):
    """422 from ``/v1/calibrate``: no value meets the target; ``best_epsilon`` is the best achievable."""

    @property
    def best_epsilon(self) -> float | None:
        return self._fields.get("best_epsilon")


class ServerError(AccountantHTTPError):
    """5xx."""


_BY_STATUS: dict[int, type[AccountantHTTPError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: ValidationFailed,
}


def error_from_response(resp: httpx.Response) -> AccountantHTTPError:
    """The typed exception for a 4xx/5xx response."""
    try:
        body = resp.json()
    except ValueError:
        body = resp.text
    detail = body.get("detail", body) if isinstance(body, dict) else body
    cls = _error_class(resp.status_code, body)
    rid = resp.headers.get("x-request-id") or (body.get("request_id") if isinstance(body, dict) else None)
    return cls(resp.status_code, detail, body, rid, resp.request.method, str(resp.request.url))


def _error_class(status: int, body: Any) -> type[AccountantHTTPError]:
    """The exception class of a 4xx/5xx answer: by status, a budget refusal (409) and an infeasible
    target (422) recognised by their bodies."""
    if status >= 500:
        return ServerError
    if isinstance(body, dict):
        if status == 409 and ("refused_users" in body or body.get("status") == "refused"):
            return BudgetExceeded
        if status == 422 and (body.get("error") == "InfeasibleTarget" or "best_epsilon" in body):
            return InfeasibleTarget
    return _BY_STATUS.get(status, AccountantHTTPError)
