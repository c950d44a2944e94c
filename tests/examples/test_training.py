"""examples/training.py end to end (small sizes), as a user runs it: a subprocess that starts its own
service, trains on scikit-learn's bundled breast-cancer data, charges both runs to one ledger.

Checked: exit status 0; the central run's ε and the ledger's ε after every round equal the
accountant's composition of the events charged so far (the ledger answers as the accountant
does, on its grid); the central model beats the majority class by a margin; the CLDP run is
stopped cleanly by the ledger when the users' budget is spent, never above it; the figure is
written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import accountant

pytest.importorskip("sklearn")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "training.py"
DELTA = 1e-5


def run_example(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONUNBUFFERED": "1"}
    env.pop("ACCOUNTANT_API_KEY", None)
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--json", str(out), "--delta", str(DELTA), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads(out.read_text())


def test_both_runs_on_one_ledger(tmp_path):
    budget = 4.0
    proc, res = run_example(
        tmp_path,
        "--budget-epsilon",
        str(budget),
        "--central-epsilon",
        "2.5",
        "--steps",
        "4",
        "--steps-per-round",
        "2",
        "--rounds",
        "200",
        "--plot",
        str(tmp_path / "fig.svg"),
        "--seed",
        "1",
    )
    central, cldp = res["results"]
    assert central["run"] == "central" and cldp["run"] == "cldp"
    charged = []
    for r in central["rounds"]:
        charged.extend(r["events"])
        own = accountant.epsilon_guarantee(charged, DELTA).epsilon
        assert r["run_epsilon"] == pytest.approx(own, rel=1e-9)
        ledger = accountant.epsilon_guarantee(charged, DELTA, refine=False).epsilon
        assert r["ledger_epsilon"] == pytest.approx(ledger, rel=1e-6)
    assert len(central["rounds"]) == 2 and central["rounds"][-1]["run_epsilon"] <= 2.5
    assert central["rounds"][-1]["accuracy"] > 0.75  # the majority class is 63%
    # CLDP: rounds until the ledger refuses; never above the budget; the ledger composes both runs
    assert cldp["stopped_before"] == len(cldp["rounds"]) + 1
    both = list(charged)
    for r in cldp["rounds"]:
        both.extend(r["events"])
    total = accountant.epsilon_guarantee(both, DELTA, refine=False).epsilon
    assert res["ledger_epsilon"] == pytest.approx(total, rel=1e-6) and total <= budget
    over = accountant.epsilon_guarantee(both + cldp["rounds"][-1]["events"], DELTA, refine=False).epsilon
    assert over > budget  # the refused round really did not fit
    assert "STOPPED before round" in proc.stdout and "budget is spent" in proc.stdout
    assert (tmp_path / "fig.svg").read_text().lstrip().startswith("<?xml")


def test_linf_mechanism(tmp_path):
    proc, res = run_example(
        tmp_path,
        "--runs",
        "cldp",
        "--mechanism",
        "linf",
        "--rounds",
        "3",
        "--budget-epsilon",
        "50",
    )
    [cldp] = res["results"]
    assert [r["round"] for r in cldp["rounds"]] == [1, 2, 3] and cldp["stopped_before"] is None
    [event] = cldp["rounds"][0]["events"]
    assert event["mechanism"] == "subsampled" and event["k"] == res["users"] // 2


@pytest.mark.parametrize("module", ["sklearn", "matplotlib"])
def test_without_the_examples_extra_it_stops_with_a_one_line_install_hint(module, monkeypatch, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("training_example", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    assert mod.main(["--steps", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.endswith("pip install -e '.[examples]' (in the clone)")
    assert {"sklearn": "scikit-learn", "matplotlib": "matplotlib"}[module] in err
