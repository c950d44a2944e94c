"""Python client SDK for the privacy-accountant service (httpx).

    from app.client import AccountantClient

    with AccountantClient("http://127.0.0.1:8000", api_key="…") as c:
        r = c.epsilon([{"mechanism": "shuffle", "n": 10**6, "epsilon0": 0.5, "count": 10**5}], delta=1e-8)
        print(r.epsilon, r.order)

Every 4xx/5xx answer raises a typed :class:`AccountantHTTPError` subclass carrying ``detail``
(the server's sentence, or FastAPI's list of validation errors), ``status_code``, ``body`` and
``request_id``: :class:`BadRequest` (400), :class:`Unauthorized` (401), :class:`Forbidden` (403),
:class:`NotFound` (404), :class:`Conflict` (409; :class:`BudgetExceeded` when a charge is refused,
with ``refused_users``, ``cost`` and ``remaining``), :class:`PayloadTooLarge` (413), :class:`ValidationFailed` (422;
:class:`InfeasibleTarget` with ``best_epsilon`` when a calibration target cannot be met),
:class:`ServerError` (5xx). Network failures raise :class:`TransportError`.

Retries (``retries``, default 2, exponential backoff) happen only where repeating cannot change
state: GETs, the pure computation POSTs (``/v1/rdp``, ``/v1/epsilon``, ``/v1/delta``,
``/v1/calibrate``), ``PUT /v1/users/{id}`` (a full replacement), and ``POST /v1/charges`` because
the client always sends an idempotency key (generated when not given), so a retried charge is
answered from the original result and never charged twice. They are triggered by connection
errors, timeouts, 502/503/504 and 429 (a full queue of anonymous computations) — never by another
4xx — and wait at least the ``Retry-After`` the server sent (up to 30 s).
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import httpx
from pydantic import BaseModel

from app.schemas.compute import CalibrateResponse, DeltaResponse, EpsilonResponse, HealthResponse, RdpResponse

__all__ = [
    "AccountantClient",
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
]

_RETRY_STATUS = {429, 502, 503, 504}
#: longest wait a ``Retry-After`` header may ask for between two attempts (seconds)
_MAX_RETRY_AFTER = 30.0
_PURE_POSTS = {"/v1/rdp", "/v1/epsilon", "/v1/delta", "/v1/calibrate"}


# ------------------------------------------------------------------------------------------ errors
class TransportError(Exception):
    """The service could not be reached (connection refused, timeout, …) after the allowed retries."""


class AccountantHTTPError(Exception):
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


class BadRequest(AccountantHTTPError):
    """400: a domain error (a bound outside its validity, a parameter outside its domain)."""


class Unauthorized(AccountantHTTPError):
    """401: missing or unknown API key."""


class Forbidden(AccountantHTTPError):
    """403: the key's role may not do this."""


class NotFound(AccountantHTTPError):
    """404: unknown user/resource (``detail`` names it)."""


class Conflict(AccountantHTTPError):
    """409: a refusal (budget) or an idempotency-key conflict."""


class BudgetExceeded(Conflict):
    """409 refusal of a charge: nothing was recorded; ``refused_users`` could not afford it
    (at most 1000 listed, ``refused_count`` of them in all). ``cost``: what the event alone would
    have cost them — ``{"epsilon": largest ε at a refused user's δ, "by_user": {user: ε}}`` (``None``
    = unbounded); ``remaining``: ``{user: remaining ε}`` of each listed refused user."""

    @property
    def _fields(self) -> dict:
        return self.body if isinstance(self.body, dict) else {}

    @property
    def refused_users(self) -> list[str]:
        return list(self._fields.get("refused_users") or [])

    @property
    def refused_count(self) -> int:
        return int(self._fields.get("refused_count") or len(self.refused_users))

    @property
    def cost(self) -> dict:
        return dict(self._fields.get("cost") or {})

    @property
    def remaining(self) -> dict[str, float]:
        return dict(self._fields.get("remaining") or {})


class PayloadTooLarge(AccountantHTTPError):
    """413: the request body is larger than the service accepts."""


class ValidationFailed(AccountantHTTPError):
    """422: malformed input (``detail`` is FastAPI's list of validation errors)."""


class InfeasibleTarget(ValidationFailed):
    """422 from ``/v1/calibrate``: no value meets the target; ``best_epsilon`` is the best achievable."""

    @property
    def best_epsilon(self) -> float | None:
        body = self.body if isinstance(self.body, dict) else {}
        return body.get("best_epsilon")


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
    try:
        body = resp.json()
    except ValueError:
        body = resp.text
    detail = body.get("detail", body) if isinstance(body, dict) else body
    cls: type[AccountantHTTPError]
    if resp.status_code >= 500:
        cls = ServerError
    else:
        cls = _BY_STATUS.get(resp.status_code, AccountantHTTPError)
        if isinstance(body, dict):
            if resp.status_code == 409 and ("refused_users" in body or body.get("status") == "refused"):
                cls = BudgetExceeded
            elif resp.status_code == 422 and (
                body.get("error") == "InfeasibleTarget" or "best_epsilon" in body
            ):
                cls = InfeasibleTarget
    rid = resp.headers.get("x-request-id") or (body.get("request_id") if isinstance(body, dict) else None)
    return cls(resp.status_code, detail, body, rid, resp.request.method, str(resp.request.url))


