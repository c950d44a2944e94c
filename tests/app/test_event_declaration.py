"""Each event type is declared once: a toy event type, declared in one place (below), shows up in
the accountant, the pydantic models / OpenAPI schema, the HTTP endpoints and the CLI flags.

The declaration has to happen before the app's modules build their models, so the check runs in
a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import accountant

TOY = textwrap.dedent('''
    import json
    from dataclasses import dataclass
    from typing import ClassVar

    import numpy as np

    from accountant.events import Event, register, spec


    @register
    @dataclass(frozen=True, kw_only=True)
    class ToyEvent(Event):
        """A toy release whose RDP grows linearly: ε(α) = slope·α."""

        mechanism: ClassVar[str] = "toy"
        SAMPLING: ClassVar[str] = "none"
        SOURCE: ClassVar[str] = "this test"
        EXAMPLE: ClassVar[dict] = {"mechanism": "toy", "slope": 0.01}

        slope: float = spec("number", "the toy slope of ε(α)", lo=0.0, hi=1.0, lo_open=True, cli="toy-slope")

        def unit_curve(self, orders, bound="upper"):
            return self.slope * np.asarray(orders, dtype=float)


    import accountant
    from fastapi.testclient import TestClient

    from app.cli import build_parser
    from app.main import create_app

    out = {}
    out["accountant"] = accountant.epsilon([{"mechanism": "toy", "slope": 0.01, "count": 3}], 1e-5)[0]
    with TestClient(create_app()) as c:
        schema = c.get("/openapi.json").json()
        out["schema"] = schema["components"]["schemas"].get("ToyEvent")
        out["inner_schema"] = "InnerToyEvent" in schema["components"]["schemas"]
        r = c.post("/v1/epsilon", json={"events": [{"mechanism": "toy", "slope": 0.01, "count": 3}], "delta": 1e-5})
        out["http"] = r.json()["epsilon"]
        r = c.post("/v1/epsilon", json={"events": [{"mechanism": "toy", "slope": 2.0}], "delta": 1e-5})
        out["http_bad"] = r.status_code
        r = c.post("/v1/epsilon", json={"events": [{"mechanism": "subsampled", "n": 100, "k": 10,
                                                     "inner": [{"mechanism": "toy", "slope": 0.01}]}], "delta": 1e-5})
        out["nested"] = r.status_code
    args = build_parser().parse_args(["epsilon", "--mechanism", "toy", "--toy-slope", "0.01", "--count", "3",
                                      "--delta", "1e-5"])
    res, _text = args.func(args)
    out["cli"] = res["epsilon"]
    print(json.dumps(out))
''')


def test_a_toy_event_declared_once_is_everywhere():
    r = subprocess.run([sys.executable, "-c", TOY], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # the accountant: ε from the linear curve 0.03·α, converted (bounds.md §4)
    orders = accountant.DEFAULT_ORDERS
    eps_grid = accountant.epsilon_from_rdp(orders, 0.03 * orders, 1e-5)[0]
    assert 0 < out["accountant"] <= eps_grid * (1 + 1e-12)
    # the schema: the field, its limits and description, the docstring and the declared source
    props = out["schema"]["properties"]
    assert props["slope"]["exclusiveMinimum"] == 0.0 and props["slope"]["maximum"] == 1.0
    assert props["slope"]["description"] == "the toy slope of ε(α)"
    assert "Source: this test" in out["schema"]["description"] and out["inner_schema"]
    # HTTP and CLI answer with the accountant's number; an out-of-range field is a 422
    assert out["http"] == out["accountant"] == out["cli"]
    assert out["http_bad"] == 422 and out["nested"] == 200


def test_every_type_states_its_meaning():
    for name, cls in accountant.EVENT_TYPES.items():
        assert cls.RELATION and cls.SAMPLING and cls.SOURCE, name
        assert cls.__doc__ and cls.EXAMPLE["mechanism"] == name
        accountant.event_from_dict(cls.EXAMPLE)  # the published example is a valid event
        for field, s in cls.specs().items():
            assert s.description, (name, field)
