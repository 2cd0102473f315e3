"""Tests of capplan.profile.summary: the keys of profile_summary, its figures against the validated frames;
token_stats of one model or several."""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd
import pytest

from capplan import profile
from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.profile import read, summary
from capplan.profile.bins import HISTOGRAM_RELATIVE_ERROR
from capplan.sample import SampleSpec, iter_days


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


@pytest.fixture(scope="module")
def gappy():
    """Four generated days (6,000 requests/day) with day 2 missing, the first rows before 00:55:07 and the last
    after 23:55 of day 4 dropped (partial first and last hours: the first observed under MIN_EXPOSURE_S, so it
    has requests but no rate), and hours 3 and 4 of one model dropped (gaps)."""
    con = connect()
    ensure_tables(con)
    for i, chunk in enumerate(iter_days(SampleSpec(start=date(2026, 2, 1), days=4, requests_per_day=6_000, seed=5)),
                              start=1):
        if i != 2:
            con.register("chunk", chunk.table)
            con.execute("insert into request_rows by name select *, ? as file_id from chunk", [i])
            con.unregister("chunk")
    con.execute("delete from request_rows where ts_utc < '2026-02-01 00:55:07' or ts_utc >= '2026-02-04 23:55:00'")
    model = con.execute("select min(model) from request_rows").fetchall()[0][0]
    con.execute("delete from request_rows where model = ? and hour(ts_utc) in (3, 4)", [model])
    profile.refresh_rollups(con)
    yield con, model
    con.close()


def test_the_gappy_days_hold_an_hour_with_requests_and_no_rate(gappy):
    """The equality test below covers the summary's NaN-rate branch: the first hour was observed under 600 s."""
    con, _ = gappy
    hourly = read.hourly_traffic(con, profile.ALL_MODELS)
    first = hourly.iloc[0]
    assert first["requests"] > 0 and pd.isna(first["avg_qps"]) and first["exposure_s"] < 600


def _summary_from_frames(con, model, since, ttft_threshold_ms, empty_hours) -> dict:
    """The figures of profile_summary as computed before it left pandas: from the validated frames of the
    readers (hourly_traffic with its exposure, the SLI counts, the merged TTFT and token histograms)."""
    scope = model or profile.ALL_MODELS
    hourly = read.hourly_traffic(con, scope, since, empty_hours=empty_hours)
    observed = hourly[hourly["requests"].notna()]
    total = int(observed["requests"].sum())
    rated = observed[observed["avg_qps"].notna()]
    seconds = float(rated["exposure_s"].sum())
    avg_qps = float(rated["requests"].sum()) / seconds if seconds and total else None
    peak_hour = observed["avg_qps"].max() if len(observed) else None
    peak_hour = None if peak_hour is None or pd.isna(peak_hour) else float(peak_hour)
    peak_second = observed["peak_second_qps"].max() if len(observed) else None
    peak_second = None if peak_second is None or pd.isna(peak_second) else float(peak_second)
    sli = read.sli_event_counts(con, ttft_threshold_ms, scope, since)
    ttft = read.histogram_quantiles(con, ("ttft_ms",), read.TTFT_QUANTILES, "all", scope, since)
    valid, good = int(sli["valid_events"].sum()), int(sli["good_events"].sum())
    success = float((sli["success_rate"].fillna(0) * sli["valid_events"]).sum())
    sums = read.period_token_sums(con, "all", model, since)
    return {
        "span_start": hourly["hour_utc"].min().isoformat() if len(hourly) else None,
        "span_end": (hourly["hour_utc"].max() + pd.Timedelta(hours=1)).isoformat() if len(hourly) else None,
        "hours": len(hourly), "gap_hours": int(hourly["is_gap"].sum()), "total_requests": total,
        "avg_qps": avg_qps, "peak_hour_qps": peak_hour, "peak_second_qps": peak_second,
        "valid_events": valid, "good_events": good, "success_rate": round(success) / valid if valid else None,
        "ttft": {f"ttft_p{round(q * 100)}_ms": float(v) for q, v in zip(ttft["q"], ttft["value"], strict=True)},
        "tokens": {row.model: (row.requests, row.input_tokens_sum / row.requests,
                               row.output_tokens_sum / row.requests) for row in sums.itertuples()},
    }


@pytest.mark.parametrize("empty_hours", ["missing", "zero"])
@pytest.mark.parametrize(("model", "since", "ttft_threshold_ms"), [
    (None, None, 2_000.0), ("__all__", "2026-02-03", 150.0), ("gappy", None, 500.0),
    ("gappy", "2026-02-03T05:30:00Z", 2_000.0), ("no-such-model", None, 2_000.0)])
def test_summary_equals_the_figures_of_the_validated_frames(gappy, model, since, ttft_threshold_ms, empty_hours):
    """profile_summary reads plain values, not the readers' pandas frames: on days with a missing day, partial
    first and last hours and a model's gap hours, every figure equals the one computed from the validated frames
    (hourly_traffic with its exposure, the SLI counts, the merged histograms), to the last bit."""
    con, gappy_model = gappy
    model = gappy_model if model == "gappy" else model
    got = profile.profile_summary(con, model, since, ttft_threshold_ms=ttft_threshold_ms, empty_hours=empty_hours)
    want = _summary_from_frames(con, model, since, ttft_threshold_ms, empty_hours)
    assert {k: got[k] for k in ("span_start", "span_end", "hours", "gap_hours", "total_requests", "avg_qps",
                                "peak_hour_qps", "peak_second_qps")} == {k: want[k] for k in (
        "span_start", "span_end", "hours", "gap_hours", "total_requests", "avg_qps", "peak_hour_qps",
        "peak_second_qps")}
    assert (got["sli"]["valid_events"], got["sli"]["good_events"], got["sli"]["success_rate"]) == (
        want["valid_events"], want["good_events"], want["success_rate"])
    assert {k: v for k, v in got["sli"].items() if k.startswith("ttft_p") and v is not None} == want["ttft"]
    assert {name: (s["requests"], s["input_tokens"]["mean"], s["output_tokens"]["mean"])
            for name, s in got["models"].items()} == want["tokens"]
    if model is None:
        assert got["gap_hours"] == 24 and got["hours"] == 4 * 24  # '__all__': every hour of its span but day 2's
    if model == gappy_model:  # hours 3 and 4 of the days it has rows (since 3 Feb 05:30: of day 4 only), and day 2
        assert got["gap_hours"] == (3 * 2 + 24 if since is None else 2)
