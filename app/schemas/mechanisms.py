"""Request and response models of the mechanism endpoints (``/v1/mechanisms``…), and their size
bounds."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from typing_extensions import Self

from mechanisms.calibration import AccountingField, Knob

#: request bounds (the body is also capped by the service, 1 MiB by default)
MAX_CLIENTS = 20_000
MAX_INPUT_NUMBERS = 200_000
MAX_OUTPUT_NUMBERS = 400_000
MAX_MESSAGES = 1024
MAX_DIMENSION = 1 << 16
MAX_SYMBOLS = 1 << 16
MAX_EVENTS_N = 10**12
#: what ``calibrate.solve_for`` may name (which of them a mechanism accepts: ``mechanisms.solve_for_choices``)
SolveFor = Literal[Knob, AccountingField]

SIMULATION_NOTE = (
    "Simulation only: real clients randomize on their own device with the SDK, never on the server. "
    "A raw value sent here has left the device and is not protected by the mechanism."
)

PARAMS_FIELD: Any = Field(
    default_factory=dict,
    description="The mechanism's parameters by name (see `GET /v1/mechanisms` for each mechanism's list, "
    'types, defaults and bounds), e.g. `{"epsilon0": 1.0, "k": 8}`.',
)


class CatalogParameter(BaseModel):
    type: str = Field(description="number, integer, string or interval ([low, high])")
    description: str
    required: bool
    default: Any = Field(None, description="default value (null when required)")
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    choices: list[Any] | None = None
    nullable: bool | None = None


class CatalogEntry(BaseModel):
    name: str
    description: str
    parameters: dict[str, CatalogParameter]
    output: str = Field(description="`discrete` (chapter-5 shuffle bounds apply) or `continuous`")
    kind: str = Field(description="`local` (client-side randomizer) or `central` (trusted server)")
    source: str = Field(description="the theorem / algorithm the mechanism implements")


class CatalogResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "mechanisms": [
                        {
                            "name": "binary_rr",
                            "description": "Binary randomized response on one bit per client; …",
                            "parameters": {
                                "epsilon0": {
                                    "type": "number",
                                    "description": "local privacy level ε0 …",
                                    "required": True,
                                    "default": None,
                                    "exclusive_minimum": 0.0,
                                    "maximum": 50.0,
                                }
                            },
                            "output": "discrete",
                            "kind": "local",
                            "source": "Girgis thesis, Algorithm 2.2.1 and Theorem 2.4.1",
                        }
                    ],
                    "note": SIMULATION_NOTE,
                }
            ]
        }
    )
    mechanisms: list[CatalogEntry]
    note: str


class Accounting(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int | None = Field(
        None,
        description="users taking part (the shuffle population); required, except with `calibrate.solve_for` "
        "`n` (it is what is solved for)",
        ge=1,
        le=MAX_EVENTS_N,
    )
    k: int | None = Field(
        None,
        description="users sampled per round (subsampled shuffle); omit for all n",
        ge=1,
        le=MAX_EVENTS_N,
    )
    count: int = Field(
        1,
        description="rounds (each round is one use of the mechanism); leave it out with `calibrate.solve_for` "
        "`count`",
        ge=1,
        le=10**12,
    )
    delta: float | None = Field(
        None, gt=0, lt=1, description="when given, the composed ε at this δ is computed"
    )


class CalibrationTarget(BaseModel):
    model_config = ConfigDict(extra="forbid")
    epsilon: float = Field(gt=0, le=1e4, description="target ε of the composed accounting")
    delta: float = Field(gt=0, lt=1, description="target δ")
    solve_for: SolveFor | None = Field(
        None,
        description="what to solve for: the mechanism's knob (the default: `epsilon0` for local mechanisms, "
        "`noise_multiplier` of `gaussian`, `scale` of `laplace`, `epsilon` or `sigma` of a central user-level "
        "mechanism), or — the mechanism fully given in `params`, knob included — a quantity of `accounting`, "
        "left out of it: `count` (the most rounds), `n` (the fewest users, `k` fixed) or `k` (the largest "
        "sample per round, `n` fixed); central mechanisms take `count` only. Verified: the answer meets the "
        "target and one step further (count + 1, n − 1, k + 1) does not, unless `at_limit`.",
    )


class ParametersRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "params": {"epsilon0": 2.0, "d": 1024, "m": 3, "s": 8},
                    "accounting": {"n": 100000, "k": 5000, "count": 100, "delta": 1e-6},
                },
            ]
        },
    )
    params: dict[str, Any] = PARAMS_FIELD
    accounting: Accounting | None = Field(
        None, description="population and rounds: adds `events`, the MSE at n, and ε at δ"
    )
    calibrate: CalibrationTarget | None = Field(
        None,
        description="solve for ε0 (local mechanisms: the largest ε0 whose composed events meet the target; "
        "leave `epsilon0` out of `params`) or for the noise (`gaussian`: smallest "
        "`noise_multiplier`; `laplace`: smallest `scale`). Needs `accounting` (n for local). With "
        "`solve_for` `count`, `n` or `k`: that quantity of the accounting instead (see `solve_for`).",
    )

    @model_validator(mode="after")
    def _accounting_leaves_out_the_unknown(self) -> Self:
        """``accounting`` gives n unless n is solved for, and leaves out what is solved for."""
        unknown = None if self.calibrate is None else self.calibrate.solve_for
        acc = self.accounting
        if acc is None:
            return self
        if acc.n is None and unknown != "n":
            raise ValueError(
                "accounting.n is required (leave it out only to solve for it, with calibrate.solve_for = 'n')"
            )
        given = {"n": acc.n is not None, "k": acc.k is not None, "count": "count" in acc.model_fields_set}
        if unknown in given and given[unknown]:
            raise ValueError(
                f"leave accounting.{unknown} out: calibrate.solve_for = '{unknown}' is what is solved for"
            )
        return self


class ParametersResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "kary_rr",
                    "params": {"epsilon0": 1.0, "k": 8},
                    "epsilon0": 1.0,
                    "message_epsilons": [1.0],
                    "bits_per_report": 3,
                    "output_alphabet_size": 8,
                    "output_alphabet_log2": 3.0,
                    "output": "discrete",
                    "kind": "local",
                    "internals": {"keep_probability": 0.28, "each_other_symbol_probability": 0.103},
                    "mse_per_client": 8.2,
                    "mse": 0.00082,
                    "events": [{"mechanism": "shuffle", "n": 10000, "epsilon0": 1.0, "count": 100}],
                    "epsilon": 1.9,
                    "delta": 1e-6,
                    "order": 14.0,
                }
            ]
        }
    )
    name: str
    params: dict[str, Any] = Field(description="the validated parameters, defaults filled in")
    epsilon0: float | None = Field(description="ε0 of one whole report (null for the Gaussian)")
    message_epsilons: list[float] = Field(description="ε0 of each separately shuffled message of one report")
    bits_per_report: int | None
    output_alphabet_size: int | None = Field(
        description="letters of the report alphabet (null when continuous or beyond 2⁵³ — see the log2)"
    )
    output_alphabet_log2: float | None
    output: str
    kind: str
    internals: dict[str, Any] = Field(
        description="calibrated internals: flip probabilities, budget split, radii …"
    )
    mse_per_client: float = Field(
        description="closed-form supremum MSE with one client (the MSE at n is this / n for local mechanisms)"
    )
    mse: float | None = Field(None, description="closed-form supremum MSE with `accounting.n` clients")
    events: list[dict[str, Any]] | None = Field(
        None,
        description="accountant events of `count` rounds over n "
        "users (api.md form), one per shuffled message",
    )
    epsilon: float | None = Field(None, description="composed ε at `accounting.delta` (or the calibration δ)")
    delta: float | None = None
    order: float | None = None
    solve_for: str | None = Field(
        None, description="with `calibrate`: what was solved for (the knob by default)"
    )
    value: int | float | None = Field(
        None, description="with `calibrate`: the answer (the knob's value, or the count, n or k found)"
    )
    at_limit: bool | None = Field(
        None,
        description="with `calibrate.solve_for` `count`/`n`/`k`: the answer is the end of its domain (count = "
        "10¹², k = n, n = k or 1), so one step further was not tried",
    )


class RandomizeRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"params": {"epsilon0": 1.0, "k": 4}, "inputs": [0, 1, 3, 3, 2], "seed": 7},
                {
                    "params": {"epsilon0": 2.0, "d": 4, "m": 2, "s": 2},
                    "inputs": [[0.1, -0.5, 0.9, 0.0], [1, 1, -1, 0.3]],
                    "seed": 1,
                },
            ]
        },
    )
    params: dict[str, Any] = PARAMS_FIELD
    inputs: list[Any] = Field(
        min_length=1,
        max_length=MAX_CLIENTS,
        description=f"One input per client (at most {MAX_CLIENTS:,} clients and {MAX_INPUT_NUMBERS:,} numbers): "
        "a bit, a symbol, a number, a vector, or — for `user_range`/`user_mean` — a user's whole "
        "dataset (list of samples).",
    )
    seed: int | None = Field(
        None,
        ge=0,
        lt=2**63,
        strict=True,
        description="seed of the numpy Generator (omit for a fresh one; the seed used is returned)",
    )


class RandomizeResponse(BaseModel):
    name: str
    seed: int
    clients: int
    reports: Any = Field(description="the reports, in the form `estimate` takes (arrays as lists)")
    note: str


class EstimateRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"params": {"epsilon0": 1.0, "k": 4}, "reports": [0, 1, 3, 3, 2, 3, 3, 1]},
                {"params": {"epsilon0": 1.0, "d": 8}, "reports": {"index": [0, 5, 2], "sign": [1, -1, 1]}},
            ]
        },
    )
    params: dict[str, Any] = PARAMS_FIELD
    reports: Any = Field(description="the shuffled reports: what `randomize` returned (any order)")


class EstimateResponse(BaseModel):
    name: str
    reports: int = Field(description="number of client reports used")
    estimate: Any = Field(description="the unbiased aggregate: a mean (number or vector) or the frequencies")
    mse: float | None = Field(None, description="closed-form supremum MSE at this number of reports")
    interval: list[float] | None = Field(None, description="`user_range`: the broadcast [a−3τ, a+3τ]")
