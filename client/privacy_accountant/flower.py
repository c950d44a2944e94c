"""Flower strategies that pay each training round to the privacy ledger before it runs.

    from flwr.server.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg
    from privacy_accountant import AccountantClient
    from privacy_accountant.flower import AccountedStrategy

    dp = DifferentialPrivacyServerSideFixedClipping(FedAvg(...), noise_multiplier=1.0,
                                                    clipping_norm=1.0, num_sampled_clients=10)
    strategy = AccountedStrategy(dp, client, run_id="run-7", threat_model="central",
                                 cohort="population")

:class:`AccountedStrategy` wraps any Flower strategy (``flwr.server.strategy.Strategy``, the API of
``ServerApp(server_fn=...)`` and ``start_server``). Before each round's ``configure_fit`` hands the
sampled clients their instructions, it charges the round to the ledger (one request, idempotency key
``{run_id}-round-{r}``). When the ledger refuses (:class:`~privacy_accountant.BudgetExceeded`: nothing
was recorded), that round and every later one get no fit instructions — Flower's server logs
"configure_fit: no clients selected, cancel" and trains no more, running the remaining rounds
empty — and the refusal is logged and kept in ``stopped``. ``rounds`` lists every round's outcome
(:class:`RoundCharge`).

What is charged depends on who the analyst is (``threat_model``; docs/flower.md explains both):

- ``"local"``: the clients randomize their updates on their devices (ε0-LDP each) and the Flower
  server is the analyst. It chooses the clients, so it knows who was sampled and amplification by
  sampling does not hold against it: the round is charged to the sampled clients' ledger users only
  (``user_of(proxy)`` maps a Flower client to its ledger user id), as a ``shuffle`` of their k
  reports (``shuffled=True``: a shuffler hides who sent which report) or as each report's own
  ``pure_dp`` ε0 (``shuffled=False``).
- ``"central"``: a trusted server clips each sampled client's update to ℓ2 norm C, averages them
  uniformly and adds Gaussian noise of standard deviation z·C/m (Flower's
  ``DifferentialPrivacyServerSideFixedClipping`` / ``...ClientSideFixedClipping`` with
  ``noise_multiplier`` z and ``num_sampled_clients`` m). Whoever sees only the released models
  does not know the sample, so the whole population — the ledger cohort ``cohort`` — is charged
  the ``subsampled`` event: k of n clients sampled without replacement (n = the clients Flower
  sampled from, k = those it sampled) with a ``gaussian`` inner event. Replacing one client moves
  the sum of k clipped updates by at most 2C while the noise on the sum is z·C·k/m, so the
  replace-one noise multiplier is z·k/(2m). Not valid against the server, which sees the updates.

Federated evaluation (``configure_evaluate``) releases the clients' losses on their own data, which
no round's charge covers: it is switched off (no evaluate instructions) unless
``federated_evaluation=True`` says it is accounted elsewhere. Evaluate centrally (the strategy's
``evaluate_fn`` on held-out data) instead.

The wrapper needs nothing of Flower itself (Flower calls it like any strategy; it does not subclass
``Strategy``), so this module imports without Flower; :func:`require_flwr` (used by
:func:`node_user_ids` and the example) turns a missing Flower into a one-line install hint. Install
Flower with ``pip install './client[flower]'`` (the pinned ``flwr[simulation]``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from privacy_accountant.errors import BudgetExceeded

#: the one line a missing Flower installation is told
INSTALL_HINT = (
    "privacy_accountant.flower needs Flower: pip install './client[flower]' "
    "(from the repository) or pip install 'flwr[simulation]==1.42.0'"
)
THREAT_MODELS = ("local", "central")
LOG = logging.getLogger("privacy_accountant.flower")


def require_flwr() -> Any:
    """The ``flwr`` module, or an ImportError whose message is :data:`INSTALL_HINT`."""
    try:
        import flwr
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    return flwr


@dataclass
class RoundCharge:
    """One round's outcome: what was charged to whom, and the ledger's answer (``charge``, a
    :class:`~privacy_accountant.models.Charge`) or its refusal (``refusal``). ``admitted`` is False for
    the refused round and for every round after it (``skipped``: not charged, no clients)."""

    round: int
    event: dict[str, Any] | None
    users: list[str] | None = None
    cohort: str | None = None
    clients: int = 0
    charge: Any = None
    refusal: BudgetExceeded | None = None
    skipped: bool = False

    @property
    def admitted(self) -> bool:
        return self.charge is not None


@dataclass
class CentralNoise:
    """The Gaussian noise of Flower's fixed-clipping DP wrappers: std z·C/m on the mean of the m
    clipped updates (``noise_multiplier`` z, ``num_sampled_clients`` m)."""

    noise_multiplier: float
    num_sampled_clients: int

    def replace_one_multiplier(self, k: int) -> float:
        """σ/Δ₂ for the uniform mean of k clipped updates: σ = z·C/m, Δ₂ = 2C/k → z·k/(2m)."""
        return self.noise_multiplier * k / (2.0 * self.num_sampled_clients)


def central_noise_of(strategy: Any) -> CentralNoise:
    """The noise of a Flower DP wrapper (``noise_multiplier`` and ``num_sampled_clients`` attributes)."""
    if hasattr(strategy, "clipped_count_stddev"):
        raise ValueError(
            "Flower's adaptive-clipping wrappers also release a noisy count of clipped updates, which the "
            "round's Gaussian event does not cover: use fixed clipping, or pass noise=CentralNoise(...) "
            "for a Gaussian that covers both releases"
        )
    z = getattr(strategy, "noise_multiplier", None)
    m = getattr(strategy, "num_sampled_clients", None)
    if z is None or m is None:
        raise ValueError(
            "threat_model='central' needs the strategy's noise: wrap Flower's "
            "DifferentialPrivacyServerSideFixedClipping or DifferentialPrivacyClientSideFixedClipping, "
            "or pass noise=CentralNoise(noise_multiplier, num_sampled_clients)"
        )
    return CentralNoise(float(z), int(m))


def local_event(k: int, epsilon0: float, *, shuffled: bool, output: str = "continuous") -> dict[str, Any]:
    """The event of one round of k ε0-LDP reports against the server: a ``shuffle`` of the k reports,
    or (no shuffler) each report's ``pure_dp`` ε0."""
    if shuffled:
        return {"mechanism": "shuffle", "n": int(k), "epsilon0": float(epsilon0), "output": output}
    return {"mechanism": "pure_dp", "epsilon": float(epsilon0)}


