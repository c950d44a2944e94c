#!/usr/bin/env python
"""Federated training with Flower's simulation engine, every round paid for in the privacy ledger.

The story, top to bottom:

1. **Data and clients.** The digits bundled with scikit-learn (1,797 8×8 images, 10 classes; nothing is
   downloaded): 80% for training, split evenly over ``--clients`` virtual Flower clients, 20% held
   out on the server. The model is a multinomial logistic regression in numpy (no deep-learning
   framework); each sampled client runs ``--local-steps`` gradient steps on its share.
2. **The ledger.** Every Flower client is a ledger user ``{run}-user-{partition}`` with the same
   budget, all members of one cohort (the population).
3. **Central DP (DP-FedAvg).** Flower's ``DifferentialPrivacyServerSideFixedClipping`` clips each
   sampled client's update to ℓ2 norm ``--clip`` and adds Gaussian noise (``--noise-multiplier``) to
   their average; clients report weight 1 so the average is uniform, as the noise's sensitivity
   assumes. The trusted server samples ``--clients-per-round`` clients per round, secretly from
   whoever sees only the models, so the cohort is charged a ``subsampled`` Gaussian per round.
   With ``--threat-model local`` instead, each client ℓ1-clips its update and adds Laplace noise on
   its device (ε0-LDP, ``--epsilon0``) and the server, which knows whom it sampled and sees who sent
   which update (Flower has no shuffler), is the analyst: each round charges the sampled clients'
   users ε0 each (``pure_dp``), nobody else; each client tells its user id (``get_properties``).
4. **Pay before you run.** :class:`privacy_accountant.flower.AccountedStrategy` charges each round
   before its clients get their instructions; when the ledger refuses, no more rounds train and the
   run ends cleanly. Evaluation is central (the held-out 20%), so no client releases anything else.

It prints one row per round (the ledger's answer, the ε a member has spent, the held-out accuracy)
and a summary line. Needs Flower: ``pip install './client[flower]'``.

    python examples/flower_training.py                            # a local service started for the run
    python examples/flower_training.py --budget-epsilon 3         # a small budget: the ledger stops it
    python examples/flower_training.py --threat-model local --epsilon0 1 --rounds 3
    python examples/flower_training.py --url http://127.0.0.1:8000 --api-key <an admin key>
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import os
import sys
import time
import uuid
from pathlib import Path

import numpy as np

from privacy_accountant import AccountantClient, AccountantHTTPError, TransportError
from privacy_accountant.flower import INSTALL_HINT, AccountedStrategy, node_user_ids

HERE = Path(__file__).resolve().parent
CLASSES, FEATURES = 10, 64


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


def load(
    clients: int, seed: int
) -> tuple[list[tuple[np.ndarray, np.ndarray]], tuple[np.ndarray, np.ndarray]]:
    """(the clients' equal shares of the training data, the held-out test set): digits scaled to [0, 1]
    with a bias feature, each row scaled into the unit ℓ2 ball."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = np.hstack([X / 16.0, np.ones((X.shape[0], 1))])
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    order = np.random.default_rng(seed).permutation(len(y))
    X, y = X[order], y[order]
    cut = int(0.8 * len(y))
    per = cut // clients
    shares = [(X[i * per : (i + 1) * per], y[i * per : (i + 1) * per]) for i in range(clients)]
    return shares, (X[cut:], y[cut:])


def gradient(W: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Gradient of the mean cross-entropy of softmax(XW) at W (FEATURES + 1, CLASSES)."""
    z = X @ W
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1.0
    return X.T @ p / len(y)


def accuracy(W: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(X @ W, axis=1) == y))


# ---------------------------------------------------------------------------------------------------------
# Flower apps
# ---------------------------------------------------------------------------------------------------------


def build_apps(a: argparse.Namespace, client: AccountantClient, cohort: str, accuracies: list[float]):
    """(server app, client app, the accounted strategy) of one simulated run."""
    from flwr.client import ClientApp, NumPyClient
    from flwr.common import ndarrays_to_parameters
    from flwr.server import ServerApp, ServerAppComponents, ServerConfig
    from flwr.server.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg

    lr, steps, clients, seed, run_id = a.learning_rate, a.local_steps, a.clients, a.seed, a.run
    local = a.threat_model == "local"
    clip, epsilon0 = a.clip, a.epsilon0

    class DigitsClient(NumPyClient):
        def __init__(self, partition: int):
            self.partition = partition
            self.X, self.y = load(clients, seed)[0][partition]

        def get_properties(self, config):
            del config
            return {"user-id": f"{run_id}-user-{self.partition}"}  # read by node_user_ids()

        def fit(self, parameters, config):
            del config
            W0 = parameters[0]
            W = W0.copy()
            for _ in range(steps):
                W -= lr * gradient(W, self.X, self.y)
            if local:  # on the device: ℓ1-clip the update to `clip`, add Lap(2·clip/ε0): ε0-LDP
                u = W - W0
                u *= min(1.0, clip / max(float(np.abs(u).sum()), 1e-12))
                W = W0 + u + np.random.default_rng().laplace(0.0, 2 * clip / epsilon0, size=u.shape)
            return [W], 1, {}  # weight 1: the uniform average DP-FedAvg's noise is calibrated for

    def client_fn(context):
        return DigitsClient(int(context.node_config["partition-id"])).to_client()

    _, (X_test, y_test) = load(clients, seed)

    def evaluate(server_round, parameters, config):
        del server_round, config
        accuracies.append(accuracy(parameters[0], X_test, y_test))
        return 0.0, {"accuracy": accuracies[-1]}

    fedavg = FedAvg(
        fraction_fit=0.0,
        min_fit_clients=a.clients_per_round,
        min_available_clients=clients,
        fraction_evaluate=0.0,
        min_evaluate_clients=0,
        evaluate_fn=evaluate,
        initial_parameters=ndarrays_to_parameters([np.zeros((FEATURES + 1, CLASSES))]),
    )
    if local:  # no shuffler in Flower: the server sees who sent which report
        strategy = AccountedStrategy(
            fedavg,
            client,
            run_id=a.run,
            threat_model="local",
            user_of=node_user_ids(),
            epsilon0=epsilon0,
            shuffled=False,
        )
    else:
        dp = DifferentialPrivacyServerSideFixedClipping(
            fedavg,
            noise_multiplier=a.noise_multiplier,
            clipping_norm=a.clip,
            num_sampled_clients=a.clients_per_round,
        )
        strategy = AccountedStrategy(dp, client, run_id=a.run, threat_model="central", cohort=cohort)

    def server_fn(context):
        del context
        return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=a.rounds))

    return ServerApp(server_fn=server_fn), ClientApp(client_fn=client_fn), strategy


# ---------------------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------------------


def setup_ledger(client: AccountantClient, a: argparse.Namespace) -> str:
    """Create the clients' ledger users (one budget each) and their cohort; return the cohort id."""
    users = [f"{a.run}-user-{i}" for i in range(a.clients)]
    for u in users:
        client.put_user(u, budget={"epsilon": a.budget_epsilon, "delta": a.delta})
    cohort = f"{a.run}-population"
    client.create_cohort(cohort, description="the Flower clients of examples/flower_training.py")
    client.add_members(cohort, users)
    return cohort


def run(a: argparse.Namespace, url: str, key: str | None) -> int:
    from flwr.simulation import run_simulation

    accuracies: list[float] = []
    with AccountantClient(url, api_key=key) as client:
        cohort = setup_ledger(client, a)
        server_app, client_app, strategy = build_apps(a, client, cohort, accuracies)
        t0 = time.monotonic()
        run_simulation(
            server_app=server_app,
            client_app=client_app,
            num_supernodes=a.clients,
            backend_config={"client_resources": {"num_cpus": 1}, "init_args": {"num_cpus": a.cpus}},
        )
        seconds = time.monotonic() - t0
        print(f"\n{'round':>5} | {'ledger':>8} | {'clients':>7} | {'accuracy':>8} | charged to")
        for r in strategy.rounds:
            status = "admitted" if r.admitted else ("refused" if r.refusal else "skipped")
            acc = accuracies[r.round] if r.round < len(accuracies) else float("nan")
            who = r.cohort or " ".join(r.users or [])
            print(f"{r.round:>5} | {status:>8} | {r.clients:>7} | {acc:>8.3f} | {who}")
        spent = float(client.get_user(f"{a.run}-user-0").spent.epsilon)
    admitted = strategy.admitted_rounds
    if strategy.stopped is not None:
        print(f"the ledger refused round {strategy.stopped.round}: {strategy.stopped.refusal.message}")
    print(
        f"run {a.run}: {len(admitted)} of {a.rounds} rounds trained, ε spent by user 0 {spent:.4f} of {a.budget_epsilon} "
        f"(δ = {a.delta:g}), accuracy {accuracies[0]:.3f} -> {accuracies[-1]:.3f}, {seconds:.1f} s"
    )
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", help="a running service (default: start a local one for the run)")
    p.add_argument("--api-key", default=os.environ.get("ACCOUNTANT_API_KEY"), help="an admin key of --url")
    p.add_argument(
        "--run", default=f"flower-{uuid.uuid4().hex[:8]}", help="run id (ledger names, idempotency keys)"
    )
    p.add_argument(
        "--threat-model",
        choices=("central", "local"),
        default="central",
        help="central: DP-FedAvg, the cohort is charged; local: ε0-LDP updates, the sampled clients are",
    )
    p.add_argument("--epsilon0", type=float, default=1.0, help="local: each update's ε0")
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--clients-per-round", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--local-steps", type=int, default=20)
    p.add_argument("--learning-rate", type=float, default=2.0)
    p.add_argument("--noise-multiplier", type=float, default=3.0)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--budget-epsilon", type=float, default=4.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cpus", type=int, default=2, help="CPUs the simulation engine may use")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if importlib.util.find_spec("flwr") is None:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    logging.getLogger("privacy_accountant.flower").setLevel(logging.INFO)
    try:
        if a.url:
            return run(a, a.url, a.api_key)
        with _local_service() as (url, key):
            return run(a, url, key)
    except (AccountantHTTPError, TransportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
