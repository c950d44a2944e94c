"""Shared machinery: parameter declarations and validation, the event builders, the base class."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from accountant.events import (
    MAX_COUNT,
    MAX_USERS,
    Event,
    ShuffleEvent,
    ShuffleRREvent,
    SubsampledEvent,
    SubsampledShuffleRREvent,
)

#: reports made of several arrays, as ``randomize`` returns them ({"index": …, "bit": …})
ReportArrays = dict[str, NDArray[np.integer[Any]]]
#: the same as ``estimate`` accepts them: any array-likes under those keys (checked there)
ReportArraysLike = Mapping[str, ArrayLike]
#: what a mechanism outputs: a local randomizer's finite alphabet or continuous range, or a central release
Output = Literal["discrete", "continuous", "central"]
#: where the randomness is added: on each client (shuffled reports) or by the trusted server
Kind = Literal["local", "central"]
#: the output range of a local randomizer, as the shuffle events declare it
LocalOutput = Literal["discrete", "continuous"]


class MechanismError(ValueError):
    """Base class of the errors this package raises on bad input (a ``ValueError``)."""


class UnknownMechanismError(MechanismError, KeyError):
    """No mechanism of that name is registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown mechanism"


class ParameterError(MechanismError):
    """A mechanism parameter is missing, of the wrong type or out of range; the message says which."""


class CalibrationTimeout(MechanismError):
    """A calibration did not finish within its deadline (the accountant's curves computed so far are cached)."""


class InputError(MechanismError):
    """Client inputs or reports do not match the mechanism's domain; the message says what to change."""


# --------------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------------

_REQUIRED = object()


