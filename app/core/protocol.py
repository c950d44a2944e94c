"""uvicorn's httptools protocol with the two limits it lacks: the size of a request's head (request
line + headers) and the time to receive it.

uvicorn's httptools parser accepts a head of any size and waits for it forever (its keep-alive
timeout only covers the time *between* requests), so one connection trickling an endless header
would hold ever more memory. Here a head over :data:`MAX_HEAD_BYTES` is answered ``431`` and a head
not complete within :data:`HEAD_TIMEOUT` seconds of its first byte ``408``; both close the
connection. The body has its own limits (:mod:`app.core.middleware`).
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

#: bytes of request line + headers accepted (the same bound uvicorn gives its h11 parser here)
MAX_HEAD_BYTES = 16 * 1024
#: seconds from a request's first byte until its headers must be complete
HEAD_TIMEOUT = 10.0


def _response(status: bytes, detail: str) -> bytes:
    body = ('{"detail":"' + detail + '"}').encode()
    head = (
        b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\nconnection: close\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    return head + body


_431 = _response(
    b"431 Request Header Fields Too Large",
    f"the request line and headers are too large: at most {MAX_HEAD_BYTES} bytes",
)
_408 = _response(b"408 Request Timeout", f"the request headers were not received within {HEAD_TIMEOUT:g} s")


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` that bounds the size and the receiving time of each request head."""

    _head_bytes = 0
    _in_head = False
    _head_timer: asyncio.TimerHandle | None = None

    def data_received(self, data: bytes) -> None:
        if (
            not self._in_head
            and self._head_timer is None
            and (self.cycle is None or self.cycle.response_complete)
        ):
            self._start_head()  # the first bytes of a new request
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
            self._refuse(_431)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self._in_head:
            self._start_head()

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._cancel_timer()
        size = len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers)
        if size > MAX_HEAD_BYTES:  # a head that arrived whole, in one read
            self._refuse(_431)
            return
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        super().connection_lost(exc)

    def _start_head(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        self._cancel_timer()
        self._head_timer = self.loop.call_later(HEAD_TIMEOUT, self._head_expired)

    def _cancel_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_expired(self) -> None:
        self._head_timer = None
        if self._in_head and not self.transport.is_closing():
            self._refuse(_408)

    def _refuse(self, response: bytes) -> None:
        self._in_head = False
        self._cancel_timer()
        self.transport.write(response)
        self.transport.close()
