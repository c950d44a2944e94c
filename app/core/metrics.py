"""Prometheus metrics: requests, latency and errors by endpoint (route template, bounded labels).

With several workers set ``PROMETHEUS_MULTIPROC_DIR`` (``serve --workers N`` does it for you) and
``/metrics`` aggregates every worker through prometheus-client's multiprocess collector.
"""

from __future__ import annotations

import os

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

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


def observe(method: str, endpoint: str, status: int, seconds: float) -> None:
    s = str(status)
    REQUESTS.labels(method, endpoint, s).inc()
    LATENCY.labels(method, endpoint).observe(seconds)
    if status >= 400:
        ERRORS.labels(method, endpoint, s).inc()


def render() -> tuple[bytes, str]:
    """The exposition text of this process, or of all workers in multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    from prometheus_client import REGISTRY

    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
