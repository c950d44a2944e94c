"""The results page: each figure, the thesis's quoted claims against the reproduced values, the
tightness of the default accounting against the best known valid accounting, and costs."""

from __future__ import annotations

import math
import os
import statistics
import time
from pathlib import Path
from typing import Any

from . import compute as C
from .spec import FIGURES, NOT_COVERED, TITLES

#: relative tolerance of the quoted points (checked by tests/figures/test_figures.py against this page)
TOLERANCE = 0.01

#: the points the thesis quotes: (figure, panel, x) and the curves whose values the page lists
QUOTED = [
    ("5.4", "a", 10**5, [C.DEFAULT, C.DEFAULT_RDP, C.U1, C.KOV, C.KOV_CF, C.PLD]),
    (
        "5.6",
        "a",
        10**5,
        [C.DEFAULT, C.DEFAULT_RDP, C.SCLONE_RDP, C.SCLONE_PLD, C.SU, C.GDD_WBK, C.KOV_SUB, C.KOV_SUB_CF],
    ),
]


def _get(data, fig, panel, curve, x):
    for xx, y in data.get(fig, {}).get((panel, curve), []):
        if xx == x:
            return y
    return math.nan


def _f(v, digits=4):
    if v is None or not math.isfinite(v):
        return "—"
    return f"{v:.{digits}g}"


def _ratio(a, b):
    return a / b if (math.isfinite(a) and math.isfinite(b) and b > 0) else math.nan


def cost_measurements(quick: bool) -> dict:
    """Time the baselines and the PLD path (fresh caches) on representative (n, ε0)."""
    from accountant.baselines import clone_dp
    from accountant.baselines import pld as P

    out: dict[str, list] = {"clone": [], "pld": []}
    cases = (
        [(10**6, 0.5)] if quick else [(10**4, 0.5), (10**6, 0.5), (10**6, 2.0), (10**5, 2.0), (10**8, 0.5)]
    )
    for n, e0 in cases:
        clone_dp._prepared.cache_clear()
        t0 = time.perf_counter()
        eps = clone_dp.clone_pair(n, e0).epsilon(1e-6)
        out["clone"].append((n, e0, eps, time.perf_counter() - t0))
    pld_cases = (
        [(10**6, 0.5)] if quick else [(10**4, 0.5), (10**6, 0.5), (10**5, 2.0), (10**6, 2.0), (10**8, 0.5)]
    )
    rounds = (100,) if quick else (100, 10**4, 10**5)
    for n, e0 in pld_cases:
        P._clone_pld.cache_clear()
        clone_dp._prepared.cache_clear()
        t0 = time.perf_counter()
        pl = P.clone_pld(n, e0)
        build = time.perf_counter() - t0
        row: dict[str, Any] = {
            "n": n,
            "eps0": e0,
            "build": build,
            "points": pl.grid_points,
            "bins": pl.bins,
            "compose": [],
        }
        for T in rounds:
            t0 = time.perf_counter()
            composed = pl.compose(T)
            eps = composed.get_epsilon_for_delta(1e-8)
            dt = time.perf_counter() - t0
            size = composed._pmf_remove.size  # noqa: SLF001 - the composed array length, for its memory
            # the same T-fold composition along another FFT path (binary powers, pairwise convolutions)
            alt = _compose_by_squaring(pl.pld, T).get_epsilon_for_delta(1e-8)
            row["compose"].append((T, eps, dt, size, abs(alt - eps) / eps))
        out["pld"].append(row)
    return out


def _compose_by_squaring(pld, T: int):
    result, base, t = None, pld, T
    while t:
        if t & 1:
            result = base if result is None else result.compose(base)
        t >>= 1
        if t:
            base = base.compose(base)
    return result


# ---------------------------------------------------------------------------------------------
def _claims(data) -> list[str]:
    """The rows of the table of the thesis's claims against the computed figures."""
    return [
        *_claims_at_5_4a(data),
        *_claims_at_5_6a(data),
        *_claims_of_one_release(data),
        _claim_few_rounds(data),
        _claim_5_6b(data),
    ]


