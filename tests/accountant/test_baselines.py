"""accountant.baselines against the sources' printed numbers and independent evaluations.

References: tests/accountant/mp_baselines.py (mpmath, written from the definitions), the FMT21
public implementation's printed example, dp_accounting's PLD composition of the (ε, δ) pair, the
exact shuffled randomized response (a lower bound every valid generic bound must respect).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from accountant.baselines import clone_pair, fmt21_closed_form_epsilon
from accountant.baselines.blanket import bbg19_delta, bbg19_epsilon, efm19_epsilon
from accountant.baselines.composition import best_split_epsilon, drv_epsilon, kov15_delta, kov15_epsilon
from accountant.baselines.subsampling import amplify_without_replacement
from accountant.errors import BoundNotApplicable

from . import mp_baselines as R

# ---------------------------------------------------------------------------------------------
# clone pair (FMT21 §3)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 7, 30, 80])
@pytest.mark.parametrize("eps0", [0.3, 1.0, 3.0])
def test_clone_delta_matches_brute_force_definition(n, eps0):
    """Every (C, A, Δ) cell of the definition, 40 digits: never below, and equal to 1e-5 relative
    (small n: every C is its own bin, so only the rounding slack separates them — 1e-10 of the
    two CDF terms whose difference δ_c is, which near ε0 cancel by up to ~1e4)."""
    P, Q = R.clone_pair_atoms(n, eps0)
    pair = clone_pair(n, eps0)
    for eps in (0.0, 0.05 * eps0, 0.3 * eps0, 0.7 * eps0, 0.99 * eps0, -0.4 * eps0):
        exact = R.hockey(P, Q, eps)
        assert R.hockey(Q, P, eps) == pytest.approx(exact, rel=1e-30, abs=1e-35)  # symmetric pair
        got = pair.delta(eps)
        assert got >= float(exact) * (1 - 1e-15)
        assert got <= float(exact) * (1 + 1e-5) + 1e-300


def test_clone_delta_on_a_grid_matches_brute_force_and_pointwise():
    """Many ε at once go through per-bin S-tables (_delta_c_many): same certified values."""
    P, Q = R.clone_pair_atoms(40, 1.0)
    pair = clone_pair(40, 1.0)
    grid = np.linspace(-0.9, 0.95, 64)
    got = pair.delta(grid)
    for e, g in zip(grid[::7], got[::7]):
        exact = float(R.hockey(P, Q, e))
        assert exact * (1 - 1e-15) <= g <= exact * (1 + 1e-5) + 1e-300
    for n, eps0 in [(10**4, 0.5), (10**5, 2.0), (10**6, 1.0)]:
        pair = clone_pair(n, eps0)
        e1 = pair.epsilon(1e-12)
        grid = np.linspace(-e1, 2 * e1, 100)
        many = pair.delta(grid)
        pointwise = np.array([pair.delta(float(e)) for e in grid[::9]])
        assert np.allclose(many[::9], pointwise, rtol=1e-8, atol=1e-300)
        lo, up = pair.delta_bracket(grid)
        assert np.all(lo <= up) and np.all(up <= lo * (1 + 2e-3) + 1e-300)


def _per_c_reference(n: int, eps0: float, eps: float) -> float:
    """Σ_c P(C=c) Σ_x (P_c(x) − e^ε Q_c(x))_+ with every c and every x (float64 pmfs), a code
    path independent of the module's closed form and binning (the 40-digit reference is too slow
    at these n)."""
    E = math.exp(eps0)
    al = E / (E + 1)
    ee = math.exp(eps)
    cs = np.arange(n)
    wc = binom.pmf(cs, n - 1, 1 / E)
    keep = wc > 1e-30  # the rest is < 1e-27 of δ ≥ 1e-10 below
    total = 0.0
    for c, w in zip(cs[keep], wc[keep]):
        x = np.arange(c + 2)
        b = binom.pmf(x, c, 0.5)
        bm1 = binom.pmf(x - 1, c, 0.5)
        p = al * bm1 + (1 - al) * b
        q = (1 - al) * bm1 + al * b
        total += w * np.sum(np.maximum(p - ee * q, 0.0))
    return total


@pytest.mark.parametrize("n,eps0", [(3000, 0.5), (3000, 2.0), (800, 4.0)])
def test_clone_delta_matches_per_c_summation(n, eps0):
    pair = clone_pair(n, eps0)
    for d in (1e-3, 1e-6, 1e-10):
        eps = pair.epsilon(d)
        ref = _per_c_reference(n, eps0, eps)
        lo, up = pair.delta_bracket(eps)
        # the float64 reference loses up to ~1e-8 to cancellation in P − e^ε Q
        assert up[0] >= ref * (1 - 1e-7)
        assert lo[0] <= ref * (1 + 1e-7)
        assert up[0] == pytest.approx(ref, rel=1e-6)


def test_clone_epsilon_within_the_reference_implementations_printed_bracket():
    """apple/ml-shuffling-amplification README: n = 10⁵, ε0 = 4, δ = 1e-6 gives ε between
    0.1675385583317841 (lower) and 0.172790550755978 (upper), each from a 10-step binary search
    over [0, 0.5378] (resolution 5.3e-4)."""
    eps = clone_pair(100_000, 4.0).epsilon(1e-6)
    assert 0.1675385583317841 - 0.5378 / 2**10 <= eps <= 0.172790550755978


def test_fmt21_closed_form_matches_the_printed_example():
    """The same README prints 0.5378040242374512 for its closed form at n = 10⁵, ε0 = 4, δ = 1e-6."""
    got = fmt21_closed_form_epsilon(100_000, 4.0, 1e-6)
    assert got == pytest.approx(0.5378040242374512, rel=1e-14) and got >= 0.5378040242374512
    assert got >= clone_pair(100_000, 4.0).epsilon(1e-6)
    assert fmt21_closed_form_epsilon(1000, 2.0, 1e-10) == 2.0  # outside its condition: the ε0-DP level


@pytest.mark.parametrize("n,eps0", [(10**6, 0.5), (10**6, 2.0), (10**8, 0.1), (10**4, 3.0)])
def test_clone_bracket_is_tight_at_large_n(n, eps0):
    pair = clone_pair(n, eps0)
    e = pair.epsilon(1e-8)
    lo, up = pair.delta_bracket(np.array([0.5 * e, e, 1.5 * e]))
    assert np.all(lo <= up)
    assert np.all(up <= lo * (1 + 1e-3) + 1e-300)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 4000), eps0=st.floats(0.05, 6.0), logd=st.floats(-14, -2))
def test_clone_epsilon_is_the_certified_root(n, eps0, logd):
    d = 10.0**logd
    pair = clone_pair(n, eps0)
    e = pair.epsilon(d)
    assert 0.0 <= e <= eps0
    assert pair.delta(e) <= d
    if e > 1e-9:
        assert pair.delta(e * (1 - 1e-6)) > d


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 150), eps0=st.floats(0.1, 4.0), frac=st.floats(0.0, 0.95))
def test_generic_bounds_are_above_shuffled_randomized_response(n, eps0, frac):
    """Binary RR is an ε0-LDP randomizer: every valid generic bound has δ ≥ its exact δ."""
    eps = frac * eps0
    exact = float(R.rr_shuffle_delta(n, eps0, eps))
    assert clone_pair(n, eps0).delta(eps) >= exact * (1 - 1e-12)
    if eps > 0:
        for kind in ("hoeffding", "bennett"):
            assert bbg19_delta(n, eps0, eps, kind) >= exact * (1 - 1e-12)


def test_clone_edge_cases():
    assert clone_pair(10, 0.0).epsilon(1e-6) == 0.0
    assert clone_pair(10, 0.0).delta(0.3) == 0.0
    assert clone_pair(10, 1.0).delta(1.0) == 0.0
    assert clone_pair(10, 1.0).delta(-2.0) == pytest.approx(-math.expm1(-2.0))
    # n = 1: the ε0-randomized-response pair, δ(ε) = (E − e^ε)/(E + 1)
    E = math.exp(1.0)
    got = clone_pair(1, 1.0).delta(0.4)  # rounding slacks: ≤ ~2e-9 relative
    assert (E - math.exp(0.4)) / (E + 1) <= got <= (E - math.exp(0.4)) / (E + 1) * (1 + 1e-8)
    assert clone_pair(1, 1.0).epsilon(0.01) == pytest.approx(math.log(E - 0.01 * (E + 1)), rel=1e-8)


# ---------------------------------------------------------------------------------------------
# BBG19, EFM19
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["hoeffding", "bennett"])
@pytest.mark.parametrize("n,eps0,eps", [(50, 0.5, 0.3), (400, 1.0, 0.4), (2000, 0.2, 0.05), (2000, 3.0, 1.5)])
def test_bbg19_matches_explicit_binomial_expectation(kind, n, eps0, eps):
    ref = float(R.bbg19_delta(n, eps0, eps, kind))
    assert bbg19_delta(n, eps0, eps, kind) == pytest.approx(min(ref, 1.0), rel=1e-9)
    assert bbg19_delta(n, eps0, eps, kind) >= min(ref, 1.0)


def test_bbg19_epsilon_is_a_root_and_best_is_the_smaller():
    for n, eps0 in [(10**4, 0.1), (10**5, 3.0), (10**6, 1.0)]:
        eh = bbg19_epsilon(n, eps0, 1e-6, "hoeffding")
        eb = bbg19_epsilon(n, eps0, 1e-6, "bennett")
        e = bbg19_epsilon(n, eps0, 1e-6, "best")
        assert bbg19_delta(n, eps0, e, "best") <= 1e-6
        assert e <= min(eh, eb) * (1 + 1e-9)
        assert e >= clone_pair(n, eps0).epsilon(1e-6)  # the clone analysis is tighter here
    assert bbg19_epsilon(10**4, 3.0, 1e-6) == 3.0  # no amplification left: the ε0-DP level


def test_efm19_corollary_9():
    got = efm19_epsilon(10**5, 0.1, 1e-6)
    assert got == pytest.approx(float(12 * mp.mpf("0.1") * mp.sqrt(mp.log(10**6) / 10**5)), rel=1e-15)
    assert got >= float(12 * mp.mpf("0.1") * mp.sqrt(mp.log(10**6) / 10**5))
    for bad in [(10**5, 0.5, 1e-6), (999, 0.1, 1e-6), (10**5, 0.1, 0.02)]:
        with pytest.raises(BoundNotApplicable):
            efm19_epsilon(*bad)
    # sound against the exact shuffled randomized response at n = 1000
    n, eps0, d = 1000, 0.45, 1e-3
    e = efm19_epsilon(n, eps0, d)
    assert float(R.rr_shuffle_delta(n, eps0, min(e, eps0))) <= d


# ---------------------------------------------------------------------------------------------
# composition (KOV15, DRV10)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 5, 20, 60])
@pytest.mark.parametrize("eps,delta", [(0.1, 0.0), (0.5, 1e-6), (0.01, 1e-9)])
def test_kov15_matches_theorem_3_3_grid(k, eps, delta):
    for i in range(0, k // 2 + 1, max(1, k // 8)):
        ref = float(R.kov15_grid_delta(k, eps, delta, i))
        got = kov15_delta(k, eps, delta, (k - 2 * i) * eps)
        assert got >= ref * (1 - 1e-13)
        assert got == pytest.approx(ref, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(
    "k,eps,delta,target", [(10, 0.1, 1e-7, 1e-5), (200, 0.05, 1e-9, 1e-6), (3000, 0.01, 0.0, 1e-8)]
)
def test_kov15_matches_dp_accounting_pld(k, eps, delta, target):
    """dp_accounting composes the (ε, δ) pair's PLD (losses exactly on its grid) by FFT."""
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    dist = pld.from_privacy_parameters(
        common.DifferentialPrivacyParameters(eps, delta), value_discretization_interval=eps / 200
    )
    ref = dist.self_compose(k).get_epsilon_for_delta(target)
    got = kov15_epsilon(k, eps, delta, target)
    assert got == pytest.approx(ref, rel=2e-4)


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 5000), eps=st.floats(1e-4, 1.0), logd=st.floats(-14, -6), logt=st.floats(-10, -3))
def test_kov15_below_drv_and_basic(k, eps, logd, logt):
    d, t = 10.0**logd, 10.0**logt
    kv = kov15_epsilon(k, eps, d, t)
    assert kv <= k * eps * (1 + 1e-12) or not math.isfinite(kv)
    if math.isfinite(kv):
        assert kov15_delta(k, eps, d, kv) <= t
    assert kv <= drv_epsilon(k, eps, d, t) * (1 + 1e-9)


