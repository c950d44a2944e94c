"""Everything that differs between SQLite and PostgreSQL, in one place.

* Row locks: ``SELECT … FOR UPDATE`` / ``FOR SHARE`` on PostgreSQL; on SQLite every write unit
  begins with ``BEGIN IMMEDIATE`` (one writer at a time, :mod:`app.db.session`), so
  :func:`locked` leaves the statement unchanged.
* Bulk writes: executemany on SQLite; on PostgreSQL one ``INSERT … SELECT * FROM unnest(…)`` or
  ``UPDATE … FROM unnest(…)`` statement per chunk (a single round trip).
* Long id lists are bound as expanding ``IN`` parameters in chunks (SQLite's variable limit).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from sqlalchemy import Select, Table, bindparam, insert, text, update
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import BindParameter

from app.db.session import Database

CHUNK = 2000
T = TypeVar("T")


def chunks(seq: Sequence[T], n: int = CHUNK) -> Iterable[Sequence[T]]:
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


def ids(name: str) -> BindParameter:
    """An expanding IN-list parameter: compiled once, the list is bound at execution."""
    return bindparam(name, expanding=True)


def locked(q: Select, db: Database, *, shared: bool = False, of: Any = None) -> Select:
    """``q`` with a row lock (``FOR UPDATE``, or ``FOR SHARE`` when ``shared``) on PostgreSQL;
    unchanged on SQLite, where the write unit already holds the database write lock."""
    if db.is_sqlite:
        return q
    return q.with_for_update(read=shared, of=of)


def _array_type(table: Table, col: str, s: Session) -> str:
    """The PostgreSQL array element type of ``col`` (a column collation does not go in a cast)."""
    typ = table.c[col].type
    if getattr(typ, "collation", None):
        typ = typ.copy()
        typ.collation = None
    return typ.compile(dialect=s.get_bind().dialect)


def insert_rows(s: Session, db: Database, table: Table, rows: list[dict], chunk: int = 5000) -> None:
    """Insert many rows: executemany on SQLite; one ``INSERT … SELECT * FROM unnest(...)`` per
    chunk on PostgreSQL."""
    if not rows:
        return
    if db.is_sqlite:
        for ch in chunks(rows, 20000):
            s.execute(insert(table), list(ch))
        return
    cols = list(rows[0])
    sel = ", ".join(f"CAST(:{c} AS {_array_type(table, c, s)}[])" for c in cols)
    stmt = text(f"INSERT INTO {table.name} ({', '.join(cols)}) SELECT * FROM unnest({sel})")
    for ch in chunks(rows, chunk):
        s.execute(stmt, {c: [r[c] for r in ch] for c in cols})


def update_rows(s: Session, db: Database, table: Table, rows: list[dict]) -> None:
    """``UPDATE table SET … WHERE id = row["_id"]`` for many rows with one column set: executemany
    on SQLite; one ``UPDATE … FROM unnest(...)`` per chunk on PostgreSQL."""
    if not rows:
        return
    cols = [c for c in rows[0] if c != "_id"]
    if db.is_sqlite:
        s.execute(update(table).where(table.c.id == bindparam("_id")).values({c: bindparam(c) for c in cols}), rows)
        return
    arrays = ", ".join([f"CAST(:_id AS {_array_type(table, 'id', s)}[])"]
                       + [f"CAST(:{c} AS {_array_type(table, c, s)}[])" for c in cols])
    sets = ", ".join(f"{c} = v.{c}" for c in cols)
    stmt = text(f"UPDATE {table.name} SET {sets} FROM unnest({arrays}) AS v(_id, {', '.join(cols)}) "
                f"WHERE {table.name}.id = v._id")
    for ch in chunks(rows, 5000):
        s.execute(stmt, {c: [r[c] for r in ch] for c in ["_id", *cols]})