def _claims_at_5_4a(data) -> list[str]:
    T = 10**5
    u1, de, kov, kcf, pld, rdp = (
        _get(data, "5.4", "a", c, T) for c in (C.U1, C.DEFAULT, C.KOV, C.KOV_CF, C.PLD, C.DEFAULT_RDP)
    )
    return [
        '| 5.4a: T = 10⁵, ε0 = 0.5, n = 10⁶, δ = 10⁻⁸ | RDP (Thm 5.3.1) "saves a factor of 8×" against '
        f"FMT22 + KOV15 | FMT21 + KOV15 = {_f(kov)}; Thm 5.3.1 = {_f(u1)}: **{_f(_ratio(kov, u1), 3)}×** "
        f"| default = {_f(de)}: **{_f(_ratio(kov, de), 3)}×**; its RDP route = {_f(rdp)}: "
        f"**{_f(_ratio(kov, rdp), 3)}×** | The baseline here is the strongest one: the clone "
        "pair's exact (ε̃, δ̃) (not the authors' binary-search upper bound) and the best per-round δ̃ for KOV15. "
        f"With FMT21's closed form instead, FMT21 + KOV15 = {_f(kcf)} ({_f(_ratio(kcf, u1), 3)}× Thm 5.3.1). "
        "The thesis's 8× lies between the two; the text does not say how its (ε̃, δ̃) and δ̃ were chosen. "
        f"The default (the smallest certified route: the PLD route here) is {_pct(_ratio(de, pld))} the clone PLD "
        f"baseline ({_f(pld)}); the RDP route, what a ledger charges, is {_pct(_ratio(rdp, pld))} it. |"
    ]


def _claims_at_5_6a(data) -> list[str]:
    T = 10**5
    su, de6, gdd, ks, kscf, rdp6 = (
        _get(data, "5.6", "a", c, T)
        for c in (C.SU, C.DEFAULT, C.GDD_WBK, C.KOV_SUB, C.KOV_SUB_CF, C.DEFAULT_RDP)
    )
    return [
        '| 5.6a: T = 10⁵, γ = 0.001, ε0 = 2, n = 10⁶, δ = 10⁻⁸ | Thm 5.4.1 saves "14×" against FMT22 + KOV15 | '
        f"FMT21 + BBG18 + KOV15 = {_f(ks)}; Thm 5.4.1 = {_f(su)}: **{_f(_ratio(ks, su), 3)}×**; with FMT21's closed "
        f"form: {_f(kscf)}, **{_f(_ratio(kscf, su), 3)}×** | default = {_f(de6)}: **{_f(_ratio(ks, de6), 3)}×** "
        f"(closed form: {_f(_ratio(kscf, de6), 3)}×); its RDP route (the subsampled clone pair, bounds.md §9) = "
        f"{_f(rdp6)}: **{_f(_ratio(ks, rdp6), 3)}×** | "
        "With k = γn = 10³ users per round, FMT21's closed form is outside its condition "
        "ε0 ≤ log(k/(16 log(4/δ̃))) and gives no amplification (ε̃ = ε0): that reproduces the thesis's 14× "
        "(roughly). The exact clone (ε̃, δ̃) amplifies even at k = 10³, and the baseline is then only ~2× "
        "above Thm 5.4.1. |",
        '| 5.6a (same point) | Thm 5.4.1 saves "2.5×" against GDD21e + WBK19 | '
        f"GDD21e + WBK19 = {_f(gdd)}: **{_f(_ratio(gdd, su), 3)}×** | default: **{_f(_ratio(gdd, de6), 3)}×** "
        f"(RDP route: {_f(_ratio(gdd, rdp6), 3)}×) | "
        "Reproduced with WBK19 Theorem 9 over the GDD21e (= Thm 5.3.1) curve of the k-user shuffle at every "
        "integer order ≤ 1000 (the tightest reading of the baseline); it is then as good as Thm 5.4.1 at this "
        "point. The thesis's 2.5× implies a looser use of WBK19 (e.g. only ε(2) and ε(∞)), which the text does not "
        "specify. |",
    ]


def _pct(r: float) -> str:
    """A ratio as "x% above" / "x% below" (or "equal to")."""
    if not math.isfinite(r):
        return "—"
    if r == 1:
        return "equal to"
    return f"{_f(100 * abs(r - 1), 2)}% {'above' if r > 1 else 'below'}"


