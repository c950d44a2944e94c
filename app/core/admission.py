"""Admission control of the computations: a bounded share of the CPU per class of caller.

Every computation (``/v1/rdp``, ``/v1/epsilon``, ``/v1/delta``, ``/v1/calibrate`` and the
mechanism endpoints, when the answer is not cached) runs in a worker thread holding one of
``slots`` *compute slots*. Callers come in two classes:

* ``keyed`` — the request carries a valid API key. It may use every slot, and is served first
  when a slot frees up;
* ``anonymous`` — no key. It may use all slots but ``reserved`` (so keyed work always finds one
  free slot or is next in line), and only when no keyed request is waiting.

A request that finds no slot waits in its class's FIFO queue. The queues are bounded: when an
anonymous queue is full the answer is ``429``, when the keyed one is full ``503``; both carry
``Retry-After`` (seconds, from the recent computation times and the queue ahead). A request waits
at most ``queue_timeout`` seconds, and never past its *deadline* (arrival + the time limit, so the
queue time counts): then ``503`` with ``Retry-After``.

A running computation stops at the next curve it would compute (the accountant's cache
checkpoint, :func:`accountant.store.set_checkpoint`) when its deadline passes or its client has
disconnected — the work of a request nobody waits for is abandoned, and what was computed so far
stays cached for a retry. The stop is an :class:`Interrupted` (a ``BaseException``, so no
``except Exception`` in a bound's fallback mistakes it for a failure of the bound).

Counts, waits and refusals are Prometheus metrics (``accountant_admission_*``).
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread

from app.core.metrics import ADMISSION_WAIT, ADMISSIONS, COMPUTATIONS, COMPUTE_RUNNING, COMPUTE_WAITING

T = TypeVar("T")
Kind = Literal["keyed", "anonymous"]
KINDS: tuple[Kind, ...] = ("keyed", "anonymous")


# ---------------------------------------------------------------------------------------------- errors
class Overloaded(Exception):
    """No compute slot for this request now: ``429`` (anonymous queue full) or ``503``; retry after
    ``retry_after`` seconds."""

    def __init__(self, status: int, detail: str, retry_after: int):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


class Interrupted(BaseException):  # noqa: N818 - a stop, like KeyboardInterrupt, not an error
    """A computation stopped at a checkpoint (see the module docstring)."""


class ClientGone(Interrupted):
    """The client disconnected: nobody waits for the answer."""


class DeadlineExceeded(Interrupted):
    """The request's deadline (arrival + the time limit) passed."""


# ---------------------------------------------------------------------------------------------- tokens
@dataclass
class Token:
    """What a running computation checks at each checkpoint."""

    deadline: float
    gone: bool = False

    def check(self) -> None:
        if self.gone:
            raise ClientGone("the client disconnected")
        if time.monotonic() > self.deadline:
            raise DeadlineExceeded("the time limit passed")


_TOKEN: contextvars.ContextVar[Token | None] = contextvars.ContextVar("compute_token", default=None)


def checkpoint() -> None:
    """Raise :class:`Interrupted` if the computation of the current request should stop (a no-op
    outside a computation). Installed as the accountant's cache checkpoint."""
    tok = _TOKEN.get()
    if tok is not None:
        tok.check()


def current_deadline() -> float | None:
    """The deadline of the computation running in this thread (None outside one)."""
    tok = _TOKEN.get()
    return None if tok is None else tok.deadline


_installed = False
_install_lock = threading.Lock()


def install_checkpoint() -> None:
    """Register :func:`checkpoint` with the accountant (once per process)."""
    global _installed
    with _install_lock:
        if not _installed:
            from accountant.store import set_checkpoint

            set_checkpoint(checkpoint)
            _installed = True


# ---------------------------------------------------------------------------------------------- admission
@dataclass
class _Waiter:
    kind: Kind
    future: asyncio.Future[bool] = field(repr=False)


