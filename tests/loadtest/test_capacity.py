"""Capacity at the SLO from a sweep: exact interpolation on a synthetic sweep, bounds, invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.loadtest.capacity import (SloTargets, SweepPoint, capacity_at_slo, closed_loop_ceiling, crossing_fraction,
                                       group_sweeps, per_replica_and_gpu, sweep_points)

TARGETS = SloTargets(ttft_ms_max=1000.0, tpot_ms_max=None, percentile=99)


def _run(rate, ttft_p99, tokens_per_s=None, **extra):
    return {"arrival_process": "poisson", "target_requests_per_s": rate, "requests_per_s": rate,
            "completed_requests": 1000, "failed_requests": 0, "ttft_p99_ms": ttft_p99, "tpot_p99_ms": 20.0,
            "output_tokens_per_s": tokens_per_s if tokens_per_s is not None else rate * 100.0,
            "pool": "p", "tool": "vllm", "model_id": "m", "gpu": None, "tensor_parallel": None, "replicas": 2,
            "gpus_per_replica": 4, "input_tokens_mean": 500.0, "output_tokens_mean": 100.0, **extra}


# five runs at known rates; p99 TTFT crosses the 1,000 ms target between 3 and 4 requests/s
SWEEP = [_run(1.0, 200.0), _run(2.0, 400.0), _run(3.0, 700.0), _run(4.0, 1300.0), _run(5.0, 4000.0)]


def test_a_five_run_sweep_gives_the_interpolated_capacity_exactly():
    capacity = capacity_at_slo(sweep_points(SWEEP, 99), TARGETS)
    # 3 + (4 - 3) * (1000 - 700) / (1300 - 700) = 3.5
    assert capacity.kind == "interpolated" and capacity.binding == "ttft"
    assert capacity.requests_per_s == pytest.approx(3.5, rel=1e-12)
    assert (capacity.bracket_low_rps, capacity.bracket_high_rps) == (3.0, 4.0)
    assert capacity.output_tokens_per_s == pytest.approx(350.0, rel=1e-12)
    shares = per_replica_and_gpu(capacity, replicas=2, gpus_per_replica=4)
    assert shares["requests_per_s_per_replica"] == pytest.approx(1.75)
    assert shares["requests_per_s_per_gpu"] == pytest.approx(3.5 / 8)
    assert shares["output_tokens_per_s_per_gpu"] == pytest.approx(350.0 / 8)


def test_order_of_runs_does_not_matter_and_repeats_merge_to_the_worst():
    shuffled = [SWEEP[3], SWEEP[0], SWEEP[4], SWEEP[2], SWEEP[1], _run(3.0, 800.0)]
    capacity = capacity_at_slo(sweep_points(shuffled, 99), TARGETS)
    assert capacity.requests_per_s == pytest.approx(3.0 + (1000 - 800) / (1300 - 800))


def test_a_sweep_that_never_breaks_is_a_lower_bound_and_one_that_never_meets_an_upper_bound():
    low = capacity_at_slo(sweep_points(SWEEP[:3], 99), TARGETS)
    assert low.kind == "lower_bound" and low.requests_per_s == 3.0 and "at least" in low.note
    high = capacity_at_slo(sweep_points(SWEEP[3:], 99), TARGETS)
    assert high.kind == "upper_bound" and high.requests_per_s == 4.0 and "below" in high.note


def test_errors_and_tpot_break_too():
    runs = [_run(1.0, 100.0), _run(2.0, 100.0, failed_requests=30)]  # 30 / 1030 > 1 %
    capacity = capacity_at_slo(sweep_points(runs, 99), TARGETS)
    assert capacity.binding == "error_rate" and 1.0 < capacity.requests_per_s < 2.0
    tpot = SloTargets(ttft_ms_max=None, tpot_ms_max=30.0)
    runs = [_run(1.0, 100.0, tpot_p99_ms=20.0), _run(2.0, 100.0, tpot_p99_ms=40.0)]
    assert capacity_at_slo(sweep_points(runs, 99), tpot).requests_per_s == pytest.approx(1.5)


def test_closed_loop_runs_are_only_a_ceiling():
    closed = _run(None, 50.0, tokens_per_s=900.0, arrival_process="concurrency", max_concurrency=8, requests_per_s=9.0)
    assert sweep_points([closed], 99) == []
    assert capacity_at_slo([], TARGETS).kind == "no_open_loop_runs"
    assert closed_loop_ceiling([closed, *SWEEP])["requests_per_s"] == 9.0
    assert closed_loop_ceiling(SWEEP) is None


def test_sweeps_split_by_setup_and_token_mix():
    other_mix = _run(2.0, 100.0, input_tokens_mean=2000.0)
    other_pool = _run(2.0, 100.0, pool="q")
    groups = group_sweeps([*SWEEP, other_mix, other_pool])
    assert [len(g) for g in groups] == [5, 1, 1]


@pytest.mark.parametrize("bad", [dict(percentile=75), dict(ttft_ms_max=None)])
def test_targets_are_checked(bad):
    with pytest.raises(ValueError):
        SloTargets(**{"ttft_ms_max": 1.0, "tpot_ms_max": None, **bad})


@given(st.lists(st.tuples(st.floats(0.1, 100), st.floats(1, 5000)), min_size=2, max_size=8,
                unique_by=lambda t: round(t[0], 6)))
def test_the_capacity_lies_in_its_bracket(points):
    sweep = [SweepPoint(rate, rate * 10, ttft, None, 0.0) for rate, ttft in points]
    capacity = capacity_at_slo(sweep, TARGETS)
    if capacity.kind == "interpolated":
        assert capacity.bracket_low_rps <= capacity.requests_per_s <= capacity.bracket_high_rps
        below = [p for p in sweep if p.rate_rps <= capacity.bracket_low_rps]
        assert all(p.ttft_ms <= TARGETS.ttft_ms_max for p in below)


@given(st.floats(0, 1e4), st.floats(0, 1e4), st.floats(0, 1e4))
def test_crossing_fraction_is_a_fraction(a, b, limit):
    assert 0.0 <= crossing_fraction(a, b, limit) <= 1.0


def test_a_sweep_summary_is_clean_only_without_flags():
    from capplan.loadtest.capacity import sweep_summary

    runs = [{**r, "flags": [], "file_path": "f", "run_index": i} for i, r in enumerate(SWEEP)]
    summary = sweep_summary(runs, TARGETS)
    assert summary["clean"] and summary["requests_per_s_per_gpu"] == pytest.approx(3.5 / 8)
    runs[0]["flags"] = [{"name": "under_paced"}]
    assert not sweep_summary(runs, TARGETS)["clean"]
