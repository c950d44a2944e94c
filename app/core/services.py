"""What one app instance holds, built from its :class:`~app.core.config.Settings` by
:func:`app.main.create_app` and kept on ``app.state.services``: the API keys, the compute
admission control, the response cache, and the database limits.

:class:`ComputeService` is the one way an endpoint runs a computation: the response cache first
(a repeated request is answered without a slot), then :class:`~app.core.admission.Admission`
(a bounded share of the CPU per class of caller, a deadline counting queue time, work abandoned
when the client leaves), and the answer serialized once as strict JSON.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from accountant.store import BoundedCache
from app.core.admission import Admission, ClientGone, DeadlineExceeded, Kind
from app.core.config import Settings
from app.core.metrics import COMPUTE_CACHE
from app.db.session import Database, DatabaseUnavailable, DbOptions, get_database
from app.ledger.records import Actor

#: answers larger than this are not cached (a default-grid answer is ~3–10 KB)
CACHEABLE_MAX_BYTES = 256 * 1024
#: a request that waited at least this long for its slot and then ran out of time is told the
#: service was busy (503, retry) rather than that it asked for too much (400)
_BUSY_WAIT = 1.0


class RequestAbandoned(Exception):
    """The client disconnected before its answer was ready (nothing is sent)."""


class ComputeTimeLimit(Exception):
    """A computation ran out of time. ``busy``: it had waited for its slot long enough that the
    wait, not the request's size, is to blame (503 + Retry-After); else 400."""

    def __init__(self, detail: str, busy: bool, retry_after: int):
        super().__init__(detail)
        self.detail = detail
        self.busy = busy
        self.retry_after = retry_after


def _numpy(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def dumps(obj: Any) -> bytes:
    """Compact JSON without NaN/Infinity (a ValueError if one slipped through, never invalid JSON);
    numpy arrays and scalars become lists and numbers."""
    return json.dumps(
        obj, allow_nan=False, separators=(",", ":"), ensure_ascii=False, default=_numpy
    ).encode()


def idempotency_scope(key: bytes) -> str:
    """The idempotency scope of an API key: a one-way digest (the key is never stored), so that the
    same idempotency key sent with two API keys names two different charges."""
    return hashlib.sha256(b"accountant-idempotency-scope\x00" + key).hexdigest()[:32]


@dataclass(frozen=True)
class ApiKey:
    key: bytes
    role: str
    name: str
    scope: str


def api_keys(settings: Settings) -> list[ApiKey]:
    """The configured keys: (key bytes, role, name ``<role>-<position>``, idempotency scope)."""
    out = []
    for i, (key, role) in enumerate(settings.api_keys.items()):
        kb = key.encode("utf-8")
        out.append(ApiKey(kb, role, f"{role}-{i + 1}", idempotency_scope(kb)))
    return out


def match_key(presented: str, keys: list[ApiKey]) -> Actor | None:
    """The actor of the presented key, comparing with *every* configured key (no early exit, so
    the time taken does not reveal which key or how much of it matched)."""
    p = presented.encode("utf-8", "surrogateescape")
    found: Actor | None = None
    for k in keys:
        if hmac.compare_digest(p, k.key) and found is None:
            found = Actor(name=k.name, role=k.role, scope=k.scope)
    return found


@dataclass(frozen=True)
class Caller:
    """Who asks for a computation: ``keyed`` (a valid API key, ``actor``) or ``anonymous``."""

    kind: Kind
    actor: Actor | None = None


ANONYMOUS = Caller("anonymous")


#: (endpoint, canonical request) or (path, exact body bytes)
CacheKey = tuple[str, str | bytes]


class ResponseCache(BoundedCache[CacheKey, bytes]):
    """Serialized JSON answers of the computation endpoints, bounded in bytes (an answer over
    :data:`CACHEABLE_MAX_BYTES` is not kept). Keyed by (endpoint, canonical request): the
    validated request serialized by pydantic, so equivalent bodies share one entry; and by
    (endpoint, raw body bytes) for the exact bodies already answered (the middleware's fast path
    answers those without parsing)."""

    def __init__(self, max_bytes: int):
        super().__init__(max_entries=1 << 20, max_bytes=max_bytes, sizeof=_entry_size)

    def put(self, key: CacheKey, value: bytes) -> None:
        if len(value) <= CACHEABLE_MAX_BYTES:
            super().put(key, value)


def _entry_size(key: Any, value: bytes) -> int:
    k = key[1] if isinstance(key, tuple) and len(key) == 2 else key
    return len(value) + (len(k) if isinstance(k, (bytes, str)) else 64) + 200


class ComputeService:
    """Cache → admission → worker thread → strict JSON, for every computation endpoint."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.admission = Admission(
            slots=settings.compute_slots,
            reserved=settings.keyed_reserved,
            anonymous_queue=settings.anonymous_queue,
            keyed_queue=settings.keyed_queue,
            queue_timeout=settings.queue_timeout,
            time_limit=settings.compute_time_limit,
        )
        self.cache = ResponseCache(settings.response_cache_bytes)

    async def run(self, caller: Caller, request: Request, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` under admission control; its exceptions pass through, the stops become
        :class:`ComputeTimeLimit` / :class:`RequestAbandoned`."""
        arrival = getattr(request.state, "arrival", None) or time.monotonic()
        try:
            return await self.admission.run(caller.kind, fn, *args, receive=request.receive, arrival=arrival)
        except ClientGone:
            raise RequestAbandoned() from None
        except DeadlineExceeded as exc:
            limit = self.settings.compute_time_limit
            raise ComputeTimeLimit(
                f"this computation needs more computation than one request may do within the time limit ({limit:g} "
                "s, counted from the request's arrival). The curves computed so far are cached: send the same "
                "request again to continue, or split it into smaller requests",
                busy=getattr(exc, "waited", 0.0) >= _BUSY_WAIT,
                retry_after=self.admission.retry_after(caller.kind),
            ) from None

    async def answer(
        self,
        endpoint: str,
        key: str,
        caller: Caller,
        request: Request,
        fn: Callable[..., Mapping[str, Any]],
        *args: Any,
    ) -> Response:
        """The cached answer of (endpoint, key), or computed, cached and returned. The raw body is
        remembered too, so the same bytes are answered by the middleware's fast path."""
        k = (endpoint, key)
        hit = self.cache.get(k)
        if hit is None:
            COMPUTE_CACHE.labels(endpoint, "miss").inc()
            hit = dumps(await self.run(caller, request, fn, *args))
            self.cache.put(k, hit)
        else:
            COMPUTE_CACHE.labels(endpoint, "hit").inc()
        raw = getattr(request.state, "raw_body", None)
        if raw is not None:
            self.cache.put((request.url.path, raw), hit)
        return Response(content=hit, media_type="application/json")

    def raw_hit(self, path: str, body: bytes) -> bytes | None:
        """The answer already given to exactly these body bytes on this path (or None)."""
        return self.cache.get((path, body))


class AsyncGate:
    """At most ``width`` holders; the rest wait in arrival order *on the event loop* (holding no
    worker thread); at most ``max_waiting`` wait, each at most ``timeout`` seconds. Full or timed
    out: :class:`DatabaseUnavailable` (busy)."""

    def __init__(self, width: int, max_waiting: int):
        self.width = max(1, int(width))
        self.max_waiting = int(max_waiting)
        self.held = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self, timeout: float) -> None:
        if self.held < self.width and not self._waiters:
            self.held += 1
            return
        if len(self._waiters) >= self.max_waiting:
            raise DatabaseUnavailable("busy", "too many database writes are waiting", retry_after=1)
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout)
        except BaseException as exc:
            if fut.done() and not fut.cancelled():
                self.release()  # handed over as the wait ended: pass it on
            else:
                fut.cancel()
                self._waiters.remove(fut)
            if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
                raise DatabaseUnavailable(
                    "busy",
                    "the writes queued ahead of this one did not finish within the time limit",
                    retry_after=1,
                ) from None
            raise

    def release(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)  # handed over: still held
                return
        self.held -= 1