def central_event(n: int, k: int, noise: CentralNoise) -> dict[str, Any]:
    """The event of one central round against whoever sees the released model: k of n sampled without
    replacement, a Gaussian of replace-one noise multiplier z·k/(2m) on them."""
    z = noise.replace_one_multiplier(k)
    return {
        "mechanism": "subsampled",
        "n": int(n),
        "k": int(k),
        "inner": [{"mechanism": "gaussian", "noise_multiplier": z}],
    }


def node_user_ids(key: str = "user-id", timeout: float | None = None) -> Callable[[Any], str]:
    """A ``user_of`` that asks each client once for its ledger user id: the client's
    ``get_properties`` answers ``{key: user_id}`` (cached per Flower client id)."""
    cache: dict[str, str] = {}

    def user_of(proxy: Any) -> str:
        if proxy.cid not in cache:
            common = require_flwr().common
            res = proxy.get_properties(common.GetPropertiesIns(config={}), timeout, None)
            if key not in res.properties:
                raise ValueError(f"client {proxy.cid} did not report its ledger user id {key!r}")
            cache[proxy.cid] = str(res.properties[key])
        return cache[proxy.cid]

    return user_of


class AccountedStrategy:
    """A Flower strategy that charges each round to the ledger before it runs (module docstring).

    ``strategy``: the wrapped Flower strategy. ``client``: an :class:`~privacy_accountant.AccountantClient`
    with a key that may charge. ``run_id``: makes the rounds' idempotency keys (re-running a run id
    replays the rounds already charged). ``threat_model``: ``"local"`` (with ``epsilon0``,
    ``shuffled``, ``user_of``, and ``output`` of the randomizer, ``"continuous"`` unless it is
    discrete) or ``"central"`` (with ``cohort``; ``noise`` read from the wrapped DP strategy unless
    given)."""

    def __init__(
        self,
        strategy: Any,
        client: Any,
        *,
        run_id: str,
        threat_model: str,
        cohort: str | None = None,
        noise: CentralNoise | None = None,
        user_of: Callable[[Any], str] | None = None,
        epsilon0: float | None = None,
        shuffled: bool | None = None,
        output: str = "continuous",
        federated_evaluation: bool = False,
    ):
        if threat_model not in THREAT_MODELS:
            raise ValueError(f"threat_model must be 'local' or 'central', not {threat_model!r}")
        if threat_model == "local":
            if user_of is None or epsilon0 is None or shuffled is None:
                raise ValueError(
                    "threat_model='local' charges the sampled clients: give user_of (Flower client → "
                    "ledger user id), epsilon0 (each report's local ε0) and shuffled (True with a shuffler)"
                )
        else:
            if cohort is None:
                raise ValueError(
                    "threat_model='central' charges the population: give cohort (its ledger cohort)"
                )
            noise = noise if noise is not None else central_noise_of(strategy)
        self.strategy = strategy
        self.client = client
        self.run_id = run_id
        self.threat_model = threat_model
        self.cohort = cohort
        self.noise = noise
        self.user_of = user_of
        self.epsilon0 = epsilon0
        self.shuffled = shuffled
        self.output = output
        self.federated_evaluation = federated_evaluation
        self.rounds: list[RoundCharge] = []
        self.stopped: RoundCharge | None = None

    def __repr__(self) -> str:
        return f"AccountedStrategy({self.threat_model}, {self.strategy!r})"

    # -- the charge ---------------------------------------------------------------------------------
    def _charge(
        self, server_round: int, instructions: Sequence[tuple[Any, Any]], available: int
    ) -> RoundCharge:
        key = f"{self.run_id}-round-{server_round}"
        k = len(instructions)
        if self.threat_model == "local":
            assert self.user_of is not None and self.epsilon0 is not None
            users = [self.user_of(proxy) for proxy, _ in instructions]
            event = local_event(k, self.epsilon0, shuffled=bool(self.shuffled), output=self.output)
            rec = RoundCharge(server_round, event, users=users, clients=k)
            who: dict[str, Any] = {"users": users}
        else:
            assert self.noise is not None and self.cohort is not None
            event = central_event(max(available, k), k, self.noise)
            rec = RoundCharge(server_round, event, cohort=self.cohort, clients=k)
            who = {"cohort": self.cohort}
        try:
            rec.charge = self.client.charge(event, idempotency_key=key, **who)
        except BudgetExceeded as refused:
            rec.refusal = refused
        return rec

    def configure_fit(self, server_round: int, parameters: Any, client_manager: Any) -> list[tuple[Any, Any]]:
        """The wrapped strategy's instructions, once the round is paid; [] after a refusal."""
        if self.stopped is not None:
            self.rounds.append(RoundCharge(server_round, None, skipped=True))
            LOG.info("round %d: not run (the ledger refused round %d)", server_round, self.stopped.round)
            return []
        instructions = list(self.strategy.configure_fit(server_round, parameters, client_manager))
        if not instructions:
            return []
        rec = self._charge(server_round, instructions, client_manager.num_available())
        self.rounds.append(rec)
        if rec.refusal is not None:
            self.stopped = rec
            LOG.warning(
                "round %d: the privacy ledger refused the charge (%s); no more training rounds run",
                server_round,
                rec.refusal.message,
            )
            return []
        LOG.info(
            "round %d: charged %s to %s",
            server_round,
            rec.event,
            rec.cohort or f"{len(rec.users or [])} users",
        )
        return instructions

    # -- everything else is the wrapped strategy's -----------------------------------------------------
    def initialize_parameters(self, client_manager: Any) -> Any:
        return self.strategy.initialize_parameters(client_manager)

    def aggregate_fit(self, server_round: int, results: Any, failures: Any) -> Any:
        return self.strategy.aggregate_fit(server_round, results, failures)

    def configure_evaluate(
        self, server_round: int, parameters: Any, client_manager: Any
    ) -> list[tuple[Any, Any]]:
        """No federated evaluation (an uncharged release) unless ``federated_evaluation=True``."""
        if not self.federated_evaluation:
            return []
        return list(self.strategy.configure_evaluate(server_round, parameters, client_manager))

    def aggregate_evaluate(self, server_round: int, results: Any, failures: Any) -> Any:
        return self.strategy.aggregate_evaluate(server_round, results, failures)

    def evaluate(self, server_round: int, parameters: Any) -> Any:
        return self.strategy.evaluate(server_round, parameters)

    @property
    def admitted_rounds(self) -> list[int]:
        """The rounds the ledger admitted (and that therefore ran)."""
        return [r.round for r in self.rounds if r.admitted]


__all__ = [
    "INSTALL_HINT",
    "AccountedStrategy",
    "CentralNoise",
    "RoundCharge",
    "central_event",
    "central_noise_of",
    "local_event",
    "node_user_ids",
    "require_flwr",
]