@dataclass(frozen=True)
class Param:
    """Declaration of one constructor parameter (used for validation and for ``available()``)."""

    type: str  # "number" | "integer" | "string" | "interval"
    description: str
    default: Any = _REQUIRED
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] | None = None
    nullable: bool = False

    @property
    def required(self) -> bool:
        """True when the parameter has no default (it must be given)."""
        return self.default is _REQUIRED

    def as_dict(self) -> dict[str, Any]:
        """The catalog form of the declaration: type, description, required, default, bounds, choices."""
        out: dict[str, Any] = {"type": self.type, "description": self.description}
        out["required"] = self.required
        out["default"] = None if self.required else self.default
        if self.minimum is not None:
            out["exclusive_minimum" if self.exclusive_minimum else "minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.choices is not None:
            out["choices"] = list(self.choices)
        if self.nullable:
            out["nullable"] = True
        return out

    def coerce(self, name: str, value: Any) -> Any:
        """``value`` converted to the declared type and checked against the declared limits."""
        if value is None:
            if self.nullable:
                return None
            raise ParameterError(f"parameter '{name}' must not be null")
        if self.type == "interval":
            return _as_interval(name, value)
        if self.type == "integer":
            value = _as_integer(name, value)
        elif self.type == "number":
            value = _as_number(name, value)
        elif self.type == "string" and not isinstance(value, str):
            raise ParameterError(f"parameter '{name}' must be a string (got {value!r})")
        self._check_limits(name, value)
        return value

    def _check_limits(self, name: str, value: Any) -> None:
        """``ParameterError`` unless ``value`` is one of the choices and lies in [minimum, maximum]
        (minimum exclusive when so declared)."""
        if self.choices is not None and value not in self.choices:
            raise ParameterError(f"parameter '{name}' must be one of {list(self.choices)} (got {value!r})")
        if self.minimum is not None:
            if self.exclusive_minimum and not value > self.minimum:
                raise ParameterError(f"parameter '{name}' must be > {self.minimum} (got {value!r})")
            if not self.exclusive_minimum and not value >= self.minimum:
                raise ParameterError(f"parameter '{name}' must be >= {self.minimum} (got {value!r})")
        if self.maximum is not None and not value <= self.maximum:
            raise ParameterError(f"parameter '{name}' must be <= {self.maximum} (got {value!r})")


def _as_integer(name: str, value: object) -> int:
    """``value`` as an int: an integer, or a finite integral float; booleans are rejected."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise ParameterError(f"parameter '{name}' must be an integer (got {value!r})")
    if isinstance(value, (float, np.floating)) and (not math.isfinite(value) or value != int(value)):
        raise ParameterError(f"parameter '{name}' must be an integer (got {value!r})")
    return int(value)


def _as_number(name: str, value: object) -> float:
    """``value`` as a finite float; booleans are rejected."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"parameter '{name}' must be a number (got {value!r})")
    v = float(value)
    if not math.isfinite(v):
        raise ParameterError(f"parameter '{name}' must be a finite number (got {v!r})")
    return v


def _as_interval(name: str, value: Any) -> tuple[float, float]:
    """``value`` as a pair (low, high) of finite floats with low < high."""
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ParameterError(
            f"parameter '{name}' must be a pair [low, high] of finite numbers (got {value!r})"
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError(
            f"parameter '{name}' must be a pair [low, high] with finite low < high (got {value!r})"
        )
    return (lo, hi)


EPS0_MAX = 50.0  # e^{50} is still comfortably finite; larger local budgets are meaningless
D_MAX = 1 << 24
K_MAX = 1 << 24


def eps0_param(description: str = "local privacy level ε0 of one whole report (pure ε0-LDP)") -> Param:
    """The declaration of a local privacy level ε0 ∈ (0, EPS0_MAX] (pure ε0-LDP of one report)."""
    return Param("number", description, minimum=0.0, exclusive_minimum=True, maximum=EPS0_MAX)


def check_params(declared: dict[str, Param], given: dict[str, Any], mechanism: str) -> dict[str, Any]:
    """``given`` validated against ``declared``: unknown names rejected, each value coerced and
    checked against its declaration, defaults filled in, a missing required parameter named."""
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ParameterError(
            f"unknown parameter(s) {unknown} for mechanism '{mechanism}'; accepted: {sorted(declared)}"
        )
    out: dict[str, Any] = {}
    for name, p in declared.items():
        if name in given:
            out[name] = p.coerce(name, given[name])
        elif p.required:
            raise ParameterError(f"mechanism '{mechanism}' needs parameter '{name}': {p.description}")
        else:
            out[name] = p.default
    return out


# --------------------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------------------


def _check_int(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    """``value`` as an int in [``minimum``, ``maximum``] (a finite integral float is accepted)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and math.isfinite(value) and value == int(value):
            value = int(value)
        else:
            raise ParameterError(f"'{name}' must be an integer >= {minimum} (got {value!r})")
    v = int(value)
    if v < minimum:
        raise ParameterError(f"'{name}' must be an integer >= {minimum} (got {v})")
    if maximum is not None and v > maximum:
        raise ParameterError(f"'{name}' must be an integer <= {maximum:.0e} (the events' limit), got {v:.3g}")
    return v


def check_population(n: object, k: object, count: object) -> tuple[int, int | None, int]:
    """(n, k, count) of an accounting: n >= 1 users, k in 1..n users sampled per round (or None:
    every user in every round), count >= 1 rounds; ``ParameterError`` naming the bad one."""
    n = _check_int("n", n, 1, MAX_USERS)
    if k is not None:
        k = _check_int("k", k, 1, MAX_USERS)
        if k > n:
            raise ParameterError(f"'k' (users sampled per round) must be <= n = {n} (got {k})")
    count = _check_int("count", count, 1, MAX_COUNT)
    return n, k, count


def shuffle_event(n: int, epsilon0: float, count: int, output: LocalOutput = "discrete") -> ShuffleEvent:
    """One shuffled message type over all ``n`` users, used ``count`` times: the api.md event."""
    return ShuffleEvent(n=int(n), epsilon0=float(epsilon0), count=int(count), output=output)


def sampled_round_event(
    n: int, k: int, message_epsilons: list[float], count: int, output: LocalOutput = "discrete"
) -> SubsampledEvent:
    """``count`` rounds, each sampling k of n users (without replacement) who send every message of
    their report, each message through its own shuffler: ONE ``subsampled`` event whose inner
    events are the round's messages (equal ε0 merged into one inner event with that count). All
    messages of a round share the sample, so they are one sampled mechanism, never a sum of
    separately amplified messages (accountant/nested.py)."""
    per_eps: dict[float, int] = {}
    for e in message_epsilons:
        per_eps[float(e)] = per_eps.get(float(e), 0) + 1
    inner = tuple(ShuffleEvent(n=int(k), epsilon0=e, count=c, output=output) for e, c in per_eps.items())
    return SubsampledEvent(n=int(n), k=int(k), inner=inner, count=int(count))


def report_events(
    n: int, k: int | None, message_epsilons: list[float], count: int, output: LocalOutput = "discrete"
) -> list[Event]:
    """The events of ``count`` rounds of a report made of separately shuffled messages: without
    sampling, one ``shuffle`` event per message (independent mechanisms compose); with k sampled
    per round, one ``subsampled`` event per round (:func:`sampled_round_event`)."""
    if k is None:
        return [shuffle_event(n, e, count, output) for e in message_epsilons]
    return [sampled_round_event(n, k, message_epsilons, count, output)]


def rr_events(n: int | None, k: int | None, epsilon0: float, categories: int, count: int) -> list[Event]:
    """The events of ``count`` shuffled rounds of randomized response over ``categories`` symbols
    (one report per user): ``shuffle_rr`` over all n users, or ``subsampled_shuffle_rr`` with k of
    n sampled per round — the randomizer-aware events (bounds.md §12), never above the generic
    ``shuffle`` / ``subsampled_shuffle`` ones."""
    n, k, count = check_population(n, k, count)
    eps, cats = float(epsilon0), int(categories)
    if k is None:
        return [ShuffleRREvent(n=n, epsilon0=eps, categories=cats, count=count)]
    return [SubsampledShuffleRREvent(n=n, k=k, epsilon0=eps, categories=cats, count=count)]


# --------------------------------------------------------------------------------------------------
# Base class
# --------------------------------------------------------------------------------------------------


def check_rng(rng: object) -> np.random.Generator:
    """``rng`` itself when it is a ``numpy.random.Generator`` (``TypeError`` otherwise): every
    mechanism draws all its randomness from the injected generator."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)); "
            "mechanisms take all their randomness from it"
        )
    return rng


def ldp_ratio(p_max: float, p_min: float) -> float:
    """p_max/p_min: the largest likelihood ratio of one output between two inputs; a randomizer is
    ε0-LDP exactly when this is ≤ e^{ε0} for every output (Dwork–Roth Def. 2.4, local form)."""
    return p_max / p_min


class Mechanism:
    """Base class. Subclasses set the class attributes and implement the client/server methods.

    Public attributes common to all mechanisms:

    - ``name``, ``params`` (validated constructor parameters), ``epsilon0`` (ε0 of one whole report,
      ``None`` where the notion does not apply);
    - ``message_epsilons`` — the ε0 of each separately shuffled message of one report (one shuffler per
      entry); the report's ε0 is their sum;
    - ``bits_per_report`` and ``output_alphabet_size`` (``None`` where not meaningful);
    - ``randomize(x, rng)``, ``estimate(reports)``, ``mse(n, x=None)``, ``events(n, k=None, count=1)``,
      ``internals()``.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    source: ClassVar[str] = ""
    output: ClassVar[Output] = "discrete"
    kind: ClassVar[Kind] = "local"
    #: position in the catalog (``mechanisms.available()``); ties keep registration order
    POSITION: ClassVar[int] = 100
    PARAMETERS: ClassVar[dict[str, Param]] = {}
    # set by each subclass's _setup (None where the notion does not apply)
    epsilon0: float | None
    bits_per_report: int | None
    output_alphabet_size: int | None

    def __init__(self, **params: Any) -> None:
        self.params = check_params(self.PARAMETERS, params, self.name)
        self._setup()

    # subclasses -----------------------------------------------------------------------------------
    def _setup(self) -> None:  # pragma: no cover - overridden
        """Derive the calibrated internals from ``self.params`` (each mechanism overrides it)."""
        pass

    @property
    def message_epsilons(self) -> list[float]:
        """The ε0 of each separately shuffled message of one report; by default one message
        carrying the whole report's ε0."""
        assert self.epsilon0 is not None  # mechanisms without a local ε0 override this
        return [float(self.epsilon0)]

    def events(self, n: int | None, k: int | None = None, count: int = 1) -> list[Event]:
        """The accountant events (:class:`accountant.Event` objects; ``to_dict()`` gives the api.md form) of ``count`` shuffled rounds over ``n`` users: without
        ``k``, one ``shuffle`` event per separately shuffled message (each with its own ε0); with
        ``k`` users sampled per round, one ``subsampled`` event per round whose inner events are the
        round's messages (they share the sample). See :func:`report_events`. A shuffled mechanism
        needs its population: ``n`` None (or not an integer >= 1) is a ``ParameterError``; the
        central mechanisms, which override this, accept it."""
        n, k, count = check_population(n, k, count)
        out: LocalOutput = "continuous" if self.output == "continuous" else "discrete"
        return report_events(n, k, self.message_epsilons, count, out)

    # the client/server interface (each mechanism implements it; the report types differ by mechanism)
    def randomize(self, x: Any, rng: np.random.Generator) -> Any:  # pragma: no cover - overridden
        """Client side: the reports of a batch of inputs, all randomness drawn from ``rng``."""
        raise NotImplementedError

    def estimate(self, reports: Any) -> Any:  # pragma: no cover - overridden
        """Server side: the unbiased aggregate of the (shuffled) reports."""
        raise NotImplementedError

    def mse(self, n: int | None = None, x: Any = None) -> float:  # pragma: no cover - overridden
        """The estimate's mean squared error: exact for given inputs ``x``, else its supremum over the
        input domain for ``n`` clients."""
        raise NotImplementedError

    def internals(self) -> dict[str, Any]:
        """The calibrated internals (flip probabilities, budget split, radii …); none by default."""
        return {}

    def describe(self) -> dict[str, Any]:
        """Everything the ``parameters`` endpoint reports, JSON-ready."""
        return {
            "name": self.name,
            "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.params.items()},
            "epsilon0": None if self.epsilon0 is None else float(self.epsilon0),
            "message_epsilons": [float(e) for e in self.message_epsilons],
            "bits_per_report": self.bits_per_report,
            "output_alphabet_size": self.output_alphabet_size,
            "output": self.output,
            "internals": _jsonable(self.internals()),
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"mechanisms.get({self.name!r}, {args})"

    @classmethod
    def catalog_entry(cls) -> dict[str, Any]:
        """This class's entry of the catalog (``mechanisms.available()``)."""
        return {
            "name": cls.name,
            "description": cls.description,
            "parameters": {k: p.as_dict() for k, p in cls.PARAMETERS.items()},
            "output": cls.output,
            "kind": cls.kind,
            "source": cls.source,
        }


def _jsonable(v: Any) -> Any:
    """``v`` with numpy arrays and scalars turned into lists, ints and floats, dict keys into strings."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v


# --------------------------------------------------------------------------------------------------
# Small numeric helpers shared by the randomizers
# --------------------------------------------------------------------------------------------------


def rr_flip_probability(eps: float) -> float:
    """p = 1/(1 + e^{ε}) — binary randomized response with exactly ε-LDP (Theorem 2.4.1)."""
    return float(1.0 / (1.0 + math.exp(eps)))


def rr_variance(p: float) -> float:
    """p(1−p)/(1−2p)² — variance of the unbiased 2RR output (Theorem 2.4.1, eq. 2.5)."""
    return p * (1.0 - p) / (1.0 - 2.0 * p) ** 2


def weighted_counts(x: NDArray[np.integer[Any]], weights: ArrayLike, minlength: int) -> NDArray[np.float64]:
    """``np.bincount(x, weights, minlength)``: the sum of ``weights`` at each value of ``x`` (float64)."""
    # numpy's stub types bincount as intp whatever the weights; with weights it returns float64
    out: NDArray[np.float64] = np.bincount(x, weights=weights, minlength=minlength)  # type: ignore[assignment]
    return out


def as_array(x: ArrayLike, what: str) -> NDArray[Any]:
    """``np.asarray`` that turns ragged or non-numeric input into an ``InputError``."""
    if isinstance(x, np.ndarray):
        return x
    try:
        return np.asarray(x)
    except (TypeError, ValueError):
        raise InputError(f"{what}: expected a rectangular array of numbers") from None


def one_per_client(arr: NDArray[Any], what: str) -> NDArray[Any]:
    """``arr`` of one scalar per client, flat: a scalar (one client) or a flat list; a nested list
    (``[[1]]`` for a bit) is an ``InputError``, not silently flattened."""
    if arr.ndim > 1:
        raise InputError(
            f"{what}: one number per client expected (a flat list), got an array of shape {list(arr.shape)}"
        )
    return arr.reshape(-1)


def report_pair(reports: object, keys: tuple[str, str], what: str) -> tuple[NDArray[Any], NDArray[Any]]:
    """The two arrays of a report mapping ``{keys[0]: …, keys[1]: …}`` (``InputError`` naming both keys
    when ``reports`` is not such a mapping)."""
    first, second = keys
    if not isinstance(reports, dict) or first not in reports or second not in reports:
        raise InputError(f"{what}: reports must be a mapping with arrays '{first}' and '{second}'")
    return as_array(reports[first], what), as_array(reports[second], what)


def check_indices(idx: NDArray[Any], size: int, what: str) -> None:
    """``InputError`` unless every entry of the numeric, non-empty array ``idx`` is an integer in
    0..size − 1 (float entries must be integral)."""
    integral = np.issubdtype(idx.dtype, np.integer) or not np.any(idx != np.round(idx))
    if not integral or idx.min() < 0 or idx.max() >= size:
        raise InputError(f"{what}: 'index' entries must be integers in 0..{size - 1}")


def n_from(n: int | None, x: ArrayLike | None) -> int:
    """The number of clients an ``mse`` is for: the length of the inputs ``x`` when given (1 for a
    scalar), else ``n`` (an integer >= 1, else ``ParameterError``)."""
    if x is not None:
        return int(np.shape(x)[0]) if np.ndim(x) else 1
    if n is None:
        raise ParameterError("mse needs the number of clients n (or their inputs x)")
    if isinstance(n, bool) or int(n) != n or not 1 <= int(n) <= MAX_USERS:
        raise ParameterError(f"n must be an integer in 1..{MAX_USERS:.0e} (got {n!r})")
    return int(n)


def as_float_array(x: ArrayLike, what: str) -> NDArray[np.float64]:
    """``np.asarray(x, float64)``, turning ragged or non-numeric input into an ``InputError``."""
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{what}: expected a rectangular array of numbers") from None


def as_float_batch(x: ArrayLike, d: int, what: str) -> NDArray[np.float64]:
    """Inputs as a float64 array of shape (batch, d); a 1-D array is a batch of scalars when d = 1,
    a single client when its length is d > 1."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{what}: inputs must be numbers") from None
    if arr.ndim == 0:
        arr = arr.reshape(1, 1)
    elif arr.ndim == 1:
        arr = arr.reshape(-1, 1) if d == 1 else arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != d:
        raise InputError(f"{what}: inputs must have shape (batch, {d}) (got {np.shape(x)})")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what}: inputs must be finite numbers")
    return arr
