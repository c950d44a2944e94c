"""Randomizer-aware amplification (bounds.md §12): the ``shuffle_rr`` event of binary randomized
response against the generic ``shuffle`` event and the exact shuffled binary RR.

Run: python bench/bench_rr.py   → writes bench/results_rr.md

*Exact* is the shuffled binary RR with every other user holding 0 (the count of reported ones;
changed user 0 ↔ 1, the larger of both directions per ε), its pmfs from scipy's binomial, composed
T times by the PLD route's machinery (accountant/pld: pessimistic connect-the-dots, FFT error
bounded and added to δ) — a pessimistic PLD of that pair, accurate to second order in the grid
step, and an independent construction (not accountant/shuffled_rr.py). It is a reference, not the
worst case: other splits of the inputs can be worse (bounds.md §12–13), so `shuffle_rr`, which
covers every split, sits slightly above it. Timing: a cold ``best`` answer (every cache cleared)
against dp_accounting's PLDAccountant baseline of issue 23 (bench_pld.baseline), same process.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _util import write_results  # noqa: E402
from bench_pld import baseline, cold, ms  # noqa: E402
from scipy.stats import binom  # noqa: E402

import accountant  # noqa: E402
from accountant.dominating import curve_pair  # noqa: E402
from accountant.pld.convert import epsilon_at  # noqa: E402
from accountant.pld.discretise import choose_step, discretise_pair  # noqa: E402

DELTA = 1e-8
POINTS = [  # (n, ε0, T): issue 24's three, then our own
    (10**6, 0.5, 10**5),
    (10**6, 2.0, 10**4),
    (10**4, 4.0, 100),
    (10**5, 1.0, 1000),
    (10**7, 1.0, 10**4),
    (10**3, 2.0, 10),
]


def exact_pair(n: int, eps0: float) -> tuple[dict[int, float], dict[int, float]]:
    """log-pmfs of the number of reported ones: others ~ Bin(n−1, r), the changed user's bit 1 / 0."""
    r = 1.0 / (math.exp(eps0) + 1.0)
    sd = math.sqrt((n - 1) * r * (1 - r))
    lo, hi = max(0, int((n - 1) * r - 40 * sd)), min(n - 1, int((n - 1) * r + 40 * sd) + 1)
    y = np.arange(lo, hi + 2)
    lf = binom.logpmf(y, n - 1, r)
    lf1 = binom.logpmf(y - 1, n - 1, r)
    lp = np.logaddexp(math.log1p(-r) + lf1, math.log(r) + lf)  # changed user holds 1
    lq = np.logaddexp(math.log(r) + lf1, math.log1p(-r) + lf)  # holds 0
    keep = np.isfinite(lp) & np.isfinite(lq)
    return dict(zip(y[keep].tolist(), lp[keep].tolist())), dict(zip(y[keep].tolist(), lq[keep].tolist()))


def _profile(lp: np.ndarray, lq: np.ndarray):
    """δ(ε) = Σ (P − e^ε Q)_+ of the pair (log-pmfs over the same points), vectorised over ε."""
    order = np.argsort(lq - lp)  # largest log P/Q first
    loss = (lp - lq)[order]
    cp, cq = np.cumsum(np.exp(lp[order])), np.cumsum(np.exp(lq[order]))

    def delta(eps: np.ndarray) -> np.ndarray:
        j = np.searchsorted(-loss, -np.asarray(eps, dtype=float), side="left")  # losses > ε
        has = j > 0
        jj = np.maximum(j - 1, 0)
        out = np.where(has, cp[jj] - np.exp(eps) * cq[jj], 0.0)
        return np.clip(out * (1 + 1e-9) + 1e-300, 0.0, 1.0)

    return delta, float(loss[0])


def exact_epsilon(n: int, eps0: float, T: int) -> float:
    """ε at δ of the T-fold exact pair (max of both directions per round), composed by the PLD
    route's own machinery: pessimistic connect-the-dots discretisation, FFT error bounded."""
    lp, lq = exact_pair(n, eps0)
    a, b = np.array(list(lp.values())), np.array(list(lq.values()))
    fwd, top1 = _profile(a, b)
    rev, top2 = _profile(b, a)
    top = max(top1, top2)
    scale = 2.0 * math.tanh(eps0 / 2.0) / math.sqrt(n * 2.0 / (math.exp(eps0) + 1.0) + 1.0)

    def curve(eps: np.ndarray) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        pos = np.maximum(fwd(np.abs(e)), rev(np.abs(e)))
        return np.where(e >= 0, pos, np.minimum(1.0, -np.expm1(e) + np.exp(e) * pos))

    pair = curve_pair(curve, -top, top, 0.0, scale, ("exact_binary_rr", n, eps0))
    step = choose_step([pair], [T])
    return float(epsilon_at([(discretise_pair(pair, step), T)], DELTA)[0])


def rr_mse(eps0: float) -> float:
    """Binary RR's per-report variance of the de-biased bit, p(1−p)/(1−2p)² (mechanisms.BinaryRR)."""
    p = 1.0 / (1.0 + math.exp(eps0))
    return p * (1 - p) / (1 - 2 * p) ** 2


