"""The linters also run the way the ecosystem runs them: ``.pre-commit-config.yaml`` holds one local
hook per linter the tests enforce (ruff, ruff format, mypy with the project's configuration,
import-linter), each running the installed tool — no hook is fetched from the network, and no
hook runs a command the tests do not (tests/test_style.py, tests/test_typing.py, tests/test_layers.py)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _hooks() -> dict[str, dict]:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    assert [r["repo"] for r in config["repos"]] == ["local"], "hooks must be local: nothing fetched"
    return {h["id"]: h for r in config["repos"] for h in r["hooks"]}


def test_one_local_hook_per_enforced_linter():
    hooks = _hooks()
    assert set(hooks) == {"ruff", "ruff-format", "mypy", "import-linter"}
    assert all(h["language"] == "system" for h in hooks.values())
    entries = {k: h["entry"].split() for k, h in hooks.items()}
    assert entries["ruff"][:2] == ["ruff", "check"] and entries["ruff-format"][:2] == ["ruff", "format"]
    # mypy as tests/test_typing.py runs it: the project's one strict configuration over its files
    assert entries["mypy"] == ["mypy", "--config-file", "pyproject.toml"]
    assert entries["import-linter"][0] == "lint-imports"
    for name in ("mypy", "import-linter"):  # whole-project checks
        assert hooks[name]["pass_filenames"] is False, name
