"""Ledger operations: users, admission of charges, cohorts, dashboard reads, recomputation.

Every write runs as one database transaction (``Database.run_write``): all or nothing.

Budget classes (see :mod:`app.db.models`) carry the running spent curves. An operation that
affects only some users of a class moves those users to the class's *child* for that transition
(looked up by signature, so users with identical histories converge to one class), or updates the
class in place when every user of it is affected. A cohort round updates every class in the
cohort in place: cost O(classes in the cohort), independent of the number of members.

Locking (PostgreSQL, READ COMMITTED). Global lock order: cohorts (by id) → classes (by id).
A user changes class only under the lock of its class (every transition locks the classes it
moves users out of and into), so class locks also pin their users.
  * cohort charge: cohort ``FOR UPDATE``, then its classes ``FOR UPDATE``;
  * explicit charge / budget change: the cohorts of the users' classes ``FOR SHARE``, then the
    classes ``FOR UPDATE``; then re-check that no user changed class and no class gained a cohort
    between the first read and the locks (else retry the unit);
  * join/leave: the cohort ``FOR UPDATE`` and the other cohorts of the users' classes
    ``FOR SHARE`` (in id order), then the classes as above.
The set of classes in a cohort can only change under that cohort's lock (a split of a class in C
holds C in share mode; a join/leave holds C exclusively), so a cohort round sees every member.
SQLite: every write unit starts with ``BEGIN IMMEDIATE`` (one writer at a time), the locks are
no-ops. Deadlocks or failed optimistic checks roll the unit back and run it again.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
from sqlalchemy import and_, bindparam, delete, func, insert, or_, select, text, union_all, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

import accountant
from app.db.models import (
    T_CHARGE_USERS,
    T_CHARGES,
    T_CLASS_COHORTS,
    T_CLASSES,
    T_COHORTS,
    T_GRIDS,
    T_MEMBERSHIPS,
    T_USERS,
)
from app.db.session import Database, RetryTransaction
from app.ledger import curves as cv
from app.ledger.curves import Budget

CHUNK = 2000
MAX_LISTED = 1000  # most user ids named in one refusal / conflict body


# ----------------------------------------------------------------------------------------------
# errors


class LedgerError(Exception):
    status_code = 400

    def __init__(self, detail: str, **extra: Any):
        super().__init__(detail)
        self.detail = detail
        self.extra = extra

    def body(self) -> dict:
        return {"detail": self.detail, **self.extra}


class NotFound(LedgerError):
    status_code = 404


class Conflict(LedgerError):
    status_code = 409


class Invalid(LedgerError):
    status_code = 422


class Refused(LedgerError):
    status_code = 409

    def body(self) -> dict:
        return {"status": "refused", **self.extra, "detail": self.detail}


@dataclass(frozen=True)
class Actor:
    name: str
    role: str


# ----------------------------------------------------------------------------------------------
# helpers


def now() -> datetime:
    return datetime.now(timezone.utc)


def iso(ts: datetime | None) -> str | None:
    if ts is None:
        return None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return ts.isoformat()


def chunks(seq: Sequence, n: int = CHUNK) -> Iterable[Sequence]:
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


def _ids(name: str):
    """An expanding IN-list parameter: compiled once, the list is bound at execution."""
    return bindparam(name, expanding=True)


def _insert_rows(s: Session, db: Database, table, rows: list[dict], chunk: int = 5000) -> None:
    """Insert many rows fast: executemany on SQLite; on PostgreSQL one multi-row INSERT per chunk
    from arrays (``INSERT … SELECT * FROM unnest(...)``), a single round trip."""
    if not rows:
        return
    if db.is_sqlite:
        for ch in chunks(rows, 20000):
            s.execute(insert(table), list(ch))
        return
    cols = list(rows[0])
    types = {c: table.c[c].type.compile(dialect=s.get_bind().dialect) for c in cols}
    sel = ", ".join(f"CAST(:{c} AS {types[c]}[])" for c in cols)
    stmt = text(f"INSERT INTO {table.name} ({', '.join(cols)}) SELECT * FROM unnest({sel})")
    for ch in chunks(rows, chunk):
        s.execute(stmt, {c: [r[c] for r in ch] for c in cols})


def _update_rows(s: Session, db: Database, table, rows: list[dict]) -> None:
    """``UPDATE table SET … WHERE id = row["_id"]`` for many rows with one column set: executemany
    on SQLite; one ``UPDATE … FROM unnest(...)`` statement on PostgreSQL (a single round trip)."""
    if not rows:
        return
    cols = [c for c in rows[0] if c != "_id"]
    if db.is_sqlite:
        s.execute(update(table).where(table.c.id == bindparam("_id")).values({c: bindparam(c) for c in cols}), rows)
        return
    dialect = s.get_bind().dialect
    types = {c: table.c[c].type.compile(dialect=dialect) for c in cols}
    arrays = ", ".join([f"CAST(:_id AS {table.c.id.type.compile(dialect=dialect)}[])"]
                       + [f"CAST(:{c} AS {types[c]}[])" for c in cols])
    sets = ", ".join(f"{c} = v.{c}" for c in cols)
    stmt = text(f"UPDATE {table.name} SET {sets} FROM unnest({arrays}) AS v(_id, {', '.join(cols)}) "
                f"WHERE {table.name}.id = v._id")
    for ch in chunks(rows, 5000):
        s.execute(stmt, {c: [r[c] for r in ch] for c in ["_id", *cols]})


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def fresh_signature(b: Budget) -> str:
    return _sha(f"new|{b.epsilon!r}|{b.delta!r}|{b.policy}|{b.filter_order!r}|{cv.GRID_VERSION}")


def child_signature(sig: str, token: str) -> str:
    return _sha(f"{sig}|{token}")


def budget_of(c) -> Budget:
    return Budget(c["epsilon"], c["delta"], c["policy"], c["filter_order"], c["filter_budget"])


def status_columns(b: Budget, spent: np.ndarray) -> dict:
    return _status_dict(cv.status(b, spent))


def _status_dict(st: cv.Status) -> dict:
    return {
        "spent_epsilon": st.spent_epsilon,
        "spent_order": st.spent_order,
        "remaining_epsilon": st.remaining_epsilon,
        "remaining_fraction": st.remaining_fraction,
    }


def finite_list(a: np.ndarray) -> list:
    return [float(x) if math.isfinite(x) else None for x in a]


# ----------------------------------------------------------------------------------------------
# grid


def ensure_grid(s: Session) -> None:
    """Register the current default grid (idempotent); refuse a changed grid under one version.

    When the default grid changed (a new ``DEFAULT_GRID_VERSION``), the running curves of classes
    and cohorts stored on an older grid are carried over to the new one as valid upper bounds
    (:func:`project_curve`). Charge records keep their curves on the grid they were computed on."""
    row = s.execute(select(T_GRIDS.c.orders).where(T_GRIDS.c.version == cv.GRID_VERSION)).first()
    if row is None:
        s.execute(insert(T_GRIDS).values(version=cv.GRID_VERSION, orders=cv.to_bytes(cv.ORDERS),
                                         orders_json=json.dumps(cv.ORDERS.tolist()), created_at=now()))
    elif not np.array_equal(cv.from_bytes(row.orders), cv.ORDERS):
        raise RuntimeError(f"order grid version {cv.GRID_VERSION} in the database differs from the code's grid; "
                           "a changed grid needs a new DEFAULT_GRID_VERSION")
    grids = {r.version: cv.from_bytes(r.orders) for r in s.execute(select(T_GRIDS.c.version, T_GRIDS.c.orders))}
    for c in s.execute(select(T_CLASSES).where(T_CLASSES.c.grid_version != cv.GRID_VERSION)).mappings().all():
        b = budget_of(c)
        if b.policy == "filter" and cv.grid_index(b.filter_order) is None:
            raise RuntimeError(f"filter order {b.filter_order} of a budget class is not on the new grid "
                               f"(version {cv.GRID_VERSION}); keep it in the new grid")
        spent = project_curve(grids[c["grid_version"]], cv.from_bytes(c["spent"]))
        s.execute(update(T_CLASSES).where(T_CLASSES.c.id == c["id"]).values(
            spent=cv.to_bytes(spent), grid_version=cv.GRID_VERSION, **status_columns(b, spent)))
    for co in s.execute(select(T_COHORTS).where(T_COHORTS.c.grid_version != cv.GRID_VERSION)).mappings().all():
        cum = project_curve(grids[co["grid_version"]], cv.from_bytes(co["cumulative"]))
        s.execute(update(T_COHORTS).where(T_COHORTS.c.id == co["id"]).values(
            cumulative=cv.to_bytes(cum), grid_version=cv.GRID_VERSION))


def project_curve(old_orders: np.ndarray, curve: np.ndarray, new_orders: np.ndarray | None = None) -> np.ndarray:
    """A valid upper bound on the current grid of an RDP curve known on ``old_orders``: convexity of
    (α−1)ε(α) and monotonicity of ε(α) between known orders, ε(α_min) below, +∞ above the largest
    finite order (``accountant.composition.curve_from_points``), rounded up."""
    from accountant.composition import curve_from_points

    new = cv.ORDERS if new_orders is None else np.asarray(new_orders, dtype=float)
    fin = np.isfinite(curve)
    if not np.any(fin):
        return np.full(new.size, np.inf)
    if not np.any(curve[fin]):
        out = np.zeros(new.size)
        out[new > np.max(old_orders[fin])] = np.inf
        return out
    out = curve_from_points(old_orders[fin], curve[fin], new)
    return np.where(np.isfinite(out) & (out > 0), np.nextafter(out, np.inf), out)


# ----------------------------------------------------------------------------------------------
# locking primitives (PostgreSQL; no-ops on SQLite where BEGIN IMMEDIATE serialises writers)


def _lock_cohorts(s: Session, db: Database, exclusive: set[int], shared: set[int]) -> None:
    if db.is_sqlite:
        return
    for cid in sorted(exclusive | shared):
        s.execute(select(T_COHORTS.c.id).where(T_COHORTS.c.id == cid)
                  .with_for_update(read=cid not in exclusive)).all()


def _users_by_ext(s: Session, ext_ids: Sequence[str], lock: bool = False, db: Database | None = None) -> dict:
    out = {}
    for ch in chunks(list(ext_ids)):
        q = select(T_USERS.c.id, T_USERS.c.user_id, T_USERS.c.class_id).where(T_USERS.c.user_id.in_(_ids("ids")))
        for r in s.execute(q, {"ids": list(ch)}):
            out[r.user_id] = (r.id, r.class_id)
    return out


def _cohorts_of(s: Session, class_ids: Iterable[int]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = defaultdict(set)
    for ch in chunks(sorted(set(class_ids))):
        for r in s.execute(select(T_CLASS_COHORTS.c.class_id, T_CLASS_COHORTS.c.cohort_id)
                           .where(T_CLASS_COHORTS.c.class_id.in_(_ids("ids"))), {"ids": list(ch)}):
            out[r.class_id].add(r.cohort_id)
    return out


def _load_classes(s: Session, db: Database, class_ids: Iterable[int]) -> dict[int, dict]:
    out = {}
    for ch in chunks(sorted(set(class_ids))):
        q = select(T_CLASSES).where(T_CLASSES.c.id.in_(_ids("ids"))).order_by(T_CLASSES.c.id)
        if not db.is_sqlite:
            q = q.with_for_update()
        for r in s.execute(q, {"ids": list(ch)}).mappings():
            out[r["id"]] = dict(r)
    return out


def _lock_users_classes(s: Session, db: Database, users: dict[str, tuple[int, int]],
                        exclusive_cohort: int | None = None) -> tuple[dict[int, int], dict[int, dict], dict]:
    """The explicit-charge / membership lock protocol. Returns (user pk → class id, classes, class
    id → cohort ids), everything valid under the locks.

    PostgreSQL: the cohorts of the users' classes are locked (share; ``exclusive_cohort``
    exclusively), then the classes ``FOR UPDATE`` in id order. A user moves between classes only
    under the lock of its class, so once the classes are locked, re-reading the users' classes
    either confirms the first read or shows a move committed meanwhile (then the unit is retried).
    """
    pk_class = {pk: cid for pk, cid in users.values()}
    if db.is_sqlite:
        classes = _load_classes(s, db, pk_class.values())
        return pk_class, classes, _cohorts_of(s, classes)
    seen_classes = set(pk_class.values())
    cohorts = set().union(*_cohorts_of(s, seen_classes).values()) if seen_classes else set()
    exclusive = {exclusive_cohort} if exclusive_cohort is not None else set()
    _lock_cohorts(s, db, exclusive, cohorts - exclusive)
    classes = _load_classes(s, db, seen_classes)
    if len(classes) != len(seen_classes):
        raise RetryTransaction("a class vanished before the lock")
    now_classes = {}
    pks = sorted(pk_class)
    for ch in chunks(pks, 5000):
        for r in s.execute(select(T_USERS.c.id, T_USERS.c.class_id).where(T_USERS.c.id.in_(_ids("ids"))),
                           {"ids": list(ch)}):
            now_classes[r.id] = r.class_id
    if now_classes != pk_class:
        raise RetryTransaction("a user changed class before the lock")
    cmap = _cohorts_of(s, seen_classes)
    now_cohorts = set().union(*cmap.values()) if cmap else set()
    if not now_cohorts <= (cohorts | exclusive):
        raise RetryTransaction("a class joined a cohort before the lock")
    return pk_class, classes, cmap


# ----------------------------------------------------------------------------------------------
# class transitions


def _transition(s: Session, db: Database, classes: dict[int, dict], groups: dict[int, list[int]], token: str,
                mutate: Callable[[dict], dict], cohort_map: dict[int, set[int]] | None = None,
                add_cohort: int | None = None, remove_cohort: int | None = None) -> None:
    """Apply one transition (``token``) to the users ``groups[class_id]`` of each class."""
    if not groups:
        return
    ts = now()
    targets = {cid: child_signature(classes[cid]["signature"], token) for cid in groups}
    existing: dict[str, dict] = {}
    sigs = sorted(targets.values())
    for ch in chunks(sigs):
        q = select(T_CLASSES).where(T_CLASSES.c.signature.in_(_ids("ids")))
        if not db.is_sqlite:
            q = q.with_for_update()
        for r in s.execute(q, {"ids": list(ch)}).mappings():
            existing[r["signature"]] = dict(r)
    if cohort_map is None:
        cohort_map = _cohorts_of(s, groups)

    in_place: list[dict] = []
    n_delta: dict[int, int] = defaultdict(int)
    moves: dict[int, list[int]] = defaultdict(list)
    new_rows: list[tuple[int, dict, list[int]]] = []
    deleted: list[int] = []
    cc_add: list[dict] = []
    cc_del: list[tuple[int, int]] = []

    def cohorts_after(cid: int) -> set[int]:
        cs = set(cohort_map.get(cid, set()))
        if add_cohort is not None:
            cs.add(add_cohort)
        if remove_cohort is not None:
            cs.discard(remove_cohort)
        return cs

    for cid, upks in groups.items():
        c = classes[cid]
        k = len(upks)
        sig = targets[cid]
        if sig in existing and existing[sig]["id"] not in groups:
            tid = existing[sig]["id"]
            moves[tid].extend(upks)
            n_delta[tid] += k
            n_delta[cid] -= k
            if c["n_users"] == k:
                deleted.append(cid)
        elif k == c["n_users"]:
            vals = mutate(c)
            vals.update(signature=sig, updated_at=ts)
            in_place.append({"_id": cid, **vals})
            if add_cohort is not None and add_cohort not in cohort_map.get(cid, set()):
                cc_add.append({"class_id": cid, "cohort_id": add_cohort})
            if remove_cohort is not None and remove_cohort in cohort_map.get(cid, set()):
                cc_del.append((cid, remove_cohort))
        else:
            row = {k2: v for k2, v in c.items() if k2 != "id"}
            row.update(mutate(c))
            row.update(signature=sig, n_users=k, updated_at=ts)
            new_rows.append((cid, row, upks))
            n_delta[cid] -= k

    # in-place updates, grouped by column set (executemany)
    by_cols: dict[tuple, list[dict]] = defaultdict(list)
    for r in in_place:
        by_cols[tuple(sorted(r))].append(r)
    for rows in by_cols.values():
        _update_rows(s, db, T_CLASSES, rows)

    if new_rows:
        ids = s.execute(insert(T_CLASSES).returning(T_CLASSES.c.id, sort_by_parameter_order=True),
                        [row for _, row, _ in new_rows]).scalars().all()
        for new_id, (cid, _row, upks) in zip(ids, new_rows):
            for co in sorted(cohorts_after(cid)):
                cc_add.append({"class_id": new_id, "cohort_id": co})
            moves[new_id].extend(upks)

    if cc_add:
        s.execute(insert(T_CLASS_COHORTS), cc_add)
    for cid, co in cc_del:
        s.execute(delete(T_CLASS_COHORTS).where(and_(T_CLASS_COHORTS.c.class_id == cid,
                                                     T_CLASS_COHORTS.c.cohort_id == co)))
    singles = []
    for tid, upks in moves.items():
        if len(upks) <= 8:
            singles.extend({"_pk": pk, "_cid": tid} for pk in upks)
            continue
        for ch in chunks(sorted(upks), 5000):
            s.execute(update(T_USERS).where(T_USERS.c.id.in_(_ids("ids"))).values(class_id=tid), {"ids": list(ch)})
    if singles:
        s.execute(update(T_USERS).where(T_USERS.c.id == bindparam("_pk")).values(class_id=bindparam("_cid")), singles)
    deltas = [{"_id": cid, "_d": d} for cid, d in n_delta.items() if d and cid not in deleted]
    if deltas:
        s.execute(update(T_CLASSES).where(T_CLASSES.c.id == bindparam("_id"))
                  .values(n_users=T_CLASSES.c.n_users + bindparam("_d")), deltas)
    for cid in deleted:
        s.execute(delete(T_CLASS_COHORTS).where(T_CLASS_COHORTS.c.class_id == cid))
        s.execute(delete(T_CLASSES).where(T_CLASSES.c.id == cid))


def _fresh_class(s: Session, db: Database, b: Budget, n: int) -> int:
    """Id of the history-less class of budget ``b``, with ``n`` more users counted in it."""
    sig = fresh_signature(b)
    q = select(T_CLASSES.c.id).where(T_CLASSES.c.signature == sig)
    if not db.is_sqlite:
        q = q.with_for_update()
    cid = s.execute(q).scalar_one_or_none()
    if cid is not None:
        s.execute(update(T_CLASSES).where(T_CLASSES.c.id == cid).values(n_users=T_CLASSES.c.n_users + n))
        return cid
    spent = cv.zeros()
    row = dict(signature=sig, epsilon=b.epsilon, delta=b.delta, policy=b.policy, filter_order=b.filter_order,
               filter_budget=b.filter_budget, grid_version=cv.GRID_VERSION, spent=cv.to_bytes(spent), n_charges=0,
               n_users=n, updated_at=now(), **status_columns(b, spent))
    return s.execute(insert(T_CLASSES).values(**row).returning(T_CLASSES.c.id)).scalar_one()


# ----------------------------------------------------------------------------------------------
# budgets


def make_budget(epsilon: float, delta: float, policy: str, filter_order: float | None,
                planned_event: dict | None) -> Budget:
    """Validate a budget request and compute the filter's designated order and B(α_f)."""
    if policy == "declared":
        if filter_order is not None or planned_event is not None:
            raise Invalid("filter_order and planned_event apply to policy 'filter' only; drop them or "
                          "set policy to 'filter'")
        return Budget(float(epsilon), float(delta), "declared")
    if policy != "filter":  # pragma: no cover - schema enforces the literal
        raise Invalid(f"policy must be 'declared' or 'filter', got {policy!r}")
    if (filter_order is None) == (planned_event is None):
        raise Invalid("policy 'filter' needs exactly one of filter_order (a Rényi order of the ledger's grid) "
                      "or planned_event (the service picks the order minimising ε for it)")
    if filter_order is not None:
        i = cv.grid_index(filter_order)
        if i is None:
            raise Invalid(f"filter_order {filter_order!r} is not an order of the ledger's grid (version "
                          f"{cv.GRID_VERSION}); choose one of {cv.ORDERS.tolist()}")
        order = float(cv.ORDERS[i])
    else:
        cost = event_cost(planned_event)
        try:
            order = cv.pick_filter_order(cost, delta)
        except ValueError as exc:
            raise Invalid(str(exc)) from None
    fb = cv.filter_budget(epsilon, delta, order)
    if not fb > 0:
        raise Invalid(f"the filter budget B(α_f) = ε − (log(1/δ) + (α_f−1)·log(1−1/α_f) − log α_f)/(α_f−1) "
                      f"is {fb:.6g} ≤ 0 at α_f = {order:g} for ε = {epsilon:g}, δ = {delta:g}: raise ε or δ, "
                      f"or choose another order")
    return Budget(float(epsilon), float(delta), "filter", order, fb)


