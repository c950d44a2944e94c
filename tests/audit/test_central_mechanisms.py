"""Exact-divergence audit of the central user-level mechanisms of the catalog (Levy et al., Asi–Liu).

For each mechanism, what ``mech.events()`` charges must cover the exact privacy loss of real
neighbouring datasets (replace one user's value), the laws written here from the algorithms'
definitions (independently of the mechanisms' code) and checked against the real samplers:

* ``private_range`` — the exponential mechanism's law over the bins, scores from scratch;
* ``winsorized_mean`` — 1-D: the joint law of (chosen interval, noisy mean binned) — a
  post-processing of the release, hence a lower bound of its divergence; d = 2 with a fixed public
  rotation: the product over the rotated coordinates;
* ``winsorized_sgd`` — one step (T = 1) is a 2-D winsorized mean of the users' clipped gradients;
  more steps compose adaptively, which the accountant's composition covers;
* ``outlier_removal_mean`` — its output law is not enumerable at the n its gate needs, so its two
  parts are audited exactly: the gate is AboveThreshold (its stopping law vs the real gate, and
  the event audit of tests/audit/test_central_events.py), and the Gaussian step's coupled
  sensitivity — the exact law of one passed query on clustered datasets (a mixture over the
  kept counts) against the ``gaussian`` event with ``zeta``, by quadrature; plus the proof's
  deterministic lemmas on random safe datasets.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.linalg import hadamard
from scipy.stats import binom, chi2, laplace, norm

import accountant
import mechanisms
from mechanisms.outlier_removal import AboveThreshold, coupling_quantile, neighbour_counts

from ..helpers import exact as X
from ..helpers.above_threshold import at_law
from ._check import Discrete, assert_sound

SET = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _chi2_ok(samples: np.ndarray, law: np.ndarray) -> bool:
    obs = np.bincount(samples, minlength=law.size).astype(float)
    exp = law * samples.size
    big = exp >= 5
    o, e = np.append(obs[big], obs[~big].sum()), np.append(exp[big], exp[~big].sum())
    keep = e > 0
    stat = float(np.sum((o[keep] - e[keep]) ** 2 / e[keep]))
    return stat < chi2.ppf(1 - 1e-7, max(1, int(keep.sum()) - 1))


# ---------------------------------------------------------------------------------------------------
# private_range: the exponential mechanism over bins
# ---------------------------------------------------------------------------------------------------


def range_law(values: np.ndarray, eps: float, tau: float, B: float) -> np.ndarray:
    """P(bin k) ∝ exp(ε·min(#{i: k_i ≤ k}, #{i: k_i ≥ k})/2), bins of width 2τ from −B (from scratch)."""
    K = max(1, math.ceil(B / tau - 1e-12))
    k = np.clip(np.floor((np.clip(values, -B, B) + B) / (2 * tau)), 0, K - 1)
    score = np.array([min(np.sum(k <= j), np.sum(k >= j)) for j in range(K)], dtype=float)
    w = np.exp(eps * (score - score.max()) / 2)
    return w / w.sum()


def test_private_range_sampler_follows_the_law():
    mech = mechanisms.get("private_range", epsilon=1.5, tau=0.2, B=1.0)
    x = np.array([0.05, 0.1, 0.31, 0.33, -0.9, 0.95])
    law = range_law(x, 1.5, 0.2, 1.0)
    assert np.allclose(mech.probabilities(x), law, rtol=1e-12)
    rng = np.random.default_rng(1)
    centres = np.array([mech.randomize(x, rng)["centre"] for _ in range(20_000)])
    k = np.round((centres + 1.0 - 0.2) / 0.4).astype(int)
    assert _chi2_ok(k, law)


@SET
@given(
    st.floats(0.05, 8.0),
    st.lists(st.floats(-1.2, 1.2), min_size=1, max_size=8),
    st.floats(-1.2, 1.2),
    st.sampled_from([0.5, 0.3, 0.15]),
    st.integers(1, 3),
)
def test_private_range(eps, values, replacement, tau, rounds):
    x = np.array(values)
    xp = x.copy()
    xp[0] = replacement
    mech = mechanisms.get("private_range", epsilon=eps, tau=tau, B=1.0)
    p, q = range_law(xp, eps, tau, 1.0), range_law(x, eps, tau, 1.0)
    assert np.max(np.abs(np.log(p / q))) <= eps * (1 + 1e-12)  # within e^ε on neighbours
    pair = X.ShuffledPair.from_laws(p, q)
    assert_sound(mech.events(count=rounds), Discrete(pair), rounds, f"private_range {x} → {xp}")


# ---------------------------------------------------------------------------------------------------
# winsorized_mean: (interval, binned noisy mean)
# ---------------------------------------------------------------------------------------------------


def winsorized_coordinate_law(
    values: np.ndarray, eps: float, tau: float, B: float, width: float, edges
) -> np.ndarray:
    """Joint law of (chosen bin k, noisy mean in cell c) for one coordinate: the range at ε/2, then
    mean(clip(x, a_k ± w/2)) + Lap(2w/(nε)); cells at ``edges`` (−∞ and +∞ added)."""
    n = values.size
    law_k = range_law(values, eps / 2, tau, B)
    K = law_k.size
    b = 2 * width / (n * eps)
    e = np.concatenate([[-np.inf], edges, [np.inf]])
    out = np.empty((K, e.size - 1))
    for k in range(K):
        a = -B + tau + 2 * tau * k
        mu = np.clip(values, a - width / 2, a + width / 2).mean()
        cdf = laplace.cdf(e, loc=mu, scale=b)
        cells = np.diff(cdf)
        up = e[:-1] >= mu  # upper tail: differences of survival functions keep their precision
        cells[up] = -np.diff(laplace.sf(e, loc=mu, scale=b))[up]
        out[k] = law_k[k] * cells
    return out.ravel()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.floats(0.2, 6.0),
    st.lists(st.floats(-1.0, 1.0), min_size=2, max_size=6),
    st.floats(-1.0, 1.0),
    st.sampled_from([4.0, 6.0]),
)
def test_winsorized_mean_1d(eps, values, replacement, wf):
    x = np.array(values)
    xp = x.copy()
    xp[-1] = replacement
    tau, B = 0.25, 1.0
    mech = mechanisms.get("winsorized_mean", epsilon=eps, tau=tau, B=B, width_factor=wf)
    width = wf * tau
    edges = np.linspace(-2.5, 2.5, 161)
    p = winsorized_coordinate_law(xp, eps, tau, B, width, edges)
    q = winsorized_coordinate_law(x, eps, tau, B, width, edges)
    assert_sound(mech.events(), Discrete(X.ShuffledPair.from_laws(p, q)), 1, f"winsorized_mean {x} → {xp}")


def test_winsorized_mean_sampler_follows_the_law():
    mech = mechanisms.get("winsorized_mean", epsilon=2.0, tau=0.25, B=1.0, width_factor=4.0)
    x = np.array([0.1, 0.2, 0.25, -0.4])
    edges = np.linspace(-1.5, 1.5, 25)
    law = winsorized_coordinate_law(x, 2.0, 0.25, 1.0, 1.0, edges)
    rng = np.random.default_rng(3)
    cells = []
    for _ in range(20_000):
        r = mech.randomize(x, rng)
        k = int(round((r["intervals"][0].mean() + 1.0 - 0.25) / 0.5))
        cells.append(k * (edges.size + 1) + int(np.searchsorted(edges, r["mean"])))
    assert _chi2_ok(np.array(cells), law)


def _rotation(seed: int, D: int) -> np.ndarray:
    signs = np.random.default_rng(seed).choice(np.array([-1.0, 1.0]), size=D)
    return hadamard(D) * signs[None, :] / math.sqrt(D)  # U = H·diag(ω)/√D


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.3, 5.0), st.integers(0, 20), st.data())
def test_winsorized_mean_2d(eps, seed, data):
    """d = 2, a public rotation (seed fixed): the rotated coordinates are independent releases on
    Y = UX; the exact law is their product."""
    pts = data.draw(st.lists(st.tuples(st.floats(-1, 1), st.floats(-1, 1)), min_size=2, max_size=4))
    x = np.array(pts)
    xp = x.copy()
    xp[0] = data.draw(st.tuples(st.floats(-1, 1), st.floats(-1, 1)))
    tau_r = 0.5
    mech = mechanisms.get(
        "winsorized_mean", epsilon=eps, tau=0.1, B=1.0, d=2, tau_rotated=tau_r, rotation_seed=seed
    )
    U = _rotation(seed, 2)
    R = math.sqrt(2)
    edges = np.linspace(-3, 3, 41)
    factors = []
    for j in range(2):
        y, yp = (x @ U.T)[:, j], (xp @ U.T)[:, j]
        p = winsorized_coordinate_law(yp, eps, tau_r, R, 4 * tau_r, edges)
        q = winsorized_coordinate_law(y, eps, tau_r, R, 4 * tau_r, edges)
        factors.append(X.ShuffledPair.from_laws(p, q))
    assert np.allclose(
        mech.rotate(x, mech.signs(np.random.default_rng())), x @ U.T
    )  # the same public rotation
    assert_sound(mech.events(), Discrete(*factors), 1, f"winsorized_mean d=2 {x} → {xp}")


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.3, 4.0), st.data())
def test_winsorized_sgd_one_step(eps, data):
    """One step on users' gradients: clip to ℓ2 norm G, then the 2-D winsorized mean (range G)."""
    g = np.array(data.draw(st.lists(st.tuples(st.floats(-2, 2), st.floats(-2, 2)), min_size=2, max_size=4)))
    gp = g.copy()
    gp[-1] = data.draw(st.tuples(st.floats(-2, 2), st.floats(-2, 2)))
    seed = 5
    mech = mechanisms.get(
        "winsorized_sgd",
        epsilon=eps,
        T=1,
        d=2,
        G=1.0,
        tau=0.1,
        n=g.shape[0],
        tau_rotated=0.4,
        rotation_seed=seed,
    )
    U = _rotation(seed, 2)

    def clip(v):
        return v / np.maximum(1.0, np.linalg.norm(v, axis=1))[:, None]

    edges = np.linspace(-3, 3, 41)
    factors = []
    for j in range(2):
        y, yp = (clip(g) @ U.T)[:, j], (clip(gp) @ U.T)[:, j]
        p = winsorized_coordinate_law(yp, eps, 0.4, 1.0, 1.6, edges)
        q = winsorized_coordinate_law(y, eps, 0.4, 1.0, 1.6, edges)
        factors.append(X.ShuffledPair.from_laws(p, q))
    assert_sound(mech.events(), Discrete(*factors), 1, f"winsorized_sgd step {g} → {gp}")


