"""The catalog of mechanisms: every registered class by its name, and construction by name.

``names()`` lists the registered mechanisms in catalog order, ``mechanism_class(name)`` resolves one,
``get(name, **params)`` builds it from validated parameters, and ``available()`` describes them all
(parameters with types, defaults and bounds; output; local or central; the source each implements).
"""

from __future__ import annotations

from typing import Any

from ._base import Mechanism, UnknownMechanismError
from .binary import BinaryRR, BinaryVector, KaryRR
from .continuous import GaussianCentral, LaplaceCentral, LaplaceMean
from .hadamard_response import HadamardResponse
from .outlier_removal import OutlierRemovalMean
from .private_range import PrivateRange
from .user_level import UserMean, UserRange
from .vectors import L1Ball, L2Ball, LinfBox
from .winsorized import WinsorizedMean
from .winsorized_sgd import WinsorizedSGD

_REGISTRY: dict[str, type[Mechanism]] = {
    cls.name: cls
    for cls in (
        BinaryRR,
        KaryRR,
        BinaryVector,
        L1Ball,
        LinfBox,
        L2Ball,
        HadamardResponse,
        UserRange,
        UserMean,
        LaplaceMean,
        GaussianCentral,
        LaplaceCentral,
        PrivateRange,
        WinsorizedMean,
        OutlierRemovalMean,
        WinsorizedSGD,
    )
}


def names() -> list[str]:
    """Registered mechanism names, in catalog order."""
    return list(_REGISTRY)


def mechanism_class(name: str) -> type[Mechanism]:
    """The class registered as ``name``; ``UnknownMechanismError`` (a ``KeyError`` and ``ValueError``)
    listing the available names otherwise (also for a name that is not a string)."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownMechanismError(
            f"unknown mechanism {name!r}; available: {', '.join(_REGISTRY)}"
        ) from None


def get(name: str, **params: Any) -> Mechanism:
    """A mechanism calibrated from its parameters (e.g. ``get("linf", epsilon0=2.0, d=1024, m=3, s=4)``).

    Raises ``UnknownMechanismError`` (a ``KeyError`` and ``ValueError``) for an unknown name and
    ``ParameterError`` (a ``ValueError``) naming the parameter to change.
    """
    return mechanism_class(name)(**params)


def available() -> list[dict[str, Any]]:
    """The catalog: one dict per mechanism with name, description, parameters (name → type, description,
    default, required, bounds), output ("discrete"/"continuous"), kind ("local"/"central") and source."""
    return [cls.catalog_entry() for cls in _REGISTRY.values()]


__all__ = ["available", "get", "mechanism_class", "names"]
