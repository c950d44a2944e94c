"""Keyset (cursor) paging of the listings: users, a user's charges, a cohort's members, cohorts.

A page of a listing may end with a ``next_cursor``: an opaque token naming the position of its
last row — the listing's sort key and the row's tie-breakers — as base64url JSON
``{"k": listing, "v": [key, …]}``. The next page is the rows strictly after that position in the
listing's order, found through an index: its cost does not grow with how deep it is, and rows
inserted or removed meanwhile never make a row appear twice or get skipped (a row that moves
within the order, e.g. a user charged meanwhile under a remaining-ε sort, is listed where it is
when its page is read).

``offset`` still pages from the start, but the database walks every skipped row, so it is
bounded by :data:`MAX_OFFSET`; deeper pages follow the cursor. A cursor that is not one this
listing handed out, or that does not decode, is a :class:`BadPage` (``400``).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from app.ledger.errors import BadPage
from app.ledger.records import Page

T = TypeVar("T")

#: the deepest ``offset`` a listing accepts; deeper pages follow ``next_cursor``
MAX_OFFSET = 10_000
#: the longest cursor accepted (the longest a listing hands out is well below: ids ≤ 256 characters)
MAX_CURSOR = 4096

#: characters no id holds (app.schemas.ledger.ID_PATTERN): NUL cannot even be bound on PostgreSQL
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FOLLOW = "start without cursor and pass each page's next_cursor as cursor to get the next page"


def encode(listing: str, values: Sequence[Any]) -> str:
    """The cursor of the position ``values`` in ``listing`` (datetimes as ISO 8601 text)."""
    vals = [v.isoformat() if isinstance(v, datetime) else v for v in values]
    raw = json.dumps({"k": listing, "v": vals}, separators=(",", ":"), ensure_ascii=False)
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def decode(cursor: str, listing: str, kinds: Sequence[str]) -> list[Any]:
    """The position a cursor of ``listing`` names, each value checked against ``kinds``
    (``"str"``, ``"int"``, ``"float"``, ``"time?"`` — a datetime or null)."""
    if len(cursor) > MAX_CURSOR:
        raise BadPage(
            f"cursor is longer than {MAX_CURSOR} characters: not a cursor of this listing; {_FOLLOW}"
        )
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        body = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, RecursionError):
        raise BadPage(f"cursor {cursor[:64]!r} does not decode (base64url JSON): {_FOLLOW}") from None
    if not isinstance(body, dict) or not isinstance(body.get("v"), list) or len(body["v"]) != len(kinds):
        raise BadPage(f"cursor {cursor[:64]!r} is not a cursor of this listing: {_FOLLOW}")
    if body.get("k") != listing:
        raise BadPage(
            f"cursor {cursor[:64]!r} belongs to another listing or sort ({body.get('k')!r}, this is "
            f"{listing!r}): keep the sort and filters of the page that handed it out, or {_FOLLOW}"
        )
    try:
        return [_value(v, k) for v, k in zip(body["v"], kinds)]
    except (TypeError, ValueError):
        raise BadPage(f"cursor {cursor[:64]!r} holds values of the wrong type: {_FOLLOW}") from None


def _value(v: Any, kind: str) -> Any:
    if kind == "str" and isinstance(v, str) and len(v) <= 256 and not _CONTROL.search(v):
        v.encode("utf-8")  # a lone surrogate (UnicodeEncodeError, a ValueError) is no stored id
        return v
    if kind == "int" and isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63:
        return v
    if kind == "float" and isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v):
        return float(v)
    if kind == "time?" and (v is None or isinstance(v, str)):
        return None if v is None else datetime.fromisoformat(v)
    raise TypeError(kind)


def check(offset: int, cursor: str | None) -> None:
    """Refuse an ``offset`` above :data:`MAX_OFFSET`, or one given with a cursor."""
    if cursor is not None and offset:
        raise BadPage(
            "give either cursor or offset, not both: the cursor already names where the page starts"
        )
    if offset > MAX_OFFSET:
        raise BadPage(
            f"offset {offset} is above the maximum {MAX_OFFSET} (a deep offset makes the database walk "
            f"every skipped row): page with the cursor instead — {_FOLLOW}"
        )


def page(
    rows: list[T], total: int, limit: int, offset: int, listing: str, position: Callable[[T], Sequence[Any]]
) -> Page[T]:
    """The page of ``rows`` (up to ``limit`` + 1 fetched: one more means more follow, and the
    ``limit``-th row's ``position`` becomes the next cursor)."""
    nxt = encode(listing, position(rows[limit - 1])) if len(rows) > limit else None
    return Page(items=rows[:limit], total=total, limit=limit, offset=offset, next_cursor=nxt)