# ---------------------------------------------------------------------------------------------------
# outlier_removal_mean
# ---------------------------------------------------------------------------------------------------


def test_outlier_gate_is_above_threshold():
    """The real gate's stopping time follows the exact AboveThreshold law (sensitivity 2)."""
    q = np.array([1.0, 0.5, -0.5])
    law = at_law(q, 0.0, 1.2, 2.0)
    rng = np.random.default_rng(7)
    stops = []
    for _ in range(30_000):
        gate = AboveThreshold(0.0, 1.2, 2.0, rng)
        k = next((i for i, v in enumerate(q) if not gate.passes(float(v))), q.size)
        stops.append(k)
    assert _chi2_ok(np.array(stops), law)


def test_gate_score_sensitivity_is_at_most_two():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(2, 30))
        V = rng.normal(size=(n, 2)) * rng.uniform(0.1, 2)
        W = V.copy()
        W[rng.integers(n)] = rng.normal(size=2) * 3
        s, sp = neighbour_counts(V, 0.7).sum() / n, neighbour_counts(W, 0.7).sum() / n
        assert abs(s - sp) <= 2 * (n - 1) / n + 1e-12


def cluster_law(clusters: list[tuple[float, int]], tau: float):
    """For 1-D data in clusters (position, users): s, and the exact law of the kept set's mean as
    (weights, means): per cluster f = #within 2τ, p = clip((f − n/2)/(n/6), 0, 1), kept counts
    binomial and independent across clusters (identical users are exchangeable)."""
    pos = np.array([c[0] for c in clusters])
    cnt = np.array([c[1] for c in clusters])
    n = int(cnt.sum())
    dist = np.abs(pos[:, None] - pos[None, :])
    N = ((dist <= tau) * cnt[None, :]).sum(1)
    f = ((dist <= 2 * tau) * cnt[None, :]).sum(1)
    s = float((N * cnt).sum()) / n
    p = np.clip((f - n / 2) / (n / 6), 0.0, 1.0)
    weights, sums, sizes = np.ones(1), np.zeros(1), np.zeros(1)
    for c, pc, x in zip(cnt, p, pos):
        ks = np.arange(c + 1)
        pk = binom.pmf(ks, c, pc)
        keep = pk > 0
        ks, pk = ks[keep], pk[keep]
        weights = np.outer(weights, pk).ravel()
        sums = (sums[:, None] + ks[None, :] * x).ravel()
        sizes = (sizes[:, None] + ks[None, :]).ravel()
    means = np.where(sizes > 0, sums / np.maximum(sizes, 1), 0.0)
    return s, n, weights, means


