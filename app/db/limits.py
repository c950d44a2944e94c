"""The limits of database operations: the FIFO gates operations wait on, and the watchdog that
cuts off an operation outliving its deadline."""

from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from app.db.faults import DatabaseUnavailable


class FifoGate:
    """At most ``width`` holders, the rest served in arrival order; at most ``max_waiting`` wait.
    ``acquire`` returns False when ``timeout`` passes first, and raises :class:`DatabaseUnavailable`
    (busy) when the queue is full."""

    def __init__(self, width: int, max_waiting: int):
        self.width = max(1, int(width))
        self.max_waiting = int(max_waiting)
        self._lock = threading.Lock()
        self._held = 0
        self._waiters: deque[threading.Event] = deque()

    def acquire(self, timeout: float) -> bool:
        with self._lock:
            if self._held < self.width and not self._waiters:
                self._held += 1
                return True
            if len(self._waiters) >= self.max_waiting:
                raise DatabaseUnavailable("busy", "too many database operations are waiting", retry_after=1)
            ev = threading.Event()
            self._waiters.append(ev)
        if ev.wait(max(0.0, timeout)):
            return True
        with self._lock:
            if ev.is_set():  # handed over just as the wait ended
                return True
            self._waiters.remove(ev)
            return False

    def release(self) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().set()  # handed over: still held
            else:
                self._held -= 1

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def held(self) -> int:
        return self._held


@dataclass
class Op:
    """One operation of one thread: its deadline, and the sockets of the connections it holds."""

    deadline: float
    fds: set[int] = field(default_factory=set)
    expired: bool = False
    done: bool = False
    in_commit: bool = False
    depth: int = 0


class Watchdog:
    """Shuts down the sockets of operations that outlive their deadline (PostgreSQL: a frozen
    server keeps the connection open and answers nothing; the blocked read then fails at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._heap: list[tuple[float, int, Op]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, op: Op) -> None:
        with self._cond:
            heapq.heappush(self._heap, (op.deadline, next(self._seq), op))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="db-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()

    def add_fd(self, op: Op, fd: int) -> None:
        with self._lock:
            if not op.done:
                op.fds.add(fd)

    def remove_fd(self, op: Op, fd: int) -> None:
        with self._lock:
            op.fds.discard(fd)

    def finish(self, op: Op) -> None:
        with self._lock:
            op.done = True
            op.fds.clear()

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                while self._heap and (self._heap[0][2].done or self._heap[0][0] <= now):
                    _, _, op = heapq.heappop(self._heap)
                    if not op.done:
                        op.expired = True
                        for fd in list(op.fds):
                            _shutdown(fd)
                wait = self._heap[0][0] - now if self._heap else 60.0
                self._cond.wait(timeout=max(0.01, wait))


def _shutdown(fd: int) -> None:
    try:
        s = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        s.close()  # closes the duplicate only; the connection's own descriptor is left to its owner


WATCHDOG = Watchdog()
