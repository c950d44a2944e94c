"""The curves of each panel: the project's default, the thesis's bounds, and the baselines.

Every number comes from :mod:`accountant` (RDP bounds, conversion, composition) or
:mod:`accountant.baselines` (approximate-DP baselines); nothing here is a formula of its own.
"""

from __future__ import annotations

import contextlib
import math
import time
from functools import lru_cache

import numpy as np

import accountant
from accountant.baselines import clone_pair, fmt21_closed_form_epsilon
from accountant.baselines.blanket import bbg19_epsilon, efm19_epsilon
from accountant.baselines.composition import best_split_epsilon
from accountant.baselines.subsampling import amplify_without_replacement
from accountant.errors import AccountantError
from accountant.wbk19 import wbk19_rdp

from .spec import DELTA_COMPOSED, DELTA_SINGLE, Panel

# curve names (CSV column "curve" and plot legends)
DEFAULT = "default (tightest valid)"  # the service's answer: accounting="best"
DEFAULT_RDP = "default, RDP route"  # accounting="rdp": what the ledger charges
U1 = "Thm 5.3.1 (U1)"
U2 = "Thm 5.3.2 (U2)"
LOWER = "Thm 5.3.3 lower"
EFM_RDP = "EFM19 RDP (5.8)"
EFM_DP = "EFM19 Cor. 9"
BBG = "BBG19 blanket"
CLONE = "FMT21 clones, exact (ε, δ)"
KOV = "FMT21 + KOV15"
DRV = "FMT21 + DRV10"
PLD = "FMT21 clone PLD (T-fold)"
SU = "Thm 5.4.1 (SU)"
SLOWER = "Thm 5.4.2 lower"
GDD_WBK = "GDD21e + WBK19"
KOV_SUB = "FMT21 + BBG18 + KOV15"
KOV_CF = "FMT21 closed form + KOV15"
KOV_SUB_CF = "FMT21 closed form + BBG18 + KOV15"
SCLONE_RDP = "subsampled clone pair (RDP)"
SCLONE_PLD = "subsampled clone pair (PLD)"

CURVES = {
    "rdp": [DEFAULT, U1, U2, LOWER, EFM_RDP],
    "single": [DEFAULT, DEFAULT_RDP, U1, U2, LOWER, EFM_RDP, EFM_DP, BBG, CLONE],
    "composed": [DEFAULT, DEFAULT_RDP, U1, EFM_RDP, KOV, KOV_CF, DRV, PLD],
    "subsampled": [DEFAULT, DEFAULT_RDP, SCLONE_RDP, SCLONE_PLD, SU, SLOWER, GDD_WBK, KOV_SUB, KOV_SUB_CF],
}

ORDERS = np.asarray(accountant.DEFAULT_ORDERS, dtype=float)
INT_ORDERS = np.unique(np.round(ORDERS[ORDERS >= 2]))  # for the integer-order bounds (U1, SU)
WBK_ORDERS = INT_ORDERS[INT_ORDERS <= 1000]  # GDD21e + WBK19: U1 inner curve at every integer to 1000


def _convert(orders: np.ndarray, curve: np.ndarray, delta: float) -> float:
    """Lemma 2.1.3 (the accountant's conversion), minimised over the given orders."""
    return accountant.epsilon_from_rdp(orders, curve, delta)[0]


@lru_cache(maxsize=256)
def _shuffle_curve(n: int, eps0: float, bound: str) -> np.ndarray:
    orders = INT_ORDERS if bound == "u1" else ORDERS
    return accountant.shuffle_rdp(n, eps0, orders, bound=bound)


def _orders_for(bound: str) -> np.ndarray:
    return INT_ORDERS if bound in ("u1", "su") else ORDERS


@lru_cache(maxsize=64)
def _clone(n: int, eps0: float):
    return clone_pair(n, eps0)


