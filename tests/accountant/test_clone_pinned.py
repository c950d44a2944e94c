"""The clone engine's curves pinned bit for bit (tests/accountant/data/clone_pinned.json).

Every engine of :func:`accountant.clones.clone_rdp` over a grid of (n, ε0) and a mix of orders,
stored as exact float hex: a refactor of the engine must leave every value bit-identical (a change
that moves a bound, even by one ulp, is a change of the mathematics and regenerates the fixture on
purpose: ``python -m tests.accountant.test_clone_pinned``). The exact engine is pinned up to
n = 1,000 only (its cost grows like n^{3/2}: minutes above); the compiled kernels (numba, when
installed) are pinned on their own, their rounding differs from the numpy path's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from accountant.clones import ENGINES, clear_cache, clone_rdp, compiled

FIXTURE = Path(__file__).parent / "data" / "clone_pinned.json"
NS = (2, 50, 1000, 10**5, 10**6, 10**7)
EPS0S = (0.1, 0.5, 2.0, 5.0)
ORDERS = (1.01, 1.5, 2.0, 3.0, 7.3, 20.0, 64.0, 256.0, 1000.0, 5000.0)
#: "auto" also with orders on both sides of 10⁴ (the split to the adaptive engine above it)
ORDERS_WIDE = (2.0, 64.0, 2.0e4, 1.0e5)
EXACT_MAX_N = 1000


def _cases() -> Iterator[tuple[str, str, int, float, tuple[float, ...]]]:
    for engine in ENGINES:
        for n in NS:
            if engine == "exact" and n > EXACT_MAX_N:
                continue
            for eps0 in EPS0S:
                yield f"{engine} {n} {eps0!r}", engine, n, eps0, ORDERS
                if engine == "auto":
                    yield f"auto-wide {n} {eps0!r}", engine, n, eps0, ORDERS_WIDE


def _compiled_cases() -> Iterator[tuple[str, str, int, float, tuple[float, ...]]]:
    for engine in ("auto", "histogram"):
        for n in NS[2:]:
            for eps0 in EPS0S:
                yield f"compiled {engine} {n} {eps0!r}", engine, n, eps0, ORDERS


def _curve(engine: str, n: int, eps0: float, orders: tuple[float, ...]) -> list[str]:
    clear_cache()  # every value from a cold engine: independent of the order of the cases
    try:
        return [float(v).hex() for v in clone_rdp(n, eps0, np.array(orders), engine=engine)]
    except ValueError:  # an engine that refuses the combination
        return ["refused"]


def _compute(cases: Iterator[tuple[str, str, int, float, tuple[float, ...]]]) -> dict[str, list[str]]:
    return {key: _curve(engine, n, eps0, orders) for key, engine, n, eps0, orders in cases}


def _numba_installed() -> bool:
    was = compiled.available()
    try:
        return compiled.use(True)
    finally:
        compiled.use(was)


@pytest.fixture(scope="module")
def pinned() -> dict[str, dict[str, list[str]]]:
    data: dict[str, dict[str, list[str]]] = json.loads(FIXTURE.read_text())
    return data


def test_numpy_curves_are_bit_identical(pinned):
    was = compiled.available()
    compiled.use(False)
    try:
        got = _compute(_cases())
    finally:
        compiled.use(was)
    assert got.keys() == pinned["numpy"].keys()
    diff = {k: (got[k], pinned["numpy"][k]) for k in got if got[k] != pinned["numpy"][k]}
    assert not diff


@pytest.mark.skipif(not _numba_installed(), reason="numba not installed")
@pytest.mark.usefixtures("kernels_on")
def test_compiled_curves_are_bit_identical(pinned):
    got = _compute(_compiled_cases())
    diff = {k: (got[k], pinned["compiled"][k]) for k in got if got[k] != pinned["compiled"][k]}
    assert got.keys() == pinned["compiled"].keys()
    assert not diff


def test_the_pin_can_fail(pinned):
    """One ulp off any pinned value is a difference."""
    key, vals = next(iter(pinned["numpy"].items()))
    moved = [float(np.nextafter(float.fromhex(vals[0]), np.inf)).hex(), *vals[1:]]
    assert moved != _curve(*key.split()[:1], int(key.split()[1]), float(key.split()[2]), ORDERS)


def _regenerate() -> None:
    was = compiled.available()
    compiled.use(False)
    data = {"numpy": _compute(_cases())}
    if compiled.use(True):
        data["compiled"] = _compute(_compiled_cases())
    compiled.use(was)
    FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    _regenerate()
