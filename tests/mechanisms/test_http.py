"""HTTP endpoints of the mechanisms: catalog, parameters/accounting/calibration, randomize → estimate,
errors (404 / 422 with a useful detail, never 500), bounds on input sizes, OpenAPI documentation."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mechanisms

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402


@pytest.fixture(scope="module")
def client():
    from app.main import create_app

    with TestClient(create_app()) as c:
        yield c


def test_catalog(client):
    r = client.get("/v1/mechanisms")
    assert r.status_code == 200
    body = r.json()
    names = {m["name"] for m in body["mechanisms"]}
    assert {
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
    } <= names
    by = {m["name"]: m for m in body["mechanisms"]}
    assert by["kary_rr"]["parameters"]["k"]["type"] == "integer"
    assert by["kary_rr"]["parameters"]["epsilon0"]["required"] is True
    assert by["laplace_mean"]["output"] == "continuous" and by["linf"]["output"] == "discrete"
    assert "own device" in body["note"]


def test_parameters_with_accounting(client):
    r = client.post(
        "/v1/mechanisms/linf/parameters",
        json={
            "params": {"epsilon0": 2.0, "d": 64, "m": 3, "s": 2},
            "accounting": {"n": 10000, "k": 500, "count": 20, "delta": 1e-6},
        },
    )
    assert r.status_code == 200, r.text
    b = r.json()
    mech = mechanisms.get("linf", epsilon0=2.0, d=64, m=3, s=2)
    assert b["events"] == [e.to_dict() for e in mech.events(n=10000, k=500, count=20)]
    assert len(b["events"]) == 1 and sum(i["count"] for i in b["events"][0]["inner"]) == 6
    assert b["bits_per_report"] == mech.bits_per_report
    assert b["internals"]["level_epsilons"] == pytest.approx(list(mech.level_epsilons))
    assert b["mse"] == pytest.approx(mech.mse(n=10000)) and b["mse_per_client"] == pytest.approx(
        mech.mse(n=1)
    )
    assert 0 < b["epsilon"] < 2.0 * 20 and b["delta"] == 1e-6 and b["order"] > 1
    r = client.post("/v1/mechanisms/kary_rr/parameters", json={"params": {"epsilon0": 1.0, "k": 8}})
    assert r.status_code == 200 and r.json()["events"] is None and r.json()["output_alphabet_size"] == 8


def test_parameters_huge_alphabet_is_json_safe(client):
    r = client.post(
        "/v1/mechanisms/linf/parameters", json={"params": {"epsilon0": 2.0, "d": 4096, "m": 24, "s": 40}}
    )
    assert r.status_code == 200, r.text
    b = r.json()
    assert b["output_alphabet_size"] is None and b["output_alphabet_log2"] > 53


def test_parameters_calibrate(client):
    accountant = pytest.importorskip("accountant")
    r = client.post(
        "/v1/mechanisms/binary_vector/parameters",
        json={
            "params": {"d": 16, "s": 2},
            "accounting": {"n": 500, "count": 10},
            "calibrate": {"epsilon": 1.0, "delta": 1e-6},
        },
    )
    assert r.status_code == 200, r.text
    b = r.json()
    assert b["epsilon"] <= 1.0 and b["epsilon"] == pytest.approx(1.0, rel=1e-3)
    assert accountant.epsilon(b["events"], 1e-6, accounting="rdp")[0] <= 1.0
    r = client.post(
        "/v1/mechanisms/gaussian/parameters",
        json={
            "params": {"clip": 2.0},
            "accounting": {"n": 100, "count": 10},
            "calibrate": {"epsilon": 1.0, "delta": 1e-5},
        },
    )
    assert r.status_code == 200 and r.json()["epsilon"] <= 1.0
    assert r.json()["internals"]["sigma"] == pytest.approx(4.0 * r.json()["params"]["noise_multiplier"])
    r = client.post(
        "/v1/mechanisms/binary_rr/parameters",
        json={
            "params": {},
            "accounting": {"n": 10, "count": 1000},
            "calibrate": {"epsilon": 1e-6, "delta": 1e-9},
        },
    )
    assert r.status_code == 422 and "does not meet" in r.json()["detail"]
    r = client.post(
        "/v1/mechanisms/binary_rr/parameters",
        json={
            "params": {"epsilon0": 1.0},
            "accounting": {"n": 10},
            "calibrate": {"epsilon": 1.0, "delta": 1e-6},
        },
    )
    assert r.status_code == 422 and "epsilon0" in r.json()["detail"]
    r = client.post(
        "/v1/mechanisms/binary_rr/parameters", json={"params": {}, "calibrate": {"epsilon": 1, "delta": 1e-6}}
    )
    assert r.status_code == 422 and "accounting" in r.json()["detail"]


@pytest.mark.parametrize(
    "name,params,inputs",
    [
        ("binary_rr", {"epsilon0": 1.0}, [0, 1, 1, 0, 1]),
        ("kary_rr", {"epsilon0": 1.0, "k": 4}, [0, 1, 3, 3, 2]),
        ("binary_vector", {"epsilon0": 2.0, "d": 5, "s": 2}, [[0, 1, 1, 0, 1], [1, 1, 1, 1, 1]]),
        ("l1", {"epsilon0": 1.0, "d": 5}, [[0.2, -0.3, 0, 0, 0.1], [1, 0, 0, 0, 0]]),
        ("linf", {"epsilon0": 2.0, "d": 4, "m": 2, "s": 2}, [[0.1, -0.5, 0.9, 0.0], [1, 1, -1, 0.3]]),
        ("l2", {"epsilon0": 2.0, "d": 4, "m": 2, "s": 2}, [[0.1, -0.5, 0.5, 0.0], [0.6, 0, 0, 0.8]]),
        ("hadamard_response", {"epsilon0": 1.0, "k": 5}, [0, 4, 2, 2]),
        ("user_range", {"epsilon0": 1.0, "B": 1.0, "tau": 0.1}, [[0.1, 0.2], [0.3, 0.25], [0.2, 0.1]]),
        ("user_mean", {"epsilon0": 2.0, "B": 1.0, "tau": 0.1}, [[0.1, 0.2], [0.3], [0.25, 0.2, 0.1]]),
        ("user_mean", {"epsilon0": 2.0, "B": 1.0, "tau": 0.1, "interval": [-0.5, 0.5]}, [0.1, 0.3, -0.2]),
        (
            "user_mean",
            {"epsilon0": 4.0, "B": 1.0, "tau": 0.1, "d": 4, "m": 2, "n": 10},
            [[[0.1, 0.2, 0.0, 0.1]], [[0.1, 0.1, 0.0, 0.2], [0.2, 0.2, 0.1, 0.1]]],
        ),
        ("laplace_mean", {"epsilon0": 1.0}, [0.1, -0.2, 0.5]),
        ("gaussian", {"noise_multiplier": 1.0, "d": 2}, [[0.1, 0.2], [0.3, -0.1]]),
        ("laplace", {"scale": 1.0}, [0.1, 0.2, 0.3]),
    ],
)
def test_randomize_then_estimate(client, name, params, inputs):
    r = client.post(f"/v1/mechanisms/{name}/randomize", json={"params": params, "inputs": inputs, "seed": 5})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["seed"] == 5 and body["clients"] == len(inputs) and "own device" in body["note"]
    # the reference client code with the same seed gives the same reports
    mech = mechanisms.get(name, **params)
    x = inputs if name == "user_mean" and isinstance(inputs[0], list) else np.asarray(inputs)
    ref = json.loads(json.dumps(_plain(mech.randomize(x, np.random.default_rng(5)))))
    assert body["reports"] == ref
    r2 = client.post(f"/v1/mechanisms/{name}/randomize", json={"params": params, "inputs": inputs, "seed": 5})
    assert r2.json()["reports"] == body["reports"]
    e = client.post(f"/v1/mechanisms/{name}/estimate", json={"params": params, "reports": body["reports"]})
    assert e.status_code == 200, e.text
    eb = e.json()
    expected = mech.estimate(_arrays(ref))
    np.testing.assert_allclose(
        np.asarray(eb["estimate"], dtype=float), np.asarray(expected, dtype=float), rtol=1e-12
    )
    assert eb["reports"] == len(inputs)
    if name == "user_range":
        assert len(eb["interval"]) == 2


def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    return v


def _arrays(v):
    if isinstance(v, dict):
        return {
            k: (_arrays(x) if isinstance(x, dict) else (np.asarray(x) if isinstance(x, list) else x))
            for k, x in v.items()
        }
    return np.asarray(v)


def test_seed_is_returned_when_omitted(client):
    r = client.post(
        "/v1/mechanisms/binary_rr/randomize", json={"params": {"epsilon0": 1.0}, "inputs": [1, 0]}
    )
    assert r.status_code == 200 and isinstance(r.json()["seed"], int)


def test_estimate_is_order_free(client):
    params = {"epsilon0": 1.0, "d": 8}
    rep = client.post(
        "/v1/mechanisms/l1/randomize", json={"params": params, "seed": 1, "inputs": np.eye(8)[:6].tolist()}
    ).json()["reports"]
    perm = [3, 0, 5, 1, 4, 2]
    shuffled = {k: [v[i] for i in perm] for k, v in rep.items()}
    a = client.post("/v1/mechanisms/l1/estimate", json={"params": params, "reports": rep}).json()["estimate"]
    b = client.post("/v1/mechanisms/l1/estimate", json={"params": params, "reports": shuffled}).json()[
        "estimate"
    ]
    np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize(
    "path,body,status,needle",
    [
        ("/v1/mechanisms/nope/parameters", {"params": {}}, 404, "available"),
        ("/v1/mechanisms/nope/randomize", {"params": {}, "inputs": [1]}, 404, "available"),
        ("/v1/mechanisms/nope/estimate", {"params": {}, "reports": [1]}, 404, "available"),
        ("/v1/mechanisms/kary_rr/parameters", {"params": {"epsilon0": 1.0}}, 422, "'k'"),
        ("/v1/mechanisms/kary_rr/parameters", {"params": {"epsilon0": -1, "k": 3}}, 422, "epsilon0"),
        ("/v1/mechanisms/kary_rr/parameters", {"params": {"epsilon0": "1", "k": 3}}, 422, "number"),
        (
            "/v1/mechanisms/kary_rr/parameters",
            {"params": {"epsilon0": 1, "k": 3, "x": 1}},
            422,
            "unknown parameter",
        ),
        (
            "/v1/mechanisms/binary_vector/parameters",
            {"params": {"epsilon0": 1, "d": 5, "s": 4}},
            422,
            "choose s",
        ),
        ("/v1/mechanisms/l1/parameters", {"params": {"epsilon0": 1, "d": 10**7}}, 422, "'d'"),
        (
            "/v1/mechanisms/linf/parameters",
            {"params": {"epsilon0": 1, "d": 4096, "m": 24, "s": 4096}},
            422,
            "messages",
        ),
        (
            "/v1/mechanisms/linf/parameters",
            {"params": {"epsilon0": 1, "d": 65536, "m": 24, "s": 65536}},
            422,
            "messages",
        ),
        (
            "/v1/mechanisms/user_mean/parameters",
            {"params": {"epsilon0": 1, "B": 1, "tau": 0.1, "d": 4096}},
            422,
            "messages",
        ),
        (
            "/v1/mechanisms/user_range/parameters",
            {"params": {"epsilon0": 1, "B": 1e9, "tau": 1e-9}},
            422,
            "tau",
        ),
        (
            "/v1/mechanisms/kary_rr/randomize",
            {"params": {"epsilon0": 1, "k": 3}, "inputs": [0, 5]},
            422,
            "0..2",
        ),
        ("/v1/mechanisms/binary_rr/randomize", {"params": {"epsilon0": 1}, "inputs": [0, 0.5]}, 422, "0/1"),
        ("/v1/mechanisms/binary_rr/randomize", {"params": {"epsilon0": 1}, "inputs": ["a"]}, 422, "number"),
        (
            "/v1/mechanisms/linf/randomize",
            {"params": {"epsilon0": 1, "d": 3}, "inputs": [[1, 2]]},
            422,
            "shape",
        ),
        (
            "/v1/mechanisms/binary_rr/randomize",
            {"params": {"epsilon0": 1}, "inputs": [0] * 20001},
            422,
            "20000",
        ),
        (
            "/v1/mechanisms/linf/randomize",
            {"params": {"epsilon0": 1, "d": 120, "m": 24, "s": 40}, "inputs": [[0.0] * 120] * 250},
            422,
            "messages",
        ),
        (
            "/v1/mechanisms/linf/randomize",
            {"params": {"epsilon0": 1, "d": 1000}, "inputs": [[0.0] * 1000] * 250},
            422,
            "numbers",
        ),
        (
            "/v1/mechanisms/linf/estimate",
            {"params": {"epsilon0": 1, "d": 3}, "reports": {"index": [[[7]]], "bit": [[[1]]]}},
            422,
            "index",
        ),
        (
            "/v1/mechanisms/linf/estimate",
            {"params": {"epsilon0": 1, "d": 3}, "reports": [1, 2]},
            422,
            "index",
        ),
        (
            "/v1/mechanisms/binary_rr/estimate",
            {"params": {"epsilon0": 1}, "reports": {"a": [1]}},
            422,
            "bits",
        ),
        (
            "/v1/mechanisms/kary_rr/estimate",
            {"params": {"epsilon0": 1, "k": 3}, "reports": []},
            422,
            "at least one",
        ),
        ("/v1/mechanisms/binary_rr/estimate", {"params": {"epsilon0": 1}, "reports": 3}, 422, "list"),
        (
            "/v1/mechanisms/user_mean/estimate",
            {"params": {"epsilon0": 1, "B": 1, "tau": 0.1}, "reports": {"mean": {}}},
            422,
            "interval",
        ),
    ],
)
def test_errors(client, path, body, status, needle):
    r = client.post(path, json=body)
    assert r.status_code == status, r.text[:500]
    detail = r.json()["detail"]
    assert needle in (detail if isinstance(detail, str) else json.dumps(detail)), detail


ODD = [
    None,
    0,
    -1,
    1e308,
    "x",
    [],
    {},
    [[]],
    [None],
    [[1, [2]]],
    {"index": "a"},
    [1e308, -1e308],
    [[1, 2], [3]],
    {"index": [[0]], "bit": [[0.5]]},
    {"noisy_sum": [1], "n": 0},
    {"noisy_sum": [1], "n": True},
    [True, False],
]


@pytest.mark.parametrize(
    "name",
    [
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
    ],
)
def test_no_500_on_odd_input(client, name):
    good = {
        "binary_rr": {"epsilon0": 1},
        "kary_rr": {"epsilon0": 1, "k": 3},
        "binary_vector": {"epsilon0": 1, "d": 2},
        "l1": {"epsilon0": 1, "d": 2},
        "linf": {"epsilon0": 1, "d": 2},
        "l2": {"epsilon0": 1, "d": 2},
        "hadamard_response": {"epsilon0": 1, "k": 3},
        "user_range": {"epsilon0": 1, "B": 1, "tau": 0.2},
        "user_mean": {"epsilon0": 1, "B": 1, "tau": 0.2},
        "laplace_mean": {"epsilon0": 1},
        "gaussian": {"noise_multiplier": 1},
        "laplace": {"scale": 1},
    }[name]
    for odd in ODD:
        for path, body in (
            ("randomize", {"params": good, "inputs": odd}),
            ("estimate", {"params": good, "reports": odd}),
            ("parameters", {"params": {**good, "epsilon0": odd}}),
            ("parameters", {"params": good, "accounting": {"n": odd}}),
        ):
            r = client.post(f"/v1/mechanisms/{name}/{path}", json=body)
            assert r.status_code < 500, (path, odd, r.text)
            assert r.status_code in (200, 400, 404, 413, 422)
            if r.status_code != 200:
                assert r.json()["detail"]
            else:
                json.loads(r.text, parse_constant=lambda c, p=path: pytest.fail(f"non-finite {c} in {p}"))
    # NaN / Infinity literals are not valid JSON numbers for this API
    r = client.post(
        f"/v1/mechanisms/{name}/randomize",
        content=b'{"params": {"epsilon0": 1}, "inputs": [NaN]}',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 422 or r.status_code == 400


def test_openapi_documents_the_endpoints(client):
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    for p, method in (
        ("/v1/mechanisms", "get"),
        ("/v1/mechanisms/{name}/parameters", "post"),
        ("/v1/mechanisms/{name}/randomize", "post"),
        ("/v1/mechanisms/{name}/estimate", "post"),
    ):
        op = paths[p][method]
        assert op.get("summary") and op.get("description")
    rnd = paths["/v1/mechanisms/{name}/randomize"]["post"]
    assert "own device" in rnd["description"]
    assert "422" in rnd["responses"] and "404" in rnd["responses"]
    schemas = spec["components"]["schemas"]
    assert "examples" in schemas["RandomizeRequest"] and "examples" in schemas["ParametersRequest"]


def test_calibration_over_the_time_limit_is_a_400():
    from app.core.config import Settings
    from app.main import create_app

    with TestClient(create_app(Settings(compute_time_limit=1e-6))) as c:
        r = c.post(
            "/v1/mechanisms/binary_rr/parameters",
            json={"params": {}, "accounting": {"n": 1000}, "calibrate": {"epsilon": 1.0, "delta": 1e-6}},
        )
    assert r.status_code == 400 and "more computation" in r.json()["detail"]


def test_unknown_mechanism_is_404_on_every_route_including_calibration(client):
    """Regression (found by schemathesis): the calibration branch looked the name up unguarded."""
    bodies = {
        "parameters": {"calibrate": {"epsilon": 1.0, "delta": 1e-6}, "params": {}},
        "randomize": {"inputs": [0, 1]},
        "estimate": {"reports": [0, 1]},
    }
    for route, body in bodies.items():
        r = client.post(f"/v1/mechanisms/no_such_mechanism/{route}", json=body)
        assert r.status_code == 404, (route, r.text)
        assert "available" in r.json()["detail"]
    r = client.post(
        "/v1/mechanisms/kary_rr/randomize",
        json={"params": {"epsilon0": 1, "k": 4}, "inputs": [0], "seed": False},
    )
    assert r.status_code == 422


@pytest.mark.parametrize(
    "name,params",
    [
        ("binary_rr", {"epsilon0": 1e-300}),
        ("kary_rr", {"epsilon0": 1e-300, "k": 4}),
        ("l1", {"epsilon0": 1e-300, "d": 4}),
        ("hadamard_response", {"epsilon0": 1e-300, "k": 8}),
        ("user_range", {"epsilon0": 1e-300, "B": 10, "tau": 1}),
        ("laplace_mean", {"epsilon0": 1e-300}),
        ("linf", {"epsilon0": 1, "d": 4, "r_inf": 1e308}),
        ("l2", {"epsilon0": 1, "d": 4, "n": 1e308}),
        ("user_mean", {"epsilon0": 1, "B": 10, "tau": 1, "interval": [0, 1e308]}),
    ],
)
def test_degenerate_numbers_are_a_422_not_a_500(client, name, params):
    """Regression (red-team): a tiny ε0 (e^ε0 − 1 == 0) or a huge radius raised ZeroDivisionError /
    OverflowError inside the mechanism and the service answered 500."""
    for path, body in (
        ("parameters", {"params": params, "accounting": {"n": 10000, "count": 10, "delta": 1e-6}}),
        ("randomize", {"params": params, "inputs": [0], "seed": 1}),
        ("estimate", {"params": params, "reports": [0]}),
    ):
        r = client.post(f"/v1/mechanisms/{name}/{path}", json=body)
        assert r.status_code < 500, (path, r.text)
        if r.status_code != 200:
            assert r.json()["detail"]
    r = client.post(f"/v1/mechanisms/{name}/parameters", json={"params": params})
    assert r.status_code == 422, r.text
    # the detail names the parameter to change (ε0, or a population beyond the events' limit)
    assert "epsilon0" in r.json()["detail"] or "'n' must be" in r.json()["detail"]


@pytest.mark.parametrize("name,params", [("kary_rr", {"k": 4}), ("hadamard_response", {"k": 8})])
def test_calibrating_a_mechanism_with_a_k_parameter(client, name, params):
    """Regression (red-team): the mechanism's own `k` (alphabet size) collided with the sampled users `k`
    of `accounting` in mechanisms.calibrate(**params) → TypeError → 500."""
    for acc in ({"n": 100000, "count": 10}, {"n": 100000, "k": 1000, "count": 10}):
        r = client.post(
            f"/v1/mechanisms/{name}/parameters",
            json={"params": params, "accounting": acc, "calibrate": {"epsilon": 1.0, "delta": 1e-6}},
        )
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["params"]["k"] == params["k"]
        assert out["epsilon"] <= 1.0
        assert all(ev.get("k") == acc.get("k") for ev in out["events"])


def test_calibrating_a_central_mechanism_with_sampled_users_says_why():
    """Regression (red-team): the real error (central mechanisms take no k) was reported as an infeasible
    target ("no noise_multiplier up to 1e+06 does not meet ...")."""
    with pytest.raises(mechanisms.MechanismError, match="leave k out"):
        mechanisms.calibrate("gaussian", epsilon=1.0, delta=1e-6, n=1000, k=100, count=10)


def _solve(client, name, params, accounting=None, solve_for=None, epsilon=1.0, delta=1e-8):
    """POST /v1/mechanisms/{name}/parameters with `calibrate` (and `accounting` when given)."""
    body = {"params": params, "calibrate": {"epsilon": epsilon, "delta": delta}}
    if solve_for is not None:
        body["calibrate"]["solve_for"] = solve_for
    if accounting is not None:
        body["accounting"] = accounting
    return client.post(f"/v1/mechanisms/{name}/parameters", json=body)


def test_parameters_calibrate_solve_for_count_n_k(client):
    """calibrate.solve_for count / n / k: the mechanism as given, the accounting found in `value` and
    the events; the accountant's ε at the answer meets the target, one step further misses."""
    accountant = pytest.importorskip("accountant")

    def eps(events):
        return accountant.epsilon(events, 1e-8, accounting="rdp")[0]

    rr = {"epsilon0": 1.0}
    r = _solve(client, "binary_rr", rr, {"n": 100000}, "count")
    assert r.status_code == 200, r.text
    b = r.json()
    count = b["value"]
    assert (b["solve_for"], b["at_limit"], b["params"]) == ("count", False, rr)
    assert [e["count"] for e in b["events"]] == [count] and b["epsilon"] <= 1.0
    assert eps(b["events"]) <= 1.0 < eps([{**b["events"][0], "count": count + 1}])
    assert b["mse"] == pytest.approx(mechanisms.get("binary_rr", **rr).mse(n=100000))

    r = _solve(client, "binary_rr", rr, {"k": 1000, "count": 100}, "n")
    assert r.status_code == 200, r.text
    b = r.json()
    n = b["value"]
    assert b["solve_for"] == "n" and n > 1000 and b["events"][0]["n"] == n and b["events"][0]["k"] == 1000
    assert eps(b["events"]) <= 1.0 < eps([{**b["events"][0], "n": n - 1}])

    r = _solve(client, "binary_rr", rr, {"n": 100000, "count": 100}, "k")
    assert r.status_code == 200, r.text
    b = r.json()
    assert (b["solve_for"], b["value"], b["at_limit"]) == ("k", 100000, True)  # every user fits: k = n
    assert eps(b["events"]) <= 1.0

    # a central mechanism, no accounting: count only (docs/api.md: 17 rounds at noise multiplier 10)
    r = _solve(client, "gaussian", {"noise_multiplier": 10.0}, None, "count", epsilon=2.0, delta=1e-6)
    assert r.status_code == 200 and (r.json()["solve_for"], r.json()["value"]) == ("count", 17)
    # the default: the knob, reported as what was solved for
    r = _solve(client, "gaussian", {}, {"n": 100, "count": 10}, delta=1e-5)
    b = r.json()
    assert r.status_code == 200 and b["solve_for"] == "noise_multiplier" and b["at_limit"] is None
    assert b["value"] == b["params"]["noise_multiplier"] == b["events"][0]["noise_multiplier"]


