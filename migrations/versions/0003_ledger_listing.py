"""Ledger listings and the dashboard summary: last charge per class, sort indexes, code-point ids,
refused charge requests.

* ``ledger_classes.last_charge_at``: every user of a class has the same charge history, hence the
  same last charge; filled here from the charge log of one user per class.
* indexes for listings sorted by remaining/spent ε or last charge (classes), users by class then
  id, and charges by time (the summary's timeline);
* PostgreSQL: ``user_id`` and ``cohort_id`` in the "C" collation (code-point order, as SQLite's
  BINARY): an id prefix is an index range and both databases page listings identically;
* ``ledger_refusals``: one row per refused charge request (never a charge).

Revision ID: 0003_ledger_listing
Revises: 0002_curve_cache
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_ledger_listing"
down_revision = "0002_curve_cache"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TZ = sa.DateTime(timezone=True)

# the last charge that reached the first user (by pk) of each class: explicit charges naming it, and
# the cohort rounds in (join_seq, leave_seq] of its memberships
_FIRST_USER = "(SELECT min(u.id) FROM ledger_users u WHERE u.class_id = ledger_classes.id)"
_LAST_EXPLICIT = (
    "(SELECT max(ch.created_at) FROM ledger_charge_users cu JOIN ledger_charges ch ON ch.id = cu.charge_id "
    f"WHERE cu.user_pk = {_FIRST_USER})"
)
_LAST_ROUND = (
    "(SELECT max(ch.created_at) FROM ledger_memberships m JOIN ledger_charges ch ON ch.cohort_id = m.cohort_id "
    "AND ch.cohort_seq > m.join_seq AND (m.leave_seq IS NULL OR ch.cohort_seq <= m.leave_seq) "
    f"WHERE m.user_pk = {_FIRST_USER})"
)


def upgrade() -> None:
    op.add_column("ledger_classes", sa.Column("last_charge_at", TZ, nullable=True))
    op.execute(f"UPDATE ledger_classes SET last_charge_at = {_LAST_EXPLICIT}")
    op.execute(f"UPDATE ledger_classes SET last_charge_at = {_LAST_ROUND} WHERE {_LAST_ROUND} IS NOT NULL "
               f"AND (last_charge_at IS NULL OR {_LAST_ROUND} > last_charge_at)")
    op.create_index("ix_ledger_classes_remaining", "ledger_classes", ["remaining_epsilon", "id"])
    op.create_index("ix_ledger_classes_spent", "ledger_classes", ["spent_epsilon", "id"])
    op.create_index("ix_ledger_classes_last_charge", "ledger_classes", ["last_charge_at", "id"])
    op.drop_index("ix_ledger_users_class_id", "ledger_users")
    op.create_index("ix_ledger_users_class_user", "ledger_users", ["class_id", "user_id"])
    op.create_index("ix_ledger_charges_created_at", "ledger_charges", ["created_at"])
    if op.get_bind().dialect.name == "postgresql":
        for table, col in (("ledger_users", "user_id"), ("ledger_cohorts", "cohort_id")):
            op.execute(f'ALTER TABLE {table} ALTER COLUMN {col} TYPE VARCHAR(256) COLLATE "C"')
    op.create_table(
        "ledger_refusals",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("actor_name", sa.String(128), nullable=False),
        sa.Column("actor_role", sa.String(16), nullable=False),
        sa.Column("cohort_id", sa.BigInteger(), sa.ForeignKey("ledger_cohorts.id"), nullable=True),
        sa.Column("users_requested", sa.BigInteger(), nullable=True),
        sa.Column("refused_count", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_ledger_refusals_created_at", "ledger_refusals", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_ledger_refusals_created_at", "ledger_refusals")
    op.drop_table("ledger_refusals")
    if op.get_bind().dialect.name == "postgresql":
        for table, col in (("ledger_users", "user_id"), ("ledger_cohorts", "cohort_id")):
            op.execute(f'ALTER TABLE {table} ALTER COLUMN {col} TYPE VARCHAR(256) COLLATE "default"')
    op.drop_index("ix_ledger_charges_created_at", "ledger_charges")
    op.drop_index("ix_ledger_users_class_user", "ledger_users")
    op.create_index("ix_ledger_users_class_id", "ledger_users", ["class_id"])
    for name in ("ix_ledger_classes_last_charge", "ix_ledger_classes_spent", "ix_ledger_classes_remaining"):
        op.drop_index(name, "ledger_classes")
    op.drop_column("ledger_classes", "last_charge_at")
