"""The synchronous client (httpx).

Retries (``retries``, default 2, exponential backoff with jitter) happen only where repeating
cannot change state: GETs, the pure computation POSTs, ``PUT /v1/users/{id}`` (a full
replacement), member changes, and ``POST /v1/charges`` because the client always sends an
idempotency key (generated when not given), so a retried charge is answered from the original
result and never charged twice. They are triggered by connection errors, timeouts, 502/503/504 and
429 (a full queue of anonymous computations) — never by another 4xx — and wait at least the
``Retry-After`` the server sent (up to 30 s).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx

from privacy_accountant._api import MAX_RETRY_AFTER, RETRY_STATUS, Call, Endpoints, T, should_retry
from privacy_accountant._version import __version__
from privacy_accountant.errors import TransportError, error_from_response

__all__ = [
    "AccountantClient",
    "Attempts",
    "DEFAULT_URL",
    "default_headers",
    "backoff_delay",
    "retry_after",
    "decode",
]

DEFAULT_URL = "http://127.0.0.1:8000"


def default_headers(api_key: str | None, headers: Mapping[str, str] | None) -> dict[str, str]:
    h = {"accept": "application/json", "user-agent": f"privacy-accountant-sdk/{__version__}"}
    if api_key:
        h["authorization"] = f"Bearer {api_key}"
    h.update(headers or {})
    return h


def backoff_delay(backoff: float, attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (1, 2, …): backoff·2^(attempt−1), +0–50 % jitter."""
    delay: float = backoff * (2 ** (attempt - 1)) * (1 + random.random() / 2)
    return delay


def retry_after(resp: httpx.Response) -> float:
    """Seconds the server asked to wait (``Retry-After``, in seconds), capped; 0 if none."""
    try:
        return min(MAX_RETRY_AFTER, max(0.0, float(resp.headers.get("retry-after", "0"))))
    except ValueError:
        return 0.0


#: failures of the connection itself (nothing was answered): retried like a 503
TRANSPORT_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


class Attempts:
    """The retry policy of one call, shared by the sync and the async client: how many attempts
    (:func:`should_retry`), what to send each time, how long to wait before attempt ``i`` (the
    backoff, or at least the server's ``Retry-After``), and whether an answer is worth repeating."""

    def __init__(self, client: Any, call: Call[Any], request_id: str | None) -> None:
        self.call = call
        self.base_url: str = client.base_url
        self.backoff: float = client.backoff
        self.total = 1 + (client.retries if should_retry(call.method, call.path, call.retry) else 0)
        self.kw: dict[str, Any] = {
            "json": call.json,
            "params": call.params,
            "headers": {"x-request-id": request_id} if request_id else None,
        }
        if call.timeout is not None:
            self.kw["timeout"] = call.timeout
        self.asked = 0.0  # the server's Retry-After, when it gave one
        self.last_exc: Exception | None = None

    def wait(self, i: int) -> float:
        """Seconds to wait before attempt ``i`` (≥ 1)."""
        return max(self.asked, backoff_delay(self.backoff, i))

    def retry(self, resp: httpx.Response, i: int) -> bool:
        """Whether ``resp`` (to attempt ``i``) is a temporary refusal to repeat (noting its Retry-After)."""
        if resp.status_code in RETRY_STATUS and i + 1 < self.total:
            self.asked = retry_after(resp)
            return True
        return False

    def exhausted(self) -> TransportError:
        c = self.call
        err = TransportError(
            f"{c.method} {self.base_url}{c.path} failed after {self.total} attempt(s): {self.last_exc!r}"
        )
        err.__cause__ = self.last_exc
        return err


def decode(resp: httpx.Response, call: Call[T]) -> T:
    """The typed result of a 2xx answer (or raise the typed error of a 4xx/5xx)."""
    if resp.status_code >= 400:
        raise error_from_response(resp)
    ctype = resp.headers.get("content-type", "")
    data: Any = resp.json() if ctype.startswith("application/json") else resp.text
    model: Any = call.model  # a pydantic model class (T itself), whose classmethod validates
    result: T = model.model_validate(data) if model is not None else data
    return result


class AccountantClient(Endpoints):
    """Synchronous client of the privacy-accountant service.

    ``api_key``: a key of the service's ``ACCOUNTANT_API_KEYS`` (the ledger needs one; computation
    does not). ``timeout`` (seconds) applies to connect, read and write; ``calibrate_timeout`` to
    ``/v1/calibrate`` (searches can take longer). Use it as a context manager, or call ``close()``."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        calibrate_timeout: float = 300.0,
        retries: int = 2,
        backoff: float = 0.2,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        self._configure(base_url, retries, backoff, calibrate_timeout)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=default_headers(api_key, headers),
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AccountantClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        retry: bool | None = None,
        timeout: float | None = None,
        request_id: str | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON (or text). ``retry`` overrides the safe-retry rule."""
        return self._send(
            Call[Any](method, path, json=json, params=params, retry=retry, timeout=timeout), request_id
        )

    def iter_pages(self, listing: Callable[..., Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
        """Every page of a listing, following ``next_cursor``: ``listing`` is one of
        :meth:`list_users`, :meth:`user_charges`, :meth:`list_charges`, :meth:`list_cohorts`, :meth:`cohort_members`, called
        with ``args``/``kwargs`` (``cursor=`` to resume) — e.g.
        ``for page in client.iter_pages(client.list_users, sort="-spent", limit=500)``."""
        cursor = kwargs.pop("cursor", None)
        while True:
            page = listing(*args, cursor=cursor, **kwargs)
            yield page
            cursor = page.next_cursor
            if cursor is None:
                return

    def _send(self, call: Call[T], request_id: str | None = None) -> T:
        a = Attempts(self, call, request_id)
        for i in range(a.total):
            if i:
                time.sleep(a.wait(i))
            try:
                resp = self._http.request(call.method, call.path, **a.kw)
            except TRANSPORT_ERRORS as exc:
                a.last_exc = exc
                continue
            if a.retry(resp, i):
                continue
            return decode(resp, call)
        raise a.exhausted()