@pytest.mark.parametrize(
    "name,params,accounting,solve_for,says",
    [
        # the request model: a name no mechanism solves for (listing every one), the unknown left
        # out of accounting, n required otherwise
        ("binary_rr", {"epsilon0": 1.0}, {"n": 10}, "rounds", "'count', 'n' or 'k'"),
        ("binary_rr", {"epsilon0": 1.0}, {"n": 10, "count": 3}, "count", "leave accounting.count out"),
        ("binary_rr", {"epsilon0": 1.0}, {"n": 10}, "n", "leave accounting.n out"),
        ("binary_rr", {"epsilon0": 1.0}, {"count": 3}, "count", "accounting.n is required"),
        # the mechanism: what this one solves for, its knob given, a target no count meets
        ("gaussian", {"noise_multiplier": 1.0}, None, "k", "['noise_multiplier', 'count'] for gaussian"),
        ("binary_rr", {}, {"n": 10}, "count", "needs parameter 'epsilon0'"),
        ("binary_rr", {"epsilon0": 1.0}, {"n": 10}, "count", "no count meets epsilon = 0.001"),
    ],
)
def test_parameters_calibrate_solve_for_errors_say_what_to_change(
    client, name, params, accounting, solve_for, says
):
    r = _solve(client, name, params, accounting, solve_for, epsilon=1e-3, delta=1e-9)
    assert r.status_code == 422, r.text
    assert says in json.dumps(r.json()["detail"], ensure_ascii=False)
