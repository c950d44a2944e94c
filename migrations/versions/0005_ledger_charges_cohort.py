"""Ledger-wide charge listing: the index (cohort, charge id).

``GET /v1/charges?cohort=…`` lists a cohort's rounds in charge-id order, after a cursor, as one
range of this index (app.ledger.paging). Without a cohort the listing walks the primary key; a
time range uses ``ix_ledger_charges_created_at``; a user's charges come from
``ix_ledger_charge_users_user`` and the memberships.

Revision ID: 0005_ledger_charges_cohort
Revises: 0004_keyset_paging
Create Date: 2027-01-10
"""

from alembic import op

revision = "0005_ledger_charges_cohort"
down_revision = "0004_keyset_paging"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_ledger_charges_cohort_id", "ledger_charges", ["cohort_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_ledger_charges_cohort_id", "ledger_charges")
