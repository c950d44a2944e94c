"""The conversion's extension above the default grid (bounds.md §6): ε before/after and its cost.

Run: python bench/bench_orders.py   → writes bench/results_orders.md

For one round (T = 1) of a ``shuffle`` event at δ = 1e-8, n ∈ {10⁵, 10⁶, 10⁷}, ε0 ∈ {0.5, 1}, and
one ``subsampled_shuffle`` event: ε of ``accountant.epsilon_guarantee`` with ``extend=False``
(the grid to 10⁴ and the refinement around its optimum: the answer before the extension) and with
the default ``extend=True`` (when the grid's optimum is its last order, the orders
``EXTENSION_ORDERS`` up to 3.2·10⁵ and the refinement around the best of all). Cold times: every
cache of the process emptied before each run (``bench_cold.clear_all_caches``), median of 3; the
extension's cost is the difference.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _util import write_results  # noqa: E402
from bench_cold import clear_all_caches  # noqa: E402

import accountant as A  # noqa: E402

EVENTS = [
    {"mechanism": "shuffle", "n": n, "epsilon0": e, "count": 1}
    for n in (10**7, 10**6, 10**5)
    for e in (0.5, 1.0)
]
EVENTS.append({"mechanism": "subsampled_shuffle", "n": 10**7, "k": 10**5, "epsilon0": 1.0, "count": 1})


def cold(event: dict, extend: bool) -> tuple[float, A.Guarantee]:
    times, g = [], None
    for _ in range(3):
        clear_all_caches()
        t = time.perf_counter()
        g = A.epsilon_guarantee([event], 1e-8, extend=extend)
        times.append((time.perf_counter() - t) * 1e3)
    assert g is not None
    return statistics.median(times), g


def main() -> None:
    lines = [
        "| event (T = 1, δ = 1e-8) | ε before (grid to 10⁴) | order | ε after (extension) | order | change | cold ms before | cold ms after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for ev in EVENTS:
        t0, g0 = cold(ev, False)
        t1, g1 = cold(ev, True)
        what = ", ".join(f"{k}={v:g}" for k, v in ev.items() if k not in ("mechanism", "count"))
        lines.append(
            f"| {ev['mechanism']} {what} | {g0.epsilon:.6g} | {g0.order:.6g} | {g1.epsilon:.6g} | {g1.order:.6g} "
            f"| {100 * (g1.epsilon / g0.epsilon - 1):+.1f}% | {t0:.0f} | {t1:.0f} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        f"Load average while measuring: {os.getloadavg()[0]:.1f} (2 cores shared: cold times are inflated accordingly).",
        "",
        "Only answers whose optimum on the default grid is its last order (10⁴) change; the others are "
        "bit-identical and cost nothing more. The ledger's grid (`DEFAULT_GRID_VERSION`) is unchanged.",
    ]
    print(write_results("results_orders.md", "Orders above the default grid (bounds.md §6)", lines))


if __name__ == "__main__":
    main()
