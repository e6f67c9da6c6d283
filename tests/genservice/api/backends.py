"""This machine's PostgreSQL, Redis and RabbitMQ, each isolated per test run.

A missing server is a test failure, not a skip: the distributed shape must be checked in CI.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

POSTGRES_ADMIN = os.environ.get(
    "GENSERVICE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)
# Each pytest-xdist worker (gw0, gw1, ...) gets its own Redis database: they are flushed.
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
REDIS = os.environ.get("GENSERVICE_TEST_REDIS", f"redis://127.0.0.1:6379/{9 + _WORKER}")
RABBITMQ = os.environ.get("GENSERVICE_TEST_RABBITMQ", "amqp://guest:guest@127.0.0.1:5672//")


def _fail(what: str, exc: Exception) -> None:
    import pytest

    pytest.fail(f"{what} is needed by the distributed tests and is not reachable: {exc}")


@contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database, dropped afterwards; its URL."""
    import psycopg

    name = f"genservice_test_{secrets.token_hex(4)}"
    try:
        admin = psycopg.connect(POSTGRES_ADMIN, autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        _fail(f"PostgreSQL at {POSTGRES_ADMIN}", exc)
        raise
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield POSTGRES_ADMIN.rsplit("/", 1)[0] + f"/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def redis_broker() -> Iterator[str]:
    """The Redis database for tests, emptied before and after; its URL."""
    import redis

    client = redis.Redis.from_url(REDIS, socket_connect_timeout=5)
    try:
        client.flushdb()
    except redis.RedisError as exc:
        _fail(f"Redis at {REDIS}", exc)
    try:
        yield REDIS
    finally:
        client.flushdb()
        client.close()


@contextmanager
def rabbitmq_broker(prefix: str) -> Iterator[str]:
    """RabbitMQ, with this run's queues (named with `prefix`) deleted afterwards; its URL."""
    from kombu import Connection

    try:
        with Connection(RABBITMQ, connect_timeout=5) as connection:
            connection.ensure_connection(max_retries=1)
    except Exception as exc:
        _fail(f"RabbitMQ at {RABBITMQ}", exc)
    try:
        yield RABBITMQ
    finally:
        with Connection(RABBITMQ) as connection:
            channel = connection.channel()
            for queue in ("generate", "validate", "export"):
                try:
                    channel.queue_delete(f"{prefix}{queue}")
                except Exception:  # never declared: nothing to delete
                    channel = connection.channel()
