"""Alembic migrations of the ledger schema (applied by ``app.db.migrate.upgrade_to_head``)."""
