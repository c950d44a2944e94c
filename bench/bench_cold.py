"""Cold answers: the clone curve of a new (n, ε0) and the ε of the two headline events, against
dp_accounting's own job measured in the same process and run.

Run: python bench/bench_cold.py [--quick]   → writes bench/results_cold.md

* Baseline (dp_accounting, same process): RDP of a Poisson-sampled Gaussian (q = 0.01, σ = 1)
  composed 10⁴ times on dp_accounting's default orders, and its ε at δ = 1e-8 — a fresh
  ``RdpAccountant`` each time (that library keeps no cache).
* Cold ε of the headline events through the public API (``accountant.epsilon_guarantee``): every
  cache of this process — the composition's, the bound details', the curve store, the clone
  engine's prepared histograms — is emptied before each repetition.
* Cold clone curve on the default grid (81 orders, 1.1 … 10⁴) over a grid of (n, ε0): CPU time,
  min of 3 repetitions, the engine's prepared histograms dropped before each — with the compiled
  kernels (numba, when installed) and again with the pure-numpy path forced.
* First use in a fresh process (subprocess): importing the library and the first cold curve,
  with the compiled kernels (``ACCOUNTANT_NUMBA=1``: numba's import and the load of its on-disk
  cache are paid there, once per process) and without them (the default).

The process runs with the service's allocator tuning (``app.core.tuning.tune_allocator``, as
``privacy-accountant serve`` does; the baseline runs under it too). Every table states the
machine and its load average; ratios are against the baseline of the same run.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _util import write_results  # noqa: E402

import accountant as A  # noqa: E402
from accountant.clones import clear_cache, clone_rdp, route  # noqa: E402

ORDERS = np.asarray(A.DEFAULT_ORDERS, dtype=float)
NS = [10**2, 10**3, 10**4, 10**5, 10**6, 10**7, 10**8]
EPS0 = [0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0]


def baseline_ms() -> float:
    """dp_accounting: RDP + ε of a Poisson-sampled Gaussian composed 10⁴ times (one call)."""
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    t = time.perf_counter()
    acc = rdp.RdpAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0)), 10**4)
    acc.get_epsilon(1e-8)
    return (time.perf_counter() - t) * 1e3


SHUFFLE = {"mechanism": "shuffle", "n": 10**6, "epsilon0": 0.5, "count": 10**5}
SUBSAMPLED = {"mechanism": "subsampled_shuffle", "n": 10**6, "k": 1000, "epsilon0": 2.0, "count": 10**5}


def clear_all_caches() -> None:
    from accountant import bounds, store
    from accountant.events import cached_unit_curve

    clear_cache()
    cached_unit_curve.cache_clear()
    bounds._DETAILS.clear()
    store.set_store(None)  # a fresh, empty in-process store


def cold_ms(event: dict) -> tuple[float, float]:
    clear_all_caches()
    t = time.perf_counter()
    g = A.epsilon_guarantee([event], 1e-8)
    return (time.perf_counter() - t) * 1e3, g.epsilon


def curve_ms(n: int, e: float, repeat: int = 3) -> float:
    ts = []
    for _ in range(repeat):
        clear_cache()
        t = time.process_time()
        clone_rdp(n, e, ORDERS)
        ts.append((time.process_time() - t) * 1e3)
    return min(ts)


def first_use_ms(no_numba: bool) -> float:
    """Wall ms of `import accountant` + the first cold curve (n = 10⁴, ε0 = 1) in a new process."""
    import subprocess

    code = (
        "import time; t = time.perf_counter(); import numpy as np; import accountant as A; "
        "from accountant.clones import clone_rdp; "
        "clone_rdp(10**4, 1.0, np.asarray(A.DEFAULT_ORDERS, dtype=float)); "
        "print((time.perf_counter() - t) * 1e3)"
    )
    env = dict(os.environ)
    if no_numba:
        env.pop("ACCOUNTANT_NUMBA", None)
    else:
        env["ACCOUNTANT_NUMBA"] = "1"
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def curve_table(ns, title: str) -> tuple[list[str], list[float]]:
    lines = [
        title,
        "",
        "Engine in brackets (`route`): e = exact, h = histogram, a = adaptive. Targets: p50 ≤ 10 ms, "
        "worst ≤ 30 ms over n ≤ 10⁸, ε0 ≤ 10.",
        "",
        "| n \\ ε0 | " + " | ".join(f"{e:g}" for e in EPS0) + " |",
        "|---|" + "---:|" * len(EPS0),
    ]
    allv = []
    for n in ns:
        row = []
        for e in EPS0:
            v = curve_ms(n, e)
            allv.append(v)
            row.append(f"{v:.0f} ({route(n, e, ORDERS)[0]})")
        lines.append(f"| {n:.0e} | " + " | ".join(row) + " |")
        print(lines[-1], flush=True)
    return lines, allv


def main() -> None:
    from accountant.clones import compiled
    from app.core.tuning import tune_allocator

    tuned = tune_allocator()
    quick = "--quick" in sys.argv
    fast = compiled.use("--numpy" not in sys.argv)  # the compiled kernels when numba is installed
    if fast:
        import numba

        kern = (
            f"on (numba {numba.__version__}, switched on for this run; off by default in the library: "
            "ACCOUNTANT_NUMBA=1)"
        )
    else:
        kern = "off (numba not installed or disabled: the pure-numpy path)"
    reps = 5 if quick else 15
    load0 = os.getloadavg()
    lines = [
        f"Load average at start: {load0[0]:.2f} / {load0[1]:.2f} / {load0[2]:.2f} (1/5/15 min) on "
        f"{os.cpu_count()} cores (a shared machine: compare ratios within this file, not bare times "
        f"across files). Allocator tuning of the service: {'on' if tuned else 'not available'}. "
        f"Compiled kernels: {kern}.",
        "",
    ]
    for _ in range(2):  # warm-up: imports, first-call allocations, dp_accounting's own set-up
        baseline_ms()
        cold_ms(SHUFFLE)
        cold_ms(SUBSAMPLED)

    # interleaved, so that a change of load affects both sides alike
    base, sh, sub = [], [], []
    eps_sh = eps_sub = 0.0
    for _ in range(reps):
        base.append(baseline_ms())
        t, eps_sh = cold_ms(SHUFFLE)
        sh.append(t)
        t, eps_sub = cold_ms(SUBSAMPLED)
        sub.append(t)
    b50 = statistics.median(base)
    lines += [
        "## Cold ε of the headline events vs dp_accounting (wall ms, median / worst of "
        f"{reps} interleaved runs)",
        "",
        "| | median ms | worst ms | ratio of medians (ours / baseline) |",
        "|---|---:|---:|---:|",
        f"| baseline: dp_accounting RDP + ε, Poisson-sampled Gaussian ×10⁴ | {b50:.1f} | {max(base):.1f} | 1 |",
        f"| shuffle n = 10⁶, ε0 = 0.5, T = 10⁵, δ = 1e-8 (ε = {eps_sh:.4f}) | {statistics.median(sh):.1f} | "
        f"{max(sh):.1f} | {statistics.median(sh) / b50:.2f} |",
        f"| subsampled n = 10⁶, k = 1000, ε0 = 2, T = 10⁵, δ = 1e-8 (ε = {eps_sub:.4f}) | "
        f"{statistics.median(sub):.1f} | {max(sub):.1f} | {statistics.median(sub) / b50:.2f} |",
        "",
        "Target: both ratios < 1.",
        "",
    ]
    print("\n".join(lines), flush=True)

    ns = NS[:5] if quick else NS
    tab, allv = curve_table(ns, "## Cold clone curve on the default grid (81 orders), CPU ms (min of 3)")
    lines += tab
    b_end = statistics.median(baseline_ms() for _ in range(5))
    lines += [
        "",
        f"Over the {len(allv)} cells: p50 {statistics.median(allv):.1f} ms, worst {max(allv):.1f} ms "
        f"(= {statistics.median(allv) / b_end:.2f}× / {max(allv) / b_end:.2f}× the dp_accounting baseline, "
        f"{b_end:.1f} ms when the table was done). Load average now: {os.getloadavg()[0]:.2f}.",
        "",
    ]
    if fast:  # the same table on the pure-numpy path (the fallback; the same bounds)
        compiled.use(False)
        try:
            tab, allv_np = curve_table(
                ns, "### The same with the pure-numpy path forced (no compiled kernels)"
            )
        finally:
            compiled.use(True)
        b_end = statistics.median(baseline_ms() for _ in range(5))
        lines += tab + [
            "",
            f"Over the {len(allv_np)} cells: p50 {statistics.median(allv_np):.1f} ms, worst {max(allv_np):.1f} ms "
            f"(= {statistics.median(allv_np) / b_end:.2f}× / {max(allv_np) / b_end:.2f}× the baseline, "
            f"{b_end:.1f} ms). Load average now: {os.getloadavg()[0]:.2f}.",
            "",
        ]
    fu = [statistics.median(first_use_ms(nb) for _ in range(3)) for nb in (False, True)]
    lines += [
        "Where the time goes, and what would meet the curve targets soundly: [notes_cold.md](notes_cold.md).",
        "",
        "## First use in a fresh process (wall ms, median of 3)",
        "",
        "`import accountant` and the first cold curve (n = 10⁴, ε0 = 1, default grid) in a new Python process: "
        f"{fu[0]:.0f} ms with the compiled kernels (ACCOUNTANT_NUMBA=1: numba import and cache load included), "
        f"{fu[1]:.0f} ms without (the default). Every later process on the machine finds the compiled code in the "
        "on-disk cache; the very first one compiles it (≈ 7 s here, not in these numbers).",
        "",
        f"Load average at the end: {os.getloadavg()[0]:.2f}.",
        "",
    ]
    path = write_results("results_cold.md", "Cold answers against dp_accounting", lines)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
