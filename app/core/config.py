"""Settings of the service, read from the environment once (pydantic-settings) and passed to
:func:`app.main.create_app`; nothing reads the environment after that.

Database and keys
=================================  ==============================================================
``DATABASE_URL``                   default ``sqlite:///./accountant.db``;
                                   ``postgresql+psycopg://user:pass@host/db`` for PostgreSQL
``ACCOUNTANT_API_KEYS``            comma-separated ``key:role`` pairs, roles admin/pipeline/viewer
``ACCOUNTANT_LOG_LEVEL``           (or ``LOG_LEVEL``) DEBUG/INFO/WARNING/ERROR/CRITICAL, default INFO
=================================  ==============================================================

Computation (``app.core.admission``)
=================================  ==============================================================
``ACCOUNTANT_ANONYMOUS_COMPUTE``   ``open`` (default: the computation endpoints need no key) or
                                   ``key-required``
``ACCOUNTANT_COMPUTE_CONCURRENCY`` computations at once per process (default: CPU count, ≥ 2)
``ACCOUNTANT_KEYED_RESERVED``      of those, slots only requests with a valid key may use (1)
``ACCOUNTANT_ANONYMOUS_QUEUE``     anonymous requests that may wait for a slot (4); more: ``429``
``ACCOUNTANT_KEYED_QUEUE``         keyed requests that may wait for a slot (64); more: ``503``
``ACCOUNTANT_QUEUE_TIMEOUT``       seconds a request may wait for a slot (10); then ``503``
``ACCOUNTANT_COMPUTE_TIME_LIMIT``  seconds from arrival (queue time included) a computation may
                                   take (30): composition, calibration, mechanisms
``ACCOUNTANT_MAX_ORDER_MASS``      work limit of one request (``app.core.compute.check_work``)
=================================  ==============================================================

Connections and memory
=================================  ==============================================================
``ACCOUNTANT_MAX_BODY_BYTES``      request body cap, default 1 MiB (larger bodies: ``413``)
``ACCOUNTANT_BODY_TIMEOUT``        seconds to receive a whole body (10); then ``408``, closed
``ACCOUNTANT_MAX_INFLIGHT_BODY_BYTES``  bytes of large request bodies held at once (32 MiB);
                                   beyond: ``503``, closed
``ACCOUNTANT_RESPONSE_CACHE_BYTES``  bytes of cached computation answers (32 MiB)
``ACCOUNTANT_CURVE_CACHE_BYTES``   bytes of expensive curves kept in memory (64 MiB)
``ACCOUNTANT_CURVE_STORE``         ``memory`` or ``database`` (default: database when served by
                                   ``serve``, which migrates first; memory otherwise)
``ACCOUNTANT_CURVE_STORE_MAX_ROWS``  curves kept in the shared store (50,000; oldest evicted)
``ACCOUNTANT_LIMIT_CONCURRENCY``   open connections + requests per worker (1000); beyond: ``503``
``ACCOUNTANT_KEEPALIVE_TIMEOUT``   seconds an idle keep-alive connection stays open (5)
=================================  ==============================================================

Database faults (``app.db.session``)
=================================  ==============================================================
``ACCOUNTANT_DB_TIMEOUT``          seconds a database operation may take: connecting, waiting for
                                   a lock or a statement (5); then ``503``, nothing recorded
``ACCOUNTANT_DB_CONCURRENCY``      database operations at once per process (16); more wait
``ACCOUNTANT_DB_QUEUE``            database operations that may wait (256); more: ``503``
``ACCOUNTANT_DB_WRITE_LANES``      PostgreSQL: write units at once per process (4); the others
                                   queue in arrival order (SQLite: always one)
=================================  ==============================================================
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ROLES = ("admin", "pipeline", "viewer")
LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")
MiB = 1 << 20


def _env(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        extra="ignore", case_sensitive=False, hide_input_in_errors=True, populate_by_name=True
    )

    database_url: str = Field("sqlite:///./accountant.db", validation_alias=_env("DATABASE_URL"))
    accountant_api_keys: str = Field("", validation_alias=_env("ACCOUNTANT_API_KEYS"), repr=False)
    log_level: str = Field("INFO", validation_alias=_env("ACCOUNTANT_LOG_LEVEL", "LOG_LEVEL"))

    # ---- computation
    anonymous_compute: Literal["open", "key-required"] = Field(
        "open", validation_alias=_env("ACCOUNTANT_ANONYMOUS_COMPUTE")
    )
    compute_concurrency: int = Field(
        0, ge=0, le=1024, validation_alias=_env("ACCOUNTANT_COMPUTE_CONCURRENCY")
    )
    keyed_reserved: int = Field(1, ge=0, le=1024, validation_alias=_env("ACCOUNTANT_KEYED_RESERVED"))
    anonymous_queue: int = Field(4, ge=0, le=100_000, validation_alias=_env("ACCOUNTANT_ANONYMOUS_QUEUE"))
    keyed_queue: int = Field(64, ge=0, le=100_000, validation_alias=_env("ACCOUNTANT_KEYED_QUEUE"))
    queue_timeout: float = Field(10.0, gt=0, le=3600, validation_alias=_env("ACCOUNTANT_QUEUE_TIMEOUT"))
    #: seconds from a computation request's arrival (queue time included) until it is stopped
    compute_time_limit: float = Field(
        30.0, gt=0, le=3600, validation_alias=_env("ACCOUNTANT_COMPUTE_TIME_LIMIT")
    )
    #: a compute request may ask for at most this much "order mass" (Σ over distinct events of
    #: Σ max(α, 1000)); the bounds cost time roughly linear in α (≈ 0.1 s at α = 10⁶).
    max_order_mass: float = Field(2e7, gt=0, validation_alias=_env("ACCOUNTANT_MAX_ORDER_MASS"))

    # ---- connections and memory
    max_body_bytes: int = Field(
        1 * MiB, ge=1024, le=1 << 30, validation_alias=_env("ACCOUNTANT_MAX_BODY_BYTES")
    )
    body_timeout: float = Field(10.0, gt=0, le=3600, validation_alias=_env("ACCOUNTANT_BODY_TIMEOUT"))
    max_inflight_body_bytes: int = Field(
        32 * MiB, ge=1024, validation_alias=_env("ACCOUNTANT_MAX_INFLIGHT_BODY_BYTES")
    )
    response_cache_bytes: int = Field(
        32 * MiB, ge=0, validation_alias=_env("ACCOUNTANT_RESPONSE_CACHE_BYTES")
    )
    curve_cache_bytes: int = Field(64 * MiB, ge=0, validation_alias=_env("ACCOUNTANT_CURVE_CACHE_BYTES"))
    #: where expensive curves (the clone bound) are kept: ``memory`` (this process only) or
    #: ``database`` (shared by every process and kept across restarts); None: ``database`` when the
    #: app is served by ``serve`` (which migrates the database first), else ``memory``
    curve_store: Literal["memory", "database"] | None = Field(
        None, validation_alias=_env("ACCOUNTANT_CURVE_STORE")
    )
    curve_store_max_rows: int = Field(
        50_000, ge=100, validation_alias=_env("ACCOUNTANT_CURVE_STORE_MAX_ROWS")
    )
    limit_concurrency: int = Field(
        1000, ge=8, le=1_000_000, validation_alias=_env("ACCOUNTANT_LIMIT_CONCURRENCY")
    )
    keepalive_timeout: float = Field(
        5.0, gt=0, le=3600, validation_alias=_env("ACCOUNTANT_KEEPALIVE_TIMEOUT")
    )
    #: keep large freed arrays in the heap (glibc; see app.core.tuning): ~10 ms less per new
    #: clone curve, at the price of retaining freed memory (at most the trim threshold)
    malloc_tuning: bool = Field(True, validation_alias=_env("ACCOUNTANT_MALLOC_TUNING"))
    #: the compiled kernels of the clone engine (accountant.clones.compiled reads the same variable
    #: from the environment at the first new clone curve; declared here so that it is validated
    #: at start-up and listed by ``serve --help``)
    numba: bool = Field(False, validation_alias=_env("ACCOUNTANT_NUMBA"))

    # ---- database faults
    db_timeout: float = Field(5.0, gt=0, le=600, validation_alias=_env("ACCOUNTANT_DB_TIMEOUT"))
    db_concurrency: int = Field(16, ge=1, le=1024, validation_alias=_env("ACCOUNTANT_DB_CONCURRENCY"))
    db_queue: int = Field(256, ge=0, le=1_000_000, validation_alias=_env("ACCOUNTANT_DB_QUEUE"))
    db_write_lanes: int = Field(4, ge=1, le=64, validation_alias=_env("ACCOUNTANT_DB_WRITE_LANES"))

    @field_validator("log_level")
    @classmethod
    def _level(cls, v: str) -> str:
        v = v.strip().upper()
        if v not in LOG_LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}; got {v!r}")
        return v

    @field_validator("accountant_api_keys")
    @classmethod
    def _keys(cls, v: str) -> str:
        parse_api_keys(v)  # fail at start-up, not at the first request
        return v

    @property
    def api_keys(self) -> dict[str, str]:
        """``{key: role}`` from ``ACCOUNTANT_API_KEYS``."""
        return parse_api_keys(self.accountant_api_keys)

    @property
    def compute_slots(self) -> int:
        """Computations at once (``compute_concurrency``, default the CPU count, at least 2)."""
        return self.compute_concurrency or max(2, os.cpu_count() or 2)

    @property
    def anonymous_slots(self) -> int:
        """Slots anonymous requests may use: all but the reserved ones (at least 1)."""
        return max(1, self.compute_slots - self.keyed_reserved)


def parse_api_keys(raw: str) -> dict[str, str]:
    """Parse ``"k1:admin,k2:pipeline"`` into ``{"k1": "admin", "k2": "pipeline"}``.

    Error messages never contain a key (only its position)."""
    out: dict[str, str] = {}
    for i, part in enumerate(p.strip() for p in (raw or "").split(",")):
        if not part:
            continue
        key, sep, role = part.rpartition(":")
        key, role = key.strip(), role.strip().lower()
        if not sep or not key:
            raise ValueError(f"ACCOUNTANT_API_KEYS entry #{i + 1} must look like 'key:role'")
        if role not in ROLES:
            raise ValueError(
                f"ACCOUNTANT_API_KEYS entry #{i + 1} has unknown role {role!r}; roles: {list(ROLES)}"
            )
        out[key] = role
    return out


def settings_errors(exc: Exception) -> str:
    """A readable list of what is wrong with the settings (no input values: they may hold keys)."""
    errors = getattr(exc, "errors", None)
    if errors is None:
        return str(exc)
    lines = []
    for e in errors():
        loc = ".".join(map(str, e.get("loc", ()))) or "settings"
        lines.append(f"  {loc}: {e.get('msg', '')}")
    return "\n".join(lines)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings of this process read from the environment once (for code without an app at
    hand, e.g. the command line; the app uses the settings it was created with)."""
    return Settings()
