"""The checks every fit makes of its input: positive finite numbers of one dimension, equal
lengths, enough points; errors that name the fix."""

from __future__ import annotations

from typing import Any

import numpy as np

from scalelab.errors import InputError


def as_positive(values: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputError(f"{name} must be numbers ({err}); fix the column values") from None
    if arr.ndim != 1:
        raise InputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        bad = int(np.sum(~np.isfinite(arr) | (arr <= 0)))
        raise InputError(
            f"{name} has {bad} non-positive or non-finite value(s); a log-log fit needs "
            "positive finite numbers: drop or fix those rows"
        )
    return arr


def check_xy(x: Any, y: Any, min_points: int, names: tuple[str, str] = ("x", "y")):
    xa, ya = as_positive(x, names[0]), as_positive(y, names[1])
    if xa.shape != ya.shape:
        raise InputError(f"{names[0]} and {names[1]} differ in length ({xa.size} vs {ya.size})")
    if xa.size < min_points:
        raise InputError(
            f"{xa.size} point(s) given; this fit needs at least {min_points}: add runs"
        )
    if np.unique(xa).size < 2:
        raise InputError(f"all {names[0]} values are equal; a fit needs at least two sizes")
    return xa, ya


def check_nld(N: Any, D: Any, L: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_arr = as_positive(N, "N (parameters)")
    d_arr = as_positive(D, "D (tokens)")
    l_arr = as_positive(L, "L (loss)")
    if not n_arr.size == d_arr.size == l_arr.size:
        raise InputError(f"N, D and L differ in length ({n_arr.size}, {d_arr.size}, {l_arr.size})")
    return n_arr, d_arr, l_arr
