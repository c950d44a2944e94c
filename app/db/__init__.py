"""Ledger persistence: SQLAlchemy 2 models, engines/sessions, Alembic migration entry point."""

from app.db.session import Database, RetryTransaction, get_database, normalize_url, reset_databases

__all__ = ["Database", "RetryTransaction", "get_database", "normalize_url", "reset_databases"]
