"""Counter increases with resets, and Prometheus buckets onto the profile's bins (pure)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.metrics.hourly import (bucket_relative_error, bucket_representatives, buckets_to_bins,
                                    hourly_increases, interval_increases, per_hour, peak_rate_per_hour)
from capplan.profile.bins import HISTOGRAM_RELATIVE_ERROR


def test_reset_counts_the_value_after_restart():
    assert interval_increases(np.array([0, 5, 9, 2, 4.0])).tolist() == [5, 4, 2, 2]


@given(st.lists(st.integers(0, 50), min_size=1, max_size=200), st.sets(st.integers(1, 199), max_size=5))
@settings(max_examples=100, deadline=None)
def test_increases_sum_to_events_with_resets(events, resets):
    """Events per step; the counter restarts from 0 just after some samples: the increases sum exactly when
    every reset shows as a drop, and never over-count otherwise (a reset to a value >= the last is invisible,
    to PromQL's ``increase()`` as well)."""
    value = np.concatenate([[0.0], np.cumsum(events)]).astype(float)
    visible = True
    for r in sorted(resets):
        if r < len(value):
            before = value[r - 1]
            value[r:] -= before
            visible &= bool(value[r] < before)
    total = interval_increases(value).sum()
    assert total == sum(events) if visible else total <= sum(events)


def test_hourly_attribution_and_peak():
    step = 600
    ts = np.arange(0, 2 * 3600 + 1, step, dtype=float)
    value = np.concatenate([[0], np.cumsum([1, 1, 1, 1, 1, 1200, 6, 6, 6, 6, 6, 6])]).astype(float)
    steps = hourly_increases(ts, value, 0, 2, step)
    assert per_hour(steps, step).tolist() == [1205, 36]
    assert peak_rate_per_hour(steps, step).tolist() == [2, 1]  # ceil(1200 / 600 s), ceil(6 / 600 s)


def test_representatives_and_bins():
    rep = bucket_representatives([1, 2, 5, np.inf])
    assert rep.tolist() == [1, 2 * 1 * 2 / 3, 2 * 2 * 5 / 7, 5]
    bins = buckets_to_bins([1, 2, 5, np.inf], np.array([3, 3, 10, 12]))
    assert sum(bins.values()) == 12


@pytest.mark.parametrize("le, beta", [((1, 2, 5, 10), 3 / 7), ((100, 110, 121), 10 / 210)])
def test_bound(le, beta):
    assert bucket_relative_error(le) == pytest.approx((1 + beta) * (1 + HISTOGRAM_RELATIVE_ERROR) - 1)
