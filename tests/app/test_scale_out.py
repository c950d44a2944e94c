"""Scale-out: three ``privacy-accountant serve`` replicas on one PostgreSQL database behind a real
haproxy (the shipped ``deploy/haproxy.cfg`` on loopback ports), pipelines charging through the SDK,
one replica killed with SIGKILL mid-burst and restarted.

Eight threads, each an ``AccountantClient`` pointed at the balancer, charge overlapping users
(explicit charges to 1–3 of 12 users, and cohort rounds) with their own idempotency keys. Six
users have budgets that run out within the burst, so concurrent charges on different replicas
race for the last of a budget. While the victim replica has a request in progress it is killed
(SIGKILL: no answer, no clean-up); haproxy's health checks (``/health/ready``) take it out, the
other two carry the burst, then it is started again, taken back in and serves charges again.

What must hold, from the SDK's answers and the database:

* every SDK call ended in an answer: an admitted charge or a refusal (``BudgetExceeded``) — the
  SDK retried what the kill cut off (the balancer closes the connection without an answer, or
  answers 502) with the same idempotency key (with ``retries=0`` this test fails);
* nothing lost: every admitted answer is in the ledger under its key with its charge id;
* nothing charged twice: each key at most once in the ledger, and exactly the admitted keys;
* nobody overspent: each user's spent ε, recomputed from the charge log, is within the budget, and
  the running sums equal the recomputation; each user's charge count is what the answers say.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy import text

from app.db.session import Database
from app.ledger import service as svc
from privacy_accountant import AccountantClient, BudgetExceeded
from tests.helpers import balancer as lbh
from tests.helpers import ledger as ls
from tests.helpers.server import ServerHandle, start_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.skipif(
        not os.environ.get(ls.PG_ENV), reason=f"{ls.PG_ENV} is not set (no PostgreSQL server)"
    ),
    pytest.mark.skipif(
        lbh.haproxy() is None, reason="haproxy not found (bash .ci/install-haproxy.sh installs Debian's)"
    ),
]

ADMIN_KEY = "admin-key-0123456789"
PIPE_KEY = "pipeline-key-0123456789"
REPLICAS = 3
THREADS = 8
EXPLICIT = {"mechanism": "gaussian", "noise_multiplier": 20.0}
ROUND = {"mechanism": "gaussian", "noise_multiplier": 30.0}
#: ε budgets (δ 1e-6): a tight user affords about 14 explicit charges, a rich one thousands
BUDGETS = {**{f"tight-{i}": 1.0 for i in range(6)}, **{f"rich-{i}": 1000.0 for i in range(6)}}
COHORT = [u for u in BUDGETS if u.startswith("rich")]
#: the whole test (start-up, burst, kill, restart, checks) stays within this
LIMIT = 90.0


@dataclass
class Call:
    key: str
    users: list[str] | None  # None: a cohort round
    outcome: str = ""  # "admitted" | "refused" | "error: …"
    charge_id: str | None = None
    replayed: bool = False


class CountingTransport(httpx.HTTPTransport):
    """What the SDK's attempts met on the wire: answers by status, and failed connections."""

    def __init__(self, seen: Counter, lock: threading.Lock) -> None:
        super().__init__()
        self.seen, self.lock = seen, lock

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            resp = super().handle_request(request)
        except httpx.HTTPError as exc:
            with self.lock:
                self.seen[type(exc).__name__] += 1
            raise
        with self.lock:
            self.seen[resp.status_code] += 1
        return resp


