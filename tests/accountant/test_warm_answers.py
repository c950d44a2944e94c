"""A warm answer (the same event at another count) reuses work, and must answer exactly what a
cold one does (issue 23, item 7).

The references here are the plain computations the shortcuts replace, written out in the test:
δ(ε) by direct sums over the window (and its exact-arithmetic value), the power of every
frequency of the spectrum, δ(ε) of a fresh composition, the subsampled clone curve from its
narrow cell table with empty caches, and the subsampled default curve with every candidate
computed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from mpmath import mp, mpf

pytest.importorskip("dp_accounting")

from accountant import subsampled_clones as sc  # noqa: E402
from accountant.composition import refine_orders  # noqa: E402
from accountant.orders import DEFAULT_ORDERS  # noqa: E402
from accountant.pld import compose, convert, single_round_pmfs  # noqa: E402
from accountant.pld.compose import best_tilt, tilted_compose  # noqa: E402
from accountant.pld.discretise import U  # noqa: E402

SHUFFLE = {"mechanism": "shuffle", "n": 10**5, "epsilon0": 1.0}
SUBSAMPLED = {"mechanism": "subsampled_shuffle", "n": 10**5, "k": 300, "epsilon0": 2.0}


def _composition(event, count, at):
    parts = single_round_pmfs([{**event, "count": count}])
    return tilted_compose(parts, best_tilt(parts, at))


def direct_delta(comp, epsilon):
    """δ(ε) by sums over the window above ε, as before the suffix sums (module docstring of
    accountant.pld.compose, item 6)."""
    lam = comp.lam
    k = int(np.searchsorted(comp.losses, epsilon, side="right"))
    tp = comp.losses[k:] - epsilon
    gp, ag = comp.G[k:], np.abs(comp.G[k:])
    e1 = np.exp(-lam * tp)
    w = e1 - e1 * np.exp(-tp)
    s = float(np.dot(w, gp))
    rounding = (tp.size + 8) * U * float(np.dot(w, ag)) + 6 * U * float(np.dot(e1, ag))
    cl = (lam / (1.0 + lam)) ** lam / (1.0 + lam) if lam > 0 else 1.0
    err = math.sqrt(float(np.dot(w, w))) * comp.err2 + cl * comp.alias + rounding
    logc = comp.log_scale - lam * epsilon
    c = math.exp(logc) * (1.0 + 4 * U * (abs(logc) + 2.0))
    return min(1.0, c * (max(s, 0.0) + err) + comp.inf)


def exact_delta(comp, epsilon):
    """The certified δ(ε) in exact arithmetic (40 digits) from the same composed vector and error
    terms: the exact losses (a + i)Δ, the exact weights, the exact sums."""
    mp.dps = 40
    lam, step, e = mpf(comp.lam), mpf(comp.step), mpf(epsilon)
    s, w2 = mpf(0), mpf(0)
    for i in range(comp.G.size):
        t = (comp.a + i) * step - e
        if t > 0:
            w = mp.exp(-lam * t) * (1 - mp.exp(-t))
            s += w * mpf(float(comp.G[i]))
            w2 += w * w
    cl = (lam / (1 + lam)) ** lam / (1 + lam) if comp.lam > 0 else mpf(1)
    c = mp.exp(mpf(comp.log_scale) - lam * e)
    return min(mpf(1), c * (max(s, 0) + mp.sqrt(w2) * mpf(comp.err2) + cl * mpf(comp.alias)) + mpf(comp.inf))


@pytest.mark.parametrize("event", [SHUFFLE, SUBSAMPLED], ids=["shuffle", "subsampled"])
@pytest.mark.parametrize(("count", "at"), [(30, 0.3), (3000, 0.5), (3000, 0.05)])
def test_delta_from_suffix_sums_is_certified_and_tight(event, count, at):
    """δ(ε) read from the suffix sums (accountant.pld.tail) is never below the exact-arithmetic
    value of the certified expression, and never meaningfully above the direct sums it replaces;
    both of its regimes (recurrences; a short window or a small tilt: direct sums) are met."""
    comp = _composition(event, count, at)
    losses, n = comp.losses, comp.losses.size
    eps = [
        float(losses[int(n * f)]) + comp.step * g
        for f, g in ((0.3, 0.0), (0.5, 0.37), (0.7, 0.999), (0.9, 0.5))
    ]
    for e in eps + [float(losses[0]) - 3.5 * comp.step]:
        got = comp.delta(e)[0]
        assert got >= exact_delta(comp, e), e
        assert got <= direct_delta(comp, e) * (1 + 1e-9), e


def test_answers_read_delta_from_the_recurrences():
    """At the answer of a long composition δ(ε) comes from the suffix sums (O(1) per ε); far
    below the bulk of the composed vector, from direct sums (the recurrences' bounds loosen)."""
    parts = single_round_pmfs([{**SHUFFLE, "count": 20000}])
    eps, _d, _err, comp = convert.epsilon_at(parts, 1e-8)
    k = int(np.searchsorted(comp.losses, eps, side="right"))
    assert comp.tail.fast(k) and comp.tail._sum(k, eps) is not None
    low = int(comp.losses.size * 0.05)
    assert comp.tail._sum(low, float(comp.losses[low]) - 0.5 * comp.step) is None


def test_suffix_sums_do_not_depend_on_what_was_asked_before():
    """The recurrences are extended block by block on demand; δ(ε) is the same bit for bit
    whichever ε were asked before (the blocks continue one another exactly)."""
    comp = _composition(SHUFFLE, 3000, 0.5)
    losses = comp.losses
    eps = [float(losses[int(losses.size * f)]) + 0.3 * comp.step for f in (0.9, 0.6, 0.55, 0.2)]
    warm = [comp.delta(e) for e in eps]
    for e, w in zip(eps, warm):
        assert _composition(SHUFFLE, 3000, 0.5)._delta(e) == w


@pytest.mark.parametrize("event", [SHUFFLE, SUBSAMPLED], ids=["shuffle", "subsampled"])
@pytest.mark.parametrize(("count", "delta"), [(7, 1e-5), (300, 1e-8), (20000, 1e-10), (20000, 0.3)])
def test_the_answer_is_the_float_where_the_certified_delta_falls(event, count, delta):
    parts = single_round_pmfs([{**event, "count": count}])
    eps, d, _err, comp = convert.epsilon_at(parts, delta)
    assert eps >= 0.0 and d <= delta and comp.delta(eps)[0] == d
    assert eps == 0.0 or comp.delta(math.nextafter(eps, -math.inf))[0] > delta


def _dense_spectrum_error(tilted, spectra):
    """Ĝ̃ and its error bound over every frequency (before the underflowing ones were skipped)."""
    re = np.zeros(spectra[0].z.size)
    im = np.zeros(spectra[0].z.size)
    tau = np.zeros(spectra[0].z.size)
    prop, log_p = 0.0, 0.0
    for (_x, t), sp in zip(tilted, spectra):
        with np.errstate(divide="ignore"):
            la = np.log(np.abs(sp.z))
        ang = np.angle(sp.z)
        re += t * la
        im += t * ang
        tau += t * (4 * U * (np.abs(np.where(np.isfinite(la), la, 0.0)) + np.abs(ang) + 1.0))
        prop += t * sp.rho / (sp.s + sp.rho)
        log_p += t * math.log(sp.s + sp.rho)
    mag = np.exp(re)
    tau += 4 * U * len(tilted) * (np.abs(np.where(np.isfinite(re), re, 0.0)) + np.abs(im))
    big = np.empty(re.size, dtype=np.complex128)
    big.real = mag * np.cos(im)
    big.imag = mag * np.sin(im)
    grow = np.exp(tau)
    pow_err = mag * grow * (np.expm1(tau) + 4 * U * grow) * (1.0 + 8 * U)
    return big, math.exp(log_p) * prop + math.sqrt(2.0) * math.sqrt(
        float(np.einsum("i,i->", pow_err, pow_err))
    )


@pytest.mark.parametrize("count", [3, 300, 30000])
def test_skipping_underflowing_frequencies_changes_nothing(count):
    events = [{**SHUFFLE, "count": count}, {"mechanism": "gaussian", "noise_multiplier": 3.0, "count": 7}]
    parts = single_round_pmfs(events)
    lam = best_tilt(parts, 0.5)
    tilted = [(compose._tilt(d, lam), t) for d, t in parts]
    n, _a, _alias = compose._window(tilted, parts[0][0].step)
    spectra = [compose._spectrum((*d.key, lam), x, n) for (d, _t), (x, _t2) in zip(parts, tilted)]
    big, err = compose._spectrum_error(tilted, spectra)
    want_big, want_err = _dense_spectrum_error(tilted, spectra)
    assert err == want_err
    np.testing.assert_array_equal(big, want_big)
    if count == 30000:
        assert np.count_nonzero(big) < big.size // 10  # most of the spectrum is skipped


def test_delta_remembered_is_delta_computed():
    parts = single_round_pmfs([{**SHUFFLE, "count": 500}])
    lam = best_tilt(parts, 0.4)
    warm, fresh = tilted_compose(parts, lam), tilted_compose(parts, lam)
    eps = [0.2 + 0.01 * i for i in range(80)]
    for e in eps:  # asked twice, more often than the memo holds
        assert warm.delta(e) == warm.delta(e)
    for e in reversed(eps):
        assert warm.delta(e) == fresh._delta(e)
    assert len(warm._seen) <= 64


def _narrow_group(k, e0, gamma, orders):
    """The subsampled clone sum with the cell table of the orders' own largest window (the
    computation before the table was kept per level)."""
    order = np.argsort(orders, kind="stable")
    chunks = [order[i : i + sc._CHUNK] for i in range(0, orders.size, sc._CHUNK)]
    tops = [float(orders[c].max()) for c in chunks]
    _, bins, _ = sc._admitted(k, e0, gamma, tops, sc._BUDGET, math.exp(-e0))
    s = math.tanh(e0 / 2.0)
    x, ws = bins.x, bins.w * s
    lrmax = np.log1p(ws) - np.log1p(-ws)
    cells = sc._cells_of(x, ws, sc._windows(x, lrmax, max(tops))[1], sc._windows(x, lrmax, 1.0)[0])
    out = np.full(orders.shape, np.inf)
    out[np.concatenate(chunks)] = sc._group(bins, s, chunks, orders, cells)
    return out


@pytest.mark.parametrize(("n", "k", "e0"), [(10**6, 1000, 2.0), (10**4, 100, 0.5), (400, 3, 1.0)])
def test_subsampled_clone_cells_per_level(n, k, e0):
    sc._level_cells.cache_clear()
    for i in (12, 30, 31):
        orders = refine_orders(DEFAULT_ORDERS, i)
        assert orders.max() <= sc._FIRST_GROUP  # one group of orders
        got, _ = sc._log_excess(k, e0, k / n, orders, math.inf, math.exp(-e0))
        np.testing.assert_array_equal(got, _narrow_group(k, e0, k / n, orders))
    assert sc._level_cells.cache_info().hits >= 1


def test_subsampled_clone_curve_same_cold_and_warm():
    orders = refine_orders(DEFAULT_ORDERS, 40)
    sc._level_cells.cache_clear()
    cold = sc.subsampled_clone_rdp(10**5, 300, 2.0, orders)
    sc.subsampled_clone_rdp(10**5, 300, 2.0, refine_orders(DEFAULT_ORDERS, 38))
    np.testing.assert_array_equal(sc.subsampled_clone_rdp(10**5, 300, 2.0, orders), cold)


def test_subsampled_clone_cells_are_kept_per_clone_probability():
    """The generic pair and randomized response's pair (bounds.md §12) share (k, ε0, γ, level) but
    not their bins: a warm answer of one never comes from the other's cell table."""
    orders = np.array([2.0, 9.5, 40.0])
    sc._level_cells.cache_clear()
    rr_cold = sc.subsampled_clone_pair_rdp(10**5, 500, 1.5, orders, randomizer="rr")
    sc._level_cells.cache_clear()
    generic = sc.subsampled_clone_pair_rdp(10**5, 500, 1.5, orders)
    rr_warm = sc.subsampled_clone_pair_rdp(10**5, 500, 1.5, orders, randomizer="rr")
    assert np.array_equal(rr_warm, rr_cold)
    assert np.all(rr_cold < generic)


# ------------------------------------------------------------- the subsampled default's floor
FLOOR_CASES = [
    (10**6, 1000, 2.0),
    (10**6, 100, 1.0),
    (10**5, 1000, 4.0),
    (10**5, 300, 2.0),
    (2000, 1500, 1.0),
]


@pytest.mark.parametrize(("n", "k", "e0"), FLOOR_CASES)
@pytest.mark.parametrize(
    ("output", "randomizer"), [("discrete", "any"), ("continuous", "any"), ("discrete", "rr")]
)
def test_the_floor_skips_only_candidates_that_cannot_be_the_minimum(
    n, k, e0, output, randomizer, monkeypatch
):
    """Where accountant.subsampled_floor says the k-user curve and the interpolated SU/WBK19 are
    above min(cap, pair), they are (computed here anyway), and the default curve with them
    skipped is the curve with every candidate computed, bit for bit, sources and notes too."""
    from accountant import bounds, subsampled, subsampled_floor

    skipped = 0
    for i in (4, 20, 35, 44, 60, 75):
        o = refine_orders(DEFAULT_ORDERS, i)
        sc_vals = bounds._subsampled_pair(n, k, e0, o, randomizer)[0]
        floor = np.minimum(subsampled.cap(n, k, e0, o), sc_vals)
        if not subsampled_floor.dominated(n, k, e0, o, output, floor):
            continue
        skipped += 1
        interp, inner = bounds._subsampled_rest(n, k, e0, o, output, {}, randomizer)
        assert np.all(interp > floor) and np.all(inner > floor)
        fast = bounds._subsampled_upper_detail(n, k, e0, o, output, randomizer)
        with monkeypatch.context() as m:
            m.setattr(bounds, "dominated", lambda *_: False)
            full = bounds._subsampled_upper_detail(n, k, e0, o, output, randomizer)
        assert fast.rdp.tobytes() == full.rdp.tobytes()
        assert (fast.sources, fast.notes) == (full.sources, full.notes)
    assert skipped >= (1 if k <= n // 100 else 0)


@pytest.mark.parametrize(("k", "e0"), [(1, 1.0), (3, 0.5), (100, 1.0), (1000, 2.0), (10**5, 4.0)])
def test_the_shuffled_rr_floor_is_below_the_k_user_curve(k, e0):
    """The floor of the k-user curve is D_2 of a real instance (shuffled binary randomized
    response): below the exact divergence of that instance and below the certified curve."""
    from accountant import shuffle, subsampled_floor
    from accountant.bounds import shuffle_upper_detail

    d2 = subsampled_floor.shuffled_rr_d2(k, e0)
    orders = np.array([2.0, 2.5, 7.0, 64.0, 500.0])
    assert d2 <= float(shuffle.lower(k, e0, np.array([2.0]))[0]) * (1 + 1e-9)
    assert d2 >= float(shuffle.lower(k, e0, np.array([2.0]))[0]) * (1 - 1e-6)
    for output in ("discrete", "continuous"):
        assert np.all(shuffle_upper_detail(k, e0, orders, output).rdp >= d2)


@pytest.mark.parametrize("n", [1, 2, 1000, 2**24])
def test_the_grid_crossing_costs_log_n_evaluations_from_any_guess(n):
    """A guess far from the crossing (the approximation can miss where the error terms dominate)
    costs O(log n) certified evaluations — each may be a pass over a window of 2²⁴ points."""
    for cross in {-1, 0, n // 3, n - 2, n - 1}:
        for guess in {-1, 0, n // 2, n - 1, max(-1, cross - 1), min(n - 1, cross + 1)}:
            asked = []

            def above(j, cross=cross, asked=asked):
                asked.append(j)
                return j <= cross

            assert convert._grid_crossing(above, guess, n) == cross
            assert len(asked) <= 4 * max(1, n.bit_length()) + 4


def test_long_direct_windows_end_with_a_certified_brentq_root(monkeypatch):
    """Where δ(ε) is a pass over a long window (not read from the recurrences), the root is
    brentq's, moved up until certified, instead of bisected to one float."""
    parts = single_round_pmfs([{**SUBSAMPLED, "count": 30}])
    exact, _d, _err, _comp = convert.epsilon_at(parts, 1e-12)
    monkeypatch.setattr(convert, "_BISECT_DIRECT", 0)
    eps, d, _err, comp = convert.epsilon_at(parts, 1e-12)
    k = int(np.searchsorted(comp.losses, eps, side="right"))
    assert not comp.tail.cheap(k)
    assert d <= 1e-12 and comp.delta(eps)[0] == d
    assert exact <= eps <= exact * (1 + 1e-9)
