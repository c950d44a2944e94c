"""The nested ``subsampled`` event everywhere events are accepted: the computation endpoints, the
ledger, the SDK and the CLI, against a real ``serve`` process."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import numpy as np
import pytest

import accountant
from privacy_accountant import AccountantClient, BudgetExceeded
from tests.helpers.ledger import KEYS_ENV
from tests.helpers.server import start_server

ROUND = {
    "mechanism": "subsampled",
    "n": 100_000,
    "k": 1000,
    "count": 50,
    "inner": [{"mechanism": "shuffle", "epsilon0": 0.5, "count": 4}],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("nested")
    env = {
        "DATABASE_URL": f"sqlite:///{d}/n.db",
        "ACCOUNTANT_API_KEYS": KEYS_ENV,
        "ACCOUNTANT_LOG_LEVEL": "WARNING",
    }
    with start_server(env) as srv:
        yield srv


def test_compute_endpoints(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.post("/v1/rdp", json={"event": ROUND, "orders": [2, 8, 32.5]})
        assert r.status_code == 200, r.text
        body = r.json()
        np.testing.assert_allclose(body["rdp"], accountant.event_rdp(ROUND, [2, 8, 32.5]), rtol=1e-12)
        assert body["event"] == ROUND and len(body["sources"]) == 3
        r = c.post("/v1/epsilon", json={"events": [ROUND], "delta": 1e-6})
        assert r.status_code == 200, r.text
        assert r.json()["epsilon"] == pytest.approx(accountant.epsilon([ROUND], 1e-6)[0], rel=1e-12)
        assert r.json()["sources"][0]["mechanism"] == "subsampled"
        r = c.post("/v1/delta", json={"events": [ROUND], "epsilon": 0.05})
        assert r.status_code == 200 and 0 < r.json()["delta"] < 1
        part = {k: v for k, v in ROUND.items() if k != "count"}
        r = c.post(
            "/v1/calibrate",
            json={"solve_for": "count", "target": {"epsilon": 2.0, "delta": 1e-6}, "event": part},
        )
        assert r.status_code == 200, r.text
        got = r.json()
        assert got["epsilon"] <= 2.0
        assert accountant.epsilon([{**part, "count": got["value"] + 1}], 1e-6)[0] > 2.0
        # the inner events' own mistakes are 4xx that say where
        bad = {**ROUND, "inner": [{"mechanism": "shuffle", "n": 7, "epsilon0": 0.5}]}
        r = c.post("/v1/epsilon", json={"events": [bad], "delta": 1e-6})
        assert r.status_code == 400 and "must be 1000" in r.json()["detail"]
        r = c.post(
            "/v1/epsilon",
            json={
                "events": [
                    {**ROUND, "inner": [{"mechanism": "subsampled_shuffle", "n": 5, "k": 2, "epsilon0": 1}]}
                ],
                "delta": 1e-6,
            },
        )
        assert r.status_code in (400, 422)


def test_ledger_charges_the_sampled_round(server):
    admin = AccountantClient(server.url, api_key="admin-key-0123456789")
    pipe = AccountantClient(server.url, api_key="pipeline-key-0123456789")
    try:
        admin.put_user("nested-u", {"epsilon": 0.05, "delta": 1e-6})
        one_round = {**ROUND, "count": 1}
        first = pipe.charge(one_round, ["nested-u"])
        assert first["status"] == "admitted"
        user = admin.get_user("nested-u")
        want = accountant.epsilon([one_round], 1e-6, accounting="rdp")[0]  # the ledger charges RDP
        # the ledger converts on the grid (no refinement between grid points): never below, barely above
        assert want <= user["spent"]["epsilon"] <= want * (1 + 1e-3)
        with pytest.raises(BudgetExceeded):
            for _ in range(500):
                pipe.charge(one_round, ["nested-u"])
        spent = admin.get_user("nested-u")["spent"]["epsilon"]
        assert spent <= 0.05
    finally:
        admin.close()
        pipe.close()


def test_cli():
    inner = json.dumps(ROUND["inner"])
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from app.cli import main; sys.exit(main())",
            "epsilon",
            "--mechanism",
            "subsampled",
            "--n",
            "100000",
            "--k",
            "1000",
            "--count",
            "50",
            "--inner",
            inner,
            "--delta",
            "1e-6",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["epsilon"] == pytest.approx(accountant.epsilon([ROUND], 1e-6)[0], rel=1e-12)
