"""One pure-ASGI middleware for every HTTP request: request id, bounded body reading, strict JSON
(no NaN/Infinity, no lone surrogates), the cached-answer fast path, Prometheus metrics and the JSON
access log.

Pure ASGI (not ``BaseHTTPMiddleware``) so the per-request overhead stays in the microseconds.

Bodies are bounded three ways, so a client that declares or trickles large bodies cannot hold the
server's memory: at most ``max_body_bytes`` per request (``413``); the whole body within
``body_timeout`` seconds of the request's start (``408``); at most ``max_inflight_body_bytes``
bytes of bodies over :data:`SMALL_BODY` held by all requests in progress at once (a new large body
that does not fit is a ``503`` with ``Retry-After``; small bodies are always received, so ordinary
requests keep being served). Each of these answers closes the connection (the rest of the body is
never read).

A ``POST`` to a computation endpoint whose exact body bytes were answered before is answered
from the response cache here, without routing or validation (the same caller rules apply: no
key where anonymous computation is open, or a valid key).
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import unquote_to_bytes

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .logging import request_id_var
from .metrics import BODY_REFUSALS, COMPUTE_CACHE, observe

if TYPE_CHECKING:
    from .services import Services

#: a response header
Header = tuple[bytes, bytes]
#: where in a request an error is: ``["body", "events", 0]``
Loc = list[str | int]

log = logging.getLogger("app.access")

_RID_OK = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
# tokens Python's json accepts but JSON does not, and exponents that overflow to ±inf
_SUSPECT = re.compile(rb"NaN|Infinity|[eE][+]?0*[0-9]{3,}")
# a JSON escape of a UTF-16 surrogate (lone ones are not text: UTF-8 cannot encode them)
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
#: bodies up to this size are not counted against the in-flight budget (the server buffers that
#: much per connection anyway), so small requests are served while large uploads are refused
SMALL_BODY = 64 * 1024
#: computation endpoints answered from the response cache by exact body bytes
FAST_PATHS = frozenset({"/v1/rdp", "/v1/epsilon", "/v1/delta", "/v1/calibrate"})


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> NoReturn:
    raise _NonFinite(f"{name} is not a JSON number; send a finite number")


def _finite_float(s: str) -> float:
    v = float(s)
    if v in (float("inf"), float("-inf")):
        raise _NonFinite(
            f"the number {s[:40]} overflows a double (it would be infinite); send a finite number"
        )
    return v


def non_finite_error(body: bytes) -> str | None:
    """A message if ``body`` is JSON containing NaN/±Infinity or a number that overflows to ±inf."""
    if not _SUSPECT.search(body):
        return None
    try:
        json.loads(body, parse_constant=_reject_constant, parse_float=_finite_float)
    except _NonFinite as exc:
        return str(exc)
    except Exception:  # not JSON at all: FastAPI reports it in its own shape
        return None
    return None


def _lone_surrogate(obj: Any, loc: Loc) -> Loc | None:
    """The location of the first string (key or value) holding a lone surrogate, or None."""
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            return loc
        return None
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            got = _lone_surrogate(v, [*loc, i])
            if got is not None:
                return got
    elif isinstance(obj, dict):
        for k, v in obj.items():
            got = _lone_surrogate(k, [*loc, "(key)"]) or _lone_surrogate(v, [*loc, k])
            if got is not None:
                return got
    return None


def surrogate_error(body: bytes) -> Loc | None:
    """The location of a string with a lone surrogate in the JSON ``body`` (or None)."""
    if not _SURROGATE.search(body):
        return None
    try:
        data = json.loads(body)
    except Exception:  # not JSON at all: FastAPI reports it in its own shape
        return None
    return _lone_surrogate(data, ["body"])


def _json_response(
    status: int, body: dict[str, Any], rid: str, close: bool = False, headers: Sequence[Header] = ()
) -> list[Message]:
    data = json.dumps(body).encode()
    head = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"x-request-id", rid.encode()),
        *headers,
    ]
    if close:
        head.append((b"connection", b"close"))
    return [
        {"type": "http.response.start", "status": status, "headers": _with_frame_guard(head)},
        {"type": "http.response.body", "body": data},
    ]


def _invalid_json(msg: str, rid: str, loc: Loc | None = None, kind: str = "json_invalid") -> list[Message]:
    detail = [{"type": kind, "loc": loc or ["body"], "msg": msg, "input": None, "ctx": {"error": msg}}]
    return _json_response(422, {"detail": detail, "request_id": rid}, rid)


def _declared_length(content_length: bytes | None) -> int | None:
    """The Content-Length header's value (None: absent or not a number)."""
    if content_length is None:
        return None
    try:
        return int(content_length)
    except ValueError:
        return None


