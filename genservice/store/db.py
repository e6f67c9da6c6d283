"""Database engine, sessions and migrations (Alembic, run at start by every process)."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).parent / "migrations"
_ADVISORY_LOCK = 0x6765_6E73  # "gens": one migrator at a time on PostgreSQL


def make_engine(url: str) -> Engine:
    """An engine for the URL; SQLite gets WAL, a busy timeout and foreign keys."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 60, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            # WAL lets the API read while a worker writes; several processes share the file.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=60000")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


class Database:
    """An engine and its session factory."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session committed on success, rolled back on error."""
        with self.sessions() as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def migrate(self) -> None:
        """Bring the schema to the newest migration (safe to call from many processes at once)."""
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.set_main_option("sqlalchemy.url", self.url.replace("%", "%%"))
        with self._migration_lock(), self.engine.begin() as connection:
            if self.engine.dialect.name == "postgresql":
                connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_ADVISORY_LOCK})")
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    @contextmanager
    def _migration_lock(self) -> Iterator[None]:
        """SQLite: an exclusive file lock next to the database file."""
        if self.engine.dialect.name != "sqlite" or not self.engine.url.database:
            yield
            return
        lock_path = Path(self.engine.url.database).with_suffix(".migrate.lock")
        with open(lock_path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()
