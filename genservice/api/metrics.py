"""Prometheus metrics of the API process (its own registry, so tests can build many apps)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry()
REQUESTS = Counter(
    "genservice_http_requests_total",
    "HTTP requests by route and status",
    ["method", "route", "status"],
    registry=REGISTRY,
)
LATENCY = Histogram(
    "genservice_http_request_seconds",
    "HTTP request latency by route",
    ["method", "route"],
    registry=REGISTRY,
)
JOBS = Gauge("genservice_jobs", "Jobs by state", ["status"], registry=REGISTRY)
REDISPATCHED = Counter(
    "genservice_jobs_redispatched_total",
    "Jobs handed to another worker after theirs was lost",
    registry=REGISTRY,
)
