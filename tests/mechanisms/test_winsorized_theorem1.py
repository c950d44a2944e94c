"""Levy et al. Theorem 1 for ``winsorized_mean`` (d = 1), by exact computation, not sampling.

The release given the data is a mixture: the private range picks bin k with the exponential
mechanism's probability p_k ∝ exp((ε/2)·s_k/2), s_k = min(#{bin ≤ k}, #{bin ≥ k}); then the
release is m_k + Lap(b), m_k the mean of the values clipped to [c_k − w/2, c_k + w/2]. Both are
computed here from the algorithm's definition (the bins, scores and clipping written out below),
and the total-variation distance to the theorem's law mean + Lap(scale) is integrated numerically.

The counterexample (issue 26): τ = 1, B = 12 (bin edges at the even numbers), n = 100, ε = 0.615;
60 values at −0.01 and 40 at 1.99 — all within τ of 0.99, so τ-concentrated, split 60/40 around
the bin edge 0. At the paper's width w = 4τ the chosen centre is −1 with probability ≈ 0.96 and
[−3, 1] clips the 40 values at 1.99 to 1: the release is biased by −0.38 against a Laplace scale
8τ/(nε) = 0.13, at total variation ≈ 0.74 from mean + Lap(8τ/(nε)), where the theorem claims
β = (B/τ)·e^{−nε/8} ≈ 5.5·10⁻³. At w = 6τ (the default now) every occupied bin's interval
contains the whole cluster, and the release is within β of mean + Lap(2w/(nε)) = Lap(12τ/(nε)).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

import mechanisms
from mechanisms.winsorized import theorem1_beta

TAU, B, N, EPS = 1.0, 12.0, 100, 0.615


def centre_law(x: np.ndarray, eps: float, tau: float, B: float) -> tuple[np.ndarray, np.ndarray]:
    """(bin centres, the exponential mechanism's probabilities at ε/2) from the definition."""
    K = math.ceil(B / tau)
    centres = -B + tau + 2 * tau * np.arange(K)
    bins = np.clip(np.floor((np.clip(x, -B, B) + B) / (2 * tau)), 0, K - 1)
    scores = np.array([min(np.sum(bins <= k), np.sum(bins >= k)) for k in range(K)], dtype=float)
    logits = (eps / 2) * scores / 2
    p = np.exp(logits - logits.max())
    return centres, p / p.sum()


def laplace_pdf(y: float, loc: float, scale: float) -> float:
    return math.exp(-abs(y - loc) / scale) / (2 * scale)


def release_law(x: np.ndarray, mech) -> tuple[np.ndarray, np.ndarray, float]:
    """(probabilities, clipped means, Laplace scale) of the release of ``mech`` on ``x``."""
    centres, p = centre_law(x, mech.epsilon, mech.tau, mech.B)
    w = mech.width
    means = np.array([np.clip(x, c - w / 2, c + w / 2).mean() for c in centres])
    return p, means, mech.laplace_scale(x.size)


def tv_to_mean_plus_laplace(x: np.ndarray, mech, scale: float) -> float:
    """½∫|release density − Lap(mean(x), scale) density|."""
    p, means, b = release_law(x, mech)
    mu = float(x.mean())

    def gap(y: float) -> float:
        f = sum(pk * laplace_pdf(y, mk, b) for pk, mk in zip(p, means) if pk > 1e-300)
        return abs(f - laplace_pdf(y, mu, scale))

    lo = min(means.min(), mu) - 60 * max(b, scale)
    hi = max(means.max(), mu) + 60 * max(b, scale)
    pts = sorted({*means.tolist(), mu})
    # the tails beyond [lo, hi] hold < e^{-60} of either law
    val, err = integrate.quad(gap, lo, hi, points=pts, limit=2000, epsabs=1e-10)
    assert err < 1e-6
    return 0.5 * val


def counterexample() -> np.ndarray:
    return np.concatenate([np.full(60, -0.01), np.full(40, 1.99)])


def test_the_counterexample_is_tau_concentrated():
    x = counterexample()
    assert np.all(np.abs(x - 0.99) <= TAU)


def test_the_papers_width_misses_theorem_1():
    x = counterexample()
    mech = mechanisms.get("winsorized_mean", epsilon=EPS, tau=TAU, B=B, width_factor=4.0)
    paper_scale = 8 * TAU / (N * EPS)
    assert mech.laplace_scale(N) == pytest.approx(paper_scale)
    p, means, _ = release_law(x, mech)
    bias = float(p @ means - x.mean())
    assert bias == pytest.approx(-0.38, abs=0.01) and paper_scale == pytest.approx(0.13, abs=0.005)
    beta = theorem1_beta(N, EPS, TAU, B, 0.0)
    assert beta == pytest.approx(5.5e-3, rel=0.01)
    tv = tv_to_mean_plus_laplace(x, mech, paper_scale)
    assert tv == pytest.approx(0.74, abs=0.01) and tv > 100 * beta
    # the same law as the mechanism's own range (cross-check of the definition written out above)
    assert np.allclose(mech.ranger.probabilities(x), p, rtol=1e-9, atol=1e-15)


def test_the_default_width_is_six_tau_and_meets_theorem_1_on_the_counterexample():
    x = counterexample()
    mech = mechanisms.get("winsorized_mean", epsilon=EPS, tau=TAU, B=B)
    assert mech.width == 6 * TAU
    scale = 12 * TAU / (N * EPS)  # 2w/(nε) at w = 6τ
    assert mech.laplace_scale(N) == pytest.approx(scale)
    assert tv_to_mean_plus_laplace(x, mech, scale) <= theorem1_beta(N, EPS, TAU, B, 0.0)


@pytest.mark.parametrize("share", [0.1, 0.4, 0.5, 0.6, 0.9])
@pytest.mark.parametrize("left,right", [(-0.01, 1.99), (-1.0, 1.0), (-1.99, 0.01), (0.5, 2.5), (-0.3, 0.3)])
def test_six_tau_meets_theorem_1_for_two_point_clusters_across_a_bin_edge(share, left, right):
    """Clusters of diameter ≤ 2τ at any split across the edge 0 (the worst case of the proof: values up
    to 3τ from an occupied bin's centre): within β of mean + Lap(12τ/(nε)) at w = 6τ."""
    k = round(share * N)
    x = np.concatenate([np.full(k, left), np.full(N - k, right)])
    mech = mechanisms.get("winsorized_mean", epsilon=EPS, tau=TAU, B=B, width_factor=6.0)
    tv = tv_to_mean_plus_laplace(x, mech, 12 * TAU / (N * EPS))
    assert tv <= theorem1_beta(N, EPS, TAU, B, 0.0)


def test_below_six_tau_some_tau_cluster_is_clipped():
    """6τ is the smallest width that always holds a τ-cluster: values at e − η and e + 2τ − 2η around a
    bin edge e are within τ of one point, and the first bin's centre e − τ is 3τ − 2η from the second."""
    eta = 1e-3
    x = np.concatenate([np.full(60, -eta), np.full(40, 2 * TAU - 2 * eta)])
    mech = mechanisms.get("winsorized_mean", epsilon=EPS, tau=TAU, B=B, width_factor=5.99)
    p, means, _ = release_law(x, mech)
    assert abs(float(p @ means - x.mean())) > 1e-3
