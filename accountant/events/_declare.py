"""How an event type is declared: its fields (with limits), its meaning, and its curve.

As in Google's dp_accounting, an event only *describes* a release; the accountant interprets it.
Each event type is ONE frozen dataclass, registered with :func:`register`, that carries

* its fields, each declared with :func:`spec` (kind, limits, description, and — with a :class:`Calibrate`
  marker — whether calibration may solve for it and in which direction) — the pydantic models, the OpenAPI text, the CLI flags and the parser derive
  from these declarations;
* its meaning: ``RELATION`` (the neighbouring relation), ``SAMPLING`` (the sampling assumption),
  ``SOURCE`` (the theorem behind its curve);
* how its curve is computed: :meth:`Event.unit_curve`, :meth:`Event.curve_sources` and
  :meth:`Event.pure_epsilon`.

**An event's meaning never changes; a new meaning is a new event type.** A stored charge or a
cached curve refers to an event by its JSON form, so changing what an existing type means would
silently change the accounting of past releases. Tighter *bounds* for the same meaning are fine
(the curve stays an upper bound of the same divergence); new semantics get a new ``mechanism``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import numbers
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_float, check_int
from ..bounds import tight_bounds
from ..errors import InvalidEvent, InvalidParameter
from ..store import MiB, memoize

if TYPE_CHECKING:
    from ..dominating import HockeyStickPair

#: most users (n, k) an event may describe: 10¹² is already ~100× any real population
MAX_USERS = 10**12
#: most repetitions of one event
MAX_COUNT = 10**12
#: largest local ε0 / pure ε an event may carry (e^{50} is still comfortably finite)
MAX_EPSILON0 = 50.0
#: largest Rényi order anywhere
MAX_ORDER = 1e6
#: most points of an ``rdp_curve`` event, and most inner events of a sampled event
MAX_ITEMS = 1000

#: one costly curve an event needs, named by its bound and parameters (``Event.heavy_parts``)
HeavyPart = tuple[str | int | float, ...]


class NeighboringRelation(enum.Enum):
    """The neighbouring relation an event's guarantee is stated under (as dp_accounting's
    ``NeighboringRelation``); the value is a short code, :attr:`description` the meaning."""

    REPLACE_ONE = "replace_one"

    @property
    def description(self) -> str:
        """What two neighbouring datasets are under this relation, in words."""
        return _RELATION_TEXT[self]


_RELATION_TEXT = {
    NeighboringRelation.REPLACE_ONE: (
        "replace-one: neighbouring datasets differ in one user's whole data (the user is replaced by "
        "another); user-level, so a user's every report or record is covered"
    ),
}

KINDS = ("integer", "number", "choice", "numbers", "events")
#: the kinds whose values (or items) lie between the declared ``lo`` and ``hi``
NUMERIC_KINDS = ("integer", "number", "numbers")


@dataclass(frozen=True)
class Calibrate:
    """Declares that calibration may solve for a field (``spec(..., calibrate=Calibrate(...))``)
    and how the event's ε moves with it — the one place the search's direction comes from.

    ``increasing``: ε grows with the field, so the answer is its LARGEST value meeting the target
    (ε0, ε, rounds); False: ε falls as it grows, so the answer is its SMALLEST such value (noise,
    users). ``monotone``: False where ε need not be monotone in the field (the search then comes
    down from the infeasible end, :mod:`accountant.calibration`). ``answer``: what the answer is,
    in words; ``feasible_end``: what the feasible end of the field's domain means (said when even
    it misses the target). ``coord``/``slope``/``start``: the search coordinate (``log`` or
    ``logexpm1``), the assumed |d log ε / d coord| and the first point
    (:class:`accountant.calibration.Domain`); ``floor``: the smallest value searched, above the
    declared lower end (a field whose lower end is 0 or open)."""

    increasing: bool
    answer: str
    feasible_end: str
    monotone: bool = True
    coord: str = "log"
    slope: float = 1.0
    start: float | None = None
    floor: float | None = None

    @property
    def direction(self) -> str:
        """``largest`` (ε grows with the field) or ``smallest`` (ε falls)."""
        return "largest" if self.increasing else "smallest"


#: a pure-DP level: ε grows with it (searched like ε0: ε ≈ (e^x − 1)² at small x)
PRIVACY_LEVEL = Calibrate(
    increasing=True,
    answer="the largest value",
    feasible_end="a release carrying essentially no information",
    coord="logexpm1",
    slope=2.0,
    start=1.0,
    floor=1e-10,
)
#: a noise scale relative to the sensitivity: ε falls as it grows
NOISE_SCALE = Calibrate(
    increasing=False, answer="the smallest noise", feasible_end="the most noise supported", start=1.0
)


@dataclass(frozen=True)
class Spec:
    """Declaration of one event field.

    ``kind``: ``integer``, ``number``, ``choice`` (one of ``choices``), ``numbers`` (a list whose
    items obey ``lo``/``hi``) or ``events`` (a list of inner events). ``solvable``: calibration
    may solve for this field. ``population``: inside a sampled event this field is implied by
    the sample size (it may be omitted there, and must equal it when given). ``cli``: the flag
    name when ``--<field>`` is taken by a command option. ``hint``: appended to the error for a
    value outside ``choices``. ``omit_default``: the JSON form leaves the field out at its
    default.
    """

    kind: str
    description: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] = ()
    max_items: int = MAX_ITEMS
    calibrate: Calibrate | None = None
    population: bool = False
    cli: str | None = None
    hint: str = ""
    omit_default: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown field kind {self.kind!r}")
        if self.kind in NUMERIC_KINDS:
            self._limits()
        if self.calibrate is not None and self.kind not in ("integer", "number"):
            raise ValueError("only an integer or number field can be calibrated")

    @property
    def solvable(self) -> bool:
        """Calibration may solve for this field (it carries a :class:`Calibrate` marker)."""
        return self.calibrate is not None

    def check(self, name: str, value: Any) -> Any:
        """The validated (coerced) value, or :class:`InvalidEvent` saying what to change."""
        try:
            return self._check(name, value)
        except InvalidEvent:
            raise
        except ValueError as exc:  # InvalidParameter from the shared checks
            raise InvalidEvent(str(exc)) from None

    def _limits(self) -> tuple[float, float]:
        """(lo, hi) of a numeric field (``__post_init__`` makes sure both are declared)."""
        if self.lo is None or self.hi is None:
            raise ValueError(f"a {self.kind!r} field must declare lo and hi")
        return self.lo, self.hi

    def _check(self, name: str, value: Any) -> Any:
        if self.kind == "integer":
            lo, hi = self._limits()
            return check_int(name, value, int(lo), int(hi))
        if self.kind == "number":
            return check_float(name, value, *self._limits(), self.lo_open, self.hi_open)
        if self.kind == "choice":
            if value not in self.choices:
                if self.hint:
                    raise InvalidEvent(
                        f"{name} {value!r} is not supported (use one of {list(self.choices)}): {self.hint}"
                    )
                raise InvalidEvent(f"{name} must be one of {list(self.choices)}, got {value!r}")
            return value
        if self.kind == "numbers":
            return self._check_numbers(name, value)
        return value  # events: parsed by the enclosing type (see _parse_inner)

    def _check_numbers(self, name: str, value: Any) -> tuple[float, ...]:
        if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__len__"):
            raise InvalidEvent(f"{name} must be a list of numbers, got {value!r}")
        if not 1 <= len(value) <= self.max_items:
            raise InvalidEvent(f"{name} must hold 1 to {self.max_items} numbers, got {len(value)}")
        lo, hi = self._limits()
        return tuple(
            check_float(f"{name}[{i}]", v, lo, hi, self.lo_open, self.hi_open) for i, v in enumerate(value)
        )


def spec(kind: str, description: str, default: Any = MISSING, **kw: Any) -> Any:
    """A dataclass field declared by a :class:`Spec` (use as ``n: int = spec("integer", ...)``)."""
    return dataclasses.field(default=default, metadata={"spec": Spec(kind, description, **kw)})


def count_field() -> Any:
    return spec(
        "integer",
        "how many times the release is repeated (rounds); RDP adds up over them",
        default=1,
        lo=1,
        hi=MAX_COUNT,
        calibrate=Calibrate(increasing=True, answer="the most repetitions", feasible_end="a single round"),
    )


def epsilon0_field(description: str = "local privacy parameter ε0 of each report (pure ε0-LDP)") -> Any:
    return spec(
        "number",
        description,
        lo=0.0,
        hi=MAX_EPSILON0,
        calibrate=dataclasses.replace(
            PRIVACY_LEVEL, answer="the largest ε0", feasible_end="reports carrying essentially no information"
        ),
    )


def zeta_field() -> Any:
    """The additive δ of an event whose guarantee holds outside a failure event (see :class:`Event`)."""
    return spec(
        "number",
        "failure probability ζ per repetition: the curve holds outside a failure event of probability ζ "
        "(adds count·ζ to δ; 0 for an exact curve)",
        default=0.0,
        lo=0.0,
        hi=1.0,
        hi_open=True,
        omit_default=True,
    )


#: the population n: ε falls as it grows (the fewest users meeting the target)
POPULATION = Calibrate(increasing=False, answer="the fewest users", feasible_end="the largest n supported")
#: the sample size k: ε mostly grows with it, not everywhere (:mod:`accountant.calibration`)
SAMPLE_SIZE = Calibrate(
    increasing=True,
    monotone=False,
    answer="the largest sample per round",
    feasible_end="one sampled user per round",
)


def users_field(description: str, **kw: Any) -> Any:
    return spec("integer", description, lo=1, hi=MAX_USERS, **kw)


def output_field() -> Any:
    return spec(
        "choice",
        "output range of the local randomizer: 'discrete' (the thesis's ch. 5 bounds apply) "
        "or 'continuous' (only the pure-DP cap and the clone bound apply)",
        default="discrete",
        choices=("discrete", "continuous"),
        omit_default=True,
    )


def sampling_field() -> Any:
    return spec(
        "choice",
        "how the k users are sampled: only uniform sampling of k of n WITHOUT replacement "
        "is covered by the theorems",
        default="without_replacement",
        choices=("without_replacement",),
        omit_default=True,
        hint="the subsampled bounds hold only for sampling k of n users uniformly without replacement "
        "('without_replacement'); Poisson sampling and client self-sampling (a random number of "
        "reports) are not covered by these theorems",
    )


_E = TypeVar("_E", bound="Event")


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every event type: immutable, hashable, JSON round trip (``to_dict`` /
    :func:`event_from_dict`). Subclasses (``@dataclass(frozen=True, kw_only=True)``) declare
    fields with :func:`spec` and the class attributes below, and implement the curve methods.
    Every event has ``count``, the number of repetitions."""

    mechanism: ClassVar[str] = ""
    RELATION: ClassVar[NeighboringRelation] = NeighboringRelation.REPLACE_ONE
    #: a qualification of :attr:`RELATION` (e.g. who vouches that it holds), appended to its text
    RELATION_NOTE: ClassVar[str] = ""
    SAMPLING: ClassVar[str] = ""
    SOURCE: ClassVar[str] = ""
    #: named bounds this type accepts (``upper`` = the tightest valid curve)
    BOUNDS: ClassVar[tuple[str, ...]] = ("upper",)
    #: a sampled event (its curve includes amplification by sampling); cannot be an inner event
    SAMPLED: ClassVar[bool] = False
    EXAMPLE: ClassVar[dict[str, Any]] = {}
    #: position in listings (OpenAPI, CLI help); ties keep registration order
    POSITION: ClassVar[int] = 100
    #: an (ε, δ) release with no RDP curve: composed apart (:mod:`accountant.combination`)
    APPROX: ClassVar[bool] = False
    #: why the PLD route has no dominating pair for this type (when :meth:`dominating_pair` is None)
    NO_PAIR: ClassVar[str] = "no dominating pair is declared for this event type"

    count: int = count_field()

    def __post_init__(self) -> None:
        for f in fields(self):
            s = f.metadata.get("spec")
            if s is not None and s.kind != "events":
                object.__setattr__(self, f.name, s.check(f.name, getattr(self, f.name)))
        self.validate()

    # ---------------------------------------------------------------- to be provided by each type
    def validate(self) -> None:
        """Checks across fields (e.g. k ≤ n); raise :class:`InvalidEvent`."""

    def unit_curve(self, orders: NDArray[np.float64], bound: str = "upper") -> NDArray[np.float64]:
        """RDP of ONE repetition (count ignored) at ``orders`` (validated, > 1)."""
        raise NotImplementedError

    def curve_sources(self, orders: NDArray[np.float64], bound: str = "upper") -> tuple[list[str], list[str]]:
        """Per order, the name of the bound that gave the value; and notes for the user."""
        return [bound if bound != "upper" else self.mechanism] * int(np.size(orders)), []

    def pure_epsilon(self) -> float:
        """ε such that ONE repetition is ε-DP under :attr:`RELATION` (``inf`` when not pure)."""
        return math.inf

    #: :meth:`pure_epsilon` returns a declared field as it is (exact), not a computed value
    PURE_EXACT: ClassVar[bool] = False

    def pure_epsilon_upper(self) -> Fraction:
        """An exact rational ≥ the true pure ε of ONE repetition, for exact sums (the pure route of
        :mod:`accountant.routes`): :meth:`pure_epsilon` itself when it is a declared field
        (:attr:`PURE_EXACT`), else raised by a relative 2⁻⁴⁰ (far above the few ulps of the logs and
        exponentials it was computed with). Requires a finite :meth:`pure_epsilon`."""
        f = Fraction(self.pure_epsilon())
        return f if self.PURE_EXACT else f * (1 + Fraction(1, 2**40))

    def dominating_pair(self) -> HockeyStickPair | None:
        """A pair dominating ONE repetition in both neighbour orders (:mod:`accountant.dominating`),
        for the PLD route; None when the type has none (:attr:`NO_PAIR` says why)."""
        return None

    def approx_release(self) -> tuple[float, float]:
        """(ε, δ) of ONE repetition of an (ε, δ) release without a curve (types with ``APPROX``)."""
        raise NotImplementedError

    def heavy_parts(self) -> frozenset[HeavyPart]:
        """Distinct costly curves this event needs (for the service's work estimate)."""
        return frozenset()

    @property
    def zeta(self) -> float:
        """Failure probability ζ of ONE repetition (0 unless the type declares a ``zeta`` field).

        Meaning (the accountant's definition of "a curve ε(·) outside a failure event of
        probability ζ"): for every ordered pair of neighbouring datasets (x, x') — and, inside an
        adaptive interaction, every history of earlier outputs — there is a law P̂ with
        d_TV(M(x), P̂) ≤ ζ and D_α(P̂ ‖ M(x')) ≤ ε(α) at every α > 1. ζ = 0 is plain RDP.
        :mod:`accountant.combination` proves how such events compose and convert."""
        return 0.0  # types that declare a ``zeta`` field shadow this property with it

    def additive_delta(self) -> float:
        """count·ζ, rounded up: the failure probability of all repetitions (union bound)."""
        z = self.zeta
        if z == 0.0:
            return 0.0
        return float(np.nextafter(self.count * z, np.inf))

    # ---------------------------------------------------------------------------- generic methods
    @classmethod
    def relation_text(cls) -> str:
        """The neighbouring relation in words: :attr:`RELATION`'s description and :attr:`RELATION_NOTE`."""
        note = f" ({cls.RELATION_NOTE})" if cls.RELATION_NOTE else ""
        return cls.RELATION.description + note

    @classmethod
    def specs(cls) -> dict[str, Spec]:
        got = {f.name: f.metadata["spec"] for f in fields(cls) if "spec" in f.metadata}
        return {k: got[k] for k in sorted(got, key=lambda k: k == "count")}  # count last

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return {f.name: f.default for f in fields(cls) if f.default is not MISSING}

    def curve(self, orders: ArrayLike, bound: str = "upper") -> NDArray[np.float64]:
        """RDP at ``orders`` of all ``count`` repetitions (RDP adds up: thesis Lemma 2.1.4)."""
        key = tuple(np.asarray(orders, dtype=np.float64).tolist())
        unit = cached_unit_curve(self.unit, key, bound, tight_bounds())
        with np.errstate(invalid="ignore"):
            return np.where(unit == 0, 0.0, unit * self.count)

    @property
    def unit(self: _E) -> _E:
        """This event with count = 1."""
        return self if self.count == 1 else self.with_count(1)

    def replace(self, **changes: Any) -> Event:
        """This event with some fields changed, rebuilt from its JSON form (so fields implied by
        others follow them: a sampled event's k moves its inner events' n)."""
        return event_from_dict({**self.to_dict(), **changes})

    def with_count(self: _E, count: int) -> _E:
        return dataclasses.replace(self, count=count)

    def to_dict(self) -> dict[str, Any]:
        """The api.md JSON form (fields marked ``omit_default`` only when they differ from it)."""
        d: dict[str, Any] = {"mechanism": self.mechanism}
        for f in sorted(fields(self), key=lambda f: f.name == "count"):
            s, v = f.metadata.get("spec"), getattr(self, f.name)
            if s is not None and s.omit_default and v == f.default:
                continue
            if s is not None and s.kind == "events":
                d[f.name] = [e.inner_dict() for e in v]
            else:
                d[f.name] = list(v) if isinstance(v, tuple) else v
        return d

    def inner_dict(self) -> dict[str, Any]:
        """The JSON form inside a sampled event: population fields are implied there."""
        d = self.to_dict()
        for name, s in self.specs().items():
            if s.population:
                d.pop(name, None)
        return d


