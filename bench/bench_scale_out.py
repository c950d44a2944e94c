"""Scale-out benchmark: charges/s through 1, 2 and 3 replicas behind haproxy on PostgreSQL
→ bench/results_scale_out.md, and the "Scale-out" section of bench/results_reliability.md.

    python bench/bench_scale_out.py                  # a private PostgreSQL server (fsync on), ≈ 8 minutes
    python bench/bench_scale_out.py --seconds 5      # shorter measurements
    python bench/bench_scale_out.py --pg-url postgresql+psycopg://…/db_for_bench   # (emptied first)

Each configuration runs ``privacy-accountant serve`` replicas (one worker each) on one database,
behind Debian's haproxy with the shipped ``deploy/haproxy.cfg`` on loopback ports
(``tests/helpers/balancer.py``), and one replica without the balancer as the balancer's cost. The
client load is the same for every configuration: ``--clients`` threads of this process, each an
SDK ``AccountantClient`` charging in a closed loop (next charge when the last is answered), for
``--seconds`` after a warm-up, in two workloads:

* **disjoint** — each client charges its own user: no two charges wait for the same rows;
* **overlap** — each charge names 3 of 16 users: charges on shared users wait for each other's
  row locks, whichever replica they reach.

Besides charges/s and latency, the CPU-seconds per second each part used during the measured
window: the replicas, haproxy, PostgreSQL (a private server's processes) and the clients (this
process), and the whole machine (``/proc/stat``: everything, other users' work included). The
machine and its load average are recorded: on a shared 2-core machine, absolute figures move with
the load; the ratios and the CPU shares are what to compare.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _util import replace_section  # noqa: E402
from bench_reliability import load, machine, pct  # noqa: E402

from app.db.migrate import upgrade_to_head  # noqa: E402
from privacy_accountant import AccountantClient  # noqa: E402
from tests.helpers import balancer as lbh  # noqa: E402
from tests.helpers import postgres as pgh  # noqa: E402
from tests.helpers.ledger import KEYS_ENV, truncate_pg  # noqa: E402
from tests.helpers.procs import cpu_seconds  # noqa: E402
from tests.helpers.server import start_server  # noqa: E402

ADMIN_KEY = "admin-key-0123456789"
PIPE_KEY = "pipeline-key-0123456789"
EVENT = {"mechanism": "gaussian", "noise_multiplier": 50.0}
WORKLOADS = ("disjoint", "overlap")
#: (replicas, behind the balancer)
CONFIGS = ((1, False), (1, True), (2, True), (3, True))


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU ticks of the whole machine so far (/proc/stat)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return sum(ticks) - idle, sum(ticks)


class Cpu:
    """CPU-seconds of each part between ``start()`` and ``stop()``: ``parts`` maps a name to a
    function giving its processes' pids at the start (PostgreSQL's backends come with the
    connections), or to None for this process."""

    def __init__(self, parts: dict[str, Callable[[], list[int]] | None]) -> None:
        self.parts = parts
        self.pids: dict[str, list[int] | None] = {}
        self.t0: dict[str, float] = {}
        self.used: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        out = {}
        for name, pids in self.pids.items():
            if pids is None:
                out[name] = time.process_time()
                continue
            total = 0.0
            for pid in pids:
                with contextlib.suppress(OSError):
                    total += cpu_seconds(pid)
            out[name] = total
        busy, _ = machine_busy()
        out["machine"] = busy / os.sysconf("SC_CLK_TCK")
        return out

    def start(self) -> None:
        self.pids = {name: (None if f is None else f()) for name, f in self.parts.items()}
        self.t0 = self._now()

    def stop(self) -> None:
        now = self._now()
        self.used = {k: now[k] - self.t0[k] for k in now}


def setup_users(url: str, names: list[str]) -> None:
    with AccountantClient(url, ADMIN_KEY, timeout=60, retries=4) as admin:
        for u in names:
            admin.put_user(u, {"epsilon": 1e6, "delta": 1e-6})


def drive(url: str, workload: str, clients: int, warmup: float, seconds: float, tag: str, cpu: Cpu) -> dict:
    """``clients`` SDK clients charging in a closed loop; what was answered in the measured window."""
    done: list[tuple[float, float]] = []  # (end time, latency) of each admitted charge
    errors: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(i: int) -> None:
        import random

        rng = random.Random(i)
        with AccountantClient(url, PIPE_KEY, timeout=60, retries=0) as sdk:
            k = 0
            while not stop.is_set():
                who = [f"o{j}" for j in rng.sample(range(16), 3)] if workload == "overlap" else [f"d{i}"]
                t = time.monotonic()
                try:
                    sdk.charge(EVENT, who, idempotency_key=f"{tag}-{workload}-{i}-{k}")
                except Exception as exc:  # counted, not retried: the rate is of answered charges
                    with lock:
                        errors.append(type(exc).__name__)
                else:
                    end = time.monotonic()
                    with lock:
                        done.append((end, end - t))
                k += 1

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    try:
        time.sleep(warmup)
        w0 = time.monotonic()
        n_err0 = len(errors)
        cpu.start()
        time.sleep(seconds)
        cpu.stop()
        w1 = time.monotonic()
        n_err = len(errors) - n_err0
    finally:
        stop.set()
        for t in threads:
            t.join(90)
    lat = [dt for end, dt in done if w0 <= end < w1]
    window = w1 - w0
    return {
        "rate": len(lat) / window,
        "p50": statistics.median(lat) if lat else float("nan"),
        "p99": pct(lat, 99),
        "errors": n_err,
        "cpu": {k: v / window for k, v in cpu.used.items()},
    }


def run_config(
    url: str, pg_pids, replicas: int, balanced: bool, clients: int, warmup: float, seconds: float
) -> dict:
    truncate_pg(url)
    env = {"DATABASE_URL": url, "ACCOUNTANT_API_KEYS": KEYS_ENV, "ACCOUNTANT_LOG_LEVEL": "warning"}
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(start_server(env, timeout=120)) for _ in range(replicas)]
        pids = [s.pid for s in servers]
        parts: dict[str, Callable[[], list[int]] | None] = {"replicas": lambda: pids}
        target = servers[0].url
        if balanced:
            lb = stack.enter_context(lbh.start_balancer([s.port for s in servers]))
            parts["haproxy"] = lambda: [lb.proc.pid] if lb.proc else []
            target = lb.url
        setup_users(target, [f"d{i}" for i in range(clients)] + [f"o{j}" for j in range(16)])
        out = {}
        for w in WORKLOADS:
            cpu = Cpu({**parts, "postgresql": pg_pids or list, "clients": None})
            out[w] = drive(target, w, clients, warmup, seconds, f"r{replicas}{'lb' if balanced else ''}", cpu)
            print(replicas, "balanced" if balanced else "direct", w, out[w], flush=True)
        return out


# ---------------------------------------------------------------------------------------------- report
def label(replicas: int, balanced: bool) -> str:
    return f"{replicas} replica{'s' if replicas > 1 else ''}" + (" + haproxy" if balanced else ", direct")


def merge(runs: list[dict]) -> dict:
    """The rounds of one configuration and workload: mean rate (and each round's), median p50,
    largest p99, errors summed, mean CPU-seconds per second of each part."""
    return {
        "rate": statistics.fmean(r["rate"] for r in runs),
        "rates": [r["rate"] for r in runs],
        "p50": statistics.median(r["p50"] for r in runs),
        "p99": max(r["p99"] for r in runs),
        "errors": sum(r["errors"] for r in runs),
        "cpu": {k: statistics.fmean(r["cpu"].get(k, 0.0) for r in runs) for k in runs[0]["cpu"]},
    }


def ms_per_charge(r: dict, *parts: str) -> float:
    return 1e3 * sum(r["cpu"].get(p, 0.0) for p in parts) / r["rate"]


def table(res: dict, workload: str) -> list[str]:
    base = res[(1, True)][workload]["rate"]
    L = [
        "| configuration | charges/s (each round) | vs 1 replica + haproxy | p50 | p99 | errors "
        "| CPU-ms per charge: replicas / + haproxy + PostgreSQL "
        "| CPU-s/s: replicas | haproxy | PostgreSQL | clients | whole machine |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cfg in CONFIGS:
        r = res[cfg][workload]
        c = r["cpu"]
        each = ", ".join(f"{x:.0f}" for x in r["rates"])
        L.append(
            f"| {label(*cfg)} | {r['rate']:.0f} ({each}) | {r['rate'] / base:.2f}× | {1e3 * r['p50']:.0f} ms "
            f"| {1e3 * r['p99']:.0f} ms | {r['errors']} | {ms_per_charge(r, 'replicas'):.1f} / "
            f"{ms_per_charge(r, 'replicas', 'haproxy', 'postgresql'):.1f} | {c['replicas']:.2f} | "
            f"{c.get('haproxy', 0.0):.2f} | {c['postgresql']:.2f} | {c['clients']:.2f} | {c['machine']:.2f} |"
        )
    return L


def limits(res: dict) -> list[str]:
    """What limits the figures on this machine, from the measurements."""
    cores = os.cpu_count() or 1
    ratio = {n: {w: res[(n, True)][w]["rate"] / res[(1, True)][w]["rate"] for w in WORKLOADS} for n in (2, 3)}
    one = res[(1, True)]["disjoint"]
    replica_ms = ms_per_charge(one, "replicas")
    all_ms = ms_per_charge(one, "replicas", "haproxy", "postgresql", "clients")
    ours = {
        cfg: statistics.fmean(
            sum(res[cfg][w]["cpu"].get(k, 0.0) for k in ("replicas", "haproxy", "postgresql", "clients"))
            for w in WORKLOADS
        )
        for cfg in CONFIGS
    }
    machine_cpu = statistics.fmean(res[cfg][w]["cpu"]["machine"] for cfg in CONFIGS for w in WORKLOADS)
    return [
        f"Through 2 and 3 replicas: **{ratio[2]['disjoint']:.2f}×** and **{ratio[3]['disjoint']:.2f}×** the "
        f"charges/s of one (disjoint users), **{ratio[2]['overlap']:.2f}×** and **{ratio[3]['overlap']:.2f}×** "
        "(overlapping users).",
        "",
        f"* **The cores.** This machine has {cores}, and every part of the deployment runs on them: the "
        "replicas, PostgreSQL, haproxy and the clients (the Python SDK in threads of one process). A charge "
        f"costs about {replica_ms:.0f} CPU-ms in the replica that serves it ({all_ms:.0f} CPU-ms with "
        "haproxy, PostgreSQL and the client). A replica is one Python process (its event loop and worker "
        "threads share one interpreter lock), so it uses at most about one core: with a core to itself one "
        f"replica would serve ≈ {1e3 / replica_ms:.0f} charges/s; a second replica can use the second core, a "
        f"third has no core of its own here. The machine was busy {machine_cpu:.2f} CPU-s/s on "
        f"average ({machine_cpu / cores:.0%} of its cores) during the measurements, of which this deployment "
        f"used {min(ours.values()):.2f}–{max(ours.values()):.2f}: the rest was other users' work, so each "
        "configuration got what the scheduler gave its processes (more replicas are more processes, and "
        "get a larger share of a machine that is busy anyway). The ratios here are therefore how the "
        "work spreads over the cores this machine had free, not what replicas on their own machines give.",
        "* **The database.** What replicas share is PostgreSQL: every charge is one write transaction with "
        "a durable commit (fsync on), and charges naming the same users wait for each other's row locks "
        "whichever replica they reach (the overlap rows). `ACCOUNTANT_DB_WRITE_LANES` (4 per process) "
        "bounds the write transactions of each replica, so N replicas allow 4·N at once on the database.",
        "* **The balancer** costs little CPU (the haproxy column) and one more "
        "hop on loopback: compare one replica direct and behind haproxy (within the rounds' spread here).",
        "",
    ]


def report(res: dict, info: dict) -> str:
    L = [
        "# Scale-out benchmark",
        "",
        f"Generated by `python bench/bench_scale_out.py` on {info['when']} — {info['machine']}. Load average "
        f"at start {info['load_start']}, at end {info['load_end']} (the machine is shared with other work). "
        f"PostgreSQL: {info['pg']}. Replicas: `privacy-accountant serve`, one worker each, default settings; "
        "balancer: Debian's haproxy 2.6 with `deploy/haproxy.cfg` (round robin, health checks on "
        f"`/health/ready`); loopback. The same client load for every row: {info['clients']} SDK clients "
        f"(threads of the benchmark process) charging in a closed loop, measured for {info['seconds']:.0f} s "
        f"after {info['warmup']:.0f} s of warm-up, in {info['rounds']} rounds (configurations in turn, the "
        "order reversed each round: the load of a shared machine drifts). Event: a Gaussian mechanism "
        "(closed-form curve). CPU-s/s: CPU-seconds per second used by each part during the measurement.",
        "",
        "## disjoint users (each client charges its own user)",
        "",
        *table(res, "disjoint"),
        "",
        "## overlapping users (each charge names 3 of 16 users)",
        "",
        *table(res, "overlap"),
        "",
        "## What limits it here",
        "",
        *limits(res),
    ]
    return "\n".join(L)


def reliability_section(res: dict, info: dict) -> str:
    """The short "Scale-out" section of bench/results_reliability.md."""
    rows = [
        "## Scale-out",
        "",
        f"`python bench/bench_scale_out.py` on {info['when']} ({info['machine']}; load average "
        f"{info['load_start']} → {info['load_end']}): charges/s through haproxy to 1, 2 and 3 `serve` replicas on "
        f"one PostgreSQL, the same {info['clients']} SDK clients, all of it on this machine's "
        f"{os.cpu_count()} cores (shared with other work). Details and what limits it: "
        "[results_scale_out.md](results_scale_out.md). A replica killed with SIGKILL mid-burst and restarted "
        "loses nothing, charges nothing twice and overspends nobody (`tests/app/test_scale_out.py`).",
        "",
        "| workload | 1 replica, direct | 1 replica | 2 replicas | 3 replicas | 2 / 1 | 3 / 1 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for w in WORKLOADS:
        r = [res[cfg][w]["rate"] for cfg in CONFIGS]
        rows.append(
            f"| {w} | {r[0]:.0f} | {r[1]:.0f} | {r[2]:.0f} | {r[3]:.0f} | {r[2] / r[1]:.2f}× | {r[3] / r[1]:.2f}× |"
        )
    return "\n".join(rows) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pg-url", help="PostgreSQL database to use (its ledger tables are emptied)")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=2, help="each configuration this many times, in turn")
    p.add_argument("--no-write", action="store_true")
    a = p.parse_args(argv)
    # stopped with SIGTERM: unwind, so the servers, haproxy and PostgreSQL started here are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if lbh.haproxy() is None:
        print("haproxy not found (bash .ci/install-haproxy.sh installs Debian's)", file=sys.stderr)
        return 2
    info = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "load_start": load(),
        "clients": a.clients,
        "seconds": a.seconds,
        "warmup": a.warmup,
        "rounds": a.rounds,
    }
    with contextlib.ExitStack() as stack:
        if a.pg_url:
            url, pg_pids = a.pg_url, None
            info["pg"] = "the server given by --pg-url (its CPU not attributed)"
        else:
            pg = stack.enter_context(pgh.private_postgres(fsync=True))
            url, pg_pids = pg.url, pg.pids
            info["pg"] = "a private server on this machine (fsync on, `max_connections` 60)"
        upgrade_to_head(url)
        runs: dict = {cfg: {w: [] for w in WORKLOADS} for cfg in CONFIGS}
        for i in range(a.rounds):
            for cfg in CONFIGS if i % 2 == 0 else CONFIGS[::-1]:
                out = run_config(url, pg_pids, cfg[0], cfg[1], a.clients, a.warmup, a.seconds)
                for w in WORKLOADS:
                    runs[cfg][w].append(out[w])
        res = {cfg: {w: merge(runs[cfg][w]) for w in WORKLOADS} for cfg in CONFIGS}
    info["load_end"] = load()
    text = report(res, info)
    print(text)
    if not a.no_write:
        (ROOT / "bench" / "results_scale_out.md").write_text(text)
        rel = ROOT / "bench" / "results_reliability.md"
        rel.write_text(replace_section(rel.read_text(), "Scale-out", reliability_section(res, info)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
