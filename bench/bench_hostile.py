"""Hostile charges (issue 25, rows 1–2) → the "Hostile charges" section of bench/results_reliability.md.

    python bench/bench_hostile.py [--seconds 20] [--no-write]

One ``serve`` (one worker, temp SQLite). Victims: 2 pipeline connections charging light events
(a Gaussian release) to their own users, first alone, then while 2 attacker connections (the same
pipeline key) charge never-seen heavy events — a ``subsampled`` round of 100 distinct shuffles at
k ≈ 10⁸, a fresh one each time (the issue's attack). Recorded: the victims' charges answered /
refused and their latency, the attack's answers and latency, and admin writes meanwhile. Then the
membership write of the issue's row 2: an ``id_range`` of 2,000,000 users (answered before its
database work by the documented 100,000 per request limit) and one of 100,000 (committed; the
answer's count against the rows). The machine and its load are recorded; the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _util import machine, replace_section  # noqa: E402
from bench_reliability import ADMIN, PIPE, env, pct, tmp_sqlite, users  # noqa: E402

from tests.helpers.server import start_server  # noqa: E402

HEADING = "Hostile charges"


def heavy_event(i: int) -> dict:
    inner = [{"mechanism": "shuffle", "epsilon0": round(0.5 + 1e-3 * j + 1e-7 * i, 9)} for j in range(100)]
    return {"mechanism": "subsampled", "n": 10**9, "k": 10**8 - i, "inner": inner}


def charge(c: httpx.Client, key: str, who: list[str], event: dict) -> tuple[int, float]:
    t = time.perf_counter()
    try:
        r = c.post("/v1/charges", json={"idempotency_key": key, "users": who, "event": event}, headers=PIPE)
        code = r.status_code
    except httpx.HTTPError:
        code = 0
    return code, time.perf_counter() - t


def run(url: str, seconds: float, attackers: int) -> dict:
    stop = time.monotonic() + seconds
    victim: list[tuple[int, float]] = []
    attack: list[tuple[int, float]] = []
    admin: list[int] = []
    lock = threading.Lock()

    def victim_loop(v: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as c:
            i = 0
            while time.monotonic() < stop:
                res = charge(
                    c,
                    f"v{v}-{attackers}-{i}",
                    [f"victim{v}"],
                    {"mechanism": "gaussian", "noise_multiplier": 20.0},
                )
                with lock:
                    victim.append(res)
                i += 1

    def attack_loop(a: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as c:
            i = 0
            while time.monotonic() < stop:
                res = charge(c, f"a{a}-{i}", [f"attacker{a}"], heavy_event(1000 * a + i))
                with lock:
                    attack.append(res)
                i += 1

    def admin_loop() -> None:
        with httpx.Client(base_url=url, timeout=60) as c:
            i = 0
            while time.monotonic() < stop:
                r = c.put(
                    f"/v1/users/admin-made-{attackers}-{i}",
                    json={"budget": {"epsilon": 1.0, "delta": 1e-6}},
                    headers=ADMIN,
                )
                admin.append(r.status_code)
                i += 1
                time.sleep(0.2)

    threads = [threading.Thread(target=victim_loop, args=(v,)) for v in range(2)]
    threads += [threading.Thread(target=attack_loop, args=(a,)) for a in range(attackers)]
    threads.append(threading.Thread(target=admin_loop))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lat = [dt for code, dt in victim if code == 200 or code == 201]
    return {
        "victim": Counter(code for code, _ in victim),
        "victim_p50": statistics.median(lat) if lat else float("nan"),
        "victim_p99": pct(lat, 99),
        "attack": Counter(code for code, _ in attack),
        "attack_p50": statistics.median([dt for _, dt in attack]) if attack else float("nan"),
        "admin": Counter(admin),
    }


def membership(url: str) -> dict:
    with httpx.Client(base_url=url, timeout=120) as c:
        c.post("/v1/cohorts", json={"cohort_id": "pop"}, headers=ADMIN)
        body = {
            "id_range": {"prefix": "d-", "start": 0, "count": 100_000},
            "budget": {"epsilon": 1.0, "delta": 1e-6},
        }
        assert c.post("/v1/users/bulk", json=body, headers=ADMIN).status_code in (200, 201)
        out = {}
        for count in (2_000_000, 100_000):
            t = time.perf_counter()
            r = c.post(
                "/v1/cohorts/pop/members",
                json={"id_range": {"prefix": "d-", "start": 0, "count": count}},
                headers=ADMIN,
            )
            out[count] = (r.status_code, time.perf_counter() - t, r.json())
        out["members"] = c.get("/v1/cohorts/pop", headers=ADMIN).json().get("members")
    return out


def fmt(counts: Counter) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    with start_server(env(tmp_sqlite("hostile"))) as srv:
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            users(c, ["victim0", "victim1", "attacker0", "attacker1"])
        alone = run(srv.url, args.seconds, 0)
        attacked = run(srv.url, args.seconds, 2)
        mem = membership(srv.url)
    load1 = os.getloadavg()[0]
    total_a = sum(attacked["victim"].values())
    refused = total_a - attacked["victim"].get(201, 0) - attacked["victim"].get(200, 0)
    lines = [
        f"## {HEADING}",
        "",
        f"`python bench/bench_hostile.py` ({args.seconds:g} s per phase), {machine()}; load average "
        f"{load0:.2f} → {load1:.2f}. One worker, SQLite. Issue: 27–71% of light charges refused (503 after 5 s) "
        "while 2 connections charged fresh heavy events, admin writes 503; a 2M-id membership answered 503 "
        "'nothing was recorded' after committing.",
        "",
        "| phase | victim charges (status: count) | victims refused | victim p50 / p99 | attack answers | attack p50 | admin writes |",
        "|---|---|---:|---:|---|---:|---|",
        f"| victims alone | {fmt(alone['victim'])} | 0% | {1e3 * alone['victim_p50']:.0f} / {1e3 * alone['victim_p99']:.0f} ms | — | — | {fmt(alone['admin'])} |",
        f"| with 2 attackers | {fmt(attacked['victim'])} | {100 * refused / max(total_a, 1):.0f}% | "
        f"{1e3 * attacked['victim_p50']:.0f} / {1e3 * attacked['victim_p99']:.0f} ms | {fmt(attacked['attack'])} | "
        f"{1e3 * attacked['attack_p50']:.0f} ms | {fmt(attacked['admin'])} |",
        "",
        "| membership `id_range` | status | time | answer |",
        "|---:|---:|---:|---|",
    ]
    for count in (2_000_000, 100_000):
        code, dt, body = mem[count]
        detail = body.get("detail", "")
        if isinstance(detail, list):  # a validation error: its message
            detail = "; ".join(str(d.get("msg", d)) for d in detail)
        what = (
            str(detail)[:90]
            if code >= 400
            else ", ".join(f"{k} {v}" for k, v in body.items() if isinstance(v, int))
        )
        lines.append(f"| {count:,} | {code} | {dt:.2f} s | {what} |")
    lines += [
        "",
        f"Members after both requests: {mem['members']:,}.",
        "",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        path = Path(__file__).with_name("results_reliability.md")
        path.write_text(replace_section(path.read_text(), HEADING, text))


if __name__ == "__main__":
    main()