def event_cost(event_dict: dict) -> np.ndarray:
    """The event's RDP curve (× count) on the ledger grid; accountant errors become 422."""
    try:
        ev = accountant.event_from_dict(event_dict)
        cost = np.asarray(accountant.event_rdp(ev, cv.ORDERS), dtype=float)
    except accountant.AccountantError as exc:
        raise Invalid(str(exc)) from None
    if np.any(np.isnan(cost)) or np.any(cost < 0) or not np.any(np.isfinite(cost)):
        raise Invalid("the event's RDP curve is unbounded at every order of the ledger's grid; it cannot be charged")
    return cost


def _user_view(r) -> dict:
    out = {
        "user_id": r["user_id"],
        "budget": {"epsilon": r["epsilon"], "delta": r["delta"]},
        "policy": r["policy"],
        "spent": {"epsilon": r["spent_epsilon"], "order": r["spent_order"]},
        "remaining_epsilon": r["remaining_epsilon"],
        "charges": int(r["n_charges"]),
    }
    if r["policy"] == "filter":
        out["filter"] = {"order": r["filter_order"], "order_budget": r["filter_budget"]}
    out["grid_version"] = r["grid_version"]
    out["created_at"] = iso(r["created_at"])
    out["updated_at"] = iso(r["updated_at"])
    return out


