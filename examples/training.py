#!/usr/bin/env python
"""Private training charged to a privacy ledger: CLDP-SGD (shuffle model) and central user-level SGD.

The story, top to bottom:

1. **Data and users.** A real data set bundled with scikit-learn (breast cancer, 569 samples) —
   nothing is downloaded. Features are standardised,
   a bias feature appended and each row scaled into the unit ℓ2 ball (the scaling statistics are
   treated as public, as a deployment would fix them in advance). 80% is training data, split into
   n users holding ``--items-per-user`` samples each; the model is a logistic regression.
2. **The ledger.** Every user is a user of the privacy-accountant service (one budget, ε at δ), all
   members of one cohort; both runs charge the same users, so the ledger composes them.
3. **Central user-level run** (``winsorized_sgd``, Levy et al. Alg. 3): the trusted server computes
   each user's average gradient, clips it to norm G, and takes the high-dimensional winsorized mean
   (a private range and Laplace noise per Hadamard-rotated coordinate); every user takes part in
   every step. Calibrated with the accountant to ``--central-epsilon`` at δ over all steps, and
   charged to the cohort in rounds of ``--steps-per-round`` steps, each before it runs.
4. **CLDP-SGD** (thesis Alg. 4.3.1): each round samples k of the n users uniformly without
   replacement (secretly); each sampled user takes one of its samples, computes the gradient, clips
   it (ℓ2 or ℓ∞) and randomizes it on its device with the ℓ2 or ℓ∞ mechanism of ``mechanisms``
   (ε0-LDP); a shuffler permutes the reports; the server averages them and takes a projected step.
   Each round is charged (one ``subsampled`` event) before it runs; when the ledger refuses — the
   users' budget is spent — the run stops cleanly.

Both runs use :class:`privacy_accountant.pipeline.Pipeline` (charge a round, run it, record its outcome). The
script prints each round's test accuracy and the ε spent, optionally writes the training curve of
the run (``--plot``: each round's accuracy against the ε spent so far — the progress of ONE run, not
a privacy–utility trade-off; ``examples/tradeoff.py`` draws that) and the results as JSON (``--json``).

    python examples/training.py                         # breast cancer, a local service started for the run
    python examples/training.py --runs cldp --mechanism linf
    python examples/training.py --plot /tmp/training.svg   # the run's training curve
    python examples/training.py --url http://127.0.0.1:8000 --api-key <an admin key>

All randomness (split, sampling, rotations, randomizers, noise, shuffling) comes from one
``numpy.random.Generator`` seeded with ``--seed``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

import mechanisms
from accountant import Event
from mechanisms.winsorized_sgd import WinsorizedSGD, clip_rows_l2, project_l2_ball
from privacy_accountant import AccountantClient, AccountantHTTPError, Conflict, TransportError
from privacy_accountant.pipeline import Pipeline, field_of

HERE = Path(__file__).resolve().parent


def _local_service():
    """The throw-away local service of examples/federated_mean.py (same machinery, one copy)."""
    spec = importlib.util.spec_from_file_location("federated_mean_example", HERE / "federated_mean.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod.local_service()


# ---------------------------------------------------------------------------------------------------------
# Data and model
# ---------------------------------------------------------------------------------------------------------


def load(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Breast cancer, shuffled by ``rng``: (train X, train y, test X, test y), rows in the unit ℓ2 ball."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    y = y.astype(float)
    perm = rng.permutation(y.size)
    X, y = X[perm], y[perm]
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    X = (X - X.mean(axis=0)) / sd
    X = np.hstack([X, np.ones((y.size, 1))])
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    n_train = int(0.8 * y.size)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def gradients(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-sample gradients of the logistic loss (norm ≤ ‖x‖ ≤ 1)."""
    p = 1.0 / (1.0 + np.exp(-np.clip(X @ theta, -50, 50)))
    return (p - y)[:, None] * X


def accuracy(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((X @ theta > 0) == (y > 0.5)))


# ---------------------------------------------------------------------------------------------------------
# The two runs
# ---------------------------------------------------------------------------------------------------------


