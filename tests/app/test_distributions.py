"""The two distributions as users install them: ``privacy-accountant-client`` (``client/``) is built
with ``python -m build`` and installed into a fresh virtual environment, where it brings
``privacy_accountant`` and nothing of the service, and imports inside a project with its own ``app``
package; the service's wheel (the repository root) installs exactly its four packages and no file
of the client's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.helpers.server import shared_server

ROOT = Path(__file__).resolve().parents[2]
#: what the client's environment must not contain (modules of the service and its dependencies)
SERVICE_MODULES = [
    "app",
    "accountant",
    "mechanisms",
    "migrations",
    "figures",
    "fastapi",
    "sqlalchemy",
    "alembic",
    "numpy",
    "scipy",
    "uvicorn",
]

pytestmark = pytest.mark.slow


def _run(cmd: list[str], timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert r.returncode == 0, f"{cmd}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def _build(src: Path, out: Path) -> Path:
    """``python -m build`` (sdist, then the wheel from the sdist) of a copy of ``src``: a source
    tree that is not self-contained fails here, and the checkout gets no build files."""
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(src)])
    (wheel,) = out.glob("*.whl")
    return wheel


def _files(wheel: Path) -> set[str]:
    return {n for n in zipfile.ZipFile(wheel).namelist() if ".dist-info/" not in n}


@pytest.fixture(scope="module")
def client_wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("client-build")
    src = tmp / "client"
    shutil.copytree(
        ROOT / "client", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")
    )
    return _build(src, tmp / "dist")


def test_the_client_wheel_holds_only_the_sdk(client_wheel):
    assert {n.split("/")[0] for n in _files(client_wheel)} == {"privacy_accountant"}
    meta = zipfile.ZipFile(client_wheel).read("privacy_accountant_client-0.1.0.dist-info/METADATA").decode()
    lines = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    # what every install gets: httpx and pydantic; anything else only through an extra ([flower])
    always = sorted(r for r in lines if "extra ==" not in r)
    assert always == ["httpx>=0.27", "pydantic>=2.5"]
    extras = {r.split("extra ==")[1].strip().strip("'\"") for r in lines if "extra ==" in r}
    assert extras <= {"flower"}


def test_the_client_installs_alone_into_a_training_project(client_wheel, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    # the wheel and its two dependencies (from the index, at the versions the tests pin)
    _run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        + ["-c", str(ROOT / "constraints.txt"), str(client_wheel)],
        timeout=540,
    )
    project = tmp_path / "my-training-project"
    (project / "app").mkdir(parents=True)
    (project / "app" / "__init__.py").write_text("WHO = 'the user project'\n")
    (project / "app" / "main.py").write_text("def create_app():\n    return 'mine'\n")
    script = textwrap.dedent(
        """
        import importlib.metadata as md, importlib.util, json, sys
        import app
        import privacy_accountant
        from privacy_accountant import AccountantClient, __version__
        with AccountantClient(sys.argv[1]) as c:
            health = c.health()
            eps = c.epsilon([{"mechanism": "gaussian", "noise_multiplier": 2.0, "count": 3}], delta=1e-6)
        print(json.dumps({
            "app": app.WHO,
            "sdk_file": privacy_accountant.__file__,
            "version": __version__,
            "present": [n for n in sys.argv[2:] if n != "app" and importlib.util.find_spec(n)],
            "dists": sorted(d.metadata["Name"].lower() for d in md.distributions()),
            "service_modules": sorted(k for k in sys.modules if k == "app" or k.startswith("app.")),
            "health": health.status,
            "epsilon": eps.epsilon,
        }))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    # from the project's directory: its app/ comes first on sys.path, as in any project
    out = _run([str(py), "-c", script, shared_server().url, *SERVICE_MODULES], cwd=project, env=env)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["app"] == "the user project" and res["service_modules"] == ["app"]
    assert Path(res["sdk_file"]).resolve().is_relative_to(venv.resolve())
    assert res["version"] == "0.1.0"
    assert res["present"] == [], f"the client brought {res['present']}"
    assert "privacy-accountant" not in res["dists"] and "privacy-accountant-client" in res["dists"]
    assert {"httpx", "pydantic"} <= set(res["dists"])
    assert res["health"] == "ok" and 0 < res["epsilon"] < 100
    # and the user's app/ is untouched
    assert (project / "app" / "main.py").read_text() == "def create_app():\n    return 'mine'\n"


def test_the_service_wheel_installs_its_packages_and_none_of_the_clients(client_wheel, tmp_path):
    src = tmp_path / "service"
    for name in ("accountant", "mechanisms", "app", "figures", "migrations"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    wheel = _build(src, tmp_path / "dist")
    files = _files(wheel)
    assert {n.split("/")[0] for n in files} == {"app", "accountant", "mechanisms", "figures", "migrations"}
    assert not files & _files(client_wheel)  # no file is installed by both
    assert "app/static/dashboard/index.html" in files  # package data
    meta = zipfile.ZipFile(wheel).read("privacy_accountant-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: privacy-accountant-client==0.1.0" in meta.splitlines()
