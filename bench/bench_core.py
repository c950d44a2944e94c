"""Benchmarks of the accountant core: curve evaluation, conversion, caching.

Run: python bench/bench_core.py   → writes bench/results_core.md
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _util import timeit, write_results  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as dpa  # noqa: E402

import accountant as A  # noqa: E402
from accountant import shuffle as S  # noqa: E402


def loop_u1(n, eps0, orders):
    """A straightforward per-order, per-term Python evaluation of Theorem 5.3.1 (the baseline)."""
    E = math.exp(eps0)
    nb = math.floor((n - 1) / (2 * E)) + 1
    out = []
    for a in orders:
        a = int(a)
        s = 1 + math.comb(a, 2) * (E - 1) ** 2 / (nb * E)
        x = (E * E - 1) ** 2 / (2 * E * E * nb)
        for i in range(3, a + 1):
            s += math.exp(
                math.lgamma(a + 1)
                - math.lgamma(i + 1)
                - math.lgamma(a - i + 1)
                + math.log(i)
                + math.lgamma(i / 2)
                + i / 2 * math.log(x)
            )
        s += math.exp(eps0 * a - (n - 1) / (8 * E))
        out.append(math.log(s) / (a - 1))
    return out


def main():
    lines = ["| measurement | median | target |", "|---|---|---|"]
    n, eps0 = 10**6, 0.5
    grid = A.DEFAULT_ORDERS
    small = np.arange(2, 257, dtype=float)

    t_thesis = timeit(lambda: S.gir23_upper(n, eps0, grid))
    lines.append(
        f"| thesis default curve (min U1,U2,cap, interpolated), default grid ({grid.size} orders to 1e4) | {t_thesis['median_ms']:.2f} ms | ≤ 20 ms |"
    )
    t_small = timeit(lambda: S.gir23_upper(n, eps0, small))
    lines.append(f"| thesis default curve, orders 2..256 | {t_small['median_ms']:.2f} ms | ≤ 2 ms |")
    from accountant.bounds import shuffle_upper_detail

    t_full = timeit(lambda: shuffle_upper_detail(n, eps0, grid), repeat=10, warmup=1)
    lines.append(
        f"| full default curve (incl. tighter bounds, warm per-(n, ε0) cache), default grid | {t_full['median_ms']:.2f} ms | ≤ 20 ms |"
    )

    ints = np.unique(np.round(grid[grid >= 2])).astype(int)
    t_vec_u1 = timeit(lambda: S.u1(n, eps0, ints.astype(float)))
    t_loop_u1 = timeit(lambda: loop_u1(n, eps0, ints), repeat=3, warmup=1)
    lines.append(f"| U1 on the integer grid orders: vectorised | {t_vec_u1['median_ms']:.2f} ms | |")
    lines.append(
        f"| U1 on the integer grid orders: per-order Python loop | {t_loop_u1['median_ms']:.1f} ms | |"
    )
    ratio = t_loop_u1["median_ms"] / t_vec_u1["median_ms"]
    lines.append(f"| speed-up of the vectorised U1 over the loop | **{ratio:.0f}×** | ≥ 20× |")
    t_vec_s = timeit(lambda: S.u1(n, eps0, small))
    t_loop_s = timeit(lambda: loop_u1(n, eps0, small), repeat=5, warmup=1)
    lines.append(
        f"| same, orders 2..256 | **{t_loop_s['median_ms'] / t_vec_s['median_ms']:.0f}×** ({t_vec_s['median_ms']:.2f} ms vs {t_loop_s['median_ms']:.1f} ms) | ≥ 20× |"
    )
    # sanity: both compute the same numbers
    assert np.allclose(S.u1(n, eps0, small), loop_u1(n, eps0, small), rtol=1e-10)

    orders = np.linspace(1.1, 5000, 1000)
    rdp = A.shuffle_rdp(10**5, 1.0, orders, bound="thesis") * 100
    t_ours = timeit(lambda: A.epsilon_from_rdp(orders, rdp, 1e-8), repeat=50)
    t_dpa = timeit(lambda: dpa.compute_epsilon(orders, rdp, 1e-8), repeat=20)
    assert (
        abs(A.epsilon_from_rdp(orders, rdp, 1e-8)[0] / dpa.compute_epsilon(orders, rdp, 1e-8)[0] - 1) < 1e-12
    )
    lines.append(f"| epsilon_from_rdp, 1,000 orders | {t_ours['median_ms']:.3f} ms | |")
    lines.append(f"| dp_accounting compute_epsilon, same curve | {t_dpa['median_ms']:.3f} ms | |")
    lines.append(
        f"| conversion speed-up over dp_accounting | **{t_dpa['median_ms'] / t_ours['median_ms']:.0f}×** | ≥ 10× |"
    )

    from accountant.events import cached_unit_curve

    ev = {"mechanism": "shuffle", "n": 10**6 + 7, "epsilon0": 0.5, "count": 100}
    cached_unit_curve.cache_clear()
    import time

    t0 = time.perf_counter()
    A.event_rdp(ev)
    first = (time.perf_counter() - t0) * 1e3
    t_cached = timeit(lambda: A.event_rdp(ev), repeat=200)
    lines.append(f"| event curve, first computation (n = 10⁶+7, ε0 = 0.5) | {first:.1f} ms | |")
    lines.append(
        f"| event curve, identical event again (cache hit) | {t_cached['median_ms']:.3f} ms | computed once |"
    )
    t_eps = timeit(lambda: A.epsilon([ev], 1e-8), repeat=50)
    lines.append(f"| epsilon([event], δ) with refinement, warm cache | {t_eps['median_ms']:.2f} ms | |")
    lines.append("")
    lines.append(
        "Thesis default = min(U1, U2, cap) at integer orders interpolated to real orders (bounds.md §1). "
        "The full default adds the tighter bounds of bounds.md §8 and the convex-hull tightening; "
        "its first computation per (n, ε0) is measured in results_clones.md."
    )
    path = write_results("results_core.md", "Accountant core benchmarks", lines)
    print(path.read_text())


if __name__ == "__main__":
    main()
