"""Shared fixtures and helpers of the ledger tests: one database per backend.

``backend`` is parametrised over ``sqlite`` (a fresh file per test) and ``postgres`` (only when
``TEST_POSTGRES_URL`` is set, e.g. ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``;
skipped otherwise). For PostgreSQL a dedicated database ``<name>_ledger_<pid>`` is created next to
the given one (falling back to the given database when creation is not allowed) and the ledger
tables are emptied before each test.
"""

from __future__ import annotations

import atexit
import math
import os
import uuid

import numpy as np
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from accountant import DEFAULT_ORDERS, event_rdp
from accountant.conversion import epsilon_vector
from app.db.migrate import upgrade_to_head
from app.db.session import Database, normalize_url

PG_ENV = "TEST_POSTGRES_URL"
KEYS = {
    "admin-key-0123456789": "admin",
    "pipeline-key-0123456789": "pipeline",
    "viewer-key-0123456789": "viewer",
}
KEYS_ENV = ",".join(f"{k}:{r}" for k, r in KEYS.items())
ADMIN = {"Authorization": "Bearer admin-key-0123456789"}
PIPE = {"Authorization": "Bearer pipeline-key-0123456789"}
VIEW = {"Authorization": "Bearer viewer-key-0123456789"}
LEDGER_TABLES = (
    "ledger_refusals",
    "ledger_charge_users",
    "ledger_charges",
    "ledger_memberships",
    "ledger_class_cohorts",
    "ledger_cohorts",
    "ledger_users",
    "ledger_classes",
)

ORDERS = np.asarray(DEFAULT_ORDERS, dtype=float)

_pg_url_cache: dict[str, str] = {}


def pg_test_url() -> str | None:
    """A migrated PostgreSQL database for this test process, or None when TEST_POSTGRES_URL is unset."""
    base = os.environ.get(PG_ENV)
    if not base:
        return None
    if base in _pg_url_cache:
        return _pg_url_cache[base]
    base = normalize_url(base)
    u = make_url(base)
    name = f"{u.database or 'postgres'}_ledger_{os.getpid()}"
    url = base
    eng = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with eng.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            c.execute(text(f'CREATE DATABASE "{name}"'))
        url = u.set(database=name).render_as_string(hide_password=False)
    except Exception:  # no CREATEDB privilege: use the given database itself
        url = base
    finally:
        eng.dispose()
    upgrade_to_head(url)
    _pg_url_cache[os.environ[PG_ENV]] = url
    if url != base:
        atexit.register(_drop_database, base, name)
    return url


def _drop_database(base: str, name: str) -> None:
    """Best effort: drop this process's test database at exit."""
    from app.db.session import reset_databases

    reset_databases()
    eng = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with eng.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    except Exception:
        pass
    finally:
        eng.dispose()


def truncate_pg(url: str) -> None:
    eng = create_engine(url)
    with eng.begin() as c:
        c.execute(text(f"TRUNCATE {', '.join(LEDGER_TABLES)} RESTART IDENTITY CASCADE"))
    eng.dispose()


BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "postgres",
        id="postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(
                not os.environ.get(PG_ENV), reason=f"{PG_ENV} is not set (no PostgreSQL server)"
            ),
        ],
    ),
]


@pytest.fixture(params=BACKENDS)
def db_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/ledger-{uuid.uuid4().hex[:8]}.db"
        upgrade_to_head(url)
        return url
    url = pg_test_url()
    truncate_pg(url)
    return url


@pytest.fixture
def db(db_url) -> Database:
    d = Database(db_url)
    yield d
    d.dispose()


@pytest.fixture
def client(db):
    """A TestClient over the real app, with this test's database and the test keys."""
    from fastapi.testclient import TestClient

    from app.api.deps import get_api_keys
    from app.main import app

    keys = [(k.encode(), r, f"{r}-{i + 1}") for i, (k, r) in enumerate(KEYS.items())]
    app.dependency_overrides[get_api_keys] = lambda: keys
    app.state.ledger_db = db
    try:
        with TestClient(app) as c:
            yield c
    finally:
        app.dependency_overrides.pop(get_api_keys, None)
        app.state.ledger_db = None


# ---------------------------------------------------------------------------------------------- reference math


def curve(event: dict) -> np.ndarray:
    return np.asarray(event_rdp(event, ORDERS), dtype=float)


def eps_declared(total: np.ndarray, delta: float) -> float:
    if not np.any(total):
        return 0.0
    v = epsilon_vector(ORDERS, total, delta)
    return max(0.0, float(np.min(v)))


def filter_B(eps: float, delta: float, alpha: float) -> float:
    return eps - (math.log(1 / delta) + (alpha - 1) * math.log(1 - 1 / alpha) - math.log(alpha)) / (alpha - 1)


def shuffle(n=10000, eps0=1.0, count=1) -> dict:
    return {"mechanism": "shuffle", "n": n, "epsilon0": eps0, "count": count}
