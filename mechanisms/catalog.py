"""The catalog of mechanisms: every registered class by its name, and construction by name.

Each mechanism class registers itself with the :func:`register` decorator (its ``POSITION`` orders
the catalog). ``names()`` lists the registered mechanisms in catalog order, ``mechanism_class(name)`` resolves one,
``get(name, **params)`` builds it from validated parameters, and ``available()`` describes them all
(parameters with types, defaults and bounds; output; local or central; the source each implements).
"""

from __future__ import annotations

from typing import Any, TypeVar

from ._base import Mechanism, UnknownMechanismError

#: every registered mechanism class, by ``name``, in catalog order (``POSITION``, then registration)
_REGISTRY: dict[str, type[Mechanism]] = {}

_M = TypeVar("_M", bound=type[Mechanism])


def register(cls: _M) -> _M:
    """Class decorator: add a mechanism class to the catalog (its ``name`` must be new), as
    :func:`accountant.events.register` does for event types."""
    if not cls.name or cls.name in _REGISTRY:
        raise ValueError(f"mechanism {cls.name!r} is unnamed or registered twice")
    _REGISTRY[cls.name] = cls
    ordered = sorted(_REGISTRY.values(), key=lambda c: c.POSITION)
    _REGISTRY.clear()
    _REGISTRY.update((c.name, c) for c in ordered)
    return cls


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


__all__ = ["available", "get", "mechanism_class", "names", "register"]
