"""`python -m figures --quick`: every figure file, and the quoted points within the
tolerance docs/results.md states (its "Quoted points" table, written by a full run)."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("dp_accounting")

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results.md"


def _page_points() -> list[tuple[str, str, int, str, float, float]]:
    text = PAGE.read_text()
    section = text.split("### Quoted points", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        m = re.match(
            r"\|\s*(5\.\d)\s*\|\s*([a-f])\s*\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*([0-9.e+-]+)\s*\|\s*([0-9.e+-]+)\s*\|",
            line,
        )
        if m:
            rows.append((m[1], m[2], int(m[3]), m[4], float(m[5]), float(m[6])))
    return rows


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("figures")
    cmd = [sys.executable, "-m", "figures", "--out", str(out), "--quick"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)  # this checkout's
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


def _csv(out: Path, fig: str) -> dict:
    vals = {}
    with open(out / f"fig{fig.replace('.', '_')}.csv", newline="") as fh:
        reader = csv.reader(fh)
        assert next(reader) == ["figure", "panel", "curve", "x", "y"]
        for f, panel, curve, x, y in reader:
            assert f == fig
            vals[(panel, curve, float(x))] = float(y)
    return vals


def test_every_figure_file_and_the_figure_5_5_notice(quick_run):
    out, proc = quick_run
    for fig in ("5_2", "5_3", "5_4", "5_6"):
        for ext in ("png", "svg", "csv"):
            path = out / f"fig{fig}.{ext}"
            assert path.exists() and path.stat().st_size > 1000, path
    assert not (out / "fig5_5.png").exists()
    assert "Figure 5.5" in proc.stdout and "Poisson" in proc.stdout
    assert "[5.4a]" in proc.stderr  # progress
    page = (out / "results.md").read_text()
    assert "![Figure 5.4" in page and "## Tightness" in page and "PLD path" in page


def test_quoted_points_within_the_stated_tolerance(quick_run):
    out, _ = quick_run
    rows = _page_points()
    assert len(rows) >= 8, "docs/results.md lost its quoted-points table"
    assert {(f, p, x) for f, p, x, *_ in rows} == {("5.4", "a", 100000), ("5.6", "a", 100000)}
    for fig, panel, x, curve, value, tol in rows:
        got = _csv(out, fig)[(panel, curve, float(x))]
        assert got == pytest.approx(value, rel=tol), (fig, panel, x, curve)


def test_quoted_points_order_the_accountings(quick_run):
    """Direction of the thesis's claims at the quoted points, and the default's place: the `best`
    answer at or below its RDP route, below the thesis's own bound and the approximate-DP baselines,
    within 0.1% of the clone PLD (its RDP route within 15%); for subsampling the RDP route at or
    below the subsampled clone pair's RDP, the default at or below the pair's PLD."""
    out, _ = quick_run
    f4 = {c: v for (p, c, x), v in _csv(out, "5.4").items() if p == "a" and x == 1e5}
    assert (
        f4["default (tightest valid)"]
        < f4["Thm 5.3.1 (U1)"]
        < f4["FMT21 + KOV15"]
        < f4["FMT21 closed form + KOV15"]
    )
    assert f4["default (tightest valid)"] <= f4["default, RDP route"]
    assert f4["default (tightest valid)"] == pytest.approx(f4["FMT21 clone PLD (T-fold)"], rel=1e-3)
    assert f4["FMT21 clone PLD (T-fold)"] <= f4["default, RDP route"] <= 1.15 * f4["FMT21 clone PLD (T-fold)"]
    f6 = {c: v for (p, c, x), v in _csv(out, "5.6").items() if p == "a" and x == 1e5}
    assert f6["default (tightest valid)"] < f6["Thm 5.4.1 (SU)"] < f6["FMT21 + BBG18 + KOV15"]
    assert f6["default (tightest valid)"] <= f6["subsampled clone pair (PLD)"]
    assert f6["default (tightest valid)"] <= f6["default, RDP route"] <= f6["subsampled clone pair (RDP)"]
    assert f6["FMT21 closed form + BBG18 + KOV15"] > 10 * f6["Thm 5.4.1 (SU)"]  # the thesis's "14×" regime


@pytest.mark.parametrize("module", ["matplotlib", "dp_accounting"])
def test_without_an_extra_the_figures_stop_with_a_one_line_install_hint(
    module, monkeypatch, capsys, tmp_path
):
    from figures import main

    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    assert main(["--out", str(tmp_path), "--quick"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert (
        err
        == f"error: the figures need {module}: pip install -e '.[figures,pld]' (in a clone of the repository)"
    )
    assert not list(tmp_path.iterdir())  # nothing was computed or written
