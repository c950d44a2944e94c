"""Bring a database to the latest ledger schema (``serve`` calls this before accepting requests).

Alembic is configured programmatically from the installed ``migrations`` package, so this works
from a clean clone and from an installed wheel alike (no working directory assumptions).
After migrating, the current default order grid is registered (idempotently).
"""

from __future__ import annotations

import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from app.db.session import normalize_url


def _migrations_dir() -> Path:
    """The installed ``migrations`` package directory (also when it resolves as a namespace package,
    e.g. in an editable install made before ``migrations/__init__.py`` existed)."""
    import migrations

    candidates = [Path(migrations.__file__).parent] if getattr(migrations, "__file__", None) else []
    candidates += [Path(p) for p in getattr(migrations, "__path__", [])]
    candidates.append(Path(__file__).resolve().parents[2] / "migrations")
    for c in candidates:
        if (c / "env.py").is_file():
            return c.resolve()
    raise RuntimeError("the ledger's Alembic migrations (migrations/env.py) are not installed")


def alembic_config(database_url: str) -> Config:
    here = _migrations_dir()
    cfg = Config(str(here / "alembic.ini")) if (here / "alembic.ini").exists() else Config()
    cfg.set_main_option("script_location", str(here))
    cfg.set_main_option("version_locations", str(here / "versions"))
    cfg.set_main_option("sqlalchemy.url", normalize_url(database_url).replace("%", "%%"))
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    if head is None:
        raise RuntimeError("the ledger's Alembic migrations have no head revision")
    return head


def current_revision(database_url: str) -> str | None:
    from app.db.session import get_database

    with get_database(database_url).engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


_upgrade_lock = threading.Lock()  # Alembic's context/op proxies are process-global


def upgrade_to_head(database_url: str) -> str:
    """Migrate ``database_url`` to head; return the head revision. Safe to call concurrently from
    several processes (the database serialises them) and threads (a process-wide lock). A database
    already at head with the current order grid is only read (so a read-only database can be
    served: reads answer, writes are refused with 503)."""
    url = normalize_url(database_url)
    head = head_revision()
    if current_revision(url) == head and _grid_current(url):
        return head
    with _upgrade_lock:
        command.upgrade(alembic_config(url), "head")
    from app.db.session import get_database
    from app.ledger.grid import ensure_grid

    get_database(url).run_write(ensure_grid)
    return head


def _grid_current(database_url: str) -> bool:
    """Whether the current default grid is registered and every stored running curve (classes and
    cohorts) is on it, i.e. :func:`app.ledger.grid.ensure_grid` has nothing to write."""
    import numpy as np
    from sqlalchemy import select

    from app.db.models import T_GRIDS
    from app.db.session import get_database
    from app.ledger import curves as cv
    from app.ledger import repository as repo

    with get_database(database_url).read() as s:
        row = s.execute(select(T_GRIDS.c.orders).where(T_GRIDS.c.version == cv.GRID_VERSION)).first()
        if row is None or not np.array_equal(cv.from_bytes(row.orders), cv.ORDERS):
            return False
        return not repo.classes_not_on_grid(s, cv.GRID_VERSION) and not repo.cohorts_not_on_grid(
            s, cv.GRID_VERSION
        )