def test_drv_closed_form():
    k, eps, d, t = 1000, 0.01, 1e-10, 1e-6
    ref = mp.sqrt(2 * k * mp.log(1 / (mp.mpf(t) - k * mp.mpf(d)))) * eps + k * eps * (mp.e ** mp.mpf(eps) - 1)
    assert drv_epsilon(k, eps, d, t) == pytest.approx(float(ref), rel=1e-14)
    assert drv_epsilon(k, eps, 1e-9, 1e-6) == math.inf


def test_best_split_uses_the_exact_function_for_its_answer():
    pair = clone_pair(10**5, 1.0)

    def rough(d):  # a deliberately wrong search function: the answer must still use the exact one
        return 2.0 * pair.epsilon(d)

    e, d = best_split_epsilon(1000, pair.epsilon, 1e-8, search_eps_of_delta=rough)
    assert e == pytest.approx(kov15_epsilon(1000, pair.epsilon(d), d, 1e-8), rel=1e-12)
    e2, _ = best_split_epsilon(1000, pair.epsilon, 1e-8)
    assert e2 <= e * (1 + 1e-6)


# ---------------------------------------------------------------------------------------------
# subsampling without replacement (BBG18)
# ---------------------------------------------------------------------------------------------


def test_amplification_without_replacement():
    for eps, d, g in [(1.0, 1e-6, 0.01), (0.001, 1e-9, 0.5), (5.0, 0.0, 1e-3), (2.0, 1e-8, 1.0)]:
        e2, d2 = amplify_without_replacement(eps, d, g)
        ref = mp.log(1 + mp.mpf(g) * (mp.e ** mp.mpf(eps) - 1))
        assert e2 == pytest.approx(float(ref), rel=1e-15) and e2 >= float(ref)
        assert d2 >= g * d and d2 == pytest.approx(g * d, rel=1e-15)
    # the pure-DP case is the thesis's Lemma 2.1.1, which the accountant's subsampled cap uses
    from accountant import subsampled_shuffle_rdp

    e2, _ = amplify_without_replacement(2.0, 0.0, 0.001)
    a = mp.mpf(1000)
    ref = mp.log((mp.e ** (a * e2) + mp.e ** ((1 - a) * e2)) / (mp.e**e2 + 1)) / (a - 1)  # ĉ_{ε'}(α)
    assert subsampled_shuffle_rdp(10**6, 1000, 2.0, [1000.0], bound="cap")[0] == pytest.approx(
        float(ref), rel=1e-9
    )
    with pytest.raises(ValueError):
        amplify_without_replacement(1.0, 0.0, 1.5)


