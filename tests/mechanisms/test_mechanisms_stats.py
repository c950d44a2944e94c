"""Unbiasedness and the closed-form MSE, by simulation with fixed seeds.

Each case runs T independent trials of n clients (one big vectorised randomize, then one estimate per
trial). With e_t = estimate_t − truth:

- unbiasedness: every coordinate's mean error is within 5 standard errors (sd/√T, CLT) of 0;
- MSE: the mean of ‖e_t‖² is within 5 standard errors of ``mech.mse(x=inputs)`` (the exact closed form
  for those inputs), and ``mech.mse(n)`` (the supremum) is never below it.
"""

from __future__ import annotations

import numpy as np
import pytest

import mechanisms

Z = 5.0


def slice_reports(rep, sl):
    if isinstance(rep, dict):
        return {k: slice_reports(v, sl) for k, v in rep.items()}
    return rep[sl]


def simulate(mech, x, truth, trials, seed):
    rng = np.random.default_rng(seed)
    n = len(x)
    if mech.kind == "central":  # one release per trial
        return np.array([np.atleast_1d(mech.estimate(mech.randomize(x, rng))) - truth for _ in range(trials)])
    big = np.concatenate([x] * trials)
    rep = mech.randomize(big, rng)
    errs = np.array(
        [
            np.atleast_1d(mech.estimate(slice_reports(rep, slice(t * n, (t + 1) * n)))) - truth
            for t in range(trials)
        ]
    )
    return errs


def check_stats(errs, mse_formula, label, upper_bound=False, unbiased=True):
    trials = errs.shape[0]
    mean = errs.mean(axis=0)
    se = errs.std(axis=0, ddof=1) / np.sqrt(trials)
    zs = np.abs(mean) / np.maximum(se, 1e-300)
    if unbiased:
        assert np.all(zs < Z), f"{label}: biased coordinates, max |z| = {zs.max():.2f}"
    sq = np.sum(errs**2, axis=1)
    emp, se_sq = sq.mean(), sq.std(ddof=1) / np.sqrt(trials)
    if upper_bound:
        assert emp < mse_formula + Z * se_sq, (
            f"{label}: empirical MSE {emp:.6g} above the bound {mse_formula:.6g}"
        )
        return
    assert abs(emp - mse_formula) < Z * se_sq, (
        f"{label}: empirical MSE {emp:.6g} vs closed form {mse_formula:.6g} (se {se_sq:.3g})"
    )
    # the closed form must be informative: the tolerance is a small fraction of the value
    assert Z * se_sq < 0.25 * mse_formula, f"{label}: too few trials for a meaningful check"


CASES = []


def case(name, params, make_x, trials=2000, truth=None, ids=None):
    CASES.append(pytest.param(name, params, make_x, trials, truth, id=ids or f"{name}-{params}"))


