"""The shipped deployment files: ``compose.yaml`` (the single service and the ``scale-out``
profile) and ``deploy/haproxy.cfg`` (checked by haproxy itself, as shipped and as the scale-out
test runs it). No Docker here: the compose file is checked as data against what the docs say."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

from tests.helpers import balancer as lbh
from tests.helpers.server import ROOT

needs_haproxy = pytest.mark.skipif(
    lbh.haproxy() is None, reason="haproxy not found (bash .ci/install-haproxy.sh installs Debian's)"
)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def _directives(section: str) -> list[str]:
    """The lines of one section of deploy/haproxy.cfg (``backend replicas``, ``defaults``, …)."""
    text = lbh.CONFIG.read_text()
    m = re.search(rf"^{re.escape(section)}\n((?:[ \t].*\n|\n)*)", text, re.M)
    assert m, section
    return [ln.strip() for ln in m.group(1).splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_compose_scale_out_profile_runs_replicas_behind_the_balancer(compose):
    s = compose["services"]
    replica, balancer = s["replica"], s["balancer"]
    assert replica["profiles"] == balancer["profiles"] == ["scale-out"]
    assert "profiles" not in s["accountant"] and "profiles" not in s["db"]  # `docker compose up` as before
    # every replica on the one PostgreSQL database, with the single service's settings
    assert replica["environment"] == s["accountant"]["environment"]
    assert replica["environment"]["DATABASE_URL"].startswith("postgresql+psycopg://")
    assert replica["depends_on"]["db"]["condition"] == "service_healthy"
    assert replica["deploy"]["replicas"] >= 2 and replica.get("restart") == "unless-stopped"
    # replicas are reached only through the balancer; their health is the balancer's criterion
    assert "ports" not in replica
    assert "/health/ready" in " ".join(replica["healthcheck"]["test"])
    port = replica["command"][replica["command"].index("--port") + 1]
    servers = [d for d in _directives("backend replicas") if d.startswith("server-template ")]
    assert len(servers) == 1 and f" replica:{port} " in servers[0] + " ", servers
    # the balancer: Debian's haproxy with the shipped configuration, published on loopback
    assert balancer["depends_on"] == ["replica"]
    assert set(balancer["ports"]) == {"127.0.0.1:8080:8000", "127.0.0.1:8404:8404"}
    dockerfile = (ROOT / balancer["build"]["context"] / balancer["build"]["dockerfile"]).read_text()
    assert (
        "FROM debian:bookworm" in dockerfile
        and "apt-get install -y --no-install-recommends haproxy" in dockerfile
    )
    assert "COPY haproxy.cfg /etc/haproxy/haproxy.cfg" in dockerfile


def test_haproxy_config_checks_readiness_and_bounds_every_wait():
    backend = _directives("backend replicas")
    assert "option httpchk GET /health/ready" in backend and "http-check expect status 200" in backend
    assert "balance roundrobin" in backend
    assert not [d for d in backend if d.split()[0] in ("cookie", "stick", "stick-table", "hash-type")]
    defaults = _directives("defaults")
    timeouts = {d.split()[1]: d.split()[2] for d in defaults if d.startswith("timeout ")}
    assert set(timeouts) >= {"connect", "client", "server", "http-request", "queue", "check"}, timeouts
    assert "option redispatch 1" in defaults and any(d.startswith("retries ") for d in defaults)


@needs_haproxy
def test_haproxy_accepts_the_shipped_config_and_the_tests_loopback_form(tmp_path):
    lbh.check_config(lbh.CONFIG)
    local = tmp_path / "haproxy.cfg"
    local.write_text(lbh.config([18001, 18002, 18003], 18000, 18404))
    lbh.check_config(local)
    text = local.read_text()
    directives = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    assert not [ln for ln in directives if "resolvers" in ln or "127.0.0.11" in ln]
    assert re.findall(r"^\s+server r(\d) 127\.0\.0\.1:(\d+)$", text, re.M) == [
        ("1", "18001"),
        ("2", "18002"),
        ("3", "18003"),
    ]


def test_the_deployment_docs_state_the_shipped_settings():
    """docs/deployment.md quotes deploy/haproxy.cfg: the numbers must be the file's."""
    doc = " ".join((ROOT / "docs" / "deployment.md").read_text().split())
    defaults, backend = _directives("defaults"), _directives("backend replicas")
    t = {d.split()[1]: d.split()[2].replace("s", " s") for d in defaults if d.startswith("timeout ")}
    for phrase in (
        f"Connecting to a replica {t['connect']}",
        f"a request's head {t['http-request']}",
        f"a replica's answer {t['server']}",
        f"a health check {t['check']}",
    ):
        assert phrase in doc, phrase
    assert t["client"] == t["server"]
    retries = next(d for d in defaults if d.startswith("retries "))
    assert f"(`{retries}`, `option redispatch 1`)" in doc
    assert "default-server check inter 1s fall 2 rise 2" in backend
    assert (
        "`GET /health/ready` each second; two failures in a row" in doc and "two successes put it back" in doc
    )
    template = next(d for d in backend if d.startswith("server-template "))
    assert f"`server-template replica {template.split()[2]}`" in doc


# ------------------------------------------------------------------------------------ the image
def _dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def test_the_image_installs_both_distributions_at_the_pinned_versions():
    text = _dockerfile()
    copied = re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.M)
    sources = {src for line in copied for src in line.split()}
    assert {"client", "constraints.txt", "pyproject.toml", "app", "migrations"} <= sources
    assert all((ROOT / src).exists() for src in sources), sources
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert not sources & set(ignored)
    assert 'pip wheel --wheel-dir /wheels -c constraints.txt ./client ".[postgres,fast]"' in text
    assert 'pip install --no-index --find-links /wheels "privacy-accountant[postgres,fast]"' in text
    assert re.search(r"^\s*ACCOUNTANT_NUMBA=1\b", text, re.M)
    assert re.search(r"^\s*NUMBA_CACHE_DIR=/opt/numba-cache\b", text, re.M)


@pytest.mark.slow
def test_the_images_build_step_compiles_every_clone_kernel():
    """The image's ``RUN python -c …`` compiles the kernels into numba's cache at build time (run
    here as it is written, on this checkout)."""
    m = re.search(r'^RUN python -c "(.+?)" \\$', _dockerfile(), re.M)
    assert m and "clones.precompile()" in m.group(1)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACCOUNTANT_NUMBA": "1"}
    r = subprocess.run(
        [sys.executable, "-c", m.group(1)], env=env, capture_output=True, text=True, timeout=900, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr[-3000:]
    kernels = {"g_range", "cells_stats", "hist_sum", "pmf_block_sums", "cell_logsums_phi", "tilt_argmax"}
    assert set(r.stdout.strip().removeprefix("compiled: ").split(", ")) == kernels
