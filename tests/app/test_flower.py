"""privacy_accountant.flower against a real server: each round is charged before its clients get their
instructions — to the sampled clients' users (threat model "local": a k-user shuffle, or ε0 each
without a shuffler) or to the population's cohort (threat model "central": a subsampled Gaussian at
the replace-one multiplier z·k/(2m)) — a refusal stops training cleanly, and the ledger's rows are
the admitted rounds. Flower's own server loop is stood in for by the calls it makes (configure_fit,
configure_evaluate), so these run without Flower; examples/flower_training.py and docs/flower.md
run end to end on Flower's simulation engine in an interpreter that has Flower
(tests/helpers/flower_env.py: this one, or a venv of client/constraints-flower.txt built once — flwr
1.42 pins fastapi < 0.139 and uvicorn < 0.50, below the service's pins, so it is not in [test]).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import accountant
from privacy_accountant import AccountantClient
from privacy_accountant.flower import INSTALL_HINT, AccountedStrategy, node_user_ids, require_flwr
from tests.helpers.flower_env import flower_python
from tests.helpers.ledger import KEYS_ENV
from tests.helpers.server import start_server

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ADMIN_KEY = "admin-key-0123456789"
PIPELINE_KEY = "pipeline-key-0123456789"
DELTA = 1e-5


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("flower")
    env = {"DATABASE_URL": f"sqlite:///{d}/flower.db", "ACCOUNTANT_API_KEYS": KEYS_ENV}
    with start_server(env) as srv:
        yield srv


@pytest.fixture(scope="module")
def admin(server):
    with AccountantClient(server.url, api_key=ADMIN_KEY) as c:
        yield c


class Proxy:
    def __init__(self, cid: str):
        self.cid = cid


class ClientManager:
    def __init__(self, n: int):
        self.n = n

    def num_available(self) -> int:
        return self.n


class Inner:
    """A strategy that samples clients round-robin (k of n per round) and records what it was asked."""

    def __init__(
        self, n: int, k: int, noise_multiplier: float | None = None, num_sampled_clients: int | None = None
    ):
        self.n, self.k, self.calls = n, k, []
        if noise_multiplier is not None:
            self.noise_multiplier, self.num_sampled_clients = noise_multiplier, num_sampled_clients

    def configure_fit(self, server_round, parameters, client_manager):
        del parameters, client_manager
        self.calls.append(("fit", server_round))
        start = (server_round - 1) * self.k
        return [(Proxy(str((start + i) % self.n)), f"fit-ins-{server_round}") for i in range(self.k)]

    def configure_evaluate(self, server_round, parameters, client_manager):
        del parameters, client_manager
        self.calls.append(("evaluate", server_round))
        return [(Proxy("0"), "evaluate-ins")]


def users(admin, prefix: str, n: int, epsilon: float) -> list[str]:
    ids = [f"{prefix}-{i}" for i in range(n)]
    for u in ids:
        admin.put_user(u, budget={"epsilon": epsilon, "delta": DELTA})
    return ids


def fly(strategy: AccountedStrategy, rounds: int, n: int) -> list[list]:
    """Flower's server loop as far as the wrapper sees it: configure_fit then configure_evaluate."""
    out = []
    for r in range(1, rounds + 1):
        out.append(strategy.configure_fit(r, None, ClientManager(n)))
        assert strategy.configure_evaluate(r, None, ClientManager(n)) == []  # no uncharged releases
    return out


def epsilon(events: list[dict]) -> float:
    return accountant.epsilon(events, DELTA)[0]


def test_central_rounds_charge_the_cohort_a_subsampled_gaussian_until_refused(server, admin):
    n, k, z, m_ = 6, 2, 3.0, 2
    ids = users(admin, "central", n, 4.0)
    admin.create_cohort("central-pop")
    admin.add_members("central-pop", ids)
    inner = Inner(n, k, noise_multiplier=z, num_sampled_clients=m_)
    with AccountantClient(server.url, api_key=PIPELINE_KEY) as pipe:
        s = AccountedStrategy(inner, pipe, run_id="central-run", threat_model="central", cohort="central-pop")
        instructions = fly(s, 4, n)
    # by hand: k of n sampled, noise std z·C/m on the mean of k clipped updates, replace-one Δ₂ = 2C/k
    one = {
        "mechanism": "subsampled",
        "n": 6,
        "k": 2,
        "inner": [{"mechanism": "gaussian", "noise_multiplier": 1.5}],
    }
    affordable = max(t for t in range(1, 5) if epsilon([dict(one, count=t)]) <= 4.0)
    assert 1 <= affordable < 4  # the budget stops the run part-way
    assert s.admitted_rounds == list(range(1, affordable + 1))
    assert [len(i) for i in instructions] == [k] * affordable + [0] * (4 - affordable)
    assert (
        s.stopped is not None and s.stopped.round == affordable + 1 and s.stopped.refusal.status_code == 409
    )
    assert [r.skipped for r in s.rounds] == [False] * (affordable + 1) + [True] * (3 - affordable)
    assert ("fit", affordable + 2) not in inner.calls  # nothing is asked of the strategy after the refusal
    rows = admin.user_charges("central-3").charges
    assert [r.idempotency_key for r in rows] == [f"central-run-round-{t}" for t in range(1, affordable + 1)]
    for r in rows:
        ev = r.event.to_dict()
        assert r.cohort == "central-pop" and (ev["mechanism"], ev["n"], ev["k"]) == ("subsampled", 6, 2)
        assert [(i["mechanism"], i["noise_multiplier"]) for i in ev["inner"]] == [("gaussian", 1.5)]
    spent = admin.get_user("central-0").spent.epsilon
    assert spent == pytest.approx(epsilon([dict(one, count=affordable)]), rel=1e-3)


