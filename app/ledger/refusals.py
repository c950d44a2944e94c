"""Refused charge requests, recorded for the dashboard's counts and timeline (never a charge).

:func:`record_refusal` runs after the refused unit has rolled back, in its own transaction, so it
cannot record a charge or a part of one; and it cannot change the answer: any failure to record
is logged and swallowed, the caller still raises the refusal.
"""

from __future__ import annotations

import logging

from sqlalchemy import insert, select

from app.db.models import T_COHORTS, T_REFUSALS
from app.db.session import Database
from app.ledger import repository as repo
from app.ledger.records import Actor

log = logging.getLogger("app.ledger")


def record_refusal(
    db: Database, actor: Actor, cohort: str | None, users_requested: int | None, refused_count: int
) -> None:
    """Record one refused request (best effort)."""
    cohort_pk = (
        select(T_COHORTS.c.id).where(T_COHORTS.c.cohort_id == cohort).scalar_subquery() if cohort else None
    )
    try:
        with db.write() as s:
            s.execute(
                insert(T_REFUSALS).values(
                    created_at=repo.now(),
                    actor_name=actor.name,
                    actor_role=actor.role,
                    cohort_id=cohort_pk,
                    users_requested=users_requested,
                    refused_count=refused_count,
                )
            )
    except Exception:
        log.warning("a refused charge could not be recorded for the dashboard", exc_info=True)
