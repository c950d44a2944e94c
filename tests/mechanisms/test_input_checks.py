"""Input and report validation of the mechanisms: per-user means of every accepted input form against
a plain-Python reference, and every rejection of malformed reports with the message saying what to
change (the service turns these into 4xx details)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mechanisms
from mechanisms import InputError
from mechanisms.user_level import user_means

RNG = np.random.default_rng


def _reference_means(datasets: list[list[list[float]]]) -> list[list[float]]:
    """Each user's coordinate-wise mean, by math.fsum over its items."""
    return [[math.fsum(item[c] for item in ds) / len(ds) for c in range(len(ds[0]))] for ds in datasets]


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def datasets(draw: st.DrawFn, d: int) -> list[list[list[float]]]:
    users = draw(st.integers(1, 6))
    sizes = draw(st.lists(st.integers(1, 5), min_size=users, max_size=users))
    return [[draw(st.lists(finite, min_size=d, max_size=d)) for _ in range(m)] for m in sizes]


@settings(max_examples=60, deadline=None)
@given(datasets(1))
def test_scalar_user_means_of_lists_match_the_reference(data):
    expected = _reference_means(data)
    flat = [[item[0] for item in ds] for ds in data]  # one list of numbers per user (ragged or not)
    np.testing.assert_allclose(user_means(flat, 1, "t"), expected, rtol=1e-12, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 4).flatmap(datasets))
def test_vector_user_means_of_lists_match_the_reference(data):
    expected = _reference_means(data)
    got = user_means([np.array(ds) for ds in data], len(data[0][0]), "t")
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-9)


def test_user_means_array_forms():
    np.testing.assert_array_equal(user_means(2.5, 1, "t"), [[2.5]])
    np.testing.assert_array_equal(user_means([1.0, 3.0], 1, "t"), [[1.0], [3.0]])
    np.testing.assert_array_equal(user_means([[1.0, 3.0], [5.0, 9.0]], 1, "t"), [[2.0], [7.0]])
    np.testing.assert_array_equal(user_means([[1.0, 2.0], [3.0, 4.0]], 2, "t"), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(
        user_means([[[1.0, 2.0], [3.0, 6.0]], [[0.0, 0.0], [2.0, 2.0]]], 2, "t"), [[2.0, 4.0], [1.0, 1.0]]
    )
    # ragged: users with different numbers of items are averaged one at a time
    np.testing.assert_array_equal(user_means([[1.0], [2.0, 4.0, 6.0]], 1, "t"), [[1.0], [4.0]])


@pytest.mark.parametrize(
    ("x", "d", "message"),
    [
        ([], 1, "at least one user"),
        ([[1.0], []], 1, "non-empty list of numbers"),
        ([[[1.0, 2.0]], [[1.0, 2.0, 3.0]]], 2, "length-2 vectors"),
        ([[1.0], ["a", "b"]], 1, "user datasets must be numbers"),
        (["a", "b"], 1, "inputs must be numbers"),
        ([[1.0, math.inf], [2.0]], 1, "finite"),
        ([1.0, math.nan], 1, "finite inputs"),
        (np.zeros((2, 3, 4)), 1, r"\(users,\) means or \(users, samples\)"),
        (np.zeros((2, 3)), 2, r"got shape \(2, 3\)"),
        (np.zeros((2, 0, 2)), 2, "means or"),
    ],
)
def test_user_means_rejections(x, d, message):
    with pytest.raises(InputError, match=message):
        user_means(x, d, "t")


HR = mechanisms.get("hadamard_response", epsilon0=1.0, k=5)  # K = 8 groups
L1 = mechanisms.get("l1", epsilon0=1.0, d=4)  # D = 4
BV = mechanisms.get("binary_vector", epsilon0=1.0, d=6, s=2)  # blocks of a = 3


@pytest.mark.parametrize(
    ("mech", "reports", "message"),
    [
        (HR, [1, 0], "a mapping with arrays 'index' and 'bit'"),
        (HR, {"index": [1]}, "a mapping with arrays 'index' and 'bit'"),
        (HR, {"index": [1, 2], "bit": [1]}, "non-empty arrays of the same length"),
        (HR, {"index": [], "bit": []}, "non-empty arrays of the same length"),
        (HR, {"index": ["a"], "bit": [1]}, "must be integer arrays"),
        (HR, {"index": [1.5], "bit": [1]}, r"integers in 0\.\.7"),
        (HR, {"index": [8], "bit": [1]}, r"integers in 0\.\.7"),
        (HR, {"index": [-1], "bit": [1]}, r"integers in 0\.\.7"),
        (HR, {"index": [1], "bit": [2]}, "'bit' entries must be 0 or 1"),
        (L1, {"index": [1], "bit": [1]}, "arrays 'index' and 'sign'"),
        (L1, {"index": [1], "sign": ["x"]}, "must be numeric"),
        (L1, {"index": [4], "sign": [1]}, r"integers in 0\.\.3"),
        (L1, {"index": [1], "sign": [0]}, r"\+1 or -1"),
        (BV, {"index": [[0, 1, 2]], "bit": [[1, 1, 1]]}, r"shape \(reports, 2\), got \(1, 3\) and \(1, 3\)"),
        (BV, {"index": [0, 1], "bit": [1]}, r"got \(2,\) and \(1,\)"),
        (BV, {"index": [[0, 3]], "bit": [[1, 1]]}, r"integers in 0\.\.2"),
        (BV, {"index": [[0, 1]], "bit": [[1, 5]]}, "0 or 1"),
    ],
)
def test_malformed_reports_are_rejected_with_what_to_change(mech, reports, message):
    with pytest.raises(InputError, match=message):
        mech.estimate(reports)


def test_integral_float_indices_are_accepted_as_the_integers():
    as_ints = HR.estimate({"index": [0, 3, 7], "bit": [1, 0, 1]})
    as_floats = HR.estimate({"index": [0.0, 3.0, 7.0], "bit": [1.0, 0.0, 1.0]})
    np.testing.assert_array_equal(as_ints, as_floats)
    one = BV.estimate({"index": [0, 2], "bit": [1, 0]})  # one report may drop the batch axis
    np.testing.assert_array_equal(one, BV.estimate({"index": [[0, 2]], "bit": [[1, 0]]}))


def test_bits_inputs():
    assert BV.randomize([True, False, True, False, True, False], RNG(0))["bit"].shape == (1, 2)
    with pytest.raises(InputError, match=r"shape \(batch, 6\) \(got \(2, 5\)\)"):
        BV.randomize(np.zeros((2, 5), dtype=int), RNG(0))
    with pytest.raises(InputError, match="bits 0/1"):
        BV.randomize([["a"] * 6], RNG(0))
    with pytest.raises(InputError, match="found other values"):
        mechanisms.get("binary_rr", epsilon0=1.0).randomize([0, 1, 3], RNG(0))


def test_an_estimate_needs_reports():
    for mech in (mechanisms.get("binary_rr", epsilon0=1.0), mechanisms.get("laplace_mean", epsilon0=1.0)):
        with pytest.raises(InputError, match="at least one report"):
            mech.estimate([])
