"""``mechanisms.calibrate(..., solve_for=…)`` (issue 26, item 2): the knob by default, or — the
mechanism fully given — the most rounds, the fewest users or the largest sample per round.

Every answer is judged independently of the search: the accountant's ε of the mechanism's events at
the answer meets the target and one step further (count + 1, n − 1, k + 1) misses; where a
closed form or another calibration exists (pure-DP basic composition, ``accountant.calibrate``'s
closed-form count on the one event, the api.md Gaussian example) it is compared too."""

from __future__ import annotations

import math
import re
import time
import typing
from pathlib import Path

import pytest

import mechanisms
from mechanisms import AccountingCalibration, CalibrationTimeout, Mechanism, ParameterError

accountant = pytest.importorskip("accountant")


def rdp_epsilon(
    mech: Mechanism, delta: float, n: int | None = None, k: int | None = None, count: int = 1
) -> float:
    """ε the ledger charges for the mechanism's events (the RDP route), from the accountant."""
    return float(accountant.epsilon(mech.events(n=n, k=k, count=count), delta, accounting="rdp")[0])


STEP = {"count": 1, "n": -1, "k": 1}  # one step further: a round more, a user fewer, one more sampled


def assert_verified(
    r: AccountingCalibration, n: int | None = None, k: int | None = None, count: int = 1
) -> None:
    """The accounting found is the one asked for with the unknown filled in; at it the accountant's ε
    meets the target (and is the ε reported), one step further it misses — unless ``at_limit``."""
    asked = {"n": n, "k": k, "count": count, r.solve_for: r.value}
    assert (r.n, r.k, r.count) == (asked["n"], asked["k"], asked["count"])
    assert r.events() == r.mechanism.events(n=r.n, k=r.k, count=r.count)
    at = rdp_epsilon(r.mechanism, r.delta, r.n, r.k, r.count)
    assert at <= r.target_epsilon and r.epsilon == pytest.approx(at, rel=1e-12)
    if not r.at_limit:
        asked[r.solve_for] = r.value + STEP[r.solve_for]
        assert rdp_epsilon(r.mechanism, r.delta, asked["n"], asked["k"], asked["count"]) > r.target_epsilon


def test_binary_rr_most_rounds_is_verified_and_matches_the_accountants_closed_form():
    r = mechanisms.calibrate("binary_rr", epsilon=1.0, delta=1e-8, n=10**5, solve_for="count", epsilon0=1.0)
    assert isinstance(r, AccountingCalibration)
    assert (r.solve_for, r.direction, r.at_limit, r.mechanism.epsilon0) == ("count", "largest", False, 1.0)
    assert_verified(r, n=10**5)
    # one event: the accountant's own count calibration (its closed form, then verified) agrees
    one = r.mechanism.events(n=10**5)[0].to_dict()
    del one["count"]
    assert accountant.calibrate(one, "count", 1.0, 1e-8, accounting="rdp").value == r.value


def test_gaussian_with_its_noise_fixed_most_rounds():
    r = mechanisms.calibrate("gaussian", epsilon=2.0, delta=1e-6, solve_for="count", noise_multiplier=10.0)
    # docs/api.md: judged by the RDP route alone, this target affords 17 rounds at noise multiplier 10
    assert r.value == 17 and r.mechanism.params["noise_multiplier"] == 10.0
    assert_verified(r)


def test_a_multi_message_mechanism_solves_over_all_its_events():
    """linf with m·s = 4 separately shuffled messages: four events composed (no single event to hand
    to accountant.calibrate)."""
    r = mechanisms.calibrate(
        "linf", epsilon=2.0, delta=1e-6, n=10**4, solve_for="count", epsilon0=2.0, d=8, m=2, s=2
    )
    assert len(r.events()) == 4 and r.mechanism.params["epsilon0"] == 2.0
    assert_verified(r, n=10**4)


