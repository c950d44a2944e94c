"""Ledger benchmarks (ledger.md "Targets") on SQLite and PostgreSQL → bench/results_ledger.md.

    python bench/bench_ledger.py                       # SQLite, plus PostgreSQL if a URL is known
    python bench/bench_ledger.py --pg-url postgresql+psycopg://user:pass@127.0.0.1/bench
    python bench/bench_ledger.py --members 100000 --rounds 2000   # a quicker, scaled-down run

PostgreSQL comes from ``--pg-url``, else ``BENCH_POSTGRES_URL``, else ``TEST_POSTGRES_URL`` (a
dedicated database ``<name>_ledger_bench`` is created next to it when allowed). Everything runs on
this machine over loopback: a real ``privacy-accountant serve`` process for the HTTP numbers, the
service layer directly for the bulk setup and the 10⁴-round storage run.

Measured per backend:
  1. one round charged to a cohort of ``--members`` users who share budget and history (HTTP);
  2. reading one user's spent/remaining budget (HTTP, GET /v1/users/{id});
  3. charging an explicit list of 1,000 users: the same 1,000 each time (grouped) and 1,000 random
     users of the population each time (worst case: each charge splits classes) (HTTP);
  4. 32 concurrent pipelines (threads) through two serve processes charging overlapping users
     until budgets run out: throughput, 5xx count, overspend check by recomputation;
  5. database size after ``--rounds`` rounds on the ``--members`` cohort (service layer), and the
     growth per round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.db.migrate import upgrade_to_head  # noqa: E402
from app.db.session import Database, normalize_url  # noqa: E402
from app.ledger import service as svc  # noqa: E402
from tests.helpers.server import start_server  # noqa: E402

KEYS = "bench-admin-key:admin,bench-pipeline-key:pipeline"
ADMIN = {"Authorization": "Bearer bench-admin-key"}
PIPE = {"Authorization": "Bearer bench-pipeline-key"}
ROUND_EVENT = {"mechanism": "subsampled_shuffle", "n": 1_000_000, "k": 1000, "epsilon0": 1.0}
TINY = {"mechanism": "gaussian", "noise_multiplier": 1000.0}
SMALL = {"mechanism": "gaussian", "noise_multiplier": 8.0}


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def ms(xs):
    return {
        "median_ms": round(statistics.median(xs) * 1e3, 2),
        "p95_ms": round(pct(xs, 0.95) * 1e3, 2),
        "n": len(xs),
    }


def fresh_sqlite(tmp: Path) -> str:
    p = tmp / "bench-ledger.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(p) + suffix).unlink(missing_ok=True)
    return f"sqlite:///{p}"


def fresh_pg(base: str) -> str:
    base = normalize_url(base)
    u = make_url(base)
    name = f"{u.database or 'postgres'}_ledger_bench"
    eng = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with eng.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            c.execute(text(f'CREATE DATABASE "{name}"'))
        return u.set(database=name).render_as_string(hide_password=False)
    except Exception:
        with eng.begin() as c:  # no CREATEDB: clean the ledger tables of the given database instead
            c.execute(
                text(
                    "DROP TABLE IF EXISTS ledger_charge_users, ledger_charges, ledger_memberships, "
                    "ledger_class_cohorts, ledger_cohorts, ledger_users, ledger_classes, "
                    "ledger_order_grids, alembic_version CASCADE"
                )
            )
            c.execute(text("DROP FUNCTION IF EXISTS ledger_refuse_change() CASCADE"))
        return base
    finally:
        eng.dispose()


def db_size(url: str) -> int:
    if url.startswith("sqlite"):
        path = Path(make_url(url).database)
        db = Database(url)
        with db.engine.connect() as c:  # fold the WAL into the main file first
            c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        db.dispose()
        return sum(Path(str(path) + s).stat().st_size for s in ("", "-wal") if Path(str(path) + s).exists())
    eng = create_engine(url)
    with eng.connect() as c:
        size = c.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
    eng.dispose()
    return int(size)


def _setup(db, url: str, members: int, out: dict, log, name: str) -> int:
    """Population and cohort through the service layer; returns the database size after it."""
    t0 = time.perf_counter()
    svc.bulk_create_users(
        db, [f"d{i}" for i in range(members)], svc.make_budget(8.0, 1e-6, "declared", None, None)
    )
    out["setup_create_users_s"] = round(time.perf_counter() - t0, 2)
    svc.create_cohort(db, "population", "bench population")
    t0 = time.perf_counter()
    svc.change_members(db, "population", [f"d{i}" for i in range(members)], join=True)
    out["setup_add_members_s"] = round(time.perf_counter() - t0, 2)
    log(
        f"[{name}] {members} users + members in {out['setup_create_users_s']} + {out['setup_add_members_s']} s"
    )
    return db_size(url)


def _rounds_and_reads(c, db, actor, members: int, rng: random.Random, out: dict, log, name: str) -> None:
    """1. cohort rounds and 2. budget reads over HTTP, then the same in process (service layer)."""
    # ---- 1. cohort round -------------------------------------------------------------
    assert (
        c.post("/v1/charges", json={"cohort": "population", "event": ROUND_EVENT}, headers=PIPE).status_code
        == 201
    )  # warm the curve cache
    lat = []
    for i in range(100):
        t = time.perf_counter()
        r = c.post(
            "/v1/charges",
            json={"idempotency_key": f"round-{i}", "cohort": "population", "event": TINY},
            headers=PIPE,
        )
        lat.append(time.perf_counter() - t)
        assert r.status_code == 201 and r.json()["users"] == members, r.text
    out["cohort_round"] = ms(lat)
    log(f"[{name}] cohort round {out['cohort_round']}")

    # ---- 2. budget read --------------------------------------------------------------
    lat = []
    for _ in range(500):
        u = f"d{rng.randrange(members)}"
        t = time.perf_counter()
        r = c.get(f"/v1/users/{u}", headers=PIPE)
        lat.append(time.perf_counter() - t)
        assert r.status_code == 200
    out["budget_read"] = ms(lat)
    log(f"[{name}] budget read {out['budget_read']}")

    # service layer (no HTTP): the database part of the same operations
    lat = []
    for i in range(100):
        t = time.perf_counter()
        svc.charge(db, event=TINY, actor=actor, cohort="population", idempotency_key=f"inproc-{i}")
        lat.append(time.perf_counter() - t)
    out["cohort_round_in_process"] = ms(lat)
    lat = []
    for i in range(500):
        t = time.perf_counter()
        svc.get_user(db, f"d{(i * 7919) % members}")
        lat.append(time.perf_counter() - t)
    out["budget_read_in_process"] = ms(lat)
    log(f"[{name}] in-process round {out['cohort_round_in_process']} read {out['budget_read_in_process']}")


def _storage(
    db, url: str, actor, members: int, rounds: int, size_after_setup: int, out: dict, log, name: str
) -> None:
    """5. storage after many rounds (service layer)."""
    before = db_size(url)
    with db.read() as s:
        done = s.execute(text("SELECT seq FROM ledger_cohorts WHERE cohort_id = 'population'")).scalar_one()
    t0 = time.perf_counter()
    for i in range(max(0, rounds - done)):
        svc.charge(db, event=TINY, actor=actor, cohort="population", idempotency_key=f"store-{i}")
    el = time.perf_counter() - t0
    after = db_size(url)
    with db.read() as s:
        seq = s.execute(text("SELECT seq FROM ledger_cohorts WHERE cohort_id = 'population'")).scalar_one()
        n_classes = s.execute(text("SELECT count(*) FROM ledger_classes")).scalar_one()
        rows = {
            t: s.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()
            for t in ("ledger_users", "ledger_memberships", "ledger_charges", "ledger_charge_users")
        }
    out["storage"] = {
        "rounds": int(seq),
        "members": members,
        "classes": int(n_classes),
        "rows": rows,
        "db_bytes_after_setup": size_after_setup,
        "db_bytes_before_rounds": before,
        "db_bytes_after_rounds": after,
        "bytes_per_round": round((after - before) / max(1, seq - done), 1),
        "bytes_per_member_setup": round(size_after_setup / members, 1),
        "in_process_round_ms": round(el / max(1, rounds - done) * 1e3, 2),
    }
    log(f"[{name}] storage {out['storage']}")


def _explicit_charges(c, db, members: int, rng: random.Random, out: dict, log, name: str) -> None:
    """3. explicit 1,000-user charges, then a cohort round over the fragmented population."""
    same = [f"d{i}" for i in range(1000)]
    lat = []
    for i in range(30):
        t = time.perf_counter()
        r = c.post(
            "/v1/charges",
            json={"idempotency_key": f"same-{i}", "users": same, "event": TINY},
            headers=PIPE,
        )
        lat.append(time.perf_counter() - t)
        assert r.status_code == 201, r.text
    out["explicit_1000_same_users"] = ms(lat)
    lat = []
    for i in range(30):
        users = [f"d{j}" for j in rng.sample(range(members), 1000)]
        t = time.perf_counter()
        r = c.post(
            "/v1/charges",
            json={"idempotency_key": f"rand-{i}", "users": users, "event": TINY},
            headers=PIPE,
        )
        lat.append(time.perf_counter() - t)
        assert r.status_code == 201, r.text
    out["explicit_1000_random_users"] = ms(lat)
    log(f"[{name}] explicit {out['explicit_1000_same_users']} / {out['explicit_1000_random_users']}")

    # a cohort round after the random explicit charges split the population into many classes
    lat = []
    for i in range(30):
        t = time.perf_counter()
        r = c.post(
            "/v1/charges",
            json={"idempotency_key": f"frag-{i}", "cohort": "population", "event": TINY},
            headers=PIPE,
        )
        lat.append(time.perf_counter() - t)
        assert r.status_code == 201, r.text
    with db.read() as s_:
        out["classes_after_random_explicit"] = int(
            s_.execute(
                text(
                    "SELECT count(*) FROM ledger_class_cohorts cc JOIN ledger_cohorts co ON co.id = cc.cohort_id "
                    "WHERE co.cohort_id = 'population'"
                )
            ).scalar_one()
        )
    out["cohort_round_fragmented"] = ms(lat)
    log(
        f"[{name}] fragmented round {out['cohort_round_fragmented']} ({out['classes_after_random_explicit']} classes)"
    )


def _concurrency(s1, s2, db, out: dict, log, name: str) -> None:
    """4. 32 concurrent pipelines, two serve processes."""
    hot = [f"hot{i}" for i in range(200)]
    budgets = {}
    with httpx.Client(base_url=s1.url, timeout=60) as c:
        for i, u in enumerate(hot):
            budgets[u] = 1.0 + (i % 5) * 0.5
        r = c.post(
            "/v1/users/bulk",
            json={"users": hot, "budget": {"epsilon": 1.0, "delta": 1e-6}},
            headers=ADMIN,
        )
        assert r.status_code == 201, r.text
        for u in hot:
            assert (
                c.put(
                    f"/v1/users/{u}",
                    json={"budget": {"epsilon": budgets[u], "delta": 1e-6}},
                    headers=ADMIN,
                ).status_code
                == 200
            )
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + 30

    def pipeline(tid):
        r = random.Random(tid)
        refused = 0
        with httpx.Client(base_url=(s1 if tid % 2 else s2).url, timeout=60) as c:
            for i in range(10_000):
                if time.monotonic() > deadline or refused >= 20:
                    break
                resp = c.post(
                    "/v1/charges",
                    json={"idempotency_key": f"p{tid}-{i}", "users": r.sample(hot, 5), "event": SMALL},
                    headers=PIPE,
                )
                with lock:
                    statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1
                refused = refused + 1 if resp.status_code == 409 else 0

    threads = [threading.Thread(target=pipeline, args=(t,)) for t in range(32)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    total = sum(statuses.values())
    over = 0
    for u in hot:
        a = svc.recompute_user(db, u)
        if a.recomputed_spent.epsilon > budgets[u] + 1e-12 or not a.running_not_below_recomputed:
            over += 1
    with db.read() as s:
        n_admitted = s.execute(
            text("SELECT count(*) FROM ledger_charges WHERE idempotency_key LIKE 'p%'")
        ).scalar_one()
    out["concurrent_32"] = {
        "requests": total,
        "wall_s": round(wall, 2),
        "requests_per_s": round(total / wall, 1),
        "admitted_per_s": round(statuses.get(201, 0) / wall, 1),
        "statuses": {str(k): v for k, v in statuses.items()},
        "five_xx": sum(v for k, v in statuses.items() if k >= 500),
        "users_over_budget": over,
        "admitted_in_db": int(n_admitted),
        "admitted_201s": statuses.get(201, 0),
    }
    log(f"[{name}] concurrent {out['concurrent_32']}")


def run_backend(name: str, url: str, members: int, rounds: int, log) -> dict:
    out: dict = {"backend": name, "load_avg_start": [round(x, 2) for x in os.getloadavg()]}
    log(f"[{name}] migrating {url.split('@')[-1]}")
    upgrade_to_head(url)
    db = Database(url)
    actor = svc.Actor("bench", "admin")
    size_after_setup = _setup(db, url, members, out, log, name)
    rng = random.Random(1)
    env = {"DATABASE_URL": url, "ACCOUNTANT_API_KEYS": KEYS, "ACCOUNTANT_LOG_LEVEL": "WARNING"}
    s1 = start_server(env, timeout=120)
    s2 = None
    try:
        with httpx.Client(base_url=s1.url, timeout=120) as c:
            _rounds_and_reads(c, db, actor, members, rng, out, log, name)
            _storage(db, url, actor, members, rounds, size_after_setup, out, log, name)
        with httpx.Client(base_url=s1.url, timeout=120) as c:  # a fresh connection after the long run
            _explicit_charges(c, db, members, rng, out, log, name)
        s2 = start_server(env, timeout=120)
        _concurrency(s1, s2, db, out, log, name)
    finally:
        s1.stop()
        if s2 is not None:
            s2.stop()

    out["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    db.dispose()
    return out


NOTES = """## Reading the numbers

