"""Accounting: the events each mechanism costs, their composition by the accountant, the catalog and errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import mechanisms
from mechanisms import InputError, ParameterError, UnknownMechanismError

REQUIRED = [
    "binary_rr",
    "kary_rr",
    "binary_vector",
    "l1",
    "linf",
    "l2",
    "hadamard_response",
    "user_range",
    "user_mean",
    "laplace_mean",
    "gaussian",
    "laplace",
]

EXAMPLES = {
    "binary_rr": {"epsilon0": 1.0},
    "kary_rr": {"epsilon0": 1.0, "k": 8},
    "binary_vector": {"epsilon0": 2.0, "d": 16, "s": 4},
    "l1": {"epsilon0": 1.0, "d": 16},
    "linf": {"epsilon0": 2.0, "d": 16, "m": 3, "s": 2},
    "l2": {"epsilon0": 2.0, "d": 16, "m": 2, "s": 2},
    "hadamard_response": {"epsilon0": 1.0, "k": 10},
    "user_range": {"epsilon0": 1.0, "B": 1.0, "tau": 0.1},
    "user_mean": {"epsilon0": 2.0, "B": 1.0, "tau": 0.1},
    "laplace_mean": {"epsilon0": 1.0},
    "gaussian": {"noise_multiplier": 1.0},
    "laplace": {"scale": 1.0},
}


# --- events -------------------------------------------------------------------------------------------


def as_dicts(events: list[accountant.Event]) -> list[dict]:
    """The api.md JSON form of a mechanism's events, which must be the accountant's event objects."""
    assert all(isinstance(e, accountant.Event) for e in events), events
    return [e.to_dict() for e in events]


@pytest.mark.parametrize(
    "name,params",
    [
        ("l1", {"epsilon0": 0.8, "d": 7}),
        ("hadamard_response", {"epsilon0": 0.8, "k": 9}),
        ("user_range", {"epsilon0": 0.8, "B": 2.0, "tau": 0.3}),
        ("binary_vector", {"epsilon0": 0.8, "d": 9, "s": 1}),
        ("linf", {"epsilon0": 0.8, "d": 9, "m": 1, "s": 1}),
    ],
)
def test_single_report_events(name, params):
    mech = mechanisms.get(name, **params)
    assert as_dicts(mech.events(n=5000, count=40)) == [
        {"mechanism": "shuffle", "n": 5000, "epsilon0": 0.8, "count": 40}
    ]
    assert as_dicts(mech.events(5000)) == [{"mechanism": "shuffle", "n": 5000, "epsilon0": 0.8, "count": 1}]
    assert as_dicts(mech.events(n=5000, k=100, count=7)) == [
        {
            "mechanism": "subsampled",
            "n": 5000,
            "k": 100,
            "count": 7,
            "inner": [{"mechanism": "shuffle", "epsilon0": 0.8, "count": 1}],
        }
    ]


@pytest.mark.parametrize(
    "name,params,categories", [("binary_rr", {"epsilon0": 0.8}, 2), ("kary_rr", {"epsilon0": 0.8, "k": 5}, 5)]
)
def test_randomized_response_events_name_their_randomizer(name, params, categories):
    """Randomized response is accounted as itself (bounds.md §12), not as any 0.8-LDP randomizer."""
    mech = mechanisms.get(name, **params)
    assert as_dicts(mech.events(n=5000, count=40)) == [
        {"mechanism": "shuffle_rr", "n": 5000, "epsilon0": 0.8, "categories": categories, "count": 40}
    ]
    assert as_dicts(mech.events(n=5000, k=100, count=7)) == [
        {
            "mechanism": "subsampled_shuffle_rr",
            "n": 5000,
            "k": 100,
            "epsilon0": 0.8,
            "categories": categories,
            "count": 7,
        }
    ]
    generic = accountant.epsilon([{"mechanism": "shuffle", "n": 5000, "epsilon0": 0.8, "count": 40}], 1e-6)[0]
    assert accountant.epsilon(mech.events(n=5000, count=40), 1e-6)[0] < 0.95 * generic


def test_binary_vector_events_one_per_slot():
    mech = mechanisms.get("binary_vector", epsilon0=3.0, d=20, s=4)
    evs = as_dicts(mech.events(n=1000, count=9))
    assert evs == [{"mechanism": "shuffle", "n": 1000, "epsilon0": 0.75, "count": 9}] * 4


def _linf_message_eps(eps, m, s):
    w = [4 ** (-k / 3) for k in range(1, m)] + [4 ** (-(m - 1) / 3)]  # last level weighted like level m−1
    return [eps * x / sum(w) / s for x in w for _ in range(s)]


def test_linf_events_levels_and_slots():
    m, s, eps = 4, 3, 2.0
    mech = mechanisms.get("linf", epsilon0=eps, d=12, m=m, s=s)
    expected = _linf_message_eps(eps, m, s)
    # without sampling: one shuffle event per message (independent mechanisms compose)
    plain = as_dicts(mech.events(n=10_000, count=3))
    assert len(plain) == m * s
    assert all(e["mechanism"] == "shuffle" and e["n"] == 10_000 and e["count"] == 3 for e in plain)
    np.testing.assert_allclose([e["epsilon0"] for e in plain], expected, rtol=1e-12)
    assert sum(e["epsilon0"] for e in plain) == pytest.approx(eps, rel=1e-12)
    # with k sampled per round: ONE subsampled event per round, the messages as its inner events
    (ev,) = as_dicts(mech.events(n=10_000, k=500, count=3))
    assert ev["mechanism"] == "subsampled" and (ev["n"], ev["k"], ev["count"]) == (10_000, 500, 3)
    assert all(i["mechanism"] == "shuffle" and "n" not in i for i in ev["inner"])
    got = sorted(x for i in ev["inner"] for x in [i["epsilon0"]] * i["count"])
    np.testing.assert_allclose(got, sorted(expected), rtol=1e-12)
    assert len(ev["inner"]) == m - 1  # the last two levels share ε0: one inner event with count 2·s


def test_l2_events_are_the_linf_events():
    l2 = mechanisms.get("l2", epsilon0=2.0, d=16, m=3, s=2)
    li = mechanisms.get("linf", epsilon0=2.0, d=16, m=3, s=2)
    assert as_dicts(l2.events(100, count=2)) == as_dicts(li.events(100, count=2))


def test_user_mean_events_both_rounds():
    mech = mechanisms.get("user_mean", epsilon0=2.0, B=1.0, tau=0.1, m=3)
    evs = as_dicts(mech.events(n=400, count=5))
    assert evs[0] == {"mechanism": "shuffle", "n": 400, "epsilon0": 1.0, "count": 5}  # range round at ε0/2
    assert evs[1:] == as_dicts(mechanisms.get("linf", epsilon0=1.0, d=1, m=3).events(400, count=5))
    fixed = mechanisms.get("user_mean", epsilon0=2.0, B=1.0, tau=0.1, m=3, interval=[-0.2, 0.4])
    assert as_dicts(fixed.events(400)) == as_dicts(mechanisms.get("linf", epsilon0=2.0, d=1, m=3).events(400))
    vec = mechanisms.get("user_mean", epsilon0=2.0, B=1.0, tau=0.1, m=2, d=8, s=2, n=400)
    evs = as_dicts(vec.events(400))
    assert len(evs) == 8 + 2 * 2
    assert all(e["epsilon0"] == pytest.approx(2.0 / 16) for e in evs[:8])
    assert sum(e["epsilon0"] for e in evs) == pytest.approx(2.0)


def test_continuous_and_central_events():
    lm = mechanisms.get("laplace_mean", epsilon0=1.5, d=2)
    assert as_dicts(lm.events(n=300, count=4)) == [
        {"mechanism": "shuffle", "n": 300, "epsilon0": 1.5, "count": 4, "output": "continuous"}
    ]
    assert as_dicts(lm.events(n=300, k=30))[0]["inner"][0]["output"] == "continuous"
    g = mechanisms.get("gaussian", noise_multiplier=1.7, clip=3.0)
    assert as_dicts(g.events(count=12)) == [{"mechanism": "gaussian", "noise_multiplier": 1.7, "count": 12}]
    assert g.sigma == pytest.approx(1.7 * 6.0)  # Δ = 2·clip under replace-one
    ar = mechanisms.get("gaussian", noise_multiplier=1.7, clip=3.0, neighbouring="add_remove")
    assert ar.sigma == pytest.approx(5.1)
    # the ledger protects replace-one: σ = 5.1 over Δ₂ = 2·clip = 6 is a multiplier of 0.85, not 1.7
    assert as_dicts(ar.events(count=2)) == [
        {"mechanism": "gaussian", "noise_multiplier": pytest.approx(0.85), "count": 2}
    ]
    lp = mechanisms.get("laplace", scale=2.0, clip=0.5)
    assert as_dicts(lp.events(n=10, count=3)) == [{"mechanism": "laplace", "scale": 2.0, "count": 3}]
    assert lp.b == pytest.approx(2.0) and lp.epsilon0 == pytest.approx(0.5)
    lar = mechanisms.get("laplace", scale=2.0, clip=0.5, neighbouring="add_remove")
    assert as_dicts(lar.events(count=1))[0]["scale"] == pytest.approx(1.0)  # b = 1 over Δ₁ = 2·clip = 1
    with pytest.raises(ParameterError, match="subsampled"):
        g.events(n=100, k=10)


@pytest.mark.parametrize(
    "bad", [dict(n=0), dict(n=10, k=11), dict(n=10, count=0), dict(n=2.5), dict(n=10, k=True)]
)
def test_events_validation(bad):
    with pytest.raises(ParameterError):
        mechanisms.get("binary_rr", epsilon0=1.0).events(**bad)


# --- composition through the accountant -----------------------------------------------------------------

accountant = pytest.importorskip("accountant")
needs_accountant = pytest.mark.skipif(
    not all(hasattr(accountant, f) for f in ("epsilon", "compose", "event_rdp", "epsilon_from_rdp")),
    reason="accountant core API not available yet",
)


def _same_event(a, b):
    assert a.keys() == b.keys()
    for f in a:
        if isinstance(a[f], str):
            assert a[f] == b[f]
        elif isinstance(a[f], list):
            assert len(a[f]) == len(b[f])
            for x, y in zip(a[f], b[f]):
                _same_event(x, y)
        else:
            assert a[f] == pytest.approx(b[f], rel=1e-12)


def _by_hand(events, delta):
    orders = np.asarray(accountant.DEFAULT_ORDERS, dtype=float)
    total = np.zeros(orders.size)
    for e in events:
        total = total + np.asarray(accountant.event_rdp(e, orders), dtype=float)
    return accountant.epsilon_from_rdp(orders, total, delta)[0], total


def _hand_events(name, params, n, k, T):
    """The events written out by hand from the spec (independently of ``mech.events``)."""

    def ev(e0, output=None):
        out = {"mechanism": "shuffle", "n": n, "epsilon0": e0, "count": T}
        if output:
            out["output"] = output
        return out

    def round_of(messages, output=None):
        """With k: one subsampled event per round, the round's messages inside (equal ε0 merged)."""
        if k is None:
            return [ev(e, output) for e in messages]
        inner = []
        for e in dict.fromkeys(messages):
            i = {"mechanism": "shuffle", "epsilon0": e, "count": messages.count(e)}
            if output:
                i["output"] = output
            inner.append(i)
        return [{"mechanism": "subsampled", "n": n, "k": k, "inner": inner, "count": T}]

    def linf_eps(e0, m, s):
        w = [4 ** (-j / 3) for j in range(1, m)] + [4 ** (-(m - 1) / 3)]
        return [e0 * x / sum(w) / s for x in w for _ in range(s)]

    if name == "binary_rr":  # randomized response names itself (bounds.md §12)
        pop = (
            {"mechanism": "shuffle_rr", "n": n}
            if k is None
            else {"mechanism": "subsampled_shuffle_rr", "n": n, "k": k}
        )
        return [{**pop, "epsilon0": params["epsilon0"], "categories": 2, "count": T}]
    if name == "binary_vector":
        return round_of([params["epsilon0"] / params["s"]] * params["s"])
    if name in ("linf", "l2"):
        return round_of(linf_eps(params["epsilon0"], params["m"], params["s"]))
    if name == "user_mean":
        return round_of([params["epsilon0"] / 2] + linf_eps(params["epsilon0"] / 2, params["m"], 1))
    if name == "laplace_mean":
        return round_of([params["epsilon0"]], "continuous")
    if name == "gaussian":
        return [{"mechanism": "gaussian", "noise_multiplier": params["noise_multiplier"], "count": T}]
    if name == "laplace":
        return [{"mechanism": "laplace", "scale": params["scale"], "count": T}]
    raise AssertionError(name)


