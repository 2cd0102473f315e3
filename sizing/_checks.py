"""Argument checks shared by the sizing models (raise ``ValueError`` naming the argument)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def _out(x: np.ndarray) -> np.ndarray | float:
    """A 0-d result as a Python float, anything else unchanged."""
    return float(x) if np.ndim(x) == 0 else x


def positive(name: str, value: ArrayLike) -> np.ndarray:
    """``value`` as an array; ``ValueError`` if any element is not > 0 (or is NaN)."""
    arr = np.asarray(value, dtype=float)
    if not (arr > 0).all():
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return arr


def non_negative(name: str, value: ArrayLike) -> np.ndarray:
    """``value`` as an array; ``ValueError`` if any element is < 0 (or is NaN)."""
    arr = np.asarray(value, dtype=float)
    if not (arr >= 0).all():
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return arr


def fraction(name: str, value: ArrayLike, *, low_open: bool = True, high_open: bool = False) -> np.ndarray:
    """``value`` as an array; ``ValueError`` unless every element lies in the stated (0, 1] interval."""
    arr = np.asarray(value, dtype=float)
    low_ok = arr > 0 if low_open else arr >= 0
    high_ok = arr < 1 if high_open else arr <= 1
    if not (low_ok & high_ok).all():
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return arr


def choice(name: str, value: str, valid: tuple[str, ...]) -> str:
    """``value`` if it is one of ``valid``, else ``ValueError`` listing them."""
    if value not in valid:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, valid))}; got {value!r}")
    return value