* **Cohort round.** The members were created together and joined together, so they form one budget
  class: a round reads and writes one class row, one cohort row and one charge row whatever the
  cohort size (the "service layer" row is the same work without HTTP). After random explicit
  charges split the population, a round costs O(budget classes in the cohort) (vectorised
  admission, one batched UPDATE): see the "split the population" row.
* **Budget read.** One indexed join (user → class); spent ε, its order and the remaining ε are
  cached on the class row at every write, so no conversion runs on a read. The HTTP figure is
  dominated by the HTTP stack (middleware, logging, metrics) and by machine load.
* **1,000-user explicit charge.** A pipeline charging its own user list repeatedly hits the
  grouped path (the 1,000 users become one class after the first charge). Charging 1,000 *random*
  users of a 10⁶ population each time is the worst case: every charge moves 1,000 randomly placed
  user rows to a new class (random page writes in the table and its class index) and, on SQLite,
  commits them with an fsync (`synchronous=FULL`).
* **Concurrency.** 32 client threads, 2 `serve` processes, 200 users with budgets 1.0–3.0 and
  charges to 5 random users each, until refusals dominate. "over budget" counts users whose spent ε
  *recomputed from the charge log* exceeds the budget, or whose running sum is below the
  recomputation; "201s = in DB" compares the 201s seen with the charges stored.