def _event(e: Any) -> dict:
    if isinstance(e, BaseModel):
        return e.model_dump(mode="json", exclude_none=True)
    if hasattr(e, "to_dict"):
        return e.to_dict()
    if isinstance(e, Mapping):
        return dict(e)
    raise TypeError(
        f"an event must be a dict (api.md form), a pydantic event model or an accountant event, got {e!r}"
    )


def _orders(orders: Iterable[float] | None) -> list[float] | None:
    return None if orders is None else [float(o) for o in orders]


# ------------------------------------------------------------------------------------------ client
def _retry_after(resp: httpx.Response) -> float:
    """Seconds the server asked to wait (``Retry-After``, in seconds), capped; 0 if none."""
    try:
        return min(_MAX_RETRY_AFTER, max(0.0, float(resp.headers.get("retry-after", "0"))))
    except ValueError:
        return 0.0


class AccountantClient:
    """Synchronous client. ``timeout`` (seconds) applies to connect, read and write;
    ``calibrate_timeout`` to ``/v1/calibrate`` (searches can take longer)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        calibrate_timeout: float = 300.0,
        retries: int = 2,
        backoff: float = 0.2,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        h = {"accept": "application/json", "user-agent": "privacy-accountant-sdk/1"}
        if api_key:
            h["authorization"] = f"Bearer {api_key}"
        h.update(headers or {})
        self.base_url = base_url.rstrip("/")
        self.retries = max(0, int(retries))
        self.backoff = backoff
        self.calibrate_timeout = calibrate_timeout
        self._http = httpx.Client(base_url=self.base_url, headers=h, timeout=timeout, transport=transport)

    # -- plumbing -------------------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AccountantClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping | None = None,
        retry: bool | None = None,
        timeout: float | None = None,
        request_id: str | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON (or text). ``retry`` overrides the safe-retry rule."""
        if retry is None:
            retry = method.upper() in ("GET", "HEAD", "OPTIONS", "PUT") or (
                method.upper() == "POST" and path in _PURE_POSTS
            )
        attempts = 1 + (self.retries if retry else 0)
        headers = {"x-request-id": request_id} if request_id else None
        kw: dict[str, Any] = {"json": json, "params": params, "headers": headers}
        if timeout is not None:
            kw["timeout"] = timeout
        last_exc: Exception | None = None
        asked = 0.0  # the server's Retry-After, when it gave one
        for i in range(attempts):
            if i:
                time.sleep(max(asked, self.backoff * (2 ** (i - 1)) * (1 + random.random() / 2)))
            try:
                resp = self._http.request(method, path, **kw)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                last_exc = exc
                continue
            if resp.status_code in _RETRY_STATUS and i + 1 < attempts:
                asked = _retry_after(resp)
                continue
            if resp.status_code >= 400:
                raise error_from_response(resp)
            ctype = resp.headers.get("content-type", "")
            return resp.json() if ctype.startswith("application/json") else resp.text
        raise TransportError(
            f"{method} {self.base_url}{path} failed after {attempts} attempt(s): {last_exc!r}"
        ) from last_exc

    # -- operations ----------------------------------------------------------------------------------
    def health(self) -> HealthResponse:
        return HealthResponse.model_validate(self.request("GET", "/health"))

    def metrics(self) -> str:
        return self.request("GET", "/metrics")

    def openapi(self) -> dict:
        return self.request("GET", "/openapi.json")

    # -- computation ---------------------------------------------------------------------------------
    def rdp(self, event: Any, orders: Sequence[float] | None = None, bound: str = "upper") -> RdpResponse:
        """RDP curve of one event (× count) for ``bound`` on ``orders`` (default grid)."""
        body: dict[str, Any] = {"event": _event(event), "bound": bound}
        if orders is not None:
            body["orders"] = _orders(orders)
        return RdpResponse.model_validate(self.request("POST", "/v1/rdp", json=body))

    def epsilon(
        self, events: Iterable[Any], delta: float, orders: Sequence[float] | None = None
    ) -> EpsilonResponse:
        """Compose ``events`` and convert to ε at ``delta``."""
        body: dict[str, Any] = {"events": [_event(e) for e in events], "delta": delta}
        if orders is not None:
            body["orders"] = _orders(orders)
        return EpsilonResponse.model_validate(self.request("POST", "/v1/epsilon", json=body))

    def delta(
        self, events: Iterable[Any], epsilon: float, orders: Sequence[float] | None = None
    ) -> DeltaResponse:
        """Compose ``events`` and convert to δ at ``epsilon``."""
        body: dict[str, Any] = {"events": [_event(e) for e in events], "epsilon": epsilon}
        if orders is not None:
            body["orders"] = _orders(orders)
        return DeltaResponse.model_validate(self.request("POST", "/v1/delta", json=body))

    def calibrate(
        self,
        event: Any,
        solve_for: str,
        target_epsilon: float,
        delta: float,
        orders: Sequence[float] | None = None,
    ) -> CalibrateResponse:
        """Solve ``solve_for`` (left out of ``event``) so that ε ≤ target_epsilon at ``delta``.
        Raises :class:`InfeasibleTarget` (with ``best_epsilon``) when no value can."""
        body: dict[str, Any] = {
            "solve_for": solve_for,
            "target": {"epsilon": target_epsilon, "delta": delta},
            "event": _event(event),
        }
        if orders is not None:
            body["orders"] = _orders(orders)
        return CalibrateResponse.model_validate(
            self.request("POST", "/v1/calibrate", json=body, timeout=self.calibrate_timeout)
        )

    # -- budget ledger (api.md "Budget ledger" + ledger.md; answers are plain dicts) -----------------
    def put_user(
        self, user_id: str, epsilon: float, delta: float, policy: str = "declared", **extra: Any
    ) -> dict:
        """Create (201) or update (200) a user's budget (admin). ``extra``: e.g. ``filter_order``."""
        body = {"budget": {"epsilon": epsilon, "delta": delta}, "policy": policy, **extra}
        return self.request("PUT", f"/v1/users/{_seg(user_id)}", json=body)

    def bulk_create_users(
        self,
        epsilon: float,
        delta: float,
        users: Sequence[str] | None = None,
        *,
        id_prefix: str | None = None,
        start: int = 0,
        count: int | None = None,
        policy: str = "declared",
        on_conflict: str = "error",
        **extra: Any,
    ) -> dict:
        """Create many users with one budget, all or nothing (admin): explicit ``users`` or the id range
        ``f"{id_prefix}{i}"`` for i in [start, start + count). ``on_conflict``: 'error' (409) or 'skip'.
        Not retried automatically unless ``on_conflict='skip'`` (then repeating it is harmless)."""
        body: dict[str, Any] = {
            "budget": {"epsilon": epsilon, "delta": delta},
            "policy": policy,
            "on_conflict": on_conflict,
            **extra,
            **_user_set(users, id_prefix, start, count),
        }
        return self.request("POST", "/v1/users/bulk", json=body, retry=on_conflict == "skip")

    def list_users(
        self,
        limit: int | None = None,
        offset: int | None = None,
        *,
        prefix: str | None = None,
        policy: str | None = None,
        remaining_below: float | None = None,
        sort: str | None = None,
    ) -> dict:
        """One page of users (``{"items", "total", "limit", "offset"}``): ``prefix`` of the id,
        ``policy``, remaining ε below ``remaining_below``; ``sort`` one of ``user_id``, ``remaining``,
        ``spent``, ``last_charge`` (``-`` for descending)."""
        return self.request(
            "GET",
            "/v1/users",
            params=_params(
                limit=limit,
                offset=offset,
                prefix=prefix,
                policy=policy,
                remaining_below=remaining_below,
                sort=sort,
            ),
        )

    def list_cohorts(
        self, limit: int | None = None, offset: int | None = None, *, prefix: str | None = None
    ) -> dict:
        """One page of cohorts by id (``{"items", "total", "limit", "offset"}``)."""
        return self.request("GET", "/v1/cohorts", params=_params(limit=limit, offset=offset, prefix=prefix))

    def summary(self, bucket: str | None = None, buckets: int | None = None) -> dict:
        """Dashboard overview: counts, users near exhaustion, admitted and refused charges per hour (or day)."""
        return self.request("GET", "/v1/summary", params=_params(bucket=bucket, buckets=buckets))

    def get_user(self, user_id: str) -> dict:
        """Budget, spent ε (at the budget's δ) and remaining ε of a user."""
        return self.request("GET", f"/v1/users/{_seg(user_id)}")

    def user_charges(self, user_id: str, limit: int | None = None, offset: int | None = None) -> Any:
        """The user's charges, oldest first, each with its event."""
        return self.request(
            "GET", f"/v1/users/{_seg(user_id)}/charges", params=_params(limit=limit, offset=offset)
        )

    def user_cohorts(self, user_id: str) -> dict:
        """The user's cohort memberships (with join/leave rounds)."""
        return self.request("GET", f"/v1/users/{_seg(user_id)}/cohorts")

    def user_history(self, user_id: str, limit: int | None = None) -> dict:
        """Dashboard: the user's spent ε after each charge."""
        return self.request("GET", f"/v1/users/{_seg(user_id)}/history", params=_params(limit=limit))

    def user_audit(self, user_id: str) -> dict:
        """Running sums vs the recomputation from the charge log."""
        return self.request("GET", f"/v1/users/{_seg(user_id)}/audit")

    def nearest_exhaustion(self, limit: int | None = None) -> dict:
        """Dashboard: the users closest to exhausting their budget."""
        return self.request("GET", "/v1/dashboard/nearest-exhaustion", params=_params(limit=limit))

    def charge(
        self,
        event: Any,
        users: Sequence[str] | None = None,
        *,
        cohort: str | None = None,
        idempotency_key: str | None = None,
        **extra: Any,
    ) -> dict:
        """Charge ``event`` to ``users`` (or every member of ``cohort``), all or nothing. Raises
        :class:`BudgetExceeded` (nothing recorded) with ``refused_users`` when someone cannot afford
        it. An idempotency key is generated when not given, so retries never charge twice."""
        key = idempotency_key or f"sdk-{uuid.uuid4()}"
        body: dict[str, Any] = {"idempotency_key": key, "event": _event(event), **extra}
        if users is not None:
            body["users"] = list(users)
        if cohort is not None:
            body["cohort"] = cohort
        return self.request("POST", "/v1/charges", json=body, retry=True)

    def charge_cohort(
        self, event: Any, cohort: str, *, idempotency_key: str | None = None, **extra: Any
    ) -> dict:
        """Charge ``event`` to every current member of ``cohort`` (one round), all or nothing."""
        return self.charge(event, cohort=cohort, idempotency_key=idempotency_key, **extra)

    def create_cohort(self, cohort_id: str, description: str | None = None) -> dict:
        """Create a cohort (admin). Not retried (a repeat would be a 409)."""
        body: dict[str, Any] = {"cohort_id": cohort_id}
        if description is not None:
            body["description"] = description
        return self.request("POST", "/v1/cohorts", json=body, retry=False)

    def get_cohort(self, cohort_id: str) -> dict:
        return self.request("GET", f"/v1/cohorts/{_seg(cohort_id)}")

    def add_members(
        self,
        cohort_id: str,
        users: Sequence[str] | None = None,
        *,
        id_prefix: str | None = None,
        start: int = 0,
        count: int | None = None,
    ) -> dict:
        """Add members (admin): explicit ``users`` or an id range. Safe to retry (already-members are counted)."""
        return self.request(
            "POST",
            f"/v1/cohorts/{_seg(cohort_id)}/members",
            json=_user_set(users, id_prefix, start, count),
            retry=True,
        )

    def remove_members(
        self,
        cohort_id: str,
        users: Sequence[str] | None = None,
        *,
        id_prefix: str | None = None,
        start: int = 0,
        count: int | None = None,
    ) -> dict:
        """Remove members (admin). Safe to retry (non-members are counted)."""
        return self.request(
            "POST",
            f"/v1/cohorts/{_seg(cohort_id)}/members/remove",
            json=_user_set(users, id_prefix, start, count),
            retry=True,
        )

    def remove_member(self, cohort_id: str, user_id: str) -> dict:
        return self.request("DELETE", f"/v1/cohorts/{_seg(cohort_id)}/members/{_seg(user_id)}", retry=True)

    def cohort_members(
        self, cohort_id: str, limit: int | None = None, offset: int | None = None, history: bool | None = None
    ) -> dict:
        params = _params(
            limit=limit, offset=offset, history=None if history is None else str(bool(history)).lower()
        )
        return self.request("GET", f"/v1/cohorts/{_seg(cohort_id)}/members", params=params)

    def cohort_history(self, cohort_id: str, delta: float | None = None, limit: int | None = None) -> dict:
        """Dashboard: the cohort's cumulative spent ε after each round."""
        return self.request(
            "GET", f"/v1/cohorts/{_seg(cohort_id)}/history", params=_params(delta=delta, limit=limit)
        )


def _params(**kw: Any) -> dict | None:
    out = {k: v for k, v in kw.items() if v is not None}
    return out or None


def _user_set(users: Sequence[str] | None, id_prefix: str | None, start: int, count: int | None) -> dict:
    if (users is None) == (count is None):
        raise ValueError("give either users=[...] or id_prefix/start/count")
    if users is not None:
        return {"users": list(users)}
    return {"id_range": {"prefix": id_prefix or "", "start": start, "count": count}}


def _seg(s: str) -> str:
    from urllib.parse import quote

    # '.' and '..' would be removed as dot segments by the HTTP client; %2E reaches the service as '.'
    return quote(str(s), safe="").replace(".", "%2E")
