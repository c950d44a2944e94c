"""Keyset (cursor) paging of a cohort's members: the index (cohort, membership id).

``GET /v1/cohorts/{id}/members?cursor=…`` reads the members after a membership id, in id order,
as one range of this index (app.ledger.paging). The other listings' cursors use indexes that
exist: users by id (unique), users of a class by id, classes by (sort key, id), a user's
explicit charges by (user, charge).

Revision ID: 0004_keyset_paging
Revises: 0003_ledger_listing
Create Date: 2026-12-05
"""

from alembic import op

revision = "0004_keyset_paging"
down_revision = "0003_ledger_listing"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_ledger_memberships_cohort_id", "ledger_memberships", ["cohort_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_ledger_memberships_cohort_id", "ledger_memberships")
