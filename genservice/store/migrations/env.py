"""Alembic environment: runs on the connection the caller opened (see Database.migrate)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from genservice.store.models import Base

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # `alembic` run by hand with a URL
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.begin() as connection:
        context.configure(connection=connection, target_metadata=Base.metadata)
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