@needs_accountant
@pytest.mark.parametrize(
    "name,params,n,k,T",
    [
        ("binary_rr", {"epsilon0": 1.0}, 10_000, None, 50),
        ("binary_vector", {"epsilon0": 2.0, "d": 64, "s": 4}, 20_000, None, 20),
        ("linf", {"epsilon0": 3.0, "d": 64, "m": 3, "s": 2}, 50_000, None, 10),
        ("linf", {"epsilon0": 3.0, "d": 64, "m": 3, "s": 2}, 100_000, 5_000, 100),
        ("l2", {"epsilon0": 2.0, "d": 32, "m": 2, "s": 4}, 50_000, 2_000, 30),
        ("user_mean", {"epsilon0": 2.0, "B": 1.0, "tau": 0.1, "m": 3}, 10_000, None, 5),
        ("laplace_mean", {"epsilon0": 1.0}, 10_000, None, 10),
        ("binary_vector", {"epsilon0": 6.0, "d": 4, "s": 4}, 1000, 2, 1),
        ("user_mean", {"epsilon0": 2.0, "B": 1.0, "tau": 0.1, "m": 3}, 10_000, 100, 5),
        ("binary_rr", {"epsilon0": 1.0}, 10_000, 100, 50),
        ("gaussian", {"noise_multiplier": 2.0}, None, None, 100),
        ("laplace", {"scale": 3.0}, None, None, 10),
    ],
)
def test_composition_matches_hand(name, params, n, k, T):
    mech = mechanisms.get(name, **params)
    evs = as_dicts(mech.events(n=n, k=k, count=T))
    hand = _hand_events(name, params, n, k, T)
    assert len(evs) == len(hand)
    for a, b in zip(evs, hand):
        _same_event(a, b)
    delta = 1e-6
    eps, _order = accountant.epsilon(evs, delta, accounting="rdp")
    assert eps == pytest.approx(accountant.epsilon(hand, delta, accounting="rdp")[0], rel=1e-9)
    # the order-wise sum of the per-event curves is the composed curve
    grid_eps, total = _by_hand(evs, delta)
    np.testing.assert_allclose(accountant.compose(evs), total, rtol=1e-12)
    assert eps <= grid_eps * (1 + 1e-12) and eps == pytest.approx(grid_eps, rel=1e-2)
    # merging identical messages into one event with count × multiplicity gives the same guarantee
    merged: dict = {}
    for e in evs:
        key = json.dumps({kk: v for kk, v in e.items() if kk != "count"}, sort_keys=True)
        merged[key] = merged.get(key, 0) + e["count"]
    merged_events = [dict(json.loads(key), count=c) for key, c in merged.items()]
    assert accountant.epsilon(merged_events, delta, accounting="rdp")[0] == pytest.approx(eps, rel=1e-9)
    assert math.isfinite(eps) and eps > 0


