"""One pure-ASGI middleware for every HTTP request: request id, body-size cap, strict JSON (no
NaN/Infinity), Prometheus metrics and the JSON access log.

Pure ASGI (not ``BaseHTTPMiddleware``) so the per-request overhead stays in the microseconds.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid

from .logging import request_id_var
from .metrics import observe

log = logging.getLogger("app.access")

_RID_OK = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
# tokens Python's json accepts but JSON does not, and exponents that overflow to ±inf
_SUSPECT = re.compile(rb"NaN|Infinity|[eE][+]?0*[0-9]{3,}")
_BODY_METHODS = {b"POST", b"PUT", b"PATCH", b"DELETE", "POST", "PUT", "PATCH", "DELETE"}


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str):
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


def _json_response(status: int, body: dict, rid: str) -> tuple[dict, dict]:
    data = json.dumps(body).encode()
    start = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
            (b"x-request-id", rid.encode()),
        ],
    }
    return start, {"type": "http.response.body", "body": data}


def _replay_disconnect(message, receive):
    pending = [message]

    async def replay():
        return pending.pop() if pending else await receive()

    return replay


class ServiceMiddleware:
    def __init__(self, app, max_body_bytes: int = 1_048_576):
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        rid = None
        content_length = None
        for k, v in scope.get("headers", ()):
            if k == b"x-request-id":
                s = v.decode("latin-1").strip()
                if _RID_OK.match(s):
                    rid = s
            elif k == b"content-length":
                content_length = v
        if rid is None:
            rid = uuid.uuid4().hex
        token = request_id_var.set(rid)
        state = {"status": 500, "started": False}

        async def send_wrapper(message):
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                state["started"] = True
                message["headers"] = [*message.get("headers", ()), (b"x-request-id", rid.encode())]
            await send(message)

        try:
            early = None
            if scope.get("method") in _BODY_METHODS:
                early, receive = await self._read_body(content_length, receive, rid)
            if early is not None:
                state["status"], state["started"] = early[0]["status"], True
                for m in early:
                    await send(m)
            else:
                await self.app(scope, receive, send_wrapper)
        except Exception:
            log.exception("unhandled error", extra={"path": scope.get("path")})
            if not state["started"]:
                start, body = _json_response(500, {"detail": "internal error", "request_id": rid}, rid)
                state["status"] = 500
                await send(start)
                await send(body)
        finally:
            dt = time.perf_counter() - t0
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or "unmatched"
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
            request_id_var.reset(token)

    async def _read_body(self, content_length, receive, rid):
        """Read the whole body (bounded). Returns (early response messages or None, new receive)."""
        limit = self.max_body_bytes
        too_large = {
            "detail": f"request body too large: at most {limit} bytes (send a smaller request)",
            "error": "PayloadTooLarge",
            "request_id": rid,
        }
        if content_length is not None:
            try:
                if int(content_length) > limit:
                    return list(_json_response(413, too_large, rid)), receive
            except ValueError:
                pass
        chunks = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None, _replay_disconnect(message, receive)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return list(_json_response(413, too_large, rid)), receive
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        msg = non_finite_error(body)
        if msg is not None:
            detail = [
                {
                    "type": "json_invalid",
                    "loc": ["body"],
                    "msg": "JSON decode error: " + msg,
                    "input": None,
                    "ctx": {"error": msg},
                }
            ]
            return list(_json_response(422, {"detail": detail, "request_id": rid}, rid)), receive
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return None, replay
