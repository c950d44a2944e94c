"""The client SDK now lives in the top-level package :mod:`privacy_accountant` (it imports inside
any project, including one with its own ``app`` package). This module is an alias kept for code
written against ``app.client``: every name it exported is still here."""

from __future__ import annotations

from privacy_accountant import *  # noqa: F403
from privacy_accountant import __all__ as _sdk_all
from privacy_accountant._api import event_json as _event
from privacy_accountant._api import seg as _seg
from privacy_accountant.errors import error_from_response
from privacy_accountant.models import (
    CalibrateResponse,
    DeltaResponse,
    EpsilonResponse,
    HealthResponse,
    RdpResponse,
)

__all__ = [
    *_sdk_all,
    "CalibrateResponse",
    "DeltaResponse",
    "EpsilonResponse",
    "HealthResponse",
    "RdpResponse",
    "error_from_response",
    "_event",
    "_seg",
]
