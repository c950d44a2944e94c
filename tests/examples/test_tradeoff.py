"""examples/tradeoff.py: a reduced sweep end to end against a real server, and the committed results.

The reduced sweep (1 seed, 2 target ε values + the baseline, 50 rounds / 5 steps) calibrates through a real
service (``shared_server()``), trains and evaluates; checked: the CSV's columns and rows, accuracy
at the larger ε not below the smaller one's (less a tolerance for one seed), the baselines well
above the majority class (63%), the figures written. The committed ``docs/img/tradeoff.csv`` is
checked against what the docs claim for it: per run type ≥ 4 target ε values and the baseline,
≥ 3 seeds each, mean accuracy non-decreasing in ε and at the largest ε ≥ 0.85× the baseline's.
"""

from __future__ import annotations

import csv
import importlib.util
import math
from pathlib import Path

import pytest

from tests.helpers.server import shared_server

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "img" / "tradeoff.csv"
COLUMNS = ["run", "target_epsilon", "seed", "accuracy"]


def _module():
    spec = importlib.util.spec_from_file_location("tradeoff_example", ROOT / "examples" / "tradeoff.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def _means(path: Path) -> dict[str, dict[float, list[float]]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS
        rows = list(reader)
    out: dict[str, dict[float, list[float]]] = {}
    for r in rows:
        acc = float(r["accuracy"])
        assert 0.0 <= acc <= 1.0
        out.setdefault(r["run"], {}).setdefault(float(r["target_epsilon"]), []).append(acc)
    return out


def test_reduced_sweep_against_a_real_server(tmp_path):
    srv = shared_server()
    code = _module().main(
        [
            "--url",
            srv.url,
            "--out",
            str(tmp_path),
            "--seeds",
            "1",
            "--cldp-epsilons",
            "0.25,4",
            "--central-epsilons",
            "0.5,4",
            "--rounds",
            "50",
            "--steps",
            "5",
        ]
    )
    assert code == 0
    res = _means(tmp_path / "tradeoff.csv")
    assert set(res) == {"cldp", "central"}
    for run, by_eps in res.items():
        assert sorted(by_eps) == sorted({"cldp": [0.25, 4.0], "central": [0.5, 4.0]}[run] + [math.inf])
        assert all(len(v) == 1 for v in by_eps.values())
        (small, large) = sorted(e for e in by_eps if math.isfinite(e))
        assert by_eps[large][0] >= by_eps[small][0] - 0.05, (run, by_eps)
        assert by_eps[math.inf][0] >= 0.85, (run, by_eps)  # the majority class is 63%
    assert (tmp_path / "tradeoff.png").read_bytes().startswith(b"\x89PNG")
    assert "<svg" in (tmp_path / "tradeoff.svg").read_text()


def test_committed_tradeoff_meets_its_claims():
    res = _means(COMMITTED)
    assert set(res) == {"cldp", "central"}
    for run, by_eps in res.items():
        finite = sorted(e for e in by_eps if math.isfinite(e))
        assert len(finite) >= 4 and math.inf in by_eps, (run, sorted(by_eps))
        assert all(len(v) >= 3 for v in by_eps.values()), run
        means = [sum(by_eps[e]) / len(by_eps[e]) for e in finite]
        assert all(b >= a for a, b in zip(means, means[1:])), (run, means)
        base = sum(by_eps[math.inf]) / len(by_eps[math.inf])
        assert means[-1] >= 0.85 * base, (run, means[-1], base)
    for ext in ("png", "svg"):
        assert (COMMITTED.parent / f"tradeoff.{ext}").stat().st_size > 0
