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


def test_simulated_spans_keep_counts_steps_and_mean_latency():
    """Two hours at a 5-min step: 3 arrivals in step 0 and 5 in step 13 (hour 1). Hour 0's latencies all fall
    in the bucket (1, 2] s, hour 1 has no histogram: hand check — every arrival lies in its step, hour 0's
    latencies lie in [1, 2] scaled to mean 1.5 s exactly, hour 1's are its mean, 4 s."""
    from capplan.metrics.hourly import simulated_spans

    steps = np.zeros(24)
    steps[0], steps[13] = 3, 5
    cumulative = np.array([[0.0, 0.0], [3.0, 0.0], [3.0, 0.0]])  # le = 1, 2, +Inf; hour 1 empty
    start, end = simulated_spans(steps, 300, 7200, (1.0, 2.0, float("inf")), cumulative, np.array([1.5, 4.0]),
                                 np.random.default_rng(0))
    arrive_s, latency_s = (start / 1e6) - 7200, (end - start) / 1e6
    assert start.size == 8 and ((arrive_s[:3] >= 0) & (arrive_s[:3] < 300)).all()
    assert ((arrive_s[3:] >= 13 * 300) & (arrive_s[3:] < 14 * 300)).all()
    assert latency_s[:3].mean() == pytest.approx(1.5, abs=1e-6)
    assert ((latency_s[:3] >= 1.0 * 1.5 / 2.0 - 1e-6) & (latency_s[:3] <= 2.0 * 1.5 / 1.0 + 1e-6)).all()
    np.testing.assert_allclose(latency_s[3:], 4.0)


def test_modelled_peak_in_flight_is_near_the_sweep_of_the_true_requests():
    """Poisson arrivals at 2 req/s for 24 h, exponential latency of mean 3 s (L = 6): the median over hours of
    the peak swept over draws from 5-min counts and a fine latency histogram is within one request of the
    median of the true requests' swept peaks (both ≈ 14-15 here)."""
    from capplan.metrics.hourly import simulated_spans
    from capplan.profile.counting import peak_in_flight_by_model

    rng = np.random.default_rng(3)
    hours, step = 24, 300
    arrive = np.sort(rng.uniform(0, hours * 3600, rng.poisson(2 * hours * 3600)))
    latency = rng.exponential(3.0, arrive.size)
    t0 = 1_800_000_000 // 3600 * 3600
    true = peak_in_flight_by_model(np.zeros(arrive.size), (t0 + arrive) * 1e6, (t0 + arrive + latency) * 1e6, 1,
                                   t0 // 3600, hours)[:, 0]
    counts = np.bincount((arrive // step).astype(int), minlength=hours * 3600 // step)
    le = np.array([0.25, 0.5, 1, 1.5, 2, 3, 4, 5, 7, 10, 15, 20, 30, np.inf])
    hour = (arrive // 3600).astype(int)
    cumulative = np.stack([np.bincount(hour, weights=latency <= b, minlength=hours) for b in le])
    mean = np.bincount(hour, weights=latency, minlength=hours) / np.bincount(hour, minlength=hours)
    start, end = simulated_spans(counts, step, t0, le, cumulative, mean, np.random.default_rng(1))
    modelled = peak_in_flight_by_model(np.zeros(start.size), start, end, 1, t0 // 3600, hours)[:, 0]
    assert abs(np.median(modelled) - np.median(true)) <= 1