class Admission:
    """The compute slots and the two bounded queues (all state lives on the event loop's thread)."""

    def __init__(
        self,
        slots: int,
        reserved: int,
        anonymous_queue: int,
        keyed_queue: int,
        queue_timeout: float,
        time_limit: float,
    ):
        self.slots = max(1, int(slots))
        self.anonymous_slots = max(1, self.slots - max(0, int(reserved)))
        self.queue_limit: dict[Kind, int] = {"keyed": int(keyed_queue), "anonymous": int(anonymous_queue)}
        self.queue_timeout = float(queue_timeout)
        self.time_limit = float(time_limit)
        self.running: dict[Kind, int] = {"keyed": 0, "anonymous": 0}
        self.waiting: dict[Kind, deque[_Waiter]] = {"keyed": deque(), "anonymous": deque()}
        self._seconds = 0.5  # moving average of a computation's duration (for Retry-After)
        self._limiter: anyio.CapacityLimiter | None = None

    # -------------------------------------------------------------------------------- bookkeeping
    def _busy(self) -> int:
        return self.running["keyed"] + self.running["anonymous"]

    def _take(self, kind: Kind) -> None:
        self.running[kind] += 1
        COMPUTE_RUNNING.labels(kind).inc()

    def _release(self, kind: Kind) -> None:
        self.running[kind] -= 1
        COMPUTE_RUNNING.labels(kind).dec()
        self._hand_over()

    def _hand_over(self) -> None:
        """Give free slots to the waiters: keyed first, then anonymous, each in arrival order."""
        for kind in KINDS:
            q = self.waiting[kind]
            while q and self._fits(kind):
                w = q.popleft()
                COMPUTE_WAITING.labels(kind).dec()
                self._take(kind)
                w.future.set_result(True)

    def _fits(self, kind: Kind) -> bool:
        if kind == "keyed":
            return self._busy() < self.slots
        return self._busy() < self.anonymous_slots and not self.waiting["keyed"]

    def _give_up(self, w: _Waiter) -> None:
        """A waiter leaves: out of the queue, or — if it was just handed a slot — the slot back."""
        if w.future.done():
            self._release(w.kind)
        else:
            w.future.cancel()
            self.waiting[w.kind].remove(w)
            COMPUTE_WAITING.labels(w.kind).dec()

    def full(self, kind: Kind) -> bool:
        """Whether a request of ``kind`` arriving now would be refused (no slot, queue full)."""
        return not self._fits(kind) and len(self.waiting[kind]) >= self.queue_limit[kind]

    def refusal(self, kind: Kind) -> Overloaded:
        """The refusal of a request of ``kind`` that finds its queue full (counted)."""
        ADMISSIONS.labels(kind, "queue_full").inc()
        if kind == "anonymous":
            return Overloaded(
                429,
                "too many anonymous computations are waiting; retry after the time in the Retry-After "
                "header, or send an API key (Authorization: Bearer <key>), which has reserved capacity",
                self.retry_after(kind),
            )
        return Overloaded(
            503,
            "the service is busy: too many computations are waiting; retry after the time in the "
            "Retry-After header",
            self.retry_after(kind),
        )

    def retry_after(self, kind: Kind) -> int:
        """Seconds after which a retry has a fair chance: the queue ahead × the mean computation
        time over the slots this class may use (1 … 60)."""
        ahead = len(self.waiting[kind]) + (len(self.waiting["keyed"]) if kind == "anonymous" else 0) + 1
        usable = self.slots if kind == "keyed" else self.anonymous_slots
        return int(min(60, max(1, math.ceil(ahead * self._seconds / usable))))

    def snapshot(self) -> dict[str, Any]:
        return {
            "slots": self.slots,
            "anonymous_slots": self.anonymous_slots,
            "running": dict(self.running),
            "waiting": {k: len(v) for k, v in self.waiting.items()},
            "queue_limit": dict(self.queue_limit),
        }

    # -------------------------------------------------------------------------------- acquire
    async def _acquire(self, kind: Kind, deadline: float, gone: asyncio.Event) -> None:
        if not self.waiting[kind] and self._fits(kind):
            self._take(kind)
            ADMISSIONS.labels(kind, "admitted").inc()
            ADMISSION_WAIT.labels(kind).observe(0.0)
            return
        if len(self.waiting[kind]) >= self.queue_limit[kind]:
            raise self.refusal(kind)
        loop = asyncio.get_running_loop()
        w = _Waiter(kind, loop.create_future())
        self.waiting[kind].append(w)
        COMPUTE_WAITING.labels(kind).inc()
        t0 = time.monotonic()
        wait = min(self.queue_timeout, deadline - t0)
        gone_task = asyncio.ensure_future(gone.wait())
        either: set[asyncio.Future[Any]] = {w.future, gone_task}
        try:
            await asyncio.wait(either, timeout=max(0.0, wait), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled (shutdown): never leave a slot or a waiter behind
            self._give_up(w)
            raise
        finally:
            gone_task.cancel()
        if w.future.done() and not gone.is_set():
            ADMISSIONS.labels(kind, "admitted").inc()
            ADMISSION_WAIT.labels(kind).observe(time.monotonic() - t0)
            return
        self._give_up(w)
        if gone.is_set():
            ADMISSIONS.labels(kind, "client_gone").inc()
            raise ClientGone("the client disconnected while waiting")
        ADMISSIONS.labels(kind, "timeout").inc()
        raise Overloaded(
            503,
            f"the service is busy: no computation slot became free within {wait:.3g} s; retry after the time "
            "in the Retry-After header",
            self.retry_after(kind),
        )

    # -------------------------------------------------------------------------------- run
    async def run(
        self,
        kind: Kind,
        fn: Callable[..., T],
        *args: Any,
        receive: Callable[[], Awaitable[Mapping[str, Any]]] | None = None,
        arrival: float | None = None,
    ) -> T:
        """Run ``fn(*args)`` in a worker thread once a slot of ``kind`` is free; raise
        :class:`Overloaded` when none is, :class:`ClientGone` when the client left (no answer is
        needed), and let ``fn``'s exceptions through (:class:`DeadlineExceeded` included: the
        caller turns it into its answer)."""
        arrival = time.monotonic() if arrival is None else arrival
        deadline = arrival + self.time_limit
        gone = asyncio.Event()
        token = Token(deadline)
        watcher = asyncio.ensure_future(_watch(receive, gone, token)) if receive is not None else None
        try:
            await self._acquire(kind, deadline, gone)
            t0 = time.monotonic()
            outcome = "error"
            try:
                reset = _TOKEN.set(token)
                try:
                    result = await anyio.to_thread.run_sync(fn, *args, limiter=self._thread_limiter())
                finally:
                    _TOKEN.reset(reset)
                outcome = "completed"
                return result
            except ClientGone:
                outcome = "client_gone"
                raise
            except DeadlineExceeded as exc:
                outcome = "deadline"
                exc.waited = t0 - arrival  # type: ignore[attr-defined]
                raise
            finally:
                dt = time.monotonic() - t0
                self._seconds = 0.8 * self._seconds + 0.2 * dt
                COMPUTATIONS.labels(kind, outcome).inc()
                self._release(kind)
        finally:
            if watcher is not None:
                watcher.cancel()

    def _thread_limiter(self) -> anyio.CapacityLimiter:
        # compute threads do not take tokens from the default pool (which serves the ledger)
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.slots)
        return self._limiter


async def _watch(
    receive: Callable[[], Awaitable[Mapping[str, Any]]], gone: asyncio.Event, token: Token
) -> None:
    """Wait for the client's disconnect (the body has been read: the next message is the
    disconnect) and mark the request's token."""
    try:
        while True:
            message = await receive()
            if message.get("type") == "http.disconnect":
                token.gone = True
                gone.set()
                return
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - a transport without a receive channel: nothing to watch
        return
