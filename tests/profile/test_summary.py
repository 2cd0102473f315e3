"""Tests of capplan.profile.summary: the keys of profile_summary; token_stats of one model or several."""

from __future__ import annotations

import numpy as np
import pytest

from capplan import profile
from capplan.profile import read, summary
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


@pytest.mark.parametrize(("model", "since", "models"), [
    (None, None, None), ("__all__", None, None), (None, "2026-01-10", None), ("pool", None, "two")])
def test_token_percentiles_merged_in_numpy_equal_duckdbs(month, model, since, models):
    """Many models: token_stats merges the stored hourly bins per model in numpy, not one row per bin in
    DuckDB; every percentile of every model (and of a pool, and since a day) is the query's, to the last bit."""
    con, raw, _ = month
    if models == "two":
        models = sorted(raw["model"].unique())[:2]
    names = list(read.period_token_sums(con, "all", model, since, models)["model"])
    assert len(names) >= 1
    in_numpy = summary._token_quantiles(con, names, model, since, models)
    in_duckdb = summary._token_quantiles(con, names, model, since, models, merge_cells=0)
    assert in_numpy == in_duckdb
    assert sorted(in_numpy) == sorted((name, m) for name in names for m in ("input_tokens", "output_tokens"))
    long = read.histogram_quantiles(con, ("input_tokens",), read.TOKEN_QUANTILES, "all", model, since, models)
    first = long.iloc[0]
    assert dict(in_numpy[(first["model"], "input_tokens")])[first["q"]] == first["value"]


def test_bin_quantiles_golden():
    """Counts 3 in bin -1 (column 0), 1 in bin 0, 6 in bin 34 (n = 10): p50 is the 5th smallest, in bin 34,
    reported as 2 * 1.02^35 / 2.02; p10 the 1st (bin -1): 0; a row with no counts has none."""
    counts = np.zeros((2, 36), np.int64)
    counts[0, [0, 1, 35]] = [3, 1, 6]
    got = summary._bin_quantiles(counts, (0.1, 0.4, 0.5))
    assert got[0] == [(0.1, 0.0), (0.4, 2 * 1.02 / 2.02), (0.5, 2 * 1.02**35 / 2.02)]
    assert got[1] == []
