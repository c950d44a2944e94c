"""SQLAlchemy 2 models of the budget ledger (ledger.md).

Tables (every name prefixed ``ledger_``):

``order_grids``     the versioned Rényi order grids; every stored curve names its grid.
``classes``         budget classes: users with identical budget, policy and history share one row
                    and therefore one running spent curve (the "grouping" of ledger.md). A class is
                    identified by a ``signature`` = hash of (its budget at creation, then every
                    non-cohort transition: explicit charge, join/leave of a cohort at a cohort
                    round, budget change). Cohort rounds are implied by the join/leave rounds, so
                    two classes with one signature have bit-identical spent curves.
``users``           a data subject: external ``user_id`` → its class.
``cohorts``         a named population: number of rounds charged (``seq``) and the running
                    cumulative curve of its rounds.
``class_cohorts``   which cohorts a class is currently a member of (every user of the class is).
``memberships``     join/leave history per (cohort, user): the cohort round at join and at leave;
                    a member's share of the cohort is the rounds in (join_seq, leave_seq].
``charges``         immutable admitted charges: event as received, its curve on the grid, who,
                    when, idempotency key; cohort charges carry the cohort round and the cohort's
                    cumulative curve after it (so a member's share is a difference of two stored
                    curves). Database triggers refuse UPDATE and DELETE.
``charge_users``    the users named by an explicit charge (one row per listed user).
``refusals``        refused charge requests (when, who, the cohort or number of users asked for,
                    how many were refused) for the dashboard; never a charge.

Storage is O(rounds + users + memberships + users named in explicit charges): a cohort round
writes one charge row and one row per *class* in the cohort, never one per member.

Curves are stored as little-endian float64 bytes (exact, and +inf is representable).
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a BIGINT identity.
BigId = BigInteger().with_variant(Integer(), "sqlite")
TZ = DateTime(timezone=True)
# External ids compare and sort by code point on both databases (SQLite's BINARY collation of
# UTF-8; PostgreSQL's "C"), so an id prefix is an index range and listings page identically.
ExtId = String(256).with_variant(String(256, collation="C"), "postgresql")


class Base(DeclarativeBase):
    pass


class OrderGrid(Base):
    __tablename__ = "ledger_order_grids"

    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    orders: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    orders_json: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = mapped_column(TZ, nullable=False)


class BudgetClass(Base):
    __tablename__ = "ledger_classes"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    signature: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    epsilon: Mapped[float] = mapped_column(Float, nullable=False)
    delta: Mapped[float] = mapped_column(Float, nullable=False)
    policy: Mapped[str] = mapped_column(String(16), nullable=False)
    filter_order: Mapped[float | None] = mapped_column(Float, nullable=True)
    filter_budget: Mapped[float | None] = mapped_column(Float, nullable=True)
    grid_version: Mapped[int] = mapped_column(ForeignKey("ledger_order_grids.version"), nullable=False)
    spent: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    n_charges: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    n_users: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    spent_epsilon: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)
    spent_order: Mapped[float | None] = mapped_column(Float, nullable=True)
    remaining_epsilon: Mapped[float] = mapped_column(Float, nullable=False)
    remaining_fraction: Mapped[float] = mapped_column(Float, nullable=False, index=True)
    last_charge_at: Mapped[datetime | None] = mapped_column(TZ, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(TZ, nullable=False)

    # listings sorted by a class column walk the classes in this order (app.ledger.listing)
    __table_args__ = (
        Index("ix_ledger_classes_remaining", "remaining_epsilon", "id"),
        Index("ix_ledger_classes_spent", "spent_epsilon", "id"),
        Index("ix_ledger_classes_last_charge", "last_charge_at", "id"),
    )


class User(Base):
    __tablename__ = "ledger_users"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(ExtId, nullable=False, unique=True)
    class_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("ledger_classes.id"), nullable=False)
    created_at: Mapped[datetime] = mapped_column(TZ, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(TZ, nullable=False)

    __table_args__ = (Index("ix_ledger_users_class_user", "class_id", "user_id"),)


class Cohort(Base):
    __tablename__ = "ledger_cohorts"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    cohort_id: Mapped[str] = mapped_column(ExtId, nullable=False, unique=True)
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    seq: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    grid_version: Mapped[int] = mapped_column(ForeignKey("ledger_order_grids.version"), nullable=False)
    cumulative: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    n_members: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    created_at: Mapped[datetime] = mapped_column(TZ, nullable=False)


class ClassCohort(Base):
    __tablename__ = "ledger_class_cohorts"

    class_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("ledger_classes.id", ondelete="CASCADE"), primary_key=True
    )
    cohort_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("ledger_cohorts.id"), primary_key=True)

    __table_args__ = (Index("ix_ledger_class_cohorts_cohort", "cohort_id", "class_id"),)


class Membership(Base):
    __tablename__ = "ledger_memberships"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    cohort_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("ledger_cohorts.id"), nullable=False)
    user_pk: Mapped[int] = mapped_column(BigInteger, ForeignKey("ledger_users.id"), nullable=False)
    join_seq: Mapped[int] = mapped_column(BigInteger, nullable=False)
    leave_seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    joined_at: Mapped[datetime] = mapped_column(TZ, nullable=False)
    left_at: Mapped[datetime | None] = mapped_column(TZ, nullable=True)

    __table_args__ = (
        Index("ix_ledger_memberships_cohort_user", "cohort_id", "user_pk"),
        Index("ix_ledger_memberships_user", "user_pk"),
        # a cohort's members in the order they joined, after a cursor (app.ledger.paging)
        Index("ix_ledger_memberships_cohort_id", "cohort_id", "id"),
    )


class Charge(Base):
    __tablename__ = "ledger_charges"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(256), nullable=True, unique=True)
    request_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    event: Mapped[str] = mapped_column(Text, nullable=False)
    grid_version: Mapped[int] = mapped_column(ForeignKey("ledger_order_grids.version"), nullable=False)
    curve: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    cohort_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("ledger_cohorts.id"), nullable=True)
    cohort_seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    cohort_cumulative: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    n_users: Mapped[int] = mapped_column(BigInteger, nullable=False)
    actor_name: Mapped[str] = mapped_column(String(128), nullable=False)
    actor_role: Mapped[str] = mapped_column(String(16), nullable=False)
    created_at: Mapped[datetime] = mapped_column(TZ, nullable=False)
    response: Mapped[str] = mapped_column(Text, nullable=False)

    __table_args__ = (
        UniqueConstraint("cohort_id", "cohort_seq", name="uq_ledger_charges_cohort_round"),
        Index("ix_ledger_charges_created_at", "created_at"),
        # a cohort's rounds in charge-id order, after a cursor (GET /v1/charges?cohort=…)
        Index("ix_ledger_charges_cohort_id", "cohort_id", "id"),
    )


class ChargeUser(Base):
    __tablename__ = "ledger_charge_users"

    charge_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("ledger_charges.id"), primary_key=True)
    user_pk: Mapped[int] = mapped_column(BigInteger, ForeignKey("ledger_users.id"), primary_key=True)

    __table_args__ = (Index("ix_ledger_charge_users_user", "user_pk", "charge_id"),)


class Refusal(Base):
    """A refused charge request (nothing was charged): for counts and the timeline of the dashboard."""

    __tablename__ = "ledger_refusals"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    created_at: Mapped[datetime] = mapped_column(TZ, nullable=False, index=True)
    actor_name: Mapped[str] = mapped_column(String(128), nullable=False)
    actor_role: Mapped[str] = mapped_column(String(16), nullable=False)
    cohort_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("ledger_cohorts.id"), nullable=True)
    users_requested: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    refused_count: Mapped[int] = mapped_column(BigInteger, nullable=False)


class CurveCacheEntry(Base):
    """An expensive accountant curve (the clone bound), computed once per key and shared by every
    process and restart (:mod:`app.db.curve_store`). Keys name the bound, its algorithm version,
    its parameters and the exact orders, so an entry never changes meaning."""

    __tablename__ = "accountant_curve_cache"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    n_values: Mapped[int] = mapped_column(Integer, nullable=False)
    curve_values: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    created_at: Mapped[datetime] = mapped_column(TZ, nullable=False)


# the Core tables (the ledger reads and writes through SQLAlchemy Core, app.ledger.repository)
T_GRIDS = cast(Table, OrderGrid.__table__)
T_CLASSES = cast(Table, BudgetClass.__table__)
T_USERS = cast(Table, User.__table__)
T_COHORTS = cast(Table, Cohort.__table__)
T_CLASS_COHORTS = cast(Table, ClassCohort.__table__)
T_MEMBERSHIPS = cast(Table, Membership.__table__)
T_CHARGES = cast(Table, Charge.__table__)
T_CHARGE_USERS = cast(Table, ChargeUser.__table__)
T_REFUSALS = cast(Table, Refusal.__table__)
