"""Tests of capplan.profile.summary: the keys of profile_summary; token_stats of one model or several."""

from __future__ import annotations

import pytest

from capplan import profile
from capplan.profile.bins import HISTOGRAM_RELATIVE_ERROR


def test_empty_summary_has_every_key(con):
    profile.refresh_rollups(con)  # a database ingested into but empty: profiled, no rows
    summary = profile.profile_summary(con)
    assert summary["total_requests"] == 0 and summary["avg_qps"] is None
    assert set(summary["sli"]) >= {"valid_events", "good_events", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms"}
    assert set(summary["input_tokens"]) == {"mean", "p50", "p90", "p99"}


def test_token_stats_of_several_models_is_their_union(con, golden, load_rows):
    """Golden rows: model a has inputs 100, 200, 50; model b 300, 0. Taken together (a pool) under one name:
    5 requests, mean input (100 + 200 + 50 + 300 + 0) / 5 = 130, p50 the 3rd smallest (100), p99 the 5th (300),
    each within the histogram bound; model a alone under the same call: 3 requests, mean 350 / 3, p99 200."""
    load_rows(con, golden)
    both = profile.token_stats(con, "pool", None, ["a", "b"])
    assert list(both) == ["pool"]
    assert both["pool"]["requests"] == 5 and both["pool"]["input_tokens"]["mean"] == pytest.approx(130.0)
    for name, exact in (("p50", 100.0), ("p99", 300.0)):
        assert abs(both["pool"]["input_tokens"][name] - exact) <= HISTOGRAM_RELATIVE_ERROR * exact
    assert both["pool"]["output_tokens"]["mean"] == pytest.approx((10 + 20 + 30 + 5 + 0) / 5)
    alone = profile.token_stats(con, "pool", None, ["a"])["pool"]
    assert alone["requests"] == 3 and alone["input_tokens"]["mean"] == pytest.approx(350 / 3)
    assert abs(alone["input_tokens"]["p99"] - 200.0) <= HISTOGRAM_RELATIVE_ERROR * 200.0
    assert profile.token_stats(con, "a", None)["a"] == alone  # one model by name: the same figures
