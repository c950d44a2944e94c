"""Prometheus metrics: requests, latency and errors by endpoint (route template, bounded labels).

With several workers set ``PROMETHEUS_MULTIPROC_DIR`` (``serve --workers N`` does it for you) and
``/metrics`` aggregates every worker through prometheus-client's multiprocess collector.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

REQUESTS = Counter(
    "accountant_http_requests_total",
    "HTTP requests by endpoint, method and status code",
    ["method", "endpoint", "status"],
)
LATENCY = Histogram(
    "accountant_http_request_duration_seconds",
    "HTTP request latency by endpoint (seconds)",
    ["method", "endpoint"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
ERRORS = Counter(
    "accountant_http_errors_total",
    "HTTP error responses (4xx and 5xx) by endpoint and status code",
    ["method", "endpoint", "status"],
)
DOMAIN_ERRORS = Counter(
    "accountant_domain_errors_total",
    "accountant errors turned into 4xx responses, by error class",
    ["error"],
)
COMPUTE_CACHE = Counter(
    "accountant_compute_cache_total",
    "response-cache lookups of the compute endpoints",
    ["endpoint", "result"],
)

# ---- admission control of the computations (app.core.admission)
ADMISSIONS = Counter(
    "accountant_admissions_total",
    "computation requests by caller class (keyed/anonymous) and admission outcome: admitted, "
    "queue_full (refused 429/503), timeout (waited too long: 503), client_gone (left while waiting)",
    ["caller", "outcome"],
)
ADMISSION_WAIT = Histogram(
    "accountant_admission_wait_seconds",
    "time an admitted computation waited for a compute slot, by caller class",
    ["caller"],
    buckets=(0.0, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
COMPUTATIONS = Counter(
    "accountant_computations_total",
    "computations that held a compute slot, by caller class and outcome: completed, error (a 4xx "
    "answer), deadline (time limit reached), client_gone (abandoned: the client disconnected)",
    ["caller", "outcome"],
)
COMPUTE_RUNNING = Gauge(
    "accountant_compute_running",
    "computations running, by caller class",
    ["caller"],
    multiprocess_mode="livesum",
)
COMPUTE_WAITING = Gauge(
    "accountant_compute_waiting",
    "computations waiting for a slot, by caller class",
    ["caller"],
    multiprocess_mode="livesum",
)
# ---- connections, bodies, database
BODY_REFUSALS = Counter(
    "accountant_body_refusals_total",
    "request bodies refused while being received: too_large (413), timeout (408: not received in time), "
    "inflight (503: too many body bytes in flight)",
    ["reason"],
)
DB_UNAVAILABLE = Counter(
    "accountant_db_unavailable_total",
    "requests answered 503 because the database was unavailable, by cause (timeout, locked, read_only, "
    "connection, busy)",
    ["cause"],
)
CACHE_BYTES = Gauge(
    "accountant_cache_bytes",
    "bytes held by each in-process cache (updated when /metrics is read)",
    ["cache"],
    multiprocess_mode="liveall",
)
CACHE_ENTRIES = Gauge(
    "accountant_cache_entries",
    "entries of each in-process cache (updated when /metrics is read)",
    ["cache"],
    multiprocess_mode="liveall",
)


#: (method, endpoint, status) → its (request counter, latency histogram, error counter or None)
_CHILDREN: dict[tuple[str, str, int], tuple[Counter, Histogram, Counter | None]] = {}


def observe(method: str, endpoint: str, status: int, seconds: float) -> None:
    """Count one request (the labelled children are looked up once per (method, endpoint, status):
    endpoints are route templates, so the set is small)."""
    key = (method, endpoint, status)
    children = _CHILDREN.get(key)
    if children is None:
        s = str(status)
        children = (
            REQUESTS.labels(method, endpoint, s),
            LATENCY.labels(method, endpoint),
            ERRORS.labels(method, endpoint, s) if status >= 400 else None,
        )
        _CHILDREN[key] = children
    children[0].inc()
    children[1].observe(seconds)
    if children[2] is not None:
        children[2].inc()


def _update_cache_gauges(extra: dict[str, tuple[int, int]] | None = None) -> None:
    from accountant.store import cache_stats

    sizes = {name: (st["bytes"] or 0, st["entries"] or 0) for name, st in cache_stats().items()}
    sizes.update(extra or {})
    for name, (nbytes, entries) in sizes.items():
        CACHE_BYTES.labels(name).set(nbytes)
        CACHE_ENTRIES.labels(name).set(entries)


def render(extra_caches: dict[str, tuple[int, int]] | None = None) -> tuple[bytes, str]:
    """The exposition text of this process, or of all workers in multiprocess mode.
    ``extra_caches``: {name: (bytes, entries)} of the app's own caches."""
    _update_cache_gauges(extra_caches)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # prometheus-client leaves it unannotated
        return generate_latest(registry), CONTENT_TYPE_LATEST
    from prometheus_client import REGISTRY

    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
