#!/usr/bin/env python
"""The privacy–utility trade-off of private training: test accuracy against the target ε, per run type.

For each run type, at each target ε (and without privacy, the baseline) and each seed, this script

1. **calibrates through the service** (the SDK against a running server) the run's privacy knob to
   the target ε at δ, judged by the RDP route the ledger charges by:

   - **CLDP-SGD in the shuffle model** (``cldp``): each of ``--rounds`` rounds samples k = n/2 of the
     n users without replacement; each sampled user clips one sample's logistic-loss gradient to
     ℓ∞ norm ``--clip`` and randomizes it with the ``linf`` mechanism (ε0-LDP); the reports are
     shuffled and averaged. ``POST /v1/calibrate`` solves for the largest ε0 of the run's event
     (``subsampled`` k of n, an inner ``shuffle``, ``count`` = rounds) that meets the target;
     the amplification by shuffling and by sampling is in that event's accounting. The mechanism
     built at that ε0 is checked with ``POST /v1/epsilon`` (never above the target).
   - **central user-level SGD** (``central``, ``winsorized_sgd``, Levy et al. Alg. 3): every step
     the trusted server takes the Hadamard-rotated winsorized mean of the n users' clipped average
     gradients, for ``--steps`` steps; ``POST /v1/mechanisms/winsorized_sgd/parameters`` with
     ``calibrate`` solves for its knob (ε'' per rotated coordinate and step).

2. **trains** a logistic regression with it, and 3. **evaluates** on held-out data.

The non-private baseline of each run type is the same run without its randomizer or noise (the
same clipping, sampling, steps). The data: scikit-learn's bundled breast-cancer set (569 samples,
30 features; nothing is downloaded), standardised and scaled into the unit ℓ2 ball as in
``examples/training.py`` (the scaling statistics are treated as public); 80% training data, one user
per ``--items-per-user`` samples, 20% held out. Seed s fixes the split and all of the run's
randomness; every ε of one seed uses the same split.

Writes ``tradeoff.csv`` (``run,target_epsilon,seed,accuracy``; ``inf`` for the baseline) and the
figure ``tradeoff.png`` / ``tradeoff.svg`` (mean and min–max over seeds against ε, log scale; each
baseline as a horizontal line and band) into ``--out``.

    python examples/tradeoff.py --out docs/img      # a local service is started for the run
    python examples/tradeoff.py --url http://127.0.0.1:8000 --out /tmp/tradeoff
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import mechanisms
from mechanisms.winsorized_sgd import WinsorizedSGD, clip_rows_l2, project_l2_ball
from privacy_accountant import AccountantClient, AccountantHTTPError, TransportError

HERE = Path(__file__).resolve().parent
RUNS = ("cldp", "central")
LABELS = {
    "cldp": "CLDP-SGD (shuffle model, linf ε0-LDP reports)",
    "central": "central user-level SGD (winsorized_sgd)",
}
COLUMNS = ("run", "target_epsilon", "seed", "accuracy")


def _example(name: str):
    """examples/<name>.py as a module (the data, model and local service live there, one copy)."""
    spec = importlib.util.spec_from_file_location(f"{name}_example", HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


training = _example("training")


@dataclass
class Data:
    users_X: np.ndarray  # (n, m, d)
    users_y: np.ndarray  # (n, m)
    Xte: np.ndarray
    yte: np.ndarray

    @property
    def n(self) -> int:
        return self.users_X.shape[0]

    @property
    def d(self) -> int:
        return self.users_X.shape[2]


def load(seed: int, items_per_user: int, max_users: int | None) -> Data:
    Xtr, ytr, Xte, yte = training.load(np.random.default_rng([seed, 0]))
    m = items_per_user
    n = Xtr.shape[0] // m if max_users is None else min(max_users, Xtr.shape[0] // m)
    return Data(Xtr[: n * m].reshape(n, m, -1), ytr[: n * m].reshape(n, m), Xte, yte)


# ---------------------------------------------------------------------------------------------------------
# Calibration through the service
# ---------------------------------------------------------------------------------------------------------


def best_slots(epsilon0: float, d: int) -> int:
    """The slots per report s (1–8) of the linf mechanism with the smallest MSE at ε0 — chosen after
    calibrating: the run's event depends on ε0 only."""
    best, best_mse = 1, math.inf
    for s in range(1, 9):
        try:
            mse = mechanisms.get("linf", epsilon0=epsilon0, d=d, m=1, s=s, r_inf=1.0).mse(n=1)
        except mechanisms.MechanismError:
            continue
        if mse < best_mse:
            best, best_mse = s, mse
    return best


