"""Strong neighbouring pairs of every mechanism in the ``mechanisms`` catalog, as exact per-message laws.

For each local mechanism a ``Case`` holds the laws of every separately shuffled message under
D (all users hold x₀) and D' (user u holds x₁ instead), written from the algorithms' definitions
with the calibrated numbers the mechanism publishes in ``internals()`` (flip probabilities, block
size, Hadamard constants). ``inputs`` are the two inputs in the mechanism's own format and ``cells``
maps a batch of the mechanism's real reports to per-message cells, so that the laws can be checked
against ``randomize`` (test_catalog_audit.py) — the pairs are those of the real randomizers.

The pairs maximise the per-message likelihood ratios (every message of u's report attains its
e^{ε_ℓ} on the extreme inputs: all bits flipped, opposite corners of the box, ±r₁e_i, two distinct
symbols); the reverse direction D_α(P_D‖P_D') is audited too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.linalg import hadamard
from scipy.stats import laplace as laplace_dist

import accountant
import mechanisms

from ..helpers.exact import MessagePair, ShuffledPair, shuffled, two_stage
from ..helpers.mech_tables import thesis_digits


@dataclass
class Case:
    mech: mechanisms.Mechanism
    messages: list[MessagePair]
    x0: object  # input of every user in D (format of mech.randomize, one client)
    x1: object  # input of u in D'
    cells: Callable[[object], np.ndarray]  # reports of a batch → (batch, L) message cells
    note: str = ""
    stage2: Callable | None = None  # adaptive second stage (user_mean without interval)

    def pair(self, n: int, k: int | None = None) -> ShuffledPair:
        if self.stage2 is not None:
            return two_stage(self.messages[0], self.stage2, n, k)
        return shuffled(self.messages, n, k)

    def events(self, n: int, k: int | None = None, count: int = 1) -> list[accountant.Event]:
        return self.mech.events(n=n, k=k, count=count)

    def __repr__(self) -> str:
        return f"{self.mech!r} [{self.note}]"


def _rr(p: float, bit: int) -> np.ndarray:
    return np.array([1 - p, p]) if bit == 0 else np.array([p, 1 - p])


def _slot_law(bits: list[float], a: int, p: float) -> np.ndarray:
    """(index c, reported bit) with c uniform in the block, P(bit at c = 1) = bits[c], 2RR with flip p."""
    out = np.empty(2 * a)
    for c in range(a):
        p1 = bits[c] * (1 - p) + (1 - bits[c]) * p
        out[2 * c] = (1 - p1) / a
        out[2 * c + 1] = p1 / a
    return out


def _slot_cells(rep: dict, L: int) -> np.ndarray:
    idx = np.asarray(rep["index"]).reshape(len(rep["index"]), -1)
    bit = np.asarray(rep["bit"]).reshape(len(rep["bit"]), -1)
    assert idx.shape[1] == L
    return 2 * idx.astype(np.int64) + bit.astype(np.int64)


# ---------------------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------------------


def binary_rr(epsilon0: float) -> Case:
    mech = mechanisms.get("binary_rr", epsilon0=epsilon0)
    p = mech.internals()["flip_probability"]
    msg = MessagePair(others=_rr(p, 0), user_prime=_rr(p, 1))
    return Case(mech, [msg], 0, 1, lambda rep: np.asarray(rep, dtype=np.int64)[:, None], "0 → 1")


def kary_rr(epsilon0: float, k: int, others: int = 0) -> Case:
    """u: symbol 0 → 1; the others hold symbol ``others`` (0, or a third symbol)."""
    mech = mechanisms.get("kary_rr", epsilon0=epsilon0, k=k)
    it = mech.internals()
    keep, other = it["keep_probability"], it["each_other_symbol_probability"]

    def law(x):
        v = np.full(k, other)
        v[x] = keep
        return v

    msg = MessagePair(others=law(others), user=law(0), user_prime=law(1))
    return Case(
        mech,
        [msg],
        0,
        1,
        lambda rep: np.asarray(rep, dtype=np.int64)[:, None],
        f"u: 0 → 1, others hold {others}",
    )


def binary_vector(epsilon0: float, d: int, s: int) -> Case:
    """All-zero vector → all-one vector (every slot's bit flipped; padding reads 0)."""
    mech = mechanisms.get("binary_vector", epsilon0=epsilon0, d=d, s=s)
    it = mech.internals()
    a, p = it["block_size"], it["flip_probability"]
    msgs = []
    for j in range(mech.s):
        ones = [1.0 if j * a + c < d else 0.0 for c in range(a)]
        msgs.append(MessagePair(others=_slot_law([0.0] * a, a, p), user_prime=_slot_law(ones, a, p)))
    return Case(
        mech,
        msgs,
        np.zeros(d, dtype=np.uint8),
        np.ones(d, dtype=np.uint8),
        lambda rep: _slot_cells(rep, mech.s),
        "0…0 → 1…1",
    )


def l1(epsilon0: float, d: int, i: int = 0, r1: float = 1.0) -> Case:
    """+r₁e_i → −r₁e_i: P(sign = +1 | j) = ½ ± H[j, i]/(2c), ratio e^{ε0} at every output."""
    mech = mechanisms.get("l1", epsilon0=epsilon0, d=d, r1=r1)
    it = mech.internals()
    D, c = it["hadamard_dimension"], it["c"]
    H = hadamard(D)

    def law(sign):
        pp = 0.5 + sign * H[:, i] / (2 * c)
        out = np.empty(2 * D)
        out[0::2] = (1 - pp) / D
        out[1::2] = pp / D
        return out

    x0 = np.zeros(d)
    x0[i] = r1
    return Case(
        mech,
        [MessagePair(others=law(+1), user_prime=law(-1))],
        x0,
        -x0,
        lambda rep: (2 * np.asarray(rep["index"], dtype=np.int64) + (np.asarray(rep["sign"]) > 0))[:, None],
        f"+r1·e_{i} → −r1·e_{i}",
    )


def _box_messages(flips: list[float], a: int, s: int, d: int) -> list[MessagePair]:
    """ℓ∞ levels × slots for z = 0 (every digit and u = 0) → z = 1 (every digit 1, u = 1; padding 0)."""
    msgs = []
    for p in flips:
        for j in range(s):
            ones = [1.0 if j * a + c < d else 0.0 for c in range(a)]
            msgs.append(MessagePair(others=_slot_law([0.0] * a, a, p), user_prime=_slot_law(ones, a, p)))
    return msgs


def linf(epsilon0: float, d: int, m: int, s: int, r_inf: float = 1.0) -> Case:
    """x = −r∞·1 (z = 0) → +r∞·1 (z = 1): every level's bit flipped in every slot."""
    mech = mechanisms.get("linf", epsilon0=epsilon0, d=d, m=m, s=s, r_inf=r_inf)
    it = mech.internals()
    msgs = _box_messages(it["flip_probabilities"], it["block_size"], mech.s, d)
    return Case(
        mech,
        msgs,
        np.full(d, -r_inf),
        np.full(d, r_inf),
        lambda rep: _slot_cells(rep, m * mech.s),
        "−r∞·1 → +r∞·1",
    )


def l2(epsilon0: float, d: int, m: int, s: int, rotation_seed: int = 0, r2: float = 1.0) -> Case:
    """x = Uᵀ(−c·1) → Uᵀ(+c·1) with ‖x‖₂ = r₂ and r∞ just below c = r₂/√d': after the rotation every
    coordinate is clipped to ∓r∞ (z = 0 → z = 1), so the ℓ∞ stage flips every bit. d a power of two."""
    assert d & (d - 1) == 0
    c = r2 / math.sqrt(d)
    r_inf = c * (1 - 1e-9)
    mech = mechanisms.get(
        "l2", epsilon0=epsilon0, d=d, m=m, s=s, r2=r2, r_inf=r_inf, rotation_seed=rotation_seed
    )
    H = hadamard(d)
    U = H * mech.signs[None, :] / math.sqrt(d)  # U = H·diag(signs)/√d (public seed)
    x1 = U.T @ np.full(d, c)
    w = mech.rotate(x1[None, :])[0]
    assert np.all(w > r_inf) and np.all(mech.rotate(-x1[None, :])[0] < -r_inf), "corner not reached"
    it = mech.internals()
    msgs = _box_messages(it["flip_probabilities"], it["block_size"], mech.s, d)
    return Case(mech, msgs, -x1, x1, lambda rep: _slot_cells(rep, m * mech.s), "Uᵀ(−c·1) → Uᵀ(+c·1)")


def _hr_law(x: int, K: int, q: float) -> np.ndarray:
    H = hadamard(K)
    out = np.empty(2 * K)
    yes = H[x, :] == 1
    out[1::2] = np.where(yes, q, 1 - q) / K
    out[0::2] = np.where(yes, 1 - q, q) / K
    return out


def hadamard_response(epsilon0: float, k: int, x: int = 0, x1: int = 1, others: int | None = None) -> Case:
    mech = mechanisms.get("hadamard_response", epsilon0=epsilon0, k=k)
    it = mech.internals()
    K, q = it["groups"], it["truth_probability"]
    o = x if others is None else others
    msg = MessagePair(others=_hr_law(o, K, q), user=_hr_law(x, K, q), user_prime=_hr_law(x1, K, q))
    return Case(mech, [msg], x, x1, lambda rep: _slot_cells(rep, 1), f"u: {x} → {x1}, others hold {o}")


def user_range(epsilon0: float, B: float, tau: float) -> Case:
    """A user whose mean is −B (bin 0) → +B (the last bin); the others' means are −B."""
    mech = mechanisms.get("user_range", epsilon0=epsilon0, B=B, tau=tau)
    it = mech.internals()
    K, bins = it["groups"], it["bins"]
    q = math.exp(epsilon0) / (math.exp(epsilon0) + 1)
    last = min(math.floor(2 * B / (2 * tau)), bins - 1)
    msg = MessagePair(others=_hr_law(0, K, q), user_prime=_hr_law(last, K, q))
    return Case(
        mech,
        [msg],
        np.array([-B]),
        np.array([B]),
        lambda rep: _slot_cells(rep, 1),
        f"mean −B (bin 0) → +B (bin {last})",
    )


def user_mean_interval(epsilon0: float, m: int, lo: float, hi: float, B: float = 1.0) -> Case:
    """Public interval [lo, hi]: one ℓ∞ report (d = 1) at ε0; means lo → hi give z = 0 → 1."""
    mech = mechanisms.get("user_mean", epsilon0=epsilon0, B=B, tau=0.1, m=m, interval=[lo, hi])
    flips = mech.internals()["mean_report"]["flip_probabilities"]
    msgs = _box_messages(flips, 1, 1, 1)
    return Case(
        mech,
        msgs,
        np.array([lo]),
        np.array([hi]),
        lambda rep: _slot_cells(rep["mean"], m),
        f"interval [{lo}, {hi}]: mean lo → hi",
    )


def user_mean_two_rounds(epsilon0: float, m: int, B: float, tau: float) -> Case:
    """Range round then the mean round given the broadcast interval (seed 000 Alg. 1, d = 1), the same
    users in both. Others' mean −B, u's mean −B → +B. Stage 1: Hadamard response of the bin at ε0/2;
    the server takes the top bin of p̂ ∝ H_K S (S_j = #yes − #no in group j; the first maximum) and
    broadcasts its centre a; stage 2: each user's clip(mean − a, ±3τ) through the ℓ∞ mechanism
    (d = 1, m levels) at ε0/2, digits as in thesis §3.5."""
    mech = mechanisms.get("user_mean", epsilon0=epsilon0, B=B, tau=tau, m=m)
    it = mech.internals()
    rng_eps, K, bins = it["range_epsilon0"], it["range"]["groups"], it["range"]["bins"]
    q = math.exp(rng_eps) / (math.exp(rng_eps) + 1)
    last = min(math.floor(2 * B / (2 * tau)), bins - 1)
    stage1 = MessagePair(others=_hr_law(0, K, q), user_prime=_hr_law(last, K, q))
    HK = hadamard(K)
    flips = it["mean_report"]["flip_probabilities"]
    half = it["mean_r_inf"]

    def bit_probs(mean: float, centre: float) -> list[float]:
        z = (min(max(mean - centre, -half), half) + half) / (2 * half)
        digits, rho = thesis_digits(Fraction(z), m)
        return [float(b) for b in digits] + [float(rho)]

    def stage2(h1: np.ndarray) -> list[MessagePair]:
        S = h1[1::2] - h1[0::2]  # cells 2j (no), 2j+1 (yes)
        top = int(np.argmax((HK @ S)[:bins]))
        centre = -B + (2 * top + 1) * tau
        po, pu = bit_probs(-B, centre), bit_probs(B, centre)
        return [
            MessagePair(others=_slot_law([po[i]], 1, p), user_prime=_slot_law([pu[i]], 1, p))
            for i, p in enumerate(flips)
        ]

    def no_cells(rep):  # both rounds' laws are checked against the sampler through user_range and linf
        raise NotImplementedError

    return Case(
        mech,
        [stage1],
        np.array([-B]),
        np.array([B]),
        no_cells,
        "two rounds (adaptive), mean −B → +B",
        stage2=stage2,
    )


def laplace_mean(epsilon0: float, d: int, r: float, edges: tuple) -> Case:
    """Continuous output: u's x = +r·e₁ → −r·e₁. The view is post-processed (a valid lower bound by
    the data-processing inequality): keep each report's first coordinate and bin it at
    ``edges`` (multiples of the scale b = 2r/ε0); the bin probabilities are exact Laplace CDF values."""
    mech = mechanisms.get("laplace_mean", epsilon0=epsilon0, d=d, r=r)
    b = mech.internals()["laplace_scale"]
    e = np.concatenate([[-np.inf], np.asarray(edges, dtype=float) * b, [np.inf]])

    def law(mu):
        return np.diff(laplace_dist.cdf(e, loc=mu, scale=b))

    x0 = np.zeros(d)
    x0[0] = r
    return Case(
        mech,
        [MessagePair(others=law(r), user_prime=law(-r))],
        x0,
        -x0,
        lambda rep: np.searchsorted(e[1:-1], np.asarray(rep)[:, 0])[:, None],
        f"+r·e1 → −r·e1, first coordinate binned at {tuple(edges)}·b",
    )


NOT_EXACT = {
    "user_mean (d > 1)": "d' range messages plus m·s mean messages with a per-coordinate adaptive broadcast: "
    "too large to enumerate exactly; its d = 1 forms are audited",
}
