"""Shared machinery of the central user-level mechanisms (run by the trusted server on per-user data).

* :class:`CentralMechanism` — the catalog interface for a server-side release: ``events(count=…)``,
  calibration from an (ε, δ) target (``calibrated(mode=…)``), no local ε0;
* :func:`exponential_sample` / :func:`exponential_log_probabilities` — the exponential mechanism on
  a grid whose scores are constant along runs of cells (sampled in O(runs), not O(cells));
* :func:`largest_feasible` — the calibration search: the largest value of a privacy knob whose
  accounted ε stays within the target (``accountant.calibration.find_crossing``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray

from accountant import AccountantError, Event, epsilon_guarantee
from accountant.calibration import Domain, find_crossing

from ._base import Kind, Mechanism, Output, ParameterError, check_population

#: calibration modes every central mechanism accepts
MODES = ("tight", "paper")

#: a central mechanism class's own type (``calibrated`` returns an instance of the class it is called on)
_Central = TypeVar("_Central", bound="CentralMechanism")


def check_target(epsilon: float, delta: float) -> tuple[float, float]:
    """The (ε, δ) target as floats: ε finite and > 0, δ in (0, 1) (``ParameterError`` otherwise)."""
    if isinstance(epsilon, bool) or not (
        isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0
    ):
        raise ParameterError(f"target epsilon must be a finite number > 0 (got {epsilon!r})")
    if isinstance(delta, bool) or not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ParameterError(f"target delta must be in (0, 1) (got {delta!r})")
    return float(epsilon), float(delta)


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES` (``ParameterError`` naming them otherwise)."""
    if mode not in MODES:
        raise ParameterError(f"calibration mode must be one of {list(MODES)} (got {mode!r})")
    return mode


def accounted_epsilon(events: list[Event], delta: float) -> float:
    """ε at δ of ``events`` as the accountant reports it (``accountant.epsilon_guarantee``, the
    tightest valid conversion); +inf when the accountant finds no ε (an ``AccountantError``), so a
    calibration search treats such a knob value as infeasible — never as cheap."""
    try:
        return epsilon_guarantee(events, delta).epsilon
    except AccountantError:
        return math.inf


def largest_feasible(
    f: Callable[[float], float], target: float, lo: float, hi: float, what: str, rel_tol: float = 1e-4
) -> float:
    """The largest x in [lo, hi] with f(x) ≤ target, f non-decreasing (a crossing verified on its
    feasible side); ParameterError when even ``lo`` misses."""
    dom = Domain(lo=lo, hi=hi, integer=False, increasing=True, rtol=rel_tol, start=math.sqrt(lo * hi))
    found = find_crossing(f, dom, target, start=math.sqrt(lo * hi))
    if found.good is None:
        raise ParameterError(
            f"even {what} = {lo:g} does not meet the target epsilon = {target:g}; raise the target, add users "
            "or lower the number of steps"
        )
    return float(found.good)


