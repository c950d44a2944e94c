#!/usr/bin/env python
"""Federated mean estimation with subsampled shuffling, with every round paid for in a privacy ledger.

The story, top to bottom:

1. **Clients.** ``--clients`` simulated devices each hold one vector x_i in R^d with ‖x_i‖₂ ≤ 1.
   The goal is their mean μ = (1/n) Σ x_i, which the simulation knows, so the error can be measured.
2. **The ledger.** Every client is a *user* of the privacy-accountant service with the same budget
   (``--budget-epsilon``, ``--delta``), and all of them are members of one *cohort*. The service is
   either the one at ``--url`` or a local one this script starts (and stops) by itself.
3. **Rounds.** Each round the server samples k of the n clients uniformly without replacement (the
   sample is secret); each sampled client randomizes its vector on its own device with the ℓ2
   mechanism of the ``mechanisms`` package (ε0-LDP), a shuffler hides who sent which report, and the
   server turns the k reports into an unbiased estimate of μ. The final estimate is the average of
   the per-round estimates.
4. **Accounting.** *Before* a round touches any data, the pipeline charges that round's privacy cost
   (``mech.events(n, k)``: one ``subsampled_shuffle`` event) to the whole cohort — every member
   pays, sampled or not, because the amplification argument needs the sample to stay secret. The
   ledger admits the charge only if every member can still afford it; when it refuses (HTTP 409,
   ``BudgetExceeded`` in the SDK) nothing is recorded and the pipeline stops.

After each round it prints the error of that round's estimate, the error of the running average and
the ε spent so far as the ledger reports it; at the end, a summary.

Run (from the repository, after ``pip install -e .``)::

    python examples/federated_mean.py                       # starts its own local service
    python examples/federated_mean.py --budget-epsilon 0.3  # a small budget: the ledger stops it early
    python examples/federated_mean.py --url http://127.0.0.1:8000 --api-key <an admin key>

All simulation randomness (data, sampling, rotations, randomizers, shuffling) comes from one
``numpy.random.Generator`` seeded with ``--seed``, so a run is reproducible.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np

import mechanisms
from privacy_accountant import AccountantClient, AccountantHTTPError, BudgetExceeded, Conflict, TransportError

# ---------------------------------------------------------------------------------------------------------
# A local service for the duration of the run (used when --url is not given)
# ---------------------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve_command() -> list[str]:
    exe = shutil.which("privacy-accountant")
    if exe:
        return [exe]
    return [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main())"]


@contextlib.contextmanager
def local_service(timeout: float = 60.0) -> Iterator[tuple[str, str]]:
    """Start ``privacy-accountant serve`` on a free loopback port with a throw-away SQLite database and a
    fresh admin key; yield (url, key); stop the server and delete the database at exit."""
    with tempfile.TemporaryDirectory(prefix="federated-mean-") as tmp:
        # The API key is a credential, not simulation randomness: it comes from `secrets`.
        key = secrets.token_hex(16)
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{Path(tmp) / 'ledger.db'}",
            "ACCOUNTANT_API_KEYS": f"{key}:admin",
            "PYTHONUNBUFFERED": "1",
        }
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        log_path = Path(tmp) / "serve.log"
        with open(log_path, "wb") as log:
            # its own session, so stopping it also reaches any worker processes it forks
            proc = subprocess.Popen(
                [*_serve_command(), "serve", "--host", "127.0.0.1", "--port", str(port)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"the local service exited with status {proc.returncode}:\n"
                        + log_path.read_text(errors="replace")[-3000:]
                    )
                try:
                    if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the local service did not answer /health within {timeout:.0f} s:\n"
                        + log_path.read_text(errors="replace")[-3000:]
                    )
                time.sleep(0.1)
            yield url, key
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)  # the session started above: this server only
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(5)


# ---------------------------------------------------------------------------------------------------------
# The simulated population
# ---------------------------------------------------------------------------------------------------------


def make_clients(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """n vectors in the unit ℓ2 ball: a shared direction of norm 0.6 plus individual noise, with the few
    that land outside the ball scaled back onto its surface."""
    center = rng.normal(size=d)
    center *= 0.6 / np.linalg.norm(center)
    x = center + rng.normal(scale=0.4 / math.sqrt(d), size=(n, d))
    x /= np.maximum(1.0, np.linalg.norm(x, axis=1))[:, None]
    return x


# ---------------------------------------------------------------------------------------------------------
# The pipeline
# ---------------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--url", help="base URL of a running service (default: start a local one for this run)")
    p.add_argument(
        "--api-key",
        default=os.environ.get("ACCOUNTANT_API_KEY"),
        help="admin API key for --url (default: $ACCOUNTANT_API_KEY)",
    )
    p.add_argument("--clients", type=int, default=10_000, help="population size n")
    p.add_argument("--dim", type=int, default=16, help="dimension d of each client's vector")
    p.add_argument("--k", type=int, default=2_000, help="clients sampled per round")
    p.add_argument("--rounds", type=int, default=100, help="rounds planned (the ledger may stop it earlier)")
    p.add_argument("--epsilon0", type=float, default=1.0, help="local privacy level ε0 of one report")
    p.add_argument("--budget-epsilon", type=float, default=1.0, help="every client's budget ε")
    p.add_argument("--delta", type=float, default=1e-6, help="every client's budget δ")
    p.add_argument("--seed", type=int, default=0, help="seed of the numpy Generator")
    p.add_argument(
        "--run-id",
        help="prefix of the user/cohort ids and idempotency keys in the ledger "
        "(default: fedmean-s<seed>-<unix time>); reuse it to resume a run",
    )
    a = p.parse_args(argv)
    if not 1 <= a.k <= a.clients:
        p.error(f"--k must be between 1 and --clients ({a.clients}), got {a.k}")
    if a.rounds < 1 or a.dim < 1:
        p.error("--rounds and --dim must be at least 1")
    if a.url and not a.api_key:
        p.error("--url needs --api-key (an admin key: the run creates users and a cohort)")
    return a


def run(a: argparse.Namespace, url: str, api_key: str) -> int:
    n, k, d, T = a.clients, a.k, a.dim, a.rounds
    rng = np.random.default_rng(a.seed)
    run_id = a.run_id or f"fedmean-s{a.seed}-{int(time.time())}"
    user_prefix, cohort = f"{run_id}-client-", f"{run_id}-population"
    probe_user = f"{user_prefix}0"  # all members have the same history, so any one shows the cohort's spend

    # The randomizer. m = s = 1: each report is one message (one coordinate of the rotated vector, one
    # randomized bit), so one round costs exactly one accountant event. r_inf = r2 = 1: a rotated vector
    # of the unit ball never leaves the box [-1, 1]^d', so nothing is clipped, the estimate is unbiased
    # and mech.mse(n=k) is an exact worst-case bound on one round's mechanism error.
    def mechanism(rotation_seed: int) -> mechanisms.Mechanism:
        return mechanisms.get(
            "l2", epsilon0=a.epsilon0, d=d, m=1, s=1, r2=1.0, r_inf=1.0, n=n, rotation_seed=rotation_seed
        )

    mech0 = mechanism(0)
    [event] = mech0.events(n=n, k=k, count=1)
    # closed-form MSE of one round's estimate of μ: mechanism noise (sup over the ball) + sampling k of n
    # without replacement (≤ (n−k)/((n−1)k) · mean ‖x_i − μ‖², computed below for the actual data)
    x = make_clients(n, d, rng)
    mu = x.mean(axis=0)
    spread = float(np.mean(np.sum((x - mu) ** 2, axis=1)))
    mse_round = mech0.mse(n=k) + (n - k) / max(n - 1, 1) / k * spread

    print("=" * 100)
    print("Federated mean estimation: subsampled shuffled rounds, each charged to a per-user privacy ledger")
    print("=" * 100)
    print(
        f"clients n = {n:,}, vectors in the unit ℓ2 ball of R^{d} (‖μ‖₂ = {np.linalg.norm(mu):.3f});"
        f" per round k = {k:,} sampled without replacement"
    )
    print(
        f"randomizer: mechanisms.get('l2', epsilon0={a.epsilon0:g}, d={d}) — {mech0.bits_per_report} bits "
        f"per report, ε0 = {a.epsilon0:g}-LDP"
    )
    print(f"one round costs every client the event {event.to_dict()}")
    print(f"budget per client: ε = {a.budget_epsilon:g} at δ = {a.delta:g}; up to {T} rounds planned")
    print(
        f"closed-form RMSE of one round's estimate: {math.sqrt(mse_round):.4f} — a single round is noisy; "
        f"the average of t rounds has RMSE {math.sqrt(mse_round):.4f}/√t"
    )
    print(f"ledger: {url}  (run id {run_id})")

    with AccountantClient(url, api_key=api_key) as client:
        # Preview with the service's pure computation endpoint: what would the whole plan cost to the
        # ledger? (the ledger charges the RDP route, valid when budgets are spent adaptively)
        plan = client.epsilon([event.with_count(T)], delta=a.delta, accounting="rdp")
        verdict = "fits in" if plan.epsilon <= a.budget_epsilon else "exceeds"
        print(
            f"the plan of {T} rounds would cost ε = {plan.epsilon:.4f} at δ = {a.delta:g}: it {verdict} "
            "the budget" + ("" if verdict == "fits in" else ", so expect the ledger to stop the run early")
        )

        # Register the population: n users with one budget, and a cohort holding all of them.
        t0 = time.monotonic()
        client.bulk_create_users(
            budget={"epsilon": a.budget_epsilon, "delta": a.delta},
            id_range={"prefix": user_prefix, "start": 0, "count": n},
            on_conflict="skip",
        )
        with contextlib.suppress(Conflict):  # it exists already when a run is resumed with --run-id
            client.create_cohort(cohort, description=f"federated_mean example, {n} simulated clients")
        client.add_members(cohort, id_prefix=user_prefix, count=n)
        print(f"registered {n:,} users and cohort {cohort!r} in {time.monotonic() - t0:.2f} s")
        print("-" * 100)
        print(
            f"{'round':>6} | {'error this round':>16} | {'error of running mean':>21} | "
            f"{'ε spent (ledger)':>16} | {'ε remaining':>11}"
        )

        estimate = np.zeros(d)
        done, stopped_by, spent = 0, None, 0.0
        t_start = time.monotonic()
        for t in range(1, T + 1):
            # 1. The server announces the round's public rotation; its cost is fixed before any data is used.
            mech = mechanism(int(rng.integers(2**31)))
            [event] = mech.events(n=n, k=k, count=1)

            # 2. Pay first. The idempotency key makes a retried charge (network hiccup) count only once.
            try:
                admitted = client.charge_cohort(event, cohort, idempotency_key=f"{run_id}-round-{t}")
            except BudgetExceeded as exc:
                stopped_by = (t, exc)
                break

            # 3. Sample k clients (secret), each randomizes on its own device, the shuffler permutes.
            sample = rng.choice(n, size=k, replace=False)
            reports = mech.randomize(x[sample], rng)
            perm = rng.permutation(k)
            shuffled = {name: arr[perm] for name, arr in reports.items()}

            # 4. The server only sees the shuffled reports.
            round_estimate = mech.estimate(shuffled)
            done = t
            estimate += (round_estimate - estimate) / t

            # 5. What the ledger says each client has spent so far (ε at the budget's δ).
            user = client.get_user(probe_user)
            spent = user.spent.epsilon
            print(
                f"{t:>6} | {np.linalg.norm(round_estimate - mu):>16.4f} | "
                f"{np.linalg.norm(estimate - mu):>21.4f} | {spent:>16.4f} | {user.remaining_epsilon:>11.4f}"
                + (
                    "   (already charged by an earlier run with this --run-id: not charged again)"
                    if admitted.replayed
                    else ""
                )
            )
        elapsed = time.monotonic() - t_start

        print("-" * 100)
        if stopped_by is not None:
            t, exc = stopped_by
            after = client.get_user(probe_user).spent.epsilon
            refused = (
                exc.body.get("refused_count", len(exc.refused_users)) if isinstance(exc.body, dict) else "?"
            )
            print(
                f"STOPPED before round {t}: the ledger refused to charge it (HTTP {exc.status_code}): budget "
                f"exhausted — the round would take {refused:,} of the {n:,} cohort members over their budget"
            )
            print(f"  the ledger said: {exc.message}")
            print(
                f"  nothing was recorded for round {t} (spent ε is still {after:.4f}) and no client data was used"
            )
        else:
            print(f"completed all {T} planned rounds within the budget")
        charges = client.get_user(probe_user).charges

    print("=" * 100)
    print("Summary")
    print(
        f"  rounds run:        {done} of {T} planned "
        f"({'stopped by the ledger: budget exhausted' if stopped_by else 'all admitted'})"
    )
    print(
        f"  reports used:      {done * k:,} ({k:,} sampled clients per round out of {n:,}), "
        f"{done * k * mech0.bits_per_report:,} bits in total"
    )
    if done:
        final = float(np.linalg.norm(estimate - mu))
        print(
            f"  final estimate:    ‖mean_hat − μ‖₂ = {final:.4f}  (‖μ‖₂ = {np.linalg.norm(mu):.4f}; "
            f"closed-form RMSE after {done} rounds {math.sqrt(mse_round / done):.4f})"
        )
    else:
        print("  final estimate:    none (no round was admitted)")
    print(
        f"  privacy per user:  ε = {spent:.4f} of {a.budget_epsilon:g} at δ = {a.delta:g}, "
        f"{charges} charge(s) recorded for each of the {n:,} users (one per round, to the cohort)"
    )
    print(f"  time:              {elapsed:.2f} s for the rounds")
    return 0


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    try:
        if a.url:
            return run(a, a.url, a.api_key)
        with local_service() as (url, key):
            return run(a, url, key)
    except (AccountantHTTPError, TransportError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
