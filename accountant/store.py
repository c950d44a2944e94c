"""A pluggable store for expensive curves (the clone bound costs up to ~1 s per (n, ε0)).

The accountant stays free of databases: it asks the registered :class:`CurveStore` for a curve
before computing it and hands it every curve it computes. The default store is an in-process
LRU; the service registers a database-backed one (``app.db.curve_store``) so that a restart or a
second process does not recompute. Keys are plain strings naming the bound, its parameters, the
exact orders (hashed) and the algorithm version, so a stored curve never changes meaning.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
import time
from collections import OrderedDict
from typing import Protocol

import numpy as np


class CurveStore(Protocol):
    def get(self, key: str) -> np.ndarray | None: ...

    def put(self, key: str, values: np.ndarray) -> None: ...


class LRUCache:
    """A small thread-safe least-recently-used map (also used by the service's response cache)."""

    def __init__(self, maxsize: int = 2048):
        self.maxsize = maxsize
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            v = self._data.get(key)
            if v is not None:
                self._data.move_to_end(key)
            return v

    def put(self, key, value) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


class MemoryStore(LRUCache):
    """Thread-safe in-process LRU of curves (kept read-only)."""

    def put(self, key: str, values: np.ndarray) -> None:
        v = np.array(values, dtype=float)
        v.setflags(write=False)
        super().put(key, v)


class LayeredStore:
    """The in-process LRU in front of a slower shared store (e.g. a database).

    Writes to the shared store happen behind the answer (one background thread, in order): a
    request that computed a curve does not wait for the database. :meth:`flush` waits for the
    pending writes (the service calls it at shutdown; a curve not yet written is only
    recomputed, never wrong)."""

    def __init__(self, backing: CurveStore, memory: MemoryStore | None = None, write_behind: bool = True):
        self.memory = memory or MemoryStore()
        self.backing = backing
        self.write_behind = write_behind
        self._queue: queue.Queue[tuple[str, np.ndarray] | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

    def get(self, key: str) -> np.ndarray | None:
        v = self.memory.get(key)
        if v is None:
            v = self.backing.get(key)
            if v is not None:
                self.memory.put(key, v)
        return v

    def put(self, key: str, values: np.ndarray) -> None:
        self.memory.put(key, values)
        if not self.write_behind:
            self.backing.put(key, values)
            return
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._drain, name="curve-store-writer", daemon=True)
                self._worker.start()
        self._queue.put((key, self.memory.get(key)))

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is not None:
                    self.backing.put(*item)
            except Exception:  # noqa: BLE001 - a cache write may fail; the curve is recomputed later
                logging.getLogger("accountant").warning(
                    "storing curve %s failed", item[0] if item else None, exc_info=True
                )
            finally:
                self._queue.task_done()

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until every pending write reached the shared store (True) or ``timeout`` passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True


_store: CurveStore = MemoryStore()


def get_store() -> CurveStore:
    return _store


def set_store(store: CurveStore | None) -> None:
    """Register the store used for expensive curves (None restores the in-process default); the
    writes still pending in the previous store are finished first."""
    global _store
    flush_store()
    _store = store if store is not None else MemoryStore()


def flush_store(timeout: float | None = 10.0) -> bool:
    """Finish the pending background writes of the registered store (if it has any)."""
    flush = getattr(_store, "flush", None)
    return flush(timeout) if flush is not None else True


def curve_key(bound: str, version: int, orders: np.ndarray, **params) -> str:
    """A stable key: bound, algorithm version, parameters (repr of floats is exact) and a hash of
    the orders."""
    h = hashlib.sha256(np.ascontiguousarray(orders, dtype=float).tobytes()).hexdigest()[:24]
    ps = ",".join(f"{k}={params[k]!r}" for k in sorted(params))
    return f"{bound}/v{version}/{ps}/orders={h}"


def cached_curve(bound: str, version: int, orders: np.ndarray, compute, **params) -> np.ndarray:
    """Look the curve up in the registered store, or compute and store it."""
    store = get_store()
    key = curve_key(bound, version, orders, **params)
    try:
        got = store.get(key)
    except Exception:  # a failing backing store must never break a computation
        got = None
    if got is not None and got.shape == np.shape(orders):
        return got
    values = np.asarray(compute(), dtype=float)
    try:
        store.put(key, values)
    except Exception:
        pass
    return values
