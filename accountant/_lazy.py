"""A module imported on first use (``stats = lazy("scipy.stats")``): scipy.stats and
scipy.optimize cost ~50 MB of memory and ~1 s at import, and only the lower bounds and the
calibration searches need them."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray


class _Lazy:
    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


def lazy(name: str) -> Any:
    """The module ``name``, imported when an attribute of it is first read."""
    return _Lazy(name)


_GAMMALN: list[Any] = []  # the scipy ufunc, once imported


def gammaln(x: ArrayLike) -> NDArray[np.float64]:
    """``scipy.special.gammaln`` (log |Γ(x)|), the very function, imported on its first call:
    scipy.special holds ~26 MB that a process serving only cached answers and the ledger never
    needs."""
    if not _GAMMALN:
        from scipy.special import gammaln as f

        _GAMMALN.append(f)
    out: NDArray[np.float64] = _GAMMALN[0](x)
    return out
