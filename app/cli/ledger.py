"""Ledger commands of ``privacy-accountant``, on the SDK (:mod:`privacy_accountant`), against a
running service:

    privacy-accountant users list [--prefix P] [--policy declared|filter] [--remaining-below X] [--sort S]
    privacy-accountant users show USER
    privacy-accountant users put USER --epsilon 4 --delta 1e-6 [--policy filter --filter-order 8]
    privacy-accountant charges list [USER] [--cohort C] [--since T] [--until T]
    privacy-accountant charges create --users alice,bob --mechanism gaussian --noise-multiplier 2
    privacy-accountant cohorts list | show COHORT | add COHORT [USER …] | remove COHORT USER …

``--url`` (or ``ACCOUNTANT_URL``) and ``--api-key`` (or ``ACCOUNTANT_API_KEY``) say where and as
whom. Output is a table; ``--json`` prints the service's JSON answer instead.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from app.cli.errors import CliError
from app.cli.events import events_from_args, json_event
from app.cli.output import table

if TYPE_CHECKING:  # the SDK is imported when a ledger command runs, not at start
    from privacy_accountant import AccountantClient, BudgetExceeded
    from privacy_accountant import models as m


class _Cursor(Protocol):
    """A page of a listing (users, charges, cohorts, members)."""

    @property
    def next_cursor(self) -> str | None: ...


class _Page(_Cursor, Protocol):
    """A page that counts its matches."""

    @property
    def total(self) -> int: ...

    @property
    def offset(self) -> int: ...


DEFAULT_URL = "http://127.0.0.1:8000"
EXIT_REFUSED = 3

CONNECTION_HELP = """\
connection:
  --url URL          the service (default: $ACCOUNTANT_URL or http://127.0.0.1:8000)
  --api-key KEY      a key of the service's ACCOUNTANT_API_KEYS (default: $ACCOUNTANT_API_KEY);
                     viewer keys read, pipeline keys also charge, admin keys also manage users and cohorts

exit status: 0 done, 1 the service said no (the message says why) or could not be reached,
2 invalid command line, 3 a charge was refused (nothing recorded)"""


class LedgerCliError(Exception):
    """A message for the terminal and the exit status to leave with."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------------------------------ helpers
def _client(a: argparse.Namespace) -> AccountantClient:
    from privacy_accountant import AccountantClient

    key = a.api_key or os.environ.get("ACCOUNTANT_API_KEY")
    if not key:
        raise LedgerCliError(
            "the ledger needs an API key: give --api-key KEY or set ACCOUNTANT_API_KEY "
            "(a key of the service's ACCOUNTANT_API_KEYS)",
            2,
        )
    url = a.url or os.environ.get("ACCOUNTANT_URL") or DEFAULT_URL
    return AccountantClient(url, api_key=key, retries=1)


def _f(x: Any, digits: int = 6) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def _time(t: datetime | None) -> str:
    return "never" if t is None else t.strftime("%Y-%m-%d %H:%M:%S UTC")


def _page_line(page: _Page, shown: int, after: str | None = None) -> str:
    if not page.total:
        return "no matches"
    where = f"{shown} after the cursor" if after else f"{page.offset + 1}–{page.offset + shown}"
    return f"{where} of {page.total}" + _next_page(page)


def _next_page(page: _Cursor) -> str:
    """Where the next page starts: the page's cursor (any depth, as cheap as the first page)."""
    return f" (next page: --cursor {page.next_cursor})" if page.next_cursor else ""


def _event_text(ev: m.EventData | Mapping[str, Any]) -> str:
    d: dict[str, Any] = ev.to_dict() if hasattr(ev, "to_dict") else dict(ev)
    mechanism: str = d.get("mechanism", "?")
    return mechanism + " " + " ".join(f"{k}={_f(v)}" for k, v in d.items() if k != "mechanism")


def _user_rows(u: m.User) -> list[tuple[str, str]]:
    rows = [
        ("user", u.user_id),
        ("policy", u.policy),
        ("budget", f"ε = {_f(u.budget.epsilon)} at δ = {_f(u.budget.delta)}"),
        ("spent ε", _f(u.spent.epsilon) + (f" (at order α = {_f(u.spent.order)})" if u.spent.order else "")),
        ("remaining ε", _f(u.remaining_epsilon)),
        ("charges", str(u.charges)),
    ]
    if u.filter is not None:
        rows.append(("filter", f"α_f = {_f(u.filter.order)}, B(α_f) = {_f(u.filter.order_budget)}"))
    last_charge_at = getattr(u, "last_charge_at", None)  # listed users carry it
    if last_charge_at is not None:
        rows.append(("last charge", _time(last_charge_at)))
    rows.append(("created", _time(u.created_at)))
    return rows


# ------------------------------------------------------------------------------------------ users
def users_list(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    with _client(a) as c:
        page = c.list_users(
            a.limit,
            a.offset,
            prefix=a.prefix,
            policy=a.policy,
            remaining_below=a.remaining_below,
            sort=a.sort,
            cursor=a.cursor,
        )
    rows = [
        (
            u.user_id,
            u.policy,
            _f(u.budget.epsilon),
            _f(u.budget.delta),
            _f(u.spent.epsilon),
            _f(u.remaining_epsilon),
            str(u.charges),
            _time(u.last_charge_at),
        )
        for u in page.items
    ]
    header = ("user", "policy", "budget ε", "δ", "spent ε", "remaining ε", "charges", "last charge")
    text = (table(rows, header) + "\n\n" if rows else "") + _page_line(page, len(rows), a.cursor)
    return page.to_dict(), text


def users_show(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    with _client(a) as c:
        u = c.get_user(a.user)
        cohorts = c.user_cohorts(a.user)
    text = table(_user_rows(u))
    active = [m.cohort_id for m in cohorts.memberships if m.active]
    if active:
        text += "\ncohorts       " + ", ".join(active)
    return u.to_dict(), text


def users_put(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    planned = json_event(a.planned_event) if a.planned_event else None
    if a.policy == "declared" and (a.filter_order is not None or planned is not None):
        raise CliError("--filter-order and --planned-event belong to --policy filter")
    with _client(a) as c:
        u = c.put_user(
            a.user,
            budget={"epsilon": a.epsilon, "delta": a.delta},
            policy=a.policy,
            filter_order=a.filter_order,
            planned_event=planned,
        )
    return u.to_dict(), table(_user_rows(u))


# ------------------------------------------------------------------------------------------ charges
def charges_list(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    filters = dict(cohort=a.cohort, since=a.since, until=a.until)
    page: m.ChargePage
    with _client(a) as c:
        if a.user is not None and not any(filters.values()):
            page = c.user_charges(a.user, a.limit, a.offset, cursor=a.cursor)
        else:  # the whole ledger (GET /v1/charges), filtered
            page = c.list_charges(a.limit, a.offset, user=a.user, cursor=a.cursor, **filters)
    rows = [
        (
            ch.charge_id,
            _time(ch.created_at),
            _event_text(ch.event),
            f"cohort {ch.cohort} round {ch.cohort_round}" if ch.cohort else f"{ch.users} user(s)",
            ch.charged_by.name,
        )
        for ch in page.charges
    ]
    header = ("charge", "when", "event", "through", "charged by")
    text = (table(rows, header) + "\n\n" if rows else "") + _page_line(page, len(rows), a.cursor)
    return page.to_dict(), text


def charges_create(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    users = [u for group in a.users or [] for u in group.split(",") if u]
    if bool(users) == bool(a.cohort):
        raise CliError("give the users to charge (--users alice,bob) or a cohort (--cohort NAME), not both")
    events = events_from_args(a)
    if len(events) != 1:
        raise CliError("a charge is one event: give one --event or one set of event flags")
    from privacy_accountant import BudgetExceeded

    with _client(a) as c:
        try:
            r = c.charge(events[0], users or None, cohort=a.cohort, idempotency_key=a.idempotency_key)
        except BudgetExceeded as exc:
            raise LedgerCliError(_refusal_text(exc), EXIT_REFUSED) from None
    return r.to_dict(), table(_charge_rows(r))


def _charge_rows(r: m.Charge) -> list[tuple[str, str]]:
    replayed = " (replayed: this key was already used; not charged again)" if r.replayed else ""
    rows = [
        ("charge", r.charge_id),
        ("status", "admitted" + replayed),
        ("event", _event_text(r.event)),
        ("users charged", str(r.users)),
        ("idempotency key", r.idempotency_key or "–"),
    ]
    if r.cohort:
        rows.append(("cohort", f"{r.cohort} round {r.cohort_round}"))
    return rows


def _refusal_text(exc: BudgetExceeded) -> str:
    rows = [(r.user_id, _f(r.remaining_epsilon), _f(r.cost_epsilon)) for r in exc.refusals]
    more = exc.refused_count - len(rows)
    # the service's message names the refusal itself ("charge refused: …"): said once
    head = (
        exc.message
        if exc.message.lower().startswith(("refused", "charge refused"))
        else f"refused: {exc.message}"
    )
    text = f"{head}\n\n" + table(rows, ("user", "remaining ε", "this event would cost ε"))
    return text + (f"\n… and {more} more" if more > 0 else "")


# ------------------------------------------------------------------------------------------ cohorts
def cohorts_list(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    with _client(a) as c:
        page = c.list_cohorts(a.limit, a.offset, prefix=a.prefix, cursor=a.cursor)
    rows = [
        (x.cohort_id, str(x.members), str(x.rounds), _time(x.created_at), x.description or "")
        for x in page.items
    ]
    text = (
        table(rows, ("cohort", "members", "rounds", "created", "description")) + "\n\n" if rows else ""
    ) + _page_line(page, len(rows), a.cursor)
    return page.to_dict(), text


def cohorts_show(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    with _client(a) as c:
        x = c.get_cohort(a.cohort)
        members = (
            c.cohort_members(a.cohort, limit=a.limit, offset=a.offset, cursor=a.cursor) if a.members else None
        )
    rows = [
        ("cohort", x.cohort_id),
        ("description", x.description or "–"),
        ("members", str(x.members)),
        ("rounds charged", str(x.rounds)),
        ("created", _time(x.created_at)),
    ]
    text = table(rows)
    res = x.to_dict()
    if members is not None:
        res["member_list"] = members.to_dict()
        mrows = [(m.user_id, str(m.joined_after_round), _time(m.joined_at)) for m in members.members]
        text += "\n\n" + table(mrows, ("member", "joined after round", "joined")) + _next_page(members)
    return res, text


def _user_set(a: argparse.Namespace) -> dict[str, Any]:
    if a.users and a.count is not None:
        raise CliError("give user ids or --id-prefix/--start/--count, not both")
    if a.count is not None:
        return {"id_range": {"prefix": a.id_prefix or "", "start": a.start, "count": a.count}}
    return {"users": list(a.users)} if a.users else {}


def cohorts_add(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from privacy_accountant import NotFound

    who = _user_set(a)
    lines = []
    with _client(a) as c:
        try:
            c.get_cohort(a.cohort)
        except NotFound:
            c.create_cohort(a.cohort, a.description)
            lines.append(f"created cohort {a.cohort}")
        if not who:
            res = c.get_cohort(a.cohort).to_dict()
            return res, "\n".join(lines or [f"cohort {a.cohort} exists; give user ids to add members"])
        r = c.add_members(a.cohort, **who)
    lines.append(
        f"added {r.added} member(s) to {a.cohort} ({r.already_members} already members); now {r.cohort.members}"
    )
    return r.to_dict(), "\n".join(lines)


def cohorts_remove(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    who = _user_set(a)
    if not who:
        raise CliError("give the user ids to remove (or --id-prefix/--start/--count)")
    with _client(a) as c:
        r = c.remove_members(a.cohort, **who)
    return r.to_dict(), (
        f"removed {r.removed} member(s) from {a.cohort} ({r.not_members} were not members); now {r.cohort.members}"
    )


# ------------------------------------------------------------------------------------------ parser
def _connection(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("connection")
    g.add_argument("--url", help="the service's base URL (default: $ACCOUNTANT_URL or http://127.0.0.1:8000)")
    g.add_argument(
        "--api-key",
        help="an API key of the service (default: $ACCOUNTANT_API_KEY); viewer keys read, pipeline keys "
        "also charge, admin keys also manage users and cohorts",
    )
    p.add_argument("--json", action="store_true", help="print the service's JSON answer instead of a table")


def _paging(p: argparse.ArgumentParser, default: int = 50) -> None:
    p.add_argument("--limit", type=int, default=default, help=f"page size (default {default})")
    p.add_argument(
        "--offset",
        type=int,
        default=0,
        help="items to skip (default 0; the service refuses deep offsets: follow --cursor instead)",
    )
    p.add_argument(
        "--cursor", help="start after this cursor: the 'next page: --cursor …' of the previous page"
    )


def _sub(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help_: str,
    func: Callable[[argparse.Namespace], tuple[dict[str, Any], str]],
    **kw: Any,
) -> argparse.ArgumentParser:
    p = sub.add_parser(
        name, help=help_, description=help_, formatter_class=argparse.RawDescriptionHelpFormatter, **kw
    )
    p.set_defaults(func=func)
    return p


def add_ledger_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    add_event_flags: Callable[[argparse.ArgumentParser], None],
) -> None:
    """``users``, ``charges`` and ``cohorts`` with their subcommands."""
    epilog = CONNECTION_HELP
    users = sub.add_parser("users", help="list, show or create/update users of a running service")
    us = users.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = _sub(us, "list", "list users: filter, sort, page", users_list, epilog=epilog)
    p.add_argument("--prefix", help="only user ids starting with this")
    p.add_argument("--policy", choices=["declared", "filter"], help="only users with this policy")
    p.add_argument("--remaining-below", type=float, metavar="EPSILON", help="only users with less ε left")
    p.add_argument(
        "--sort",
        default="user_id",
        choices=["user_id", "remaining", "-remaining", "spent", "-spent", "last_charge", "-last_charge"],
        help="order (a leading - is descending; default user_id)",
    )
    _paging(p)
    _connection(p)
    p = _sub(us, "show", "a user's budget, spent and remaining ε, and cohorts", users_show, epilog=epilog)
    p.add_argument("user", help="user id")
    _connection(p)
    p = _sub(
        us,
        "put",
        "create a user, or change its budget (the spent ε is kept); admin key",
        users_put,
        epilog=epilog,
    )
    p.add_argument("user", help="user id")
    p.add_argument("--epsilon", type=float, required=True, help="budget ε (total ε at the budget's δ)")
    p.add_argument("--delta", type=float, required=True, help="budget δ")
    p.add_argument(
        "--policy",
        choices=["declared", "filter"],
        default="declared",
        help="declared (default): releases planned in advance; filter: a Rényi filter, safe for adaptively "
        "chosen releases (needs --filter-order or --planned-event)",
    )
    p.add_argument("--filter-order", type=float, metavar="ALPHA", help="filter: the order α_f (a grid order)")
    p.add_argument(
        "--planned-event", metavar="JSON", help="filter: pick α_f as the best order for this event"
    )
    _connection(p)

    charges = sub.add_parser(
        "charges",
        help="list charges (all, a user's, a cohort's), or charge an event (all or nothing)",
    )
    cs = charges.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = _sub(
        cs,
        "list",
        "the ledger's charges, oldest first: all of them, or a user's, a cohort's, in a time range",
        charges_list,
        epilog=epilog,
    )
    p.add_argument("user", nargs="?", help="only the charges that reached this user (default: every charge)")
    p.add_argument("--cohort", help="only this cohort's rounds")
    p.add_argument(
        "--since", metavar="TIME", help="charged at or after TIME (ISO 8601, UTC unless an offset)"
    )
    p.add_argument("--until", metavar="TIME", help="charged before TIME (ISO 8601, UTC unless an offset)")
    _paging(p, 100)
    _connection(p)
    p = _sub(
        cs,
        "create",
        "charge one event to users or to a cohort, all or nothing; pipeline or admin key. A refusal "
        "records nothing and exits with status 3, listing each refused user's remaining ε",
        charges_create,
        epilog=epilog,
    )
    p.add_argument("--users", action="append", metavar="IDS", help="comma-separated user ids (repeatable)")
    p.add_argument("--cohort", help="or: every current member of this cohort")
    p.add_argument(
        "--idempotency-key",
        metavar="KEY",
        help="the same key again returns the first answer and never charges twice (default: a new key)",
    )
    add_event_flags(p)
    _connection(p)

    cohorts = sub.add_parser("cohorts", help="list and show cohorts, add or remove members")
    hs = cohorts.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = _sub(hs, "list", "list cohorts by id", cohorts_list, epilog=epilog)
    p.add_argument("--prefix", help="only cohort ids starting with this")
    _paging(p)
    _connection(p)
    p = _sub(hs, "show", "a cohort's size and rounds (--members: who is in it)", cohorts_show, epilog=epilog)
    p.add_argument("cohort", help="cohort id")
    p.add_argument("--members", action="store_true", help="list the current members too")
    _paging(p, 100)
    _connection(p)
    for name, func, text in (
        ("add", cohorts_add, "add members (the cohort is created first when it does not exist); admin key"),
        ("remove", cohorts_remove, "remove members (their past rounds stay charged); admin key"),
    ):
        p = _sub(hs, name, text, func, epilog=epilog)
        p.add_argument("cohort", help="cohort id")
        p.add_argument("users", nargs="*", metavar="USER", help="user ids")
        p.add_argument("--id-prefix", metavar="PREFIX", help="or a range of ids PREFIX0, PREFIX1, …")
        p.add_argument("--start", type=int, default=0, help="first number of the range (default 0)")
        p.add_argument("--count", type=int, help="how many ids in the range")
        if name == "add":
            p.add_argument("--description", help="description of a cohort created here")
        _connection(p)
