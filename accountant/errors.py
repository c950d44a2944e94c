"""Exceptions raised by the accountant.

Every error is a :class:`ValueError` subclass whose message names the parameter and the
condition it violated, so that callers (the HTTP service, the CLI) can show it verbatim.
"""

from __future__ import annotations


class AccountantError(ValueError):
    """Base class of every error the accountant raises for bad input."""


class InvalidParameter(AccountantError):
    """A parameter is outside its domain (n < 1, ε0 < 0, order ≤ 1, δ ∉ (0, 1), …)."""


class BoundNotApplicable(AccountantError):
    """A named bound was asked for where its theorem does not hold."""


class InvalidEvent(AccountantError):
    """An event description is malformed (unknown mechanism, missing or unknown field)."""


class InfeasibleTarget(AccountantError):
    """A calibration target cannot be met by any value of the unknown parameter.

    ``best_epsilon``: the smallest ε any value achieves; ``best_value``: the value of the unknown
    that achieves it (None when not known)."""

    def __init__(
        self, message: str, best_epsilon: float | None = None, best_value: float | int | None = None
    ) -> None:
        super().__init__(message)
        self.best_epsilon = best_epsilon
        self.best_value = best_value


class UnsupportedDpEvent(InvalidEvent):
    """A dp_accounting ``DpEvent`` no bound here covers (or an event no ``DpEvent`` means the same
    as): :func:`accountant.from_dp_event` / :func:`accountant.to_dp_event`; the message says why."""
