"""The 50-digit reference values shipped in tests/data/shuffle_rdp.json (bounds.md §7).

Its ``upper`` column is the thesis-only default (min of U1, U2, cap interpolated); with the
tighter bounds of §8 the default can only be lower, so ``upper`` is pinned against
``bound="thesis"`` and the default is checked to be no larger.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import accountant as A

REF = json.loads((Path(__file__).parents[1] / "data" / "shuffle_rdp.json").read_text())
UPPER_RTOL = 1e-9
LOWER_RTOL = 1e-7


def _rel(a, b):
    return abs(a - b) / abs(b)


@pytest.mark.parametrize("row", REF["shuffle"], ids=lambda r: f"n{r['n']}-e{r['epsilon0']}-a{r['order']}")
def test_shuffle_reference(row):
    o = [row["order"]]
    named = {"u1": "u1", "u2": "u2", "cap": "cap", "upper": "thesis", "lower": "lower"}
    for col, bound in named.items():
        if col not in row:
            continue
        got = A.shuffle_rdp(row["n"], row["epsilon0"], o, bound=bound)[0]
        want = float(row[col])
        tol = LOWER_RTOL if col == "lower" else UPPER_RTOL
        assert _rel(got, want) <= tol, (col, got, want)
        if col != "lower":
            assert got >= want * (1 - 1e-15), f"{col} rounded inward"
    default = A.shuffle_rdp(row["n"], row["epsilon0"], o)[0]
    assert default <= float(row["upper"]) * (1 + UPPER_RTOL)
    if "lower" in row:
        assert default >= float(row["lower"]) * (1 - LOWER_RTOL)


@pytest.mark.parametrize("row", REF["subsampled_shuffle"], ids=lambda r: f"n{r['n']}-k{r['k']}-a{r['order']}")
def test_subsampled_reference(row):
    o = [row["order"]]
    if "su" in row:
        got = A.subsampled_shuffle_rdp(row["n"], row["k"], row["epsilon0"], o, bound="su")[0]
        assert _rel(got, float(row["su"])) <= UPPER_RTOL
    thesis = A.subsampled_shuffle_rdp(row["n"], row["k"], row["epsilon0"], o, bound="thesis")[0]
    assert _rel(thesis, float(row["upper"])) <= UPPER_RTOL
    default = A.subsampled_shuffle_rdp(row["n"], row["k"], row["epsilon0"], o)[0]
    assert default <= float(row["upper"]) * (1 + UPPER_RTOL)
    if "lower" in row:
        got = A.subsampled_shuffle_rdp(row["n"], row["k"], row["epsilon0"], o, bound="lower")[0]
        assert _rel(got, float(row["lower"])) <= LOWER_RTOL
        assert default >= got


@pytest.mark.parametrize("row", REF["conversion"], ids=lambda r: f"delta{r['delta']}")
def test_conversion_reference(row):
    eps, order = A.epsilon_from_rdp(row["orders"], [float(x) for x in row["rdp"]], row["delta"])
    assert _rel(eps, float(row["epsilon"])) <= 1e-12
    assert order == row["epsilon_order"]
    d, d_order = A.delta_from_rdp(row["orders"], [float(x) for x in row["rdp"]], float(row["epsilon"]))
    assert _rel(d, float(row["delta_at_that_epsilon"])) <= 1e-9
    assert d_order == row["epsilon_order"]


def test_reference_file_is_the_shared_copy_shape():
    assert set(REF) >= {"shuffle", "subsampled_shuffle", "conversion"}
    assert len(REF["shuffle"]) >= 10 and np.all([r["n"] >= 1 for r in REF["shuffle"]])