@needs_accountant
def test_multi_message_costs_more_than_one_message_at_the_slot_level():
    """s messages at ε0/s compose to more than one message at ε0/s and at most the ε0-LDP cap."""
    bv = mechanisms.get("binary_vector", epsilon0=2.0, d=64, s=4)
    one = mechanisms.get("binary_rr", epsilon0=0.5)
    e_bv = accountant.epsilon(bv.events(20_000), 1e-6)[0]
    e_one = accountant.epsilon(one.events(20_000), 1e-6)[0]
    assert e_one < e_bv <= 2.0 + 1e-9


@needs_accountant
def test_calibrate_meets_target():
    mech = mechanisms.calibrate("linf", epsilon=1.0, delta=1e-6, n=10_000, count=100, d=8, m=2, s=2)
    eps = accountant.epsilon(mech.events(10_000, count=100), 1e-6, accounting="rdp")[0]
    assert eps <= 1.0 and eps == pytest.approx(1.0, rel=1e-3)
    bigger = mechanisms.get("linf", epsilon0=mech.epsilon0 * 1.001, d=8, m=2, s=2)
    assert accountant.epsilon(bigger.events(10_000, count=100), 1e-6, accounting="rdp")[0] > 1.0
    g = mechanisms.calibrate("gaussian", epsilon=2.0, delta=1e-5, count=50)
    assert accountant.epsilon(g.events(count=50), 1e-5, accounting="rdp")[0] <= 2.0
    with pytest.raises(ParameterError):
        mechanisms.calibrate("binary_rr", epsilon=1e-9, delta=1e-9, n=10, count=1000)