@memoize("unit_curves", max_entries=4096, max_bytes=64 * MiB)
def cached_unit_curve(
    event: Event, orders_key: tuple[float, ...], bound: str, tight: bool = True
) -> NDArray[np.float64]:
    """Curve of ONE repetition (``event`` has count 1) at ``orders_key``, cached (keyed also by
    :func:`accountant.bounds.tight_bounds`, the setting it was computed under); read-only."""
    del tight  # part of the cache key only: the bounds read the setting themselves
    if bound not in event.BOUNDS:
        raise InvalidParameter(
            f"unknown bound {bound!r} for {event.mechanism!r} events; choose one of {list(event.BOUNDS)}"
        )
    out = np.asarray(event.unit_curve(np.asarray(orders_key, dtype=np.float64), bound), dtype=np.float64)
    out.setflags(write=False)
    return out


#: every registered event type, by ``mechanism``
EVENT_TYPES: dict[str, type[Event]] = {}


def register(cls: type[Event]) -> type[Event]:
    """Class decorator: add an event type to :data:`EVENT_TYPES` (its ``mechanism`` must be new)."""
    if not cls.mechanism or cls.mechanism in EVENT_TYPES:
        raise ValueError(f"event type {cls.mechanism!r} is empty or registered twice")
    EVENT_TYPES[cls.mechanism] = cls
    ordered = sorted(EVENT_TYPES.values(), key=lambda c: c.POSITION)
    EVENT_TYPES.clear()
    EVENT_TYPES.update((c.mechanism, c) for c in ordered)
    return cls


