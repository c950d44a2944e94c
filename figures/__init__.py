"""``python -m figures``: regenerate thesis figures 5.2, 5.3, 5.4 and 5.6 with baselines.

Writes, into ``--out DIR``: ``fig5_2.png``/``.svg``/``.csv`` (and likewise for 5.3, 5.4, 5.6), CSV
columns ``figure,panel,curve,x,y``; and the results page (``--results``, default DIR/results.md)
with each figure, the thesis's quoted claims, the reproduced values, the tightness of the default
against the clone pair's exact (ε, δ) and PLD, and the baselines' cost. ``--quick`` computes a few
points per panel (always including the quoted ones). Figure 5.5 (Poisson subsampling) is not
covered by the implemented theorems: the command says so instead of drawing it.

Needs matplotlib (extra ``[figures]``) and dp_accounting (extra ``[pld]``) for the PLD curve. A research
tool on top of :mod:`accountant` (it imports nothing of the service ``app``), installed with the
service's distribution.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .spec import FIGURES, NOT_COVERED

__all__ = ["main", "run"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m figures",
        description="Regenerate thesis figures 5.2, 5.3, 5.4, 5.6 (PNG, SVG, CSV) and the results page.",
    )
    p.add_argument("--out", required=True, type=Path, help="directory for the figures and CSVs (created)")
    p.add_argument(
        "--quick", action="store_true", help="a few points per panel (CI); the quoted points are kept"
    )
    p.add_argument("--results", type=Path, help="where to write the results page (default: OUT/results.md)")
    p.add_argument("--only", action="append", choices=sorted(FIGURES), help="only this figure (repeatable)")
    p.add_argument(
        "--page-only",
        action="store_true",
        help="rewrite the figures and results page from the CSVs already in OUT (no recomputation)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    return p


def _fmt_x(v) -> str:
    return repr(int(v)) if float(v).is_integer() and abs(v) >= 1 else repr(float(v))


def _read_csv(path: Path) -> dict:
    fd: dict = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            x = float(row["x"])
            fd.setdefault((row["panel"], row["curve"]), []).append(
                (int(x) if x.is_integer() and x >= 1 else x, float(row["y"]))
            )
    return fd


def run(
    out: Path, quick: bool = False, results: Path | None = None, only=None, log=None, page_only: bool = False
) -> dict:
    """Compute every panel, write the figures, CSVs and the results page; return the data."""
    from . import render
    from .results import cost_measurements, write_results

    log = log or (lambda _msg: None)
    out.mkdir(parents=True, exist_ok=True)
    data: dict[str, dict] = {}
    t_all = time.perf_counter()
    timing_file = out / "timings.json"
    for fig_id, panels in FIGURES.items():
        if only and fig_id not in only:
            continue
        stem = "fig" + fig_id.replace(".", "_")
        if page_only:
            data[fig_id] = _read_csv(out / f"{stem}.csv")
            render.render(fig_id, panels, data[fig_id], out)
            continue
        fd = _compute_figure(fig_id, panels, quick, log)
        data[fig_id] = fd
        _write_csv(out / f"{stem}.csv", fig_id, fd)
        render.render(fig_id, panels, fd, out)
        log(f"figure {fig_id} written ({stem}.png, .svg, .csv)")
    seconds = _timings(timing_file, page_only, time.perf_counter() - t_all)
    log("measuring the cost of the baselines and of the PLD path")
    costs = cost_measurements(quick)
    results = results or (out / "results.md")
    write_results(results, out, data, costs, quick, seconds)
    log(f"results page written: {results} ({time.perf_counter() - t_all:.0f} s in all)")
    return data


def _compute_figure(fig_id: str, panels: list, quick: bool, log) -> dict:
    """``(panel, curve) → [(x, y), …]`` of one figure, computed point by point."""
    from . import compute

    fd: dict = {}
    for p in panels:
        xs = p.values(quick)
        t0 = time.perf_counter()
        for i, x in enumerate(xs):
            vals = compute.point(p, x, quick)
            for curve, y in vals.items():
                fd.setdefault((p.panel, curve), []).append((x, y))
            log(
                f"[{fig_id}{p.panel}] {p.x} = {_fmt_x(x)} ({i + 1}/{len(xs)}), {time.perf_counter() - t0:.1f} s"
            )
    return fd


def _write_csv(path: Path, fig_id: str, fd: dict) -> None:
    """The finite points of one figure, one row each."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["figure", "panel", "curve", "x", "y"])
        for (panel, curve), pts in fd.items():
            for x, y in pts:
                if y is not None and math.isfinite(y):
                    w.writerow([fig_id, panel, curve, _fmt_x(x), repr(float(y))])


def _timings(timing_file: Path, page_only: bool, seconds: float) -> float:
    """The computation's total seconds: this run's (saved with the per-curve timings), or, when only
    the page is rewritten, the saved ones (restored into ``compute.TIMINGS``)."""
    from . import compute

    if page_only:
        saved = json.loads(timing_file.read_text()) if timing_file.exists() else {}
        compute.TIMINGS.update(saved.get("timings", {}))
        return saved.get("seconds", 0.0)
    timing_file.write_text(json.dumps({"timings": compute.TIMINGS, "seconds": seconds}, indent=1))
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    a = _parser().parse_args(list(argv) if argv is not None else None)
    try:  # the extras figures (matplotlib) and pld (dp_accounting, the baselines' PLDs)
        import dp_accounting  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError as exc:
        print(
            f"error: the figures need {exc.name or 'matplotlib and dp_accounting'}: "
            "pip install -e '.[figures,pld]' (in a clone of the repository)",
            file=sys.stderr,
        )
        return 2
    print(NOT_COVERED)

    def log(msg):
        if not a.quiet:
            print(msg, file=sys.stderr, flush=True)

    run(a.out, a.quick, a.results, a.only, log, a.page_only)
    return 0
