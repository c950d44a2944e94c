"""examples/federated_mean.py end to end, as a new user runs it: a subprocess that starts its own service.

Small sizes (2,000 clients) keep the two runs to a few seconds each. What is checked: exit status 0, a
table row per round, the ledger's ε non-decreasing, within the budget and equal to composing the rounds'
events with the accountant, the final error against the ℓ2 mechanism's closed-form MSE, and — with a
budget too small for the plan — the refusal path: the run stops, says the ledger refused, still exits 0.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import accountant
import mechanisms

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "federated_mean.py"
ROW = re.compile(r"^\s*(\d+)\s*\|\s*([0-9.]+)\s*\|\s*([0-9.]+)\s*\|\s*([0-9.]+)\s*\|\s*(-?[0-9.]+)")
N, D, DELTA = 2000, 16, 1e-6


def run_example(*args: str) -> tuple[subprocess.CompletedProcess, list[tuple[int, float, float, float]]]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONUNBUFFERED": "1"}
    env.pop("ACCOUNTANT_API_KEY", None)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--clients", str(N), "--dim", str(D), "--delta", str(DELTA), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )
    rows = [
        (int(m[1]), float(m[2]), float(m[3]), float(m[4]))
        for m in (ROW.match(line) for line in proc.stdout.splitlines())
        if m
    ]
    return proc, rows


def mse_bound(k: int, epsilon0: float) -> float:
    """Closed-form MSE of one round's estimate of the population mean: the mechanism's worst case over the
    unit ball (exact as nothing is clipped with r_inf = r2) plus sampling k of N without replacement
    ((N−k)/((N−1)k) · mean‖x_i − μ‖², and mean‖x_i − μ‖² ≤ mean‖x_i‖² ≤ 1)."""
    mech = mechanisms.get("l2", epsilon0=epsilon0, d=D, m=1, s=1, r2=1.0, r_inf=1.0, n=N)
    return mech.mse(n=k) + (N - k) / ((N - 1) * k)


def test_rounds_within_budget_and_error_matches_closed_form():
    k, eps0, rounds, budget = 1000, 2.0, 30, 20.0
    proc, rows = run_example(
        "--k",
        str(k),
        "--rounds",
        str(rounds),
        "--epsilon0",
        str(eps0),
        "--budget-epsilon",
        str(budget),
        "--seed",
        "3",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "Federated mean estimation" in out and "Summary" in out
    assert [r[0] for r in rows] == list(range(1, rounds + 1)), out
    assert "refused" not in out.lower()

    spent = [r[3] for r in rows]
    assert spent[0] > 0
    assert all(b >= a for a, b in zip(spent, spent[1:])), spent
    assert spent[-1] <= budget
    # the ledger's spend is the accountant's composition of the rounds' events (printed with 4 decimals)
    [event] = mechanisms.get("l2", epsilon0=eps0, d=D, n=N).events(n=N, k=k, count=rounds)
    expected, _ = accountant.epsilon([event], DELTA, accounting="rdp")  # the ledger's route
    assert math.isclose(spent[-1], expected, rel_tol=1e-3, abs_tol=1e-4), (spent[-1], expected)

    mse = mse_bound(k, eps0)
    final = rows[-1][2]
    assert final < 6 * math.sqrt(mse / rounds), (final, math.sqrt(mse / rounds))
    # each round's noise has the closed form's scale: the mean squared per-round error over 30 independent
    # rounds is below the worst-case MSE and not far below it (≈ 0.55 of it here, as these inputs sit near
    # the box's centre; an estimator returning 0 would be at ‖μ‖²/mse ≈ 0.3)
    mean_sq = sum(r[1] ** 2 for r in rows) / rounds
    assert 0.4 * mse < mean_sq < 1.2 * mse, (mean_sq, mse)


def test_small_budget_ledger_refuses_and_run_stops_cleanly():
    k, eps0, rounds, budget = 400, 1.0, 10, 0.11  # 3 rounds cost ε ≈ 0.104, 4 rounds ≈ 0.122 (RDP route)
    proc, rows = run_example(
        "--k", str(k), "--rounds", str(rounds), "--epsilon0", str(eps0), "--budget-epsilon", str(budget)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert [r[0] for r in rows] == [1, 2, 3], out
    assert all(b >= a for a, b in zip([r[3] for r in rows], [r[3] for r in rows][1:]))
    assert rows[-1][3] <= budget
    assert "STOPPED before round 4" in out
    assert "ledger refused" in out
    assert "budget exhausted" in out
    assert re.search(r"rounds run:\s+3 of 10 planned", out), out
