"""The accountant's caches: one bounded LRU type, the memoised curves, and the pluggable store
for expensive curves.

Every in-process cache here is a :class:`BoundedCache`: least recently used first out, bounded
both in entries and in (approximate) bytes, thread-safe. What is cached where (all keys are the
full content of the computation's input plus, for stored curves, the algorithm version, so an
entry never changes meaning and is never invalidated — only evicted):

=====================================  ==============================================  ==========
cache                                  key → value                                     bound
=====================================  ==============================================  ==========
``unit_curves``                        (event with count 1, orders, bound) → curve     4096 / 64 MiB
  (:func:`accountant.events.cached_unit_curve`, composition's memo)
``shuffle_details``                    (model, parameters, orders) → curve + sources   256 / 32 MiB
  (``accountant.bounds._DETAILS``)
``sampled_details``                    (sampled event, orders) → curve + sources       256 / 32 MiB
``curve_store`` (:func:`get_store`)    versioned key string → clone-bound curve        64 MiB
  in memory, optionally in front of a shared store (the service's database)
clones' prepared histograms            (n, ε0) → histogram (``accountant.clones``)     8 entries
=====================================  ==============================================  ==========

:func:`clear_caches` empties every in-process layer (benchmarks, tests); :func:`cache_stats`
reports entries and bytes of each (the service exports them as metrics).

The accountant stays free of databases: it asks the registered :class:`CurveStore` for a curve
before computing it and hands it every curve it computes. The default store is an in-process
LRU; the service registers a database-backed one (``app.db.curve_store``) so that a restart or a
second process does not recompute. Keys are plain strings naming the bound, its parameters, the
exact orders (hashed) and the algorithm version, so a stored curve never changes meaning.

A computation that must be able to stop (a request whose client left, or whose time is up)
registers a :func:`set_checkpoint` hook: every cache miss calls :func:`checkpoint` before it
computes, and the hook may raise to abandon the computation there (nothing half-computed is
cached: an entry is stored only once its value exists).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import queue
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, NamedTuple, ParamSpec, Protocol, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
P = ParamSpec("P")
R = TypeVar("R")

MiB = 1 << 20


# ---------------------------------------------------------------------------------------------- sizes
_SAMPLE = 8


def approx_size(obj: object, _depth: int = 0) -> int:
    """Approximate bytes held by ``obj`` (arrays by ``nbytes``; containers, dataclass instances and
    strings walked — a long sequence from a sample of its items; anything deeper than 6 levels
    counted as 64 bytes). Used to bound caches, so it errs on the large side for Python objects
    (a float in a tuple: 8 + 32 bytes)."""
    if _depth > 6:
        return 64
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes) + 112
    if isinstance(obj, (bytes, bytearray, str)):
        return sys.getsizeof(obj)
    if isinstance(obj, (tuple, list)):
        n = len(obj)
        if n <= _SAMPLE:
            return 56 + sum(8 + approx_size(x, _depth + 1) for x in obj)
        step = n / _SAMPLE
        sample = sum(approx_size(obj[int(i * step)], _depth + 1) for i in range(_SAMPLE))
        return 56 + n * 8 + (sample * n) // _SAMPLE
    if isinstance(obj, (frozenset, set)):
        return 216 + sum(16 + approx_size(x, _depth + 1) for x in obj)
    if isinstance(obj, dict):
        return 64 + sum(16 + approx_size(k, _depth + 1) + approx_size(v, _depth + 1) for k, v in obj.items())
    if isinstance(obj, (int, float, bool)) or obj is None:
        return 32
    d = getattr(obj, "__dict__", None)
    if d is not None:
        return 56 + approx_size(d, _depth + 1)
    return 64


# ---------------------------------------------------------------------------------------------- LRU
def _default_sizeof(key: object, value: object) -> int:
    return approx_size(key) + approx_size(value)


class BoundedCache(Generic[K, V]):
    """A thread-safe least-recently-used map from keys ``K`` to values ``V``, bounded by
    ``max_entries`` and by ``max_bytes`` (each entry's size is ``sizeof(key, value)``; an entry
    larger than ``max_bytes`` alone is not kept). A stored value is never None (``get`` answers
    None for a missing key)."""

    def __init__(
        self,
        max_entries: int = 2048,
        max_bytes: int | None = None,
        sizeof: Callable[[K, V], int] | None = None,
        name: str | None = None,
    ):
        self.max_entries = int(max_entries)
        self.max_bytes = None if max_bytes is None else int(max_bytes)
        self._sizeof: Callable[[K, V], int] = sizeof or _default_sizeof
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        if name is not None:
            register_cache(name, self)

    @property
    def maxsize(self) -> int:
        return self.max_entries

    def get(self, key: K) -> V | None:
        with self._lock:
            got = self._data.get(key)
            if got is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return got[0]

    def put(self, key: K, value: V) -> None:
        size = self._sizeof(key, value) if self.max_bytes is not None else 0
        if self.max_bytes is not None and size > self.max_bytes:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (value, size)
            self._bytes += size
            while len(self._data) > self.max_entries or (
                self.max_bytes is not None and self._bytes > self.max_bytes
            ):
                _, (_, s) = self._data.popitem(last=False)
                self._bytes -= s
                self.evictions += 1

    def clear(self) -> None:
        """Drop every entry and reset the statistics."""
        with self._lock:
            self._data.clear()
            self._bytes = 0
            self.hits = self.misses = self.evictions = 0

    def __len__(self) -> int:
        return len(self._data)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def stats(self) -> dict[str, int | None]:
        with self._lock:
            return {
                "entries": len(self._data),
                "bytes": self._bytes,
                "max_entries": self.max_entries,
                "max_bytes": self.max_bytes,
                "hits": self.hits,
                "misses": self.misses,
                "evictions": self.evictions,
            }


class ClearableCache(Protocol):
    """What :func:`register_cache` needs of a cache (``stats()`` is optional)."""

    def clear(self) -> None: ...


_CACHES: dict[str, ClearableCache] = {}


def register_cache(name: str, cache: ClearableCache) -> None:
    """Make a cache known to :func:`clear_caches` and :func:`cache_stats` (it needs ``clear()``
    and, for the stats, ``stats()``)."""
    _CACHES[name] = cache


def clear_caches() -> None:
    """Empty every in-process cache of the accountant (the next computation of anything is cold)."""
    for cache in list(_CACHES.values()):
        cache.clear()
    memory = getattr(_store, "memory", _store)
    if hasattr(memory, "clear"):
        memory.clear()


def cache_stats() -> dict[str, dict[str, int | None]]:
    """Entries, bytes and bounds of every registered cache and of the curve store's memory layer."""
    out: dict[str, dict[str, int | None]] = {}
    for name, c in _CACHES.items():
        stats = getattr(c, "stats", None)
        if stats is not None:
            out[name] = stats()
    memory = getattr(_store, "memory", _store)
    stats = getattr(memory, "stats", None)
    if stats is not None:
        out["curve_store"] = stats()
    return out