@dataclass(frozen=True)
class _Head:
    """What the middleware reads of a request's headers."""

    request_id: str | None = None
    content_length: bytes | None = None
    authorization: bytes | None = None
    json_body: bool = False

    @classmethod
    def of(cls, scope: Scope) -> _Head:
        fields: dict[str, Any] = {}
        for k, v in scope.get("headers", ()):
            if k == b"x-request-id":
                s = v.decode("latin-1").strip()
                if _RID_OK.match(s):
                    fields["request_id"] = s
            elif k == b"content-length":
                fields["content_length"] = v
            elif k == b"authorization":
                fields["authorization"] = v
            elif k == b"content-type":
                fields["json_body"] = b"json" in v.lower()
        return cls(**fields)


def _observe(scope: Scope, state: dict[str, Any], dt: float) -> None:
    """The request's metrics and its one JSON log line."""
    route = scope.get("route")
    endpoint = getattr(route, "path", None) or state.get("endpoint") or "unmatched"
    method = scope.get("method", "")
    status = state["status"]
    observe(method, endpoint, status, dt)
    if log.isEnabledFor(logging.INFO):
        log.info(
            "%s %s %s",
            method,
            scope.get("path"),
            status,
            extra={
                "method": method,
                "path": scope.get("path"),
                "endpoint": endpoint,
                "status": status,
                "duration_ms": round(dt * 1000, 3),
            },
        )


class _Refused(Exception):
    def __init__(self, messages: list[Message], reason: str):
        self.messages = messages
        self.reason = reason


