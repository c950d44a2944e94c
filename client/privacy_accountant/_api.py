"""The service's endpoints, described once for the sync and the async client.

Each public method builds a :class:`Call` (HTTP method, path, body, query, retry rule, result
model) and hands it to ``self._send``: :class:`privacy_accountant.AccountantClient` sends it and
returns the typed result; :class:`privacy_accountant.AsyncAccountantClient` returns a coroutine
that does. Method signatures mirror the HTTP bodies (``put_user(user_id, budget={"epsilon": …,
"delta": …}, policy=…)``); see docs/sdk.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from privacy_accountant import models as m
from privacy_accountant.dp_events import UnsupportedDpEvent, dp_event_dicts, is_dp_event

#: the pure computation POSTs: repeating them cannot change state, so they are retried
PURE_POSTS = frozenset({"/v1/rdp", "/v1/epsilon", "/v1/delta", "/v1/calibrate"})
#: answers worth repeating: a full queue (429), an unavailable upstream or database (502/503/504)
RETRY_STATUS = frozenset({429, 502, 503, 504})
#: longest wait a ``Retry-After`` header may ask for between two attempts (seconds)
MAX_RETRY_AFTER = 30.0


#: the result of a call: a model of :mod:`privacy_accountant.models`, or the decoded JSON (or text)
T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    json: Any = None
    params: Mapping[str, Any] | None = None
    retry: bool | None = None  # None: the safe-retry rule of the method
    timeout: float | None = None
    model: type[T] | None = None  # None: the decoded JSON (or text) as it is


def should_retry(method: str, path: str, retry: bool | None) -> bool:
    """GET/HEAD/OPTIONS/PUT and the pure computation POSTs may be repeated; other writes only when told."""
    if retry is not None:
        return retry
    method = method.upper()
    return method in ("GET", "HEAD", "OPTIONS", "PUT") or (method == "POST" and path in PURE_POSTS)


def seg(s: str) -> str:
    """``s`` as exactly one path segment ('.' and '..' would be removed as dot segments by the
    HTTP client; %2E reaches the service as '.')."""
    return quote(str(s), safe="").replace(".", "%2E")


def params(**kw: Any) -> dict[str, Any] | None:
    out = {k: v for k, v in kw.items() if v is not None}
    return out or None


def event_json(e: Any) -> dict[str, Any]:
    """An event as the service reads it: a dict, a pydantic model, an object with ``to_dict()``
    (``accountant``'s event classes) or a dp_accounting ``DpEvent`` that is one event here
    (:mod:`privacy_accountant.dp_events`)."""
    if is_dp_event(e):
        found = dp_event_dicts(e)
        if len(found) != 1:
            raise UnsupportedDpEvent(
                f"{type(e).__name__} is {len(found)} events here, and this call takes one: pass it where a list "
                "of events is taken (epsilon, delta), or wrap its rounds in a sampled event"
            )
        return found[0]
    if isinstance(e, BaseModel):
        return e.model_dump(mode="json", exclude_none=True)
    if hasattr(e, "to_dict"):
        as_dict: dict[str, Any] = e.to_dict()
        return as_dict
    if isinstance(e, Mapping):
        return dict(e)
    raise TypeError(
        f"an event must be a dict like {{'mechanism': 'shuffle', ...}}, a pydantic model or an accountant "
        f"event, got {e!r}"
    )


def events_json(events: Any) -> list[dict[str, Any]]:
    """A list of events as the service reads it; a dp_accounting ``DpEvent`` (alone or in the list)
    contributes every event it maps to."""
    if is_dp_event(events):
        return dp_event_dicts(events)
    return [d for e in events for d in (dp_event_dicts(e) if is_dp_event(e) else [event_json(e)])]


def _leave_out(d: dict[str, Any], solve_for: str) -> dict[str, Any]:
    """A converted ``DpEvent`` is complete: leave the unknown of a calibration out of it (the
    event's own field, ``inner[i].field``, or the bare name in the inner events that have it)."""
    out = dict(d)
    if solve_for in out:
        del out[solve_for]
        return out
    path, _, name = solve_for.rpartition(".")
    inner = [dict(i) for i in out.get("inner", [])]
    for i, item in enumerate(inner):
        if (path == f"inner[{i}]" or not path) and name in item:
            del item[name]
    if inner:
        out["inner"] = inner
    return out


def orders_json(orders: Iterable[float] | None) -> list[float] | None:
    return None if orders is None else [float(o) for o in orders]


def budget_json(budget: Any) -> dict[str, float]:
    if isinstance(budget, BaseModel):
        budget = budget.model_dump()
    if isinstance(budget, Mapping) and set(budget) >= {"epsilon", "delta"}:
        return {"epsilon": float(budget["epsilon"]), "delta": float(budget["delta"])}
    if isinstance(budget, Sequence) and not isinstance(budget, str) and len(budget) == 2:
        return {"epsilon": float(budget[0]), "delta": float(budget[1])}
    raise TypeError(f'budget must be {{"epsilon": ε, "delta": δ}} (or an (ε, δ) pair), got {budget!r}')


def user_set(
    users: Sequence[str] | None,
    id_range: Mapping[str, Any] | None = None,
    id_prefix: str | None = None,
    start: int = 0,
    count: int | None = None,
) -> dict[str, Any]:
    """``{"users": [...]}`` or ``{"id_range": {"prefix", "start", "count"}}``."""
    if id_range is None and count is not None:
        id_range = {"prefix": id_prefix or "", "start": start, "count": count}
    if (users is None) == (id_range is None):
        raise ValueError("give either users=[...] or id_range={'prefix': …, 'start': …, 'count': …}")
    if users is not None:
        if isinstance(users, str):
            raise TypeError("users must be a list of ids, not one string")
        return {"users": list(users)}
    return {"id_range": dict(id_range)}  # type: ignore[arg-type]


def with_orders(body: dict[str, Any], orders: Sequence[float] | None) -> None:
    """Add the ``orders`` of a computation request to ``body`` (left out: the service's default grid)."""
    if orders is not None:
        body["orders"] = orders_json(orders)


class Endpoints:
    """Every endpoint of the service as a method (sync or async through ``_send``)."""

    base_url: str = ""
    retries: int = 0
    backoff: float = 0.0
    calibrate_timeout: float | None = None

    def _configure(self, base_url: str, retries: int, backoff: float, calibrate_timeout: float) -> None:
        """The settings both clients share (the HTTP client itself is theirs)."""
        self.base_url = base_url.rstrip("/")
        self.retries = max(0, int(retries))
        self.backoff = backoff
        self.calibrate_timeout = calibrate_timeout

    def _send(self, call: Call[T]) -> T:  # pragma: no cover - implemented by the clients
        raise NotImplementedError

    # -- operations ----------------------------------------------------------------------------
    def health(self) -> m.HealthResponse:
        return self._send(Call("GET", "/health", model=m.HealthResponse))

    def metrics(self) -> str:
        """The Prometheus text exposition."""
        return self._send(Call[str]("GET", "/metrics"))

    def openapi(self) -> dict[str, Any]:
        return self._send(Call[dict[str, Any]]("GET", "/openapi.json"))

    # -- computation (no key needed) --------------------------------------------------------------
    def rdp(self, event: Any, orders: Sequence[float] | None = None, bound: str = "upper") -> m.RdpResponse:
        """``POST /v1/rdp``: the RDP curve of one event (× count) for ``bound`` on ``orders`` (default grid)."""
        body: dict[str, Any] = {"event": event_json(event), "bound": bound}
        with_orders(body, orders)
        return self._send(Call("POST", "/v1/rdp", json=body, model=m.RdpResponse))

    def epsilon(
        self,
        events: Iterable[Any],
        delta: float,
        orders: Sequence[float] | None = None,
        accounting: str = "best",
    ) -> m.EpsilonResponse:
        r"""``POST /v1/epsilon``: ε of ``events`` at ``delta`` by ``accounting`` (``best``: the smallest
        certified answer of every route; ``rdp``; ``pld``). ``events`` may hold — or be — dp_accounting
        ``DpEvent``\ s (:mod:`privacy_accountant.dp_events`)."""
        body: dict[str, Any] = {
            "events": events_json(events),
            "delta": delta,
            "accounting": accounting,
        }
        with_orders(body, orders)
        return self._send(Call("POST", "/v1/epsilon", json=body, model=m.EpsilonResponse))

    def delta(
        self,
        events: Iterable[Any],
        epsilon: float,
        orders: Sequence[float] | None = None,
        accounting: str = "best",
    ) -> m.DeltaResponse:
        """``POST /v1/delta``: δ of ``events`` at ``epsilon`` by ``accounting`` (as :meth:`epsilon`)."""
        body: dict[str, Any] = {
            "events": events_json(events),
            "epsilon": epsilon,
            "accounting": accounting,
        }
        with_orders(body, orders)
        return self._send(Call("POST", "/v1/delta", json=body, model=m.DeltaResponse))

    def calibrate(
        self,
        event: Any,
        solve_for: str,
        target_epsilon: float | None = None,
        delta: float | None = None,
        orders: Sequence[float] | None = None,
        *,
        target: Mapping[str, float] | None = None,
        accounting: str = "best",
    ) -> m.CalibrateResponse:
        """``POST /v1/calibrate``: solve ``solve_for`` (left out of ``event``) so that the guarantee
        meets ``target={"epsilon": ε, "delta": δ}`` (or ``target_epsilon``, ``delta``). Raises
        :class:`~privacy_accountant.InfeasibleTarget` (with ``best_epsilon``) when no value can.
        ``accounting``: the route the answer is judged by — ``"rdp"`` for a run the ledger will
        charge (the ledger composes RDP curves), ``"best"`` (default) for a report."""
        if target is None:
            if target_epsilon is None or delta is None:
                raise TypeError("give target={'epsilon': ε, 'delta': δ} (or target_epsilon and delta)")
            target = {"epsilon": target_epsilon, "delta": delta}
        body: dict[str, Any] = {
            "solve_for": solve_for,
            "target": dict(target),
            "event": _leave_out(event_json(event), solve_for) if is_dp_event(event) else event_json(event),
            "accounting": accounting,
        }
        with_orders(body, orders)
        return self._send(
            Call(
                "POST", "/v1/calibrate", json=body, timeout=self.calibrate_timeout, model=m.CalibrateResponse
            )
        )

    # -- mechanisms -----------------------------------------------------------------------------
    def mechanism_catalog(self) -> dict[str, Any]:
        """``GET /v1/mechanisms``: every mechanism with its parameters, output kind and source."""
        return self._send(Call[dict[str, Any]]("GET", "/v1/mechanisms"))

    def mechanism_parameters(
        self,
        name: str,
        params: Mapping[str, Any] | None = None,
        *,
        accounting: Mapping[str, Any] | None = None,
        calibrate: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/mechanisms/{name}/parameters``: the mechanism's internals, MSE and, with
        ``accounting={"n": …, "k": …, "count": …, "delta": …}``, the events one use costs and their ε.
        ``calibrate={"epsilon": ε, "delta": δ}`` solves the mechanism's knob (ε0, or the noise of a
        central mechanism) left out of ``params``; with ``"solve_for": "count"`` (or ``"n"``, ``"k"``)
        and the mechanism fully given, the most rounds (fewest users, largest sample) that meet the
        target, in ``value``. The decoded JSON answer (docs/api.md). A pure computation: retried
        like :meth:`calibrate`, with its longer timeout when calibrating."""
        body: dict[str, Any] = {"params": dict(params or {})}
        if accounting is not None:
            body["accounting"] = dict(accounting)
        if calibrate is not None:
            body["calibrate"] = dict(calibrate)
        timeout = self.calibrate_timeout if calibrate is not None else None
        path = f"/v1/mechanisms/{seg(name)}/parameters"
        return self._send(Call[dict[str, Any]]("POST", path, json=body, retry=True, timeout=timeout))

    # -- users ----------------------------------------------------------------------------------
    def put_user(
        self,
        user_id: str,
        budget: Mapping[str, float] | Any,
        *,
        policy: str = "declared",
        filter_order: float | None = None,
        planned_event: Any = None,
    ) -> m.User:
        """``PUT /v1/users/{user_id}`` (admin): create the user or change its budget (the spent curve
        is kept). ``budget={"epsilon": ε_B, "delta": δ_B}``; ``policy`` ``"declared"`` or
        ``"filter"`` (with ``filter_order`` or ``planned_event``). Safe to retry (a full replacement)."""
        body: dict[str, Any] = {"budget": budget_json(budget), "policy": policy}
        if filter_order is not None:
            body["filter_order"] = filter_order
        if planned_event is not None:
            body["planned_event"] = event_json(planned_event)
        return self._send(Call("PUT", f"/v1/users/{seg(user_id)}", json=body, model=m.User))

    def bulk_create_users(
        self,
        users: Sequence[str] | None = None,
        *,
        budget: Mapping[str, float] | Any = None,
        id_range: Mapping[str, Any] | None = None,
        id_prefix: str | None = None,
        start: int = 0,
        count: int | None = None,
        policy: str = "declared",
        on_conflict: str = "error",
        filter_order: float | None = None,
        planned_event: Any = None,
    ) -> m.BulkUsersResult:
        """``POST /v1/users/bulk`` (admin): create many users with one ``budget``, all or nothing:
        explicit ``users`` or ``id_range={"prefix": p, "start": s, "count": c}`` (ids ``f"{p}{i}"``;
        also as ``id_prefix=, start=, count=``). ``on_conflict``: ``"error"`` (409 if any exists) or
        ``"skip"``. Retried automatically only with ``on_conflict="skip"`` (then repeating is harmless)."""
        if budget is None:
            raise TypeError("bulk_create_users needs budget={'epsilon': ε, 'delta': δ}")
        body: dict[str, Any] = {
            **user_set(users, id_range, id_prefix, start, count),
            "budget": budget_json(budget),
            "policy": policy,
            "on_conflict": on_conflict,
        }
        if filter_order is not None:
            body["filter_order"] = filter_order
        if planned_event is not None:
            body["planned_event"] = event_json(planned_event)
        return self._send(
            Call("POST", "/v1/users/bulk", json=body, retry=on_conflict == "skip", model=m.BulkUsersResult)
        )

    def get_user(self, user_id: str) -> m.User:
        """``GET /v1/users/{user_id}``: budget, spent ε (at the budget's δ) and remaining ε."""
        return self._send(Call("GET", f"/v1/users/{seg(user_id)}", model=m.User))

    def list_users(
        self,
        limit: int | None = None,
        offset: int | None = None,
        *,
        prefix: str | None = None,
        policy: str | None = None,
        remaining_below: float | None = None,
        sort: str | None = None,
        cursor: str | None = None,
    ) -> m.UserPage:
        """``GET /v1/users``: one page of users; ``prefix`` of the id, ``policy``, remaining ε below
        ``remaining_below``; ``sort`` one of ``user_id``, ``remaining``, ``spent``, ``last_charge``
        (``-`` in front: descending). ``total`` counts every match. The next page: ``cursor=`` the
        page's ``next_cursor`` (``None`` on the last page), or :meth:`iter_pages`; ``offset`` is
        refused above 10,000."""
        q = params(
            limit=limit,
            offset=offset,
            prefix=prefix,
            policy=policy,
            remaining_below=remaining_below,
            sort=sort,
            cursor=cursor,
        )
        return self._send(Call("GET", "/v1/users", params=q, model=m.UserPage))

    def user_charges(
        self, user_id: str, limit: int | None = None, offset: int | None = None, *, cursor: str | None = None
    ) -> m.ChargeList:
        """``GET /v1/users/{user_id}/charges``: the charges that reached the user, oldest first
        (next page: ``cursor=`` the page's ``next_cursor``)."""
        q = params(limit=limit, offset=offset, cursor=cursor)
        return self._send(Call("GET", f"/v1/users/{seg(user_id)}/charges", params=q, model=m.ChargeList))

    def user_cohorts(self, user_id: str) -> m.UserCohorts:
        """``GET /v1/users/{user_id}/cohorts``: memberships with join/leave rounds."""
        return self._send(Call("GET", f"/v1/users/{seg(user_id)}/cohorts", model=m.UserCohorts))

    def user_history(self, user_id: str, limit: int | None = None) -> m.UserHistory:
        """``GET /v1/users/{user_id}/history``: spent ε after each charge."""
        q = params(limit=limit)
        return self._send(Call("GET", f"/v1/users/{seg(user_id)}/history", params=q, model=m.UserHistory))

    def user_curve(self, user_id: str) -> m.UserCurve:
        """``GET /v1/users/{user_id}/curve``: the spent RDP curve against the budget, order by order."""
        return self._send(Call("GET", f"/v1/users/{seg(user_id)}/curve", model=m.UserCurve))

    def user_audit(self, user_id: str) -> m.Audit:
        """``GET /v1/users/{user_id}/audit``: running sums against the recomputation from the log."""
        return self._send(Call("GET", f"/v1/users/{seg(user_id)}/audit", model=m.Audit))

    def summary(self, bucket: str | None = None, buckets: int | None = None) -> m.LedgerSummary:
        """``GET /v1/summary``: counts, users near exhaustion, admitted/refused charges per hour (or day)."""
        q = params(bucket=bucket, buckets=buckets)
        return self._send(Call("GET", "/v1/summary", params=q, model=m.LedgerSummary))

    def nearest_exhaustion(self, limit: int | None = None) -> m.ExhaustionList:
        """``GET /v1/dashboard/nearest-exhaustion``: the users closest to exhausting their budget."""
        q = params(limit=limit)
        return self._send(Call("GET", "/v1/dashboard/nearest-exhaustion", params=q, model=m.ExhaustionList))

    # -- charges --------------------------------------------------------------------------------
    def charge(
        self,
        event: Any,
        users: Sequence[str] | None = None,
        *,
        cohort: str | None = None,
        idempotency_key: str | None = None,
    ) -> m.Charge:
        """``POST /v1/charges`` (admin, pipeline): charge ``event`` to ``users`` (or every current
        member of ``cohort``), all or nothing. Raises :class:`~privacy_accountant.BudgetExceeded`
        (nothing recorded; with each refused user's remaining ε and the event's cost) when someone
        cannot afford it. An idempotency key is generated when not given, so retries never charge twice."""
        key = idempotency_key or f"sdk-{uuid.uuid4()}"
        body: dict[str, Any] = {"idempotency_key": key, "event": event_json(event)}
        if users is not None:
            if isinstance(users, str):
                raise TypeError("users must be a list of ids, not one string")
            body["users"] = list(users)
        if cohort is not None:
            body["cohort"] = cohort
        return self._send(Call("POST", "/v1/charges", json=body, retry=True, model=m.Charge))

    def list_charges(
        self,
        limit: int | None = None,
        offset: int | None = None,
        *,
        user: str | None = None,
        cohort: str | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        cursor: str | None = None,
    ) -> m.ChargePage:
        """``GET /v1/charges``: one page of the whole ledger's charges, oldest first — those that
        reached ``user``, of ``cohort``, charged at or after ``since`` and before ``until`` (ISO 8601
        text or datetimes; UTC when naive). ``total`` counts every match. The next page: ``cursor=``
        the page's ``next_cursor``, or :meth:`iter_pages`."""
        q = params(
            limit=limit,
            offset=offset,
            user=user,
            cohort=cohort,
            since=since.isoformat() if isinstance(since, datetime) else since,
            until=until.isoformat() if isinstance(until, datetime) else until,
            cursor=cursor,
        )
        return self._send(Call("GET", "/v1/charges", params=q, model=m.ChargePage))

    def charge_cohort(self, event: Any, cohort: str, *, idempotency_key: str | None = None) -> m.Charge:
        """Charge ``event`` to every current member of ``cohort`` (one round), all or nothing."""
        return self.charge(event, cohort=cohort, idempotency_key=idempotency_key)

    # -- cohorts --------------------------------------------------------------------------------
    def create_cohort(self, cohort_id: str, description: str | None = None) -> m.Cohort:
        """``POST /v1/cohorts`` (admin). Not retried (a repeat would be a 409)."""
        body: dict[str, Any] = {"cohort_id": cohort_id}
        if description is not None:
            body["description"] = description
        return self._send(Call("POST", "/v1/cohorts", json=body, retry=False, model=m.Cohort))

    def list_cohorts(
        self,
        limit: int | None = None,
        offset: int | None = None,
        *,
        prefix: str | None = None,
        cursor: str | None = None,
    ) -> m.CohortPage:
        """``GET /v1/cohorts``: one page of cohorts by id (next page: ``cursor=`` its ``next_cursor``)."""
        q = params(limit=limit, offset=offset, prefix=prefix, cursor=cursor)
        return self._send(Call("GET", "/v1/cohorts", params=q, model=m.CohortPage))

    def get_cohort(self, cohort_id: str) -> m.Cohort:
        return self._send(Call("GET", f"/v1/cohorts/{seg(cohort_id)}", model=m.Cohort))

    def add_members(
        self,
        cohort_id: str,
        users: Sequence[str] | None = None,
        *,
        id_range: Mapping[str, Any] | None = None,
        id_prefix: str | None = None,
        start: int = 0,
        count: int | None = None,
    ) -> m.MembersChanged:
        """``POST /v1/cohorts/{id}/members`` (admin): explicit ``users`` or an ``id_range``. Safe to
        retry (users already members are counted in ``already_members``)."""
        body = user_set(users, id_range, id_prefix, start, count)
        return self._send(
            Call(
                "POST", f"/v1/cohorts/{seg(cohort_id)}/members", json=body, retry=True, model=m.MembersChanged
            )
        )

    def remove_members(
        self,
        cohort_id: str,
        users: Sequence[str] | None = None,
        *,
        id_range: Mapping[str, Any] | None = None,
        id_prefix: str | None = None,
        start: int = 0,
        count: int | None = None,
    ) -> m.MembersChanged:
        """``POST /v1/cohorts/{id}/members/remove`` (admin). Safe to retry (non-members are counted)."""
        body = user_set(users, id_range, id_prefix, start, count)
        path = f"/v1/cohorts/{seg(cohort_id)}/members/remove"
        return self._send(Call("POST", path, json=body, retry=True, model=m.MembersChanged))

    def remove_member(self, cohort_id: str, user_id: str) -> m.MembersChanged:
        path = f"/v1/cohorts/{seg(cohort_id)}/members/{seg(user_id)}"
        return self._send(Call("DELETE", path, retry=True, model=m.MembersChanged))

    def cohort_members(
        self,
        cohort_id: str,
        limit: int | None = None,
        offset: int | None = None,
        history: bool | None = None,
        *,
        cursor: str | None = None,
    ) -> m.MemberList:
        """``GET /v1/cohorts/{id}/members`` in join order; ``history=True`` includes past memberships
        (next page: ``cursor=`` the page's ``next_cursor``)."""
        q = params(
            limit=limit,
            offset=offset,
            history=None if history is None else str(bool(history)).lower(),
            cursor=cursor,
        )
        return self._send(Call("GET", f"/v1/cohorts/{seg(cohort_id)}/members", params=q, model=m.MemberList))

    def cohort_history(
        self, cohort_id: str, delta: float | None = None, limit: int | None = None
    ) -> m.CohortHistory:
        """``GET /v1/cohorts/{id}/history``: the cohort's cumulative spent ε after each round."""
        q = params(delta=delta, limit=limit)
        return self._send(
            Call("GET", f"/v1/cohorts/{seg(cohort_id)}/history", params=q, model=m.CohortHistory)
        )
