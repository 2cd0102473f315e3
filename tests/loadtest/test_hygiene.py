"""Measurement hygiene: closed loop, Little's-law starvation, under-pacing, token mix."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.loadtest.hygiene import (effective_concurrency, is_starved, is_under_paced, mean_latency_ms,
                                      run_flags)


def _run(**extra):
    return {"arrival_process": "poisson", "requests_per_s": 4.0, "target_requests_per_s": 4.0, "max_concurrency": None,
            "input_tokens_mean": 500.0, "output_tokens_mean": 100.0, "e2el_mean_ms": 2000.0, "ttft_mean_ms": 100.0,
            "tpot_mean_ms": 19.0, **extra}


def test_a_clean_open_loop_run_has_no_flag():
    assert run_flags(_run(), 520.0, 90.0) == []


def test_a_closed_loop_run_is_flagged():
    flags = run_flags(_run(arrival_process="concurrency", target_requests_per_s=None, max_concurrency=8))
    assert [f.name for f in flags] == ["closed_loop"]
    assert [f.name for f in run_flags(_run(arrival_process="burst", target_requests_per_s=None))] == ["closed_loop"]


def test_a_starved_run_is_flagged_with_its_numbers():
    # 32 offered in flight, but 4 requests/s x 2 s = 8 effective (L = X W)
    flags = run_flags(_run(arrival_process="concurrency", target_requests_per_s=None, max_concurrency=32))
    starved = next(f for f in flags if f.name == "starved")
    assert starved.values == {"effective_concurrency": 8.0, "offered_concurrency": 32}
    assert "8 (= 4 requests/s x 2 s)" in starved.message
    fed = run_flags(_run(arrival_process="concurrency", target_requests_per_s=None, max_concurrency=9))
    assert "starved" not in [f.name for f in fed]


def test_an_under_paced_run_is_flagged():
    flags = run_flags(_run(requests_per_s=3.7))  # 7.5 % below 4
    assert [f.name for f in flags] == ["under_paced"] and "7.5% below" in flags[0].message
    assert run_flags(_run(requests_per_s=3.85)) == []  # 3.75 % below: within 5 %


def test_a_different_prompt_mix_is_flagged():
    flags = run_flags(_run(), production_input_tokens_mean=1000.0, production_output_tokens_mean=100.0)
    assert [f.name for f in flags] == ["token_mix"] and "different prompt mix" in flags[0].message
    assert flags[0].values["input_tokens_difference"] == pytest.approx(-0.5)


@pytest.mark.parametrize(("production_input", "production_output", "flagged"), [
    (400.0, 100.0, False),  # input 500 / 400 - 1 = +25 % exactly: not more than 25 % apart
    (390.0, 100.0, True),   # +28.2 %
    (500.0, 80.0, False),   # output 100 / 80 - 1 = +25 % exactly
    (500.0, 140.0, True),   # output 100 / 140 - 1 = -28.6 %
    (500.0, 125.0, False),  # output 100 / 125 - 1 = -20 %
])
def test_the_token_mix_flag_is_more_than_25_percent_either_way(production_input, production_output, flagged):
    flags = run_flags(_run(), production_input_tokens_mean=production_input,
                      production_output_tokens_mean=production_output)
    assert ("token_mix" in [f.name for f in flags]) is flagged


def test_mean_latency_falls_back_to_ttft_plus_tpot():
    assert mean_latency_ms(None, 100.0, 10.0, 101.0) == pytest.approx(1100.0)
    assert mean_latency_ms(None, None, 10.0, 101.0) is None


@given(st.floats(0.01, 1e3), st.floats(0.001, 1e3))
def test_littles_law_round_trips(rate, latency_s):
    assert effective_concurrency(rate, latency_s) / rate == pytest.approx(latency_s)


@given(st.floats(0.1, 1e3), st.floats(0.0, 1.0))
def test_under_paced_exactly_beyond_five_percent(target, fraction):
    assert is_under_paced(target, target * (1 - fraction)) == (target * (1 - fraction) < 0.95 * target)
    assert not is_starved(10.0, 10.0)