def test_fewest_users_with_and_without_sampling():
    r = mechanisms.calibrate("binary_rr", epsilon=1.0, delta=1e-8, count=100, solve_for="n", epsilon0=1.0)
    assert (r.solve_for, r.direction, r.at_limit) == ("n", "smallest", False)
    assert_verified(r, count=100)
    # k = 1000 sampled per round: n ≥ k, and n − 1 misses
    s = mechanisms.calibrate(
        "binary_rr", epsilon=1.0, delta=1e-8, k=1000, count=100, solve_for="n", epsilon0=1.0
    )
    assert s.value > 1000 and not s.at_limit
    assert_verified(s, k=1000, count=100)


def test_largest_sample_per_round():
    r = mechanisms.calibrate(
        "binary_rr", epsilon=1.0, delta=1e-8, n=10**5, count=1000, solve_for="k", epsilon0=3.0
    )
    assert (r.solve_for, r.direction, r.at_limit) == ("k", "largest", False) and 1 < r.value < 10**5
    assert_verified(r, n=10**5, count=1000)


def test_at_the_end_of_the_domain():
    """k = n meets the target: nothing beyond to try, so ``at_limit``; likewise 10¹² rounds."""
    r = mechanisms.calibrate(
        "binary_rr", epsilon=1.0, delta=1e-8, n=10**5, count=100, solve_for="k", epsilon0=1.0
    )
    assert r.value == 10**5 and r.at_limit
    assert_verified(r, n=10**5, count=100)
    g = mechanisms.calibrate("gaussian", epsilon=50.0, delta=1e-6, solve_for="count", noise_multiplier=1e6)
    assert g.value == 10**12 and g.at_limit
    assert_verified(g)


@pytest.mark.parametrize(
    "name,params",
    [
        ("private_range", {"epsilon": 0.1, "tau": 1, "B": 10}),
        ("winsorized_mean", {"epsilon": 0.2, "tau": 1, "B": 10}),
    ],
)
def test_central_user_level_mechanisms_solve_the_count(name, params):
    """Pure ε-DP per use (``private_range``: the exponential mechanism at ε; ``winsorized_mean``: the
    exponential mechanism and a Laplace release at ε/2 each): basic composition affords ⌊target/ε⌋
    uses, a lower bound of the accountant's answer."""
    r = mechanisms.calibrate(name, epsilon=2.0, delta=1e-6, solve_for="count", mechanism_params=params)
    assert r.value >= math.floor(2.0 / params["epsilon"] + 1e-9)
    assert_verified(r)


def test_outlier_removal_count_with_an_additive_delta():
    """Its events carry ζ per use, so the count also spends δ; still a verified crossing."""
    base = mechanisms.calibrate("outlier_removal_mean", epsilon=1.0, delta=1e-6, tau=1, n=10_000, T=5)
    r = mechanisms.calibrate(
        "outlier_removal_mean", epsilon=2.0, delta=1e-6, solve_for="count", mechanism_params=dict(base.params)
    )
    assert r.value >= 1
    assert_verified(r)


def test_the_default_is_the_knob_unchanged():
    default = mechanisms.calibrate("binary_rr", epsilon=1.0, delta=1e-6, n=1000, count=10)
    explicit = mechanisms.calibrate(
        "binary_rr", epsilon=1.0, delta=1e-6, n=1000, count=10, solve_for="epsilon0"
    )
    assert isinstance(default, Mechanism) and isinstance(explicit, Mechanism)
    assert default.params == explicit.params
    g = mechanisms.calibrate("gaussian", epsilon=2.0, delta=1e-5, count=50, solve_for="noise_multiplier")
    assert isinstance(g, Mechanism)
    assert g.params == mechanisms.calibrate("gaussian", epsilon=2.0, delta=1e-5, count=50).params
    assert rdp_epsilon(g, 1e-5, count=50) <= 2.0


def test_choices_per_mechanism_and_the_typed_knobs():
    assert mechanisms.solve_for_choices("binary_rr") == ("epsilon0", "count", "n", "k")
    assert mechanisms.solve_for_choices("gaussian") == ("noise_multiplier", "count")
    assert mechanisms.solve_for_choices("laplace") == ("scale", "count")
    assert mechanisms.solve_for_choices("outlier_removal_mean") == ("sigma", "count")
    from mechanisms.calibration import Knob

    assert {mechanisms.knob_of(n) for n in mechanisms.names()} <= set(typing.get_args(Knob))