# ---------------------------------------------------------------------------------------------
# PLD of the clone pair (dp_accounting)
# ---------------------------------------------------------------------------------------------


def test_pld_single_round_is_pessimistic_and_close():
    from accountant.baselines.pld import clone_pld

    for n, eps0 in [(10**6, 0.5), (10**5, 2.0), (2000, 1.0)]:
        pld = clone_pld(n, eps0)
        exact = clone_pair(n, eps0)
        for d in (1e-6, 1e-9):
            e_pld = pld.epsilon(1, d)
            lo_exact = exact.epsilon(d)
            assert e_pld >= lo_exact * (1 - 1e-3)  # ≥ the exact value (bracket slack ≤ 1e-3 relative)
            assert e_pld <= lo_exact * 1.002
            # its δ at the exact ε is not below the exact pair's (lower bracket)
            lo, _ = exact.delta_bracket(lo_exact)
            assert pld.delta(1, lo_exact) >= lo[0] * (1 - 1e-9)


def _exact_two_fold(n: int, eps0: float, eps: float) -> float:
    """Hockey-stick of the product of two clone pairs, by enumeration (float64)."""
    P, Q = R.clone_pair_atoms(n, eps0)
    keys = list(P)
    p = np.array([float(P[k]) for k in keys])
    q = np.array([float(Q.get(k, 0)) for k in keys])
    pp = np.outer(p, p).ravel()
    qq = np.outer(q, q).ravel()
    return float(np.sum(np.maximum(pp - math.exp(eps) * qq, 0.0)))


