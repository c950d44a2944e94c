"""Readable text of the commands' answers: numbers, events, tables."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def fmt(x: object) -> str:
    if x is None:
        return "unbounded"
    if isinstance(x, (list, dict)):
        return json.dumps(x, separators=(",", ":"))
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def event_str(e: dict[str, Any]) -> str:
    mechanism: str = e["mechanism"]
    return mechanism + " " + " ".join(f"{k}={fmt(v)}" for k, v in e.items() if k != "mechanism")


def table(rows: Sequence[Sequence[object]], header: Sequence[str] | None = None) -> str:
    cells = [[c if isinstance(c, str) else fmt(c) for c in r] for r in rows]
    allr = ([list(header)] if header else []) + cells
    widths = [max(len(r[i]) for r in allr) for i in range(len(allr[0]))]
    lines = []
    if header:
        lines.append(_line(header, widths))
        lines.append("  ".join("-" * w for w in widths))
    lines.extend(_line(r, widths) for r in cells)
    return "\n".join(lines)


def _line(cells: Sequence[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()


def orders_line(res: Mapping[str, Any]) -> str:
    if res.get("default_orders"):
        return (
            f"default grid, version {res.get('grid_version')} ({len(res['orders'])} orders, "
            f"{fmt(res['orders'][0])} … {fmt(res['orders'][-1])})"
        )
    return (
        ", ".join(fmt(o) for o in res["orders"])
        if len(res["orders"]) <= 8
        else f"{len(res['orders'])} orders, {fmt(res['orders'][0])} … {fmt(res['orders'][-1])}"
    )


def notes_text(res: Mapping[str, Any]) -> str:
    notes = res.get("notes") or []
    return "".join(f"\nnote: {n}" for n in notes)
