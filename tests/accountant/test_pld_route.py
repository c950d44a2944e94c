"""The PLD route (accountant/pld/): never below the exact composed divergence, not far above it.

References are computed here, independently of the code under test: the exact composition of
randomized response (a binomial of the loss) and of the clone pair (enumerated) in 40-digit
mpmath, the Gaussian's composition in closed form (μ√T, Balle–Wang), dp_accounting's own
optimistic and pessimistic PLDs of the same pairs, and a 60-digit DFT for the FFT error model.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("dp_accounting")

from dp_accounting.pld import privacy_loss_distribution as dp_pld  # noqa: E402

from accountant.dominating import clone_pair_curve, gaussian_pair, randomized_response_pair  # noqa: E402
from accountant.events import as_event  # noqa: E402
from accountant.pld import PldNotCovered, covered, pld_delta, pld_epsilon, single_round_pmfs  # noqa: E402
from accountant.pld import compose as pld_compose  # noqa: E402

mp.mp.dps = 40

#: relative excess over the exact δ allowed for discretisation (Δ = loss scale / 25)
GAUSS_TOL = 2e-3


def rr_exact_delta(eps0: float, count: int, eps: float, delta0: float = 0.0) -> mp.mpf:
    """δ(ε) of `count` compositions of the (ε0, δ0) randomized-response pair, exactly."""
    e0 = mp.mpf(eps0)
    q = mp.e**e0 / (1 + mp.e**e0)
    s = mp.mpf(0)
    for k in range(count + 1):
        loss = (2 * k - count) * e0
        s += (
            mp.binomial(count, k)
            * q**k
            * (1 - q) ** (count - k)
            * max(mp.mpf(0), 1 - mp.e ** (mp.mpf(eps) - loss))
        )
    keep = (1 - mp.mpf(delta0)) ** count
    return 1 - keep + keep * s


def gauss_exact_delta(mu: float, eps: float) -> mp.mpf:
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(mu / 2 - eps / mu) - mp.e**eps * mp.ncdf(-mu / 2 - eps / mu)


def clone_atoms(n: int, eps0: float) -> list[tuple[mp.mpf, mp.mpf]]:
    """(P-probability, privacy loss) of every outcome (c, x) of the FMT21 clone pair."""
    e = mp.e ** mp.mpf(eps0)
    p, alpha = 1 / e, e / (e + 1)
    out = []
    for c in range(n):
        wc = mp.binomial(n - 1, c) * p**c * (1 - p) ** (n - 1 - c)
        for x in range(c + 2):
            b0 = mp.binomial(c, x) / mp.mpf(2) ** c if x <= c else mp.mpf(0)
            b1 = mp.binomial(c, x - 1) / mp.mpf(2) ** c if x >= 1 else mp.mpf(0)
            pp = wc * (alpha * b1 + (1 - alpha) * b0)
            qq = wc * ((1 - alpha) * b1 + alpha * b0)
            out.append((pp, mp.log(pp / qq)))
    return out


def composed_exact_delta(atoms: list[tuple[mp.mpf, mp.mpf]], count: int, eps: float) -> mp.mpf:
    """δ(ε) of the `count`-fold product pair by enumeration (count ≤ 3)."""
    dist = [(mp.mpf(1), mp.mpf(0))]
    for _ in range(count - 1):
        dist = [(pa * pb, la + lb) for pa, la in dist for pb, lb in atoms]
    e = mp.mpf(eps)
    s = mp.mpf(0)
    for pa, la in dist:
        for pb, lb in atoms:
            t = la + lb - e
            if t > 0:
                s += pa * pb * (1 - mp.e ** (-t))
    return s


# ------------------------------------------------------------------------- exact references
@pytest.mark.parametrize(
    ("eps0", "count", "eps"), [(0.5, 10, 1.0), (1.0, 5, 1.5), (0.3, 30, 2.0), (1.0, 1, 0.5), (2.0, 2, 0.1)]
)
def test_randomized_response_matches_the_binomial(eps0, count, eps):
    got = pld_delta([{"mechanism": "pure_dp", "epsilon": eps0, "count": count}], eps)
    exact = rr_exact_delta(eps0, count, eps)
    assert got.delta >= exact
    assert got.delta <= exact * (1 + 1e-8) + 1e-15  # the atoms ±ε0 sit on the grid: exact up to rounding


@pytest.mark.parametrize(("eps0", "delta0", "count", "eps"), [(0.5, 1e-6, 10, 1.0), (1.0, 1e-9, 3, 0.0)])
def test_approximate_dp_is_the_kov15_pair(eps0, delta0, count, eps):
    got = pld_delta([{"mechanism": "approx_dp", "epsilon": eps0, "delta": delta0, "count": count}], eps)
    exact = rr_exact_delta(eps0, count, eps, delta0)
    assert exact <= got.delta <= exact * (1 + 1e-8) + 1e-15


@pytest.mark.parametrize(
    ("z", "count", "delta"),
    [
        (1.0, 10, 1e-6),
        (10.0, 1000, 1e-8),
        (0.8, 1, 1e-5),
        (3.0, 3, 1e-10),
        (50.0, 10**5, 1e-8),
        (100.0, 10**9, 1e-6),
    ],
)
def test_gaussian_against_its_closed_form(z, count, delta):
    got = pld_epsilon([{"mechanism": "gaussian", "noise_multiplier": z, "count": count}], delta)
    mu = math.sqrt(count) / z
    assert gauss_exact_delta(mu, got.epsilon) <= delta  # certified: the exact δ at the answer is ≤ δ
    exact_eps = mp.findroot(lambda e: gauss_exact_delta(mu, e) - delta, got.epsilon)
    assert got.epsilon <= exact_eps * (1 + GAUSS_TOL)


def test_gaussians_of_different_noise_compose_to_one_gaussian():
    events = [
        {"mechanism": "gaussian", "noise_multiplier": 1.0, "count": 10},
        {"mechanism": "gaussian", "noise_multiplier": 2.0, "count": 40},
    ]
    for eps in (0.0, 3.0, 12.0):
        got = pld_delta(events, eps).delta
        exact = gauss_exact_delta(math.sqrt(10 + 40 / 4), eps)
        assert exact <= got <= exact * (1 + GAUSS_TOL)


@pytest.mark.parametrize(("n", "eps0", "count"), [(20, 1.0, 2), (30, 0.5, 2), (8, 2.0, 3)])
def test_clone_pair_against_enumeration(n, eps0, count):
    atoms = clone_atoms(n, eps0)
    for eps in (0.0, 0.3, 1.0):
        got = pld_delta([{"mechanism": "shuffle", "n": n, "epsilon0": eps0, "count": count}], eps)
        exact = composed_exact_delta(atoms, count, eps)
        assert got.delta >= exact
        assert got.delta <= exact * 1.05 + 1e-6, (eps, got.delta, exact)


@pytest.mark.parametrize(("n", "eps0"), [(20, 1.0), (30, 0.5), (8, 2.0)])
def test_one_shuffle_release_is_the_pairs_divergence(n, eps0):
    """One release needs no composition: the route answers with the pair's certified hockey-stick
    divergence (no grid), never below the enumerated exact value and at most 1e-3 above it."""
    atoms = clone_atoms(n, eps0)
    ev = [{"mechanism": "shuffle", "n": n, "epsilon0": eps0}]
    for eps in (0.0, 0.3 * eps0, 0.6 * eps0):  # the loss lies in [−ε0, ε0]: δ(ε0) = 0
        got = pld_delta(ev, eps)
        exact = composed_exact_delta(atoms, 1, eps)
        assert exact <= got.delta <= exact * (1 + 1e-3) + 1e-15, (eps, got.delta, exact)
        assert got.discretization == 0.0
    for delta in (1e-3, 1e-6):
        e = pld_epsilon(ev, delta)
        assert e.delta <= delta
        assert composed_exact_delta(atoms, 1, e.epsilon) <= delta


def test_pure_release_costs_its_epsilon():
    for delta in (1e-3, 1e-8, 1e-12):
        got = pld_epsilon([{"mechanism": "pure_dp", "epsilon": 1}], delta)
        assert got.epsilon <= 1.0 + 1e-9
    mixed = [{"mechanism": "pure_dp", "epsilon": 0.3, "count": 3}, {"mechanism": "laplace", "scale": 2.0}]
    assert pld_epsilon(mixed, 1e-10).epsilon <= 1.4 + 1e-3  # pure composition 1.4, Δ-grid rounding


# ------------------------------------------------------------------ dp_accounting's own PLDs
def _dp_gauss(z: float, count: int, step: float, pessimistic: bool) -> dp_pld.PrivacyLossDistribution:
    # without sampling, dp_accounting's pair is N(0, σ²) vs N(1, σ²): the same pair as ours
    pld = dp_pld.from_gaussian_mechanism(
        z, pessimistic_estimate=pessimistic, value_discretization_interval=step
    )
    return pld.self_compose(count)


@pytest.mark.parametrize(("z", "count", "eps"), [(2.0, 20, 1.0), (5.0, 300, 0.8)])
def test_between_dp_accountings_optimistic_and_pessimistic_gaussian(z, count, eps):
    got = pld_delta([{"mechanism": "gaussian", "noise_multiplier": z, "count": count}], eps)
    opt = _dp_gauss(z, count, 1e-4, False).get_delta_for_epsilon(eps)
    pes = _dp_gauss(z, count, 1e-4, True).get_delta_for_epsilon(eps)
    exact = gauss_exact_delta(math.sqrt(count) / z, eps)
    assert opt <= exact <= got.delta <= pes * 1.01


def test_clone_pair_within_dp_accountings_pld_of_the_pair():
    n, eps0, count = 25, 1.0, 3
    atoms = clone_atoms(n, eps0)
    upper = {i: float(mp.log(p)) for i, (p, _) in enumerate(atoms)}
    lower = {i: float(mp.log(p) - lo) for i, (p, lo) in enumerate(atoms)}
    for pessimistic in (False, True):
        pld = dp_pld.from_two_probability_mass_functions(lower, upper, pessimistic, 1e-4).self_compose(count)
        ref = pld.get_delta_for_epsilon(0.5)
        got = pld_delta([{"mechanism": "shuffle", "n": n, "epsilon0": eps0, "count": count}], 0.5).delta
        assert (got >= ref) if not pessimistic else (got <= ref * 1.05)


def test_shuffle_headline():
    got = pld_epsilon([{"mechanism": "shuffle", "n": 10**6, "epsilon0": 0.5, "count": 10**5}], 1e-8)
    assert got.epsilon <= 1.020
    assert got.delta <= 1e-8 and 0 < got.error < 1e-3 * 1e-8


# ---------------------------------------------------------------------------- properties
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    eps0=st.floats(0.05, 3.0),
    count=st.integers(1, 40),
    eps=st.floats(0.0, 4.0),
)
def test_never_below_the_exact_rr_composition(eps0, count, eps):
    got = pld_delta([{"mechanism": "pure_dp", "epsilon": eps0, "count": count}], eps)
    assert got.delta >= rr_exact_delta(eps0, count, eps)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(z=st.floats(0.5, 20.0), count=st.integers(1, 5000), log_delta=st.floats(-14, -3))
def test_epsilon_and_delta_agree_and_certify(z, count, log_delta):
    delta = 10.0**log_delta
    events = [{"mechanism": "gaussian", "noise_multiplier": z, "count": count}]
    got = pld_epsilon(events, delta)
    assert got.delta <= delta and got.error <= got.delta
    assert gauss_exact_delta(math.sqrt(count) / z, got.epsilon) <= delta
    assert pld_delta(events, got.epsilon).delta <= delta * (1 + 1e-6)
    more = pld_epsilon([{**events[0], "count": count + 1}], delta)
    assert more.epsilon >= got.epsilon * (1 - 1e-6)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(eps0=st.floats(0.1, 2.0), count=st.integers(1, 20), z=st.floats(1.0, 10.0))
def test_heterogeneous_composition_covers_each_part(eps0, count, z):
    """Composing more events never lowers δ, and the mixture is above its exact RR part."""
    rr = {"mechanism": "pure_dp", "epsilon": eps0, "count": count}
    both = pld_delta([rr, {"mechanism": "gaussian", "noise_multiplier": z}], 1.0).delta
    assert both >= rr_exact_delta(eps0, count, 1.0) * (1 - 1e-12)


# ------------------------------------------------------------------------- the error bound
def test_the_error_bound_is_added(monkeypatch):
    events = [{"mechanism": "shuffle", "n": 10**4, "epsilon0": 1.0, "count": 2000}]
    base = pld_delta(events, 0.5)
    assert 0 < base.error <= base.delta
    monkeypatch.setattr(pld_compose, "_eta", lambda n: 1e6 * 10 * 2.0**-53 * (math.log2(n) + 2))
    pld_compose._SPECTRA.clear()
    worse = pld_delta(events, 0.5)
    assert worse.error > 100 * base.error
    # δ moves by the change of the bound (the computed sum itself is unchanged)
    assert worse.delta - base.delta == pytest.approx(worse.error - base.error, rel=1e-6)
    pld_compose._SPECTRA.clear()


def test_fft_error_model_holds():
    """The model ‖fl(FFT x) − FFT x‖₂ ≤ η_N ‖FFT x‖₂ (compose.py, item 3) against a 60-digit DFT."""
    rng = np.random.default_rng(7)
    with mp.workdps(60):
        for n in (64, 256):
            x = rng.exponential(size=n) * np.exp(-rng.uniform(0, 30, size=n))
            got = np.fft.rfft(x)
            exact = [
                mp.fsum(mp.mpf(float(x[k])) * mp.expjpi(-2 * mp.mpf(j * k) / n) for k in range(n))
                for j in range(n // 2 + 1)
            ]
            err = math.sqrt(sum(abs(complex(e) - complex(g)) ** 2 for e, g in zip(exact, got)))
            norm = math.sqrt(sum(abs(complex(e)) ** 2 for e in exact))
            assert err <= pld_compose._eta(n) * norm / 10  # measured far below the bound


def test_the_tilt_moves_nothing_but_the_error():
    parts = single_round_pmfs([{"mechanism": "pure_dp", "epsilon": 0.7, "count": 12}])
    vals = [pld_compose.tilted_compose(parts, lam).delta(1.5) for lam in (0.0, 1.0, 3.0)]
    exact = rr_exact_delta(0.7, 12, 1.5)
    for d, err in vals:
        assert exact <= d <= exact * (1 + 1e-8) + err + 1e-15


# ------------------------------------------------------------------------------ coverage
def test_coverage_and_reasons():
    assert covered(as_event({"mechanism": "shuffle", "n": 100, "epsilon0": 1.0, "output": "continuous"}))
    # the subsampled clone pair (bounds.md §9): a subsampled shuffle, and a round of shuffles at the
    # whole report's ε0
    assert covered({"mechanism": "subsampled_shuffle", "n": 1000, "k": 10, "epsilon0": 1.0})
    assert covered(
        {
            "mechanism": "subsampled",
            "n": 1000,
            "k": 10,
            "inner": [{"mechanism": "shuffle", "epsilon0": 1.0, "count": 2}],
        }
    )
    assert covered({"mechanism": "exponential", "epsilon": 1.0})
    for ev in (
        {"mechanism": "gaussian", "noise_multiplier": 1.0, "zeta": 1e-9},
        {"mechanism": "rdp_curve", "orders": [2], "rdp": [0.1]},
        {
            "mechanism": "subsampled",
            "n": 1000,
            "k": 10,
            "inner": [{"mechanism": "gaussian", "noise_multiplier": 2.0}],
        },
    ):
        assert not covered(as_event(ev))
        with pytest.raises(PldNotCovered, match=ev["mechanism"]):
            pld_epsilon([ev], 1e-6)


def test_pairs_are_certified_upper_curves():
    """Each closed-form curve is ≥ its 40-digit value (and within 1e-9 of it)."""
    eps = np.array([-3.0, -0.5, 0.0, 0.2, 1.0, 2.5, 6.0])
    cases = [
        (gaussian_pair(0.7), lambda e: gauss_exact_delta(0.7, e)),
        (randomized_response_pair(1.0, 1e-7), lambda e: rr_exact_delta(1.0, 1, e, 1e-7)),
    ]
    for pair, ref in cases:
        got = pair.delta(eps)
        for g, e in zip(got, eps):
            r = ref(float(e))
            assert g >= r and g <= r * (1 + 1e-9) + 1e-300
    clone = clone_pair_curve(15, 1.0)
    atoms = clone_atoms(15, 1.0)
    for e in (0.0, 0.4):
        assert clone.delta([e])[0] >= composed_exact_delta(atoms, 1, e)


def test_clone_pair_many_rounds_between_dp_accountings_plds():
    """n = 200, T = 50: never below dp_accounting's optimistic PLD of the exact pair, within 2% of
    its pessimistic one (both at Δ = 1e-4, built from the pair's 20,000 outcomes)."""
    n, eps0, count, eps = 200, 1.0, 50, 1.0
    atoms = clone_atoms(n, eps0)
    upper = {i: float(mp.log(p)) for i, (p, _) in enumerate(atoms)}
    lower = {i: float(mp.log(p) - lo) for i, (p, lo) in enumerate(atoms)}
    got = pld_delta([{"mechanism": "shuffle", "n": n, "epsilon0": eps0, "count": count}], eps).delta
    opt = dp_pld.from_two_probability_mass_functions(lower, upper, False, 1e-4).self_compose(count)
    pes = dp_pld.from_two_probability_mass_functions(lower, upper, True, 1e-4).self_compose(count)
    assert opt.get_delta_for_epsilon(eps) <= got <= pes.get_delta_for_epsilon(eps) * 1.02


def test_cached_and_cold_answers_agree():
    from accountant.store import clear_caches

    events = [{"mechanism": "shuffle", "n": 10**4, "epsilon0": 1.0, "count": 300}]
    first = pld_epsilon(events, 1e-9)
    again = pld_epsilon(events, 1e-9)
    clear_caches()
    cold = pld_epsilon(events, 1e-9)
    assert first == again == cold


def br_exact_delta(eps: float, tops: list[float], x: float) -> mp.mpf:
    """δ(x) of the product of the extremal ε-bounded-range pairs with top losses `tops` (each
    round: L ∈ {t − ε, t}, P(L = t) = (e^ε − e^t)/(e^ε − 1)), by enumeration."""
    e = mp.mpf(eps)
    dist = [(mp.mpf(1), mp.mpf(0))]
    for t in tops:
        t = mp.mpf(t)
        q = (mp.e**e - mp.e**t) / (mp.e**e - 1)
        dist = [(p * w, lo + dl) for p, lo in dist for w, dl in ((q, t), (1 - q, t - e))]
    return mp.fsum(p * max(mp.mpf(0), 1 - mp.e ** (mp.mpf(x) - lo)) for p, lo in dist)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    eps=st.floats(0.05, 3.0),
    fractions=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8),
    x=st.floats(-1.0, 3.0),
)
def test_exponential_mechanism_dominates_every_bounded_range_sequence(eps, fractions, x):
    """Any sequence of extremal ε-BR pairs (an adaptive exponential mechanism may pick a different
    one each round) stays below the route's δ; and the BR envelope is below ε-RR's."""
    got = pld_delta([{"mechanism": "exponential", "epsilon": eps, "count": len(fractions)}], max(x, 0.0))
    assert got.delta >= br_exact_delta(eps, [f * eps for f in fractions], max(x, 0.0))
    pair = as_event({"mechanism": "exponential", "epsilon": eps}).dominating_pair()
    grid = np.linspace(-eps - 0.5, eps + 0.5, 41)
    assert np.all(pair.delta(grid) <= randomized_response_pair(eps).delta(grid) * (1 + 1e-9))
    for f in (0.0, 0.3, 0.5, 0.9, 1.0):
        ref = [br_exact_delta(eps, [f * eps], float(g)) for g in grid]
        assert np.all(pair.delta(grid) >= np.array([float(r) for r in ref]) * (1 - 1e-12))