def main() -> list[str]:
    load0 = os.getloadavg()
    lines = [
        "| n | ε0 | T | generic `shuffle`, best | `shuffle_rr`, rdp | `shuffle_rr`, best | exact (all others 0) "
        "| `shuffle_rr` best / exact | rdp / exact | generic / exact |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, e0, T in POINTS:
        gen = accountant.epsilon([{"mechanism": "shuffle", "n": n, "epsilon0": e0, "count": T}], DELTA)[0]
        ev = [{"mechanism": "shuffle_rr", "n": n, "epsilon0": e0, "count": T}]
        rdp = accountant.epsilon(ev, DELTA, accounting="rdp")[0]
        best = accountant.epsilon(ev, DELTA)[0]
        ex = exact_epsilon(n, e0, T)
        lines.append(
            f"| {n:g} | {e0:g} | {T:g} | {gen:.4f} | {rdp:.4f} | **{best:.4f}** | {ex:.4f} | "
            f"{best / ex:.4f} | {rdp / ex:.3f} | {gen / ex:.3f} |"
        )
    lines += [
        "",
        "Calibration: the largest ε0 whose T rounds stay within (ε = 1, δ = 1e-8), and binary RR's MSE there",
        "(p(1−p)/((1−2p)² n), p = 1/(1+e^{ε0}); `accountant.calibrate`, each route as named), and what each",
        "calibration costs cold (every cache cleared first).",
        "",
        "| n | T | accounting | generic `shuffle` ε0 | `shuffle_rr` ε0 | MSE generic / MSE rr "
        "| generic ms | `shuffle_rr` ms | cost rr / generic |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n, T in ((10**6, 10**4), (10**6, 10**5), (10**5, 1000)):
        for acc in ("rdp", "best"):
            cold()
            t_gen, e_gen = ms(
                lambda n=n, T=T, acc=acc: (
                    accountant.calibrate(
                        {"mechanism": "shuffle", "n": n, "count": T}, "epsilon0", 1.0, DELTA, accounting=acc
                    ).value
                )
            )
            cold()
            t_rr, e_rr = ms(
                lambda n=n, T=T, acc=acc: (
                    accountant.calibrate(
                        {"mechanism": "shuffle_rr", "n": n, "count": T},
                        "epsilon0",
                        1.0,
                        DELTA,
                        accounting=acc,
                    ).value
                )
            )
            lines.append(
                f"| {n:g} | {T:g} | {acc} | {e_gen:.4f} | **{e_rr:.4f}** | {rr_mse(e_gen) / rr_mse(e_rr):.2f}× "
                f"| {t_gen:.0f} | {t_rr:.0f} | {t_rr / t_gen:.2f} |"
            )
    base, cold_rr, cold_generic = [], [], []
    for _ in range(3):
        base.append(ms(baseline)[0])
        cold()
        cold_rr.append(
            ms(
                lambda: accountant.epsilon(
                    [{"mechanism": "shuffle_rr", "n": 10**6, "epsilon0": 0.5, "count": 10**5}], DELTA
                )
            )[0]
        )
        cold()
        cold_generic.append(
            ms(
                lambda: accountant.epsilon(
                    [{"mechanism": "shuffle", "n": 10**6, "epsilon0": 0.5, "count": 10**5}], DELTA
                )
            )[0]
        )
    b = statistics.median(base)
    load1 = os.getloadavg()
    lines += [
        "",
        f"Load average before / after: {load0[0]:.2f} / {load1[0]:.2f} (2 cores, shared); δ = {DELTA:g}.",
        "",
        "| cold `best` answer (n = 10⁶, ε0 = 0.5, T = 10⁵), median of 3 | ms | ratio to the baseline |",
        "|---|---|---|",
        f"| baseline: dp_accounting PLDAccountant, Poisson Gaussian q = 0.01, σ = 1.1, 10⁴ rounds | {b:.0f} | 1 |",
        f"| `shuffle_rr` | {statistics.median(cold_rr):.0f} | **{statistics.median(cold_rr) / b:.3f}** |",
        f"| `shuffle` (generic) | {statistics.median(cold_generic):.0f} | {statistics.median(cold_generic) / b:.3f} |",
        "",
        "For binary randomized response `shuffle_rr` accounts the shuffled count of ones itself at the worst",
        "split of the other users' inputs (bounds.md §13: every split up to n = 256, representatives with a",
        "revealed blanket count beyond; PLD pair and RDP up to order 256), next to randomized response's clone",
        "pair (bounds.md §12), never the generic clone pair. A cold answer computes the representatives' pmfs",
        "(one batch of FFTs) once for both routes. The calibration timings are single cold runs on a shared",
        "machine: read the ratios, not the milliseconds.",
    ]
    return lines


if __name__ == "__main__":
    t0 = time.time()
    out = main()
    path = write_results(
        "results_rr.md", "Randomizer-aware amplification: shuffled binary randomized response", out
    )
    print(path.read_text())
    print(f"({time.time() - t0:.0f} s)")
