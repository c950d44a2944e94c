"""The PLD route's blocks (accountant/pld/blocks.py): T₁ rounds composed on a 4× finer grid and
put back on the shared grid once. The block's certified curve against a direct (non-FFT)
composition of the same fine PLD; blocked answers against dp_accounting's optimistic and
pessimistic PLDs of the exact clone pair; tighter than the plain route and than the σ/50 baseline
at the shuffle headline (the point of blocks)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

pytest.importorskip("dp_accounting")

from dp_accounting.pld import privacy_loss_distribution as dp_pld  # noqa: E402

from accountant.dominating import clone_pair_curve  # noqa: E402
from accountant.pld import blocks, discretise, pld_delta, pld_epsilon  # noqa: E402
from accountant.store import clear_caches  # noqa: E402

from .test_pld_route import clone_atoms  # noqa: E402


def _plain(monkeypatch: pytest.MonkeyPatch) -> None:
    import accountant.pld as route

    monkeypatch.setattr(route, "eligible", lambda _p, _t, _s: False)


def test_block_curve_is_above_the_direct_composition_of_the_fine_pld(monkeypatch):
    """With T₁ = 8 (small enough for a direct convolution of non-negative vectors, entrywise
    accurate): the block's certified values on the shared grid are never below the exact
    hockey-stick curve of the fine PLD composed 8 times, and within 1e-6 of it in the bulk."""
    monkeypatch.setattr(blocks, "BLOCK", 8)
    clear_caches()
    pair = clone_pair_curve(200, 1.0)
    step = discretise.choose_step([pair], [400])
    (block, q), (_rounds, r) = blocks.blocked(pair, 8 * 50 + 3, step)
    assert (q, r) == (50, 3)
    f = discretise.discretise_pair(pair, step / blocks.FINE)
    z = f.probs
    for _ in range(3):  # 2³ = 8 rounds, by direct convolution (no FFT)
        z = np.convolve(z, z)
    start = 8 * f.start
    losses = (start + np.arange(z.size)) * f.step
    inf = 1.0 - (1.0 - f.inf_mass) ** 8
    eps = (block.start + np.arange(block.probs.size)) * block.step
    exact = np.array([np.sum(np.maximum(-np.expm1(e - losses), 0.0) * z) for e in eps]) + inf
    bpair = blocks.block_pair(pair, f, ("t",))  # the block's certified curve, as blocked() builds it
    got = bpair.delta(eps)
    assert np.all(got >= exact * (1 - 1e-12) - 1e-300)
    bulk = exact > 1e-6
    assert np.all(got[bulk] <= exact[bulk] * (1 + 1e-6) + 1e-12)
    # and the discretised block's hockey-stick curve (connect-the-dots) at its grid points
    comp = block.probs
    disc = np.array([np.sum(np.maximum(-np.expm1(e - eps), 0.0) * comp) for e in eps]) + block.inf_mass
    assert np.all(disc >= exact * (1 - 1e-9))


@pytest.mark.parametrize("count", [300, 1280])
def test_clone_pair_in_blocks_between_dp_accountings_plds(count):
    """n = 200: never below dp_accounting's optimistic PLD of the exact pair (20,000 outcomes),
    within 2% of its pessimistic one, both at Δ = 1e-4; ⌊T/64⌋ blocks and T mod 64 rounds."""
    n, eps0, eps = 200, 1.0, 2.0
    atoms = clone_atoms(n, eps0)
    upper = {i: float(mp.log(p)) for i, (p, _) in enumerate(atoms)}
    lower = {i: float(mp.log(p) - lo) for i, (p, lo) in enumerate(atoms)}
    got = pld_delta([{"mechanism": "shuffle", "n": n, "epsilon0": eps0, "count": count}], eps)
    assert any("block" in note for note in got.notes)
    opt = dp_pld.from_two_probability_mass_functions(lower, upper, False, 1e-4).self_compose(count)
    pes = dp_pld.from_two_probability_mass_functions(lower, upper, True, 1e-4).self_compose(count)
    assert opt.get_delta_for_epsilon(eps) <= got.delta <= pes.get_delta_for_epsilon(eps) * 1.02


def test_blocks_are_tighter_than_the_plain_route_and_the_finer_baseline(monkeypatch):
    """At the shuffle headline the blocked PLD route is below the plain route on the same grid
    and below the clone pair's PLD at Δ = σ_L/50 (accountant.baselines.pld, the finer grid a
    results.md baseline uses); and not implausibly low: within 3e-5 relative of the plain route on
    a 4× finer grid (which is ≥ the converged value, the excess shrinking as Δ²)."""
    from accountant.baselines.pld import clone_pld

    ev = {"mechanism": "shuffle", "n": 10**6, "epsilon0": 0.5, "count": 10**5}
    blocked = pld_epsilon([ev], 1e-8).epsilon
    baseline = clone_pld(ev["n"], ev["epsilon0"]).epsilon(ev["count"], 1e-8)
    _plain(monkeypatch)
    plain = pld_epsilon([ev], 1e-8).epsilon
    monkeypatch.setattr(discretise, "_STEPS_PER_SCALE", 4 * discretise._STEPS_PER_SCALE)
    fine = pld_epsilon([ev], 1e-8).epsilon
    assert blocked < plain and blocked < baseline
    assert blocked >= fine * (1 - 3e-5)
    assert math.isfinite(blocked)