_USER_VIEW_COLS = (T_USERS.c.user_id, T_USERS.c.created_at, T_USERS.c.updated_at, T_CLASSES.c.epsilon,
                   T_CLASSES.c.delta, T_CLASSES.c.policy, T_CLASSES.c.filter_order, T_CLASSES.c.filter_budget,
                   T_CLASSES.c.spent_epsilon, T_CLASSES.c.spent_order, T_CLASSES.c.remaining_epsilon,
                   T_CLASSES.c.n_charges, T_CLASSES.c.grid_version)


def get_user(db: Database, user_id: str) -> dict:
    with db.read() as s:
        r = s.execute(select(*_USER_VIEW_COLS).join(T_CLASSES, T_CLASSES.c.id == T_USERS.c.class_id)
                      .where(T_USERS.c.user_id == user_id)).mappings().first()
    if r is None:
        raise NotFound(f"unknown user {user_id!r}; create it with PUT /v1/users/{{user_id}}")
    return _user_view(r)


def put_user(db: Database, user_id: str, b: Budget) -> tuple[bool, dict]:
    """Create (True) or update (False) a user's budget."""

    def unit(s: Session) -> bool:
        users = _users_by_ext(s, [user_id])
        if not users:
            ts = now()
            cid = _fresh_class(s, db, b, 1)
            s.execute(insert(T_USERS).values(user_id=user_id, class_id=cid, created_at=ts, updated_at=ts))
            return True
        pk_class, classes, cmap = _lock_users_classes(s, db, users)
        (pk, cid), = pk_class.items()
        c = classes[cid]
        if budget_of(c) == b:
            return False

        def mutate(c: dict) -> dict:
            return dict(epsilon=b.epsilon, delta=b.delta, policy=b.policy, filter_order=b.filter_order,
                        filter_budget=b.filter_budget, **status_columns(b, cv.from_bytes(c["spent"])))

        token = f"budget|{b.epsilon!r}|{b.delta!r}|{b.policy}|{b.filter_order!r}"
        _transition(s, db, classes, {cid: [pk]}, token, mutate, cmap)
        s.execute(update(T_USERS).where(T_USERS.c.id == pk).values(updated_at=now()))
        return False

    created = _run_retrying_integrity(db, unit)
    return created, get_user(db, user_id)


