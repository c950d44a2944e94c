"""Benchmark of the default ``accounting="best"`` answer (every route: RDP, PLD, pure) for the two
headlines, against dp_accounting's PLDAccountant, in one process (issue 23, item 7).

Run: python bench/bench_best.py [repeats]   → writes bench/results_best.md

Baseline: dp_accounting's ``PLDAccountant`` (value_discretization_interval 1e-4) composing a
Poisson-sampled Gaussian (q = 0.01, σ = 1.1) 10⁴ times, then ε at δ = 1e-8. Measured interleaved
with the answers (baseline, cold, warm, …) so the shared machine's load hits both alike; ratios
are of medians. *Cold*: every accountant cache cleared (curves, clone and subsampled-clone
preparations, PLD pmfs and spectra) — the answer computes the RDP curves, the dominating pair's
PLD and its composition from nothing; *warm*: the same event with another count (the curves and
single-round PLD cached; a new conversion, tilt and FFT). Where a warm answer's time goes: each
repeat also times the two routes alone at a third count (the RDP route: refinement at new real
orders; the PLD route: tilt, FFT composition, root).
"""

from __future__ import annotations

import os
import statistics
import sys
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _util import write_results  # noqa: E402
from bench_pld import baseline, ms  # noqa: E402  (the same baseline and timer as the PLD bench)

import accountant  # noqa: E402
from accountant import clones, store  # noqa: E402
from accountant.baselines import clone_dp  # noqa: E402
from accountant.composition import epsilon_guarantee  # noqa: E402
from accountant.pld import pld_epsilon  # noqa: E402

HEADLINES = {
    "shuffle (n = 10⁶, ε0 = 0.5, T = 10⁵)": {
        "mechanism": "shuffle",
        "n": 10**6,
        "epsilon0": 0.5,
        "count": 10**5,
    },
    "subsampled (n = 10⁶, k = 10³, ε0 = 2, T = 10⁵)": {
        "mechanism": "subsampled_shuffle",
        "n": 10**6,
        "k": 1000,
        "epsilon0": 2.0,
        "count": 10**5,
    },
}
DELTA = 1e-8
WARM_COUNTS = [50_000, 20_000, 70_000, 30_000, 90_000, 40_000, 60_000, 80_000]
#: the routes alone, at a count whose RDP grid optimum is a grid order none of the repeat's warm
#: counts has (so its refinement orders are new too)
SPLIT_COUNTS = [40_000, 10_000]


def cold() -> None:
    store.clear_caches()
    clones.clear_cache()
    clone_dp._prepared.cache_clear()


def main(repeats: int) -> list[str]:
    load0 = os.getloadavg()
    baseline()  # imports and first-call costs out of the way, for both sides
    accountant.epsilon_routed([{**HEADLINES[next(iter(HEADLINES))], "n": 1000, "count": 10}], DELTA)
    base_ts: list[float] = []
    cold_ts: dict[str, list[float]] = {k: [] for k in HEADLINES}
    warm_ts: dict[str, list[float]] = {k: [] for k in HEADLINES}
    split_ts: dict[str, list[tuple[float, float]]] = {k: [] for k in HEADLINES}
    answers: dict[str, accountant.RoutedGuarantee] = {}
    for i in range(repeats):
        t, _ = ms(baseline)
        base_ts.append(t)
        for name, ev in HEADLINES.items():
            cold()
            t, answers[name] = ms(lambda ev=ev: accountant.epsilon_routed([ev], DELTA))
            cold_ts[name].append(t)
            for c in WARM_COUNTS[i % 2 :: 2][:2]:
                t, _ = ms(lambda c=c, ev=ev: accountant.epsilon_routed([{**ev, "count": c}], DELTA))
                warm_ts[name].append(t)
            one = [{**ev, "count": SPLIT_COUNTS[i % 2]}]
            t_rdp, _ = ms(lambda one=one: epsilon_guarantee(one, DELTA))
            t_pld, _ = ms(lambda one=one: pld_epsilon(one, DELTA))
            split_ts[name].append((t_rdp, t_pld))
    load1 = os.getloadavg()
    b = statistics.median(base_ts)
    lines = [
        f"Python {sys.version.split()[0]}, numpy {version('numpy')}, "
        f"dp_accounting {version('dp-accounting')}; compiled clone kernels "
        f"{'on' if os.environ.get('ACCOUNTANT_NUMBA') == '1' else 'off'}.",
        "",
        f"Load average before / after: {load0[0]:.2f} / {load1[0]:.2f} (2 cores, shared); {repeats} interleaved "
        "repeats.",
        "",
        "| measurement | median | ratio to the baseline | target |",
        "|---|---|---|---|",
        f"| baseline: dp_accounting `PLDAccountant` (Δ = 1e-4), Poisson-sampled Gaussian q = 0.01, σ = 1.1, 10⁴ "
        f"rounds, ε at δ = 1e-8 | {b:.0f} ms (min {min(base_ts):.0f}) | 1 | |",
    ]
    for name in HEADLINES:
        c, w = statistics.median(cold_ts[name]), statistics.median(warm_ts[name])
        lines.append(
            f"| `best`, {name}, **cold** | {c:.0f} ms (min {min(cold_ts[name]):.0f}) | **{c / b:.3f}** | ≤ 0.5 |"
        )
        lines.append(
            f"| `best`, {name}, another count, **warm** | {w:.1f} ms (min {min(warm_ts[name]):.1f}) | "
            f"**{w / b:.3f}** | ≤ 0.05 |"
        )
    lines += ["", "| warm, the routes alone (another count) | RDP route | PLD route |", "|---|---|---|"]
    for name, ts in split_ts.items():
        r, p = (statistics.median(x) for x in zip(*ts))
        lines.append(f"| {name} | {r:.1f} ms ({r / b:.3f}) | {p:.1f} ms ({p / b:.3f}) |")
    lines += ["", "| answer (δ = 1e-8) | route | ε of each route |", "|---|---|---|"]
    for name, r in answers.items():
        each = ", ".join(f"{v.route} {v.epsilon:.5g}" for v in r.routes if v.applies)
        lines.append(f"| {name} | **{r.route}: {r.epsilon:.5g}** | {each} |")
    return lines


if __name__ == "__main__":
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    out = main(reps)
    path = write_results(
        "results_best.md", 'The default answer (`accounting="best"`) against dp_accounting', out
    )
    print("\n".join(out))
    print(f"wrote {path}")
