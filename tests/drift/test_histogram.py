"""Tests for capplan/drift/histogram.py and sql/int_drift_daily_histogram.sql: the daily histograms and their grid."""

from __future__ import annotations

import math

import numpy as np
import pytest

from capplan.db import connect
from capplan.drift.histogram import bin_lower_tokens, daily_histograms
from capplan.ingest import ensure_tables
from capplan.profile.bins import HISTOGRAM_GAMMA
from capplan.profile.counting import log_bins
from capplan.rollups import DRIFT_BINS_MERGED, drift_histogram_params


def test_daily_histogram_sql_on_a_few_rows():
    con = connect()
    ensure_tables(con)
    con.execute("""insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) values
        ('2026-01-01 23:59:59', 1, 0, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-01-01 10:00:00', 2, 5, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-01-01 11:00:00', 2, 0, 'a', 503, null, 1, null, null, null, 1),
        ('2026-01-02 00:00:00', 1000, 7, 'a', 200, 1, 1, null, null, null, 1)""")
    got = daily_histograms(con)
    inputs = got[got["metric"] == "input_tokens"]
    bin_of = lambda x: math.floor(math.log(x) / math.log(HISTOGRAM_GAMMA)) // DRIFT_BINS_MERGED  # noqa: E731
    assert inputs[["bin", "requests", "tokens_sum"]].values.tolist() == [[0, 1, 1], [bin_of(2), 1, 2],
                                                                         [bin_of(1000), 1, 1000]]
    assert inputs["day_utc"].dt.day.tolist() == [1, 1, 2]  # the 503 is not served: not counted
    outputs = got[got["metric"] == "output_tokens"]
    assert outputs[outputs["bin"] == -1]["requests"].tolist() == [1]  # 0 tokens go to bin -1


def test_drift_bins_are_runs_of_nine_profile_bins_for_every_token_count():
    """The SQL's drift bin of every token count to 2^20 is the profile's bin // 9 (one grid)."""
    n = 1 << 20
    con = connect()
    ensure_tables(con)
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, file_id) "
                "select timestamp '2026-01-01', i, 0, 'a', 200, 1 from range($n) t(i)", {"n": n})
    got = daily_histograms(con).query("metric == 'input_tokens'")
    profile_bins = log_bins(np.arange(n, dtype=float), 1 / math.log(HISTOGRAM_GAMMA))
    want = np.bincount(profile_bins // DRIFT_BINS_MERGED + 1)  # bin -1 -> index 0
    np.testing.assert_array_equal(got["bin"].to_numpy(), np.nonzero(want)[0] - 1)
    np.testing.assert_array_equal(got["requests"].to_numpy(), want[want > 0])


def test_drift_grid_parameters_merge_nine_profile_bins():
    assert drift_histogram_params()["inv_ln_gamma"] == pytest.approx(1 / (9 * math.log(1.02)), rel=1e-15)
    assert HISTOGRAM_GAMMA ** DRIFT_BINS_MERGED == pytest.approx(1.195, abs=5e-4)


def test_bin_lower_tokens_are_the_bin_edges():
    np.testing.assert_allclose(bin_lower_tokens([-1, 0, 1, 10]), [0.0, 1.0, 1.02 ** 9, 1.02 ** 90], rtol=1e-12)
    edges = bin_lower_tokens(np.arange(0, 60))
    assert (np.diff(edges) > 0).all()
    # a token count at or above a bin's lower edge and below the next one falls in that bin
    tokens = np.ceil(edges[:-1] + 1e-9)
    in_bin = (tokens >= edges[:-1]) & (tokens < edges[1:])
    assert (log_bins(tokens[in_bin], drift_histogram_params()["inv_ln_gamma"]) == np.arange(59)[in_bin]).all()