class CentralMechanism(Mechanism):
    """A central release: the trusted server sees the per-user data and publishes only noisy outputs.

    Subclasses implement ``run_events(count)`` (the accountant events of ``count`` uses), ``mse`` and
    the calibration hooks ``paper_params(epsilon, delta, count, **params)`` (the source's printed
    closed forms) and ``KNOB`` (the privacy parameter searched in ``tight`` mode)."""

    kind: ClassVar[Kind] = "central"
    output: ClassVar[Output] = "continuous"
    #: the parameter calibration solves for (larger = less private), and its search range
    KNOB: ClassVar[str] = "epsilon"
    KNOB_RANGE: ClassVar[tuple[float, float]] = (1e-9, 50.0)

    epsilon0 = None
    bits_per_report = None
    output_alphabet_size = None

    @property
    def message_epsilons(self) -> list[float]:
        """No local messages: a central release has no ε0-LDP report."""
        return []

    def run_events(self, count: int) -> list[Event]:  # pragma: no cover - overridden
        """The accountant events of ``count`` uses (each mechanism overrides it)."""
        raise NotImplementedError

    def events(self, n: int | None = None, k: int | None = None, count: int = 1) -> list[Event]:
        """The accountant events of ``count`` uses (replace-one user-level; no sampling: every user
        takes part in every use, so ``k`` must be left out)."""
        if k is not None:
            raise ParameterError(
                f"{self.name} is a central release on all users: there is no sampled form; leave k out "
                "(no amplification by sampling is claimed for it)"
            )
        if n is not None:
            check_population(n, None, count)
        _, _, count = check_population(1, None, count)
        return self.run_events(count)

    # --------------------------------------------------------------------------------- calibration
    @classmethod
    def paper_params(cls, epsilon: float, delta: float, count: int, params: dict[str, Any]) -> dict[str, Any]:
        """The source's printed calibration (overridden)."""
        del epsilon, delta, count, params  # this mechanism has none
        raise ParameterError(f"{cls.name} has no 'paper' calibration")

    @classmethod
    def calibrated(
        cls: type[_Central],
        epsilon: float,
        delta: float,
        mode: str = "tight",
        count: int = 1,
        rel_tol: float = 1e-4,
        **params: Any,
    ) -> _Central:
        """The mechanism meeting (``epsilon``, ``delta``) over ``count`` uses.

        ``tight``: the largest ``KNOB`` whose events, composed by the accountant, give ε ≤ target at δ
        (verified: the returned mechanism's accounted ε is never above the target). ``paper``: the
        source's printed closed forms (for comparison and tests; its accounted ε may differ — see each
        mechanism, and ``events()`` always describes what actually runs)."""
        epsilon, delta = check_target(epsilon, delta)
        check_mode(mode)
        if cls.KNOB in params:
            raise ParameterError(f"leave '{cls.KNOB}' out when calibrating: it is what is solved for")
        if mode == "paper":
            return cls(**{**params, **cls.paper_params(epsilon, delta, count, params)})

        def f(x: float) -> float:
            """Accounted ε at δ of ``count`` uses with the knob at ``x``."""
            return accounted_epsilon(cls(**{**params, cls.KNOB: x}).events(count=count), delta)

        lo, hi = cls.KNOB_RANGE
        return cls(**{**params, cls.KNOB: largest_feasible(f, epsilon, lo, hi, cls.KNOB, rel_tol)})


# ------------------------------------------------------------------------------------------------------
# The exponential mechanism on runs of equal scores
# ------------------------------------------------------------------------------------------------------


def exponential_log_probabilities(
    run_lengths: NDArray[np.int64], run_scores: NDArray[np.int64], eps: float
) -> NDArray[np.float64]:
    """log P(run r) for the exponential mechanism P(cell) ∝ exp(ε·score/2) (score sensitivity 1;
    McSherry–Talwar 2007, Thm 6), cells grouped in runs of equal score:
    log(len_r) + ε·s_r/2 − logsumexp over the runs (the max is factored out before exponentiating)."""
    lengths, scores = run_lengths.astype(np.float64), run_scores.astype(np.float64)
    lw: NDArray[np.float64] = np.log(lengths) + 0.5 * eps * scores
    m = float(np.max(lw))
    out: NDArray[np.float64] = lw - (m + math.log(float(np.sum(np.exp(lw - m)))))
    return out


def exponential_sample(
    run_starts: NDArray[np.int64],
    run_lengths: NDArray[np.int64],
    run_scores: NDArray[np.int64],
    eps: float,
    rng: np.random.Generator,
) -> int:
    """One cell of the exponential mechanism (∝ exp(ε·score/2) per cell): a run by the Gumbel-max
    trick on its log weight (exact sampling from the softmax), then a uniform cell inside it."""
    lw = np.log(run_lengths.astype(float)) + 0.5 * eps * run_scores.astype(float)
    r = int(np.argmax(lw + rng.gumbel(size=lw.size)))
    return int(run_starts[r] + rng.integers(run_lengths[r]))


__all__ = [
    "MODES",
    "CentralMechanism",
    "accounted_epsilon",
    "check_mode",
    "check_target",
    "exponential_log_probabilities",
    "exponential_sample",
    "largest_feasible",
]
