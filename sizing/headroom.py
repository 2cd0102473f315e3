"""Headroom: what is added on top of the peak need, one term at a time.

Pure functions: scalar or ndarray in, the same shape out. The order used by
:func:`sizing.fleet.size_fleet` is growth safety → rollout surge → zone loss
(with rounding to whole replicas per zone) → N+k spares → warm pool; each term
is reported on its own line.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from capplan.sizing._checks import _out, non_negative, positive


def _zones(zones: ArrayLike, zones_lost: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    z = np.asarray(zones)
    k = np.asarray(zones_lost)
    if not np.all((z >= 1) & (z == np.floor(z))):
        raise ValueError(f"zones must be a whole number >= 1, got {zones!r}")
    if not np.all((k >= 0) & (k < z) & (k == np.floor(k))):
        raise ValueError(f"zones_lost must be a whole number in [0, zones), got {zones_lost!r} for zones={zones!r}")
    return z, k


def zone_loss_factor(zones: ArrayLike, zones_lost: ArrayLike) -> np.ndarray | float:
    """Capacity multiplier to survive losing ``k`` of ``Z`` equally sized zones.

    .. math:: f = \\frac{Z}{Z - k}

    Parameters
    ----------
    zones : array_like of int
        Zones the fleet is spread over evenly. [count, >= 1]
    zones_lost : array_like of int
        Zones whose simultaneous loss the fleet must survive at peak. [count, 0 <= k < Z]

    Returns
    -------
    numpy.ndarray or float
        Multiplier on the need. [ratio, >= 1]

    Raises
    ------
    ValueError
        If ``zones`` < 1, ``zones_lost`` < 0 or ``zones_lost`` >= ``zones``.

    Notes
    -----
    The surviving ``Z − k`` zones must carry the whole peak, so each zone holds
    ``need / (Z − k)`` and the fleet ``Z`` times that: 3 zones surviving one
    loss need 1.5×, 2 zones need 2×.

    Examples
    --------
    >>> zone_loss_factor(3, 1)
    1.5
    """
    z, k = _zones(zones, zones_lost)
    return _out(z / (z - k))


def replicas_with_zone_headroom(
    replicas_needed: ArrayLike, zones: ArrayLike, zones_lost: ArrayLike
) -> np.ndarray | int:
    """Whole replicas to deploy so the surviving zones still hold the need.

    .. math:: R = Z \\cdot \\left\\lceil \\frac{R_{need}}{Z - k} \\right\\rceil

    Parameters
    ----------
    replicas_needed : array_like
        Fractional replicas needed at peak, headroom for growth and rollout
        already included. [replicas]
    zones : array_like of int
        Zones, each holding the same number of replicas. [count, >= 1]
    zones_lost : array_like of int
        Zones that may be lost at once. [count, 0 <= k < Z]

    Returns
    -------
    numpy.ndarray or int
        Whole replicas, a multiple of ``zones``. [replicas]

    Notes
    -----
    Rounding up per zone, not for the whole fleet, because a zone cannot hold
    a fraction of a replica; with one zone this is plain ``ceil``.

    Examples
    --------
    30.9 replicas over 3 zones that must survive one loss: 16 per zone, 48 in all.

    >>> int(replicas_with_zone_headroom(30.9, 3, 1))
    48
    """
    z, k = _zones(zones, zones_lost)
    need = non_negative("replicas_needed", replicas_needed)
    # Any positive need takes a replica per zone, even one so small that the division underflows to 0.
    total = np.maximum(np.ceil(need / (z - k)), need > 0) * z
    return int(total) if np.ndim(total) == 0 else total.astype(int)


def growth_safety_gpus(need_gpus: ArrayLike, growth_safety_factor: ArrayLike) -> np.ndarray | float:
    """GPUs added for forecast error: the need times (factor − 1).

    .. math:: \\Delta G_{growth} = G \\cdot (g - 1)

    Parameters
    ----------
    need_gpus : array_like
        Fractional GPUs needed at the forecast peak. [GPUs]
    growth_safety_factor : array_like
        Multiplier covering forecast error, e.g. the upper interval bound over
        the point forecast. [ratio, >= 1]

    Returns
    -------
    numpy.ndarray or float
        Extra GPUs. [GPUs, >= 0]

    Examples
    --------
    >>> round(growth_safety_gpus(30.9, 1.2), 2)
    6.18
    """
    g = np.asarray(growth_safety_factor, dtype=float)
    if not np.all(g >= 1):
        raise ValueError(f"growth_safety_factor must be >= 1, got {growth_safety_factor!r}")
    return _out(non_negative("need_gpus", need_gpus) * (g - 1))


def rollout_surge_gpus(need_gpus: ArrayLike, rollout_surge_fraction: ArrayLike) -> np.ndarray | float:
    """GPUs added so a rolling deploy can start new replicas before old ones stop.

    .. math:: \\Delta G_{surge} = G \\cdot s

    Parameters
    ----------
    need_gpus : array_like
        Fractional GPUs needed (growth safety included). [GPUs]
    rollout_surge_fraction : array_like
        Share of the fleet replaced at once (Kubernetes ``maxSurge``). [fraction of need, >= 0]

    Returns
    -------
    numpy.ndarray or float
        Extra GPUs. [GPUs, >= 0]

    Examples
    --------
    >>> round(rollout_surge_gpus(30.9, 0.1), 2)
    3.09
    """
    return _out(non_negative("need_gpus", need_gpus) * non_negative("rollout_surge_fraction", rollout_surge_fraction))


def whole_replicas(gpus: ArrayLike, tensor_parallel: ArrayLike = 1) -> np.ndarray | int:
    """Whole replicas that cover a fractional GPU count.

    .. math:: R = \\lceil G / t \\rceil

    Parameters
    ----------
    gpus : array_like
        Fractional GPUs. [GPUs]
    tensor_parallel : array_like of int, default 1
        GPUs per replica. [GPUs/replica]

    Returns
    -------
    numpy.ndarray or int
        Replicas. [replicas]

    Examples
    --------
    >>> whole_replicas(30.9, 2)
    16
    """
    need = non_negative("gpus", gpus)
    # A positive need takes a replica even if the division underflows to 0.
    r = np.maximum(np.ceil(need / positive("tensor_parallel", tensor_parallel)), need > 0)
    return int(r) if np.ndim(r) == 0 else r.astype(int)