def mixture_hockey(w1, m1, w2, m2, sigma, eps) -> float:
    """∫ (p − e^ε q)₊ for p = Σ w1 N(m1, σ²), q = Σ w2 N(m2, σ²), trapezoid on a grid of σ/400."""
    lo, hi = min(m1.min(), m2.min()) - 14 * sigma, max(m1.max(), m2.max()) + 14 * sigma
    y = np.linspace(lo, hi, int((hi - lo) / (sigma / 400)) + 2)
    p = sum(w * norm.pdf(y, m, sigma) for w, m in zip(w1, m1))
    q = sum(w * norm.pdf(y, m, sigma) for w, m in zip(w2, m2))
    return float(np.trapezoid(np.maximum(p - math.exp(eps) * q, 0.0), y))


CLUSTER_CASES = [
    # core at ±0.5τ (safe), a cluster at 2.2τ kept with a fractional probability; u moves
    ("u leaves the fractional cluster", [(-0.5, 45), (0.5, 45), (2.2, 9)], 2.2, -3.0),
    ("u joins the core's edge", [(-0.5, 45), (0.5, 45), (2.2, 9)], 3.4, 0.5),
    ("two fractional clusters", [(0.0, 80), (1.8, 6), (-1.9, 7)], -1.9, 2.9),
    ("small n", [(0.0, 30), (1.7, 4)], 1.7, -2.6),
]


