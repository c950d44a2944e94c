"""Calibration of any field the event declarations mark calibratable (issue 26, item 2): the noise
of a Gaussian or Laplace, the ε of a pure-DP release, and fields of a sampled event's inner events.

Every expected value here comes from outside the calibration: the exact (ε, δ) curves of the
Gaussian (Balle–Wang 2018, Thm 8, in mpmath), the Laplace and randomized response (closed forms),
dp_accounting's own ``calibrate_dp_mechanism``, and the accountant's ε recomputed at the answer and
one nudge (or 1 %) beyond it.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest

import accountant as A

HEADLINE = {
    "mechanism": "subsampled",
    "n": 10**6,
    "k": 10**4,
    "count": 1000,
    "inner": [{"mechanism": "gaussian"}],
}


def _eps(event: dict, delta: float) -> float:
    return A.epsilon_routed([event], delta, accounting="rdp").epsilon


def _routed(event: dict, delta: float, accounting: str) -> float:
    return A.epsilon_routed([event], delta, accounting=accounting).epsilon


def _gaussian_delta(mu: mp.mpf, eps: float) -> mp.mpf:
    """Exact δ(ε) of the Gaussian mechanism with μ = Δ/σ (Balle–Wang 2018, Thm 8)."""
    return mp.ncdf(mu / 2 - eps / mu) - mp.e**eps * mp.ncdf(-mu / 2 - eps / mu)


def _exact_noise(count: int, t: float, d: float) -> float:
    """The smallest noise multiplier for which ``count`` Gaussians are (t, d)-DP, by bisection in
    mpmath (the composition of Gaussians is one Gaussian with μ = √count / z)."""
    with mp.workdps(40):
        lo, hi = mp.mpf("0.01"), mp.mpf(10**4)
        for _ in range(200):
            mid = mp.sqrt(lo * hi)
            if _gaussian_delta(mp.sqrt(count) / mid, t) > d:
                lo = mid
            else:
                hi = mid
        return float(hi)


@pytest.mark.parametrize("count,t,d", [(1, 1.0, 1e-5), (100, 1.0, 1e-6), (10, 0.5, 1e-8)])
@pytest.mark.parametrize("accounting", ["best", "rdp"])
def test_gaussian_noise_multiplier_is_sound_tight_and_verified(count, t, d, accounting):
    r = A.calibrate(
        {"mechanism": "gaussian", "count": count}, "noise_multiplier", t, d, accounting=accounting
    )
    assert r.solve_for == "noise_multiplier" and r.direction == "smallest"
    exact = _exact_noise(count, t, d)
    assert r.value >= exact * (1 - 1e-9), "below the exact optimum: an under-report"
    assert r.value <= exact * (1.001 if accounting == "best" else 1.1)  # PLD is tight, RDP within 10 %
    ev = r.event
    assert _routed(ev, d, accounting) == r.epsilon <= t
    nudged = {**ev, "noise_multiplier": r.value / (1 + 1e-5)}
    assert _routed(nudged, d, accounting) > t


@pytest.mark.parametrize("t,d", [(1.0, 1e-5), (0.3, 1e-3)])
def test_laplace_scale_against_the_exact_curve(t, d):
    r = A.calibrate({"mechanism": "laplace"}, "scale", t, d)
    # Laplace with sensitivity 1 and scale b: δ(ε) = 1 − exp((ε − 1/b)/2) for ε < 1/b
    exact = 1.0 / (t - 2.0 * math.log1p(-d))
    assert exact * (1 - 1e-9) <= r.value <= exact * 1.001
    assert r.value <= 1.0 / t  # never more noise than the pure-DP answer
    assert _routed(r.event, d, "best") <= t < _routed({**r.event, "scale": r.value / (1 + 1e-5)}, d, "best")


@pytest.mark.parametrize("mechanism", ["pure_dp", "above_threshold"])
def test_pure_epsilon_against_randomized_response(mechanism):
    t, d = 1.0, 1e-4
    r = A.calibrate({"mechanism": mechanism}, "epsilon", t, d)
    assert r.direction == "largest"
    # an ε0-DP release is dominated by ε0-randomized response: δ(t) = (e^{ε0} − e^t)/(1 + e^{ε0})
    exact = math.log((math.exp(t) + d) / (1 - d))
    assert exact * (1 - 1e-3) <= r.value <= exact * (1 + 1e-9)
    assert _routed({**r.event, "epsilon": r.value * (1 + 1e-5)}, d, "best") > t


def test_exponential_epsilon_is_verified_and_above_the_pure_answer():
    r = A.calibrate({"mechanism": "exponential", "count": 50}, "epsilon", 1.0, 1e-6)
    pure = A.calibrate({"mechanism": "pure_dp", "count": 50}, "epsilon", 1.0, 1e-6)
    assert r.value > pure.value  # bounded range is a stronger property than ε-DP
    assert (
        _routed(r.event, 1e-6, "best")
        <= 1.0
        < _routed({**r.event, "epsilon": r.value * (1 + 1e-5)}, 1e-6, "best")
    )


def test_headline_noise_multiplier_matches_dp_accounting():
    """ "Which noise multiplier gives ε = 2 at δ = 1e-5 over 1,000 rounds sampling 10⁴ of 10⁶
    clients": one call, against dp_accounting's calibration of the same event (its RDP accountant,
    REPLACE_ONE, WBK19 Thm 27 for sampling without replacement)."""
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event as de
    from dp_accounting.rdp import RdpAccountant

    relation = dpa.NeighboringRelation.REPLACE_ONE

    def make(z: float):
        return de.SelfComposedDpEvent(
            de.SampledWithoutReplacementDpEvent(10**6, 10**4, de.GaussianDpEvent(z)), 1000
        )

    def theirs_eps(z: float) -> float:
        acc = RdpAccountant(neighboring_relation=relation)
        acc.compose(make(z))
        return acc.get_epsilon(1e-5)

    r = A.calibrate(HEADLINE, "noise_multiplier", 2.0, 1e-5, accounting="rdp")
    assert r.solve_for == "inner[0].noise_multiplier" and r.direction == "smallest"
    theirs = dpa.calibrate_dp_mechanism(
        lambda: RdpAccountant(neighboring_relation=relation),
        make,
        2.0,
        1e-5,
        bracket_interval=dpa.ExplicitBracketInterval(0.3, 10.0),
        tol=1e-7,
    )
    assert r.value <= theirs * (1 + 1e-5), (r.value, theirs)  # same theorem: ours is no worse
    z = r.event["inner"][0]["noise_multiplier"]
    assert z == r.value
    assert _eps(r.event, 1e-5) == r.epsilon <= 2.0
    assert theirs_eps(z) <= 2.0  # dp_accounting certifies our answer too
    lower = {**r.event, "inner": [{"mechanism": "gaussian", "noise_multiplier": 0.99 * z}]}
    assert _eps(lower, 1e-5) > 2.0  # optimal: 1 % less noise misses


def test_inner_count_stays_an_integer_and_is_the_most_rounds():
    ev = {
        "mechanism": "subsampled",
        "n": 10**5,
        "k": 10**3,
        "count": 100,
        "inner": [{"mechanism": "gaussian", "noise_multiplier": 4.0}],
    }
    r = A.calibrate(ev, "inner[0].count", 1.0, 1e-6, accounting="rdp")
    assert isinstance(r.value, int) and r.event["inner"][0]["count"] == r.value >= 1
    more = {**r.event, "inner": [{**r.event["inner"][0], "count": r.value + 1}]}
    assert _eps(r.event, 1e-6) <= 1.0 < _eps(more, 1e-6)


def test_top_level_names_win_and_paths_pick_one_inner_event():
    two = {
        **HEADLINE,
        "count": 10,
        "inner": [{"mechanism": "gaussian", "noise_multiplier": 3.0}, {"mechanism": "gaussian"}],
    }
    r = A.calibrate(two, "noise_multiplier", 1.0, 1e-5, accounting="rdp")  # the one left out
    assert r.solve_for == "inner[1].noise_multiplier" and r.event["inner"][0]["noise_multiplier"] == 3.0
    fixed = {k: v for k, v in HEADLINE.items() if k != "count"}
    top = A.calibrate(
        {**fixed, "inner": [{"mechanism": "gaussian", "noise_multiplier": 2.0}]}, "count", 2.0, 1e-5
    )
    assert top.solve_for == "count"  # the sampled event's own count, not the inner one's


@pytest.mark.parametrize(
    "event,solve_for,match",
    [
        (
            {**HEADLINE, "inner": [{"mechanism": "gaussian"}, {"mechanism": "gaussian"}]},
            "noise_multiplier",
            r"ambiguous.*'inner\[0\]\.noise_multiplier', 'inner\[1\]\.noise_multiplier'",
        ),
        (
            HEADLINE,
            "inner[3].noise_multiplier",
            r"inner fields calibration can solve for here: \['inner\[0\]",
        ),
        (HEADLINE, "inner[0].scale", "names no calibratable field"),
        (
            {**HEADLINE, "inner": [{"mechanism": "laplace", "scale": 1.0}]},
            "noise_multiplier",
            "applies to mechanism",
        ),
        (
            {**HEADLINE, "inner": [{"mechanism": "gaussian", "noise_multiplier": 1.0}]},
            "noise_multiplier",
            r"must leave out 'inner\[0\]\.noise_multiplier'",
        ),
        (
            {**HEADLINE, "inner": [{"mechanism": "shuffle", "epsilon0": 1.0}]},
            "inner[0].n",
            "names no calibratable",
        ),
        ({"mechanism": "gaussian"}, "inner[0].noise_multiplier", "names no calibratable"),
    ],
)
def test_what_cannot_be_solved_for_says_what_to_change(event, solve_for, match):
    with pytest.raises(A.InvalidParameter if "leave out" not in match else A.InvalidEvent, match=match):
        A.calibrate(event, solve_for, 1.0, 1e-5)


def test_every_declared_direction_is_what_the_curve_does():
    """The declared direction of each calibratable field (its ``Calibrate`` marker) is checked on
    the event's own ε: doubling a field declared increasing raises ε, declared decreasing lowers it."""
    base = {
        "gaussian": {"noise_multiplier": 2.0, "count": 4},
        "laplace": {"scale": 2.0, "count": 4},
        "pure_dp": {"epsilon": 0.5, "count": 4},
        "exponential": {"epsilon": 0.5, "count": 4},
        "above_threshold": {"epsilon": 0.5, "count": 4},
    }
    for mech, fields in base.items():
        for name, s in A.EVENT_TYPES[mech].specs().items():
            if not s.solvable:
                continue
            ev = {"mechanism": mech, **fields}
            up = {**ev, name: fields[name] * 2}
            grows = _routed(up, 1e-6, "best") > _routed(ev, 1e-6, "best")
            assert grows == s.calibrate.increasing, (mech, name)