def _finite_pairs(data, fig: str, panels: str, a: str, b: str) -> list[tuple[float, float]]:
    """(y of curve ``a``, y of curve ``b``) at the points of ``panels`` where both are finite."""
    return [
        (ya, yb)
        for panel in panels
        for (_x, ya), (_, yb) in zip(
            data.get(fig, {}).get((panel, a), []), data.get(fig, {}).get((panel, b), [])
        )
        if math.isfinite(ya) and math.isfinite(yb)
    ]


def _claims_of_one_release(data) -> list[str]:
    """The qualitative claims of the text about figure 5.3."""
    u1 = _finite_pairs(data, "5.3", "abcd", C.U1, C.CLONE)
    n_u1, n_u1_worse = len(u1), sum(yu > yc for yu, yc in u1)
    low = _finite_pairs(data, "5.3", "bd", C.LOWER, C.CLONE)
    n_low, n_low_better = len(low), sum(yl < yc for yl, yc in low)
    return [
        '| 5.3 (all panels) | one release: the RDP route (Thm 5.3.1) "performs worse than" FMT22 | '
        f"Thm 5.3.1 above the exact clone ε at {n_u1_worse} of {n_u1} points | — | Reproduced. |",
        '| 5.3b, 5.3d | the lower bound (Thm 5.3.3) converted by Lemma 2.1.3 is below FMT22 "for all ε0" | '
        f"below the exact clone ε at {n_low_better} of {n_low} points | — | "
        + (
            "Reproduced."
            if n_low_better == n_low
            else "Not everywhere: against the *exact* clone (ε, δ) (tighter than the thesis's FMT22 numbers) the "
            "converted lower bound is not always below; a converted RDP lower bound is not an (ε, δ) lower bound."
        )
        + " |",
    ]


def _claim_few_rounds(data) -> str:
    small = [(x, y, _get(data, "5.4", "d", C.KOV, x)) for x, y in data.get("5.4", {}).get(("d", C.U1), [])]
    better = [x for x, yu, yk in small if _all_finite(yu, yk) and yk < yu]
    kov_below_default = [
        x for x, _, yk in small if math.isfinite(yk) and yk < _get(data, "5.4", "d", C.DEFAULT, x)
    ]
    return (
        '| 5.4d: ε0 = 2, n = 10⁶ | FMT22 + KOV15 is better than Thm 5.3.1 "for T < 10" | '
        f"FMT21 + KOV15 below Thm 5.3.1 at T ∈ {_int_set(better)} | "
        f"FMT21 + KOV15 below the default at T ∈ {_int_set(kov_below_default)} | "
        "Reproduced in direction (the crossover T depends on the baseline's strength). |"
    )


def _all_finite(*ys: float) -> bool:
    return all(math.isfinite(y) for y in ys)


def _int_set(xs: list) -> str:
    return "{" + (", ".join(str(int(x)) for x in xs) or "none") + "}"


def _claim_5_6b(data) -> str:
    b = [
        (x, _get(data, "5.6", "b", C.KOV_SUB, x), _get(data, "5.6", "b", C.GDD_WBK, x))
        for x, _ in data.get("5.6", {}).get(("b", C.SU), [])
    ]
    finite = [(k_, g) for _, k_, g in b if _all_finite(k_, g)]
    nb, nbb = len(finite), sum(1 for k_, g in finite if k_ < g)
    return (
        "| 5.6b: k = γn = 10⁴ | FMT22 + KOV15 is better than GDD21e + WBK19 there | "
        f"FMT21 + BBG18 + KOV15 below GDD21e + WBK19 at {nbb} of {nb} T values | — | "
        + ("Reproduced." if nb and nbb == nb else "Partly reproduced (see the figure).")
        + " |"
    )


