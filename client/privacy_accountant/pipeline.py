"""Pay-before-you-run training pipelines on the privacy ledger (SDK helper).

A pipeline charges each round's privacy cost to the ledger *before* the round touches any data,
and records what the round produced. When the ledger refuses (a member would exceed its budget)
nothing is charged, no data is used, and the pipeline stops cleanly.

    from privacy_accountant import AccountantClient
    from privacy_accountant.pipeline import Pipeline

    with AccountantClient(url, api_key=key) as client:
        pipe = Pipeline(client, cohort="population", run_id="run-7", probe_user="user-0")
        for rnd in pipe.rounds(100, events=lambda t: mech.events(n=n, k=k)):
            update = train_one_round(...)          # runs only after the charge was admitted
            rnd.record(loss=..., accuracy=...)
        print(pipe.stopped, pipe.history[-1].spent_epsilon)

or, one round at a time, ``with pipe.round(events) as rnd: ...`` (raises :class:`RoundRefused`
before the body runs when the ledger refuses).

The helper needs only ``charge``/``charge_cohort``/``get_user`` of the SDK client and reads their
answers either as dicts or as typed models (attribute access), so it works with either form of
the SDK; it moves next to the client (``privacy_accountant.pipeline``, importing
``.client``/``.errors``) without other changes.

Each round's charge carries the idempotency key ``{run_id}-round-{t}``: re-running a run id after a
crash replays the rounds already charged (``replayed``) instead of charging them twice. A round's
events are charged as ONE request when they are a single event; several events of one round are
charged one by one (each all-or-nothing; a refusal part-way leaves the earlier ones charged and
stops the pipeline — give one event per round, e.g. a ``subsampled`` event with inner events, when
that matters).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from privacy_accountant._api import event_json
from privacy_accountant.client import AccountantClient
from privacy_accountant.errors import BudgetExceeded

#: events as dicts or as ``accountant`` event objects (sent as their ``to_dict()``)
EventsFn = Callable[[int], Sequence[Any]]


def field_of(obj: Any, *path: str) -> Any:
    """``obj[a][b]…`` for dict answers, ``obj.a.b…`` for typed ones (None when absent)."""
    for name in path:
        if obj is None:
            return None
        obj = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return obj


class RoundRefused(Exception):
    """The ledger refused a round's charge: nothing of it was recorded and no data may be used."""

    def __init__(self, round_index: int, refusal: BudgetExceeded):
        super().__init__(f"round {round_index} refused by the ledger: {refusal.message}")
        self.round = round_index
        self.refusal = refusal


@dataclass
class Round:
    """One admitted round: its index, the events charged, the ledger's answers, and its outcome
    (:meth:`record`); ``spent_epsilon``/``remaining_epsilon`` of the probe user after the round."""

    index: int
    events: list[dict[str, Any]]
    charges: list[Any] = field(default_factory=list)
    outcome: dict[str, Any] = field(default_factory=dict)
    spent_epsilon: float | None = None
    remaining_epsilon: float | None = None
    started_at: float = 0.0
    seconds: float = 0.0
    error: str | None = None

    @property
    def replayed(self) -> bool:
        return bool(self.charges) and all(field_of(c, "replayed") for c in self.charges)

    def record(self, **outcome: Any) -> None:
        """Attach what the round produced (loss, accuracy, …)."""
        self.outcome.update(outcome)


class Pipeline:
    """Charges rounds to ``cohort`` (or to the listed ``users``) through ``client`` before they run.

    ``probe_user``: a user whose spent ε is read after each round (every member of a cohort has the
    same history, so any member shows the round's cost). ``history``: the admitted rounds;
    ``stopped``: the refusal that ended the run (None while it may continue)."""

    def __init__(
        self,
        client: AccountantClient,
        *,
        run_id: str,
        cohort: str | None = None,
        users: Sequence[str] | None = None,
        probe_user: str | None = None,
    ):
        if (cohort is None) == (users is None):
            raise ValueError("give exactly one of cohort or users")
        self.client = client
        self.run_id = run_id
        self.cohort = cohort
        self.users = None if users is None else list(users)
        self.probe_user = probe_user if probe_user is not None else (self.users[0] if self.users else None)
        self.history: list[Round] = []
        self.stopped: RoundRefused | None = None
        self._next = 1

    def _charge(self, event: dict[str, Any], key: str) -> Any:
        if self.cohort is not None:
            return self.client.charge_cohort(event, self.cohort, idempotency_key=key)
        return self.client.charge(event, self.users, idempotency_key=key)

    def charge(self, events: Sequence[Any]) -> Round:
        """Charge the next round's events (raises :class:`RoundRefused`, recording it in ``stopped``)."""
        t = self._next
        rnd = Round(index=t, events=[event_json(e) for e in events], started_at=time.time())
        for i, ev in enumerate(rnd.events):
            key = f"{self.run_id}-round-{t}" + (f"-{i}" if len(rnd.events) > 1 else "")
            try:
                rnd.charges.append(self._charge(ev, key))
            except BudgetExceeded as exc:
                self.stopped = RoundRefused(t, exc)
                raise self.stopped from None
        self._next += 1
        return rnd

    def _finish(self, rnd: Round, t0: float) -> None:
        rnd.seconds = time.monotonic() - t0
        if self.probe_user is not None:
            user = self.client.get_user(self.probe_user)
            rnd.spent_epsilon = float(field_of(user, "spent", "epsilon"))
            rnd.remaining_epsilon = float(field_of(user, "remaining_epsilon"))
        self.history.append(rnd)

    @contextlib.contextmanager
    def round(self, events: Sequence[Any]) -> Iterator[Round]:
        """Charge, then run the body; the round (with its outcome, or the body's error) is appended to
        ``history`` either way once charged — a charged round is spent even if the body fails."""
        rnd = self.charge(events)
        t0 = time.monotonic()
        try:
            yield rnd
        except GeneratorExit:  # the caller stopped iterating rounds(): the round itself finished
            self._finish(rnd, t0)
            raise
        except BaseException as exc:
            rnd.error = f"{type(exc).__name__}: {exc}"
            self._finish(rnd, t0)
            raise
        self._finish(rnd, t0)

    def rounds(self, count: int, events: EventsFn | Sequence[Any]) -> Iterator[Round]:
        """Up to ``count`` rounds: each is charged before it is yielded (``events(t)`` or a fixed list);
        iteration ends quietly when the ledger refuses one (see ``stopped``)."""
        for _ in range(count):
            evs = events(self._next) if callable(events) else events
            try:
                with self.round(evs) as rnd:
                    yield rnd
            except RoundRefused:
                return

    def curve(self, key: str) -> tuple[list[float | None], list[Any]]:
        """(spent ε after each round, the outcome ``key`` of each round) — for plots."""
        pts = [(r.spent_epsilon, r.outcome.get(key)) for r in self.history if key in r.outcome]
        return [p[0] for p in pts], [p[1] for p in pts]


__all__ = ["Pipeline", "Round", "RoundRefused", "field_of"]