# --- catalog ----------------------------------------------------------------------------------------------


def test_available_lists_everything():
    cat = mechanisms.available()
    names = [c["name"] for c in cat]
    assert set(REQUIRED) <= set(names) and len(names) == len(set(names))
    for c in cat:
        assert set(c) >= {"name", "description", "parameters", "output", "source"}
        assert c["output"] in ("discrete", "continuous")
        assert c["description"] and c["source"]
        for pname, p in c["parameters"].items():
            assert {"type", "description", "default"} <= set(p), (c["name"], pname)
            assert p["type"] in ("number", "integer", "string", "interval")
    by = {c["name"]: c for c in cat}
    assert by["laplace_mean"]["output"] == "continuous"
    assert all(by[n]["output"] == "discrete" for n in REQUIRED[:9])
    assert "Theorem" in by["binary_rr"]["source"] and "3.5" in by["linf"]["source"]
    assert by["binary_vector"]["parameters"]["s"]["default"] == 1
    assert by["kary_rr"]["parameters"]["k"]["required"] is True


@pytest.mark.parametrize("name", REQUIRED)
def test_every_mechanism_has_the_api(name):
    mech = mechanisms.get(name, **EXAMPLES[name])
    assert mech.name == name
    for attr in (
        "epsilon0",
        "bits_per_report",
        "output_alphabet_size",
        "randomize",
        "estimate",
        "mse",
        "events",
    ):
        assert hasattr(mech, attr)
    desc = mech.describe()
    import json

    json.dumps(desc)  # JSON-ready
    assert desc["name"] == name