def test_invalid_solve_for_names_the_choices():
    with pytest.raises(
        ParameterError, match=r"\['epsilon0', 'count', 'n', 'k'\] for binary_rr \(got 'epsilon'\)"
    ):
        mechanisms.calibrate("binary_rr", epsilon=1.0, delta=1e-6, n=100, solve_for="epsilon")
    with pytest.raises(
        ParameterError, match=r"\['noise_multiplier', 'count'\] for gaussian.*central release"
    ):
        mechanisms.calibrate("gaussian", epsilon=1.0, delta=1e-6, solve_for="n", noise_multiplier=1.0)
    with pytest.raises(ParameterError, match=r"\['epsilon', 'count'\] for winsorized_mean"):
        mechanisms.calibrate("winsorized_mean", epsilon=1.0, delta=1e-6, solve_for="k")


def test_what_an_accounting_solve_needs():
    with pytest.raises(ParameterError, match="leave count out"):
        mechanisms.calibrate(
            "binary_rr", epsilon=1.0, delta=1e-6, n=100, count=3, solve_for="count", epsilon0=1.0
        )
    with pytest.raises(ParameterError, match="leave n out"):
        mechanisms.calibrate("binary_rr", epsilon=1.0, delta=1e-6, n=100, solve_for="n", epsilon0=1.0)
    with pytest.raises(ParameterError, match="needs the population n"):
        mechanisms.calibrate("binary_rr", epsilon=1.0, delta=1e-6, solve_for="k", epsilon0=1.0)
    with pytest.raises(ParameterError, match="needs parameter 'epsilon0'"):  # the mechanism fully given
        mechanisms.calibrate("binary_rr", epsilon=1.0, delta=1e-6, n=100, solve_for="count")
    with pytest.raises(ParameterError, match="leave k out"):  # a central release takes no sample
        mechanisms.calibrate(
            "gaussian", epsilon=1.0, delta=1e-6, k=10, solve_for="count", noise_multiplier=1.0
        )


def test_infeasible_and_deadline():
    # ε0 = 1 over 10 users: one round already costs ε ≈ 1 (the local guarantee)
    with pytest.raises(
        ParameterError, match=r"no count meets epsilon = 0.001.*\(n = 10\).*lowest epsilon found is 1"
    ):
        mechanisms.calibrate("binary_rr", epsilon=1e-3, delta=1e-9, n=10, solve_for="count", epsilon0=1.0)
    assert math.isclose(rdp_epsilon(mechanisms.get("binary_rr", epsilon0=1.0), 1e-9, n=10), 1.0, rel_tol=1e-3)
    with pytest.raises(CalibrationTimeout):
        mechanisms.calibrate(
            "binary_rr",
            epsilon=1.0,
            delta=1e-6,
            n=1000,
            solve_for="count",
            epsilon0=1.0,
            deadline=time.monotonic() - 1,
        )


def test_the_mechanisms_md_example_says_what_it_gives():
    """docs/mechanisms.md's calibration block runs, and each ``expression  # shown`` line shows what
    the expression gives (``…`` standing for more digits; the text after ": " is prose)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "mechanisms.md").read_text()
    section = text[text.index("## Calibration: `mechanisms.calibrate`") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    ns: dict[str, object] = {}
    shown = 0
    for line in code.group(1).splitlines():
        expr, _, comment = line.partition("  # ")
        if not comment:
            exec(line, ns)
            continue
        want = comment.split(": ")[0]
        got = repr(eval(expr, ns))
        assert re.fullmatch(".*".join(re.escape(p) for p in want.split("…")), got), (line, got)
        shown += 1
    assert shown == 3
    r = ns["r"]
    assert isinstance(r, AccountingCalibration)
    assert f"{r.value:,} rounds; {r.value + 1:,} would exceed" in code.group(1)
