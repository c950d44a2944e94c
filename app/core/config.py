"""Settings from the environment (pydantic-settings).

==========================  ===========================================================
``DATABASE_URL``            default ``sqlite:///./accountant.db``;
                            ``postgresql+psycopg://user:pass@host/db`` for PostgreSQL
``ACCOUNTANT_API_KEYS``     comma-separated ``key:role`` pairs, roles admin/pipeline/viewer
``ACCOUNTANT_LOG_LEVEL``    (or ``LOG_LEVEL``) DEBUG/INFO/WARNING/ERROR, default INFO
``ACCOUNTANT_MAX_BODY_BYTES``  request body cap, default 1 MiB (larger bodies: ``413``)
``ACCOUNTANT_COMPUTE_TIME_LIMIT``  seconds a composition may spend computing new curves (30)
``ACCOUNTANT_COMPUTE_CONCURRENCY``  computations at once per process (default: CPU count)
``ACCOUNTANT_MAX_ORDER_MASS``  work limit of one request (see ``app.core.compute.check_work``)
==========================  ===========================================================
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ROLES = ("admin", "pipeline", "viewer")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False, hide_input_in_errors=True)

    database_url: str = Field("sqlite:///./accountant.db", validation_alias=AliasChoices("DATABASE_URL"))
    accountant_api_keys: str = Field("", validation_alias=AliasChoices("ACCOUNTANT_API_KEYS"), repr=False)
    log_level: str = Field("INFO", validation_alias=AliasChoices("ACCOUNTANT_LOG_LEVEL", "LOG_LEVEL"))
    max_body_bytes: int = Field(
        1_048_576, ge=1024, validation_alias=AliasChoices("ACCOUNTANT_MAX_BODY_BYTES")
    )
    #: a composition stops computing new curves after this many seconds (400; a retry continues
    #: from the cache)
    compute_time_limit: float = Field(
        30.0, gt=0, validation_alias=AliasChoices("ACCOUNTANT_COMPUTE_TIME_LIMIT")
    )
    #: computations running at once per process (the rest wait; cached answers never wait)
    compute_concurrency: int = Field(0, ge=0, validation_alias=AliasChoices("ACCOUNTANT_COMPUTE_CONCURRENCY"))
    #: a compute request may ask for at most this much "order mass" (Σ over distinct events of
    #: Σ max(α, 1000)); the bounds cost time roughly linear in α (≈ 0.1 s at α = 10⁶).
    max_order_mass: float = Field(2e7, gt=0, validation_alias=AliasChoices("ACCOUNTANT_MAX_ORDER_MASS"))
    #: where expensive curves (the clone bound) are kept: ``memory`` (this process only) or
    #: ``database`` (shared by every process and kept across restarts; ``serve`` selects it after
    #: migrating unless this is set explicitly)
    curve_store: str = Field(
        "memory", pattern="^(memory|database)$", validation_alias=AliasChoices("ACCOUNTANT_CURVE_STORE")
    )
    #: keep large freed arrays in the heap (glibc; see app.core.tuning): ~10 ms less per new
    #: clone curve, at the price of retaining freed memory
    malloc_tuning: bool = Field(True, validation_alias=AliasChoices("ACCOUNTANT_MALLOC_TUNING"))

    @field_validator("log_level")
    @classmethod
    def _level(cls, v: str) -> str:
        v = v.strip().upper()
        if v not in ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "TRACE"):
            raise ValueError(f"log level must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL; got {v!r}")
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


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once; tests call ``get_settings.cache_clear()``)."""
    return Settings()