# ---------------------------------------------------------------------------------------------- checkpoint
_checkpoint: Callable[[], None] | None = None


def set_checkpoint(fn: Callable[[], None] | None) -> None:
    """Register the hook every cache miss calls before computing (None: no hook). The hook decides
    from its own context (e.g. a context variable of the request) whether to raise; it should
    raise a ``BaseException`` subclass, so that no ``except Exception`` on the way (an optional
    bound that falls back when it fails) mistakes the stop for a failure of the bound."""
    global _checkpoint
    _checkpoint = fn


def checkpoint() -> None:
    """Call the registered hook (a computation is about to start)."""
    hook = _checkpoint
    if hook is not None:
        hook()


# ---------------------------------------------------------------------------------------------- memo
class CacheInfo(NamedTuple):
    """Statistics of a memoised function (the fields of :func:`functools.lru_cache`'s)."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


class Memoized(Generic[P, R]):
    """A pure function of hashable positional arguments, cached in a :class:`BoundedCache`
    (see :func:`memoize`); ``cache_clear()`` and ``cache_info()`` as for
    :func:`functools.lru_cache`, the cache itself as ``cache``."""

    def __init__(self, fn: Callable[P, R], cache: BoundedCache[tuple[Hashable, ...], R]) -> None:
        self._fn = fn
        self.cache = cache
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if kwargs:
            raise TypeError(
                f"{getattr(self._fn, '__name__', self._fn)!r} is memoised: pass its arguments by position"
            )
        got = self.cache.get(args)
        if got is not None:
            return got
        checkpoint()
        value = self._fn(*args, **kwargs)  # kwargs is empty here
        self.cache.put(args, value)
        return value

    def cache_clear(self) -> None:
        self.cache.clear()

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self.cache.hits, self.cache.misses, self.cache.max_entries, len(self.cache))


def memoize(name: str, max_entries: int, max_bytes: int) -> Callable[[Callable[P, R]], Memoized[P, R]]:
    """Cache a pure function of hashable arguments in a :class:`BoundedCache` registered as
    ``name``; :func:`checkpoint` is called on every miss. The wrapper has ``cache_clear()`` and
    ``cache_info()`` like :func:`functools.lru_cache`. Failures are not cached."""

    def deco(fn: Callable[P, R]) -> Memoized[P, R]:
        return Memoized(fn, BoundedCache(max_entries, max_bytes, name=name))

    return deco


# ---------------------------------------------------------------------------------------------- curve store
class CurveStore(Protocol):
    """Where expensive curves are kept, by :func:`curve_key` string."""

    def get(self, key: str) -> NDArray[np.float64] | None: ...

    def put(self, key: str, values: NDArray[np.float64]) -> None: ...


def _curve_size(key: str, value: NDArray[np.float64]) -> int:
    return approx_size(key) + approx_size(value)


class MemoryStore(BoundedCache[str, NDArray[np.float64]]):
    """Thread-safe in-process LRU of curves (kept read-only), bounded in bytes."""

    def __init__(self, max_bytes: int = 64 * MiB, max_entries: int = 1 << 16):
        super().__init__(max_entries, max_bytes, _curve_size)

    def put(self, key: str, value: NDArray[np.float64]) -> None:
        v = np.array(value, dtype=np.float64)
        v.setflags(write=False)
        super().put(key, v)


class LayeredStore:
    """The in-process LRU in front of a slower shared store (e.g. a database).

    Writes to the shared store happen behind the answer (one background thread, in order): a
    request that computed a curve does not wait for the database. At most ``max_pending``
    writes wait (more are dropped: a curve not stored is only recomputed later, never wrong).
    :meth:`flush` waits for the pending writes (the service calls it at shutdown)."""

    def __init__(
        self,
        backing: CurveStore,
        memory: MemoryStore | None = None,
        write_behind: bool = True,
        max_pending: int = 1024,
    ):
        self.memory = memory or MemoryStore()
        self.backing = backing
        self.write_behind = write_behind
        self._queue: queue.Queue[tuple[str, NDArray[np.float64]] | None] = queue.Queue(maxsize=max_pending)
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self.dropped = 0

    def get(self, key: str) -> NDArray[np.float64] | None:
        v = self.memory.get(key)
        if v is None:
            v = self.backing.get(key)
            if v is not None:
                self.memory.put(key, v)
        return v

    def put(self, key: str, values: NDArray[np.float64]) -> None:
        self.memory.put(key, values)
        if not self.write_behind:
            self.backing.put(key, values)
            return
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._drain, name="curve-store-writer", daemon=True)
                self._worker.start()
        v = np.array(values, dtype=np.float64)
        try:
            self._queue.put_nowait((key, v))
        except queue.Full:
            self.dropped += 1

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

    def clear(self) -> None:
        self.memory.clear()

    def stats(self) -> dict[str, int | None]:
        return self.memory.stats()


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


def curve_key(bound: str, version: int, orders: ArrayLike, **params: Any) -> str:
    """A stable key: bound, algorithm version, parameters (repr of floats is exact) and a hash of
    the orders."""
    h = hashlib.sha256(np.ascontiguousarray(orders, dtype=np.float64).tobytes()).hexdigest()[:24]
    ps = ",".join(f"{k}={params[k]!r}" for k in sorted(params))
    return f"{bound}/v{version}/{ps}/orders={h}"


def cached_curve(
    bound: str, version: int, orders: ArrayLike, compute: Callable[[], ArrayLike], **params: Any
) -> NDArray[np.float64]:
    """Look the curve up in the registered store, or compute and store it."""
    store = get_store()
    key = curve_key(bound, version, orders, **params)
    try:
        got = store.get(key)
    except Exception:  # a failing backing store must never break a computation
        got = None
    if got is not None and got.shape == np.shape(orders):
        return got
    checkpoint()
    values = np.asarray(compute(), dtype=np.float64)
    with contextlib.suppress(Exception):  # a failing store only means the curve is recomputed later
        store.put(key, values)
    return values
