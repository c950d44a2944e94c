"""A pluggable store for expensive curves (the clone bound costs up to ~1 s per (n, ε0)).

The accountant stays free of databases: it asks the registered :class:`CurveStore` for a curve
before computing it and hands it every curve it computes. The default store is an in-process
LRU; the service registers a database-backed one (``app.db.curve_store``) so that a restart or a
second process does not recompute. Keys are plain strings naming the bound, its parameters, the
exact orders (hashed) and the algorithm version, so a stored curve never changes meaning.
"""

from __future__ import annotations

import hashlib
import threading
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
    """The in-process LRU in front of a slower shared store (e.g. a database)."""

    def __init__(self, backing: CurveStore, memory: MemoryStore | None = None):
        self.memory = memory or MemoryStore()
        self.backing = backing

    def get(self, key: str) -> np.ndarray | None:
        v = self.memory.get(key)
        if v is None:
            v = self.backing.get(key)
            if v is not None:
                self.memory.put(key, v)
        return v

    def put(self, key: str, values: np.ndarray) -> None:
        self.memory.put(key, values)
        self.backing.put(key, values)


_store: CurveStore = MemoryStore()


def get_store() -> CurveStore:
    return _store


def set_store(store: CurveStore | None) -> None:
    """Register the store used for expensive curves (None restores the in-process default)."""
    global _store
    _store = store if store is not None else MemoryStore()


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
