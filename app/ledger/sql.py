"""Everything that differs between SQLite and PostgreSQL, in one place.

* Row locks: ``SELECT … FOR UPDATE`` / ``FOR SHARE`` on PostgreSQL; on SQLite every write unit
  begins with ``BEGIN IMMEDIATE`` (one writer at a time, :mod:`app.db.session`), so
  :func:`locked` leaves the statement unchanged.
* Bulk writes: executemany on SQLite; on PostgreSQL one ``INSERT … SELECT * FROM unnest(…)`` or
  ``UPDATE … FROM unnest(…)`` statement per chunk (a single round trip).
* Long id lists are bound as expanding ``IN`` parameters in chunks (SQLite's variable limit).
* Snapshots for multi-statement reads (a listing's page and its total): PostgreSQL reads run
  ``REPEATABLE READ`` (:func:`snapshot`); a SQLite read transaction already reads one snapshot.
* Time buckets (:func:`time_bucket`): ``date_trunc`` on PostgreSQL, ``strftime`` on SQLite.
* External ids compare by code point on both (the column collation, :mod:`app.db.models`), so
  an id prefix is the index range of :func:`prefix_range` on both.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone
from itertools import islice
from typing import Any, TypeAlias, TypeVar

from sqlalchemy import ColumnElement, Select, String, Table, and_, bindparam, func, insert, text, true, update
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import BindParameter, TextClause
from typing_extensions import TypeVarTuple, Unpack

from app.db.session import Database
from app.ledger.records import Bucket

CHUNK = 2000
T = TypeVar("T")
#: the column types of a statement
Ts = TypeVarTuple("Ts")
#: a statement whose columns are not typed (Core table columns)
AnySelect: TypeAlias = Select[Unpack[tuple[Any, ...]]]


def chunks(seq: Sequence[T], n: int = CHUNK) -> Iterable[Sequence[T]]:
    for i in range(0, len(seq), n):
        yield seq[i : i + n]


def ids(name: str) -> BindParameter[Any]:
    """An expanding IN-list parameter: compiled once, the list is bound at execution."""
    return bindparam(name, expanding=True)


def locked(
    q: Select[Unpack[Ts]], db: Database, *, shared: bool = False, of: Any = None
) -> Select[Unpack[Ts]]:
    """``q`` with a row lock (``FOR UPDATE``, or ``FOR SHARE`` when ``shared``) on PostgreSQL;
    unchanged on SQLite, where the write unit already holds the database write lock."""
    if db.is_sqlite:
        return q
    return q.with_for_update(read=shared, of=of)


def _array_type(table: Table, col: str, s: Session) -> str:
    """The PostgreSQL array element type of ``col`` (a column collation does not go in a cast)."""
    dialect = s.get_bind().dialect
    typ = table.c[col].type.dialect_impl(dialect)  # the type this dialect uses (variants: app.db.models)
    if isinstance(typ, String) and typ.collation:
        typ = String(typ.length)
    return typ.compile(dialect=dialect)


def batches(items: Iterable[T], n: int) -> Iterator[list[T]]:
    """``items`` in lists of ``n`` (the last one shorter), drawn lazily: at most ``n`` at a time."""
    it = iter(items)
    while batch := list(islice(it, n)):
        yield batch


#: rows per INSERT chunk: the rows of one chunk are the only ones built at a time (bulk writes'
#: memory does not grow with the number of rows, README "Limits")
INSERT_CHUNK = 5000


def insert_rows(
    s: Session, db: Database, table: Table, rows: Iterable[dict[str, Any]], chunk: int = INSERT_CHUNK
) -> None:
    """Insert many rows, ``chunk`` at a time (``rows`` may be a generator: only one chunk of them
    exists at once): executemany on SQLite; one ``INSERT … SELECT * FROM unnest(...)`` per chunk on
    PostgreSQL."""
    stmt: Any = None
    for ch in batches(rows, chunk):
        if db.is_sqlite:
            s.execute(insert(table), ch)
            continue
        cols = list(ch[0])
        if stmt is None:
            sel = ", ".join(f"CAST(:{c} AS {_array_type(table, c, s)}[])" for c in cols)
            stmt = text(f"INSERT INTO {table.name} ({', '.join(cols)}) SELECT * FROM unnest({sel})")
        s.execute(stmt, {c: [r[c] for r in ch] for c in cols})


def update_rows(s: Session, db: Database, table: Table, rows: list[dict[str, Any]]) -> None:
    """``UPDATE table SET … WHERE id = row["_id"]`` for many rows with one column set: executemany
    on SQLite; one ``UPDATE … FROM unnest(...)`` per chunk on PostgreSQL."""
    if not rows:
        return
    cols = [c for c in rows[0] if c != "_id"]
    if db.is_sqlite:
        s.execute(
            update(table).where(table.c.id == bindparam("_id")).values({c: bindparam(c) for c in cols}), rows
        )
        return
    stmt = _pg_update_from_arrays(s, table, cols)
    for ch in chunks(rows, 5000):
        s.execute(stmt, {c: [r[c] for r in ch] for c in ["_id", *cols]})


def _pg_update_from_arrays(s: Session, table: Table, cols: list[str]) -> TextClause:
    """PostgreSQL: ``UPDATE table SET c = v.c, … FROM unnest(:_id, :c, …) AS v WHERE id = v._id``,
    one array parameter per column."""
    arrays = ", ".join(
        [f"CAST(:_id AS {_array_type(table, 'id', s)}[])"]
        + [f"CAST(:{c} AS {_array_type(table, c, s)}[])" for c in cols]
    )
    sets = ", ".join(f"{c} = v.{c}" for c in cols)
    return text(
        f"UPDATE {table.name} SET {sets} FROM unnest({arrays}) AS v(_id, {', '.join(cols)}) "
        f"WHERE {table.name}.id = v._id"
    )


def snapshot(s: Session, db: Database) -> None:
    """Make the statements of this (fresh) read session see one snapshot of the database."""
    if not db.is_sqlite:
        s.connection(execution_options={"isolation_level": "REPEATABLE READ"})


def prefix_successor(prefix: str) -> str | None:
    """The smallest string greater than every string that starts with ``prefix`` (code-point
    order), or None when there is none (a prefix of only U+10FFFF)."""
    chars = list(prefix)
    while chars:
        c = ord(chars[-1]) + 1
        if c <= 0x10FFFF:
            chars[-1] = chr(0xE000 if 0xD800 <= c <= 0xDFFF else c)  # no surrogates in stored text
            return "".join(chars)
        chars.pop()
    return None


def prefix_range(col: Any, prefix: str) -> ColumnElement[bool]:
    """``col`` starts with ``prefix``, as an index range: prefix ≤ col < prefix_successor(prefix).

    Exact under code-point order: s starts with p iff p ≤ s and s < p with its last character
    incremented (the first position where s and p differ decides both comparisons)."""
    if not prefix:
        return true()
    hi = prefix_successor(prefix)
    return and_(col >= prefix, col < hi) if hi is not None else col >= prefix


def unindexed(col: Any) -> Any:
    """An ordering by ``col`` that no index provides (``col || ''``, the same order on both
    databases): the planner then applies the other conditions through their indexes first and
    sorts what they keep, instead of walking the index of ``col`` past every row they reject."""
    return col.op("||")("")


def time_bucket(col: Any, unit: Bucket, db: Database) -> Any:
    """The start of the UTC hour or day of a timestamp column (a string on SQLite; read it with
    :func:`bucket_start`)."""
    if db.is_sqlite:
        return func.strftime("%Y-%m-%d %H:00:00" if unit == "hour" else "%Y-%m-%d 00:00:00", col)
    return func.date_trunc(unit, func.timezone("UTC", col))


def bucket_start(value: Any) -> datetime:
    """A :func:`time_bucket` value as an aware UTC datetime."""
    ts = datetime.fromisoformat(value) if isinstance(value, str) else value
    return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts.astimezone(timezone.utc)
