"""Shared cache of expensive accountant curves (the clone bound, bounds.md §8).

Revision ID: 0002_curve_cache
Revises: 0001_ledger_initial
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_curve_cache"
down_revision = "0001_ledger_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "accountant_curve_cache",
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("n_values", sa.Integer(), nullable=False),
        sa.Column("curve_values", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("accountant_curve_cache")
