"""Exact-divergence audit of the subsampled clone pair (bounds.md §9).

Real neighbouring pairs of the subsampled shuffle — k of n users sampled without replacement,
binary randomized response (D = 0…0, D′ = 0…01) and k-ary randomized response (u: 0 → 1, the
others holding 0 or a third symbol) — with their exact output laws (tests/helpers/exact.py), in
both directions, at real orders: the named bound ``subsampled_clones`` (the pair capped by
Lemma 2.1.1), the pair's own divergence, its hockey-stick divergence, and the default at real
orders, must never be below the exact divergences.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import accountant
from accountant import subsampled_clones as SC
from accountant.subsampled_clone_delta import subsampled_clone_pair

from ..helpers import exact as X
from ._check import Discrete, assert_sound
from .test_event_types import kary, rr

SET = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REAL_ORDERS = np.array([1.01, 1.25, 1.5, 2.0, 2.5, 3.3, 4.0, 6.7, 10.0, 17.5, 32.0, 77.7, 256.0])
REL = 1e-9


def _check(n: int, k: int, eps0: float, msg: X.MessagePair, what: str) -> None:
    pair = X.shuffled([msg], n, k)
    named = accountant.subsampled_shuffle_rdp(n, k, eps0, REAL_ORDERS, bound="subsampled_clones")
    own = SC.subsampled_clone_pair_rdp(n, k, eps0, REAL_ORDERS)
    hs = subsampled_clone_pair(n, k, eps0)
    for rev in (False, True):
        try:
            ex = X.renyi(pair, REAL_ORDERS, rev)
        except ValueError as err:
            raise AssertionError((n, k, eps0, what, rev)) from err
        for name, got in (("subsampled_clones", named), ("pair", own)):
            bad = got < ex * (1 - REL)
            assert not bad.any(), (what, name, rev, REAL_ORDERS[bad], got[bad], ex[bad])
        for eps in (0.0, 0.01, 0.1, 0.5, 1.0, eps0 / 2):
            exact = X.hockey_stick(pair, eps, rev)
            assert hs.delta(eps) >= exact * (1 - REL), (what, rev, eps, hs.delta(eps), exact)


@st.composite
def population(draw, max_k=5):
    k = draw(st.integers(1, max_k))
    n = draw(st.one_of(st.integers(k, 60), st.integers(k, 3000)))
    return n, k, draw(st.floats(0.01, 8.0))


@SET
@given(population())
@example((2, 2, 3.0))
@example((10, 5, 8.0))
@example((40, 1, 1.0))
@example((3000, 5, 0.05))
def test_binary_rr(setting):
    n, k, eps0 = setting
    _check(n, k, eps0, rr(eps0), "binary RR")


@SET
@given(population(max_k=4), st.integers(3, 5), st.sampled_from([0, 2]))
@example((4, 4, 2.0), 3, 2)
@example((60, 3, 6.0), 5, 0)
def test_kary_rr(setting, kk, others):
    n, k, eps0 = setting
    _check(n, k, eps0, kary(eps0, kk, others), f"{kk}-ary RR, others hold {others}")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(population(max_k=4), st.integers(1, 2))
def test_default_at_real_orders(setting, rounds):
    """The default (which now takes the pair) at real orders and its (ε, δ), binary RR."""
    n, k, eps0 = setting
    ev = {"mechanism": "subsampled_shuffle", "n": n, "k": k, "epsilon0": eps0, "count": rounds}
    assert_sound(
        [ev], Discrete(X.shuffled([rr(eps0)], n, k)), rounds, "default at real orders", orders=REAL_ORDERS
    )