@pytest.fixture
def deployment() -> Iterator[tuple[list[ServerHandle], lbh.Balancer, str]]:
    url = ls.pg_test_url()
    assert url is not None
    ls.truncate_pg(url)
    env = {"DATABASE_URL": url, "ACCOUNTANT_API_KEYS": ls.KEYS_ENV, "ACCOUNTANT_LOG_LEVEL": "WARNING"}
    with contextlib.ExitStack() as stack:
        handles: list[ServerHandle] = []
        errors: list[BaseException] = []

        def boot() -> None:
            try:
                h = start_server(env, timeout=60)
                handles.append(h)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=boot) for _ in range(REPLICAS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(70)
        for h in handles:
            stack.callback(h.stop)
        assert not errors and len(handles) == REPLICAS, errors
        lb = stack.enter_context(lbh.start_balancer([h.port for h in handles]))
        yield handles, lb, url


def _charges_served(replica: ServerHandle) -> int:
    """``POST /v1/charges`` answered by this replica since it started (its own /metrics)."""
    body = httpx.get(replica.url + "/metrics", timeout=5).text
    pat = re.compile(
        r'^accountant_http_requests_total\{[^}]*endpoint="/v1/charges"[^}]*\} ([0-9.e+]+)$', re.M
    )
    return int(sum(float(v) for v in pat.findall(body)))


def _setup(url: str) -> None:
    with AccountantClient(url, ADMIN_KEY, timeout=30, retries=4) as admin:
        for u, eps in BUDGETS.items():
            admin.put_user(u, {"epsilon": eps, "delta": 1e-6})
        admin.create_cohort("pop")
        admin.add_members("pop", COHORT)


def _pipeline(
    url: str, tid: int, stop: threading.Event, calls: list[Call], wire: Counter, lock: threading.Lock
) -> None:
    rng = random.Random(tid)
    names = sorted(BUDGETS)
    # a pipeline's client: retries (same idempotency key) cover a replica dying under a request
    transport = CountingTransport(wire, lock)
    with AccountantClient(url, PIPE_KEY, timeout=30, retries=6, backoff=0.2, transport=transport) as sdk:
        for i in range(2000):
            if stop.is_set():
                return
            cohort = rng.random() < 0.15
            call = Call(f"t{tid}-{i}", None if cohort else rng.sample(names, rng.randint(1, 3)))
            with lock:
                calls.append(call)
            try:
                if call.users is None:
                    ans = sdk.charge_cohort(ROUND, "pop", idempotency_key=call.key)
                else:
                    ans = sdk.charge(EXPLICIT, call.users, idempotency_key=call.key)
                call.outcome, call.charge_id, call.replayed = "admitted", ans.charge_id, ans.replayed
            except BudgetExceeded:
                call.outcome = "refused"
            except Exception as exc:  # an unanswered call: the test fails on it
                call.outcome = f"error: {exc!r}"


def _wait(cond, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds} s")
        time.sleep(0.02)


def _ledger_rows(url: str) -> dict[str, tuple[str, int | None]]:
    """idempotency key → (charge id, cohort id) of every charge in the ledger (keys are stored under
    their API key's scope, ``scope␟key``)."""
    db = Database(url)
    try:
        with db.read() as s:
            raw = s.execute(text("SELECT idempotency_key, id, cohort_id FROM ledger_charges")).all()
    finally:
        db.dispose()
    keys = [k.split("\x1f")[-1] for k, _, _ in raw]
    assert len(keys) == len(set(keys)), Counter(keys).most_common(3)  # nothing charged twice
    return {k: (str(cid), coh) for k, (_, cid, coh) in zip(keys, raw)}


def _burst_with_a_kill(replicas: list[ServerHandle], lb: lbh.Balancer, t0: float) -> tuple[list[Call], dict]:
    calls: list[Call] = []
    lock = threading.Lock()
    stop = threading.Event()
    wire: Counter = Counter()
    threads = [
        threading.Thread(target=_pipeline, args=(lb.url, t, stop, calls, wire, lock), daemon=True)
        for t in range(THREADS)
    ]
    victim = replicas[1]
    seen: dict = {"wire": wire}

    def admitted() -> int:
        with lock:
            return sum(c.outcome == "admitted" for c in calls)

    for t in threads:
        t.start()
    try:
        _wait(lambda: admitted() >= 60, 30, "60 charges admitted before the kill")
        # kill while the balancer has a request of ours on the victim
        _wait(lambda: int(lb.stats()["r2"]["scur"]) > 0, 10, "a request in progress on the victim")
        victim.kill()
        seen["killed_at"] = time.monotonic() - t0
        seen["admitted_at_kill"] = admitted()
        lb.wait_status({"r2": "DOWN"}, 10)
        seen["down_at"] = time.monotonic() - t0
        seen["admitted_at_down"] = admitted()
        time.sleep(1.0)  # the burst goes on through the two others
        seen["admitted_while_down"] = admitted() - seen["admitted_at_kill"]
        victim.start()
        seen["started_at"] = time.monotonic() - t0
        lb.wait_status({"r2": "UP"}, 15)
        seen["up_at"] = time.monotonic() - t0
        _wait(lambda: _charges_served(victim) >= 10, 15, "the restarted replica serving charges")
        seen["served_by_restarted"] = _charges_served(victim)
        seen["stats"] = lb.stats()
        seen["serving_at"] = time.monotonic() - t0
    finally:
        stop.set()
        for t in threads:
            t.join(max(5.0, LIMIT - (time.monotonic() - t0)))
    assert not any(t.is_alive() for t in threads), "a pipeline thread did not finish"
    return calls, seen


def test_three_replicas_behind_haproxy_lose_nothing_when_one_is_killed_mid_burst(deployment):
    t0 = time.monotonic()
    replicas, lb, url = deployment
    _setup(lb.url)
    calls, seen = _burst_with_a_kill(replicas, lb, t0)
    outcomes = Counter(c.outcome.split(":")[0] for c in calls)
    print(
        f"calls {len(calls)}: {dict(outcomes)}, replayed {sum(c.replayed for c in calls)}; "
        f"victim killed at {seen['killed_at']:.1f} s, DOWN at {seen['down_at']:.1f} s, started "
        f"{seen['started_at']:.1f} s, UP {seen['up_at']:.1f} s, serving {seen['serving_at']:.1f} s; admitted at kill "
        f"{seen['admitted_at_kill']}, while down {seen['admitted_while_down']}; SDK attempts met "
        f"{dict(seen['wire'])}; haproxy per replica (sessions, response errors, 5xx, retries, redispatches): "
        + ", ".join(
            f"{k}: {v['stot']}, {v['eresp'] or 0}, {v['hrsp_5xx'] or 0}, {v['wretr'] or 0}, {v['wredis'] or 0}"
            for k, v in seen["stats"].items()
        )
    )

    # every SDK call ended in an answer: admitted or refused
    assert not [c for c in calls if c.outcome not in ("admitted", "refused")], [
        (c.key, c.outcome) for c in calls if c.outcome not in ("admitted", "refused")
    ][:5]
    assert outcomes["admitted"] > 100 and outcomes["refused"] > 0, outcomes  # budgets did run out
    assert seen["admitted_while_down"] > 0  # the two others carried the burst
    # connections refused by the dead replica were sent to the others by the balancer
    victim_stats = seen["stats"]["r2"]
    assert int(victim_stats["wredis"] or 0) + int(victim_stats["wretr"] or 0) > 0, victim_stats

    # nothing lost, nothing twice: the ledger holds exactly the admitted keys, under their ids
    rows = _ledger_rows(url)
    admitted = {c.key: c for c in calls if c.outcome == "admitted"}
    assert len(admitted) == outcomes["admitted"]
    assert {k: rows.get(k, ("missing",))[0] for k in admitted} == {
        k: c.charge_id for k, c in admitted.items()
    }
    assert set(rows) == set(admitted), sorted(set(rows) ^ set(admitted))[:5]

    # nobody overspent; running sums = recomputation; each user's charges as the answers say
    db = Database(url)
    try:
        for u, eps_b in BUDGETS.items():
            audit = svc.recompute_user(db, u)
            want = sum(1 for c in admitted.values() if (u in c.users if c.users else u in COHORT))
            assert audit.charges_in_log == audit.charges_counted == want, (u, audit, want)
            assert audit.recomputed_spent.epsilon <= eps_b + 1e-12, (u, audit.recomputed_spent, eps_b)
            assert audit.running_not_below_recomputed and audit.max_relative_excess < 1e-12, u
    finally:
        db.dispose()
    with AccountantClient(lb.url, PIPE_KEY, timeout=30) as sdk:
        spent = {u: sdk.get_user(u).spent.epsilon for u in BUDGETS}
    assert all(spent[u] <= BUDGETS[u] for u in BUDGETS), spent
    assert max(spent[u] / BUDGETS[u] for u in BUDGETS if u.startswith("tight")) > 0.5, spent

    # the restarted replica is back behind the balancer and answers from the same database
    assert seen["served_by_restarted"] >= 10
    r = httpx.get(
        replicas[1].url + "/v1/users/rich-0", headers={"Authorization": f"Bearer {PIPE_KEY}"}, timeout=10
    )
    assert r.status_code == 200 and r.json()["charges"] == sum(
        1 for c in admitted.values() if (c.users is None or "rich-0" in c.users)
    )
    assert time.monotonic() - t0 < LIMIT
