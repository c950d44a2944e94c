"""Alembic environment of the ledger.

The URL is, in order: a connection passed in ``config.attributes["connection"]``, the
``sqlalchemy.url`` option (set by ``app.db.migrate``), or ``DATABASE_URL`` (default
``sqlite:///./accountant.db``). Concurrent migrators (several ``serve`` processes starting at
once) are serialised: SQLite by ``BEGIN IMMEDIATE``, PostgreSQL by a transaction-level advisory
lock, so the second one finds the schema at head and does nothing.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import text

from app.db.models import Base
from app.db.session import make_engine, normalize_url

config = context.config
target_metadata = Base.metadata
MIGRATION_LOCK_KEY = 0x4C45444745520001  # "LEDGER" + 1


def _url() -> str:
    url = (
        config.get_main_option("sqlalchemy.url")
        or os.environ.get("DATABASE_URL")
        or "sqlite:///./accountant.db"
    )
    return normalize_url(url)


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def _run(connection) -> None:
    # SQLite DDL is transactional too (pysqlite's implicit transactions are off, see app.db.session):
    # the whole upgrade is one transaction, begun with BEGIN IMMEDIATE.
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        transaction_per_migration=False,
        transactional_ddl=True,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url())
    try:
        with engine.execution_options(ledger_write=True).connect() as conn:
            _run(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