rs = np.random.default_rng(2024)
case("binary_rr", {"epsilon0": 1.0}, lambda: (rs.random(300) < 0.3).astype(int))
case("binary_rr", {"epsilon0": 4.0}, lambda: (rs.random(300) < 0.8).astype(int))
case("kary_rr", {"epsilon0": 1.0, "k": 5}, lambda: rs.integers(0, 5, 300), truth="freq5")
case("kary_rr", {"epsilon0": 3.0, "k": 12}, lambda: rs.integers(0, 3, 300), truth="freq12")
case("binary_vector", {"epsilon0": 2.0, "d": 10, "s": 3}, lambda: (rs.random((200, 10)) < 0.4).astype(int))
case("binary_vector", {"epsilon0": 6.0, "d": 16, "s": 16}, lambda: (rs.random((200, 16)) < 0.7).astype(int))
case(
    "l1",
    {"epsilon0": 1.0, "d": 12, "r1": 2.0},
    lambda: (lambda v: 2.0 * v / np.abs(v).sum(1, keepdims=True) * rs.random((200, 1)))(
        rs.normal(size=(200, 12))
    ),
)
case(
    "linf", {"epsilon0": 2.0, "d": 10, "m": 3, "s": 2, "r_inf": 1.5}, lambda: rs.uniform(-1.5, 1.5, (200, 10))
)
case("linf", {"epsilon0": 8.0, "d": 7, "m": 5, "s": 7, "r_inf": 1.0}, lambda: rs.uniform(-1, 1, (200, 7)))
case(
    "linf",
    {"epsilon0": 1.0, "d": 1, "m": 4, "s": 1, "r_inf": 1.0},
    lambda: np.concatenate([np.ones((50, 1)), -np.ones((50, 1)), rs.uniform(-1, 1, (100, 1))]),
)
case(
    "l2",
    {"epsilon0": 3.0, "d": 16, "m": 2, "s": 4, "r2": 1.0, "r_inf": 1.0, "rotation_seed": 7},
    lambda: (lambda v: v / np.linalg.norm(v, axis=1, keepdims=True))(rs.normal(size=(200, 16))),
)
case(
    "l2",
    {"epsilon0": 3.0, "d": 16, "m": 3, "s": 2, "r2": 1.0, "n": 200, "rotation_seed": 1},
    lambda: (lambda v: v / np.linalg.norm(v, axis=1, keepdims=True))(rs.normal(size=(200, 16))),
)
case("hadamard_response", {"epsilon0": 1.0, "k": 6}, lambda: rs.integers(0, 6, 300), truth="freq6")
case("hadamard_response", {"epsilon0": 2.5, "k": 16}, lambda: rs.integers(0, 4, 300), truth="freq16")
case(
    "user_range",
    {"epsilon0": 2.0, "B": 1.0, "tau": 0.25},
    lambda: rs.normal(0.3, 0.05, (300, 6)),
    truth="bins",
)
case("laplace_mean", {"epsilon0": 1.0, "d": 3, "r": 1.0}, lambda: rs.uniform(-0.3, 0.3, (300, 3)))
case("gaussian", {"noise_multiplier": 1.3, "clip": 1.0, "d": 4}, lambda: rs.uniform(-0.4, 0.4, (100, 4)))
case(
    "laplace",
    {"scale": 0.7, "clip": 1.0, "d": 2, "neighbouring": "add_remove"},
    lambda: rs.uniform(-0.4, 0.4, (100, 2)),
)


def _truth(mech, x, truth):
    if truth is None:
        return np.atleast_1d(np.asarray(x, dtype=float).mean(axis=0))
    if truth.startswith("freq"):
        return np.bincount(x, minlength=int(truth[4:])) / len(x)
    if truth == "bins":
        return np.bincount(mech.bins(x.mean(axis=1)), minlength=mech.k) / len(x)
    raise AssertionError(truth)


@pytest.mark.parametrize("name,params,make_x,trials,truth", CASES)
def test_unbiased_and_mse(name, params, make_x, trials, truth):
    mech = mechanisms.get(name, **params)
    x = make_x()
    errs = simulate(mech, x, _truth(mech, x, truth), trials, seed=99)
    mse = mech.mse(x=x)
    check_stats(errs, mse, name)
    assert mech.mse(n=len(x)) >= mse * (1 - 1e-12)


def test_l2_non_power_of_two_is_bounded():
    """d = 12 is padded to 16: the closed form is then an upper bound (the padded coordinates' error is
    dropped), and the estimate stays unbiased."""
    rs2 = np.random.default_rng(4)
    mech = mechanisms.get("l2", epsilon0=3.0, d=12, m=2, s=4, r2=1.0, r_inf=1.0, rotation_seed=7)
    v = rs2.normal(size=(200, 12))
    x = 0.5 * v / np.linalg.norm(v, axis=1, keepdims=True)
    errs = simulate(mech, x, x.mean(axis=0), 2000, seed=12)
    check_stats(errs, mech.mse(x=x), "l2 d=12", upper_bound=True)


def test_l2_clipping_bias_in_mse():
    """A radius that clips: the estimate is biased and mse(x) = variance + bias² still matches."""
    rs2 = np.random.default_rng(14)
    mech = mechanisms.get("l2", epsilon0=4.0, d=16, m=2, s=4, r2=1.0, r_inf=0.15, rotation_seed=2)
    v = rs2.normal(size=(200, 16)) + 2.0 * (np.arange(16) == 3)
    x = v / np.linalg.norm(v, axis=1, keepdims=True)
    assert np.abs(mech.rotate(x)).max() > 0.3  # clipping happens
    errs = simulate(mech, x, x.mean(axis=0), 2000, seed=15)
    check_stats(errs, mech.mse(x=x), "l2 clipped", unbiased=False)
    assert np.abs(errs.mean(axis=0)).max() > 0.01  # and the bias is visible