def _run_retrying_integrity(db: Database, unit: Callable[[Session], Any], attempts: int = 8):
    """Run a unit; a unique-constraint race (two creators at once) reruns it."""
    for i in range(attempts):
        try:
            return db.run_write(unit)
        except IntegrityError:
            if i == attempts - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def bulk_create_users(db: Database, user_ids: Sequence[str], b: Budget, on_conflict: str = "error") -> dict:
    ids = list(dict.fromkeys(user_ids))

    def unit(s: Session) -> dict:
        existing = _users_by_ext(s, ids)
        if existing and on_conflict == "error":
            names = [u for u in ids if u in existing]
            raise Conflict(f"{len(names)} user(s) already exist; nothing was created (use on_conflict='skip' "
                           "to create only the new ones)", existing_users=names[:MAX_LISTED],
                           existing_count=len(names))
        new = [u for u in ids if u not in existing]
        if new:
            cid = _fresh_class(s, db, b, len(new))
            ts = now()
            _insert_rows(s, db, T_USERS, [{"user_id": u, "class_id": cid, "created_at": ts, "updated_at": ts}
                                          for u in new], chunk=20000)
        return {"created": len(new), "skipped": len(ids) - len(new), "requested": len(user_ids)}

    return _run_retrying_integrity(db, unit)


