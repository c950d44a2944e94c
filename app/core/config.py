"""Settings of the service, read from the environment once (pydantic-settings) and passed to
:func:`app.main.create_app`; nothing reads the environment after that.

Each setting is described once, in the ``description`` of its field below; ``serve --help``, the
README's configuration table and ``docs/settings.md`` are generated from those descriptions
(:mod:`app.core.settings_reference`; a test keeps the documents fresh)."""

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

    # ---- database and keys
    database_url: str = Field(
        "sqlite:///./accountant.db",
        validation_alias=_env("DATABASE_URL"),
        description="SQLAlchemy URL of the ledger database: a SQLite file by default (created on first "
        "start); PostgreSQL: `postgresql+psycopg://user:pass@host/db` (needs the `postgres` extra, "
        "`pip install -e '.[postgres]'`). `serve` migrates it to the latest schema before it accepts "
        "requests.",
    )
    accountant_api_keys: str = Field(
        "",
        validation_alias=_env("ACCOUNTANT_API_KEYS"),
        repr=False,
        description="Comma-separated `key:role` pairs, roles `admin` (everything), `pipeline` (charge, "
        "read), `viewer` (read; enough for the dashboard), e.g. "
        "`s3cret-admin:admin,s3cret-ci:pipeline,s3cret-dash:viewer`. Without keys the ledger endpoints "
        "and the dashboard refuse every key (computations still answer): `serve` warns at start, "
        "`GET /health` says `api_keys_configured: false` and the dashboard's sign-in shows it.",
    )
    log_level: str = Field(
        "INFO",
        validation_alias=_env("ACCOUNTANT_LOG_LEVEL", "LOG_LEVEL"),
        description="Level of the JSON logs: `DEBUG`, `INFO`, `WARNING`, `ERROR` or `CRITICAL`.",
    )

    # ---- computation (app.core.admission)
    anonymous_compute: Literal["open", "key-required"] = Field(
        "open",
        validation_alias=_env("ACCOUNTANT_ANONYMOUS_COMPUTE"),
        description="`open`: the computation endpoints need no key; `key-required`: without a valid "
        "key they answer `401`.",
    )
    compute_concurrency: int = Field(
        0,
        ge=0,
        le=1024,
        validation_alias=_env("ACCOUNTANT_COMPUTE_CONCURRENCY"),
        description="Computations running at once per process; `0`: the CPU count, at least 2.",
    )
    keyed_reserved: int = Field(
        1,
        ge=0,
        le=1024,
        validation_alias=_env("ACCOUNTANT_KEYED_RESERVED"),
        description="Of those slots, how many only requests with a valid API key may use (keyed "
        "requests are also served first).",
    )
    anonymous_queue: int = Field(
        4,
        ge=0,
        le=100_000,
        validation_alias=_env("ACCOUNTANT_ANONYMOUS_QUEUE"),
        description="Anonymous computations that may wait for a slot; more: `429` with `Retry-After`.",
    )
    keyed_queue: int = Field(
        64,
        ge=0,
        le=100_000,
        validation_alias=_env("ACCOUNTANT_KEYED_QUEUE"),
        description="Keyed computations that may wait for a slot; more: `503` with `Retry-After`.",
    )
    queue_timeout: float = Field(
        10.0,
        gt=0,
        le=3600,
        validation_alias=_env("ACCOUNTANT_QUEUE_TIMEOUT"),
        description="Seconds a computation may wait for a slot; then `503` with `Retry-After`.",
    )
    compute_time_limit: float = Field(
        30.0,
        gt=0,
        le=3600,
        validation_alias=_env("ACCOUNTANT_COMPUTE_TIME_LIMIT"),
        description="Seconds from a computation's arrival (queue time included) until it is stopped: "
        "composition, calibration, mechanisms, the cost of a charge; then `400` saying to retry (a "
        "retry continues from the curves cached so far), or `503` if it waited for long.",
    )
    max_order_mass: float = Field(
        2e7,
        gt=0,
        validation_alias=_env("ACCOUNTANT_MAX_ORDER_MASS"),
        description="Work limit of one request (`app.core.compute.check_work`): Σ over its distinct "
        "events of Σ max(α, 1000) over the orders asked for — the bounds cost time roughly linear in "
        "α (≈ 0.1 s at α = 10⁶); cheap events such as `rdp_curve` count per event, point and order. "
        "More: `400` saying what to reduce.",
    )

    # ---- connections and memory
    max_body_bytes: int = Field(
        1 * MiB,
        ge=1024,
        le=1 << 30,
        validation_alias=_env("ACCOUNTANT_MAX_BODY_BYTES"),
        description="Largest request body accepted, in bytes; larger: `413`, connection closed.",
    )
    body_timeout: float = Field(
        10.0,
        gt=0,
        le=3600,
        validation_alias=_env("ACCOUNTANT_BODY_TIMEOUT"),
        description="Seconds to receive a whole request body; then `408`, connection closed.",
    )
    max_inflight_body_bytes: int = Field(
        32 * MiB,
        ge=1024,
        validation_alias=_env("ACCOUNTANT_MAX_INFLIGHT_BODY_BYTES"),
        description="Bytes of large request bodies held at once (bodies ≤ 64 KiB are not counted); "
        "beyond: `503` with `Retry-After`, connection closed.",
    )
    response_cache_bytes: int = Field(
        32 * MiB,
        ge=0,
        validation_alias=_env("ACCOUNTANT_RESPONSE_CACHE_BYTES"),
        description="Bytes of cached computation answers (least recently used evicted).",
    )
    curve_cache_bytes: int = Field(
        64 * MiB,
        ge=0,
        validation_alias=_env("ACCOUNTANT_CURVE_CACHE_BYTES"),
        description="Bytes of expensive curves kept in memory (least recently used evicted).",
    )
    curve_store: Literal["memory", "database"] | None = Field(
        None,
        validation_alias=_env("ACCOUNTANT_CURVE_STORE"),
        description="Where expensive curves (the clone bound) are kept: `database` (shared by every "
        "process and kept across restarts) or `memory` (this process only); unset: `database` when "
        "the app is served by `serve` (which migrates the database first), else `memory`.",
    )
    curve_store_max_rows: int = Field(
        50_000,
        ge=100,
        validation_alias=_env("ACCOUNTANT_CURVE_STORE_MAX_ROWS"),
        description="Curves kept in the shared store (oldest evicted).",
    )
    limit_concurrency: int = Field(
        1000,
        ge=8,
        le=1_000_000,
        validation_alias=_env("ACCOUNTANT_LIMIT_CONCURRENCY"),
        description="Open connections + requests in progress per worker (uvicorn's "
        "`--limit-concurrency`); beyond: `503`.",
    )
    keepalive_timeout: float = Field(
        5.0,
        gt=0,
        le=3600,
        validation_alias=_env("ACCOUNTANT_KEEPALIVE_TIMEOUT"),
        description="Seconds an idle keep-alive connection stays open.",
    )
    malloc_tuning: bool = Field(
        True,
        validation_alias=_env("ACCOUNTANT_MALLOC_TUNING"),
        description="Keep large freed arrays in the heap (glibc; `app/core/tuning.py`): ≈ 10 ms less "
        "per new clone curve, at the price of retaining freed memory (at most the trim threshold); "
        "`0` turns it off.",
    )
    numba: bool = Field(
        False,
        validation_alias=_env("ACCOUNTANT_NUMBA"),
        description="`1`: the compiled kernels of the clone engine (needs the `fast` extra, "
        "`pip install -e '.[fast]'`): the same bounds, new clone curves ≈ 2× faster at the median "
        "and 3× at worst; numba is imported (≈ 60 MB) at the first new curve, and compiled once per "
        "machine in a few seconds, then cached on disk. `accountant.clones.compiled` reads the variable "
        "from the environment itself; it is declared here to be validated at start-up.",
    )

    # ---- database faults (app.db.session)
    db_timeout: float = Field(
        5.0,
        gt=0,
        le=600,
        validation_alias=_env("ACCOUNTANT_DB_TIMEOUT"),
        description="Seconds a database operation may take: connecting, waiting for a lock, a "
        "statement; then `503` with `Retry-After`, nothing recorded.",
    )
    db_concurrency: int = Field(
        16,
        ge=1,
        le=1024,
        validation_alias=_env("ACCOUNTANT_DB_CONCURRENCY"),
        description="Database operations at once per process; more wait.",
    )
    db_queue: int = Field(
        256,
        ge=0,
        le=1_000_000,
        validation_alias=_env("ACCOUNTANT_DB_QUEUE"),
        description="Database operations that may wait; more: `503`.",
    )
    db_write_lanes: int = Field(
        4,
        ge=1,
        le=64,
        validation_alias=_env("ACCOUNTANT_DB_WRITE_LANES"),
        description="PostgreSQL: ledger writes at once per process; the others queue in arrival order "
        "(SQLite: always one).",
    )

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
