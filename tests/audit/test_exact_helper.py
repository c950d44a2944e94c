"""The audit's own exact computations, checked independently: every fast (float64, class-merged,
mixture-form) distribution against brute-force enumeration of all per-user reports and samples in
mpmath, built from the full-report tables of tests/helpers/mech_tables.py; the φ-form divergences
against term-by-term mpmath; the composed hockey-stick divergence against explicit product laws; the
central Gaussian/Laplace values against quadrature (scipy and mpmath)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import minimize_scalar
from scipy.stats import norm

import mechanisms

from ..helpers import exact as X
from ..helpers import mech_tables as T
from . import _catalog as C

ALPHAS = [1.5, 2.0, 5.0, 16.0]
EPSILONS = [0.0, 0.1, 1.0]


def rel_close(x, y, rel):
    return abs(float(x) - float(y)) <= rel * max(abs(float(y)), 1e-300)


def compare(pair: X.ShuffledPair, P: dict, Q: dict, rel: float = 1e-10, alphas=ALPHAS, epsilons=EPSILONS):
    """Fast ``pair`` (P = D', Q = D) against mpmath laws P, Q, both directions."""
    for a in alphas:
        fwd, rev = X.renyi(pair, [a])[0], X.renyi(pair, [a], reverse=True)[0]
        assert rel_close(fwd, X.renyi_mp(P, Q, a), rel), (a, fwd, X.renyi_mp(P, Q, a))
        assert rel_close(rev, X.renyi_mp(Q, P, a), rel), (a, rev, X.renyi_mp(Q, P, a))
    for e in epsilons:
        for rev, (A, B) in ((False, (P, Q)), (True, (Q, P))):
            h, hm = X.hockey_stick(pair, e, rev), X.hockey_stick_mp(A, B, e)
            assert abs(h - float(hm)) <= rel * float(hm) + 1e-15, (e, rev, h, hm)


def test_phi_matches_mpmath():
    ts = np.concatenate([-np.logspace(-12, 0, 40)[:-1] * 0.999, [0.0], np.logspace(-12, 3, 45)])
    for a in (1.01, 1.5, 2.0, 3.0, 7.5, 16.0):
        got = X.phi(a, ts)
        with mp.workdps(50):
            for t, g in zip(ts, got):
                ref = (1 + mp.mpf(t)) ** a - 1 - a * mp.mpf(t)
                assert abs(g - float(ref)) <= 1e-13 * abs(float(ref)) + 1e-300, (a, t, g, ref)


@pytest.mark.parametrize("n", [1, 2, 7, 250])
@pytest.mark.parametrize("eps0", [0.3, 2.0, 6.0])
def test_binary_rr_shuffle_against_mpmath(n, eps0):
    """bounds.md §2's pair, as laws of the count of ones: the fast path to 1e-11 at α up to 16."""
    pair = X.shuffled([X.rr_message(1 / (1 + math.exp(eps0)))], n)
    P, Q = X.binomial_pair_mp(n, eps0)
    compare(pair, P, Q, rel=1e-11, alphas=[2.0, 3.0, 8.0, 16.0])


def test_n1_is_randomized_response_closed_form():
    """One user: the shuffled output is the RR bit, whose RDP is ĉ_ε (bounds.md §1), and whose
    hockey-stick divergence is (e^{ε0} − e^ε)/(e^{ε0} + 1) — also at large ε0 and orders (log space)."""
    for eps in (17.0, 40.0):
        pair = X.shuffled([X.rr_message(1 / (1 + math.exp(eps)))], 1)
        for e in (eps - 1e-3, eps / 2, 0.0):
            with mp.workdps(50):
                ref = (mp.e ** mp.mpf(eps) - mp.e ** mp.mpf(e)) / (mp.e ** mp.mpf(eps) + 1)
            for rev in (False, True):
                assert rel_close(X.hockey_stick(pair, e, rev), ref, 1e-12), (eps, e, rev)
        for a in (2.0, 999.36, 5000.0):
            with mp.workdps(50):
                E, am = mp.mpf(eps), mp.mpf(a)
                ref = mp.log((mp.e ** (am * E) + mp.e ** ((1 - am) * E)) / (mp.e**E + 1)) / (am - 1)
            assert rel_close(X.renyi(pair, [a])[0], ref, 1e-12)
            assert rel_close(X.renyi(pair, [a], reverse=True)[0], ref, 1e-12)
    for eps in (0.05, 1.0, 4.0):
        pair = X.shuffled([X.rr_message(1 / (1 + math.exp(eps)))], 1)
        for a in range(2, 17):
            with mp.workdps(50):
                e, am = mp.mpf(eps), mp.mpf(a)
                ref = mp.log((mp.e ** (am * e) + mp.e ** ((1 - am) * e)) / (mp.e**e + 1)) / (am - 1)
            assert rel_close(X.renyi(pair, [a])[0], ref, 1e-13)
            assert rel_close(X.renyi(pair, [a], reverse=True)[0], ref, 1e-13)


# ---------------------------------------------------------------------------------------------------
# Catalog pairs against brute-force enumeration of whole reports
# ---------------------------------------------------------------------------------------------------


def _radix_decoder(base: int, L: int):
    def decode(c: int) -> tuple:
        out = []
        for _ in range(L):
            c, r = divmod(c, base)
            out.append(r)
        return tuple(reversed(out))  # mech_tables' products put the first message most significant

    return decode


def _brute(row0, row1, n: int, k, decode):
    """Laws (P_D', P_D) of the view: D = every user reports with law row0; D' = user 0 with row1."""
    Q = X.brute_force_views([row0] * n, k, decode)
    P = X.brute_force_views([row1] + [row0] * (n - 1), k, decode)
    return P, Q


SAMPLINGS = [(3, None), (3, 1), (3, 2), (4, 2)]


@pytest.mark.parametrize("n,k", SAMPLINGS)
@pytest.mark.parametrize("d,s", [(2, 2), (3, 2), (4, 2)])
def test_binary_vector_against_brute_force(n, k, d, s):
    eps = 2.3
    case = C.binary_vector(eps, d, s)
    inputs, table = T.binary_vector_table(eps, d, s)
    a = -(-d // s)
    P, Q = _brute(table[0], table[-1], n, k, _radix_decoder(2 * a, s))
    compare(case.pair(n, k), P, Q)


@pytest.mark.parametrize(
    "n,k,d,m,s",
    [
        (n, k, d, m, s)
        for n, k in SAMPLINGS
        for d, m, s in [(1, 2, 1), (2, 1, 2), (1, 3, 1)]
        if n < 4 or m * s < 3
    ],
)
def test_linf_against_brute_force(n, k, d, m, s):
    eps = 3.1
    case = C.linf(eps, d, m, s)
    a = -(-d // s)
    row0 = T.linf_row(eps, [Fraction(0)] * d, m, s)
    row1 = T.linf_row(eps, [Fraction(1)] * d, m, s)
    P, Q = _brute(row0, row1, n, k, _radix_decoder(2 * a, m * s))
    compare(case.pair(n, k), P, Q)


@pytest.mark.parametrize("n,k", SAMPLINGS)
def test_l2_against_brute_force(n, k):
    eps, d, m, s = 1.7, 4, 1, 2
    case = C.l2(eps, d, m, s, rotation_seed=5)
    w = np.clip(case.mech.rotate(case.x1[None, :])[0], -case.mech.r_inf, case.mech.r_inf)
    assert np.all(w == case.mech.r_inf)
    row0 = T.linf_row(eps, [Fraction(0)] * d, m, s)
    row1 = T.linf_row(eps, [Fraction(1)] * d, m, s)
    P, Q = _brute(row0, row1, n, k, _radix_decoder(2 * 2, m * s))
    compare(case.pair(n, k), P, Q)


@pytest.mark.parametrize("n,k", SAMPLINGS)
@pytest.mark.parametrize("others", [0, 2])
def test_kary_rr_against_brute_force(n, k, others):
    eps, kk = 1.4, 4
    case = C.kary_rr(eps, kk, others)
    tab = T.kary_table(eps, kk)
    Q = X.brute_force_views([tab[0]] + [tab[others]] * (n - 1), k, lambda c: (c,))
    P = X.brute_force_views([tab[1]] + [tab[others]] * (n - 1), k, lambda c: (c,))
    compare(case.pair(n, k), P, Q)


@pytest.mark.parametrize("n,k", SAMPLINGS)
def test_hadamard_response_against_brute_force(n, k):
    eps, kk = 0.9, 3
    case = C.hadamard_response(eps, kk, 0, 2, others=1)
    tab = T.hr_table(eps, kk)
    Q = X.brute_force_views([tab[0]] + [tab[1]] * (n - 1), k, lambda c: (c,))
    P = X.brute_force_views([tab[2]] + [tab[1]] * (n - 1), k, lambda c: (c,))
    compare(case.pair(n, k), P, Q)


@pytest.mark.parametrize("n,k", SAMPLINGS)
def test_l1_and_user_range_against_brute_force(n, k):
    eps, d, r1 = 2.2, 3, 1.3
    case = C.l1(eps, d, i=2, r1=r1)
    tab = T.l1_table(eps, np.array([case.x0, case.x1]), r1)
    P, Q = _brute(tab[0], tab[1], n, k, lambda c: (c,))
    compare(case.pair(n, k), P, Q)
    case = C.user_range(eps, 1.0, 0.3)  # 4 bins, K = 4
    tab = T.hr_table(eps, 4)
    P, Q = _brute(tab[0], tab[3], n, k, lambda c: (c,))
    compare(case.pair(n, k), P, Q)


@pytest.mark.parametrize("n,k", [(2, None), (3, 1), (3, 2), (3, None)])
@pytest.mark.parametrize("B,tau", [(1.0, 0.5), (1.0, 0.3)])
def test_user_mean_two_rounds_against_brute_force(n, k, B, tau):
    """The adaptive two-round view, enumerated with the real server step: the broadcast interval comes
    from ``user_range.interval`` on the round-1 reports of the sampled users."""
    eps, m = 2.6, 2
    case = C.user_mean_two_rounds(eps, m, B, tau)
    rng_mech = mechanisms.get("user_range", epsilon0=eps / 2, B=B, tau=tau)
    K = rng_mech.internals()["groups"]
    hr = T.hr_table(eps / 2, K)
    bin1 = min(math.floor(B / tau), rng_mech.internals()["bins"] - 1)
    users_D = [-B] * n
    users_D1 = [B] + [-B] * (n - 1)
    half = case.mech.internals()["mean_r_inf"]

    def view_law(means):
        out: dict = {}
        samples = list(itertools.combinations(range(n), n if k is None else k))
        with mp.workdps(40):
            for S in samples:
                bins = [0 if means[i] < 0 else bin1 for i in S]
                for c1 in itertools.product(range(2 * K), repeat=len(S)):
                    p1 = mp.mpf(1) / len(samples)
                    for b, c in zip(bins, c1):
                        p1 *= mp.mpf(float(hr[b][c]))
                    rep = {"index": np.array([c // 2 for c in c1]), "bit": np.array([c % 2 for c in c1])}
                    lo, hi = rng_mech.interval(rep)
                    centre = (lo + hi) / 2
                    rows = [
                        T.linf_row(
                            eps / 2,
                            [Fraction((min(max(means[i] - centre, -half), half) + half) / (2 * half))],
                            m,
                            1,
                        )
                        for i in S
                    ]
                    h1 = tuple(sorted(c1))
                    for c2 in itertools.product(range(4), repeat=len(S)):
                        pr = p1
                        for r, c in zip(rows, c2):
                            pr *= mp.mpf(float(r[c]))
                        msgs = [(c >> 1, c & 1) for c in c2]  # level-1 cell, level-2 cell
                        view = (h1, tuple(sorted(x[0] for x in msgs)), tuple(sorted(x[1] for x in msgs)))
                        out[view] = out.get(view, mp.mpf(0)) + pr
        return out

    P, Q = view_law(users_D1), view_law(users_D)
    compare(case.pair(n, k), P, Q, rel=1e-9)


@pytest.mark.parametrize("k", [None, 2])
def test_laplace_mean_binned_against_brute_force(k):
    eps, r, edges = 1.2, 0.7, (-1.0, 0.0, 0.5)
    case = C.laplace_mean(eps, 2, r, edges)
    b = 2 * r / eps
    with mp.workdps(40):

        def law(mu):
            e = [mp.ninf] + [mp.mpf(x) * b for x in edges] + [mp.inf]

            def cdf(y):
                if y == mp.ninf:
                    return mp.mpf(0)
                if y == mp.inf:
                    return mp.mpf(1)
                z = (y - mu) / b
                return mp.e**z / 2 if z < 0 else 1 - mp.e ** (-z) / 2

            return [cdf(e[i + 1]) - cdf(e[i]) for i in range(len(e) - 1)]

        l0, l1 = law(mp.mpf(r)), law(-mp.mpf(r))
    P, Q = _brute([float(x) for x in l0], [float(x) for x in l1], 3, k, lambda c: (c,))
    compare(case.pair(3, k), P, Q)


# ---------------------------------------------------------------------------------------------------
# Composition and the central mechanisms
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rounds", [2, 3])
def test_composed_hockey_stick_against_product_laws(rounds):
    pair = C.binary_vector(3.0, 2, 2).pair(5, 2)
    p, q = pair.p, pair.q
    with mp.workdps(30):
        P, Q = {(): mp.mpf(1)}, {(): mp.mpf(1)}
        for _ in range(rounds):
            P = {key + (i,): v * mp.mpf(float(p[i])) for key, v in P.items() for i in range(p.size)}
            Q = {key + (i,): v * mp.mpf(float(q[i])) for key, v in Q.items() for i in range(q.size)}
        for e in (0.0, 0.05, 0.3, 1.0):
            for rev, (A, B) in ((False, (P, Q)), (True, (Q, P))):
                h, hm = X.hockey_stick(pair, e, rev, rounds), float(X.hockey_stick_mp(A, B, e))
                assert abs(h - hm) <= 1e-10 * hm + 1e-15, (e, rev, h, hm)
        for a in (2.0, 7.0):
            assert rel_close(rounds * X.renyi(pair, [a])[0], X.renyi_mp(P, Q, a), 1e-10)


def test_heterogeneous_product_hockey_stick_against_product_laws():
    """Independent factors of different laws (the shufflers of an unsampled multi-message round)."""
    f1 = C.binary_vector(2.0, 3, 2).pair(2)
    f2 = C.kary_rr(1.0, 3, 2).pair(3)
    f3 = X.shuffled([X.rr_message(0.2)], 4, 2)
    with mp.workdps(30):
        P, Q = {(): mp.mpf(1)}, {(): mp.mpf(1)}
        for f in (f1, f2, f3):
            p, q = f.p, f.q
            P = {key + (i,): v * mp.mpf(float(p[i])) for key, v in P.items() for i in range(p.size)}
            Q = {key + (i,): v * mp.mpf(float(q[i])) for key, v in Q.items() for i in range(q.size)}
        for e in (0.0, 0.2, 1.5):
            for rev, (A, B) in ((False, (P, Q)), (True, (Q, P))):
                h, hm = X.hockey_stick_product([f1, f2, f3], e, rev), float(X.hockey_stick_mp(A, B, e))
                assert abs(h - hm) <= 1e-10 * hm + 1e-15, (e, rev, h, hm)


@pytest.mark.parametrize("mu", [0.05, 0.7, 3.0])
def test_gaussian_against_quadrature(mu):
    g = X.Gaussian(mu)
    for a in (2.0, 5.0, 16.0):

        def logf(y, a=a):
            return a * norm.logpdf(y, mu, 1.0) + (1 - a) * norm.logpdf(y, 0.0, 1.0)

        # log-concave integrand: scale by its numerically located maximum, integrate ±40 around it
        top = minimize_scalar(lambda y: -logf(y), bracket=(-1.0, 1.0 + a * mu)).x
        shift = logf(top)
        val = quad(
            lambda y, s=shift, f=logf: math.exp(f(y) - s),
            top - 40,
            top + 40,
            epsabs=0,
            epsrel=1e-13,
            limit=200,
            points=[top],
        )[0]
        assert rel_close(g.renyi([a])[0], (math.log(val) + shift) / (a - 1), 1e-10)
    for e in (0.0, 0.3, 2.0):

        def h(y, e=e):
            return max(0.0, norm.pdf(y, mu, 1.0) - math.exp(e) * norm.pdf(y, 0.0, 1.0))

        cut = e / mu + mu / 2  # P > e^ε Q  ⇔  y > ε/μ + μ/2
        val = quad(h, cut, np.inf, epsabs=1e-16, epsrel=1e-12)[0]
        assert abs(g.hockey_stick(e) - val) <= 1e-10 * val + 1e-15
        # T rounds: the product of T Gaussians is one Gaussian with μ√T
        assert g.hockey_stick(e, rounds=4) == pytest.approx(X.Gaussian(2 * mu).hockey_stick(e), rel=1e-12)


@pytest.mark.parametrize("lam", [0.05, 1.0, 4.0])
def test_laplace_against_mpmath_quadrature(lam):
    L = X.Laplace(lam)
    with mp.workdps(30):
        b = 1 / mp.mpf(lam)
        for a in (2, 5, 16):

            def f(y, a=a):
                return mp.e ** (-(a * abs(y - 1) + (1 - a) * abs(y)) / b) / (2 * b)

            val = mp.quad(f, [mp.ninf, 0, 1, mp.inf])
            assert rel_close(L.renyi([a])[0], mp.log(val) / (a - 1), 1e-11)
        for e in (0.0, 0.4 * lam, lam):

            def h(y, e=e):
                return max(mp.mpf(0), (mp.e ** (-abs(y - 1) / b) - mp.e ** (e - abs(y) / b)) / (2 * b))

            val = mp.quad(h, [mp.ninf, 0, (1 + e * b) / 2, 1, mp.inf])
            assert abs(L.hockey_stick(e) - float(val)) <= 1e-10 * float(val) + 1e-14
            # the binned (post-processed) law is a lower bound, and close to the exact value
            hb = X.hockey_stick(L.binned(), e)
            assert hb <= float(val) * (1 + 1e-9) + 1e-15 and hb >= float(val) - 0.02 * lam