# ----------------------------------------------------------------------------------------------
# charges


def request_hash(users: list[str] | None, cohort: str | None, event: dict) -> str:
    return _sha(json.dumps({"users": users, "cohort": cohort, "event": event}, sort_keys=True,
                           separators=(",", ":")))


def _replay(row, req_hash: str, key: str) -> dict:
    if row.request_hash != req_hash:
        raise Conflict(f"idempotency key {key!r} was already used for a different request; nothing was charged. "
                       "Use a new key for a new charge", status="conflict")
    return {"charge_id": str(row.id), **json.loads(row.response), "replayed": True}


def _find_key(s: Session, key: str):
    return s.execute(select(T_CHARGES.c.id, T_CHARGES.c.request_hash, T_CHARGES.c.response)
                     .where(T_CHARGES.c.idempotency_key == key)).first()


def charge(db: Database, *, event: dict, actor: Actor, users: list[str] | None = None, cohort: str | None = None,
           idempotency_key: str | None = None, cost_event: dict | None = None) -> dict:
    """Admit and record a charge, all or nothing; raises Refused/NotFound/Conflict/Invalid.

    ``event`` is stored as received; ``cost_event`` (default: ``event``) is the accountant's form."""
    if (users is None) == (cohort is None):
        raise Invalid("give exactly one of 'users' (a list of user ids) or 'cohort' (a cohort id)")
    cost = event_cost(cost_event if cost_event is not None else event)
    req_hash = request_hash(users, cohort, event)
    ulist = list(dict.fromkeys(users)) if users is not None else None

    def check_key(s: Session) -> dict | None:
        if idempotency_key is None:
            return None
        row = _find_key(s, idempotency_key)
        return _replay(row, req_hash, idempotency_key) if row is not None else None

    def unit(s: Session) -> dict:
        prior = check_key(s)
        if prior is not None:
            return prior
        if cohort is not None:
            return _charge_cohort(s, db, cohort, cost, event, req_hash, idempotency_key, actor, check_key)
        return _charge_users(s, db, ulist, cost, event, req_hash, idempotency_key, actor, check_key)

    for attempt in range(8):
        try:
            return db.run_write(unit)
        except IntegrityError:
            # the unique idempotency key lost a race: the other request committed first
            if idempotency_key is not None:
                with db.read() as s:
                    row = _find_key(s, idempotency_key)
                if row is not None:
                    return _replay(row, req_hash, idempotency_key)
            if attempt == 7:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _charge_body(event: dict, n_users: int, cohort: str | None, key: str | None, actor: Actor, ts: datetime,
                 cost: np.ndarray) -> dict:
    return {
        "status": "admitted",
        "users": n_users,
        "cohort": cohort,
        "idempotency_key": key,
        "event": event,
        "grid_version": cv.GRID_VERSION,
        "charged_by": {"name": actor.name, "role": actor.role},
        "created_at": iso(ts),
    }


def _insert_charge(s: Session, *, key, req_hash, event, cost, n_users, actor, ts, body, cohort_pk=None,
                   cohort_seq=None, cumulative=None) -> int:
    return s.execute(insert(T_CHARGES).values(
        idempotency_key=key, request_hash=req_hash, event=json.dumps(event, sort_keys=True),
        grid_version=cv.GRID_VERSION, curve=cv.to_bytes(cost), cohort_id=cohort_pk, cohort_seq=cohort_seq,
        cohort_cumulative=cv.to_bytes(cumulative) if cumulative is not None else None, n_users=n_users,
        actor_name=actor.name, actor_role=actor.role, created_at=ts, response=json.dumps(body),
    ).returning(T_CHARGES.c.id)).scalar_one()


def _refusal(n: int, names: list[str]) -> Refused:
    return Refused(
        f"charge refused: {n} user(s) cannot afford this event within their budget; nothing was recorded. "
        "Refusals depend only on the event's public parameters and the public budgets, never on data.",
        refused_users=names[:MAX_LISTED], refused_count=n)


def _charge_users(s, db, ulist, cost, event, req_hash, key, actor, check_key) -> dict:
    users = _users_by_ext(s, ulist)
    missing = [u for u in ulist if u not in users]
    if missing:
        raise NotFound(f"unknown user(s) {missing[:MAX_LISTED]}; nothing was charged. Create them first "
                       "(PUT /v1/users/{user_id})", unknown_users=missing[:MAX_LISTED], unknown_count=len(missing))
    pk_class, classes, cmap = _lock_users_classes(s, db, users)
    prior = check_key(s)
    if prior is not None:
        return prior
    groups: dict[int, list[int]] = defaultdict(list)
    for pk, cid in pk_class.items():
        groups[cid].append(pk)
    cids = list(classes)
    mat = cv.add_up(np.vstack([cv.from_bytes(classes[cid]["spent"]) for cid in cids]), cost[None, :])
    ok, statuses = cv.evaluate([budget_of(classes[cid]) for cid in cids], mat)
    after = {cid: (mat[k], statuses[k]) for k, cid in enumerate(cids)}
    refused_classes = {cid for k, cid in enumerate(cids) if not ok[k]}
    if refused_classes:
        refused_pks = {pk for cid in refused_classes for pk in groups[cid]}
        names = [u for u in ulist if users[u][0] in refused_pks]
        raise _refusal(len(names), names)
    ts = now()
    body = _charge_body(event, len(ulist), None, key, actor, ts, cost)
    charge_pk = _insert_charge(s, key=key, req_hash=req_hash, event=event, cost=cost, n_users=len(ulist),
                               actor=actor, ts=ts, body=body)
    _insert_rows(s, db, T_CHARGE_USERS, [{"charge_id": charge_pk, "user_pk": pk} for pk in sorted(pk_class)],
                 chunk=20000)

    def mutate(c: dict) -> dict:
        a, st = after[c["id"]]
        return dict(spent=cv.to_bytes(a), n_charges=c["n_charges"] + 1, **_status_dict(st))

    _transition(s, db, classes, groups, f"charge|{charge_pk}", mutate, cmap)
    return {"charge_id": str(charge_pk), **body, "replayed": False}