def _one_release(data) -> list[str]:
    """Figure 5.3: the default and its RDP route against the clone pair's exact ε for one release."""
    from accountant.baselines.clone_dp import loss_scale

    ratios: dict[str, list] = {C.DEFAULT: [], C.DEFAULT_RDP: []}
    skipped = 0
    for panel in "abcd":
        p = next(pp for pp in FIGURES["5.3"] if pp.panel == panel)
        for x, yc in data.get("5.3", {}).get((panel, C.CLONE), []):
            prm = dict(p.params, **{p.x: x})
            if not math.isfinite(yc):
                continue
            if yc < 3 * loss_scale(int(prm["n"]), float(prm["epsilon0"])):
                # δ = 1e-6 is not in the tail of the loss: ε ≈ 0 exactly, any ratio is meaningless
                skipped += 1
                continue
            for curve, rs in ratios.items():
                r = _ratio(_get(data, "5.3", panel, curve, x), yc)
                if math.isfinite(r):
                    rs.append((r, panel, x))
    lines = []
    for curve, what in ((C.DEFAULT, "the default"), (C.DEFAULT_RDP, "its RDP route")):
        rs = ratios[curve]
        if not rs:
            continue
        lo, hi = min(rs), max(rs)
        if lo[0] == hi[0] == 1:
            lines.append(
                f"* **One release, {what}** (figure 5.3 points, δ = 10⁻⁶, {len(rs)} points): equal to the clone "
                "pair's exact ε at every point (for one release the PLD route answers with the pair's certified "
                "hockey-stick divergence itself, bounds.md §10)."
            )
            continue
        med = statistics.median(r for r, _, _ in rs)
        lines.append(
            f"* **One release, {what}** (figure 5.3 points, δ = 10⁻⁶, {len(rs)} points): "
            f"{_pct(med)} the clone pair's exact ε in the median, {_pct(lo[0])} (5.3{lo[1]}, x = {_fmt(lo[2])}) "
            f"to {_pct(hi[0])} (5.3{hi[1]}, x = {_fmt(hi[2])})."
            + (
                " Part of the RDP route's excess is the RDP → (ε, δ) conversion itself (Lemma 2.1.3), which no "
                "RDP curve avoids."
                if curve == C.DEFAULT_RDP
                else ""
            )
        )
    if skipped:
        lines.append(
            f"  Left out: {skipped} points where the exact ε is below 3σ_L (σ_L = 2·tanh(ε0/2)/√(E[C]+1), the "
            "spread of the clone pair's privacy loss), i.e. δ = 10⁻⁶ is not in the tail and the exact ε is ≈ 0."
        )
    return lines


def _order_grid(data) -> list[str]:
    """Figure 5.3a at n = 10⁷: the RDP route where its optimal order is largest."""
    d_big = _get(data, "5.3", "a", C.DEFAULT, 10**7)
    r_big = _get(data, "5.3", "a", C.DEFAULT_RDP, 10**7)
    c_big = _get(data, "5.3", "a", C.CLONE, 10**7)
    if not _all_finite(d_big, r_big, c_big):
        return []
    return [
        f"* **Large n, small ε0.** In 5.3a at n = 10⁷ the RDP route gives {_f(r_big)} against the exact "
        f"{_f(c_big)} (its optimal order is past the default grid's 10⁴: the route extends the grid when the "
        f"optimum sits at its end); the default gives {_f(d_big)}."
    ]


def _many_rounds(data) -> list[str]:
    """Figures 5.4 and 5.6: the default and its RDP route against the PLDs of the pairs composed T times."""
    lines = [
        "* **Many rounds** (δ = 10⁻⁸): the default and its RDP route against the PLD of the clone pair "
        "composed T times (5.4: the baseline of `accountant.baselines.pld`, dp_accounting, pessimistic "
        "connect-the-dots discretisation, FFT error not bounded) and of the subsampled clone pair (5.6: "
        '`accounting="pld"`, certified), and the subsampled clone pair\'s RDP bound alone (5.6):',
        "",
        "| panel | n | k | ε0 | T | default ε | RDP route ε | pair's PLD ε | default vs PLD | RDP route vs PLD "
        "| RDP route vs the pair's RDP |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *_many_rounds_rows(data),
    ]
    for fig, panels in (("5.4", "bcef"), ("5.6", "c")):
        ref = C.PLD if fig == "5.4" else C.SCLONE_PLD
        for curve, what in ((C.DEFAULT, "the default"), (C.DEFAULT_RDP, "the RDP route")):
            rs = [
                r
                for panel in panels
                for x, yd in data.get(fig, {}).get((panel, curve), [])
                if math.isfinite(r := _ratio(yd, _get(data, fig, panel, ref, x)))
            ]
            if rs and min(rs) == max(rs) == 1:
                lines += [
                    "",
                    f"  Over panels {fig}{', '.join(panels)} ({len(rs)} points) {what} equals the pair's PLD.",
                ]
            elif rs:
                lines += [
                    "",
                    f"  Over panels {fig}{', '.join(panels)} ({len(rs)} points) {what} is "
                    f"{_pct(min(rs))} to {_pct(max(rs))} the pair's PLD (median {_pct(statistics.median(rs))}).",
                ]
    return lines


