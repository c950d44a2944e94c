"""Exact output distributions of shuffled (and subsampled) local randomizers on neighbouring datasets,
and their exact Rényi and hockey-stick divergences. Test-only; independent of the ``accountant`` package.

Model (replace-one neighbours, one use of a mechanism = one round):

* every report consists of L messages; message ℓ of every user goes to shuffler ℓ, and a user's L
  messages are independent given its input (one random index and one flip per slot, as in the
  mechanisms). The output of shuffler ℓ is the histogram of the messages it receives, and the view
  of the analyst is the tuple of the L histograms;
* D: all N users hold the same input x₀ (message ℓ has law π_ℓ). D': one user u holds x₁ instead
  (law π'_ℓ). More generally u may hold x₀' ≠ x₀ in D (law ρ-weighted below);
* with client sampling, k of the n users are drawn uniformly without replacement and ONLY they
  report; all L messages of the round share that sample. u is sampled with probability γ = k/n.

For one shuffler with N reporting users of whom N − 1 are "others" with law π and one is u with law
μ, the histogram h has probability Mult(N − 1, π) ∗ μ, and relative to the base Mult(N, π)

    P(h) / Mult(N, π)(h) = Σ_c (h_c / N) · μ(c) / π(c)                                    (1)

(Mult(N−1, π)(h − e_c)·μ(c) = (h_c/N)·Mult(N, π)(h)·μ(c)/π(c)). The ratio (1) depends on h only
through the counts of the classes of cells on which the pair of ratios (μ/π, μ'/π) is constant,
so those class counts are a sufficient statistic for {P_D, P_D'} and every f-divergence is unchanged
when the cells of a class are merged (``MessagePair.merged``). With sampling, the view given "u not
sampled" is the base ⊗_ℓ Mult(k, π_ℓ) under both D and D', and given "u sampled" it is the base
times Π_ℓ (1)_ℓ, so

    P_D(view) = base(view) · [(1 − γ) + γ · Π_ℓ R_ℓ(h_ℓ)],   R_ℓ from (1) with u's law under D,

and likewise for D'. Without sampling γ = 1, N = n. ``ShuffledPair`` stores base weights w, the
logs of the two densities a = P_{D'}/w, b = P_D/w (log R from the positive sum, or log1p of the
excess near 1; the mixture by logaddexp) and a − b, so that neither tiny ratios nor ratios near 1
lose precision (checked against mpmath in tests/audit/test_exact_helper.py).

Divergences, in the φ-form that keeps tiny values accurate: with t = P/Q − 1 (E_Q[t] = 0),

    D_α(P‖Q) = log1p(E_Q[φ_α(t)]) / (α − 1),   φ_α(t) = (1 + t)^α − 1 − α t ≥ 0,

and the hockey-stick divergence δ_{P‖Q}(ε) = E_Q[(P/Q − e^ε)_+] = Σ (P − e^ε Q)_+. T independent
rounds: D_α is additive, and the hockey-stick divergence of the product is computed exactly from the
privacy-loss values (all combinations of T − 1 rounds, the last one by sorted prefix sums).

The mpmath functions at the end (``brute_force_views``, ``renyi_mp``, ``hockey_stick_mp``) enumerate
every assignment of reports to users and every sample; they share nothing with the fast path and are
used to check it on small cases.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import mpmath as mp
import numpy as np
from scipy.special import logsumexp
from scipy.stats import binom

MAX_SUPPORT = 3_000_000


# ---------------------------------------------------------------------------------------------------
# One message slot
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MessagePair:
    """Laws over one message alphabet: ``others`` (π, every user of D and every other user of D'),
    ``user`` (u's message in D; None means π) and ``user_prime`` (u's message in D')."""

    others: np.ndarray
    user_prime: np.ndarray
    user: np.ndarray | None = None

    def __post_init__(self):
        pi = np.asarray(self.others, dtype=float)
        up = np.asarray(self.user_prime, dtype=float)
        u = pi if self.user is None else np.asarray(self.user, dtype=float)
        for name, v in (("others", pi), ("user", u), ("user_prime", up)):
            if v.ndim != 1 or v.shape != pi.shape:
                raise ValueError(f"{name} must be a vector over the same alphabet")
            if np.any(v < 0) or abs(math.fsum(v) - 1.0) > 1e-12:
                raise ValueError(f"{name} must be a probability vector (sum {math.fsum(v)!r})")
        if np.any(pi <= 0):
            raise ValueError("the others' law must be positive on the whole alphabet")
        object.__setattr__(self, "others", pi)
        object.__setattr__(self, "user", u)
        object.__setattr__(self, "user_prime", up)

    def merged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(π, μ/π, μ'/π) over the classes of cells with equal ratio pairs (see module doc)."""
        r = self.user / self.others
        rp = self.user_prime / self.others
        keys = np.stack([r, rp], axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        pi = np.zeros(len(uniq))
        for c, j in enumerate(np.ravel(inv)):
            pi[j] += self.others[c]
        return pi, uniq[:, 0], uniq[:, 1]

    def max_log_ratio(self) -> float:
        """max over cells of |log μ'(c)/μ(c)| — the message's local ε for this pair."""
        return float(np.max(np.abs(np.log(self.user_prime) - np.log(self.user))))


def rr_message(p_flip: float, bit: int = 0, bit_prime: int = 1, others_bit: int | None = None) -> MessagePair:
    """A binary randomized-response message: y = bit ⊕ Bern(p_flip)."""

    def law(b):
        return np.array([1 - p_flip, p_flip]) if b == 0 else np.array([p_flip, 1 - p_flip])

    ob = bit if others_bit is None else others_bit
    return MessagePair(others=law(ob), user=law(bit), user_prime=law(bit_prime))


# ---------------------------------------------------------------------------------------------------
# Histograms
# ---------------------------------------------------------------------------------------------------


def compositions(N: int, C: int) -> np.ndarray:
    """All h ∈ ℕ^C with Σ h = N, shape (C(N+C−1, C−1), C)."""
    if C == 1:
        return np.array([[N]], dtype=np.int64)
    size = math.comb(N + C - 1, C - 1)
    if size > MAX_SUPPORT:
        raise ValueError(f"{size} histograms: too many for exact enumeration")
    # stars and bars: choose the C−1 bar positions among N + C − 1 slots
    bars = np.array(list(itertools.combinations(range(N + C - 1), C - 1)), dtype=np.int64)
    edges = np.concatenate([np.full((len(bars), 1), -1), bars, np.full((len(bars), 1), N + C - 1)], axis=1)
    return np.diff(edges, axis=1) - 1


def multinomial_pmf(H: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """Mult(N, π)(h) for each row h of H, as a product of conditional binomials Bin(left, π_i/rest),
    each evaluated on the side whose probability is ≤ 1/2 (the other side's probability
    rest_after/rest is formed from sums, never as 1 − p), so every factor is accurate to a few ulp."""
    H = np.asarray(H, dtype=np.int64)
    pi = np.asarray(pi, dtype=float)
    out = np.ones(H.shape[0])
    left = H.sum(axis=1)
    for i in range(H.shape[1] - 1):
        rest = math.fsum(pi[i:])
        after = math.fsum(pi[i + 1 :])
        if pi[i] <= after:
            out *= binom.pmf(H[:, i], left, pi[i] / rest)
        else:
            out *= binom.pmf(left - H[:, i], left, after / rest)
        left = left - H[:, i]
    return out


# ---------------------------------------------------------------------------------------------------
# The pair of view distributions
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShuffledPair:
    """P = P_{D'} = w·a and Q = P_D = w·b over a common finite support, with a = e^{la}, b = e^{lb}
    and diff = a − b each computed without cancellation (logs for ratios far from 1, differences
    for ratios near 1)."""

    w: np.ndarray
    la: np.ndarray
    lb: np.ndarray
    diff: np.ndarray

    @property
    def a(self) -> np.ndarray:
        return np.exp(self.la)

    @property
    def b(self) -> np.ndarray:
        return np.exp(self.lb)

    @property
    def p(self) -> np.ndarray:
        return self.w * self.a

    @property
    def q(self) -> np.ndarray:
        return self.w * self.b

    def ratio_minus_one(self) -> np.ndarray:
        """P/Q − 1 = a/b − 1."""
        near = np.abs(self.la - self.lb) < 0.5
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(near, self.diff / self.b, np.expm1(self.la - self.lb))

    def log_ratio(self) -> np.ndarray:
        """log P/Q."""
        near = np.abs(self.la - self.lb) < 0.5
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(near, np.log1p(self.diff / self.b), self.la - self.lb)

    def swapped(self) -> ShuffledPair:
        return ShuffledPair(self.w, self.lb, self.la, -self.diff)

    @staticmethod
    def concat(parts: Sequence[ShuffledPair]) -> ShuffledPair:
        return ShuffledPair(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in ("w", "la", "lb", "diff"))
        )

    def __len__(self) -> int:
        return self.w.size

    @staticmethod
    def from_laws(p: np.ndarray, q: np.ndarray) -> ShuffledPair:
        """P = p, Q = q over the same cells (q > 0 wherever p > 0)."""
        p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
        keep = q > 0
        if np.any(p[~keep] > 0):
            raise ValueError("P is not absolutely continuous w.r.t. Q")
        p, q = p[keep], q[keep]
        with np.errstate(divide="ignore"):
            return ShuffledPair(w=q, la=np.log(p / q), lb=np.zeros_like(q), diff=(p - q) / q)

    @staticmethod
    def mixture(w: np.ndarray, la: np.ndarray, lb: np.ndarray, gamma: float) -> ShuffledPair:
        """Densities (1 − γ) + γ·e^{la} and (1 − γ) + γ·e^{lb} relative to w (γ = 1: e^{la}, e^{lb})."""
        diff = gamma * (np.expm1(la) - np.expm1(lb))
        if gamma < 1.0:
            l0, lg = math.log1p(-gamma), math.log(gamma)
            la, lb = np.logaddexp(l0, lg + la), np.logaddexp(l0, lg + lb)
        return ShuffledPair(w=w, la=la, lb=lb, diff=diff)


def _log_ratio(H: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """log R(h), R(h) = Σ_c (h_c/N) ρ_c (formula (1)): log1p of Σ (h_c/N)(ρ_c − 1) near R = 1,
    the log of the positive sum elsewhere — both to a few ulp."""
    N = H[0].sum()
    R = H @ rho / N
    ex = H @ (rho - 1.0) / N
    with np.errstate(divide="ignore"):
        return np.where(np.abs(ex) < 0.5, np.log1p(ex), np.log(R))


def _slot_arrays(msg: MessagePair, N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(base weights, log R under D, log R' under D') over the class histograms of N users."""
    pi, r, rp = msg.merged()
    H = compositions(N, pi.size)
    return multinomial_pmf(H, pi), _log_ratio(H, r), _log_ratio(H, rp)


def _joint(slots, w=None, lb=None, la=None):
    w = np.ones(1) if w is None else w
    lb = np.zeros(1) if lb is None else lb
    la = np.zeros(1) if la is None else la
    for ws, lbs, las in slots:
        if w.size * ws.size > MAX_SUPPORT:
            raise ValueError(f"{w.size * ws.size} joint histograms: too many for exact enumeration")
        w = np.outer(w, ws).ravel()
        lb = (lb[:, None] + lbs[None, :]).ravel()
        la = (la[:, None] + las[None, :]).ravel()
    return w, lb, la


def shuffled(messages: Sequence[MessagePair], n: int, k: int | None = None) -> ShuffledPair:
    """Exact views of one round: L shufflers (one per message), n users, k of them sampled when given."""
    if k is None:
        N, gamma = n, 1.0
    else:
        if not 1 <= k <= n:
            raise ValueError("need 1 <= k <= n")
        N, gamma = k, k / n
    w, lb, la = _joint(_slot_arrays(m, N) for m in messages)
    return ShuffledPair.mixture(w, la, lb, gamma)


def two_stage(
    stage1: MessagePair, stage2: Callable[[np.ndarray], Sequence[MessagePair]], n: int, k: int | None = None
) -> ShuffledPair:
    """Exact views of an adaptive round: one shuffled message, then L shuffled messages whose laws
    depend on the first shuffler's full histogram (``stage2(h1)``, h1 over stage1's alphabet, not
    merged). The same users (the same sample) take part in both stages."""
    N, gamma = (n, 1.0) if k is None else (k, k / n)
    pi = stage1.others
    H1 = compositions(N, pi.size)
    w1 = multinomial_pmf(H1, pi)
    l1b = _log_ratio(H1, stage1.user / pi)
    l1a = _log_ratio(H1, stage1.user_prime / pi)
    parts = []
    for i, h1 in enumerate(H1):
        w, lb, la = _joint(
            (_slot_arrays(m, N) for m in stage2(h1)),
            np.array([w1[i]]),
            np.array([l1b[i]]),
            np.array([l1a[i]]),
        )
        parts.append(ShuffledPair.mixture(w, la, lb, gamma))
    return ShuffledPair.concat(parts)


# ---------------------------------------------------------------------------------------------------
# Divergences
# ---------------------------------------------------------------------------------------------------


def phi(alpha: float, t: np.ndarray) -> np.ndarray:
    """φ_α(t) = (1+t)^α − 1 − αt for t > −1, accurate to a few ulp of the result: the binomial
    series Σ_{j≥2} C(α,j) t^j for |t| ≤ 1/4 and |α·t| ≤ 2, the direct form (cancellation ≤ 16×)
    otherwise (for |α·t| > 2 the series' alternating terms would cancel catastrophically, and the
    direct form does not cancel: φ is then of the size of its terms)."""
    t = np.asarray(t, dtype=float)
    out = np.empty_like(t)
    small = (np.abs(t) <= 0.25) & (np.abs(alpha * t) <= 2.0)
    ts = t[small]
    acc = np.zeros_like(ts)
    coef = alpha * (alpha - 1.0) / 2.0
    power = ts * ts
    for j in range(2, 400):
        term = coef * power
        acc += term
        if coef == 0.0 or np.all(np.abs(term) <= 1e-18 * np.abs(acc)):
            break
        coef *= (alpha - j) / (j + 1.0)
        power = power * ts
    else:  # pragma: no cover - |t| ≤ 1/4 converges long before
        raise RuntimeError("φ series did not converge")
    out[small] = acc
    tl = t[~small]
    with np.errstate(divide="ignore"):  # t = −1 (P = 0): (1 + t)^α = 0
        out[~small] = np.expm1(alpha * np.log1p(tl)) - alpha * tl
    return out


def renyi(pair: ShuffledPair, orders, reverse: bool = False) -> np.ndarray:
    """D_α(P_{D'} ‖ P_D) at each order (reverse: D_α(P_D ‖ P_{D'})). φ-form; where (P/Q)^α would
    overflow, the plain log Σ Q·(P/Q)^α in log space (no cancellation can matter there)."""
    pr = pair.swapped() if reverse else pair
    keep = pr.w > 0
    w, lq = pr.w[keep], np.log(pr.w[keep]) + pr.lb[keep]
    q = w * np.exp(pr.lb[keep])
    t = pr.ratio_minus_one()[keep]
    lr = pr.log_ratio()[keep]
    out = []
    for a in np.atleast_1d(np.asarray(orders, dtype=float)):
        if np.max(a * lr) > 300.0:
            out.append(float(logsumexp(lq + a * lr)) / (a - 1.0))
        else:
            out.append(math.log1p(math.fsum(q * phi(a, t))) / (a - 1.0))
    return np.array(out)


def _loss_dist(pair: ShuffledPair) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    keep = pair.w > 0
    return pair.p[keep], pair.q[keep], pair.log_ratio()[keep]


def hockey_stick(pair: ShuffledPair, epsilon: float, reverse: bool = False, rounds: int = 1) -> float:
    """E_Q[(P/Q − e^ε)_+] of the ``rounds``-fold products, P = P_{D'}, Q = P_D (reverse: swapped).
    One round: Σ_{log P/Q > ε} P·(1 − e^{ε − log P/Q}), every term to a few ulp."""
    pr = pair.swapped() if reverse else pair
    if rounds == 1:
        lr = pr.log_ratio()
        pos = lr > epsilon
        return math.fsum(pr.p[pos] * -np.expm1(epsilon - lr[pos]))
    return hockey_stick_product([pair] * rounds, epsilon, reverse)


def hockey_stick_product(pairs: Sequence[ShuffledPair], epsilon: float, reverse: bool = False) -> float:
    """E_Q[(P/Q − e^ε)_+] for P = ⊗ P_i, Q = ⊗ Q_i (independent releases; reverse: every factor swapped).

    All combinations of every factor but the largest are listed (privacy losses add); for the
    largest, sorted by loss, the cells with P·p_j > e^ε Q·q_j are {j : L_j > ε − L} and their
    contribution is P·Σp_j − e^ε Q·Σq_j (suffix sums)."""
    dists = [_loss_dist(p.swapped() if reverse else p) for p in pairs]
    last = int(np.argmax([d[0].size for d in dists]))
    rest = [d for i, d in enumerate(dists) if i != last]
    if math.prod(d[0].size for d in rest) > MAX_SUPPORT:
        raise ValueError("too many combinations for an exact composed hockey-stick divergence")
    P, Q, Lsum = np.ones(1), np.ones(1), np.zeros(1)
    for p, q, loss in rest:
        P = np.outer(P, p).ravel()
        Q = np.outer(Q, q).ravel()
        Lsum = (Lsum[:, None] + loss[None, :]).ravel()
    p, q, loss = dists[last]
    order = np.argsort(-loss, kind="stable")
    ls = loss[order]
    cp = np.concatenate([[0.0], np.cumsum(p[order])])
    cq = np.concatenate([[0.0], np.cumsum(q[order])])
    cnt = np.searchsorted(-ls, -(epsilon - Lsum), side="left")  # #{j : L_j > ε − Lsum}
    terms = P * cp[cnt] - math.exp(epsilon) * Q * cq[cnt]
    return math.fsum(np.maximum(terms, 0.0))


def product_size(pairs: Sequence[ShuffledPair]) -> int:
    """How many combinations ``hockey_stick_product`` lists for these factors."""
    sizes = sorted(len(p) for p in pairs)
    return math.prod(sizes[:-1]) if sizes else 1


# ---------------------------------------------------------------------------------------------------
# Central Gaussian and Laplace: P = law of M(D') = N(Δ, σ²) or Lap(Δ, b), Q = law of M(D) centred at 0
# ---------------------------------------------------------------------------------------------------


class Gaussian:
    """N(0, σ²) vs N(Δ, σ²) with μ = Δ/σ (one coordinate carries the whole ℓ2 difference; the others
    are identical and independent). D_α = α μ²/2 exactly in both directions, T rounds = one release
    with μ√T; hockey-stick divergence (Balle & Wang 2018, Thm 8)
    δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), evaluated with log Φ."""

    def __init__(self, mu: float):
        self.mu = float(mu)

    def renyi(self, orders, reverse: bool = False) -> np.ndarray:
        del reverse  # the pair is symmetric: both directions are equal
        return np.asarray(orders, dtype=float) * self.mu**2 / 2.0

    def hockey_stick(self, epsilon: float, reverse: bool = False, rounds: int = 1) -> float:
        del reverse  # the pair is symmetric: both directions are equal
        from scipy.stats import norm

        mu = self.mu * math.sqrt(rounds)
        a = norm.logcdf(mu / 2 - epsilon / mu)
        b = epsilon + norm.logcdf(-mu / 2 - epsilon / mu)
        return max(0.0, math.exp(a) * -math.expm1(b - a)) if a > b else 0.0


def laplace_renyi_quad(lam: float, alpha: float) -> float:
    """D_α(Lap(1, 1/λ) ‖ Lap(0, 1/λ)) = log ∫ p^α q^{1−α} / (α−1) by adaptive quadrature on the three
    pieces where the integrand is smooth (scipy.integrate.quad; symmetric in the two directions)."""
    from scipy.integrate import quad

    b = 1.0 / lam

    def f(y):  # p = Lap(1, b) density, q = Lap(0, b); p^α q^{1−α}
        return math.exp(-(alpha * abs(y - 1.0) + (1.0 - alpha) * abs(y)) / b) / (2 * b)

    pieces = [
        quad(f, -np.inf, 0.0, epsabs=0, epsrel=1e-13, limit=200)[0],
        quad(f, 0.0, 1.0, epsabs=0, epsrel=1e-13, limit=200)[0],
        quad(f, 1.0, np.inf, epsabs=0, epsrel=1e-13, limit=200)[0],
    ]
    return math.log(math.fsum(pieces)) / (alpha - 1.0)


class Laplace:
    """Lap(0, b) vs Lap(Δ, b), λ = Δ/b. D_α by quadrature (``laplace_renyi_quad``, symmetric pair);
    one release's hockey-stick divergence δ(ε) = max(0, 1 − e^{(ε−λ)/2}); T > 1 rounds: the exact
    divergence of the output rounded to a grid of width b/``grid`` — a post-processing, hence a
    lower bound of the true δ (data-processing inequality)."""

    def __init__(self, lam: float, grid: int = 16, span: float = 40.0):
        self.lam = float(lam)
        self.grid, self.span = grid, span

    def renyi(self, orders, reverse: bool = False) -> np.ndarray:
        del reverse  # the pair is symmetric: both directions are equal
        return np.array([laplace_renyi_quad(self.lam, a) for a in np.atleast_1d(orders)])

    def binned(self) -> ShuffledPair:
        from scipy.stats import laplace

        b = 1.0 / self.lam
        inner = np.arange(-self.span * b, (self.span + self.lam) * b, b / self.grid)
        e = np.concatenate([[-np.inf], inner, [np.inf]])
        q = np.diff(laplace.cdf(e, loc=0.0, scale=b))
        p = np.diff(laplace.cdf(e, loc=1.0, scale=b))
        # upper tail: sf differences are accurate where cdf differences are not
        up = e[:-1] >= 1.0
        q[up] = -np.diff(laplace.sf(e, loc=0.0, scale=b))[up]
        p[up] = -np.diff(laplace.sf(e, loc=1.0, scale=b))[up]
        return ShuffledPair.from_laws(p, q)

    def hockey_stick(self, epsilon: float, reverse: bool = False, rounds: int = 1) -> float:
        if rounds == 1:
            return max(0.0, -math.expm1((epsilon - self.lam) / 2.0))
        return hockey_stick(self.binned(), epsilon, reverse, rounds)


# ---------------------------------------------------------------------------------------------------
# Independent reference: brute force in mpmath
# ---------------------------------------------------------------------------------------------------


def brute_force_views(
    tables: Sequence[Sequence], k: int | None, decode: Callable[[int], tuple], dps: int = 40
) -> dict:
    """Exact law of the view when user i's whole report is cell c with probability tables[i][c],
    ``decode(c)`` gives the report's L messages, k users are sampled (all when None), and shuffler ℓ
    outputs the multiset (sorted tuple) of the ℓ-th messages of the sampled users. Every sample and
    every assignment of reports to the sampled users is enumerated, in mpmath."""
    n = len(tables)
    with mp.workdps(dps):
        tabs = [[mp.mpf(float(x)) for x in t] for t in tables]
        samples = list(itertools.combinations(range(n), n if k is None else k))
        ps = mp.mpf(1) / len(samples)
        out: dict = {}
        for S in samples:
            for cells in itertools.product(*(range(len(tabs[i])) for i in S)):
                pr = ps
                for i, c in zip(S, cells):
                    pr *= tabs[i][c]
                if pr == 0:
                    continue
                msgs = [decode(c) for c in cells]
                view = tuple(tuple(sorted(m[ell] for m in msgs)) for ell in range(len(msgs[0])))
                out[view] = out.get(view, mp.mpf(0)) + pr
        return out


def renyi_mp(P: dict, Q: dict, alpha, dps: int = 40):
    """D_α(P‖Q) = log Σ P^α Q^{1−α} / (α − 1), term by term in mpmath."""
    with mp.workdps(dps):
        a = mp.mpf(alpha)
        s = mp.fsum(P[v] ** a * Q[v] ** (1 - a) for v in P if P[v] > 0)
        return mp.log(s) / (a - 1)


def hockey_stick_mp(P: dict, Q: dict, epsilon, dps: int = 40):
    with mp.workdps(dps):
        e = mp.e ** mp.mpf(epsilon)
        keys = set(P) | set(Q)
        return mp.fsum(max(mp.mpf(0), P.get(v, 0) - e * Q.get(v, 0)) for v in keys)


def binomial_pair_mp(n: int, eps0, dps: int = 40) -> tuple[dict, dict]:
    """Bounds.md §2's pair (binary RR, D = 0…0, D' = 0…01) as exact laws of the count of ones."""
    with mp.workdps(dps):
        E = mp.e ** mp.mpf(eps0)
        p = 1 / (E + 1)
        Q = {c: mp.binomial(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)}
        P = {}
        for c in range(n + 1):
            base = mp.binomial(n - 1, c) * p**c * (1 - p) ** (n - 1 - c) * p if c <= n - 1 else mp.mpf(0)
            one = (
                mp.binomial(n - 1, c - 1) * p ** (c - 1) * (1 - p) ** (n - c) * (1 - p)
                if c >= 1
                else mp.mpf(0)
            )
            P[c] = base + one
        return P, Q


__all__ = [
    "Gaussian",
    "Laplace",
    "laplace_renyi_quad",
    "MessagePair",
    "ShuffledPair",
    "binomial_pair_mp",
    "brute_force_views",
    "compositions",
    "hockey_stick",
    "hockey_stick_mp",
    "hockey_stick_product",
    "product_size",
    "multinomial_pmf",
    "phi",
    "renyi",
    "renyi_mp",
    "rr_message",
    "shuffled",
    "two_stage",
]


# ---------------------------------------------------------------------------------------------------
# Other users holding different inputs (the randomized-response audit of bounds.md §12)
# ---------------------------------------------------------------------------------------------------


def _convolve_hist(
    dist: dict[tuple[int, ...], float], law: np.ndarray, times: int
) -> dict[tuple[int, ...], float]:
    """The law of histograms after ``times`` more users draw one symbol each from ``law``."""
    for _ in range(times):
        out: dict[tuple[int, ...], float] = {}
        for h, p in dist.items():
            for c, q in enumerate(law):
                if q == 0.0:
                    continue
                h2 = h[:c] + (h[c] + 1,) + h[c + 1 :]
                out[h2] = out.get(h2, 0.0) + p * q
        dist = out
        if len(dist) > MAX_SUPPORT:
            raise ValueError("too many histograms for exact enumeration")
    return dist


def _hypergeometric(counts: Sequence[int], k: int) -> list[tuple[tuple[int, ...], float]]:
    """Every way to sample k of the users whose symbols have ``counts`` (uniformly without
    replacement), as (sampled counts per symbol, probability)."""
    total = sum(counts)
    out = []
    for s in itertools.product(*(range(c + 1) for c in counts)):
        if sum(s) == k:
            ways = math.prod(math.comb(c, x) for c, x in zip(counts, s))
            out.append((tuple(s), ways / math.comb(total, k)))
    return out


def mixed_shuffle(
    laws: Sequence[np.ndarray], counts: Sequence[int], user: int, user_prime: int, k: int | None = None
) -> ShuffledPair:
    """Exact views of one shuffled round when the OTHER users hold different inputs: ``counts[x]``
    other users hold input x, whose report has the law ``laws[x]`` (one law per input); the changed
    user holds ``user`` in D and ``user_prime`` in D'; with ``k``, k of the n = Σ counts + 1 users are
    sampled uniformly without replacement and the sample is not revealed. P = P_{D'}, Q = P_D over
    the histograms of reports (what the shuffler shows)."""
    laws = [np.asarray(v, dtype=float) for v in laws]
    size = laws[0].size
    n = sum(counts) + 1
    k = n if k is None else k
    p: dict[tuple[int, ...], float] = {}
    q: dict[tuple[int, ...], float] = {}
    zero = (0,) * size
    # the changed user sampled (probability k/n): k − 1 others with it; else k others
    for own, weight in ((True, k / n), (False, 1.0 - k / n)):
        if weight == 0.0:
            continue
        for sampled, w in _hypergeometric(counts, k - 1 if own else k):
            base = {zero: w * weight}
            for x, c in enumerate(sampled):
                base = _convolve_hist(base, laws[x], c)
            if own:
                targets = ((p, laws[user_prime]), (q, laws[user]))
                for acc, law in targets:
                    for h, v in _convolve_hist(base, law, 1).items():
                        acc[h] = acc.get(h, 0.0) + v
            else:
                for acc in (p, q):
                    for h, v in base.items():
                        acc[h] = acc.get(h, 0.0) + v
    keys = sorted(set(p) | set(q))
    return ShuffledPair.from_laws(
        np.array([p.get(h, 0.0) for h in keys]), np.array([q.get(h, 0.0) for h in keys])
    )