def _charge_cohort(s, db, cohort, cost, event, req_hash, key, actor, check_key) -> dict:
    q = select(T_COHORTS).where(T_COHORTS.c.cohort_id == cohort)
    if not db.is_sqlite:
        q = q.with_for_update()
    co = s.execute(q).mappings().first()
    if co is None:
        raise NotFound(f"unknown cohort {cohort!r}; nothing was charged. Create it with POST /v1/cohorts")
    prior = check_key(s)
    if prior is not None:
        return prior
    q = (select(T_CLASSES).join(T_CLASS_COHORTS, T_CLASS_COHORTS.c.class_id == T_CLASSES.c.id)
         .where(T_CLASS_COHORTS.c.cohort_id == co["id"]).order_by(T_CLASSES.c.id))
    if not db.is_sqlite:
        q = q.with_for_update(of=T_CLASSES)
    classes = [dict(r) for r in s.execute(q).mappings()]
    updates, refused = [], []
    if classes:
        after = cv.add_up(np.vstack([cv.from_bytes(c["spent"]) for c in classes]), cost[None, :])
        ok, statuses = cv.evaluate([budget_of(c) for c in classes], after)
        for c, a, good, st in zip(classes, after, ok, statuses):
            if not good:
                refused.append(c)
            elif not refused:
                updates.append({"_id": c["id"], "spent": cv.to_bytes(a), "n_charges": c["n_charges"] + 1,
                                "updated_at": None, **_status_dict(st)})
    if refused:
        n = sum(int(c["n_users"]) for c in refused)
        names = [r.user_id for r in s.execute(
            select(T_USERS.c.user_id).where(T_USERS.c.class_id.in_([c["id"] for c in refused]))
            .order_by(T_USERS.c.id).limit(MAX_LISTED))]
        raise _refusal(n, names)
    ts = now()
    seq = int(co["seq"]) + 1
    cum = cv.add_up(cv.from_bytes(co["cumulative"]), cost)
    n_members = int(co["n_members"])
    body = _charge_body(event, n_members, cohort, key, actor, ts, cost)
    body["cohort_round"] = seq
    charge_pk = _insert_charge(s, key=key, req_hash=req_hash, event=event, cost=cost, n_users=n_members,
                               actor=actor, ts=ts, body=body, cohort_pk=co["id"], cohort_seq=seq, cumulative=cum)
    s.execute(update(T_COHORTS).where(T_COHORTS.c.id == co["id"]).values(seq=seq, cumulative=cv.to_bytes(cum)))
    if updates:
        for u in updates:
            u["updated_at"] = ts
        _update_rows(s, db, T_CLASSES, updates)
    return {"charge_id": str(charge_pk), **body, "replayed": False}


# ----------------------------------------------------------------------------------------------
# charge listings, history, recomputation


def _user_row(s: Session, user_id: str):
    r = s.execute(select(T_USERS.c.id, T_USERS.c.class_id).where(T_USERS.c.user_id == user_id)).first()
    if r is None:
        raise NotFound(f"unknown user {user_id!r}")
    return r


def _user_charges_query(user_pk: int, cols):
    explicit = (select(*cols).select_from(T_CHARGES.join(T_CHARGE_USERS, T_CHARGE_USERS.c.charge_id == T_CHARGES.c.id))
                .where(T_CHARGE_USERS.c.user_pk == user_pk))
    m = T_MEMBERSHIPS
    via_cohort = (select(*cols).select_from(T_CHARGES.join(m, and_(
        m.c.cohort_id == T_CHARGES.c.cohort_id, T_CHARGES.c.cohort_seq > m.c.join_seq,
        or_(m.c.leave_seq.is_(None), T_CHARGES.c.cohort_seq <= m.c.leave_seq))))
        .where(m.c.user_pk == user_pk))
    return union_all(explicit, via_cohort).subquery()


def list_user_charges(db: Database, user_id: str, limit: int = 100, offset: int = 0) -> dict:
    c = T_CHARGES.c
    cols = (c.id, c.idempotency_key, c.event, c.grid_version, c.cohort_id, c.cohort_seq, c.n_users,
            c.actor_name, c.actor_role, c.created_at)
    with db.read() as s:
        u = _user_row(s, user_id)
        sq = _user_charges_query(u.id, cols)
        total = s.execute(select(func.count()).select_from(sq)).scalar_one()
        rows = s.execute(select(sq).order_by(sq.c.id).limit(limit).offset(offset)).mappings().all()
        cohort_names = {}
        cids = {r["cohort_id"] for r in rows if r["cohort_id"] is not None}
        if cids:
            cohort_names = dict(s.execute(select(T_COHORTS.c.id, T_COHORTS.c.cohort_id)
                                          .where(T_COHORTS.c.id.in_(cids))).all())
    items = [{
        "charge_id": str(r["id"]),
        "event": json.loads(r["event"]),
        "idempotency_key": r["idempotency_key"],
        "cohort": cohort_names.get(r["cohort_id"]),
        "cohort_round": r["cohort_seq"],
        "users": int(r["n_users"]),
        "grid_version": r["grid_version"],
        "charged_by": {"name": r["actor_name"], "role": r["actor_role"]},
        "created_at": iso(r["created_at"]),
    } for r in rows]
    return {"user_id": user_id, "total": int(total), "limit": limit, "offset": offset, "charges": items}