def _many_rounds_rows(data) -> list[str]:
    """Table rows of panels 5.4a, d and 5.6a, b at T = 100, 1000, …"""
    rows = []
    for fig, panels, ref in (("5.4", "ad", C.PLD), ("5.6", "ab", C.SCLONE_PLD)):
        for panel in panels:
            p = next(pp for pp in FIGURES[fig] if pp.panel == panel)
            for x, yd in data.get(fig, {}).get((panel, C.DEFAULT), []):
                yp = _get(data, fig, panel, ref, x)
                yr = _get(data, fig, panel, C.DEFAULT_RDP, x)
                ys = _get(data, fig, panel, C.SCLONE_RDP, x)
                if x >= 100 and math.log10(x).is_integer() and math.isfinite(_ratio(yd, yp)):
                    k = f"{p.params['k']:,}" if "k" in p.params else "—"
                    rows.append(
                        f"| {fig}{panel} | {p.params['n']:,} | {k} | {p.params['epsilon0']} | {int(x):,} | "
                        f"{_f(yd)} | {_f(yr)} | {_f(yp)} | {_pct(_ratio(yd, yp))} | {_pct(_ratio(yr, yp))} | "
                        + (_pct(_ratio(yr, ys)) if math.isfinite(ys) else "—")
                        + " |"
                    )
    return rows


#: the valid baselines of each figure compared with the default: every curve that is a proof of its
#: figure's quantity (an upper bound of the RDP in 5.2, of ε in 5.3–5.6). The thesis's lower
#: bounds and the default's own RDP route are not baselines.
BASELINES = {
    "5.2": (C.U1, C.U2, C.EFM_RDP),
    "5.3": (C.U1, C.U2, C.EFM_RDP, C.EFM_DP, C.BBG, C.CLONE),
    "5.4": (C.U1, C.EFM_RDP, C.KOV, C.KOV_CF, C.DRV, C.PLD),
    "5.6": (C.SU, C.GDD_WBK, C.SCLONE_RDP, C.SCLONE_PLD, C.KOV_SUB, C.KOV_SUB_CF),
}


def _baselines_below(data) -> list[str]:
    """Per figure: is any valid baseline below the default (issue 23's criterion), and below its RDP route."""
    lines = [
        "",
        "* **Is a valid baseline below the default?** Every plotted point of every valid baseline (the thesis's "
        "and EFM19's RDP bounds, BBG19, EFM19 Cor. 9, the exact clone (ε, δ), the KOV15/DRV10 compositions, "
        "the clone pairs' PLD and RDP) against the default at the same x:",
        "",
    ]
    for fig, curves in BASELINES.items():
        if fig not in data:
            continue
        beats = _beats(data, fig, curves, C.DEFAULT)
        n_pts = _n_compared(data, fig, curves, C.DEFAULT)
        if not beats:
            lines.append(f"  * Figure {fig}: **none** ({n_pts} baseline points compared).")
            continue
        worst = max(beats)
        lines.append(
            f"  * Figure {fig}: **yes, at {len(beats)} of {n_pts} points**: "
            + "; ".join(_where(beats))
            + f". The largest gap: the default is {_pct(worst[0])} the baseline (figure {worst[1]}{worst[2]}, "
            f"{worst[3]}, x = {_fmt(worst[4])})."
        )
    rdp = [
        b
        for fig, curves in BASELINES.items()
        if fig != "5.2"
        for b in _beats(data, fig, curves, C.DEFAULT_RDP)
    ]
    if rdp:
        worst = max(rdp)
        lines += [
            "",
            f"* **Below the RDP route** (what the ledger charges; {len(rdp)} points): "
            + "; ".join(_where(rdp))
            + ". "
            f"The largest gap is {_f(worst[0], 3)}× (figure {worst[1]}{worst[2]}, {worst[3]}, x = {_fmt(worst[4])}). "
            "For one or a few rounds an (ε, δ) accounting of the clone pair is tighter than any RDP curve converted "
            "by Lemma 2.1.3, and for many rounds the PLD is; the `best` answer takes the PLD route there.",
        ]
    return lines