def central_run(a, client, cohort, probe, users_X, users_y, Xte, yte, rng) -> dict:
    n, m, d = users_X.shape
    mech = WinsorizedSGD.calibrated(
        a.central_epsilon,
        a.delta,
        T=a.steps,
        d=d,
        G=1.0,
        tau=a.tau_rotated,
        n=n,
        tau_rotated=a.tau_rotated,
        width_factor=6.0,
        learning_rate=a.central_lr,
        radius=a.radius,
    )
    plan = mech.plan()
    print(
        f"central user-level SGD (winsorized_sgd): n = {n} users × {m} samples, d = {d} (rotated {plan['rotated_dimension']}),"
        f" T = {a.steps} steps, ε'' = {mech.epsilon:.4g} per rotated coordinate and step (tight calibration; the "
        f"paper's closed form would give {WinsorizedSGD.paper_params(a.central_epsilon, a.delta, 1, {'T': a.steps, 'd': d})['epsilon']:.3g})"
    )
    print(
        f"  Laplace scale per coordinate {plan['laplace_scale']:.4g}; the whole run: {[e.to_dict() for e in mech.events()]}"
    )
    pipe = Pipeline(client, run_id=f"{a.run_id}-central", cohort=cohort, probe_user=probe)
    theta = np.zeros(d)
    per_round = a.steps_per_round
    rounds = math.ceil(a.steps / per_round)
    charged: list[dict] = []
    print(
        f"{'round':>6} | {'steps':>5} | {'test accuracy':>13} | {'ε of this run':>13} | {'ε spent (ledger)':>16}"
    )
    for rnd in pipe.rounds(
        rounds, lambda t: mech.mean.run_events(min(per_round, a.steps - (t - 1) * per_round))
    ):
        steps = min(per_round, a.steps - (rnd.index - 1) * per_round)
        for _ in range(steps):
            g = np.stack([gradients(theta, users_X[i], users_y[i]).mean(axis=0) for i in range(n)])
            gbar = mech.private_gradient(clip_rows_l2(g, 1.0), rng)
            theta = project_l2_ball(theta - a.central_lr * gbar, a.radius)
        charged.extend(rnd.events)
        own = client.epsilon(charged, delta=a.delta, accounting="rdp").epsilon  # as the ledger charges
        rnd.record(accuracy=accuracy(theta, Xte, yte), run_epsilon=own, steps=steps)
    for r in pipe.history:
        print(
            f"{r.index:>6} | {r.outcome['steps']:>5} | {r.outcome['accuracy']:>13.4f} | {r.outcome['run_epsilon']:>13.4f} | "
            f"{r.spent_epsilon:>16.4f}"
        )
    if pipe.stopped is not None:
        print(
            f"STOPPED before round {pipe.stopped.round}: the ledger refused it ({pipe.stopped.refusal.message})"
        )
    return _summary(
        "central",
        pipe,
        {"epsilon_per_coordinate": mech.epsilon, "events": [e.to_dict() for e in mech.events()]},
    )


