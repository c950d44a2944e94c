"""Exact-divergence audit of every accountant event type on its own.

Each event is compared with the exact output laws of a real neighbouring pair (replace-one) of a
release that the event describes: if the accountant's curve or (ε, δ) is below the exact
divergence of that pair, the accountant under-reports. See _check.py for the assertions.

* ``shuffle`` — n users, binary randomized response at ε0 (bounds.md §2's pair: D = 0…0,
  D' = 0…01), both output kinds (a discrete randomizer is also an ε0-LDP randomizer); and k-ary RR.
* ``subsampled_shuffle`` — the same with k of n users sampled without replacement per round.
* ``pure_dp`` — randomized response at ε (binary and k-ary), an ε-DP release.
* ``gaussian`` / ``laplace`` — the central mechanisms at sensitivity Δ.
* ``subsampled`` (nested: one sample shared by several shuffled messages) — when the accountant has it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import accountant

from ..helpers import exact as X
from ._check import Discrete, assert_sound

SET = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])

eps0s = st.floats(0.01, 8.0)


def rr(eps: float) -> X.MessagePair:
    return X.rr_message(1.0 / (1.0 + math.exp(eps)))


def kary(eps: float, k: int, others: int) -> X.MessagePair:
    e = math.exp(eps)

    def law(x):
        v = np.full(k, 1.0 / (e + k - 1))
        v[x] = e / (e + k - 1)
        return v

    return X.MessagePair(others=law(others), user=law(0), user_prime=law(1))


@st.composite
def shuffle_setting(draw, max_n=3000):
    rounds = draw(st.integers(1, 3))
    n = draw(st.integers(1, max_n if rounds < 3 else 300))
    return n, draw(eps0s), rounds


@SET
@given(shuffle_setting(), st.sampled_from(["discrete", "continuous"]))
def test_shuffle_binary_rr(setting, output):
    n, eps0, rounds = setting
    ev = {"mechanism": "shuffle", "n": n, "epsilon0": eps0, "count": rounds}
    if output == "continuous":
        ev["output"] = "continuous"
    assert_sound([ev], Discrete(X.shuffled([rr(eps0)], n)), rounds, "shuffle, binary RR pair")


@SET
@given(st.integers(1, 40), eps0s, st.integers(3, 5), st.sampled_from([0, 2]), st.integers(1, 2))
def test_shuffle_kary_rr(n, eps0, k, others, rounds):
    ev = {"mechanism": "shuffle", "n": n, "epsilon0": eps0, "count": rounds}
    assert_sound(
        [ev],
        Discrete(X.shuffled([kary(eps0, k, others)], n)),
        rounds,
        f"shuffle, {k}-ary RR pair (others hold {others})",
    )


@st.composite
def sampled_setting(draw, max_k=5):
    k = draw(st.integers(1, max_k))
    n = draw(st.one_of(st.integers(k, 60), st.integers(k, 3000)))
    return n, k, draw(eps0s), draw(st.integers(1, 3))


@SET
@given(sampled_setting())
def test_subsampled_shuffle_binary_rr(setting):
    n, k, eps0, rounds = setting
    ev = {"mechanism": "subsampled_shuffle", "n": n, "k": k, "epsilon0": eps0, "count": rounds}
    assert_sound([ev], Discrete(X.shuffled([rr(eps0)], n, k)), rounds, "subsampled shuffle, binary RR pair")


@SET
@given(sampled_setting(max_k=4), st.integers(3, 5), st.sampled_from([0, 2]))
def test_subsampled_shuffle_kary_rr(setting, kk, others):
    n, k, eps0, rounds = setting
    ev = {"mechanism": "subsampled_shuffle", "n": n, "k": k, "epsilon0": eps0, "count": rounds}
    assert_sound(
        [ev],
        Discrete(X.shuffled([kary(eps0, kk, others)], n, k)),
        rounds,
        f"subsampled shuffle, {kk}-ary RR pair",
    )


@SET
@given(st.floats(0.001, 20.0), st.integers(1, 3), st.integers(2, 6))
def test_pure_dp_is_randomized_response(eps, rounds, kk):
    """Binary RR at ε is exactly the accountant's pure-DP curve (tight: only float rounding is allowed)."""
    ev = {"mechanism": "pure_dp", "epsilon": eps, "count": rounds}
    assert_sound([ev], Discrete(X.shuffled([rr(eps)], 1)), rounds, "pure_dp, binary RR")
    assert_sound([ev], Discrete(X.shuffled([kary(eps, kk, 0)], 1)), rounds, f"pure_dp, {kk}-ary RR")


@SET
@given(st.floats(0.3, 50.0), st.integers(1, 1000))
def test_gaussian(noise_multiplier, rounds):
    """N(0, σ²) vs N(Δ, σ²), σ = noise_multiplier·Δ; T releases compose to μ = √T/noise_multiplier."""
    ev = {"mechanism": "gaussian", "noise_multiplier": noise_multiplier, "count": rounds}
    assert_sound([ev], X.Gaussian(1.0 / noise_multiplier), rounds, "gaussian")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.05, 50.0), st.integers(1, 2))
def test_laplace(scale, rounds):
    """Lap(0, b) vs Lap(Δ, b), b = scale·Δ: Rényi by quadrature; δ exact (one release) or of the
    finely binned output (two releases; a lower bound of the true δ by data processing)."""
    ev = {"mechanism": "laplace", "scale": scale, "count": rounds}
    assert_sound([ev], X.Laplace(1.0 / scale), rounds, "laplace")


def _nested_available() -> bool:
    return "subsampled" in accountant.EVENT_TYPES


@pytest.mark.skipif(
    not _nested_available(),
    reason="accountant.EVENT_TYPES has no nested 'subsampled' event (several shuffled messages "
    "sharing one sample of k users) yet",
)
@SET
@given(sampled_setting(max_k=4), st.lists(st.floats(0.05, 6.0), min_size=1, max_size=3))
def test_nested_subsampled_several_messages(setting, message_eps):
    """One sample of k users per round, each sampled user sends one binary-RR message per inner
    shuffle event (one shuffler each): the exact law is the mixture over u's inclusion of the product
    over shufflers."""
    n, k, _, rounds = setting
    ev = {
        "mechanism": "subsampled",
        "n": n,
        "k": k,
        "count": rounds,
        "inner": [{"mechanism": "shuffle", "n": k, "epsilon0": e} for e in message_eps],
    }
    assert_sound(
        [ev],
        Discrete(X.shuffled([rr(e) for e in message_eps], n, k)),
        rounds,
        "nested subsampled, binary RR messages",
    )