* **Storage.** Per member: one user row and one membership row (plus indexes); per round: one
  charge row (event JSON, the curve and the cohort's cumulative curve on the 81-order grid, ≈ 1.3 kB
  of curves) and, on PostgreSQL, the dead tuple versions of the updated class and cohort rows until
  autovacuum reclaims them. No per-member row is written by a round (`ledger_charge_users` stays
  empty), so size grows O(rounds + members).
"""


def render(results: list[dict], args, started: str) -> str:
    lines = [
        "# Ledger benchmark results",
        "",
        f"Run {started} on {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs "
        "(this project's 2-core machine). Produced by `python bench/bench_ledger.py` "
        f"(`--members {args.members} --rounds {args.rounds}`). HTTP numbers are measured by a client on "
        "loopback against a real `privacy-accountant serve` process (one worker), so they include HTTP, JSON, "
        "authentication and the database commit (SQLite: WAL + `synchronous=FULL`, i.e. an fsync per commit).",
        "",
        "| operation | target | " + " | ".join(r["backend"] for r in results) + " |",
        "|---|---|" + "---|" * len(results),
    ]

    def row(label, target, fn):
        lines.append(f"| {label} | {target} | " + " | ".join(fn(r) for r in results) + " |")

    row(
        f"charge one round to a {args.members:,}-member cohort (shared budget and history)",
        "≤ 50 ms median",
        lambda r: f"{r['cohort_round']['median_ms']} ms median (p95 {r['cohort_round']['p95_ms']})",
    )
    row(
        "… the same, service layer only (no HTTP)",
        "",
        lambda r: (
            f"{r['cohort_round_in_process']['median_ms']} ms median (p95 {r['cohort_round_in_process']['p95_ms']})"
        ),
    )
    row(
        "… a round after 30 random 1,000-user explicit charges split the population",
        "",
        lambda r: (
            f"{r['cohort_round_fragmented']['median_ms']} ms median over {r['classes_after_random_explicit']} "
            "budget classes"
        ),
    )
    row(
        "read one user's spent/remaining budget",
        "≤ 5 ms median",
        lambda r: f"{r['budget_read']['median_ms']} ms median (p95 {r['budget_read']['p95_ms']})",
    )
    row(
        "… the same, service layer only (no HTTP)",
        "",
        lambda r: (
            f"{r['budget_read_in_process']['median_ms']} ms median (p95 {r['budget_read_in_process']['p95_ms']})"
        ),
    )
    row(
        "charge an explicit list of 1,000 users (the same 1,000)",
        "≤ 100 ms median",
        lambda r: (
            f"{r['explicit_1000_same_users']['median_ms']} ms median (p95 {r['explicit_1000_same_users']['p95_ms']})"
        ),
    )
    row(
        "charge an explicit list of 1,000 users (1,000 random users each time)",
        "≤ 100 ms median",
        lambda r: (
            f"{r['explicit_1000_random_users']['median_ms']} ms median "
            f"(p95 {r['explicit_1000_random_users']['p95_ms']})"
        ),
    )
    row(
        "32 concurrent pipelines (2 serve processes, 200 overlapping users, 5 per charge)",
        "no overspend, no lost charge, no 5xx; throughput",
        lambda r: (
            f"{r['concurrent_32']['requests_per_s']} req/s ({r['concurrent_32']['admitted_per_s']} admitted/s); "
            f"5xx: {r['concurrent_32']['five_xx']}; over budget: {r['concurrent_32']['users_over_budget']}; "
            f"201s {r['concurrent_32']['admitted_201s']} = in DB {r['concurrent_32']['admitted_in_db']}"
        ),
    )
    row(
        f"{args.rounds:,} rounds on a {args.members:,}-member cohort",
        "DB grows O(rounds + members)",
        lambda r: (
            f"{r['storage']['db_bytes_after_rounds'] / 1e6:.1f} MB total; "
            f"{r['storage']['bytes_per_member_setup']:.0f} B/member (users + memberships), "
            f"{r['storage']['bytes_per_round']:.0f} B/round; {r['storage']['classes']} budget classes"
        ),
    )
    lines += ["", "Setup (service layer, one transaction each):", ""]
    for r in results:
        lines.append(
            f"- {r['backend']}: create {args.members:,} users {r['setup_create_users_s']} s, add them to the "
            f"cohort {r['setup_add_members_s']} s; a round charged in-process (no HTTP) "
            f"{r['storage']['in_process_round_ms']} ms on average over the storage run."
        )
    lines += [
        "",
        "Machine load (1/5/15-minute load averages at the start and end of each backend's run; the "
        "machine has 2 cores and is shared with other jobs, so HTTP latencies include their contention):",
        "",
    ]
    for r in results:
        lines.append(f"- {r['backend']}: {r.get('load_avg_start')} → {r.get('load_avg_end')}")
    lines += ["", NOTES, "", "Raw results:", "", "```json", json.dumps(results, indent=1), "```", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--members", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=10_000)
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument(
        "--pg-url", default=os.environ.get("BENCH_POSTGRES_URL") or os.environ.get("TEST_POSTGRES_URL")
    )
    p.add_argument("--tmp", default="/tmp")
    p.add_argument("--out", default=str(ROOT / "bench" / "results_ledger.md"))
    args = p.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())

    def log(msg):
        print(msg, flush=True)

    results = []
    for b in args.backends.split(","):
        if b == "sqlite":
            results.append(
                run_backend("SQLite", fresh_sqlite(Path(args.tmp)), args.members, args.rounds, log)
            )
        elif b == "postgres":
            if not args.pg_url:
                log("PostgreSQL skipped: no --pg-url / BENCH_POSTGRES_URL / TEST_POSTGRES_URL")
                continue
            results.append(run_backend("PostgreSQL", fresh_pg(args.pg_url), args.members, args.rounds, log))
    Path(args.out).write_text(render(results, args, started))
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