#: no page of the service may be framed by another site (clickjacking): every response says so, in
#: the header older browsers read and in the policy current ones do (a page that sets its own
#: Content-Security-Policy, the dashboard's, carries frame-ancestors 'none' in it)
_FRAME_GUARD = ((b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"))
_FRAME_POLICY = (b"content-security-policy", b"frame-ancestors 'none'")


def _with_frame_guard(headers: list[Header]) -> list[Header]:
    names = {bytes(k).lower() for k, _ in headers}
    out = headers + [h for h in _FRAME_GUARD if h[0] not in names]
    if b"content-security-policy" not in names:
        out.append(_FRAME_POLICY)
    return out


def _path_error(scope: Scope, rid: str) -> list[Message] | None:
    """A 400 for a path whose percent-escapes do not decode as UTF-8 (e.g. ``/v1/users/%ED%A0%80``,
    an encoded surrogate): the server would otherwise decode it with replacement characters, so
    different raw paths would name one user."""
    raw = scope.get("raw_path")
    if not raw or b"%" not in raw:
        return None
    try:
        unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        detail = (
            f"the request path is not valid UTF-8 once its %-escapes are decoded (byte {exc.start}): ids and "
            "paths must be UTF-8 text; percent-encode each character's UTF-8 bytes"
        )
        return _json_response(400, {"detail": detail, "error": "InvalidPath", "request_id": rid}, rid)
    return None


class ServiceMiddleware:
    def __init__(self, app: ASGIApp, services: Services | None = None, max_body_bytes: int | None = None):
        self.app = app
        self.services = services
        st = services.settings if services is not None else None
        self.max_body_bytes = max_body_bytes or (st.max_body_bytes if st else 1_048_576)
        self.body_timeout = st.body_timeout if st else 10.0
        self.max_inflight = st.max_inflight_body_bytes if st else 32 << 20
        self.inflight = 0  # bytes of bodies held by the requests in progress (event loop only)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        head = _Head.of(scope)
        rid = head.request_id or uuid.uuid4().hex
        token = request_id_var.set(rid)
        # status sent, whether the response started, bytes of the in-flight budget this body holds
        state: dict[str, Any] = {"status": 500, "started": False, "held": 0}
        scope.setdefault("state", {})["arrival"] = time.monotonic()

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                state["started"] = True
                message["headers"] = _with_frame_guard(
                    [*message.get("headers", ()), (b"x-request-id", rid.encode())]
                )
            await send(message)

        try:
            bad_path = _path_error(scope, rid)
            if bad_path is not None:
                await self._send_all(bad_path, send, state)
                return
            if scope.get("method") in _BODY_METHODS:
                replayed = await self._take_body(scope, receive, send, state, head, rid)
                if replayed is None:
                    return
                receive = replayed
            await self.app(scope, receive, send_wrapper)
        except Exception:
            log.exception("unhandled error", extra={"path": scope.get("path")})
            if not state["started"]:
                await self._send_all(
                    _json_response(500, {"detail": "internal error", "request_id": rid}, rid), send, state
                )
        finally:
            self.inflight -= state["held"]
            _observe(scope, state, time.perf_counter() - t0)
            request_id_var.reset(token)

    async def _take_body(
        self, scope: Scope, receive: Receive, send: Send, state: dict[str, Any], head: _Head, rid: str
    ) -> Receive | None:
        """Read and check the request body; the receive channel that replays it to the app, or None
        when the request was answered here (refused, answered from the response cache) or abandoned."""
        try:
            body, state["held"] = await self._read_body(head.content_length, receive, rid)
        except _Refused as refusal:
            BODY_REFUSALS.labels(refusal.reason).inc()
            await self._send_all(refusal.messages, send, state)
            return None
        if body is None:  # the client left while sending
            state["status"] = 499
            return None
        early = self._check_body(body, rid)
        if early is not None:
            await self._send_all(early, send, state)
            return None
        if head.json_body and await self._fast_path(scope, body, head.authorization, send, state, rid):
            return None
        scope["state"]["raw_body"] = body
        return _replay(body, receive)

    @staticmethod
    async def _send_all(messages: list[Message], send: Send, state: dict[str, Any]) -> None:
        state["status"], state["started"] = messages[0]["status"], True
        for m in messages:
            await send(m)

    # -------------------------------------------------------------------------------- bodies
    async def _read_body(
        self, content_length: bytes | None, receive: Receive, rid: str
    ) -> tuple[bytes | None, int]:
        """The whole body (bounded in size, time and bytes in flight) and the bytes it holds of the
        in-flight budget; None if the client disconnected. Raises :class:`_Refused`."""
        declared = _declared_length(content_length)
        if declared is not None and declared > self.max_body_bytes:
            raise _Refused(self._too_large(rid), "too_large")
        hold = {"bytes": 0}  # of the in-flight budget, for this body
        if declared is not None and declared > SMALL_BODY:
            hold["bytes"] = self._reserve(declared, rid)
        try:
            with anyio.fail_after(self.body_timeout):
                body = await self._receive_all(receive, declared, hold, rid)
        except TimeoutError:
            self.inflight -= hold["bytes"]
            raise _Refused(
                _json_response(
                    408,
                    {
                        "detail": f"the request body was not received within {self.body_timeout:g} s; send it "
                        "at once (the connection is closed)",
                        "error": "BodyTimeout",
                        "request_id": rid,
                    },
                    rid,
                    close=True,
                ),
                "timeout",
            ) from None
        except _Refused:
            self.inflight -= hold["bytes"]
            raise
        if body is None:  # the client disconnected
            self.inflight -= hold["bytes"]
            return None, 0
        return body, hold["bytes"]

    async def _receive_all(
        self, receive: Receive, declared: int | None, hold: dict[str, int], rid: str
    ) -> bytes | None:
        """The body's chunks joined (None if the client disconnected), within the size limit; a body
        without a declared length reserves what exceeds the small size as it arrives."""
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise _Refused(self._too_large(rid), "too_large")
            needed = size - SMALL_BODY if declared is None else 0  # chunked: what exceeds the small size
            if needed > hold["bytes"]:
                hold["bytes"] += self._reserve(needed - hold["bytes"], rid)
            chunks.append(chunk)
            more = message.get("more_body", False)
        return b"".join(chunks)

    def _reserve(self, nbytes: int, rid: str) -> int:
        if self.inflight + nbytes > self.max_inflight:
            raise _Refused(
                _json_response(
                    503,
                    {
                        "detail": "the service is receiving too many request bodies at once; retry after the "
                        "time in the Retry-After header",
                        "error": "Overloaded",
                        "request_id": rid,
                    },
                    rid,
                    close=True,
                    headers=[(b"retry-after", b"1")],
                ),
                "inflight",
            )
        self.inflight += nbytes
        return nbytes

    def _too_large(self, rid: str) -> list[Message]:
        body = {
            "detail": f"request body too large: at most {self.max_body_bytes} bytes (send a smaller request)",
            "error": "PayloadTooLarge",
            "request_id": rid,
        }
        return _json_response(413, body, rid, close=True)

    @staticmethod
    def _check_body(body: bytes, rid: str) -> list[Message] | None:
        msg = non_finite_error(body)
        if msg is not None:
            return _invalid_json("JSON decode error: " + msg, rid)
        loc = surrogate_error(body)
        if loc is not None:
            return _invalid_json(
                "the string holds a lone UTF-16 surrogate escape (\\ud800–\\udfff not part of a pair), which is "
                "not text; send valid Unicode",
                rid,
                [str(x) if not isinstance(x, int) else x for x in loc],
                "string_unicode",
            )
        return None

    # -------------------------------------------------------------------------------- fast path
    async def _fast_path(
        self,
        scope: Scope,
        body: bytes,
        authorization: bytes | None,
        send: Send,
        state: dict[str, Any],
        rid: str,
    ) -> bool:
        svc = self.services
        path = scope.get("path")
        if svc is None or scope.get("method") != "POST" or path not in FAST_PATHS:
            return False
        hit = svc.compute.raw_hit(path, body)
        if hit is None:
            if authorization is None and svc.compute.admission.full("anonymous"):
                # refused before parsing: a flood of anonymous requests costs little to turn away
                refusal = svc.compute.admission.refusal("anonymous")
                await self._send_all(
                    _json_response(
                        refusal.status,
                        {"detail": refusal.detail, "error": "Overloaded", "request_id": rid},
                        rid,
                        headers=[(b"retry-after", str(refusal.retry_after).encode())],
                    ),
                    send,
                    state,
                )
                state["endpoint"] = path
                return True
            return False
        if not self._caller_allowed(svc, authorization):
            return False
        state["endpoint"] = path
        state["status"], state["started"] = 200, True
        COMPUTE_CACHE.labels(path.rsplit("/", 1)[-1], "hit").inc()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(hit)).encode()),
                    (b"x-request-id", rid.encode()),
                    *_FRAME_GUARD,
                    _FRAME_POLICY,
                ],
            }
        )
        await send({"type": "http.response.body", "body": hit})
        return True

    @staticmethod
    def _caller_allowed(svc: Services, authorization: bytes | None) -> bool:
        if authorization is None:
            return svc.settings.anonymous_compute == "open"
        from app.core.services import match_key

        scheme, _, cred = authorization.decode("latin-1").partition(" ")
        return scheme.lower() == "bearer" and match_key(cred.strip(), svc.keys) is not None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
