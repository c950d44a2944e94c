"""The overview of the ledger: counts, users near exhaustion, admitted and refused charges over time."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import Table, func, select
from sqlalchemy.orm import Session

from app.db.models import T_CHARGES, T_CLASSES, T_COHORTS, T_REFUSALS
from app.db.session import Database
from app.ledger import repository as repo
from app.ledger.records import Bucket, Summary, TimelineBucket
from app.ledger.sql import bucket_start, snapshot, time_bucket

#: a user is near exhaustion when its remaining ε is below this fraction of its budget ε
NEAR_EXHAUSTION = 0.1
DEFAULT_BUCKETS: dict[Bucket, int] = {"hour": 48, "day": 30}
_STEP: dict[Bucket, timedelta] = {"hour": timedelta(hours=1), "day": timedelta(days=1)}


def _floor(ts: datetime, unit: Bucket) -> datetime:
    ts = ts.replace(minute=0, second=0, microsecond=0)
    return ts.replace(hour=0) if unit == "day" else ts


def _per_bucket(s: Session, db: Database, table: Table, unit: Bucket, start: datetime) -> dict[datetime, int]:
    b = time_bucket(table.c.created_at, unit, db)
    rows = s.execute(select(b, func.count()).where(table.c.created_at >= start).group_by(b))
    return {bucket_start(k): int(n) for k, n in rows}


def summary(
    db: Database, bucket: Bucket = "hour", buckets: int | None = None, now: datetime | None = None
) -> Summary:
    """Counts over the whole ledger and the timeline of the last ``buckets`` hours or days (UTC,
    the current, partial one last)."""
    n = buckets if buckets is not None else DEFAULT_BUCKETS[bucket]
    last = _floor(now or datetime.now(timezone.utc), bucket)
    starts = [last - _STEP[bucket] * (n - 1 - i) for i in range(n)]
    near = T_CLASSES.c.remaining_epsilon < NEAR_EXHAUSTION * T_CLASSES.c.epsilon
    with db.read() as s:
        snapshot(s, db)
        users = s.execute(select(func.coalesce(func.sum(T_CLASSES.c.n_users), 0))).scalar_one()
        near_users = s.execute(
            select(func.coalesce(func.sum(T_CLASSES.c.n_users), 0)).where(near)
        ).scalar_one()
        admitted = _per_bucket(s, db, T_CHARGES, bucket, starts[0])
        refused = _per_bucket(s, db, T_REFUSALS, bucket, starts[0])
        return Summary(
            users=int(users),
            cohorts=repo.count(s, T_COHORTS),
            charges=repo.count(s, T_CHARGES),
            near_exhaustion=int(near_users),
            near_exhaustion_fraction=NEAR_EXHAUSTION,
            refusals=repo.count(s, T_REFUSALS),
            bucket=bucket,
            timeline=[TimelineBucket(t, admitted.get(t, 0), refused.get(t, 0)) for t in starts],
        )