@lru_cache(maxsize=64)
def _pair(n: int, eps0: float):
    """The clone pair and its approximate ε(δ) interpolator (for the per-round δ searches)."""
    p = _clone(n, eps0)
    return p, p.epsilon_interpolator()


TIMINGS: dict[str, list[float]] = {}  # seconds per point, by curve (reported in results.md)


def _routed(events: list[dict], delta: float, name: str) -> dict[str, float]:
    """The service's answer (``accounting="best"``, the smallest certified ε of the RDP, PLD and
    pure routes) and its RDP route (``accounting="rdp"``, what the ledger charges), both from one
    :func:`accountant.epsilon_routed` call (the best answer runs the RDP route anyway)."""
    t0 = time.perf_counter()
    best: float | None
    rdp: float | None
    try:
        r = accountant.epsilon_routed(events, delta)
        best = r.epsilon
        rdp = next((v.epsilon for v in r.routes if v.route == "rdp"), None)
    except (AccountantError, ValueError, FloatingPointError, OverflowError):
        best = rdp = None
    TIMINGS.setdefault(name, []).append(time.perf_counter() - t0)
    return {DEFAULT: _finite(best), DEFAULT_RDP: _finite(rdp)}


def _finite(v) -> float:
    return float(v) if v is not None and math.isfinite(v) else math.nan


def _safe(fn, name: str | None = None):
    t0 = time.perf_counter()
    try:
        v = fn()
    except (AccountantError, ValueError, FloatingPointError, OverflowError):
        v = None
    if name is not None:
        TIMINGS.setdefault(name, []).append(time.perf_counter() - t0)
    return float(v) if v is not None and math.isfinite(v) else math.nan


# ------------------------------------------------------------------------------------ figure 5.2
def rdp_point(n: int, eps0: float, alpha: float) -> dict[str, float]:
    a = np.array([float(alpha)])

    def b(bound):
        return _safe(lambda: accountant.shuffle_rdp(n, eps0, a, bound=bound)[0])

    return {DEFAULT: b("upper"), U1: b("u1"), U2: b("u2"), LOWER: b("lower"), EFM_RDP: b("efm19")}


# ------------------------------------------------------------------------------------ figure 5.3
def single_point(n: int, eps0: float, delta: float = DELTA_SINGLE) -> dict[str, float]:
    ev = {"mechanism": "shuffle", "n": n, "epsilon0": eps0}
    out = _routed([ev], delta, DEFAULT + ", one release")
    for name, bound in ((U1, "u1"), (U2, "u2"), (LOWER, "lower"), (EFM_RDP, "efm19")):
        out[name] = _safe(
            lambda bound=bound: _convert(_orders_for(bound), _shuffle_curve(n, eps0, bound), delta)
        )
    out[EFM_DP] = _safe(lambda: efm19_epsilon(n, eps0, delta), EFM_DP)
    out[BBG] = _safe(lambda: bbg19_epsilon(n, eps0, delta), BBG)
    out[CLONE] = _safe(lambda: _clone(n, eps0).epsilon(delta), CLONE)
    return out


# ------------------------------------------------------------------------------------ figure 5.4
def composed_point(
    n: int, eps0: float, T: int, delta: float = DELTA_COMPOSED, pld: bool = True
) -> dict[str, float]:
    ev = {"mechanism": "shuffle", "n": n, "epsilon0": eps0, "count": int(T)}
    out = _routed([ev], delta, DEFAULT + ", T rounds")
    for name, bound in ((U1, "u1"), (EFM_RDP, "efm19")):
        out[name] = _safe(
            lambda bound=bound: _convert(_orders_for(bound), T * _shuffle_curve(n, eps0, bound), delta)
        )
    pair, approx = _pair(n, eps0)
    out[KOV] = _safe(lambda: best_split_epsilon(T, pair.epsilon, delta, "kov15", approx)[0], KOV)
    out[DRV] = _safe(lambda: best_split_epsilon(T, pair.epsilon, delta, "drv", approx)[0], DRV)
    out[KOV_CF] = _safe(
        lambda: best_split_epsilon(T, lambda d: fmt21_closed_form_epsilon(n, eps0, d), delta)[0]
    )
    if pld:
        from accountant.baselines.pld import clone_pld

        out[PLD] = _safe(lambda: clone_pld(n, eps0).epsilon(T, delta), PLD)
    else:
        out[PLD] = math.nan
    return out