def _n_compared(data, fig: str, curves, ref: str) -> int:
    return sum(
        1
        for (panel, curve), pts in data.get(fig, {}).items()
        if curve in curves
        for x, y in pts
        if _all_finite(y, _get(data, fig, panel, ref, x))
    )


def _beats(data, fig: str, curves, ref: str) -> list[tuple]:
    """(ref / baseline, figure, panel, baseline, x) at every point where a baseline is below ``ref``."""
    beats = []
    for (panel, curve), pts in data.get(fig, {}).items():
        if curve not in curves:
            continue
        for x, y in pts:
            yd = _get(data, fig, panel, ref, x)
            if _all_finite(y, yd) and y < yd:
                beats.append((yd / y, fig, panel, curve, x))
    return beats


def _where(beats: list[tuple]) -> list[str]:
    """The beaten points grouped by figure, panel and baseline, each with its range of x."""
    groups: dict = {}
    for _, f, p, c, x in beats:
        groups.setdefault((f, p, c), []).append(x)
    where = []
    for (f, p, c), xs in sorted(groups.items()):
        name = next(pp.x for pp in FIGURES[f] if pp.panel == p)
        rng = _fmt(xs[0]) if len(xs) == 1 else f"{_fmt(min(xs))}–{_fmt(max(xs))}"
        where.append(f"{f}{p} ({c}, {name} = {rng}, {len(xs)} points)")
    return where


def _tightness(data) -> list[str]:
    return [*_one_release(data), *_order_grid(data), *_many_rounds(data), *_baselines_below(data)]


def _fmt(x):
    return f"{int(x):,}" if float(x).is_integer() and x >= 1 else f"{x:g}"


