"""The ledger commands of ``privacy-accountant`` against a real ``serve`` process, the help texts
(every ``serve`` setting described), ``--version`` and the one flag scheme."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from app.cli import build_parser, main
from app.core.config import Settings
from privacy_accountant import AccountantClient
from tests.helpers import ledger as ls
from tests.helpers.server import start_server

ADMIN, PIPE, VIEWER = "cli-admin-key-1", "cli-pipeline-key-1", "cli-viewer-key-1"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    env = {
        "DATABASE_URL": f"sqlite:///{d}/cli.db",
        "ACCOUNTANT_API_KEYS": f"{ADMIN}:admin,{PIPE}:pipeline,{VIEWER}:viewer",
    }
    with start_server(env) as srv:
        yield srv


@pytest.fixture
def cli(server, monkeypatch, capsys):
    monkeypatch.setenv("ACCOUNTANT_URL", server.url)
    monkeypatch.setenv("ACCOUNTANT_API_KEY", ADMIN)

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


pytestmark = pytest.mark.slow


def test_users_put_show_list(cli, server):
    code, out, _ = cli("users", "put", "cli-alice", "--epsilon", "4", "--delta", "1e-6")
    assert code == 0 and "cli-alice" in out and "ε = 4 at δ = 1e-06" in out
    code, out, _ = cli(
        "users",
        "put",
        "cli-bob",
        "--epsilon",
        "5",
        "--delta",
        "1e-6",
        "--policy",
        "filter",
        "--filter-order",
        "8",
    )
    assert code == 0 and "α_f = 8" in out
    code, out, _ = cli("users", "show", "cli-bob", "--json")
    body = json.loads(out)
    with AccountantClient(server.url, api_key=VIEWER) as c:
        assert body == c.get_user("cli-bob").to_dict()
    assert body["filter"]["order_budget"] == pytest.approx(ls.filter_B(5.0, 1e-6, 8.0), rel=1e-12)
    code, out, _ = cli("users", "list", "--prefix", "cli-")
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["user", "policy", "budget"]
    assert [ln.split()[0] for ln in lines[2:4]] == ["cli-alice", "cli-bob"]
    assert lines[-1] == "1–2 of 2"
    code, out, _ = cli("users", "list", "--prefix", "cli-", "--limit", "1", "--json")
    page = json.loads(out)
    assert page["total"] == 2 and [u["user_id"] for u in page["items"]] == ["cli-alice"]
    # the next page follows the cursor the first one names
    code, out, _ = cli("users", "list", "--prefix", "cli-", "--limit", "1")
    assert out.splitlines()[-1] == f"1–1 of 2 (next page: --cursor {page['next_cursor']})"
    code, out, _ = cli("users", "list", "--prefix", "cli-", "--limit", "1", "--cursor", page["next_cursor"])
    assert (
        code == 0
        and out.splitlines()[2].split()[0] == "cli-bob"
        and out.splitlines()[-1] == "1 after the cursor of 2"
    )
    code, _, err = cli("users", "list", "--offset", "10001")
    assert code != 0 and "cursor" in err, err


def test_charges_create_list_and_refusal(cli, server):
    for u in ("ch-a", "ch-b"):
        assert cli("users", "put", u, "--epsilon", "2", "--delta", "1e-6")[0] == 0
    code, out, _ = cli(
        "charges", "create", "--users", "ch-a,ch-b", "--mechanism", "gaussian", "--noise-multiplier", "4",
        "--idempotency-key", "cli-1", "--api-key", PIPE,
    )  # fmt: skip
    assert code == 0 and "admitted" in out and "users charged    2" in out
    code, out, _ = cli(
        "charges",
        "create",
        "--users",
        "ch-a",
        "--users",
        "ch-b",
        "--mechanism",
        "gaussian",
        "--noise-multiplier",
        "4",
        "--idempotency-key",
        "cli-1",
        "--json",
        "--api-key",
        PIPE,
    )  # fmt: skip (idempotency keys are scoped to the caller's API key: the same caller replays)
    assert code == 0 and json.loads(out)["replayed"] is True
    ev = {"mechanism": "gaussian", "noise_multiplier": 0.5}
    code, out, err = cli("charges", "create", "--users", "ch-a,ch-b", "--event", json.dumps(ev))
    assert code == 3 and out == ""
    assert "refused" in err and "nothing was recorded" in err
    assert err.startswith("charge refused: 2 user(s)") and err.lower().count("refused:") == 1  # said once
    rows = {ln.split()[0]: ln.split()[1:] for ln in err.splitlines() if ln.startswith("ch-")}
    with AccountantClient(server.url, api_key=VIEWER) as c:
        for u in ("ch-a", "ch-b"):
            assert float(rows[u][0]) == pytest.approx(c.get_user(u).remaining_epsilon, rel=1e-5)
            assert float(rows[u][1]) == pytest.approx(ls.eps_declared(ls.curve(ev), 1e-6), rel=1e-5)
        assert c.get_user("ch-a").charges == 1  # the refusal recorded nothing
    code, out, _ = cli("charges", "list", "ch-a")
    assert code == 0 and "gaussian" in out and out.strip().endswith("1–1 of 1")
    code, _, err = cli(
        "charges",
        "create",
        "--users",
        "ch-a",
        "--mechanism",
        "gaussian",
        "--noise-multiplier",
        "4",
        "--api-key",
        VIEWER,
    )
    assert code == 1 and "403" in err and "viewer" in err


def test_cohorts_add_show_remove_list(cli):
    for i in range(3):
        assert cli("users", "put", f"co-{i}", "--epsilon", "8", "--delta", "1e-6")[0] == 0
    code, out, _ = cli("cohorts", "add", "cli-eu", "co-0", "co-1", "--description", "EU devices")
    assert code == 0 and "created cohort cli-eu" in out and "added 2 member(s)" in out
    code, out, _ = cli("cohorts", "add", "cli-eu", "--id-prefix", "co-", "--count", "3")
    assert code == 0 and "added 1 member(s)" in out and "(2 already members)" in out and "now 3" in out
    code, out, _ = cli(
        "charges", "create", "--cohort", "cli-eu", "--mechanism", "subsampled_shuffle", "--n", "1000", "--k", "10",
        "--epsilon0", "1",
    )  # fmt: skip
    assert code == 0 and "cli-eu round 1" in out
    code, out, _ = cli("cohorts", "remove", "cli-eu", "co-2")
    assert code == 0 and "removed 1 member(s)" in out and "now 2" in out
    code, out, _ = cli("cohorts", "show", "cli-eu", "--members")
    assert "rounds charged  1" in out and "co-0" in out and "co-2" not in out.split("member")[-1]
    code, out, _ = cli("cohorts", "list", "--json")
    assert [c["cohort_id"] for c in json.loads(out)["items"]] == ["cli-eu"]


def test_errors_say_what_to_do(cli, monkeypatch):
    code, _, err = cli("users", "show", "nobody-here")
    assert code == 1 and "404" in err and "nobody-here" in err
    code, _, err = cli(
        "charges", "create", "--users", "x", "--cohort", "y", "--mechanism", "pure_dp", "--event-epsilon", "1"
    )
    assert code == 2 and "not both" in err
    code, _, err = cli("users", "list", "--api-key", "wrong")
    assert code == 1 and "401" in err
    monkeypatch.delenv("ACCOUNTANT_API_KEY")
    code, _, err = cli("users", "list")
    assert code == 2 and "--api-key" in err and "ACCOUNTANT_API_KEY" in err
    code, _, err = cli("users", "list", "--api-key", ADMIN, "--url", "http://127.0.0.1:9")
    assert code == 1 and "could not reach the service" in err


# ------------------------------------------------------------------------------------------ help, version
def test_version():
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main())", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    from importlib.metadata import version

    assert out.returncode == 0 and out.stdout.strip() == f"privacy-accountant {version('privacy-accountant')}"


def _help(*argv: str) -> str:
    parser = build_parser()
    for name in argv:
        parser = next(a for a in parser._actions if a.dest in ("command", "action")).choices[name]
    return parser.format_help()


def test_serve_help_describes_every_option_and_setting():
    text = " ".join(_help("serve").split())
    for field in Settings.model_fields.values():
        names = field.validation_alias.choices  # type: ignore[union-attr]
        assert names[0] in text, names
        # the description of the field, as declared (the help is generated from it, not written apart)
        assert " ".join(field.description.replace("`", "").split()) in text, names
    serve = next(a for a in build_parser()._actions if a.dest == "command").choices["serve"]
    for action in serve._actions:
        assert action.help, f"serve {action.option_strings} has no help"


def test_every_option_of_every_command_has_help():
    root = build_parser()
    stack = [("", root)]
    while stack:
        name, parser = stack.pop()
        for action in parser._actions:
            if isinstance(action, type(root._subparsers._group_actions[0])):  # sub-commands
                stack.extend((f"{name} {k}", p) for k, p in action.choices.items())
            elif action.option_strings and action.help is None:
                pytest.fail(f"privacy-accountant{name} {action.option_strings[0]} has no help")


def test_one_flag_scheme(capsys):
    assert "--target-epsilon" not in _help("calibrate") and "--epsilon EPSILON" in _help("calibrate")
    assert "--epsilon EPSILON" in _help("delta") and "--epsilon EPSILON" in _help("users", "put")
    common = [
        "--solve-for",
        "count",
        "--delta",
        "1e-6",
        "--mechanism",
        "gaussian",
        "--noise-multiplier",
        "3",
        "--json",
        "-q",
    ]
    assert main(["calibrate", "--epsilon", "2", *common]) == 0
    new = json.loads(capsys.readouterr().out)
    assert new["target"]["epsilon"] == 2.0
    with pytest.raises(SystemExit):  # one spelling: --epsilon
        main(["calibrate", "--target-epsilon", "2", *common])
    capsys.readouterr()
    assert main(["calibrate", *common]) == 2
    assert "--epsilon" in capsys.readouterr().err
