"""The ledger's operations: what the HTTP routes, the CLI and tests call.

Each operation runs as one database transaction (all or nothing) and returns typed records
(:mod:`app.ledger.records`) or raises a domain error (:mod:`app.ledger.errors`). Where each
part lives:

* :mod:`app.ledger.curves` — the arithmetic: outward-rounded sums, the two admission policies;
* :mod:`app.ledger.budgets` — budgets, creating users, budget changes;
* :mod:`app.ledger.charging` — charges (explicit and cohort rounds), idempotency;
* :mod:`app.ledger.cohorts` — cohorts and memberships;
* :mod:`app.ledger.reads` — user status, charge log, audit, history;
* :mod:`app.ledger.listing`, :mod:`app.ledger.summary` — listings and the overview of dashboards;
* :mod:`app.ledger.refusals` — refused requests recorded for the overview (never charges);
* :mod:`app.ledger.locking`, :mod:`app.ledger.transitions` — the lock protocol and budget classes;
* :mod:`app.ledger.repository`, :mod:`app.ledger.queries`, :mod:`app.ledger.sql` — the SQL;
* :mod:`app.ledger.grid` — versioned order grids.
"""

from __future__ import annotations

from app.ledger.budgets import bulk_create_users, event_cost, make_budget, put_user
from app.ledger.charging import charge
from app.ledger.cohorts import (
    change_members,
    cohort_history,
    create_cohort,
    get_cohort,
    list_members,
    user_cohorts,
)
from app.ledger.curves import Budget
from app.ledger.errors import Conflict, IdempotencyConflict, Invalid, LedgerError, NotFound, Refused
from app.ledger.grid import ensure_grid
from app.ledger.listing import SORTS, UserFilter, list_cohorts, list_users
from app.ledger.reads import (
    get_user,
    list_charges,
    list_user_charges,
    nearest_exhaustion,
    parse_instant,
    recompute_user,
    user_history,
)
from app.ledger.records import Actor
from app.ledger.summary import summary

__all__ = [
    "Actor",
    "Budget",
    "Conflict",
    "IdempotencyConflict",
    "Invalid",
    "LedgerError",
    "NotFound",
    "Refused",
    "bulk_create_users",
    "change_members",
    "charge",
    "cohort_history",
    "create_cohort",
    "ensure_grid",
    "event_cost",
    "get_cohort",
    "get_user",
    "list_charges",
    "list_members",
    "list_user_charges",
    "make_budget",
    "nearest_exhaustion",
    "parse_instant",
    "put_user",
    "recompute_user",
    "user_cohorts",
    "user_history",
    "SORTS",
    "UserFilter",
    "list_cohorts",
    "list_users",
    "summary",
]
