"""Exact-divergence audit of the randomized-response events (``shuffle_rr``,
``subsampled_shuffle_rr``; bounds.md §12) — and of the generic ``shuffle`` event — when the other
users hold DIFFERENT inputs, in both directions.

All other users holding the same input is not the worst case of shuffled randomized response:
for (ε, δ) a mix can be worse (:func:`test_mixed_inputs_can_be_worse_than_equal_ones`), so the
audit draws the split of the other users' inputs too. See _check.py for the assertions.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from ..helpers import exact as X
from ._check import Discrete, assert_sound

SET = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
eps0s = st.floats(0.01, 8.0)


def kary_laws(eps: float, k: int) -> list[np.ndarray]:
    """k-ary randomized response's report law for each input x (keep w.p. e^ε/(e^ε+k−1))."""
    e = math.exp(eps)
    out = []
    for x in range(k):
        v = np.full(k, 1.0 / (e + k - 1))
        v[x] = e / (e + k - 1)
        out.append(v)
    return out


def binary_counts_pair(n: int, ones: int, eps: float, floor: float = 0.0) -> X.ShuffledPair:
    """Binary RR over n users, ``ones`` of the n − 1 others holding 1, changed user 0 → 1: the law
    of the number of reported ones, by scipy's binomial pmfs (an independent construction).
    ``floor``: outcomes where either law is below it are dropped from both (at large n the far
    tails underflow unevenly in floating point; the mass dropped is below n·floor)."""
    r = 1.0 / (math.exp(eps) + 1.0)
    zeros = n - 1 - ones
    noise = np.convolve(
        binom.pmf(np.arange(zeros + 1), zeros, r), binom.pmf(np.arange(ones + 1), ones, 1 - r)
    )
    p, q = np.zeros(n + 1), np.zeros(n + 1)
    p[1:] += (1 - r) * noise
    p[:-1] += r * noise
    q[1:] += r * noise
    q[:-1] += (1 - r) * noise
    if floor > 0:
        tiny = (p < floor) | (q < floor)
        p[tiny], q[tiny] = 0.0, 0.0
    return X.ShuffledPair.from_laws(p, q)


def test_mixed_helper_agrees_with_independent_constructions():
    eps = 1.3
    # all others equal: the histogram helper of the other audits
    a = X.mixed_shuffle(kary_laws(eps, 2), [7, 0], 0, 1)
    b = X.shuffled([X.rr_message(1.0 / (1.0 + math.exp(eps)))], 8)
    assert np.allclose(X.renyi(a, [2.0, 5.0], False), X.renyi(b, [2.0, 5.0], False), rtol=1e-10)
    # mixed: binomial convolution
    for ones in (1, 3, 6):
        c = X.mixed_shuffle(kary_laws(eps, 2), [7 - ones, ones], 0, 1)
        d = binary_counts_pair(8, ones, eps)
        for rev in (False, True):
            assert np.allclose(X.renyi(c, [2.0, 7.5], rev), X.renyi(d, [2.0, 7.5], rev), rtol=1e-10)
            assert math.isclose(X.hockey_stick(c, 0.4, rev), X.hockey_stick(d, 0.4, rev), rel_tol=1e-10)


def test_mixed_inputs_can_be_worse_than_equal_ones():
    """n = 12, ε0 = 1, ε = 0.3: 10 of the 11 others holding 1 gives a δ 7.6% above every other user
    holding the same input (either direction) — the worst case is not the 'all others hold 0' pair."""
    eps0, eps = 1.0, 0.3
    same = max(
        X.hockey_stick(binary_counts_pair(12, ones, eps0), eps, rev)
        for ones in (0, 11)
        for rev in (False, True)
    )
    mixed = X.hockey_stick(binary_counts_pair(12, 10, eps0), eps, False)
    assert mixed > 1.07 * same


@st.composite
def split(draw, max_n=40):
    n = draw(st.integers(2, max_n))
    return n, draw(st.integers(0, n - 1))


@SET
@given(split(), eps0s, st.integers(1, 2), st.sampled_from(["shuffle_rr", "shuffle"]))
def test_shuffled_binary_rr_mixed_inputs(setting, eps0, rounds, mechanism):
    n, ones = setting
    ev = {"mechanism": mechanism, "n": n, "epsilon0": eps0, "count": rounds}
    pair = X.mixed_shuffle(kary_laws(eps0, 2), [n - 1 - ones, ones], 0, 1)
    assert_sound([ev], Discrete(pair), rounds, f"{mechanism}, binary RR, {ones} of {n - 1} others hold 1")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(257, 420), st.floats(0.0, 1.0), eps0s)
def test_shuffled_binary_rr_beyond_every_split_exactly(n, share, eps0):
    """Above 256 users the binary ``shuffle_rr`` curve covers the splits by representatives
    (bounds.md §13, the revealed blanket count): the audit at a drawn split, both directions."""
    ones = min(n - 1, int(share * n))
    ev = {"mechanism": "shuffle_rr", "n": n, "epsilon0": eps0, "count": 1}
    pair = binary_counts_pair(n, ones, eps0, floor=1e-280)
    assert_sound([ev], Discrete(pair), 1, f"shuffle_rr, binary RR, {ones} of {n - 1} others hold 1")


@SET
@given(st.integers(2, 7), eps0s, st.integers(3, 4), st.data())
def test_shuffled_kary_rr_mixed_inputs(n, eps0, kk, data):
    counts = [0] * kk
    for _ in range(n - 1):
        counts[data.draw(st.integers(0, kk - 1))] += 1
    user, user_prime = data.draw(st.sampled_from([(0, 1), (1, 0), (0, 2)]))
    ev = {"mechanism": "shuffle_rr", "n": n, "epsilon0": eps0, "categories": kk, "count": 1}
    pair = X.mixed_shuffle(kary_laws(eps0, kk), counts, user, user_prime)
    assert_sound([ev], Discrete(pair), 1, f"shuffle_rr, {kk}-ary RR, others {counts}")


@SET
@given(split(max_n=24), st.integers(1, 5), eps0s, st.integers(1, 2))
def test_subsampled_binary_rr_mixed_inputs(setting, k, eps0, rounds):
    n, ones = setting
    k = min(k, n)
    ev = {"mechanism": "subsampled_shuffle_rr", "n": n, "k": k, "epsilon0": eps0, "count": rounds}
    pair = X.mixed_shuffle(kary_laws(eps0, 2), [n - 1 - ones, ones], 0, 1, k=k)
    assert_sound([ev], Discrete(pair), rounds, f"subsampled_shuffle_rr, {ones} of {n - 1} others hold 1")


@SET
@given(st.integers(2, 6), st.integers(1, 3), eps0s, st.integers(3, 4), st.data())
def test_subsampled_kary_rr_mixed_inputs(n, k, eps0, kk, data):
    k = min(k, n)
    counts = [0] * kk
    for _ in range(n - 1):
        counts[data.draw(st.integers(0, kk - 1))] += 1
    ev = {
        "mechanism": "subsampled_shuffle_rr",
        "n": n,
        "k": k,
        "epsilon0": eps0,
        "categories": kk,
        "count": 1,
    }
    pair = X.mixed_shuffle(kary_laws(eps0, kk), counts, 0, 1, k=k)
    assert_sound([ev], Discrete(pair), 1, f"subsampled_shuffle_rr, {kk}-ary RR, others {counts}")