@pytest.mark.parametrize("shuffled", [True, False])
def test_local_rounds_charge_only_the_sampled_clients(server, admin, shuffled):
    n, k, eps0 = 4, 2, 1.0
    prefix = f"local-{shuffled}"
    ids = users(admin, prefix, n, 100.0)
    with AccountantClient(server.url, api_key=PIPELINE_KEY) as pipe:
        s = AccountedStrategy(
            Inner(n, k),
            pipe,
            run_id=prefix,
            threat_model="local",
            user_of=lambda proxy: f"{prefix}-{proxy.cid}",
            epsilon0=eps0,
            shuffled=shuffled,
        )
        fly(s, 1, n)
    assert s.rounds[0].users == ids[:2]
    ev = (
        {"mechanism": "shuffle", "n": 2, "epsilon0": 1.0, "output": "continuous"}
        if shuffled
        else {"mechanism": "pure_dp", "epsilon": 1.0}
    )
    for u in ids[:2]:
        assert admin.get_user(u).spent.epsilon == pytest.approx(epsilon([ev]), rel=1e-3)
    for u in ids[2:]:  # not sampled: not charged
        assert admin.get_user(u).spent.epsilon == 0 and admin.user_charges(u).total == 0
    if not shuffled:
        assert admin.get_user(ids[0]).spent.epsilon == pytest.approx(1.0, rel=1e-3)


def test_wrong_arguments_are_refused_with_what_is_missing():
    with pytest.raises(ValueError, match="'local' or 'central'"):
        AccountedStrategy(Inner(2, 1), None, run_id="r", threat_model="trusted")
    with pytest.raises(ValueError, match="user_of .* epsilon0 .* shuffled"):
        AccountedStrategy(Inner(2, 1), None, run_id="r", threat_model="local", epsilon0=1.0)
    with pytest.raises(ValueError, match="DifferentialPrivacyServerSideFixedClipping"):
        AccountedStrategy(Inner(2, 1), None, run_id="r", threat_model="central", cohort="c")
    adaptive = Inner(2, 1, noise_multiplier=1.0, num_sampled_clients=1)
    adaptive.clipped_count_stddev = 0.5  # Flower's adaptive clipping: a second, uncovered release
    with pytest.raises(ValueError, match="noisy count of clipped updates"):
        AccountedStrategy(adaptive, None, run_id="r", threat_model="central", cohort="c")


