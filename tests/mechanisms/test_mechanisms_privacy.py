"""Exact local privacy: the largest likelihood ratio of any two inputs over the whole output alphabet is
e^{ε0} (computed from the full output-probability table, not sampled), and the sampler follows the table."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.linalg import hadamard
from scipy.stats import chi2

import mechanisms

from ..helpers import mech_tables as T

EPS = [0.1, 0.7, 1.0, 2.5, 6.0]
TOL = 1e-9


def assert_tight(table: np.ndarray, eps0: float) -> None:
    T.check_rows(table)
    r = T.max_log_ratio(table)
    assert math.exp(r) == pytest.approx(math.exp(eps0), rel=TOL), (r, eps0)


def chi2_agrees(cells: np.ndarray, probs: np.ndarray, alpha: float = 1e-6) -> None:
    """Pearson χ² of sampled cells against the table row (cells with tiny mass merged)."""
    n = cells.size
    obs = np.bincount(cells, minlength=probs.size).astype(float)
    assert obs.size == probs.size, "sampler produced a cell outside the table"
    exp = probs * n
    big = exp >= 5
    o = np.append(obs[big], obs[~big].sum())
    e = np.append(exp[big], exp[~big].sum())
    keep = e > 0
    stat = float(np.sum((o[keep] - e[keep]) ** 2 / e[keep]))
    dof = int(keep.sum()) - 1
    assert stat < chi2.ppf(1 - alpha, dof), f"sampler disagrees with the table: χ² = {stat:.1f}, dof = {dof}"


# ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", EPS)
def test_binary_rr_exact(eps):
    mech = mechanisms.get("binary_rr", epsilon0=eps)
    table = T.binary_rr_table(eps)
    assert_tight(table, mech.epsilon0)
    assert mech.output_alphabet_size == 2 and mech.bits_per_report == 1
    rng = np.random.default_rng(11)
    for b in (0, 1):
        y = mech.randomize(np.full(40_000, b), rng)
        chi2_agrees(y.astype(np.int64), table[b])


@pytest.mark.parametrize("eps", EPS)
@pytest.mark.parametrize("k", [2, 3, 7])
def test_kary_rr_exact(eps, k):
    mech = mechanisms.get("kary_rr", epsilon0=eps, k=k)
    table = T.kary_table(eps, k)
    assert_tight(table, mech.epsilon0)
    rng = np.random.default_rng(12)
    for x in range(k):
        chi2_agrees(mech.randomize(np.full(20_000, x), rng), table[x])


@pytest.mark.parametrize("eps", [0.5, 2.0, 5.0])
@pytest.mark.parametrize("d,s", [(3, 1), (3, 3), (4, 2), (5, 2), (5, 3)])
def test_binary_vector_exact(eps, d, s):
    mech = mechanisms.get("binary_vector", epsilon0=eps, d=d, s=s)
    inputs, table = T.binary_vector_table(eps, d, s)
    assert table.shape[1] == mech.output_alphabet_size
    assert_tight(table, mech.epsilon0)
    assert sum(mech.message_epsilons) == pytest.approx(eps, rel=1e-12)
    rng = np.random.default_rng(13)
    for i in (0, len(inputs) - 1, len(inputs) // 3):
        rep = mech.randomize(np.tile(inputs[i], (30_000, 1)), rng)
        chi2_agrees(T.slot_cells(rep["index"], rep["bit"], mech.a), table[i])


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("d", [3, 4])
def test_l1_exact(eps, d):
    r1 = 1.7
    mech = mechanisms.get("l1", epsilon0=eps, d=d, r1=r1)
    rng = np.random.default_rng(14)
    extremes = np.concatenate([r1 * np.eye(d), -r1 * np.eye(d)])
    interior = rng.uniform(-1, 1, (20, d))
    interior *= (r1 * rng.uniform(0, 1, (20, 1))) / np.abs(interior).sum(axis=1, keepdims=True)
    xs = np.concatenate([extremes, interior])
    table = T.l1_table(eps, xs, r1)
    assert table.shape[1] == mech.output_alphabet_size
    assert_tight(table, mech.epsilon0)
    for i in (0, d + 1, 2 * d + 3):
        rep = mech.randomize(np.tile(xs[i], (30_000, 1)), rng)
        chi2_agrees(2 * rep["index"] + (rep["sign"] > 0), table[i])


@pytest.mark.parametrize("eps", [0.5, 2.0, 4.0])
@pytest.mark.parametrize("d,m,s", [(1, 1, 1), (1, 3, 1), (2, 2, 1), (2, 2, 2), (3, 2, 2), (2, 3, 1)])
def test_linf_exact(eps, d, m, s):
    r = 0.8
    mech = mechanisms.get("linf", epsilon0=eps, d=d, m=m, s=s, r_inf=r)
    zs = T.dyadic_grid(d, m, per_axis=5 if d < 3 else 3)
    table = np.array([T.linf_row(eps, z, m, s) for z in zs])
    assert table.shape[1] == mech.output_alphabet_size
    assert_tight(table, mech.epsilon0)
    assert sum(mech.message_epsilons) == pytest.approx(eps, rel=1e-12)
    rng = np.random.default_rng(15)
    pick = [0, len(zs) - 1, len(zs) // 2, len(zs) // 3]
    for i in pick:
        x = np.array([float(2 * r * zi - r) for zi in zs[i]])
        rep = mech.randomize(np.tile(x, (40_000, 1)), rng)
        chi2_agrees(T.slot_cells(rep["index"], rep["bit"], mech.a), table[i])


def test_linf_first_digit_clamped_at_one():
    """z = 1 (x = +r∞) must be coded 0.11…1 with u = 1, not with a digit 2."""
    bits, rho = T.thesis_digits(Fraction(1), 4)
    assert bits == [1, 1, 1] and rho == 1
    mech = mechanisms.get("linf", epsilon0=50.0, d=1, m=4, r_inf=1.0)  # flips ~ e^{-50/…}: digits visible
    rep = mech.randomize(np.ones((2000, 1)), np.random.default_rng(0))
    assert np.all(rep["bit"] == 1)
    assert mech.estimate(rep)[0] == pytest.approx(1.0, abs=1e-3)


def _l2_table(mech, xs, eps, m, s):
    d = mech.d
    U = hadamard(d) * mech.signs[None, :] / math.sqrt(d)
    rows = []
    for x in xs:
        w = np.clip(U @ x, -mech.r_inf, mech.r_inf)
        z = [Fraction((wi + mech.r_inf) / (2 * mech.r_inf)) for wi in w]
        rows.append(T.linf_row(eps, z, m, s))
    return np.array(rows)


@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.parametrize("m,s", [(1, 1), (2, 2)])
def test_l2_exact_when_corners_reachable(eps, m, s):
    d, r2 = 4, 1.0
    c = r2 / math.sqrt(d)
    mech = mechanisms.get("l2", epsilon0=eps, d=d, m=m, s=s, r2=r2, r_inf=c, rotation_seed=3)
    U = hadamard(d) * mech.signs[None, :] / math.sqrt(d)
    rng = np.random.default_rng(16)
    corners = np.array([U.T @ (c * np.array(sg)) for sg in ([1, 1, 1, 1], [-1, -1, -1, -1], [1, -1, 1, -1])])
    inner = rng.normal(size=(10, d))
    inner *= (r2 * rng.uniform(0, 1, (10, 1))) / np.linalg.norm(inner, axis=1, keepdims=True)
    xs = np.concatenate([corners, inner])
    table = _l2_table(mech, xs, eps, m, s)
    assert_tight(table, mech.epsilon0)
    for i in (0, 2, 5):
        rep = mech.randomize(np.tile(xs[i], (30_000, 1)), rng)
        chi2_agrees(T.slot_cells(rep["index"], rep["bit"], mech.a), table[i])


def test_l2_thesis_radius_is_private_but_not_tight():
    d, eps = 4, 1.5
    mech = mechanisms.get("l2", epsilon0=eps, d=d, m=2, s=1, n=1000, beta=0.01)
    assert mech.r_inf == pytest.approx(10 * math.sqrt(math.log(1000 * d / 0.01) / d))
    rng = np.random.default_rng(17)
    xs = rng.normal(size=(60, d))
    xs /= np.linalg.norm(xs, axis=1, keepdims=True)
    table = _l2_table(mech, xs, eps, 2, 1)
    T.check_rows(table)
    assert T.max_log_ratio(table) < eps


@pytest.mark.parametrize("eps", EPS)
@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_hadamard_response_exact(eps, k):
    mech = mechanisms.get("hadamard_response", epsilon0=eps, k=k)
    table = T.hr_table(eps, k)
    assert table.shape[1] == mech.output_alphabet_size
    assert_tight(table, mech.epsilon0)
    rng = np.random.default_rng(18)
    for x in {0, k - 1, k // 2}:
        rep = mech.randomize(np.full(30_000, x), rng)
        chi2_agrees(2 * rep["index"] + rep["bit"], table[x])


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_user_range_exact(eps):
    B, tau = 1.0, 0.2  # 5 bins, K = 8
    mech = mechanisms.get("user_range", epsilon0=eps, B=B, tau=tau)
    centres = -B + (2 * np.arange(5) + 1) * tau
    # user datasets whose means land in every bin; the report depends on the dataset only via its bin
    rng = np.random.default_rng(19)
    datasets = [c + rng.uniform(-tau / 2, tau / 2, size=7) for c in centres]
    datasets = [ds - ds.mean() + c for ds, c in zip(datasets, centres)]
    table = T.hr_table(eps, 8)[:5]  # bins are the symbols 0..4 of a K = 8 Hadamard response
    assert_tight(table, mech.epsilon0)
    for b in (0, 4):
        rep = mech.randomize(np.tile(datasets[b], (30_000, 1)), rng)
        chi2_agrees(2 * rep["index"] + rep["bit"], table[b])


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_user_mean_exact(eps):
    """Fixed public interval: one ℓ∞ report at ε0. Two rounds: range at ε0/2 × mean at ε0/2 given the
    broadcast interval — the joint ratio is e^{ε0}."""
    m, lo, hi = 3, -0.3, 0.5
    mech = mechanisms.get("user_mean", epsilon0=eps, B=1.0, tau=0.1, m=m, interval=[lo, hi])
    half, centre = (hi - lo) / 2, (hi + lo) / 2
    means = np.linspace(-1.0, 1.0, 41)  # users' means, many outside the interval (projected)
    zs = [[Fraction((float(np.clip(y, lo, hi)) - centre + half) / (2 * half))] for y in means]
    table = np.array([T.linf_row(eps, z, m, 1) for z in zs])
    assert_tight(table, mech.epsilon0)
    rng = np.random.default_rng(20)
    for i in (0, 20, 40):
        rep = mech.randomize(np.full(30_000, means[i]), rng)
        chi2_agrees(T.slot_cells(rep["mean"]["index"], rep["mean"]["bit"], 1), table[i])

    two = mechanisms.get("user_mean", epsilon0=eps, B=1.0, tau=0.1, m=m)
    assert two.message_epsilons[0] == pytest.approx(eps / 2)
    rng_tab = T.hr_table(eps / 2, 16)[:10]  # B/τ = 10 bins, K = 16
    centre = -0.1  # some broadcast interval centre; the mean report of a user given it:
    half = 0.3
    bins = np.clip(np.floor((means + 1.0) / 0.2), 0, 9).astype(int)
    mean_rows = np.array(
        [
            T.linf_row(
                eps / 2, [Fraction((float(np.clip(y - centre, -half, half)) + half) / (2 * half))], m, 1
            )
            for y in means
        ]
    )
    joint = np.array([np.outer(rng_tab[b], r).ravel() for b, r in zip(bins, mean_rows)])
    assert_tight(joint, two.epsilon0)


def test_events_epsilon_matches_table_epsilon():
    """What the ledger is charged (the events' ε0) sums to the ε0 the tables certify."""
    for name, kw in [
        ("binary_rr", {}),
        ("kary_rr", {"k": 4}),
        ("binary_vector", {"d": 6, "s": 3}),
        ("l1", {"d": 8}),
        ("linf", {"d": 6, "m": 3, "s": 2}),
        ("l2", {"d": 8, "m": 2, "s": 2}),
        ("hadamard_response", {"k": 6}),
        ("user_range", {"B": 1.0, "tau": 0.1}),
        ("user_mean", {"B": 1.0, "tau": 0.1, "m": 3}),
    ]:
        mech = mechanisms.get(name, epsilon0=1.3, **kw)
        evs = mech.events(n=1000, count=1)
        assert sum(e.to_dict()["epsilon0"] for e in evs) == pytest.approx(1.3, rel=1e-12), name


# ------------------------------------------------------------------------------------------------------
# Exact unbiasedness and MSE: the estimators are linear in the reports, so the expectation of a single
# report's estimate is the table-weighted sum over the whole output alphabet — no sampling error.
# ------------------------------------------------------------------------------------------------------


def _decode_slots(cell: int, a: int, shape: tuple[int, ...]):
    n_msg = int(np.prod(shape))
    idx, bit = [], []
    for _ in range(n_msg):
        cell, r = divmod(cell, 2 * a)
        idx.append(r // 2)
        bit.append(r % 2)
    idx.reverse()
    bit.reverse()
    return {"index": np.array(idx).reshape((1,) + shape), "bit": np.array(bit).reshape((1,) + shape)}


def _exact_moments(mech, row, decode, truth):
    est = np.array([np.atleast_1d(mech.estimate(decode(o))) for o in range(row.size)])
    err = est - truth
    return row @ err, row @ np.sum(err**2, axis=1)


@pytest.mark.parametrize("eps", [0.4, 2.0])
def test_exact_unbiased_and_mse_single_report(eps):
    cases = []
    brr = mechanisms.get("binary_rr", epsilon0=eps)
    for b in (0, 1):
        cases.append((brr, T.binary_rr_table(eps)[b], lambda o: np.array([o]), np.array([b]), [b]))
    kr = mechanisms.get("kary_rr", epsilon0=eps, k=4)
    for x in range(4):
        cases.append((kr, T.kary_table(eps, 4)[x], lambda o: np.array([o]), np.eye(4)[x], [x]))
    bv = mechanisms.get("binary_vector", epsilon0=eps, d=5, s=2)
    inputs, tab = T.binary_vector_table(eps, 5, 2)
    for i in (0, 7, 31):
        cases.append(
            (bv, tab[i], lambda o: _decode_slots(o, 3, (2,)), np.array(inputs[i], float), [inputs[i]])
        )
    l1 = mechanisms.get("l1", epsilon0=eps, d=3, r1=1.5)
    xs = np.array([[1.5, 0, 0], [0.2, -0.5, 0.3], [0, 0, 0]])
    tab = T.l1_table(eps, xs, 1.5)
    for i in range(3):
        cases.append(
            (
                l1,
                tab[i],
                lambda o: {"index": np.array([o // 2]), "sign": np.array([1 if o % 2 else -1])},
                xs[i],
                [xs[i]],
            )
        )
    lin = mechanisms.get("linf", epsilon0=eps, d=3, m=3, s=2, r_inf=2.0)
    for z in ([Fraction(0), Fraction(1), Fraction(3, 8)], [Fraction(5, 16), Fraction(1, 2), Fraction(7, 9)]):
        x = np.array([float(4 * zi - 2) for zi in z])
        cases.append((lin, T.linf_row(eps, z, 3, 2), lambda o: _decode_slots(o, 2, (3, 2)), x, [x]))
    hr = mechanisms.get("hadamard_response", epsilon0=eps, k=5)
    for x in range(5):
        cases.append(
            (
                hr,
                T.hr_table(eps, 5)[x],
                lambda o: {"index": np.array([o // 2]), "bit": np.array([o % 2])},
                np.eye(5)[x],
                [x],
            )
        )
    for mech, row, decode, truth, xin in cases:
        bias, mse = _exact_moments(mech, row, decode, truth)
        np.testing.assert_allclose(bias, 0.0, atol=1e-10, err_msg=mech.name)
        assert mse == pytest.approx(mech.mse(x=np.array(xin)), rel=1e-10), mech.name
