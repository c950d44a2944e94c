"""Brute-force references for the subsampled clone pair (bounds.md §9), written from the
definitions — the laws of B, P_k, Q_k as products of binomials, cell by cell — and sharing no code
with accountant.subsampled_clones (no decomposition over m, no bins, no windows).

P̃ = γ·P_k + (1−γ)·B, Q̃ = γ·Q_k + (1−γ)·B over the cells (a, b), a + b ≤ k:
  B(a, b)   = C(k, m) p^m (1−p)^{k−m} · C(m, a) 2^{−m},                    m = a + b,
  P_k(a, b) = C(k−1, m−1) p^{m−1} (1−p)^{k−m} · [q·C(m−1, a−1) + (1−q)·C(m−1, a)] 2^{−(m−1)},
  Q_k(a, b) = P_k(b, a),   p = e^{−ε0},  q = e^{ε0}/(e^{ε0} + 1).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np


def _laws_mp(n: int, k: int, eps0: float) -> list[tuple[mp.mpf, mp.mpf]]:
    p = mp.e ** (-mp.mpf(eps0))
    q = mp.e ** mp.mpf(eps0) / (mp.e ** mp.mpf(eps0) + 1)
    g = mp.mpf(k) / n
    cells = []
    for m in range(k + 1):
        pm_b = mp.binomial(k, m) * p**m * (1 - p) ** (k - m)
        pm_c = mp.binomial(k - 1, m - 1) * p ** (m - 1) * (1 - p) ** (k - m) if m >= 1 else mp.mpf(0)
        for a in range(m + 1):
            b = m - a
            bb = pm_b * mp.binomial(m, a) / mp.mpf(2) ** m
            if m >= 1:
                half = mp.mpf(2) ** (m - 1)
                pk = (
                    pm_c
                    * (q * (mp.binomial(m - 1, a - 1) if a >= 1 else 0) + (1 - q) * mp.binomial(m - 1, a))
                    / half
                )
                qk = (
                    pm_c
                    * (q * (mp.binomial(m - 1, b - 1) if b >= 1 else 0) + (1 - q) * mp.binomial(m - 1, b))
                    / half
                )
            else:
                pk = qk = mp.mpf(0)
            cells.append((g * pk + (1 - g) * bb, g * qk + (1 - g) * bb))
    return cells


def renyi_mp(n: int, k: int, eps0: float, alpha: float, dps: int = 40) -> float:
    """D_α(P̃‖Q̃) summed over every cell with ``dps`` digits."""
    with mp.workdps(dps):
        al = mp.mpf(alpha)
        tot = mp.fsum(P**al * Q ** (1 - al) for P, Q in _laws_mp(n, k, eps0) if Q > 0)
        return float(mp.log(tot) / (al - 1))


def delta_mp(n: int, k: int, eps0: float, eps: float, dps: int = 40) -> float:
    """Σ (P̃ − e^ε Q̃)_+ summed over every cell with ``dps`` digits."""
    with mp.workdps(dps):
        c = mp.e ** mp.mpf(eps)
        return float(mp.fsum(max(P - c * Q, 0) for P, Q in _laws_mp(n, k, eps0)))


def log_laws_float(n: int, k: int, eps0: float) -> tuple[np.ndarray, np.ndarray]:
    """(log P̃, log Q̃) over every cell in float64, mixtures formed in log space (no underflow of
    the extreme cells; for k up to a few thousand)."""
    from scipy.special import gammaln

    p = math.exp(-eps0)
    lq, l1q = -math.log1p(math.exp(-eps0)), -math.log1p(math.exp(eps0))  # log q, log(1 − q)
    g = k / n
    m = np.concatenate([np.full(i + 1, i) for i in range(k + 1)]).astype(float)
    a = np.concatenate([np.arange(i + 1) for i in range(k + 1)]).astype(float)
    b = m - a

    def lc(N, j):
        with np.errstate(invalid="ignore"):
            ok = (j >= 0) & (j <= N) & (N >= 0)
            jj, NN = np.where(ok, j, 0), np.where(ok, N, 0)
            return np.where(ok, gammaln(NN + 1) - gammaln(jj + 1) - gammaln(NN - jj + 1), -np.inf)

    lb = lc(k, m) + m * math.log(p) + (k - m) * math.log1p(-p) + lc(m, a) - m * math.log(2)
    lcm = lc(k - 1, m - 1) + (m - 1) * math.log(p) + (k - m) * math.log1p(-p) - (m - 1) * math.log(2)
    lcm = np.where(m >= 1, lcm, -np.inf)
    lpk = lcm + np.logaddexp(lq + lc(m - 1, a - 1), l1q + lc(m - 1, a))
    lqk = lcm + np.logaddexp(lq + lc(m - 1, b - 1), l1q + lc(m - 1, b))
    with np.errstate(divide="ignore"):
        lg, l1g = math.log(g), (math.log1p(-g) if g < 1 else -np.inf)
    return np.logaddexp(lg + lpk, l1g + lb), np.logaddexp(lg + lqk, l1g + lb)


def renyi_float(n: int, k: int, eps0: float, orders) -> np.ndarray:
    """D_α(P̃‖Q̃) at each order, every cell summed in float64 in the φ-form
    Σ Q̃·φ_α(P̃/Q̃ − 1) (tests/helpers/exact.phi), with P̃ − Q̃ = γ·(P_k − Q_k) and, from the
    definitions (b = the Bin(m−1, ½) pmf, b(j) = b(m−1−j)),
    P_k − Q_k = Pr[C = m−1]·(2q − 1)·(b(a−1) − b(a)) — so small divergences keep their relative
    accuracy; the plain log Σ P̃^α Q̃^{1−α} where (P̃/Q̃)^α is huge."""
    from scipy.special import gammaln

    from .exact import phi

    lp, lq = log_laws_float(n, k, eps0)
    p = math.exp(-eps0)
    g = k / n
    s2q = math.tanh(eps0 / 2.0)  # 2q − 1
    m = np.concatenate([np.full(i + 1, i) for i in range(k + 1)]).astype(float)
    a = np.concatenate([np.arange(i + 1) for i in range(k + 1)]).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        lpc = (
            gammaln(k) - gammaln(m) - gammaln(k - m + 1) + (m - 1) * math.log(p) + (k - m) * math.log1p(-p)
        )  # log Pr[C = m − 1]
        lbm = gammaln(m) - gammaln(a + 1) - gammaln(m - a) - (m - 1) * math.log(2)  # log b(a), a ≤ m − 1
        lbm1 = gammaln(m) - gammaln(a) - gammaln(m - a + 1) - (m - 1) * math.log(2)  # log b(a − 1), a ≥ 1
        inner = np.where(
            (a > 0) & (a < m),
            np.exp(lbm) * np.expm1(np.log(a) - np.log(m - a)),
            np.where(a == m, np.exp(lbm1), -np.exp(lbm)),
        )
        diff = np.where(m >= 1, g * s2q * np.exp(lpc) * inner, 0.0)  # P̃ − Q̃
        t = diff / np.exp(lq)
    keep = np.isfinite(lq) & np.isfinite(t)
    lp, lq, t = lp[keep], lq[keep], t[keep]
    qv = np.exp(lq)
    out = []
    for al in np.atleast_1d(orders):
        if np.max(al * np.abs(lp - lq)) > 5.0:  # not small: the plain sum loses nothing that matters
            x = al * lp + (1 - al) * lq
            mx = x.max()
            out.append((mx + math.log(np.sum(np.exp(x - mx)))) / (al - 1))
        else:
            out.append(math.log1p(math.fsum(qv * phi(al, t))) / (al - 1))
    return np.array(out)
