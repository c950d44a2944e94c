"""The computation commands (``rdp``, ``epsilon``, ``delta``, ``calibrate``): the service's
computation functions run in this process, no server needed."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from app.cli.errors import CliError
from app.cli.events import events_from_args, flag_event, json_event, pydantic_msg
from app.cli.output import event_str, notes_text, orders_line, table

if TYPE_CHECKING:
    from app.core.compute import GuaranteeAnswer


def cmd_rdp(a: argparse.Namespace) -> tuple[Mapping[str, Any], str]:
    from app.core.compute import rdp_result

    evs = events_from_args(a)
    if len(evs) != 1:
        raise CliError("rdp takes exactly one event")
    res = rdp_result(evs[0], a.orders, a.bound)
    rows = [(o, r, s) for o, r, s in zip(res["orders"], res["rdp"], res["sources"])]
    text = (
        f"event: {event_str(res['event'])}\nbound: {res['bound']}\norders: {orders_line(res)}\n\n"
        + table(rows, ("order α", "RDP ε(α)", "source"))
        + notes_text(res)
    )
    return res, text


def _guarantee_text(res: GuaranteeAnswer, events: list[dict[str, Any]]) -> str:
    rows = [
        ("epsilon (ε)", res["epsilon"]),
        ("delta (δ)", res["delta"]),
        ("route", res["route"]),
        ("optimal order (α) of the RDP route", "—" if res["order"] is None else res["order"]),
        ("orders", orders_line(res) if res["orders"] else "—"),
    ]
    text = table(rows)
    route_rows = [
        (
            v["route"],
            "—" if v["epsilon"] is None else v["epsilon"],
            "—" if v["delta"] is None else v["delta"],
            v["note"],
        )
        for v in res["routes"]
    ]
    text += "\n\n" + table(route_rows, ("route", "ε", "δ", "note"))
    ev_rows = [(str(s["event"] + 1), event_str(events[s["event"]]), s["bound"]) for s in res["sources"]]
    text += "\n\n" + table(ev_rows, ("#", "event", "bound at the optimal order"))
    return text + notes_text(res)


def cmd_epsilon(a: argparse.Namespace) -> tuple[Mapping[str, Any], str]:
    from app.core.compute import epsilon_result

    evs = events_from_args(a)
    res = epsilon_result(evs, a.delta, a.orders, accounting=a.accounting)
    return res, _guarantee_text(res, evs)


def cmd_delta(a: argparse.Namespace) -> tuple[Mapping[str, Any], str]:
    from app.core.compute import delta_result

    evs = events_from_args(a)
    res = delta_result(evs, a.epsilon, a.orders, accounting=a.accounting)
    return res, _guarantee_text(res, evs)


def cmd_calibrate(a: argparse.Namespace) -> tuple[Mapping[str, Any], str]:
    from pydantic import ValidationError

    from app.core.compute import calibrate_result
    from app.schemas.compute import CalibrateRequest

    if a.target_epsilon is None:
        raise CliError("give the target ε: --epsilon E (with --delta D)")
    ev: dict[str, Any] | None
    if a.event:
        ev = json_event(a.event)
    else:
        ev = flag_event(a)
        if ev is None:
            raise CliError("give the event without the unknown: --mechanism … (or --event '{…}')")
    try:
        req = CalibrateRequest.model_validate(
            {
                "solve_for": a.solve_for,
                "target": {"epsilon": a.target_epsilon, "delta": a.delta},
                "event": ev,
                **({"orders": a.orders} if a.orders else {}),
                "accounting": a.accounting,
            }
        )
    except ValidationError as exc:
        raise CliError(f"invalid calibration request:\n{pydantic_msg(exc)}") from None

    t0 = time.monotonic()
    last: dict[str, Any] = {"t": t0, "eps": None, "fraction": 0.0}

    def say(msg: str) -> None:
        if not a.quiet:
            print(msg, file=sys.stderr, flush=True)

    def progress(fraction: float, eps: float) -> None:
        last.update(eps=eps, fraction=fraction)
        now = time.monotonic()
        if now - last["t"] >= 0.5:
            last["t"] = now
            say(f"  {100 * fraction:5.1f}%  last ε = {eps:.6g}  ({now - t0:.1f} s)")

    done = threading.Event()

    def ticker() -> None:  # a single slow evaluation still shows signs of life
        while not done.wait(2.0):
            say(f"  … still searching ({time.monotonic() - t0:.0f} s)")

    say(f"calibrating {req.solve_for} for ε ≤ {req.target.epsilon:g} at δ = {req.target.delta:g} …")
    th = threading.Thread(target=ticker, daemon=True)
    th.start()
    try:
        res = calibrate_result(
            req.event.to_accountant(),
            req.solve_for,
            req.target.epsilon,
            req.target.delta,
            req.orders,
            progress=progress,
            accounting=req.accounting,
        )
    finally:
        done.set()
    say(f"done in {time.monotonic() - t0:.2f} s ({res.get('evaluations', '?')} curve evaluations)")
    value = res["value"] if isinstance(res["value"], int) else f"{res['value']:.10g}"
    rows = [
        (f"{res['solve_for']} (solved)", value),
        ("epsilon (ε)", f"{res['epsilon']:.10g}"),
        ("target ε", res["target"]["epsilon"]),
        ("delta (δ)", res["delta"]),
        ("route", res["route"]),
        ("optimal order (α) of the RDP route", res["order"]),
    ]
    if res.get("direction"):
        rows.append(("direction", res["direction"]))
    if res.get("at_limit"):
        rows.append(("at limit of domain", "yes"))
    text = f"event: {event_str(res['event'])}\n\n" + table(rows) + notes_text(res)
    return res, text
