"""The asynchronous client: the same methods as :class:`privacy_accountant.AccountantClient`,
each a coroutine (``await client.get_user("u1")``), on ``httpx.AsyncClient``; the same retry rules."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx

from privacy_accountant._api import Call, Endpoints, T
from privacy_accountant.client import DEFAULT_URL, TRANSPORT_ERRORS, Attempts, decode, default_headers

__all__ = ["AsyncAccountantClient"]


class AsyncAccountantClient(Endpoints):
    """Asynchronous client of the privacy-accountant service (``async with`` it, or ``await aclose()``).

    Every endpoint method of :class:`~privacy_accountant.AccountantClient` exists here with the same
    signature and returns an awaitable of the same typed result."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        calibrate_timeout: float = 300.0,
        retries: int = 2,
        backoff: float = 0.2,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        self._configure(base_url, retries, backoff, calibrate_timeout)
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=default_headers(api_key, headers),
            timeout=timeout,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncAccountantClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def request(
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
        call = Call[Any](method, path, json=json, params=params, retry=retry, timeout=timeout)
        return await self._send(call, request_id)

    async def iter_pages(self, listing: Callable[..., Any], *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """Every page of a listing, following ``next_cursor`` (``async for page in
        client.iter_pages(client.list_users, limit=500)``); see :meth:`AccountantClient.iter_pages`."""
        cursor = kwargs.pop("cursor", None)
        while True:
            page = await listing(*args, cursor=cursor, **kwargs)
            yield page
            cursor = page.next_cursor
            if cursor is None:
                return

    # the endpoint methods (privacy_accountant._api) are typed for the sync client; here each returns
    # an awaitable of the same result, which their declared types cannot say
    async def _send(self, call: Call[T], request_id: str | None = None) -> T:  # type: ignore[override]
        a = Attempts(self, call, request_id)
        for i in range(a.total):
            if i:
                await asyncio.sleep(a.wait(i))
            try:
                resp = await self._http.request(call.method, call.path, **a.kw)
            except TRANSPORT_ERRORS as exc:
                a.last_exc = exc
                continue
            if a.retry(resp, i):
                continue
            return decode(resp, call)
        raise a.exhausted()