def _costs(costs, timings) -> list[str]:
    lines = ["### Baselines", "", "| computation | points | mean | max |", "|---|---|---|---|"]
    for name, ts in sorted(timings.items()):
        if ts:
            lines.append(
                f"| {name} | {len(ts)} | {1000 * statistics.mean(ts):.0f} ms | {1000 * max(ts):.0f} ms |"
            )
    lines += [
        "",
        "The clone pair's exact ε(δ) at δ = 10⁻⁶ with fresh caches (the public reference implementation takes "
        "4–98 s per point at n = 10⁶):",
        "",
        "| n | ε0 | ε | time |",
        "|---|---|---|---|",
    ]
    for n, e0, eps, dt in costs["clone"]:
        lines.append(f"| {n:,} | {e0} | {_f(eps, 5)} | {1000 * dt:.0f} ms |")
    lines += [
        "",
        "### PLD path for shuffle events",
        "",
        "Single-round PLD of the clone pair (built once per (n, ε0) and cacheable: its pmf has `grid points` "
        "float64 entries) and its T-fold composition by FFT (`composed size` float64 entries; the FFT works on "
        "complex arrays of about that length). *FFT drift* is the relative difference of the composed ε "
        "from the same composition along another FFT path (pairwise convolutions by binary powers): the "
        "floating-point error the FFT adds, which is not certified.",
        "",
        "| n | ε0 | build | grid points | C-bins | T | ε (δ = 10⁻⁸) | compose + ε | composed size | memory | FFT drift |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in costs["pld"]:
        for T, eps, dt, size, drift in row["compose"]:
            lines.append(
                f"| {row['n']:,} | {row['eps0']} | {row['build']:.2f} s | {row['points']} | {row['bins']} | "
                f"{T:,} | {_f(eps, 5)} | {1000 * dt:.0f} ms | {size:,} | {16 * size / 2**20:.1f} MiB | "
                f"{drift:.1e} |"
            )
    return lines


def _quoted_table(data) -> list[str]:
    lines = ["| figure | panel | x | curve | value | tolerance |", "|---|---|---|---|---|---|"]
    for fig, panel, x, curves in QUOTED:
        for c in curves:
            v = _get(data, fig, panel, c, x)
            if math.isfinite(v):
                lines.append(f"| {fig} | {panel} | {x} | {c} | {v:.6g} | {TOLERANCE:g} |")
    return lines


_RR_BENCH = Path(__file__).resolve().parents[1] / "bench" / "results_rr.md"


def _randomizer_aware() -> list[str]:
    """The randomizer-aware section: bench/results_rr.md's tables (``python bench/bench_rr.py``:
    dp_accounting's exact PLDs are too slow for a figures run), with where they come from."""
    if not _RR_BENCH.exists():
        return ["(run `python bench/bench_rr.py` to measure it)"]
    body = _RR_BENCH.read_text().splitlines()
    start = next(i for i, line in enumerate(body) if line.startswith("|"))
    return [
        "`binary_rr` and `kary_rr` are accounted as themselves (`shuffle_rr` / `subsampled_shuffle_rr`, "
        "bounds.md §12: randomized response's clone probability 2/(e^ε0+1); for binary RR without sampling, "
        "bounds.md §13: the shuffled count of ones itself at the worst split of the other users' inputs); "
        "Hadamard response and the vector mechanisms keep the generic bound (their clone probability is "
        "e^{−ε0}, bounds.md §12). Binary RR at δ = 10⁻⁸ against the generic `shuffle` event and the exact "
        "shuffled binary RR with every other user holding 0 (a pessimistic PLD of that pair, the larger of both "
        "directions; a reference, not the worst case: mixed inputs can be worse, which is why `shuffle_rr` sits "
        "slightly above it), from `bench/results_rr.md` (`python bench/bench_rr.py`):",
        "",
        *body[start:],
    ]


def write_results(path: Path, img_dir: Path, data: dict, costs: dict, quick: bool, seconds: float) -> None:
    rel = Path(os.path.relpath(img_dir, path.parent))
    L = [
        "# Reproducing the thesis's numerical results (§5.5) with the baselines",
        "",
        "<!-- generated by `python -m figures`; do not edit by hand -->",
        "",
        f"Generated by `python -m figures --out {img_dir.as_posix()} --results {path.as_posix()}`"
        + (" **--quick** (a few points per panel)" if quick else "")
        + f" ({seconds / 60:.0f} min of computation). "
        "Every number below comes from `accountant` (the service's bounds, conversion and composition) or "
        "`accountant.baselines` (the approximate-DP baselines, each one cited source); the CSVs next to the "
        "images hold every plotted point (`figure,panel,curve,x,y`).",
        "",
        NOT_COVERED,
        "",
        "## Curves",
        "",
        f'* **{C.DEFAULT}** — the service\'s answer (`accounting="best"`, the default of `accountant.epsilon`, '
        "`/v1/epsilon` and the CLI): the smallest certified ε of the RDP, PLD and pure routes (bounds.md §11). "
        "In figure 5.2 (RDP, not ε) it is the RDP curve the RDP route composes.",
        f'* **{C.DEFAULT_RDP}** — `accounting="rdp"`, what the ledger charges: the order-wise minimum of every '
        "valid RDP bound (Thm 5.3.1/5.3.2, the ε0-DP cap, the FMT21 clone reduction; for subsampling also "
        "Thm 5.4.1, WBK19 over the tightest k-user curve and the subsampled clone pair), composed and converted "
        "by Lemma 2.1.3.",
        f"* **{C.SCLONE_RDP}** — the subsampled clone pair's RDP (bounds.md §9, bound `subsampled_clones`) alone, "
        f"composed T times and converted by Lemma 2.1.3; **{C.SCLONE_PLD}** — the same pair's privacy-loss "
        'distribution composed T times (`accounting="pld"`: pessimistic discretisation, the numerical error '
        "bounded and added to δ, bounds.md §10).",
        f"* **{C.U1}**, **{C.U2}**, **{C.SU}** — the thesis's upper bounds (corrected as in docs/bounds.md), "
        "at integer orders 2…10⁴ where the theorem needs them; **lower** curves are the exact Thm 5.3.3 / 5.4.2 "
        "mechanisms' RDP (converted by Lemma 2.1.3 in 5.3/5.6: a comparison curve, not an (ε, δ) lower bound).",
        f"* **{C.EFM_RDP}** — EFM19 Remark 1 as (5.8); **{C.EFM_DP}** — EFM19 Corollary 9 (only ε0 < 1/2, n ≥ 1000).",
        f"* **{C.BBG}** — BBG19 Hoeffding/Bennett bound for a generic ε0-LDP randomizer (the smaller of the two).",
        f"* **{C.CLONE}** — the FMT21 clone pair's hockey-stick divergence, certified (never below the exact value). "
        "FMT21 is the thesis's [FMT22] (Feldman, McMillan, Talwar, FOCS 2021, proceedings dated 2022).",
        f"* **{C.KOV}**, **{C.DRV}** — the clone pair's (ε̃, δ̃) per round composed by KOV15 Thm 3.3 (optimal) or "
        "DRV10, minimised over the per-round δ̃; **closed form** variants use FMT21's closed-form bound instead.",
        f"* **{C.KOV_SUB}** — the k-user clone (ε̃, δ̃), amplified by sampling without replacement (BBG18: "
        "ε' = log(1 + γ(e^ε̃ − 1)), δ' = γδ̃), composed by KOV15.",
        f"* **{C.GDD_WBK}** — WBK19 Thm 9 (subsampling without replacement) over GDD21e's RDP of the k-user "
        "shuffle (= Thm 5.3.1), orders ≤ 1000.",
        f"* **{C.PLD}** — the clone pair's privacy-loss distribution (`accountant.baselines.pld`, dp_accounting's "
        "pessimistic discretisation) composed T times by FFT, without a bound on the FFT's floating-point error; "
        "the default's PLD route composes the same pair with that error bounded and added to δ.",
        "",
        "## The thesis's quoted claims",
        "",
        "| point | thesis | reproduced (thesis's bound) | reproduced (default) | where they differ and why |",
        "|---|---|---|---|---|",
        *_claims(data),
        "",
        f"### Quoted points (checked by `tests/figures/test_figures.py`, relative tolerance {TOLERANCE:g})",
        "",
        *_quoted_table(data),
        "",
        "## Tightness against the best known valid accounting",
        "",
        "The default is the `best` answer; its RDP route is listed beside it because that is what a ledger "
        "charges (bounds.md §11: a PLD composition does not hold under the ledger's adaptive budget checks).",
        "",
        *_tightness(data),
        "",
        "## Randomizer-aware amplification",
        "",
        *_randomizer_aware(),
        "",
        "## Cost",
        "",
        *_costs(costs, C.TIMINGS),
        "",
        "## Figures",
        "",
    ]
    for fig_id, panels in FIGURES.items():
        if fig_id not in data:
            continue
        stem = "fig" + fig_id.replace(".", "_")
        L += [
            f"### {TITLES[fig_id]}",
            "",
            f"![{TITLES[fig_id]}]({(rel / (stem + '.png')).as_posix()})",
            "",
            f"[SVG]({(rel / (stem + '.svg')).as_posix()}) · [CSV]({(rel / (stem + '.csv')).as_posix()})",
            "",
        ]
        for p in panels:
            xs = p.values(quick)
            lines = f"({p.panel}) {p.caption}; x from {_fmt(min(xs))} to {_fmt(max(xs))}, {len(xs)} points"
            L.append(f"* {lines}")
        L.append("")
    L += [
        "Notes: the x ranges are not in the extracted thesis text and were chosen to cover the regimes it "
        "discusses; 5.6c follows the text (k = 10³ fixed, γ = 10³/n), not its caption (γ = 0.001). Curves leave "
        "out points where a bound does not apply (EFM19 Cor. 9 outside ε0 < 1/2; U1/SU at non-integer orders).",
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(L))


__all__ = ["QUOTED", "TOLERANCE", "cost_measurements", "write_results"]
