"""Benchmarks of calibration: ε0, count, n and k calibration, side by side with dp_accounting.

Run: python bench/bench_calibration.py [repeats]   → writes bench/results_calibration.md

Every repeat starts from cold curve caches (the event-curve LRU, the curve store and the bounds'
detail caches are cleared), so each measures a first calibration of a new event, not a cache hit.
The machine is shared: the load average before and after the run is recorded with the results.
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

import dp_accounting  # noqa: E402
from _util import write_results  # noqa: E402
from dp_accounting import rdp as dp_rdp  # noqa: E402

import accountant as A  # noqa: E402
from accountant import bounds as B  # noqa: E402
from accountant import store  # noqa: E402
from accountant.events import cached_unit_curve  # noqa: E402

N, K, T = 10**6, 1000, 10**4
TARGET, DELTA = 2.0, 1e-6
SUB_EVENT = {"mechanism": "subsampled_shuffle", "n": N, "k": K, "count": T}


def cold():
    """Drop every cache a curve computation could reuse: the composition's unit curves, the
    curve store, the default-curve details and the clone engine's prepared histograms."""
    cached_unit_curve.cache_clear()
    st = store.get_store()
    if hasattr(st, "clear"):
        st.clear()
    from accountant import clones

    clones.clear_cache()
    details = getattr(B, "_DETAILS", None)
    if details is not None:
        details.clear()


def timed(fn, repeat: int, warmup: int = 1) -> tuple[float, list[float], object]:
    """Median wall time (ms) over cold-cache repeats, the samples, and the last result."""
    out = None
    for _ in range(warmup):
        cold()
        out = fn()
    ts = []
    for _ in range(repeat):
        cold()
        t0 = time.perf_counter()
        out = fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), ts, out


class gir23_only:
    """The thesis bounds as the default curve (the tighter bounds of bounds.md §8 switched off)."""

    def __enter__(self):
        self.ctx = B.gir23_only()
        self.ctx.__enter__()
        cold()

    def __exit__(self, *exc):
        self.ctx.__exit__(*exc)
        cold()


def default_description() -> str:
    parts = ["thesis bounds (U1/U2/SU + pure-DP cap)"]
    if B.tight_bounds():
        parts.append(f"clone bound (shuffle, n ≤ {B.CLONES_MAX_N:.0e})")
        parts.append("WBK19 over the clone curve (subsampled)")
    return " + ".join(parts)


