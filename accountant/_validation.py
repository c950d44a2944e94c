"""Argument checks shared by every public function (one place, one wording)."""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import InvalidParameter

MAX_N = 10**15
MAX_EPSILON0 = 50.0
MAX_ORDER = 1e6
MAX_ORDERS = 20_000
MAX_COUNT = 10**12


def check_int(name: str, value: object, lo: int, hi: int) -> int:
    if isinstance(value, bool) or value is None:
        raise InvalidParameter(f"{name} must be an integer, got {value!r}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        v = int(math.trunc(value))  # the integer it equals (numbers.Real defines __trunc__, not __int__)
    else:
        raise InvalidParameter(f"{name} must be an integer, got {value!r}")
    if v < lo:
        raise InvalidParameter(f"{name} must be >= {lo}, got {v}")
    if v > hi:
        raise InvalidParameter(f"{name} must be <= {hi:.6g}, got {v}")
    return v


def check_float(
    name: str, value: object, lo: float, hi: float, lo_open: bool = False, hi_open: bool = False
) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameter(f"{name} must be a number, got {value!r}")
    v = float(value)
    if math.isnan(v):
        raise InvalidParameter(f"{name} must be a number, got NaN")
    if v < lo or (lo_open and v == lo):
        raise InvalidParameter(f"{name} must be {'>' if lo_open else '>='} {lo:g}, got {v!r}")
    if v > hi or (hi_open and v == hi):
        raise InvalidParameter(f"{name} must be {'<' if hi_open else '<='} {hi:g}, got {v!r}")
    return v


def check_n(n: object, name: str = "n") -> int:
    return check_int(name, n, 1, MAX_N)


def check_epsilon0(epsilon0: object, name: str = "epsilon0") -> float:
    return check_float(name, epsilon0, 0.0, MAX_EPSILON0)


def check_delta(delta: object) -> float:
    return check_float("delta", delta, 0.0, 1.0, lo_open=True, hi_open=True)


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    return check_float(name, epsilon, 0.0, math.inf, hi_open=True)


def check_orders(orders: ArrayLike) -> NDArray[np.float64]:
    """Return ``orders`` as a 1-D float array; each order must be a finite real > 1."""
    try:
        arr = np.asarray(orders, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidParameter(f"orders must be a list of numbers > 1: {exc}") from None
    arr = np.atleast_1d(arr)
    if arr.ndim != 1:
        raise InvalidParameter("orders must be a one-dimensional list of numbers")
    if arr.size == 0:
        raise InvalidParameter("orders must not be empty")
    if arr.size > MAX_ORDERS:
        raise InvalidParameter(f"at most {MAX_ORDERS} orders may be asked for at once, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise InvalidParameter("orders must be finite numbers (no NaN or infinity)")
    bad = arr[arr <= 1]
    if bad.size:
        raise InvalidParameter(f"every order must be > 1 (Rényi orders α > 1), got {bad[0]:g}")
    big = arr[arr > MAX_ORDER]
    if big.size:
        raise InvalidParameter(f"every order must be <= {MAX_ORDER:g}, got {big[0]:g}")
    return arr


def check_curve(orders: ArrayLike, rdp: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    o = check_orders(orders)
    try:
        r = np.atleast_1d(np.asarray(rdp, dtype=float))
    except (TypeError, ValueError) as exc:
        raise InvalidParameter(f"rdp must be a list of numbers: {exc}") from None
    if r.shape != o.shape:
        raise InvalidParameter(
            f"orders and rdp must have the same length, got {o.size} orders and {r.size} rdp values"
        )
    if np.any(np.isnan(r)):
        raise InvalidParameter("rdp values must be numbers, got NaN")
    if np.any(r < 0):
        raise InvalidParameter("rdp values must be >= 0 (a Rényi divergence is never negative)")
    return o, r


def integer_orders(orders: NDArray[np.float64], bound: str) -> NDArray[np.int64]:
    """Orders as integers, or a BoundNotApplicable naming the first non-integer one."""
    from .errors import BoundNotApplicable

    frac = orders != np.floor(orders)
    if np.any(frac):
        raise BoundNotApplicable(
            f"bound '{bound}' holds only at integer orders α >= 2, got α = {orders[frac][0]:g}; "
            "ask for integer orders or use bound 'upper' (which interpolates to real orders)"
        )
    return orders.astype(np.int64)