def cldp_run(a, client, cohort, probe, users_X, users_y, Xte, yte, rng) -> dict:
    n, m, d = users_X.shape
    k = max(1, min(n, a.k or n // 2))

    def mechanism(seed: int) -> mechanisms.Mechanism:
        if a.mechanism == "l2":
            return mechanisms.get(
                "l2", epsilon0=a.epsilon0, d=d, m=1, s=1, r2=1.0, r_inf=1.0, n=n, rotation_seed=seed
            )
        return mechanisms.get("linf", epsilon0=a.epsilon0, d=d, m=1, s=1, r_inf=1.0)

    mech0 = mechanism(0)
    [event] = mech0.events(n=n, k=k)
    print(
        f"CLDP-SGD: each round k = {k} of n = {n} users (without replacement), one sample each, the {a.mechanism} "
        f"mechanism at ε0 = {a.epsilon0:g} ({mech0.bits_per_report} bits per report), shuffled; one round costs {event.to_dict()}"
    )
    pipe = Pipeline(client, run_id=f"{a.run_id}-cldp", cohort=cohort, probe_user=probe)
    theta = np.zeros(d)
    avg = np.zeros(d)  # the average of the iterates (post-processing): each round's update is very noisy
    print(
        f"{'round':>6} | {'test accuracy (average iterate)':>31} | {'(last iterate)':>14} | {'ε of this run':>13} | "
        f"{'ε spent (ledger)':>16}"
    )
    state: dict = {}

    def events(_round: int) -> list[Event]:
        state["mech"] = mechanism(
            int(rng.integers(2**31))
        )  # the round's public rotation, fixed before any data
        return state["mech"].events(n=n, k=k)

    for rnd in pipe.rounds(a.rounds, events):
        mech = state["mech"]
        sample = rng.choice(n, size=k, replace=False)
        item = rng.integers(m, size=k)
        g = gradients(theta, users_X[sample, item], users_y[sample, item])
        if a.mechanism == "l2":
            g = clip_rows_l2(g, 1.0)
        else:
            g = g / np.maximum(1.0, np.abs(g).max(axis=1))[:, None]
        reports = mech.randomize(g, rng)
        perm = rng.permutation(k)
        shuffled = {key: np.asarray(v)[perm] for key, v in reports.items()}
        theta = project_l2_ball(theta - a.lr * mech.estimate(shuffled), a.radius)
        avg += (theta - avg) / rnd.index
        own = client.epsilon([event.with_count(rnd.index)], delta=a.delta, accounting="rdp").epsilon
        rnd.record(accuracy=accuracy(avg, Xte, yte), accuracy_last=accuracy(theta, Xte, yte), run_epsilon=own)
        print(
            f"{rnd.index:>6} | {rnd.outcome['accuracy']:>31.4f} | {rnd.outcome['accuracy_last']:>14.4f} | "
            f"{own:>13.4f} | {field_of(client.get_user(probe), 'spent', 'epsilon'):>16.4f}"
        )
    if pipe.stopped is not None:
        print(
            f"STOPPED before round {pipe.stopped.round}: the ledger refused it — the users' budget is spent; nothing "
            f"was recorded for it and no data was used ({pipe.stopped.refusal.message})"
        )
    return _summary("cldp", pipe, {"k": k, "event": event.to_dict()})


def _summary(name: str, pipe: Pipeline, extra: dict) -> dict:
    return {
        "run": name,
        "rounds": [
            {
                "round": r.index,
                "accuracy": r.outcome.get("accuracy"),
                "run_epsilon": r.outcome.get("run_epsilon"),
                "ledger_epsilon": r.spent_epsilon,
                "events": r.events,
            }
            for r in pipe.history
        ],
        "stopped_before": None if pipe.stopped is None else pipe.stopped.round,
        **extra,
    }


def plot(results: list[dict], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "privacy-accountant"
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    labels = {
        "cldp": "CLDP-SGD (shuffle model, ε0-LDP reports)",
        "central": "central user-level SGD (winsorized_sgd)",
    }
    for res in results:
        pts = [(r["run_epsilon"], r["accuracy"]) for r in res["rounds"]]
        if pts:
            ax.plot(*zip(*pts), marker="o", ms=2.5, lw=1.2, label=labels[res["run"]])
    ax.set_xlabel("ε spent by the run (at the budget's δ, from the ledger's accountant)")
    ax.set_ylabel("test accuracy")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Date": None} if path.endswith(".svg") else None)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--url", help="base URL of a running service (default: start a local one for this run)")
    p.add_argument("--api-key", default=os.environ.get("ACCOUNTANT_API_KEY"), help="admin API key for --url")
    p.add_argument(
        "--runs", choices=("both", "cldp", "central"), default="both", help="which runs (central first)"
    )
    p.add_argument("--items-per-user", type=int, default=2, help="training samples per user (m)")
    p.add_argument("--budget-epsilon", type=float, default=12.0, help="every user's budget ε")
    p.add_argument("--delta", type=float, default=1e-5, help="every user's budget δ")
    p.add_argument(
        "--central-epsilon", type=float, default=4.0, help="central run: target ε at δ over all steps"
    )
    p.add_argument("--steps", type=int, default=10, help="central run: steps T")
    p.add_argument("--steps-per-round", type=int, default=1, help="central run: steps charged per round")
    p.add_argument("--central-lr", type=float, default=1.0, help="central run: step size")
    p.add_argument(
        "--tau-rotated", type=float, default=0.1, help="central run: rotated radius τ'' of the ranges"
    )
    p.add_argument("--mechanism", choices=("l2", "linf"), default="l2", help="CLDP-SGD: the local randomizer")
    p.add_argument("--epsilon0", type=float, default=1.0, help="CLDP-SGD: ε0 of one report")
    p.add_argument("--k", type=int, default=None, help="CLDP-SGD: users sampled per round (default n/2)")
    p.add_argument(
        "--rounds", type=int, default=300, help="CLDP-SGD: rounds planned (the ledger may stop it)"
    )
    p.add_argument("--lr", type=float, default=0.5, help="CLDP-SGD: step size")
    p.add_argument("--radius", type=float, default=50.0, help="projection radius of θ (both runs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--run-id", help="prefix of ledger ids and idempotency keys (default: train-s<seed>-<time>)"
    )
    p.add_argument("--plot", help="write the run's training curve (accuracy against ε spent so far) here")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args(argv)
    if a.items_per_user < 1 or a.steps < 1 or a.rounds < 1 or a.steps_per_round < 1:
        p.error("--items-per-user, --steps, --steps-per-round and --rounds must be at least 1")
    if a.url and not a.api_key:
        p.error("--url needs --api-key (an admin key: the run creates users and a cohort)")
    a.run_id = a.run_id or f"train-s{a.seed}-{int(time.time())}"
    return a


def _create_users(client: AccountantClient, epsilon: float, delta: float, prefix: str, n: int) -> None:
    """n users with one budget."""
    client.bulk_create_users(
        budget={"epsilon": epsilon, "delta": delta}, id_prefix=prefix, count=n, on_conflict="skip"
    )


def run(a: argparse.Namespace, url: str, api_key: str) -> int:
    rng = np.random.default_rng(a.seed)
    Xtr, ytr, Xte, yte = load(rng)
    m = a.items_per_user
    n = Xtr.shape[0] // m
    users_X = Xtr[: n * m].reshape(n, m, -1)
    users_y = ytr[: n * m].reshape(n, m)
    prefix, cohort = f"{a.run_id}-user-", f"{a.run_id}-users"
    probe = f"{prefix}0"
    print("=" * 100)
    print(
        f"Private training on breast cancer ({Xtr.shape[0]} training and {Xte.shape[0]} test samples), charged to a ledger"
    )
    print("=" * 100)
    print(
        f"{n} users × {m} samples, budget ε = {a.budget_epsilon:g} at δ = {a.delta:g} each; ledger {url} (run {a.run_id})"
    )
    results = []
    with AccountantClient(url, api_key=api_key) as client:
        _create_users(client, a.budget_epsilon, a.delta, prefix, n)
        with contextlib.suppress(Conflict):
            client.create_cohort(cohort, description=f"training example, {n} users")
        client.add_members(cohort, id_prefix=prefix, count=n)
        if a.runs in ("both", "central"):
            print("-" * 100)
            results.append(central_run(a, client, cohort, probe, users_X, users_y, Xte, yte, rng))
        if a.runs in ("both", "cldp"):
            print("-" * 100)
            results.append(cldp_run(a, client, cohort, probe, users_X, users_y, Xte, yte, rng))
        user = client.get_user(probe)
    print("=" * 100)
    print("Summary")
    for res in results:
        last = res["rounds"][-1] if res["rounds"] else None
        how = (
            f"stopped by the ledger before round {res['stopped_before']}"
            if res["stopped_before"]
            else "all admitted"
        )
        if last:
            print(
                f"  {res['run']:>7}: {len(res['rounds'])} round(s), {how}; test accuracy {last['accuracy']:.4f} "
                f"at ε = {last['run_epsilon']:.4f} for this run"
            )
        else:
            print(f"  {res['run']:>7}: no round admitted ({how})")
    print(
        f"  ledger: each user has spent ε = {field_of(user, 'spent', 'epsilon'):.4f} of {a.budget_epsilon:g} at "
        f"δ = {a.delta:g} over {field_of(user, 'charges')} charge(s) — both runs composed"
    )
    if a.plot:
        plot(results, a.plot, f"breast cancer: {n} users × {m} samples, logistic regression, δ = {a.delta:g}")
        print(f"  figure: {a.plot}")
    if a.json:
        out = {
            "args": {k: v for k, v in vars(a).items() if k not in ("api_key", "url")},
            "results": results,
            "ledger_epsilon": field_of(user, "spent", "epsilon"),
            "users": n,
        }
        Path(a.json).write_text(json.dumps(out, indent=1, default=float))
    return 0


def missing_extra() -> str | None:
    """The one-line install hint when the `examples` extra (scikit-learn, matplotlib) is missing."""
    try:
        import matplotlib  # noqa: F401
        import sklearn  # noqa: F401
    except ImportError as exc:
        name = {"sklearn": "scikit-learn"}.get(exc.name or "", exc.name or "scikit-learn and matplotlib")
        return f"error: this example needs {name}: pip install -e '.[examples]' (in the clone)"
    return None


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    hint = missing_extra()
    if hint:
        print(hint, file=sys.stderr)
        return 2
    try:
        if a.url:
            return run(a, a.url, a.api_key)
        with _local_service() as (url, key):
            return run(a, url, key)
    except (AccountantHTTPError, TransportError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