def calibrate_cldp(client: AccountantClient, a: argparse.Namespace, eps: float, n: int, d: int):
    k = max(1, n // 2)
    run = {"mechanism": "subsampled", "n": n, "k": k, "count": a.rounds, "inner": [{"mechanism": "shuffle"}]}
    r = client.calibrate(run, "epsilon0", target={"epsilon": eps, "delta": a.delta}, accounting="rdp")
    eps0 = float(r.value)
    mech = mechanisms.get("linf", epsilon0=eps0, d=d, m=1, s=best_slots(eps0, d), r_inf=1.0)
    spent = client.epsilon(mech.events(n=n, k=k, count=a.rounds), delta=a.delta, accounting="rdp").epsilon
    if spent > eps:
        raise RuntimeError(f"cldp: the calibrated run costs ε = {spent} > the target {eps}")
    return mech, {"epsilon0": eps0, "epsilon": spent}


def central_params(a: argparse.Namespace, n: int, d: int) -> dict:
    return {
        "T": a.steps,
        "d": d,
        "G": 1.0,
        "tau": a.tau_rotated,
        "n": n,
        "tau_rotated": a.tau_rotated,
        "width_factor": 6.0,
        "learning_rate": a.central_lr,
        "radius": a.radius,
    }


def calibrate_central(client: AccountantClient, a: argparse.Namespace, eps: float, n: int, d: int):
    body = {"params": central_params(a, n, d), "calibrate": {"epsilon": eps, "delta": a.delta}}
    r = client.request("POST", "/v1/mechanisms/winsorized_sgd/parameters", json=body)
    if r["epsilon"] is None or r["epsilon"] > eps:
        raise RuntimeError(f"central: the calibrated run costs ε = {r['epsilon']} > the target {eps}")
    return WinsorizedSGD(**r["params"]), {
        "epsilon_per_coordinate": r["params"]["epsilon"],
        "epsilon": r["epsilon"],
    }


# ---------------------------------------------------------------------------------------------------------
# Training (mech None: the non-private baseline of the same run)
# ---------------------------------------------------------------------------------------------------------


def train_cldp(mech, data: Data, a: argparse.Namespace, rng: np.random.Generator) -> float:
    n, m, d = data.users_X.shape
    k = max(1, n // 2)
    theta, avg = np.zeros(d), np.zeros(d)
    for t in range(1, a.rounds + 1):
        sample = rng.choice(n, size=k, replace=False)
        item = rng.integers(m, size=k)
        g = training.gradients(theta, data.users_X[sample, item], data.users_y[sample, item])
        g = g / np.maximum(a.clip, np.abs(g).max(axis=1))[:, None]  # clipped to ℓ∞ ≤ clip, over clip
        if mech is None:
            est = g.mean(axis=0)
        else:
            reports = mech.randomize(g, rng)
            perm = rng.permutation(k)
            est = mech.estimate({key: np.asarray(v)[perm] for key, v in reports.items()})
        theta = project_l2_ball(theta - a.lr * a.clip * est, a.radius)
        avg += (theta - avg) / t  # the average iterate (post-processing)
    return training.accuracy(avg, data.Xte, data.yte)


def train_central(mech, data: Data, a: argparse.Namespace, rng: np.random.Generator) -> float:
    n, _, d = data.users_X.shape
    theta = np.zeros(d)
    for _ in range(a.steps):
        g = np.stack(
            [training.gradients(theta, data.users_X[i], data.users_y[i]).mean(axis=0) for i in range(n)]
        )
        g = clip_rows_l2(g, 1.0)
        gbar = g.mean(axis=0) if mech is None else mech.private_gradient(g, rng)
        theta = project_l2_ball(theta - a.central_lr * gbar, a.radius)
    return training.accuracy(theta, data.Xte, data.yte)


CALIBRATE = {"cldp": calibrate_cldp, "central": calibrate_central}
TRAIN = {"cldp": train_cldp, "central": train_central}


def sweep(client: AccountantClient, a: argparse.Namespace) -> list[dict]:
    """Rows of the CSV: every run type × (its target ε values, then inf) × seed."""
    datasets = {s: load(s, a.items_per_user, a.max_users) for s in range(a.seeds)}
    n, d = datasets[0].n, datasets[0].d
    rows = []
    for run in a.runs:
        for eps in [*getattr(a, f"{run}_epsilons"), math.inf]:
            t0 = time.monotonic()
            mech, info = (None, {}) if math.isinf(eps) else CALIBRATE[run](client, a, eps, n, d)
            accs = []
            for seed, data in datasets.items():
                rng = np.random.default_rng([seed, 1])
                accs.append(TRAIN[run](mech, data, a, rng))
                rows.append({"run": run, "target_epsilon": eps, "seed": seed, "accuracy": accs[-1]})
            knob = ", ".join(f"{k} {v:.4g}" for k, v in info.items())
            print(
                f"{run:>8} | ε = {eps:>5g} | {knob or 'non-private':<46} | accuracy "
                f"{np.mean(accs):.4f} (min {min(accs):.4f}, max {max(accs):.4f}) | {time.monotonic() - t0:.1f} s",
                flush=True,
            )
    return rows


# ---------------------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------------------


def write_csv(rows: Sequence[dict], path: Path) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([r["run"], f"{r['target_epsilon']:g}", r["seed"], f"{r['accuracy']:.4f}"])


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return [
            {
                "run": r["run"],
                "target_epsilon": float(r["target_epsilon"]),
                "seed": int(r["seed"]),
                "accuracy": float(r["accuracy"]),
            }
            for r in csv.DictReader(f)
        ]


def summarize(rows: Sequence[dict]) -> dict[str, dict[float, list[float]]]:
    """run → target ε → the seeds' accuracies."""
    out: dict[str, dict[float, list[float]]] = {}
    for r in rows:
        out.setdefault(r["run"], {}).setdefault(r["target_epsilon"], []).append(r["accuracy"])
    return out


def plot(rows: Sequence[dict], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "privacy-accountant"
    fig, ax = plt.subplots(figsize=(6.6, 4.2))
    for i, (run, by_eps) in enumerate(summarize(rows).items()):
        color = f"C{i}"
        eps = sorted(e for e in by_eps if math.isfinite(e))
        mean = [float(np.mean(by_eps[e])) for e in eps]
        ax.fill_between(
            eps, [min(by_eps[e]) for e in eps], [max(by_eps[e]) for e in eps], color=color, alpha=0.2
        )
        ax.plot(eps, mean, marker="o", ms=4, lw=1.5, color=color, label=LABELS.get(run, run))
        base = by_eps.get(math.inf)
        if base:
            ax.axhspan(min(base), max(base), color=color, alpha=0.08)
            ax.axhline(
                float(np.mean(base)), color=color, ls="--", lw=1.0, label=f"{run}: non-private baseline"
            )
    ax.set_xscale("log")
    ticks = sorted({r["target_epsilon"] for r in rows if math.isfinite(r["target_epsilon"])})
    ax.set_xticks(ticks, [f"{e:g}" for e in ticks])
    ax.minorticks_off()
    ax.set_xlabel("target ε at δ (calibrated through the service)")
    ax.set_ylabel("held-out accuracy (mean; band: min–max over seeds)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(
            out / f"tradeoff.{ext}", dpi=130, metadata={"Date": None} if ext == "svg" else {"Software": None}
        )
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------


def _floats(text: str) -> list[float]:
    return sorted(float(x) for x in text.split(","))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--url", help="base URL of a running service (default: start a local one for this run)")
    p.add_argument("--api-key", default=os.environ.get("ACCOUNTANT_API_KEY"), help="API key for --url")
    p.add_argument("--out", default="docs/img", help="directory for tradeoff.csv, .png and .svg")
    p.add_argument("--runs", default="cldp,central", help="run types, comma-separated (cldp, central)")
    p.add_argument("--cldp-epsilons", type=_floats, default=[0.25, 0.5, 1.0, 2.0, 4.0], help="CLDP targets ε")
    p.add_argument("--central-epsilons", type=_floats, default=[0.5, 1.0, 2.0, 4.0], help="central targets ε")
    p.add_argument("--delta", type=float, default=1e-5, help="the target's δ")
    p.add_argument("--seeds", type=int, default=5, help="seeds 0..seeds-1 (split and randomness)")
    p.add_argument("--items-per-user", type=int, default=1, help="training samples per user (m)")
    p.add_argument("--max-users", type=int, default=None, help="use at most this many users (smaller runs)")
    p.add_argument("--rounds", type=int, default=100, help="CLDP-SGD: rounds (k = n/2 users each)")
    p.add_argument("--lr", type=float, default=2.0, help="CLDP-SGD: step size")
    p.add_argument("--clip", type=float, default=0.3, help="CLDP-SGD: ℓ∞ clipping bound of a gradient")
    p.add_argument("--steps", type=int, default=10, help="central run: steps T (all users each step)")
    p.add_argument("--central-lr", type=float, default=2.0, help="central run: step size")
    p.add_argument("--tau-rotated", type=float, default=0.1, help="central run: rotated radius τ''")
    p.add_argument("--radius", type=float, default=50.0, help="projection radius of θ (both runs)")
    a = p.parse_args(argv)
    a.runs = [r for r in a.runs.split(",") if r]
    if not a.runs or any(r not in RUNS for r in a.runs):
        p.error(f"--runs: choose from {', '.join(RUNS)}")
    if min(a.seeds, a.items_per_user, a.rounds, a.steps) < 1:
        p.error("--seeds, --items-per-user, --rounds and --steps must be at least 1")
    return a


def run(a: argparse.Namespace, url: str, api_key: str | None) -> int:
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    data = load(0, a.items_per_user, a.max_users)
    print(
        f"Privacy–utility trade-off on breast cancer: {data.n} users × {a.items_per_user} sample(s), "
        f"{data.Xte.shape[0]} held out, δ = {a.delta:g}, {a.seeds} seed(s); calibrated by {url}"
    )
    with AccountantClient(url, api_key=api_key) as client:
        rows = sweep(client, a)
    write_csv(rows, out / "tradeoff.csv")
    title = (
        f"breast cancer, logistic regression, {data.n} users, δ = {a.delta:g}, {a.seeds} seeds\n"
        f"CLDP-SGD: {a.rounds} rounds of n/2 users; central: {a.steps} steps of all users"
    )
    plot(rows, out, title)
    print(f"wrote {out / 'tradeoff.csv'}, {out / 'tradeoff.png'}, {out / 'tradeoff.svg'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    hint = training.missing_extra()
    if hint:
        print(hint, file=sys.stderr)
        return 2
    try:
        if a.url:
            return run(a, a.url, a.api_key)
        with _example("federated_mean").local_service() as (url, key):
            return run(a, url, key)
    except (AccountantHTTPError, TransportError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