def test_pld_two_fold_against_enumeration():
    from accountant.baselines.pld import clone_pld

    n, eps0 = 12, 1.0
    pld = clone_pld(n, eps0, discretization=1e-4)
    for eps in (0.3, 0.8, 1.4):
        exact = _exact_two_fold(n, eps0, eps)
        got = pld.delta(2, eps)
        assert got >= exact * (1 - 1e-9)
        assert got <= exact * 1.01 + 1e-12


def test_pld_discretisation_converged():
    from accountant.baselines.pld import clone_pld, loss_scale

    n, eps0 = 10**6, 0.5
    s = loss_scale(n, eps0)
    a = clone_pld(n, eps0).epsilon(10**4, 1e-8)
    b = clone_pld(n, eps0, discretization=s / 100).epsilon(10**4, 1e-8)
    assert b <= a * (1 + 1e-6)  # finer is tighter (both pessimistic)
    assert a <= b * (1 + 3e-4)


def test_survival_tables_against_40_digit_sums_and_boost():
    """The per-c S-tables (pmf by exact ratios from one anchor, suffix sums) are within the
    1e-10 slack of S(j) = Pr[Bin(c, ½) ≥ j]: against 40-digit sums at small c, against scipy's
    (Boost) survival function up to the largest window the tables are used for."""
    from accountant.baselines.clone_dp import _TABLE_MAX, _survival_tables, _window

    mp.mp.dps = 40
    for c in (0, 1, 7, 300, 2001):
        ((xl, tab),) = _survival_tables([c])
        for j in range(xl, xl + tab.size, max(1, tab.size // 25)):
            exact = mp.fsum(mp.binomial(c, i) for i in range(j, c + 1)) / mp.mpf(2) ** c
            assert abs(tab[j - xl] - exact) <= 1e-12 * exact + 1e-300, (c, j)
    rng = np.random.default_rng(7)
    big = [6 * 10**5, 10**7, int(_TABLE_MAX**2 / (4 * 46.1)) - 10]
    assert 2 * math.sqrt(46.1 * big[-1]) <= _TABLE_MAX
    for c, (xl, tab) in zip(big, _survival_tables(big)):
        assert (xl, xl + tab.size - 2) == _window(c)
        j = np.sort(rng.integers(xl, xl + tab.size, size=200))
        ref = binom.sf(j - 1, c, 0.5)
        assert np.all(np.abs(tab[j - xl] - ref) <= 5e-11 * ref), c