@dataclass
class Services:
    """Everything an app instance holds (``app.state.services``)."""

    settings: Settings
    compute: ComputeService
    keys: list[ApiKey] = field(default_factory=list)
    db_options: DbOptions | None = None
    served: bool = False

    _write_gates: dict[int, tuple[Database, AsyncGate]] = field(default_factory=dict)
    _ready_check: Any = None
    _ready_limiter: Any = None

    def database(self) -> Database:
        return get_database(self.settings.database_url, self.db_options)

    def write_gate(self, db: Database) -> AsyncGate:
        """The event-loop queue of ``db``'s write units: as wide as the database takes writes (SQLite
        one, PostgreSQL its write lanes), so waiting writes hold no worker thread and reads always
        find one."""
        got = self._write_gates.get(id(db))
        if got is None or got[0] is not db:
            got = self._write_gates[id(db)] = (db, AsyncGate(db.writes.width + 1, db.options.queue))
        return got[1]

    async def readiness(self, timeout: float = 2.0) -> dict[str, Any]:
        """The database check of ``/health/ready``: never more than ``timeout`` seconds, whatever
        the database does; probes that arrive while a check runs share its answer."""
        if self._ready_check is not None and not self._ready_check.done():
            return await asyncio.shield(self._ready_check)
        self._ready_check = asyncio.ensure_future(self._check_database(timeout))
        return await asyncio.shield(self._ready_check)

    async def _check_database(self, timeout: float) -> dict[str, Any]:
        if self._ready_limiter is None:
            self._ready_limiter = anyio.CapacityLimiter(1)
        out: dict[str, Any] = {"dialect": "unknown", "reachable": False, "writes": "unknown"}
        try:
            with anyio.fail_after(timeout + 0.5):
                out = await anyio.to_thread.run_sync(
                    self.database().check, timeout, limiter=self._ready_limiter, abandon_on_cancel=True
                )
        except TimeoutError:
            out["detail"] = f"no answer within {timeout:g} s"
        except Exception as exc:  # noqa: BLE001 - a broken URL or driver: not ready, and why
            out["detail"] = f"{type(exc).__name__}: {exc}"[:200]
        return out

    @classmethod
    def build(cls, settings: Settings, served: bool = False) -> Services:
        return cls(
            settings=settings,
            compute=ComputeService(settings),
            keys=api_keys(settings),
            db_options=DbOptions.from_settings(settings),
            served=served,
        )
