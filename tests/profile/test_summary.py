"""Tests of capplan.profile.summary: the keys of profile_summary."""

from __future__ import annotations

from capplan import profile


def test_empty_summary_has_every_key(con):
    profile.refresh_rollups(con)  # a database ingested into but empty: profiled, no rows
    summary = profile.profile_summary(con)
    assert summary["total_requests"] == 0 and summary["avg_qps"] is None
    assert set(summary["sli"]) >= {"valid_events", "good_events", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms"}
    assert set(summary["input_tokens"]) == {"mean", "p50", "p90", "p99"}
