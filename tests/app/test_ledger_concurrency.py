"""Concurrency, idempotency races and crash recovery over real HTTP against real ``serve`` processes.

Each backend (SQLite file; PostgreSQL when TEST_POSTGRES_URL is set) gets two ``privacy-accountant
serve`` processes sharing one database (they also race each other's start-up migration). Then:

* 16 client threads charge overlapping users (and a cohort) through both servers until the
  budgets run out: afterwards every user's spent ε *recomputed from the charge log* is within
  budget, the number of admitted charges in the database equals the number of 201s the clients
  saw, and there was no 5xx;
* 16 threads send one idempotency key at once: exactly one charge;
* a server is killed with SIGKILL while charges are in flight and restarted: every 201'd charge is
  present, nothing is half-written, running sums equal the recomputation, and retrying the
  in-flight requests with their keys charges each at most once.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import httpx
import pytest
from sqlalchemy import text

from app.db.session import Database
from app.ledger import service as svc
from tests.helpers import ledger as ls
from tests.helpers.ledger import ADMIN, KEYS_ENV, PIPE
from tests.helpers.server import start_server

pytestmark = pytest.mark.slow

# cheap closed-form curves: the test is about the ledger, not the bounds
EVENT = {"mechanism": "gaussian", "noise_multiplier": 8.0}
COHORT_EVENT = {"mechanism": "gaussian", "noise_multiplier": 12.0}


@pytest.fixture(params=ls.BACKENDS)
def backend_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/concurrent.db"  # not migrated: the servers do it at start
    url = ls.pg_test_url()
    ls.truncate_pg(url)
    return url


@pytest.fixture
def servers(backend_url):
    env = {"DATABASE_URL": backend_url, "ACCOUNTANT_API_KEYS": KEYS_ENV, "ACCOUNTANT_LOG_LEVEL": "WARNING"}
    handles, errors = [], []

    def boot():
        try:
            handles.append(start_server(env, timeout=60))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=boot) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        yield handles
    finally:
        for h in handles:
            h.stop()


def _setup_users(url: str, n: int, rng: random.Random) -> dict[str, float]:
    budgets = {}
    with httpx.Client(base_url=url, timeout=30) as c:
        for i in range(n):
            eps = round(rng.uniform(1.0, 2.5), 3)
            r = c.put(f"/v1/users/u{i}", json={"budget": {"epsilon": eps, "delta": 1e-6}}, headers=ADMIN)
            assert r.status_code == 201, r.text
            budgets[f"u{i}"] = eps
        assert c.post("/v1/cohorts", json={"cohort_id": "pop"}, headers=ADMIN).status_code == 201
        r = c.post(
            "/v1/cohorts/pop/members", json={"users": [f"u{i}" for i in range(0, n, 2)]}, headers=ADMIN
        )
        assert r.status_code == 200
    return budgets


def _check_ledger(url: str, budgets: dict[str, float]) -> None:
    """Every user within budget by recomputation; running sums == recomputation; nothing half-written."""
    db = Database(url)
    try:
        for u, eps_b in budgets.items():
            audit = svc.recompute_user(db, u)
            assert audit.recomputed_spent.epsilon <= eps_b + 1e-12, (u, audit.recomputed_spent, eps_b)
            assert audit.running_not_below_recomputed, u
            assert audit.max_relative_excess < 1e-12, u
            assert audit.charges_in_log == audit.charges_counted, u
        with db.read() as s:
            # explicit charges: one charge_users row per user counted; cohort charges: none
            bad = s.execute(
                text(
                    "SELECT c.id FROM ledger_charges c WHERE c.cohort_id IS NULL AND c.n_users <> "
                    "(SELECT count(*) FROM ledger_charge_users cu WHERE cu.charge_id = c.id)"
                )
            ).all()
            assert bad == []
            rounds = s.execute(
                text(
                    "SELECT co.seq, (SELECT count(*) FROM ledger_charges c WHERE c.cohort_id = co.id) "
                    "FROM ledger_cohorts co"
                )
            ).all()
            assert all(a == b for a, b in rounds)
            classes = s.execute(
                text(
                    "SELECT c.n_users, (SELECT count(*) FROM ledger_users u WHERE u.class_id = c.id) "
                    "FROM ledger_classes c"
                )
            ).all()
            assert all(a == b and a > 0 for a, b in classes)
    finally:
        db.dispose()


def _count_charges(url: str) -> int:
    db = Database(url)
    try:
        with db.read() as s:
            return s.execute(text("SELECT count(*) FROM ledger_charges")).scalar_one()
    finally:
        db.dispose()


def test_concurrent_pipelines_never_overspend(servers, backend_url):
    rng = random.Random(7)
    users = _setup_users(servers[0].url, 12, rng)
    names = sorted(users)
    statuses: Counter = Counter()
    admitted_ids: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + 60

    def pipeline(tid: int):
        r = random.Random(tid)
        clients = [httpx.Client(base_url=s.url, timeout=60) for s in servers]
        refusals_in_a_row = 0
        try:
            for i in range(60):
                if time.monotonic() > deadline or refusals_in_a_row >= 8:
                    break
                c = clients[r.randrange(len(clients))]
                body = {"idempotency_key": f"t{tid}-{i}"}
                if r.random() < 0.2:
                    body.update(cohort="pop", event=COHORT_EVENT)
                else:
                    body.update(users=r.sample(names, r.randint(1, 4)), event=EVENT)
                resp = c.post("/v1/charges", json=body, headers=PIPE)
                with lock:
                    statuses[resp.status_code] += 1
                    if resp.status_code == 201:
                        admitted_ids.append(resp.json()["charge_id"])
                refusals_in_a_row = refusals_in_a_row + 1 if resp.status_code == 409 else 0
        finally:
            for c in clients:
                c.close()

    threads = [threading.Thread(target=pipeline, args=(t,)) for t in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("statuses", dict(statuses))
    assert not [s for s in statuses if s >= 500], statuses
    assert set(statuses) <= {201, 409}, statuses
    assert statuses[409] > 0 and statuses[201] > 0, statuses  # budgets did run out
    assert len(set(admitted_ids)) == len(admitted_ids) == statuses[201]
    assert _count_charges(backend_url) == statuses[201]
    _check_ledger(backend_url, users)
    # budgets are exhausted: a further charge to everyone is refused
    with httpx.Client(base_url=servers[1].url, timeout=30) as c:
        spent = [c.get(f"/v1/users/{u}", headers=PIPE).json()["spent"]["epsilon"] for u in names]
    assert all(s <= users[u] for s, u in zip(spent, names))
    assert max(s / users[u] for s, u in zip(spent, names)) > 0.5


def test_concurrent_same_idempotency_key_charges_once(servers, backend_url):
    _setup_users(servers[0].url, 2, random.Random(1))
    barrier = threading.Barrier(16)
    results = []
    lock = threading.Lock()
    body = {"idempotency_key": "race-1", "users": ["u0", "u1"], "event": EVENT}

    def go(i):
        with httpx.Client(base_url=servers[i % 2].url, timeout=60) as c:
            barrier.wait()
            r = c.post("/v1/charges", json=body, headers=PIPE)
        with lock:
            results.append((r.status_code, r.json().get("charge_id")))

    threads = [threading.Thread(target=go, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {s for s, _ in results} == {201}, results
    assert len({cid for _, cid in results}) == 1
    assert _count_charges(backend_url) == 1
    with httpx.Client(base_url=servers[0].url, timeout=30) as c:
        assert c.get("/v1/users/u0", headers=PIPE).json()["charges"] == 1


def test_kill_9_mid_charges_loses_nothing_admitted(servers, backend_url):
    users = _setup_users(servers[0].url, 8, random.Random(3))
    names = sorted(users)
    victim, survivor = servers
    ok: dict[str, str] = {}  # idempotency key -> charge id (a 201 was seen)
    in_flight: dict[str, dict] = {}  # requests whose answer was lost
    lock = threading.Lock()
    stop = threading.Event()
    small = {"mechanism": "gaussian", "noise_multiplier": 60.0}

    def pipeline(tid: int):
        r = random.Random(100 + tid)
        with httpx.Client(base_url=victim.url, timeout=10) as c:
            for i in range(400):
                if stop.is_set():
                    break
                key = f"crash-{tid}-{i}"
                body = {"idempotency_key": key, "users": r.sample(names, r.randint(1, 3)), "event": small}
                if r.random() < 0.2:
                    body = {"idempotency_key": key, "cohort": "pop", "event": small}
                try:
                    resp = c.post("/v1/charges", json=body, headers=PIPE)
                except httpx.HTTPError:
                    with lock:
                        in_flight[key] = body
                    break
                assert resp.status_code in (201, 409), resp.text
                if resp.status_code == 201:
                    with lock:
                        ok[key] = resp.json()["charge_id"]

    threads = [threading.Thread(target=pipeline, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    t_end = time.monotonic() + 20
    while time.monotonic() < t_end and len(ok) < 20:  # let some charges be admitted first
        time.sleep(0.05)
    time.sleep(0.3)
    victim.kill()  # kill -9 while requests are in flight
    stop.set()
    for t in threads:
        t.join()
    assert ok, "no charge was admitted before the kill"
    victim.start()
    db = Database(backend_url)
    try:
        with db.read() as s:
            # keys are stored under their API key's scope (scope␟key): compare the keys themselves
            raw = s.execute(text("SELECT idempotency_key, id FROM ledger_charges")).all()
            rows = {k.split("\x1f")[-1]: cid for k, cid in raw}
    finally:
        db.dispose()
    for key, cid in ok.items():  # every 201 survived the crash
        assert str(rows.get(key)) == cid, key
    _check_ledger(backend_url, users)
    # retrying the lost requests with their keys: at most one charge each
    before = _count_charges(backend_url)
    retried_new = 0
    with httpx.Client(base_url=survivor.url, timeout=30) as c:
        for key, body in in_flight.items():
            r1 = c.post("/v1/charges", json=body, headers=PIPE)
            r2 = c.post("/v1/charges", json=body, headers=PIPE)
            assert r1.status_code in (201, 409) and r2.status_code == r1.status_code
            if r1.status_code == 201:
                assert r2.json()["charge_id"] == r1.json()["charge_id"] and r2.json()["replayed"]
                retried_new += 0 if key in rows else 1
    assert _count_charges(backend_url) == before + retried_new
    _check_ledger(backend_url, users)
    with httpx.Client(base_url=victim.url, timeout=30) as c:
        assert c.get("/health").status_code == 200
        assert c.get("/v1/users/u0", headers=PIPE).status_code == 200
