"""Python SDK of the privacy-accountant service.

    from privacy_accountant import AccountantClient, BudgetExceeded

    with AccountantClient("http://127.0.0.1:8000", api_key="…") as c:
        c.put_user("alice", budget={"epsilon": 4.0, "delta": 1e-6})
        try:
            c.charge({"mechanism": "gaussian", "noise_multiplier": 2.0}, users=["alice"])
        except BudgetExceeded as e:
            print(e.refusals)  # each refused user's remaining ε and what the event would have cost

:class:`AsyncAccountantClient` has the same methods as coroutines. Results are typed models
(:mod:`privacy_accountant.models`); errors are typed exceptions (:mod:`privacy_accountant.errors`).
Wherever a method takes events it also takes dp_accounting ``DpEvent`` objects, converted without
importing dp_accounting (:mod:`privacy_accountant.dp_events`; unsupported ones raise
:class:`UnsupportedDpEvent` saying why).
The package needs only ``httpx`` and ``pydantic`` and never imports the service's own modules, so it
imports inside any project (including one with its own ``app`` package).

Layout: ``_api.py`` describes every endpoint once (method signatures mirror the HTTP bodies);
``client.py`` and ``aio.py`` send those calls synchronously or asynchronously; ``models.py`` and
``errors.py`` are the typed results and exceptions. Helpers built on top of the client for
training pipelines (several calls per step, e.g. plan → charge a round → report) belong in their
own module here (``privacy_accountant/pipeline.py``), exported below. ``privacy_accountant.flower``
(a Flower strategy that charges each round before it runs) is imported on its own and needs Flower
only when used (the ``[flower]`` extra).

It is its own distribution, ``privacy-accountant-client`` (``client/pyproject.toml``): installing it
installs this package and httpx and pydantic, nothing of the service.
"""

from __future__ import annotations

from privacy_accountant import models
from privacy_accountant._version import __version__
from privacy_accountant.aio import AsyncAccountantClient
from privacy_accountant.client import AccountantClient
from privacy_accountant.dp_events import UnsupportedDpEvent
from privacy_accountant.errors import (
    AccountantError,
    AccountantHTTPError,
    BadRequest,
    BudgetExceeded,
    Conflict,
    Forbidden,
    InfeasibleTarget,
    NotFound,
    PayloadTooLarge,
    ServerError,
    TransportError,
    Unauthorized,
    ValidationFailed,
    error_from_response,
)
from privacy_accountant.pipeline import Pipeline, Round, RoundRefused

__all__ = [
    "__version__",
    "AccountantClient",
    "AsyncAccountantClient",
    "Pipeline",
    "Round",
    "RoundRefused",
    "models",
    "AccountantError",
    "AccountantHTTPError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "BudgetExceeded",
    "PayloadTooLarge",
    "ValidationFailed",
    "InfeasibleTarget",
    "ServerError",
    "TransportError",
    "error_from_response",
    "UnsupportedDpEvent",
]