def inner_types() -> dict[str, type[Event]]:
    """Event types that may appear inside a sampled event (every non-sampled type)."""
    return {k: v for k, v in EVENT_TYPES.items() if not v.SAMPLED}


def _check_mapping(d: Any) -> type[Event]:
    if not isinstance(d, Mapping):
        raise InvalidEvent(f"an event must be an object with a 'mechanism' field, got {type(d).__name__}")
    mech = d.get("mechanism")
    if mech is None:
        raise InvalidEvent(f"event is missing the field 'mechanism' (one of {sorted(EVENT_TYPES)})")
    cls = EVENT_TYPES.get(mech) if isinstance(mech, str) else None
    if cls is None:
        raise InvalidEvent(f"unknown mechanism {mech!r}; known mechanisms: {sorted(EVENT_TYPES)}")
    return cls


def event_from_dict(d: Mapping[str, Any], population: int | None = None) -> Event:
    """Build an event from its api.md dict form. Unknown mechanisms, missing and unknown fields
    are errors (never silently defaulted). ``population``: inside a sampled event, the value of
    fields declared ``population`` (filled in when omitted, checked when given)."""
    cls = _check_mapping(d)
    specs = cls.specs()
    unknown = sorted(set(d) - set(specs) - {"mechanism"})
    if unknown:
        raise InvalidEvent(
            f"unknown field(s) {unknown} for mechanism {cls.mechanism!r}; allowed: {sorted(specs)}"
        )
    kwargs = {k: v for k, v in d.items() if k != "mechanism"}
    if population is not None:
        _fill_population(cls, specs, kwargs, population)
    _check_complete(cls, specs, kwargs)
    return cls(**kwargs)


