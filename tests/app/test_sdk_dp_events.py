"""The SDK takes dp_accounting ``DpEvent`` objects wherever it takes events (issue 26, item 3),
against a real server; and stays light: converting or not, it imports neither numpy nor
dp_accounting nor the service's packages unless it is given a ``DpEvent``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from privacy_accountant import AccountantClient, UnsupportedDpEvent
from tests.helpers.server import shared_server

ROOT = Path(__file__).resolve().parents[2]
de = pytest.importorskip("dp_accounting").dp_event


def test_the_sdk_imports_nothing_heavy_until_given_a_dp_event():
    code = (
        "import sys, privacy_accountant\n"
        "from privacy_accountant._api import events_json\n"
        "events_json([{'mechanism': 'gaussian', 'noise_multiplier': 1.0}])\n"
        "heavy = [m for m in ('numpy', 'dp_accounting', 'accountant', 'app', 'mechanisms') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    # this checkout's SDK (client/), whatever the environment's editable install points at
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "client"), os.environ.get("PYTHONPATH", "")]),
    }
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env
    )
    assert r.returncode == 0, r.stderr


def test_dp_events_through_the_sdk_against_a_real_server():
    rounds = de.SelfComposedDpEvent(
        de.SampledWithoutReplacementDpEvent(10**6, 10**4, de.GaussianDpEvent(1.2)), 1000
    )
    as_dict = {
        "mechanism": "subsampled",
        "n": 10**6,
        "k": 10**4,
        "count": 1000,
        "inner": [{"mechanism": "gaussian", "noise_multiplier": 1.2}],
    }
    with AccountantClient(shared_server().url) as c:
        theirs = c.epsilon([rounds], delta=1e-5).epsilon
        assert theirs == c.epsilon([as_dict], delta=1e-5).epsilon == c.epsilon(rounds, delta=1e-5).epsilon
        both = de.ComposedDpEvent([rounds, de.LaplaceDpEvent(10.0)])
        assert c.epsilon(both, delta=1e-5).epsilon > theirs
        r = c.calibrate(rounds, "noise_multiplier", 2.0, 1e-5, accounting="rdp")  # the DpEvent's z left out
        assert r.solve_for == "inner[0].noise_multiplier" and r.epsilon <= 2.0
        assert c.rdp(de.GaussianDpEvent(2.0), orders=[2.0]).rdp[0] == pytest.approx(0.25, rel=1e-9)  # α/(2z²)
        with pytest.raises(UnsupportedDpEvent, match="2 events here, and this call takes one"):
            c.rdp(both)
        with pytest.raises(UnsupportedDpEvent, match="Poisson sampling"):
            c.epsilon([de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1.0))], delta=1e-5)