def dp_accounting_sigma(q: float, steps: int, target: float, delta: float) -> float:
    def make_event(sigma):
        return dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps
        )

    return dp_accounting.calibrate_dp_mechanism(
        dp_rdp.RdpAccountant,
        make_event,
        target,
        delta,
        bracket_interval=dp_accounting.ExplicitBracketInterval(0.1, 100.0),
    )


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main(repeat: int = 21):
    load_before = load()
    lines = ["| measurement | median | evaluations | target |", "|---|---|---|---|"]
    notes = []

    # 1. ε0 calibration, subsampled shuffle, T = 1e4, default grid — thesis bounds
    with gir23_only():
        med, ts, r = timed(lambda: A.calibrate(SUB_EVENT, "epsilon0", TARGET, DELTA), repeat)
        nudge = A.epsilon_guarantee([{**r.event, "epsilon0": r.value * (1 + 1e-5)}], DELTA).epsilon
    lines.append(
        f"| ε0 calibration, subsampled shuffle n = 10⁶, k = 10³, T = 10⁴, target ε = {TARGET} at "
        f"δ = {DELTA:g}, default grid ({A.DEFAULT_ORDERS.size} orders), **thesis bounds**, cold caches "
        f"| **{med:.1f} ms** (min {min(ts):.1f}) | {r.evaluations} | ≤ 50 ms |"
    )
    notes.append(
        f"ε0 answer (thesis bounds): ε0 = {r.value:.6f}, ε = {r.epsilon:.6f} at order {r.order:g}; "
        f"ε0·(1 + 1e-5) gives {nudge:.6f}."
    )
    thesis_value = r.value

    # same with whatever the default curve is right now
    med_d, ts_d, rd = timed(lambda: A.calibrate(SUB_EVENT, "epsilon0", TARGET, DELTA), max(3, repeat // 3))
    lines.append(
        f"| same, with the current default curve ({default_description()}) | {med_d:.1f} ms "
        f"(min {min(ts_d):.1f}) | {rd.evaluations} | |"
    )
    if rd.value != thesis_value:
        nudge_d = A.epsilon_guarantee([{**rd.event, "epsilon0": rd.value * (1 + 1e-5)}], DELTA).epsilon
        notes.append(
            f"ε0 answer (current default): ε0 = {rd.value:.6f}, ε = {rd.epsilon:.6f} at order {rd.order:g}; "
            f"ε0·(1 + 1e-5) gives {nudge_d:.6f}."
        )

    # 2. dp_accounting: Poisson-subsampled Gaussian, q = k/n, T steps, same (ε, δ)
    q = K / N
    med_dp, ts_dp, sigma = timed(
        lambda: dp_accounting_sigma(q, T, TARGET, DELTA), max(5, repeat // 3), warmup=1
    )
    lines.append(
        f"| dp_accounting 0.6 `calibrate_dp_mechanism` (RdpAccountant, PoissonSampled(q = 10⁻³, "
        f"Gaussian(σ)) self-composed 10⁴ times, same target) | {med_dp:.1f} ms (min {min(ts_dp):.1f}) | "
        f"Brent | |"
    )
    notes.append(
        f"dp_accounting answer: σ = {sigma:.6f} (its default RDP orders; its own Brent search, tol 1e-6 in σ)."
    )
    lines.append(f"| ratio dp_accounting / this (thesis bounds) | {med_dp / med:.1f}× | | |")

    # 3. count calibration (closed form)
    ev_count = {"mechanism": "subsampled_shuffle", "n": N, "k": K, "epsilon0": 2.0}
    with gir23_only():
        med_c, ts_c, rc = timed(lambda: A.calibrate(ev_count, "count", TARGET, DELTA), repeat)
        warm = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            A.calibrate(ev_count, "count", TARGET, DELTA)
            warm.append((time.perf_counter() - t0) * 1e3)
        nudge_c = A.epsilon_guarantee([{**rc.event, "count": rc.value + 1}], DELTA).epsilon
    lines.append(
        f"| count calibration (closed form), subsampled shuffle n = 10⁶, k = 10³, ε0 = 2, thesis bounds, "
        f"cold caches (includes the one unit curve) | **{med_c:.2f} ms** (min {min(ts_c):.2f}) | "
        f"{rc.evaluations} | ≤ 5 ms |"
    )
    lines.append(f"| same, warm curve cache | {statistics.median(warm):.2f} ms | {rc.evaluations} | |")
    notes.append(
        f"count answer (thesis bounds): {rc.value:,} rounds, ε = {rc.epsilon:.6f} (count + 1 gives "
        f"{nudge_c:.6f})."
    )
    med_cd, ts_cd, rcd = timed(lambda: A.calibrate(ev_count, "count", TARGET, DELTA), max(3, repeat // 3))
    med_ud, _, _ = timed(lambda: A.event_rdp({**ev_count, "count": 1}), max(3, repeat // 3))
    warm_d = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        A.calibrate(ev_count, "count", TARGET, DELTA)
        warm_d.append((time.perf_counter() - t0) * 1e3)
    lines.append(
        f"| same, current default curve, cold: the unit curve on the grid alone takes {med_ud:.1f} ms | "
        f"{med_cd:.1f} ms | {rcd.evaluations} | |"
    )
    lines.append(
        f"| same, current default curve, warm | {statistics.median(warm_d):.2f} ms | {rcd.evaluations} | |"
    )
    notes.append(f"count answer (current default): {rcd.value:,} rounds, ε = {rcd.epsilon:.6f}.")

    # 4. n and k (integer searches), and the budget-vs-round series
    with gir23_only():
        med_n, _, rn = timed(
            lambda: A.calibrate(
                {"mechanism": "subsampled_shuffle", "k": K, "epsilon0": 2.0, "count": T}, "n", TARGET, DELTA
            ),
            max(5, repeat // 3),
        )
        med_k, _, rk = timed(
            lambda: A.calibrate(
                {"mechanism": "subsampled_shuffle", "n": N, "epsilon0": 2.0, "count": T}, "k", TARGET, DELTA
            ),
            max(5, repeat // 3),
        )
        counts = np.arange(1, 10_001)
        med_r, _, _ = timed(lambda: A.epsilon_over_rounds({**ev_count}, DELTA, counts), max(5, repeat // 3))
    lines.append(
        f"| n calibration (fewest users, k = 10³, ε0 = 2, T = 10⁴), thesis bounds, cold | {med_n:.1f} ms "
        f"| {rn.evaluations} | |"
    )
    lines.append(
        f"| k calibration (largest k, n = 10⁶, ε0 = 2, T = 10⁴), thesis bounds, cold | {med_k:.1f} ms "
        f"| {rk.evaluations} | |"
    )
    lines.append(
        f"| epsilon_over_rounds, 10⁴ counts (rounds 1..10⁴), thesis bounds, cold | {med_r:.1f} ms | 1 curve | |"
    )
    notes.append(f"n answer: {rn.value:,} users; k answer: {rk.value:,} per round.")

    # 5. the expensive default: a shuffle event whose default curve includes the clone bound
    if B.tight_bounds():
        ev_sh = {"mechanism": "shuffle", "n": 10**4, "count": 100}
        t0 = time.perf_counter()
        cold()
        g = A.epsilon_guarantee([{**ev_sh, "epsilon0": 1.0}], DELTA)
        t_full = (time.perf_counter() - t0) * 1e3
        cold()
        t0 = time.perf_counter()
        rs = A.calibrate(ev_sh, "epsilon0", TARGET, DELTA)
        t_cal = (time.perf_counter() - t0) * 1e3
        lines.append(
            f"| one full guarantee, shuffle n = 10⁴, T = 100, current default (clone bound), cold | "
            f"{t_full:.0f} ms | 1 | |"
        )
        lines.append(
            f"| ε0 calibration of that event, current default (clone bound), cold, one run | {t_cal:.0f} ms | "
            f"{rs.evaluations} | |"
        )
        notes.append(
            f"clone-bound shuffle answer: ε0 = {rs.value:.6f}, ε = {rs.epsilon:.6f} "
            f"(the full guarantee at ε0 = 1 is ε = {g.epsilon:.4f})."
        )
        # ε0 calibration with the tightest bound at n = 10⁶ (target: ≤ 10 s)
        ev_big = {"mechanism": "shuffle", "n": 10**6, "count": 10**5}
        cold()
        t0 = time.perf_counter()
        rb = A.calibrate(ev_big, "epsilon0", 1.0, 1e-8)
        t_big = (time.perf_counter() - t0) * 1e3
        lines.append(
            f"| ε0 calibration, shuffle n = 10⁶, T = 10⁵, target ε = 1 at δ = 1e-8, current default (clone "
            f"bound), cold, one run | **{t_big / 1e3:.2f} s** | {rb.evaluations} | ≤ 10 s |"
        )
        notes.append(f"n = 10⁶ clone-bound answer: ε0 = {rb.value:.6f}, ε = {rb.epsilon:.6f}.")

    lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    lines += [
        "",
        "How the ε0 search spends its evaluations: the thesis curve on the whole grid at the start locates the "
        "optimal order (milliseconds, no tighter bound involved); bracketing by secant steps in u = log(e^ε0 − 1) "
        "against log ε (the bounds grow like (e^ε0 − 1)², so this is close to linear); `scipy.optimize.brentq` on "
        "log(ε/target) in u to a relative 1e-6 (accountant/calibration/crossing.py). These evaluate "
        "`epsilon_guarantee` on the grid's prefix up to a few orders above the optimum (equal to F whenever F's "
        "grid minimiser is in the prefix); the high orders, where the bounds cost the most, are skipped. Then two "
        "full `epsilon_guarantee` evaluations verify the answer and its nudge ε0·(1 + 1e-5). 'evaluations' counts "
        "curve evaluations of either kind.",
        "",
        "dp_accounting's side is a different mechanism (a central Poisson-subsampled Gaussian, solving σ), chosen "
        "as the closest standard calibration at the same sampling rate, number of steps and (ε, δ); its RDP curve "
        "is a closed-form-per-order sum, cheaper per evaluation than the subsampled-shuffle bounds.",
    ]
    lines += [
        "",
        f"Load average (1/5/15 min) on the shared machine: {load_before} before the run, {load()} after.",
    ]
    path = write_results("results_calibration.md", "Calibration benchmarks", lines)
    print(path.read_text())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 21)
