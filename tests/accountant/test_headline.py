"""The thesis's headline compositions with the thesis bounds, and the
default (tightest valid) bounds never being looser than them."""

import pytest

import accountant as A

SHUFFLE = {"mechanism": "shuffle", "n": 10**6, "epsilon0": 0.5, "count": 10**5}
SUBSAMPLED = {"mechanism": "subsampled_shuffle", "n": 10**6, "k": 1000, "epsilon0": 2.0, "count": 10**5}


def _thesis_epsilon(ev, delta):
    from accountant.conversion import epsilon_from_rdp

    if ev["mechanism"] == "shuffle":
        curve = A.shuffle_rdp(ev["n"], ev["epsilon0"], A.DEFAULT_ORDERS, bound="thesis")
    else:
        curve = A.subsampled_shuffle_rdp(ev["n"], ev["k"], ev["epsilon0"], A.DEFAULT_ORDERS, bound="thesis")
    return epsilon_from_rdp(A.DEFAULT_ORDERS, curve * ev["count"], delta)[0]


def test_shuffle_headline_thesis_bounds():
    assert _thesis_epsilon(SHUFFLE, 1e-8) == pytest.approx(1.64, rel=0.01)


def test_subsampled_headline_thesis_bounds():
    assert _thesis_epsilon(SUBSAMPLED, 1e-8) == pytest.approx(1.04, rel=0.01)


@pytest.mark.parametrize("ev", [SHUFFLE, SUBSAMPLED])
def test_default_is_never_looser_than_the_thesis(ev):
    eps, order = A.epsilon([ev], 1e-8)
    assert eps <= _thesis_epsilon(ev, 1e-8) * (1 + 1e-12)
    assert 1 < order < 1e4


@pytest.mark.parametrize("ev,want", [(SHUFFLE, 1.08), (SUBSAMPLED, 0.53)])
def test_headline_with_the_tightest_valid_default(ev, want):
    """With the clone reduction (shuffle) and WBK19 over the clone curve (subsampled),
    the default bound gives ≈ 1.08 and ≈ 0.53 (within 1.5%)."""
    eps, _ = A.epsilon([ev], 1e-8)
    assert eps == pytest.approx(want, rel=0.015)