def test_user_mean_scalar_two_rounds():
    rs2 = np.random.default_rng(5)
    n, trials = 1000, 900
    data = np.clip(rs2.normal(0.27, 0.03, (n, 8)), -1, 1)
    mech = mechanisms.get("user_mean", epsilon0=4.0, B=1.0, tau=0.1, m=4)
    rng = np.random.default_rng(6)
    truth = data.mean()
    errs = []
    for _ in range(trials):
        rep = mech.randomize(data, rng)
        errs.append([mech.estimate(rep) - truth])
    check_stats(np.array(errs), mech.mse(x=data), "user_mean")


def test_user_mean_vector_two_rounds():
    rs2 = np.random.default_rng(8)
    n, trials, d = 2000, 150, 8
    data = np.clip(rs2.normal(0.2, 0.02, (n, 3, d)), -1, 1)
    mech = mechanisms.get("user_mean", epsilon0=16.0, B=1.0, tau=0.05, m=3, d=d, s=4, n=n, gamma=0.05)
    rng = np.random.default_rng(9)
    truth = data.mean(axis=(0, 1))
    errs = np.array([mech.estimate(mech.randomize(data, rng)) - truth for _ in range(trials)])
    check_stats(errs, mech.mse(x=data), "user_mean vector")


def test_user_range_interval_covers_the_means():
    rng = np.random.default_rng(3)
    data = rng.normal(-0.42, 0.02, (3000, 10))
    mech = mechanisms.get("user_range", epsilon0=1.0, B=1.0, tau=0.05)
    lo, hi = mech.interval(mech.randomize(data, rng))
    means = data.mean(axis=1)
    assert lo <= means.min() and means.max() <= hi and hi - lo == pytest.approx(0.3)


def test_sup_mse_attained():
    """The supremum forms are attained by the worst inputs where the proof says so."""
    bv = mechanisms.get("binary_vector", epsilon0=2.0, d=9, s=3)
    assert bv.mse(x=np.ones((10, 9), int)) == pytest.approx(bv.mse(n=10), rel=1e-12)
    lin = mechanisms.get("linf", epsilon0=2.0, d=6, m=3, s=2)
    assert lin.mse(x=np.ones((10, 6))) == pytest.approx(lin.mse(n=10), rel=1e-12)
    l1 = mechanisms.get("l1", epsilon0=1.0, d=5)
    assert l1.mse(x=np.zeros((10, 5))) == pytest.approx(l1.mse(n=10), rel=1e-12)
    lin1 = mechanisms.get("linf", epsilon0=2.0, d=4, m=2, s=4)  # a = 1: worst ρ = 1/2
    x = np.full((10, 4), 2 * 0.25 - 1.0 + 2 * 0.125)  # z = 0.375 → digit 0, ρ = 0.75? use exact ρ = 1/2:
    x = np.full((10, 4), 2 * 0.25 - 1.0)  # z = 0.25 → m = 2: q = 0, ρ = 0.5
    assert lin1.mse(x=x) == pytest.approx(lin1.mse(n=10), rel=1e-12)


def test_thesis_mse_formulas():
    """Closed forms against the thesis's printed expressions."""
    import math

    e = 1.0
    brr = mechanisms.get("binary_rr", epsilon0=e)
    p = 1 / (1 + math.exp(e))
    assert brr.mse(n=1) == pytest.approx(p * (1 - p) / (1 - 2 * p) ** 2)  # eq. (2.5)
    bv = mechanisms.get("binary_vector", epsilon0=2.0, d=12, s=3)
    ps = 1 / (1 + math.exp(2.0 / 3))
    a = 4
    assert bv.mse(n=1) == pytest.approx(
        3 * a * a * ps * (1 - ps) / (1 - 2 * ps) ** 2 + (a - 1) * 12
    )  # (3.10)
    l1 = mechanisms.get("l1", epsilon0=e, d=8, r1=1.0)
    c = (math.exp(e) + 1) / (math.exp(e) - 1)
    assert l1.mse(n=1) == pytest.approx(8 * c * c)  # Lemma 3.4.1
    hr = mechanisms.get("hadamard_response", epsilon0=e, k=8)
    assert hr.mse(n=1) <= 2 * 8 * c * c  # eq. (7.33)