# ------------------------------------------------------------------------------------ figure 5.6
@lru_cache(maxsize=64)
def _subsampled_curves(n: int, k: int, eps0: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    gamma = k / n
    su = accountant.subsampled_shuffle_rdp(n, k, eps0, INT_ORDERS, bound="su") if k >= 2 else None
    lower = accountant.subsampled_shuffle_rdp(n, k, eps0, ORDERS, bound="lower")

    def inner(js):  # the RDP of the k-user shuffle from GDD21e (= Theorem 5.3.1) at integer orders
        return accountant.shuffle_rdp(k, eps0, js, bound="u1")

    gdd = wbk19_rdp(gamma, inner, eps0, WBK_ORDERS)
    out = {SLOWER: (ORDERS, lower), GDD_WBK: (WBK_ORDERS, gdd)}
    # bounds.md §9: the named bound alone (the default's RDP route takes it order-wise with the others)
    with contextlib.suppress(AccountantError):
        out[SCLONE_RDP] = (
            ORDERS,
            accountant.subsampled_shuffle_rdp(n, k, eps0, ORDERS, bound="subsampled_clones"),
        )
    if su is not None:
        out[SU] = (INT_ORDERS, su)
    return out


def subsampled_point(n: int, k: int, eps0: float, T: int, delta: float = DELTA_COMPOSED) -> dict[str, float]:
    ev = {"mechanism": "subsampled_shuffle", "n": n, "k": k, "epsilon0": eps0, "count": int(T)}
    out = _routed([ev], delta, DEFAULT + ", subsampled")
    out[SCLONE_PLD] = _safe(lambda: accountant.epsilon([ev], delta, accounting="pld")[0], SCLONE_PLD)
    curves = _subsampled_curves(n, k, eps0)
    for name in (SU, SLOWER, GDD_WBK, SCLONE_RDP):
        if name in curves:
            o, c = curves[name]
            out[name] = _safe(lambda o=o, c=c: _convert(o, T * c, delta))
        else:
            out[name] = math.nan
    gamma = k / n
    pair, approx = _pair(k, eps0)

    def per_round(fn):  # δ' ↦ ε' of one subsampled round: shuffle (ε̃(δ'/γ), δ'/γ), then BBG18
        return lambda d: amplify_without_replacement(fn(d / gamma), d / gamma, gamma)[0]

    out[KOV_SUB] = _safe(
        lambda: best_split_epsilon(T, per_round(pair.epsilon), delta, "kov15", per_round(approx))[0], KOV_SUB
    )
    closed = per_round(lambda d: fmt21_closed_form_epsilon(k, eps0, d))
    out[KOV_SUB_CF] = _safe(lambda: best_split_epsilon(T, closed, delta, "kov15")[0])
    return out


def point(panel: Panel, x, quick: bool) -> dict[str, float]:
    p = dict(panel.params)
    p[panel.x] = x
    if panel.kind == "rdp":
        return rdp_point(int(p["n"]), float(p["epsilon0"]), float(p["alpha"]))
    if panel.kind == "single":
        return single_point(int(p["n"]), float(p["epsilon0"]))
    if panel.kind == "composed":
        # the PLD curve costs ~0.3–3 s per new (n, ε0): in --quick only on the panels over T
        return composed_point(
            int(p["n"]), float(p["epsilon0"]), int(p["T"]), pld=(not quick or panel.x == "T")
        )
    if panel.kind == "subsampled":
        return subsampled_point(int(p["n"]), int(p["k"]), float(p["epsilon0"]), int(p["T"]))
    raise ValueError(panel.kind)
