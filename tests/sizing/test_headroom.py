"""Headroom: zone arithmetic, growth, surge, whole replicas."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.sizing import headroom


@pytest.mark.parametrize(("zones", "lost", "factor"), [(1, 0, 1.0), (2, 1, 2.0), (3, 1, 1.5), (4, 1, 4 / 3), (5, 2, 5 / 3)])
def test_zone_loss_factor(zones, lost, factor):
    assert headroom.zone_loss_factor(zones, lost) == pytest.approx(factor, rel=1e-12)


@pytest.mark.parametrize(("need", "zones", "lost", "replicas"), [
    (30.9, 1, 0, 31),   # plain ceiling
    (30.9, 3, 1, 48),   # ceil(30.9 / 2) = 16 per zone, × 3
    (30.9, 2, 1, 62),   # 31 per zone, × 2
    (30.0, 3, 1, 45),   # exactly 15 per zone
    (0.0, 3, 1, 0),
])
def test_replicas_with_zone_headroom_rounds_per_zone(need, zones, lost, replicas):
    assert headroom.replicas_with_zone_headroom(need, zones, lost) == replicas


@pytest.mark.parametrize(("zones", "lost"), [(0, 0), (3, 3), (2, -1), (2.5, 1)])
def test_bad_zone_counts_raise(zones, lost):
    with pytest.raises(ValueError, match="zones"):
        headroom.zone_loss_factor(zones, lost)


def test_growth_and_surge_terms():
    assert headroom.growth_safety_gpus(30.0, 1.2) == pytest.approx(6.0)
    assert headroom.rollout_surge_gpus(36.0, 0.25) == pytest.approx(9.0)
    with pytest.raises(ValueError, match="growth_safety_factor must be >= 1"):
        headroom.growth_safety_gpus(30.0, 0.9)


def test_whole_replicas_arrays():
    assert np.array_equal(headroom.whole_replicas(np.array([0.0, 1.0, 1.01, 7.9]), 2), [0, 1, 1, 4])


@given(st.floats(0, 1e5), st.integers(1, 8), st.integers(0, 7))
def test_zone_replicas_survive_the_loss(need, zones, lost):
    lost = min(lost, zones - 1)
    replicas = headroom.replicas_with_zone_headroom(need, zones, lost)
    assert replicas % zones == 0
    # what is left after losing `lost` zones still covers the need
    assert replicas / zones * (zones - lost) >= need
    assert replicas >= need * headroom.zone_loss_factor(zones, lost) - 1e-9
