"""Full output-probability tables of the discrete mechanisms, written from the algorithms' definitions
(independently of the package's sampling code), and the helpers that turn sampled reports into cells."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
from scipy.linalg import hadamard


def rr_p(eps: float) -> float:
    return 1.0 / (1.0 + math.exp(eps))


def max_log_ratio(table: np.ndarray) -> float:
    """max over outputs and input pairs of log P(y|x)/P(y|x'); table is (inputs, outputs)."""
    assert np.all(table > 0), "every output must have positive probability under every input"
    lt = np.log(table)
    return float(np.max(lt.max(axis=0) - lt.min(axis=0)))


def check_rows(table: np.ndarray) -> None:
    np.testing.assert_allclose(table.sum(axis=1), 1.0, rtol=0, atol=1e-12)


# --- binary / k-ary -----------------------------------------------------------------------------------


def binary_rr_table(eps: float) -> np.ndarray:
    p = rr_p(eps)
    return np.array([[1 - p, p], [p, 1 - p]])  # rows b = 0, 1; columns y = 0, 1


def kary_table(eps: float, k: int) -> np.ndarray:
    e = math.exp(eps)
    t = np.full((k, k), 1.0 / (e + k - 1))
    np.fill_diagonal(t, e / (e + k - 1))
    return t


def _slot_table(bit_probs: list[float], a: int, p: float) -> np.ndarray:
    """One R^Bin message (index in block, y): bit_probs[c] = P(bit at block position c = 1)."""
    out = np.zeros(2 * a)
    for c in range(a):
        pi = bit_probs[c]
        p1 = pi * (1 - p) + (1 - pi) * p  # P(y = 1)
        out[2 * c + 1] = p1 / a
        out[2 * c] = (1 - p1) / a
    return out


def _product(tables: list[np.ndarray]) -> np.ndarray:
    out = np.array([1.0])
    for t in tables:
        out = np.outer(out, t).ravel()
    return out


def binary_vector_table(eps: float, d: int, s: int) -> tuple[list, np.ndarray]:
    a = -(-d // s)
    p = rr_p(eps / s)
    inputs = list(itertools.product([0, 1], repeat=d))
    rows = []
    for b in inputs:
        padded = list(b) + [0] * (a * s - d)
        rows.append(
            _product([_slot_table([float(v) for v in padded[j * a : (j + 1) * a]], a, p) for j in range(s)])
        )
    return inputs, np.array(rows)


def slot_cells(index: np.ndarray, bit: np.ndarray, a: int) -> np.ndarray:
    """Mixed-radix cell of (index, bit) over the trailing message axes, in _product's order."""
    idx = index.reshape(index.shape[0], -1)
    bt = bit.reshape(bit.shape[0], -1)
    cell = np.zeros(idx.shape[0], dtype=np.int64)
    for j in range(idx.shape[1]):
        cell = cell * (2 * a) + 2 * idx[:, j] + bt[:, j]
    return cell


# --- ℓ1 ------------------------------------------------------------------------------------------------


def l1_table(eps: float, xs: np.ndarray, r1: float) -> np.ndarray:
    d = xs.shape[1]
    D = 1 << (d - 1).bit_length()
    H = hadamard(D)
    c = (math.exp(eps) + 1) / (math.exp(eps) - 1)
    rows = []
    for x in xs:
        xp = np.zeros(D)
        xp[:d] = x
        hx = H @ xp
        pp = 0.5 + hx / (2 * r1 * c)
        row = np.empty(2 * D)
        row[0::2] = (1 - pp) / D  # cell 2j: sign −1
        row[1::2] = pp / D  # cell 2j+1: sign +1
        rows.append(row)
    return np.array(rows)


# --- ℓ∞ --------------------------------------------------------------------------------------------------


def thesis_digits(z: Fraction, m: int) -> tuple[list[int], Fraction]:
    """b^(1..m−1) and ρ = 2^{m−1}(z − z^{(m−1)}) by the recursion of §3.5 (digit clamped at 1 for z = 1)."""
    zk = Fraction(0)
    bits = []
    for k in range(1, m):
        b = min(math.floor(2**k * (z - zk)), 1)
        bits.append(b)
        zk += Fraction(b, 2**k)
    return bits, 2 ** (m - 1) * (z - zk)


def split(m: int) -> list[float]:
    w = [4.0 ** (-k / 3) for k in range(1, m)] + [4.0 ** (-(m - 1) / 3)]
    t = sum(w)
    return [v / t for v in w]


def linf_row(eps: float, z: list[Fraction], m: int, s: int) -> np.ndarray:
    d = len(z)
    a = -(-d // s)
    digs = [thesis_digits(zi, m) for zi in z]
    tabs = []
    for k, f in enumerate(split(m), start=1):
        p = rr_p(eps * f / s)
        probs = [float(dg[0][k - 1]) if k < m else float(dg[1]) for dg in digs] + [0.0] * (a * s - d)
        for j in range(s):
            tabs.append(_slot_table(probs[j * a : (j + 1) * a], a, p))
    return _product(tabs)


def dyadic_grid(d: int, m: int, per_axis: int = 5) -> list[list[Fraction]]:
    """Points of [0,1]^d on a dyadic grid finer than the quantizer (so ρ takes non-trivial values),
    always including the two corners 0 and 1."""
    den = 2 ** (m + 1)
    axis = sorted(
        {Fraction(0), Fraction(1)} | {Fraction(v, den) for v in np.linspace(0, den, per_axis).astype(int)}
    )
    return [list(p) for p in itertools.product(axis, repeat=d)]


# --- Hadamard response ------------------------------------------------------------------------------------


def hr_table(eps: float, k: int) -> np.ndarray:
    K = 1 << (k - 1).bit_length()
    H = hadamard(K)
    q = math.exp(eps) / (math.exp(eps) + 1)
    t = np.zeros((k, 2 * K))
    for x in range(k):
        for j in range(K):
            yes = H[x, j] == 1  # x ∈ B^j: row x has +1 in column j
            t[x, 2 * j + 1] = (q if yes else 1 - q) / K
            t[x, 2 * j] = (1 - q if yes else q) / K
    return t