def test_the_sdk_imports_without_flower_and_says_how_to_install_it(monkeypatch):
    code = (
        "import sys; sys.modules['flwr'] = None\n"
        "import privacy_accountant, privacy_accountant.flower as f\n"
        "try:\n    f.require_flwr()\nexcept ImportError as e:\n    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "client")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == INSTALL_HINT and "\n" not in INSTALL_HINT
    monkeypatch.setitem(sys.modules, "flwr", None)
    with pytest.raises(ImportError, match=r"pip install './client\[flower\]'"):
        require_flwr()


@pytest.fixture(scope="session")
def flower_py() -> str:
    """An interpreter with Flower: this one, or a venv of client/constraints-flower.txt (built once)."""
    return flower_python()


def run_example(flower_py: str, server, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "client"), str(ROOT)]),
        "PYTHONUNBUFFERED": "1",
    }
    script = str(ROOT / "examples" / "flower_training.py")
    proc = subprocess.run(
        [flower_py, script, "--url", server.url, "--api-key", ADMIN_KEY, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def table(proc: subprocess.CompletedProcess) -> list[list[str]]:
    """The example's per-round rows: round | ledger | clients | accuracy | charged to."""
    rows = [
        line.split("|") for line in proc.stdout.splitlines() if line.strip()[:1].isdigit() and "|" in line
    ]
    return [[c.strip() for c in row] for row in rows]


def test_flower_example_charges_each_simulated_round_and_stops_on_refusal(flower_py, server, admin):
    proc = run_example(flower_py, server, "--run", "flc", "--rounds", "3", "--budget-epsilon", "4")
    # 4 clients, 2 per round, noise multiplier 3 (the example's defaults): replace-one multiplier 1.5
    one = {
        "mechanism": "subsampled",
        "n": 4,
        "k": 2,
        "inner": [{"mechanism": "gaussian", "noise_multiplier": 1.5}],
    }
    affordable = max(t for t in range(1, 4) if epsilon([dict(one, count=t)]) <= 4.0)
    assert affordable == 2
    for u in ("flc-user-0", "flc-user-3"):
        rows = admin.user_charges(u).charges
        assert [r.idempotency_key for r in rows] == ["flc-round-1", "flc-round-2"]
        assert all(r.cohort == "flc-population" for r in rows)
        assert [r.event.to_dict()["inner"][0]["noise_multiplier"] for r in rows] == [1.5, 1.5]
        assert admin.get_user(u).spent.epsilon == pytest.approx(epsilon([dict(one, count=2)]), rel=1e-3)
    assert "the ledger refused round 3" in proc.stdout
    assert "2 of 3 rounds trained" in proc.stdout
    assert [(int(c[0]), c[1], c[4]) for c in table(proc)] == [
        (1, "admitted", "flc-population"),
        (2, "admitted", "flc-population"),
        (3, "refused", "flc-population"),
    ]


def test_flower_example_local_charges_exactly_the_sampled_clients(flower_py, server, admin):
    proc = run_example(
        flower_py,
        server,
        "--run",
        "fll",
        "--threat-model",
        "local",
        "--rounds",
        "3",
        "--budget-epsilon",
        "10",
    )
    rows = table(proc)
    assert [(int(c[0]), c[1], c[2]) for c in rows] == [(t, "admitted", "2") for t in (1, 2, 3)]
    sampled = {t: set(c[4].split()) for t, c in enumerate(rows, start=1)}
    assert all(len(s) == 2 and s <= {f"fll-user-{i}" for i in range(4)} for s in sampled.values())
    for i in range(4):
        u = f"fll-user-{i}"
        mine = [t for t in (1, 2, 3) if u in sampled[t]]
        charges = admin.user_charges(u).charges
        assert [r.idempotency_key for r in charges] == [f"fll-round-{t}" for t in mine]
        assert [(r.event.to_dict()["mechanism"], r.event.to_dict()["epsilon"]) for r in charges] == [
            ("pure_dp", 1.0)
        ] * len(mine)
        expected = epsilon([{"mechanism": "pure_dp", "epsilon": 1.0, "count": len(mine)}]) if mine else 0.0
        assert admin.get_user(u).spent.epsilon == pytest.approx(expected, rel=1e-3)


def test_the_flower_page_runs_as_documented(flower_py, server):
    """docs/flower.md's Python blocks, in order in one interpreter (the local-model block continues the
    central one), against the test server; the text block after the first is its output."""
    text = (ROOT / "docs" / "flower.md").read_text()
    fenced = re.findall(r"^```(\w*)\n(.*?)^```\s*$", text, re.M | re.S)
    code = [c for lang, c in fenced if lang == "python"]
    shown = fenced[[lang for lang, _ in fenced].index("python") + 1]
    assert len(code) == 2 and shown[0] == "text"
    script = "\n".join(code).replace("http://localhost:8000", server.url)
    script = script.replace("admin-secret", ADMIN_KEY).replace("pipeline-secret", PIPELINE_KEY)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "client")}
    out = subprocess.run([flower_py, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == shown[1].splitlines()


def test_node_user_ids_asks_each_client_once(monkeypatch):
    """``node_user_ids`` reads the id from the client's get_properties answer (a stand-in for Flower's
    GetPropertiesIns/Res here) once per Flower client, and says which client did not answer it."""
    import types

    fake = types.ModuleType("flwr")
    fake.common = types.SimpleNamespace(GetPropertiesIns=lambda config: ("ins", config))
    monkeypatch.setitem(sys.modules, "flwr", fake)
    asked = []

    class Asked(Proxy):
        def get_properties(self, ins, timeout, group_id):
            del timeout, group_id
            asked.append((self.cid, ins))
            props = {} if self.cid == "9" else {"user-id": f"user-{self.cid}"}
            return types.SimpleNamespace(properties=props)

    user_of = node_user_ids()
    assert [user_of(Asked("1")), user_of(Asked("2")), user_of(Asked("1"))] == ["user-1", "user-2", "user-1"]
    assert asked == [("1", ("ins", {})), ("2", ("ins", {}))]
    with pytest.raises(ValueError, match="client 9 did not report its ledger user id 'user-id'"):
        user_of(Asked("9"))