def _fill_population(
    cls: type[Event], specs: dict[str, Spec], kwargs: dict[str, Any], population: int
) -> None:
    """Set the ``population`` fields of ``kwargs`` to the sample size (a value given must equal it)."""
    for name, s in specs.items():
        if not s.population:
            continue
        if name in kwargs and not _same_int(kwargs[name], population):
            raise InvalidEvent(
                f"inside a sampled event, {cls.mechanism!r} describes one round on the k = {population} sampled "
                f"users: its {name!r} must be {population} (or left out), got {kwargs[name]!r}"
            )
        kwargs[name] = population


def _check_complete(cls: type[Event], specs: dict[str, Spec], kwargs: dict[str, Any]) -> None:
    """Every field without a default is given, and no float field is NaN or infinite."""
    defaults = cls.defaults()
    missing = [name for name in specs if name not in kwargs and name not in defaults]
    if missing:
        raise InvalidEvent(f"event {cls.mechanism!r} is missing required field(s) {missing}")
    for k, v in kwargs.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise InvalidEvent(f"field {k!r} of event {cls.mechanism!r} must be finite, got {v!r}")


def _same_int(v: Any, n: int) -> bool:
    return not isinstance(v, bool) and isinstance(v, numbers.Real) and float(v) == float(n)


