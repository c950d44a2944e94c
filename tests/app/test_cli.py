"""The ``privacy-accountant`` command line (no server): tables, --json, errors, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import accountant
from app.cli import main

SHUFFLE_FLAGS = ["--mechanism", "shuffle", "--n", "1000000", "--epsilon0", "0.5", "--count", "100000"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_epsilon_table_from_the_issue(capsys):
    code, out, _ = run(capsys, "epsilon", *SHUFFLE_FLAGS, "--delta", "1e-8")
    assert code == 0
    g = accountant.epsilon_guarantee(
        [{"mechanism": "shuffle", "n": 10**6, "epsilon0": 0.5, "count": 10**5}], 1e-8
    )
    assert "epsilon (ε)" in out and "optimal order (α)" in out
    assert f"{g.epsilon:.6g}" in out and f"{g.order:.6g}" in out
    assert "default grid" in out


def test_epsilon_json_is_the_http_answer(capsys):
    code, out, _ = run(capsys, "epsilon", *SHUFFLE_FLAGS, "--delta", "1e-8", "--json")
    assert code == 0
    body = json.loads(out)
    r = accountant.epsilon_routed(
        [{"mechanism": "shuffle", "n": 10**6, "epsilon0": 0.5, "count": 10**5}], 1e-8
    )
    assert body["epsilon"] == pytest.approx(r.epsilon, rel=1e-12) and body["order"] == pytest.approx(r.order)
    assert body["route"] == r.route
    assert len(body["orders"]) == len(accountant.DEFAULT_ORDERS)


def test_compose_several_events(capsys):
    ev = json.dumps(
        {"mechanism": "subsampled_shuffle", "n": 10**6, "k": 1000, "epsilon0": 2.0, "count": 1000}
    )
    code, out, _ = run(
        capsys,
        "epsilon",
        "--event",
        ev,
        "--mechanism",
        "gaussian",
        "--noise-multiplier",
        "3",
        "--delta",
        "1e-6",
        "--json",
    )
    assert code == 0 and [s["mechanism"] for s in json.loads(out)["sources"]] == [
        "subsampled_shuffle",
        "gaussian",
    ]


def test_delta(capsys):
    code, out, _ = run(
        capsys,
        "delta",
        "--mechanism",
        "shuffle",
        "--n",
        "1000",
        "--epsilon0",
        "1",
        "--count",
        "10",
        "--epsilon",
        "1.5",
        "--json",
    )
    assert code == 0 and 0 < json.loads(out)["delta"] < 1


def test_rdp_table_with_sources(capsys):
    code, out, _ = run(
        capsys, "rdp", "--mechanism", "shuffle", "--n", "10000", "--epsilon0", "1", "--orders", "2,3,10.5"
    )
    assert code == 0
    assert "order α" in out and "source" in out and "10.5" in out


def test_rdp_curve_event_by_flags(capsys):
    code, out, _ = run(
        capsys,
        "rdp",
        "--mechanism",
        "rdp_curve",
        "--curve-orders",
        "2,4",
        "--curve-rdp",
        "0.1,0.2",
        "--orders",
        "3,8",
        "--json",
    )
    assert code == 0 and json.loads(out)["rdp"][1] is None


def test_calibrate_with_progress_on_stderr(capsys):
    code, out, err = run(
        capsys,
        "calibrate",
        "--solve-for",
        "epsilon0",
        "--epsilon",
        "4",
        "--delta",
        "1e-5",
        "--mechanism",
        "subsampled_shuffle",
        "--n",
        "100000",
        "--k",
        "1000",
        "--count",
        "1000",
    )
    assert code == 0
    assert "epsilon0 (solved)" in out
    assert "calibrating epsilon0" in err and "done in" in err


def test_calibrate_json_quiet(capsys):
    code, out, err = run(
        capsys,
        "calibrate",
        "--solve-for",
        "count",
        "--epsilon",
        "2",
        "--delta",
        "1e-6",
        "--event",
        '{"mechanism": "gaussian", "noise_multiplier": 5}',
        "--json",
        "-q",
    )
    assert code == 0 and err == ""
    body = json.loads(out)
    assert body["solve_for"] == "count" and body["epsilon"] <= 2


@pytest.mark.parametrize(
    "argv, words",
    [
        (
            ["epsilon", "--mechanism", "shuffle", "--n", "0", "--epsilon0", "1", "--delta", "1e-6"],
            ["n:", "greater than or equal to 1"],
        ),
        (["epsilon", "--mechanism", "shuffle", "--n", "10", "--epsilon0", "1", "--delta", "1"], ["delta"]),
        (["epsilon", "--delta", "1e-6"], ["give an event"]),
        (["epsilon", "--n", "10", "--delta", "1e-6"], ["--mechanism"]),
        (
            [
                "rdp",
                "--mechanism",
                "shuffle",
                "--n",
                "10",
                "--epsilon0",
                "1",
                "--orders",
                "2.5",
                "--bound",
                "u1",
            ],
            ["integer"],
        ),
        (["epsilon", "--event", "{not json", "--delta", "1e-6"], ["not valid JSON"]),
        (
            ["epsilon", "--event", '{"mechanism": "shuffle", "n": 10, "epsilon0": NaN}', "--delta", "1e-6"],
            ["NaN"],
        ),
        (
            [
                "calibrate",
                "--solve-for",
                "count",
                "--epsilon",
                "0.01",
                "--delta",
                "1e-6",
                "--mechanism",
                "pure_dp",
                "--event-epsilon",
                "1",
            ],
            ["infeasible", "best achievable"],
        ),
    ],
)
def test_errors_exit_2_with_a_sentence(capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    for w in words:
        assert w in err


def test_console_script_is_installed():
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "from app.cli import main; import sys; sys.exit(main())",
            "epsilon",
            *SHUFFLE_FLAGS,
            "--delta",
            "1e-8",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["epsilon"] > 0
    r = subprocess.run(["privacy-accountant", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "serve" in r.stdout and "calibrate" in r.stdout


def test_serve_refuses_to_start_without_its_database():
    """An unreachable database: a clear error, exit status 1, and the password never printed."""
    import os

    env = {**os.environ, "DATABASE_URL": "postgresql+psycopg://acct:hunter2-secret@127.0.0.1:1/nope"}
    r = subprocess.run(
        ["privacy-accountant", "serve", "--port", "1"], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 1
    assert "could not migrate" in r.stderr and "hunter2-secret" not in r.stderr + r.stdout


@pytest.mark.parametrize("argv", [["--port", "99999"], ["--port", "-1"], ["--port", "x"], ["--workers", "0"]])
def test_serve_refuses_impossible_ports_and_worker_counts(capsys, argv):
    """Regression (red-team): `serve --port 99999` and `--workers 0` started a server (or died with
    exit code 3 after printing uvicorn logs) instead of a usage error."""
    with pytest.raises(SystemExit) as exc:
        main(["serve", *argv])
    assert exc.value.code == 2
    assert "expected an integer" in capsys.readouterr().err


def test_an_unbounded_curve_prints_no_numpy_warning(capsys):
    """Regression (red-team): a RuntimeWarning and its source line were printed above the error."""
    code, out, err = run(
        capsys, "epsilon", "-m", "gaussian", "--noise-multiplier", "1e-300", "--delta", "1e-8"
    )
    # a noise multiplier below 1e-6 is refused up front now (its curve overflows at every order)
    assert code == 2 and ("unbounded" in err or "greater than or equal to" in err)
    assert "Warning" not in err and "round_up" not in err
    # an rdp_curve asked above its largest order is unbounded there: still no numpy warning
    code, out, err = run(
        capsys,
        "epsilon",
        "--event",
        '{"mechanism": "rdp_curve", "orders": [2], "rdp": [0.1]}',
        "--orders",
        "50",
        "--delta",
        "1e-8",
    )
    assert code == 2 and "unbounded" in err
    assert "Warning" not in err and "round_up" not in err
