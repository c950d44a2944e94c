"""The headline calibration end to end (issue 26, item 2): "which noise multiplier gives ε = 2 at
δ = 1e-5 over 1,000 rounds sampling 10⁴ of 10⁶ clients" in one call — through the SDK against a
real ``privacy-accountant serve`` process, and through the CLI — plus the 4xx of an ambiguous or
impossible ``solve_for``. The answer is judged by ε recomputed at it and at 0.99× it, by the
server's own ``/v1/epsilon`` and by dp_accounting's RDP accountant (REPLACE_ONE)."""

from __future__ import annotations

import json

import pytest

from privacy_accountant import AccountantClient, BadRequest
from tests.helpers.server import shared_server

from .test_cli import run

EVENT = {
    "mechanism": "subsampled",
    "n": 10**6,
    "k": 10**4,
    "count": 1000,
    "inner": [{"mechanism": "gaussian"}],
}


def _with_noise(z: float) -> dict:
    return {**EVENT, "inner": [{"mechanism": "gaussian", "noise_multiplier": z}]}


def _dp_accounting_epsilon(z: float) -> float | None:
    try:
        import dp_accounting
        from dp_accounting import dp_event as de
        from dp_accounting.rdp import RdpAccountant
    except ImportError:  # pragma: no cover - dp_accounting is a test dependency here
        return None
    acc = RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(
        de.SelfComposedDpEvent(de.SampledWithoutReplacementDpEvent(10**6, 10**4, de.GaussianDpEvent(z)), 1000)
    )
    return acc.get_epsilon(1e-5)


def test_headline_noise_multiplier_through_the_sdk_against_a_real_server():
    srv = shared_server()
    with AccountantClient(srv.url) as c:
        r = c.calibrate(EVENT, "noise_multiplier", target={"epsilon": 2.0, "delta": 1e-5}, accounting="rdp")
        assert r.solve_for == "inner[0].noise_multiplier" and r.direction == "smallest"
        z = r.value
        assert r.event["inner"][0]["noise_multiplier"] == z and 1.0 < z < 3.0
        at = c.epsilon([_with_noise(z)], delta=1e-5, accounting="rdp").epsilon
        below = c.epsilon([_with_noise(0.99 * z)], delta=1e-5, accounting="rdp").epsilon
        assert at == r.epsilon <= 2.0 < below
        theirs = _dp_accounting_epsilon(z)
        assert theirs is None or theirs <= 2.0 + 1e-9
        with pytest.raises(BadRequest, match=r"ambiguous.*inner\[1\]\.noise_multiplier"):
            two = {**EVENT, "inner": [{"mechanism": "gaussian"}, {"mechanism": "gaussian"}]}
            c.calibrate(two, "noise_multiplier", 2.0, 1e-5)
        with pytest.raises(BadRequest, match="names no calibratable field"):
            c.calibrate(EVENT, "inner[0].scale", 2.0, 1e-5)


def test_headline_through_the_cli(capsys):
    code, out, err = run(
        capsys,
        "calibrate",
        "--solve-for",
        "noise_multiplier",
        "--epsilon",
        "2",
        "--delta",
        "1e-5",
        "--event",
        json.dumps(EVENT),
        "--accounting",
        "rdp",
        "--json",
        "-q",
    )
    assert code == 0, err
    res = json.loads(out)
    assert res["solve_for"] == "inner[0].noise_multiplier" and res["epsilon"] <= 2.0
    assert 1.0 < res["value"] < 3.0 and res["direction"] == "smallest"