def parse_inner(name: str, value: Any, population: int, max_items: int) -> tuple[Event, ...]:
    """The inner events of a sampled event: a non-empty list of non-sampled events, each
    describing one round on the ``population`` sampled users."""
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise InvalidEvent(f"{name} must be a list of events, got {value!r}")
    items = list(value)
    if not 1 <= len(items) <= max_items:
        raise InvalidEvent(f"{name} must hold 1 to {max_items} events, got {len(items)}")
    out: list[Event] = []
    for i, item in enumerate(items):
        ev = item if isinstance(item, Event) else None
        if ev is None:
            cls = _check_mapping(item)
            if cls.SAMPLED:
                raise InvalidEvent(_nested_sampling_msg(name, i, cls.mechanism))
            try:
                ev = event_from_dict(item, population=population)
            except InvalidEvent as exc:
                raise InvalidEvent(f"{name}[{i}]: {exc}") from None
        elif ev.SAMPLED:
            raise InvalidEvent(_nested_sampling_msg(name, i, ev.mechanism))
        else:
            ev = event_from_dict(ev.to_dict(), population=population)
        if ev.APPROX or ev.zeta > 0:
            raise InvalidEvent(
                f"{name}[{i}] ({ev.mechanism!r}) carries an additive δ ({'an (ε, δ) release' if ev.APPROX else 'zeta > 0'}): "
                "amplification by sampling is proved here for RDP curves only; charge it as its own event, "
                "outside the sampled one"
            )
        out.append(ev)
    return tuple(out)


def _nested_sampling_msg(name: str, i: int, mech: str) -> str:
    return (
        f"{name}[{i}] is a sampled event ({mech!r}); inner events describe one round on the users already "
        f"sampled, so they cannot sample again: give the unsampled event (e.g. 'shuffle')"
    )


#: an event object or its api.md dict form
EventLike = Union[Event, Mapping[str, Any]]


def as_event(e: EventLike | Any) -> Event:
    """Accept an event object or its api.md dict form (anything else: :class:`InvalidEvent`)."""
    if isinstance(e, Event):
        return e
    return event_from_dict(e)