# --- errors ------------------------------------------------------------------------------------------------


def test_errors_say_what_to_change():
    with pytest.raises(UnknownMechanismError, match="available"):
        mechanisms.get("nope")
    with pytest.raises(KeyError):
        mechanisms.get("nope")
    with pytest.raises(ParameterError, match="epsilon0"):
        mechanisms.get("binary_rr", epsilon0=-1)
    with pytest.raises(ParameterError, match="'k'"):
        mechanisms.get("kary_rr", epsilon0=1.0)
    with pytest.raises(ParameterError, match="unknown parameter"):
        mechanisms.get("binary_rr", epsilon0=1.0, eps=2)
    with pytest.raises(ParameterError, match="choose s"):
        mechanisms.get("binary_vector", epsilon0=1.0, d=5, s=4)
    with pytest.raises(ParameterError):
        mechanisms.get("linf", epsilon0=float("nan"), d=3)
    with pytest.raises(ParameterError, match="tau"):
        mechanisms.get("user_range", epsilon0=1.0, B=1.0, tau=2.0)
    mech = mechanisms.get("binary_rr", epsilon0=1.0)
    with pytest.raises(TypeError, match="Generator"):
        mech.randomize([0, 1], 42)
    with pytest.raises(InputError, match="0/1"):
        mech.randomize([0, 2], np.random.default_rng(0))
    with pytest.raises(InputError):
        mechanisms.get("kary_rr", epsilon0=1.0, k=3).randomize([3], np.random.default_rng(0))
    with pytest.raises(InputError):
        mechanisms.get("linf", epsilon0=1.0, d=3).estimate({"index": [[[5]]], "bit": [[[1]]]})
    with pytest.raises(InputError):
        mechanisms.get("l1", epsilon0=1.0, d=3).randomize(np.full((2, 3), np.inf), np.random.default_rng(0))


def test_reproducible_with_seeded_generator():
    mech = mechanisms.get("linf", epsilon0=2.0, d=32, m=3, s=4)
    x = np.random.default_rng(1).uniform(-1, 1, (100, 32))
    a = mech.randomize(x, np.random.default_rng(7))
    b = mech.randomize(x, np.random.default_rng(7))
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_fwht_matches_dense_hadamard():
    from scipy.linalg import hadamard

    from mechanisms.hadamard import fwht, hadamard_coefficients, hadamard_entries

    rng = np.random.default_rng(0)
    for d in (1, 2, 8, 64, 256, 2048):
        x = rng.normal(size=(5, d))
        np.testing.assert_allclose(fwht(x), x @ hadamard(d).T, atol=1e-9)
        jj = rng.integers(0, d, 5)
        np.testing.assert_allclose(
            hadamard_coefficients(x, jj), (x @ hadamard(d).T)[np.arange(5), jj], atol=1e-9
        )
        i = rng.integers(0, d, 50)
        j = rng.integers(0, d, 50)
        np.testing.assert_array_equal(hadamard_entries(i, j), hadamard(d)[i, j])


def test_calibrate_deadline():
    import time

    with pytest.raises(mechanisms.CalibrationTimeout):
        mechanisms.calibrate("binary_rr", epsilon=1.0, delta=1e-6, n=1000, deadline=time.monotonic() - 1)