def _user_curves(s: Session, user_pk: int) -> list[tuple[int, datetime, np.ndarray]]:
    """The user's charge curves, oldest first, on the current grid (older grids projected)."""
    c = T_CHARGES.c
    sq = _user_charges_query(user_pk, (c.id, c.created_at, c.curve, c.grid_version))
    rows = s.execute(select(sq).order_by(sq.c.id)).all()
    grids = {}
    if any(r.grid_version != cv.GRID_VERSION for r in rows):
        grids = {g.version: cv.from_bytes(g.orders) for g in s.execute(select(T_GRIDS.c.version, T_GRIDS.c.orders))}
    return [(r.id, r.created_at, cv.from_bytes(r.curve) if r.grid_version == cv.GRID_VERSION
             else project_curve(grids[r.grid_version], cv.from_bytes(r.curve))) for r in rows]


def recompute_user(db: Database, user_id: str) -> dict:
    """Running curve vs the exactly rounded recomputation from the charge log."""
    with db.read() as s:
        u = _user_row(s, user_id)
        c = s.execute(select(T_CLASSES).where(T_CLASSES.c.id == u.class_id)).mappings().one()
        curves = _user_curves(s, u.id)
    running = cv.from_bytes(c["spent"])
    recomputed = cv.exact_sum([x[2] for x in curves])
    ok = bool(np.all((running >= recomputed) | (np.isinf(running) & np.isinf(recomputed))))
    b = budget_of(c)
    st = cv.status(b, recomputed)
    with np.errstate(invalid="ignore"):
        rel = np.where(recomputed > 0, (running - recomputed) / np.where(recomputed > 0, recomputed, 1), 0.0)
    return {
        "user_id": user_id,
        "orders": cv.ORDERS.tolist(),
        "running": finite_list(running),
        "recomputed": finite_list(recomputed),
        "running_not_below_recomputed": ok,
        "max_relative_excess": float(np.nanmax(np.where(np.isfinite(rel), rel, 0.0))) if rel.size else 0.0,
        "charges_in_log": len(curves),
        "charges_counted": int(c["n_charges"]),
        "recomputed_spent": {"epsilon": st.spent_epsilon, "order": st.spent_order},
        "budget": {"epsilon": b.epsilon, "delta": b.delta},
        "policy": b.policy,
    }


def _subsample(n: int, limit: int) -> list[int]:
    if n <= limit:
        return list(range(n))
    idx = np.unique(np.round(np.linspace(0, n - 1, limit)).astype(int))
    return idx.tolist()


def user_history(db: Database, user_id: str, limit: int = 500) -> dict:
    with db.read() as s:
        u = _user_row(s, user_id)
        c = s.execute(select(T_CLASSES).where(T_CLASSES.c.id == u.class_id)).mappings().one()
        curves = _user_curves(s, u.id)
    b = budget_of(c)
    run = cv.zeros()
    cum = []
    for _, _, curve in curves:
        run = cv.add_up(run, curve)
        cum.append(run)
    points = []
    for i in _subsample(len(curves), limit):
        st = cv.status(b, cum[i])
        points.append({"charge_id": str(curves[i][0]), "at": iso(curves[i][1]), "charges": i + 1,
                       "spent_epsilon": st.spent_epsilon, "order": st.spent_order,
                       "remaining_epsilon": st.remaining_epsilon})
    return {"user_id": user_id, "budget": {"epsilon": b.epsilon, "delta": b.delta}, "policy": b.policy,
            "charges": len(curves), "points": points}


def nearest_exhaustion(db: Database, limit: int = 20) -> dict:
    out = []
    with db.read() as s:
        classes = s.execute(select(T_CLASSES).where(T_CLASSES.c.n_users > 0)
                            .order_by(T_CLASSES.c.remaining_fraction, T_CLASSES.c.id).limit(limit)).mappings().all()
        for c in classes:
            if len(out) >= limit:
                break
            names = s.execute(select(T_USERS.c.user_id).where(T_USERS.c.class_id == c["id"])
                              .order_by(T_USERS.c.id).limit(limit - len(out))).scalars().all()
            for n in names:
                out.append({"user_id": n, "budget": {"epsilon": c["epsilon"], "delta": c["delta"]},
                            "policy": c["policy"],
                            "spent": {"epsilon": c["spent_epsilon"], "order": c["spent_order"]},
                            "remaining_epsilon": c["remaining_epsilon"],
                            "remaining_fraction": c["remaining_fraction"], "charges": int(c["n_charges"])})
    return {"users": out}


# ----------------------------------------------------------------------------------------------
# cohorts


def _cohort_view(co) -> dict:
    return {"cohort_id": co["cohort_id"], "description": co["description"], "members": int(co["n_members"]),
            "rounds": int(co["seq"]), "grid_version": co["grid_version"], "created_at": iso(co["created_at"])}


def get_cohort(db: Database, cohort_id: str) -> dict:
    with db.read() as s:
        co = s.execute(select(T_COHORTS).where(T_COHORTS.c.cohort_id == cohort_id)).mappings().first()
    if co is None:
        raise NotFound(f"unknown cohort {cohort_id!r}")
    return _cohort_view(co)


def create_cohort(db: Database, cohort_id: str, description: str | None) -> dict:
    def unit(s: Session) -> None:
        if s.execute(select(T_COHORTS.c.id).where(T_COHORTS.c.cohort_id == cohort_id)).first() is not None:
            raise Conflict(f"cohort {cohort_id!r} already exists")
        s.execute(insert(T_COHORTS).values(cohort_id=cohort_id, description=description, seq=0,
                                           grid_version=cv.GRID_VERSION, cumulative=cv.to_bytes(cv.zeros()),
                                           n_members=0, created_at=now()))

    try:
        _run_retrying_integrity(db, unit, attempts=1)
    except IntegrityError:
        raise Conflict(f"cohort {cohort_id!r} already exists") from None
    return get_cohort(db, cohort_id)


