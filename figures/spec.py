"""The panels of thesis figures 5.2, 5.3, 5.4 and 5.6 (§5.5): axes and fixed parameters.

Fixed parameters are the captions' (extracted thesis text, §5.5). The extracted text does not
give the plotted ranges of the x axes; the ranges below are chosen to cover the regimes the text
discusses and every point it quotes (T = 10⁵ in 5.4a and 5.6a). Figure 5.6c: the caption prints
γ = 0.001 while the text says k = γn = 10³ is fixed and γ varies with n — the text is followed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Panel:
    fig: str  # "5.2"
    panel: str  # "a"
    kind: str  # what is computed (see compute.py)
    x: str  # "alpha" | "n" | "epsilon0" | "T"
    xs: tuple  # x values (full resolution)
    quick_xs: tuple  # x values with --quick
    params: dict = field(default_factory=dict)
    caption: str = ""

    def values(self, quick: bool) -> list:
        return list(self.quick_xs if quick else self.xs)


def _geo_int(lo, hi, num):
    return tuple(int(v) for v in np.unique(np.round(np.geomspace(lo, hi, num))))


def _lin(lo, hi, num):
    return tuple(float(round(v, 6)) for v in np.linspace(lo, hi, num))


ALPHAS = _geo_int(2, 1000, 40)
ALPHAS_Q = (2, 5, 20, 100, 1000)
NS = _geo_int(1000, 10**7, 25)
NS_Q = (1000, 10**4, 10**5, 10**6, 10**7)
EPS0S = _lin(0.1, 5.0, 25)
EPS0S_Q = (0.1, 1.0, 2.0, 3.0, 5.0)
NS_C = _geo_int(1000, 10**7, 13)  # the T = 10⁴ composition panels (each point builds a new clone PLD)
EPS0S_C = _lin(0.1, 5.0, 13)
TS = tuple(sorted({*_geo_int(1, 10**5, 21), 10**5}))
TS_Q = (1, 100, 10**4, 10**5)

DELTA_SINGLE = 1e-6  # figure 5.3
DELTA_COMPOSED = 1e-8  # figures 5.4, 5.6

FIGURES: dict[str, list[Panel]] = {
    "5.2": [
        Panel(
            "5.2",
            "a",
            "rdp",
            "alpha",
            ALPHAS,
            ALPHAS_Q,
            {"epsilon0": 0.1, "n": 10**4},
            "RDP vs α, ε0 = 0.1, n = 10⁴",
        ),
        Panel(
            "5.2", "b", "rdp", "n", NS, NS_Q, {"epsilon0": 0.1, "alpha": 100}, "RDP vs n, ε0 = 0.1, α = 100"
        ),
        Panel(
            "5.2",
            "c",
            "rdp",
            "epsilon0",
            EPS0S,
            EPS0S_Q,
            {"n": 10**4, "alpha": 100},
            "RDP vs ε0, n = 10⁴, α = 100",
        ),
        Panel(
            "5.2",
            "d",
            "rdp",
            "alpha",
            ALPHAS,
            ALPHAS_Q,
            {"epsilon0": 3.0, "n": 10**4},
            "RDP vs α, ε0 = 3, n = 10⁴",
        ),
        Panel("5.2", "e", "rdp", "n", NS, NS_Q, {"epsilon0": 3.0, "alpha": 100}, "RDP vs n, ε0 = 3, α = 100"),
        Panel(
            "5.2",
            "f",
            "rdp",
            "epsilon0",
            EPS0S,
            EPS0S_Q,
            {"n": 10**6, "alpha": 100},
            "RDP vs ε0, n = 10⁶, α = 100",
        ),
    ],
    "5.3": [
        Panel("5.3", "a", "single", "n", NS, NS_Q, {"epsilon0": 0.1}, "(ε, δ) vs n, ε0 = 0.1, δ = 10⁻⁶"),
        Panel(
            "5.3", "b", "single", "epsilon0", EPS0S, EPS0S_Q, {"n": 10**4}, "(ε, δ) vs ε0, n = 10⁴, δ = 10⁻⁶"
        ),
        Panel("5.3", "c", "single", "n", NS, NS_Q, {"epsilon0": 3.0}, "(ε, δ) vs n, ε0 = 3, δ = 10⁻⁶"),
        Panel(
            "5.3", "d", "single", "epsilon0", EPS0S, EPS0S_Q, {"n": 10**5}, "(ε, δ) vs ε0, n = 10⁵, δ = 10⁻⁶"
        ),
    ],
    "5.4": [
        Panel(
            "5.4",
            "a",
            "composed",
            "T",
            TS,
            TS_Q,
            {"epsilon0": 0.5, "n": 10**6},
            "ε vs T, ε0 = 0.5, n = 10⁶, δ = 10⁻⁸",
        ),
        Panel(
            "5.4",
            "b",
            "composed",
            "n",
            NS_C,
            (10**4, 10**6),
            {"epsilon0": 0.5, "T": 10**4},
            "ε vs n, ε0 = 0.5, T = 10⁴, δ = 10⁻⁸",
        ),
        Panel(
            "5.4",
            "c",
            "composed",
            "epsilon0",
            EPS0S_C,
            (0.5, 3.0),
            {"n": 10**5, "T": 10**4},
            "ε vs ε0, n = 10⁵, T = 10⁴, δ = 10⁻⁸",
        ),
        Panel(
            "5.4",
            "d",
            "composed",
            "T",
            TS,
            TS_Q,
            {"epsilon0": 2.0, "n": 10**6},
            "ε vs T, ε0 = 2, n = 10⁶, δ = 10⁻⁸",
        ),
        Panel(
            "5.4",
            "e",
            "composed",
            "n",
            NS_C,
            (10**4, 10**6),
            {"epsilon0": 2.0, "T": 10**4},
            "ε vs n, ε0 = 2, T = 10⁴, δ = 10⁻⁸",
        ),
        Panel(
            "5.4",
            "f",
            "composed",
            "epsilon0",
            EPS0S_C,
            (0.5, 3.0),
            {"n": 10**6, "T": 10**4},
            "ε vs ε0, n = 10⁶, T = 10⁴, δ = 10⁻⁸",
        ),
    ],
    "5.6": [
        Panel(
            "5.6",
            "a",
            "subsampled",
            "T",
            TS,
            TS_Q,
            {"epsilon0": 2.0, "n": 10**6, "k": 1000},
            "ε vs T, ε0 = 2, γ = 0.001, n = 10⁶, δ = 10⁻⁸",
        ),
        Panel(
            "5.6",
            "b",
            "subsampled",
            "T",
            TS,
            TS_Q,
            {"epsilon0": 1.0, "n": 10**7, "k": 10**4},
            "ε vs T, ε0 = 1, γ = 0.001, n = 10⁷, δ = 10⁻⁸",
        ),
        Panel(
            "5.6",
            "c",
            "subsampled",
            "n",
            _geo_int(10**4, 10**8, 17),
            (10**4, 10**6, 10**8),
            {"epsilon0": 2.0, "k": 1000, "T": 10**5},
            "ε vs n, ε0 = 2, k = 10³ (γ = 10³/n), T = 10⁵, δ = 10⁻⁸",
        ),
    ],
}

TITLES = {
    "5.2": "Figure 5.2 — RDP of the shuffle model",
    "5.3": "Figure 5.3 — (ε, δ) of one shuffle, δ = 10⁻⁶",
    "5.4": "Figure 5.4 — (ε, δ) after T shuffles, δ = 10⁻⁸",
    "5.6": "Figure 5.6 — (ε, δ) after T subsampled shuffles, δ = 10⁻⁸",
}

NOT_COVERED = (
    "Figure 5.5 (shuffling with Poisson subsampling) is not regenerated: the theorems the service "
    "implements cover sampling k of n users without replacement only (thesis §5.4, WBK19), not Poisson "
    "sampling, so the service has no valid curve to draw for it."
)
