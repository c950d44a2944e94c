"""Ledger: order grids, budget classes, users, cohorts, memberships, immutable charges.

Revision ID: 0001_ledger_initial
Revises:
Create Date: 2025-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_ledger_initial"
down_revision = None
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "ledger_order_grids",
        sa.Column("version", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("orders", sa.LargeBinary(), nullable=False),
        sa.Column("orders_json", sa.Text(), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "ledger_classes",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("signature", sa.String(64), nullable=False),
        sa.Column("epsilon", sa.Float(), nullable=False),
        sa.Column("delta", sa.Float(), nullable=False),
        sa.Column("policy", sa.String(16), nullable=False),
        sa.Column("filter_order", sa.Float(), nullable=True),
        sa.Column("filter_budget", sa.Float(), nullable=True),
        sa.Column("grid_version", sa.Integer(), sa.ForeignKey("ledger_order_grids.version"), nullable=False),
        sa.Column("spent", sa.LargeBinary(), nullable=False),
        sa.Column("n_charges", sa.BigInteger(), nullable=False),
        sa.Column("n_users", sa.BigInteger(), nullable=False),
        sa.Column("spent_epsilon", sa.Float(), nullable=False),
        sa.Column("spent_order", sa.Float(), nullable=True),
        sa.Column("remaining_epsilon", sa.Float(), nullable=False),
        sa.Column("remaining_fraction", sa.Float(), nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
        sa.UniqueConstraint("signature", name="uq_ledger_classes_signature"),
    )
    op.create_index("ix_ledger_classes_remaining_fraction", "ledger_classes", ["remaining_fraction"])
    op.create_table(
        "ledger_users",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(256), nullable=False),
        sa.Column("class_id", sa.BigInteger(), sa.ForeignKey("ledger_classes.id"), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
        sa.UniqueConstraint("user_id", name="uq_ledger_users_user_id"),
    )
    op.create_index("ix_ledger_users_class_id", "ledger_users", ["class_id"])
    op.create_table(
        "ledger_cohorts",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("cohort_id", sa.String(256), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("grid_version", sa.Integer(), sa.ForeignKey("ledger_order_grids.version"), nullable=False),
        sa.Column("cumulative", sa.LargeBinary(), nullable=False),
        sa.Column("n_members", sa.BigInteger(), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.UniqueConstraint("cohort_id", name="uq_ledger_cohorts_cohort_id"),
    )
    op.create_table(
        "ledger_class_cohorts",
        sa.Column("class_id", sa.BigInteger(), sa.ForeignKey("ledger_classes.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("cohort_id", sa.BigInteger(), sa.ForeignKey("ledger_cohorts.id"), primary_key=True),
    )
    op.create_index("ix_ledger_class_cohorts_cohort", "ledger_class_cohorts", ["cohort_id", "class_id"])
    op.create_table(
        "ledger_memberships",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("cohort_id", sa.BigInteger(), sa.ForeignKey("ledger_cohorts.id"), nullable=False),
        sa.Column("user_pk", sa.BigInteger(), sa.ForeignKey("ledger_users.id"), nullable=False),
        sa.Column("join_seq", sa.BigInteger(), nullable=False),
        sa.Column("leave_seq", sa.BigInteger(), nullable=True),
        sa.Column("joined_at", TZ, nullable=False),
        sa.Column("left_at", TZ, nullable=True),
    )
    op.create_index("ix_ledger_memberships_cohort_user", "ledger_memberships", ["cohort_id", "user_pk"])
    op.create_index("ix_ledger_memberships_user", "ledger_memberships", ["user_pk"])
    op.create_table(
        "ledger_charges",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("idempotency_key", sa.String(256), nullable=True),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("event", sa.Text(), nullable=False),
        sa.Column("grid_version", sa.Integer(), sa.ForeignKey("ledger_order_grids.version"), nullable=False),
        sa.Column("curve", sa.LargeBinary(), nullable=False),
        sa.Column("cohort_id", sa.BigInteger(), sa.ForeignKey("ledger_cohorts.id"), nullable=True),
        sa.Column("cohort_seq", sa.BigInteger(), nullable=True),
        sa.Column("cohort_cumulative", sa.LargeBinary(), nullable=True),
        sa.Column("n_users", sa.BigInteger(), nullable=False),
        sa.Column("actor_name", sa.String(128), nullable=False),
        sa.Column("actor_role", sa.String(16), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.UniqueConstraint("idempotency_key", name="uq_ledger_charges_idempotency_key"),
        sa.UniqueConstraint("cohort_id", "cohort_seq", name="uq_ledger_charges_cohort_round"),
    )
    op.create_table(
        "ledger_charge_users",
        sa.Column("charge_id", sa.BigInteger(), sa.ForeignKey("ledger_charges.id"), primary_key=True),
        sa.Column("user_pk", sa.BigInteger(), sa.ForeignKey("ledger_users.id"), primary_key=True),
    )
    op.create_index("ix_ledger_charge_users_user", "ledger_charge_users", ["user_pk", "charge_id"])

    # Charge records are immutable: the database itself refuses UPDATE and DELETE.
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for table in ("ledger_charges", "ledger_charge_users"):
            for action in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, 'charge records are immutable'); END"
                )
    elif bind.dialect.name == "postgresql":
        op.execute(
            "CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'charge records are immutable'; END $$"
        )
        for table in ("ledger_charges", "ledger_charge_users"):
            op.execute(
                f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()"
            )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for table in ("ledger_charges", "ledger_charge_users"):
            op.execute(f"DROP TRIGGER IF EXISTS {table}_immutable ON {table}")
        op.execute("DROP FUNCTION IF EXISTS ledger_refuse_change()")
    for table in ("ledger_charge_users", "ledger_charges", "ledger_memberships", "ledger_class_cohorts",
                  "ledger_cohorts", "ledger_users", "ledger_classes", "ledger_order_grids"):
        op.drop_table(table)