def change_members(db: Database, cohort_id: str, user_ids: Sequence[str], join: bool) -> dict:
    """Add (join=True) or remove members, all or nothing. Already-members / non-members are skipped."""
    ids = list(dict.fromkeys(user_ids))

    def unit(s: Session) -> dict:
        co = s.execute(select(T_COHORTS.c.id).where(T_COHORTS.c.cohort_id == cohort_id)).first()
        if co is None:
            raise NotFound(f"unknown cohort {cohort_id!r}")
        users = _users_by_ext(s, ids)
        missing = [u for u in ids if u not in users]
        if missing:
            raise NotFound(f"unknown user(s) {missing[:MAX_LISTED]}; no membership was changed",
                           unknown_users=missing[:MAX_LISTED], unknown_count=len(missing))
        pk_class, classes, cmap = _lock_users_classes(s, db, users, exclusive_cohort=co.id)
        cq = select(T_COHORTS).where(T_COHORTS.c.id == co.id)
        if not db.is_sqlite:
            cq = cq.with_for_update()
        crow = s.execute(cq).mappings().one()
        seq = int(crow["seq"])
        groups: dict[int, list[int]] = defaultdict(list)
        for pk, cid in pk_class.items():
            member = co.id in cmap.get(cid, set())
            if member != join:
                groups[cid].append(pk)
        affected = sorted(pk for g in groups.values() for pk in g)
        ts = now()
        if join:
            _transition(s, db, classes, groups, f"join|{co.id}|{seq}", lambda c: {}, cmap, add_cohort=co.id)
            _insert_rows(s, db, T_MEMBERSHIPS, [{"cohort_id": co.id, "user_pk": pk, "join_seq": seq,
                                                 "joined_at": ts} for pk in affected], chunk=20000)
        else:
            _transition(s, db, classes, groups, f"leave|{co.id}|{seq}", lambda c: {}, cmap, remove_cohort=co.id)
            m = T_MEMBERSHIPS
            for ch in chunks(affected, 5000):
                s.execute(update(m).where(and_(m.c.cohort_id == co.id, m.c.user_pk.in_(ch), m.c.leave_seq.is_(None)))
                          .values(leave_seq=seq, left_at=ts))
        n = len(affected)
        s.execute(update(T_COHORTS).where(T_COHORTS.c.id == co.id)
                  .values(n_members=T_COHORTS.c.n_members + (n if join else -n)))
        return {"changed": n, "unchanged": len(ids) - n}

    res = db.run_write(unit)
    view = get_cohort(db, cohort_id)
    key = "added" if join else "removed"
    other = "already_members" if join else "not_members"
    return {"cohort": view, key: res["changed"], other: res["unchanged"]}


def list_members(db: Database, cohort_id: str, limit: int = 100, offset: int = 0, history: bool = False) -> dict:
    m = T_MEMBERSHIPS
    with db.read() as s:
        co = s.execute(select(T_COHORTS.c.id).where(T_COHORTS.c.cohort_id == cohort_id)).first()
        if co is None:
            raise NotFound(f"unknown cohort {cohort_id!r}")
        q = (select(T_USERS.c.user_id, m.c.join_seq, m.c.leave_seq, m.c.joined_at, m.c.left_at)
             .join(T_USERS, T_USERS.c.id == m.c.user_pk).where(m.c.cohort_id == co.id))
        if not history:
            q = q.where(m.c.leave_seq.is_(None))
        rows = s.execute(q.order_by(m.c.id).limit(limit).offset(offset)).all()
    return {"cohort_id": cohort_id, "limit": limit, "offset": offset, "members": [
        {"user_id": r.user_id, "joined_after_round": r.join_seq, "left_after_round": r.leave_seq,
         "joined_at": iso(r.joined_at), "left_at": iso(r.left_at)} for r in rows]}


def user_cohorts(db: Database, user_id: str) -> dict:
    m = T_MEMBERSHIPS
    with db.read() as s:
        u = _user_row(s, user_id)
        rows = s.execute(select(T_COHORTS.c.cohort_id, m.c.join_seq, m.c.leave_seq, m.c.joined_at, m.c.left_at)
                         .join(T_COHORTS, T_COHORTS.c.id == m.c.cohort_id).where(m.c.user_pk == u.id)
                         .order_by(m.c.id)).all()
    return {"user_id": user_id, "memberships": [
        {"cohort_id": r.cohort_id, "joined_after_round": r.join_seq, "left_after_round": r.leave_seq,
         "joined_at": iso(r.joined_at), "left_at": iso(r.left_at), "active": r.leave_seq is None} for r in rows]}


def cohort_history(db: Database, cohort_id: str, delta: float, limit: int = 500) -> dict:
    """ε at ``delta`` of the cohort's cumulative curve after each round (for a member present from
    the start; later joiners have spent the difference of two points)."""
    with db.read() as s:
        co = s.execute(select(T_COHORTS.c.id).where(T_COHORTS.c.cohort_id == cohort_id)).first()
        if co is None:
            raise NotFound(f"unknown cohort {cohort_id!r}")
        rows = s.execute(select(T_CHARGES.c.id, T_CHARGES.c.cohort_seq, T_CHARGES.c.created_at,
                                T_CHARGES.c.cohort_cumulative)
                         .where(T_CHARGES.c.cohort_id == co.id).order_by(T_CHARGES.c.cohort_seq)).all()
    b = Budget(1.0, delta)
    points = []
    for i in _subsample(len(rows), limit):
        r = rows[i]
        st = cv.status(b, cv.from_bytes(r.cohort_cumulative))
        points.append({"charge_id": str(r.id), "round": r.cohort_seq, "at": iso(r.created_at),
                       "spent_epsilon": st.spent_epsilon, "order": st.spent_order})
    return {"cohort_id": cohort_id, "delta": delta, "rounds": len(rows), "points": points}


def ledger_totals(db: Database) -> dict:
    with db.read() as s:
        return {
            "users": s.execute(select(func.count()).select_from(T_USERS)).scalar_one(),
            "classes": s.execute(select(func.count()).select_from(T_CLASSES)).scalar_one(),
            "cohorts": s.execute(select(func.count()).select_from(T_COHORTS)).scalar_one(),
            "memberships": s.execute(select(func.count()).select_from(T_MEMBERSHIPS)).scalar_one(),
            "charges": s.execute(select(func.count()).select_from(T_CHARGES)).scalar_one(),
        }


__all__ = [
    "Actor", "Conflict", "Invalid", "LedgerError", "NotFound", "Refused", "bulk_create_users", "change_members",
    "charge", "cohort_history", "create_cohort", "ensure_grid", "event_cost", "get_cohort", "get_user",
    "list_members", "list_user_charges", "make_budget", "nearest_exhaustion", "put_user", "recompute_user",
    "user_cohorts", "user_history", "ledger_totals",
]