@pytest.mark.parametrize("label,clusters,yu,yup", CLUSTER_CASES, ids=[c[0] for c in CLUSTER_CASES])
def test_outlier_gaussian_step_is_covered(label, clusters, yu, yup):
    """One passed query on safe x (τ = 1): the exact law of g + N(0, σ²) on x and on x' (user u at
    yu → yup). The charged step — gaussian(σ/Δ₂, zeta = ζ_c) — must cover its hockey-stick
    divergence; and at a tenth of Δ₂ the same check must fail (the audit can see a violation)."""
    del label  # the case id
    tau, delta = 1.0, 1e-3
    x = [*clusters, (yu, 1)]
    xp = [*clusters, (yup, 1)]
    s, n, w1, m1 = cluster_law(x, tau)
    _, _, w2, m2 = cluster_law(xp, tau)
    assert s >= 2 * n / 3 + 1, "x must be safe for this check"
    K = coupling_quantile(0.01)
    mech = mechanisms.get(
        "outlier_removal_mean",
        epsilon_gate=50.0,
        sigma=1.0,
        tau=tau,
        T=1,
        n=n,
        zeta_coupling=0.01,
        threshold_fraction=0.99,
    )
    d2 = mech.sensitivity  # what the mechanism charges per unit of σ
    assert d2 >= min(6 * tau, 9 * tau * (K + 1) / n)
    sigma = 1.2 * d2
    ev = {"mechanism": "gaussian", "noise_multiplier": sigma / d2, "zeta": 0.01}
    target = delta + 0.01
    eps = accountant.epsilon_guarantee([ev], target).epsilon
    assert mixture_hockey(w1, m1, w2, m2, sigma, eps) <= target * (1 + 1e-6)
    assert mixture_hockey(w1, m1, w2, m2, sigma, 0.0) > 1e-4  # the two laws really differ


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(30, 200), st.integers(1, 3), st.integers(0, 10**6))
def test_outlier_removal_lemmas_on_safe_data(n, d, seed):
    """Parts (b) and (c) of the privacy proof on random safe datasets and a random neighbour: every
    user with a positive keep probability lies within 3τ of the core point c (both datasets), both
    kept sets hold ≥ 2n/3 users surely, and under the maximal coupling
    ‖g − g'‖ ≤ 6τ·max(b, b')/m ≤ 6τ(D + 1)/m with D the disagreements among j ≠ u."""
    rng = np.random.default_rng(seed)
    tau = 1.0
    core = int(np.ceil(0.9 * n))
    h = 0.45 / math.sqrt(d)  # the core's diameter is below τ
    V = np.concatenate([rng.uniform(-h, h, size=(core, d)), rng.uniform(-3, 3, size=(n - core, d))])
    N = neighbour_counts(V, tau)
    assert N.mean() >= 2 * n / 3 + 1  # safe by construction
    u = int(rng.integers(n))
    W = V.copy()
    W[u] = rng.uniform(-4, 4, size=d)
    c = V[int(np.argmax(N))]
    m = 2 * n / 3
    p = np.clip((neighbour_counts(V, 2 * tau) - n / 2) / (n / 6), 0, 1)
    pp = np.clip((neighbour_counts(W, 2 * tau) - n / 2) / (n / 6), 0, 1)
    for P, Z in ((p, V), (pp, W)):
        assert np.all(np.linalg.norm(Z[P > 0] - c, axis=1) <= 3 * tau + 1e-9)
        assert np.sum(P == 1) >= m
    others = np.arange(n) != u
    assert np.all(np.abs(p - pp)[others] <= 6 / n + 1e-12)
    for _ in range(50):
        r = rng.random(n)
        k, kp = r < p, r < pp  # the maximal coupling of independent Bernoullis: one uniform per user
        A = k & kp & others
        b = int(np.sum(k & ~A))
        bp = int(np.sum(kp & ~A))
        D = int(np.sum((k != kp) & others))
        g, gp = V[k].mean(0), W[kp].mean(0)
        assert np.linalg.norm(g - gp) <= 6 * tau * max(b, bp) / m + 1e-9
        assert max(b, bp) <= D + 1
