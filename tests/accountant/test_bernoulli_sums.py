"""Tilts of sums of independent Bernoullis (accountant/bernoulli_sums.py): Darroch's ratio bound and
the Chernoff tails, against the count's pmf in 50-digit arithmetic (built here by convolving the
binomials term by term — never the module's numbers)."""

from __future__ import annotations

import mpmath as mp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant import bernoulli_sums as B


def exact_pmf(counts: list[int], logits: list[float]) -> list:
    mp.mp.dps = 50
    s = [mp.mpf(1)]
    for m, th in zip(counts, logits):
        p = 1 / (1 + mp.e ** (-mp.mpf(th)))
        b = [mp.binomial(m, j) * p**j * (1 - p) ** (m - j) for j in range(m + 1)]
        out = [mp.mpf(0)] * (len(s) + m)
        for i, x in enumerate(s):
            for j, y in enumerate(b):
                out[i + j] += x * y
        s = out
    return s


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=3),
    st.lists(st.floats(-6.0, 6.0), min_size=3, max_size=3),
    st.floats(0.5, 45.0),
)
def test_ratio_and_tail_bounds_hold_exactly(counts, logits, lam_max):
    """For every tilt λ_j: s(y − 1) ≤ e^{λ_j}·s(y) at every y ≤ μ_lo(λ_j) (Darroch); and at every y
    of the support and beyond it, ``at`` gives a ratio bound that holds and a bound above the exact
    log Pr[S ≥ y]."""
    logits = logits[: len(counts)]
    tl = B.tilts(np.array([counts]), np.array(logits), lam_max)
    s = exact_pmf(counts, logits)
    top = len(s) - 1
    lam, mu = tl.lam[0], tl.mu_lo[0]
    assert np.all(np.diff(lam) >= 0) and lam[0] == 0.0 and np.all(np.diff(mu) >= -1e-9)
    for j in range(lam.size):
        for y in range(1, min(top, int(np.floor(mu[j]))) + 1):
            if s[y] > 0:
                assert s[y - 1] <= mp.e ** mp.mpf(lam[j]) * s[y] * (1 + mp.mpf(10) ** -14), (j, y)
    ys = np.arange(-1, top + 3, dtype=np.float64)
    lam_y, got = (v[0] for v in B.at(tl, ys[None, :]))
    for y, lm, g in zip(ys.astype(int), lam_y, got):
        want = mp.fsum(s[max(y, 0) :]) if y <= top else mp.mpf(0)
        assert want == 0 or mp.log(want) <= g + 1e-12, (y, g, want)
        if 1 <= y <= top and np.isfinite(lm) and s[y] > 0:
            assert s[y - 1] <= mp.e ** mp.mpf(lm) * s[y] * (1 + mp.mpf(10) ** -14), (y, lm)


def test_tail_bound_is_tight_at_the_top_of_the_support():
    """At the largest count the bound of the steepest tilt is the exact probability (within 10⁻⁶
    relative), and a few counts below it within Chernoff's usual factor (< e^{2.5}): it is what
    bounds the pmf where the FFT's relative accuracy ends (bounds.md §13)."""
    counts, logits = [688, 0, 0], [2.0, 0.0, 0.0]
    tl = B.tilts(np.array([counts]), np.array(logits), 42.0)
    s = exact_pmf(counts[:1], logits[:1])
    ys = (640, 680, 686, 687, 688)
    got = B.at(tl, np.array([ys], dtype=np.float64))[1][0]
    for y, g in zip(ys, got):
        want = float(mp.log(mp.fsum(s[y:])))
        assert want <= g <= want + (1e-6 if y == 688 else 2.5), (y, g, want)
