"""Tests of capplan.profile.read: golden rows in an in-memory DuckDB, and a generated month against
independent pandas/numpy computations.

Counts and sums must agree exactly; histogram percentiles within HISTOGRAM_RELATIVE_ERROR of the exact
order statistic. Rows are loaded as an ingest loads them: inserted, then the roll-ups refreshed.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
import pytest

from capplan import profile


def test_hourly_traffic_golden(con, load_rows, golden):
    load_rows(con, golden)
    df = profile.hourly_traffic(con).set_index(["model", "hour_utc"])
    h10, h11, h12 = (datetime(2026, 3, 1, h) for h in (10, 11, 12))
    everything = df.loc["__all__"]
    assert everything.loc[h10, "requests"] == 4
    assert everything.loc[h10, "errors"] == 1
    # 10:00:00.100 and 10:00:00.900 share the second 10:00:00; 10:00:01.000 starts the next one
    assert everything.loc[h10, "peak_second_qps"] == 2.0
    assert everything.loc[h10, "input_tokens_sum"] == 650
    assert everything.loc[h10, "mean_latency_ms"] == pytest.approx(1000.0)
    # the logs observed 10:00:00.1 to 12:30: 3599.9 s of hour 10 (capplan.profile.exposure)
    assert everything.loc[h10, "exposure_s"] == pytest.approx(3599.9)
    assert everything.loc[h10, "avg_qps"] == pytest.approx(4 / 3599.9)
    # Little: (4 / 3599.9 req/s) * 1.0 s
    assert everything.loc[h10, "concurrency_littles"] == pytest.approx(4 / 3599.9)
    # the last arrival is at 12:30: half of hour 12 observed, its one request over 1800 s
    assert everything.loc[h12, "exposure_s"] == 1800 and everything.loc[h12, "avg_qps"] == pytest.approx(1 / 1800)
    # 10:00:00.1-10:00:01.6 and 10:00:00.9-10:00:01.4 overlap; 10:59:59.5 runs into 11:00
    assert everything.loc[h10, "concurrency_measured_peak"] == 2
    assert everything.loc[h11, "concurrency_measured_peak"] == 1
    assert bool(everything.loc[h11, "is_gap"]) and pd.isna(everything.loc[h11, "requests"])
    assert everything.loc[h12, "errors"] == 1
    assert df.loc[("a", h10), "requests"] == 3
    assert df.loc[("b", h10), "peak_second_qps"] == 1.0
    assert list(df.loc["a"].index) == [h10]  # a's span is one hour


def test_empty_hours_zero(con, load_rows, golden):
    load_rows(con, golden)
    df = profile.hourly_traffic(con, model="__all__", empty_hours="zero").set_index("hour_utc")
    gap = df.loc[datetime(2026, 3, 1, 11)]
    assert gap["requests"] == 0 and gap["avg_qps"] == 0 and bool(gap["is_gap"])


def test_empty_hours_invalid(con):
    with pytest.raises(ValueError, match="empty_hours must be one of"):
        profile.hourly_traffic(con, empty_hours="nothing")


def test_dst_day_in_a_non_utc_source(con, load_rows):
    """Rows logged in New York wall-clock time on 2026-03-08 (02:00 -> 03:00 spring forward)."""
    local = ["2026-03-08 01:30:00", "2026-03-08 01:59:59", "2026-03-08 03:00:00", "2026-03-08 03:30:00"]
    # what ingest does with a naive local timestamp: interpret it in the source zone, store UTC
    utc = [con.execute("select timezone('UTC', timezone('America/New_York', ?::timestamp))", [t]).fetchone()[0]
           for t in local]
    load_rows(con, [(t, 10, 1, "a", 200, None, None, 1) for t in utc])
    hourly = profile.hourly_traffic(con, "a").set_index("hour_utc")["requests"]
    # 01:xx EST = 06:xx UTC; 03:xx EDT = 07:xx UTC: adjacent UTC hours, no gap for the missing 02:xx
    assert hourly.to_dict() == {datetime(2026, 3, 8, 6): 2, datetime(2026, 3, 8, 7): 2}
    # with rows every hour of that local day, the local day has 23 hours
    load_rows(con, [(datetime(2026, 3, 8, 5) + pd.Timedelta(hours=h), 1, 1, "b", 200, None, None, 2)
                  for h in range(23)])
    day = profile.daily_traffic(con, "b", tz="America/New_York")
    assert day["observed_hours"].tolist() == [23]
    assert day["avg_qps"].iloc[0] == pytest.approx(23 / (23 * 3600))


def test_hour_boundaries_and_peak_second(con, load_rows):
    load_rows(con, [
        ("2026-03-01 10:59:59.999999", 1, 1, "a", 200, None, None, 1),
        ("2026-03-01 11:00:00.000000", 1, 1, "a", 200, None, None, 1),
        ("2026-03-01 11:00:00.999999", 1, 1, "a", 200, None, None, 1),
        ("2026-03-01 11:00:01.000000", 1, 1, "a", 200, None, None, 1),
    ])
    df = profile.hourly_traffic(con, "a").set_index("hour_utc")
    assert df["requests"].tolist() == [1, 3]
    assert df["peak_second_qps"].tolist() == [1.0, 2.0]
    assert df["concurrency_measured_peak"].isna().all()  # no latency logged


def test_concurrency_half_open_and_crossing_hours(con, load_rows):
    load_rows(con, [
        # [10:00:00, 10:00:02) then [10:00:02, 10:00:03): touching, never both in flight
        ("2026-03-01 10:00:00", 1, 1, "a", 200, 50.0, 2000.0, 1),
        ("2026-03-01 10:00:02", 1, 1, "a", 200, 50.0, 1000.0, 1),
        # a two-hour request from 10:30 to 12:30 is in flight in hours 10, 11 and 12
        ("2026-03-01 10:30:00", 1, 1, "b", 200, 50.0, 7_200_000.0, 1),
        ("2026-03-01 12:00:00", 1, 1, "a", 200, 50.0, 60_000.0, 1),
    ])
    df = profile.hourly_traffic(con).set_index(["model", "hour_utc"])["concurrency_measured_peak"]
    h = [datetime(2026, 3, 1, x) for x in (10, 11, 12)]
    assert df.loc["a"].loc[h[0]] == 1
    # hour 10: a's requests end at 10:00:03, before b starts; hour 12: b and the 12:00 request overlap
    assert [df.loc[("__all__", x)] for x in h] == [1, 1, 2]
    # b's span is its arrival hour: the hours it is only in flight show in '__all__'
    assert df.loc["b"].to_dict() == {h[0]: 1}


def test_token_percentiles_golden(con, load_rows):
    # 0..99 input tokens: p50 is the 50th smallest value, 49; p90 is 89; p99 is 98
    load_rows(con, [(f"2026-03-01 10:00:{i % 60:02d}", i, 0, "a", 200, None, None, 1) for i in range(100)])
    dist = profile.token_distribution(con, "day", "a").iloc[0]
    for name, exact in (("input_tokens_p50", 49), ("input_tokens_p90", 89), ("input_tokens_p99", 98)):
        assert dist[name] == pytest.approx(exact, rel=profile.HISTOGRAM_RELATIVE_ERROR), name
    assert dist["input_tokens_mean"] == pytest.approx(49.5)
    assert dist["output_tokens_p99"] == 0.0  # zero tokens land in bin [0, 1) and read back as 0


def test_sli_golden(con, load_rows):
    load_rows(con, [
        ("2026-03-01 10:00:00", 1, 1, "a", 200, 100.0, None, 1),   # good
        ("2026-03-01 10:00:01", 1, 1, "a", 200, 900.0, None, 1),   # valid, slow: bad
        ("2026-03-01 10:00:02", 1, 1, "a", 200, None, None, 1),    # good: no TTFT logged
        ("2026-03-01 10:00:03", 1, 1, "a", 404, 10.0, None, 1),    # client error: not valid
        ("2026-03-01 10:00:04", 1, 1, "a", 429, 10.0, None, 1),    # valid, bad
        ("2026-03-01 10:00:05", 1, 1, "a", 503, 10.0, None, 1),    # valid, bad
    ])
    row = profile.hourly_sli(con, ttft_threshold_ms=500.0, model="a").iloc[0]
    assert (row["valid_events"], row["good_events"]) == (5, 2)
    assert row["success_rate"] == pytest.approx(3 / 5)
    assert row["good_fraction"] == pytest.approx(2 / 5)
    # TTFT values 100, 900, 10, 10, 10: p50 is the 3rd smallest (10), p95 and p99 the 5th (900)
    assert row["ttft_p50_ms"] == pytest.approx(10, rel=profile.HISTOGRAM_RELATIVE_ERROR)
    assert row["ttft_p99_ms"] == pytest.approx(900, rel=profile.HISTOGRAM_RELATIVE_ERROR)


def test_period_traffic_and_typical_week(con, load_rows):
    # Monday 2026-03-02: 1 request at 00:xx, 3 at 12:xx UTC = 13:xx in Berlin; model b's first and last
    # rows make the log observe both hours whole (capplan.profile.exposure: rates over observed seconds)
    load_rows(con, [("2026-03-02 00:10:00", 1, 1, "a", 200, None, None, 1)]
            + [(f"2026-03-02 12:00:0{i}", 1, 1, "a", 200, None, None, 1) for i in range(3)]
            + [(t, 1, 1, "b", 200, None, None, 1) for t in ("2026-03-02 00:00:00", "2026-03-02 12:59:59.999999")])
    day = profile.daily_traffic(con, "a", tz="Europe/Berlin").iloc[0]
    assert day["requests"] == 4 and day["observed_hours"] == 2 and day["gap_hours"] == 11
    assert day["avg_qps"] == pytest.approx(4 / (2 * 3600))
    assert day["peak_hour_qps"] == pytest.approx(3 / 3600)
    assert day["peak_hour_to_avg"] == pytest.approx(1.5)
    assert day["peak_second_to_avg"] == pytest.approx(1 / (4 / 7200))
    assert (day["busiest_hour_of_day"], day["busiest_day_of_week"]) == (13, 1)
    week = profile.typical_week(con, "a", tz="Europe/Berlin").set_index("hour_of_week")
    assert len(week) == 168
    assert week.loc[13, "factor"] == pytest.approx(1.5) and week.loc[1, "factor"] == pytest.approx(0.5)
    assert week["factor"].notna().sum() == 2


@pytest.mark.parametrize(("call", "message"), [
    (lambda c: profile.token_distribution(c, "year"), "grain must be one of"),
    (lambda c: profile.histograms(c, "tokens"), "metric must be one of"),
    (lambda c: profile.daily_traffic(c, tz="Mars/Olympus"), "tz must be an IANA time zone"),
    (lambda c: profile.hourly_sli(c, 0.0), "ttft_threshold_ms must be > 0"),
])
def test_bad_arguments(con, call, message):
    with pytest.raises(ValueError, match=message):
        call(con)


ALPHA = profile.HISTOGRAM_RELATIVE_ERROR


def _both(raw: pd.DataFrame) -> pd.DataFrame:
    """Raw rows once per model and once as '__all__'."""
    return pd.concat([raw, raw.assign(model=profile.ALL_MODELS)], ignore_index=True)


@pytest.mark.slow
def test_hourly_traffic_matches_pandas(month):
    con, raw, _ = month
    got = profile.hourly_traffic(con).set_index(["hour_utc", "model"]).sort_index()
    rows = _both(raw).assign(error=lambda d: ~d["status"].between(200, 299),
                             second=lambda d: d["ts_utc"].dt.floor("s"))
    g = rows.groupby(["hour_utc", "model"])
    want = pd.DataFrame({
        "requests": g.size(), "errors": g["error"].sum(),
        "input_tokens_sum": g["input_tokens"].sum(), "output_tokens_sum": g["output_tokens"].sum(),
        "mean_ttft_ms": g["ttft_ms"].mean(), "mean_latency_ms": g["latency_ms"].mean(),
        "peak_second_qps": rows.groupby(["hour_utc", "model", "second"]).size().groupby(["hour_utc", "model"]).max(),
    }).sort_index()
    observed = got[~got["is_gap"]]
    assert observed.index.equals(want.index)  # gap hours are exactly the hours pandas finds no rows in
    for column in ("requests", "errors", "input_tokens_sum", "output_tokens_sum", "peak_second_qps"):
        np.testing.assert_array_equal(observed[column].to_numpy(float), want[column].to_numpy(float), column)
    for column in ("mean_ttft_ms", "mean_latency_ms"):
        np.testing.assert_allclose(observed[column].to_numpy(float), want[column].to_numpy(float), rtol=1e-9)


def _sweep_peaks(starts_us: np.ndarray, ends_us: np.ndarray, hours_us: np.ndarray) -> np.ndarray:
    """Peak in-flight count per hour by one global sweep (ends before starts at equal times)."""
    t = np.concatenate([starts_us, ends_us])
    delta = np.concatenate([np.ones_like(starts_us), -np.ones_like(ends_us)])
    order = np.lexsort((delta, t))
    t, level = t[order], np.cumsum(delta[order])
    peaks = []
    for h in hours_us:
        lo, hi = np.searchsorted(t, h, "left"), np.searchsorted(t, h + 3_600_000_000, "left")
        carried = np.count_nonzero((starts_us < h) & (ends_us > h))  # in flight as the hour starts
        peaks.append(max(carried, level[lo:hi].max(initial=0)))
    return np.array(peaks)


@pytest.mark.slow
@pytest.mark.parametrize("model", [profile.ALL_MODELS, "llama-3.1-70b"])
def test_measured_concurrency_matches_numpy_sweep(month, model):
    con, raw, _ = month
    got = profile.hourly_traffic(con, model).set_index("hour_utc")["concurrency_measured_peak"]
    rows = raw if model == profile.ALL_MODELS else raw[raw["model"] == model]
    rows = rows[rows["latency_ms"] > 0]
    starts = rows["ts_utc"].to_numpy("datetime64[us]").astype(np.int64)
    ends = starts + (rows["latency_ms"].to_numpy() * 1000).astype(np.int64)
    hours = got.index.to_numpy("datetime64[us]").astype(np.int64)
    np.testing.assert_array_equal(got.to_numpy(float), _sweep_peaks(starts, ends, hours).astype(float))


@pytest.mark.slow
@pytest.mark.parametrize("grain", ["day", "month"])
def test_token_percentiles_within_bound_of_exact(month, grain):
    con, raw, _ = month
    got = profile.token_distribution(con, grain).set_index(["period_start_utc", "model"])
    rows = _both(raw).assign(period=lambda d: d["ts_utc"].dt.to_period("M" if grain == "month" else "D").dt.start_time)
    for (period, model), part in rows.groupby(["period", "model"]):
        for metric in ("input_tokens", "output_tokens"):
            values = part[metric].to_numpy()
            for q in (0.5, 0.9, 0.99):
                # the ceil(q n)-th smallest value: numpy's 'inverted_cdf'
                exact = np.quantile(values, q, method="inverted_cdf")
                estimate = got.loc[(period, model), f"{metric}_p{round(q * 100)}"]
                assert abs(estimate - exact) <= ALPHA * exact + 1e-9, (period, model, metric, q)
            assert got.loc[(period, model), f"{metric}_mean"] == pytest.approx(values.mean(), rel=1e-12)


@pytest.mark.slow
def test_month_percentiles_against_duckdb_quantile_cont(month):
    """At real sizes neighbouring order statistics nearly coincide, so the bound holds against quantile_cont too."""
    con, _, _ = month
    exact = con.execute("""
        select model, quantile_cont(input_tokens, [0.5, 0.9, 0.99]) as i, quantile_cont(output_tokens, [0.5, 0.9, 0.99]) as o
        from requests group by grouping sets ((model), ())""").df()
    got = profile.token_distribution(con, "month").set_index("model")
    for row in exact.itertuples():
        model = row.model if isinstance(row.model, str) else profile.ALL_MODELS
        for metric, values in (("input_tokens", row.i), ("output_tokens", row.o)):
            for q, want in zip((50, 90, 99), values, strict=True):
                estimate = got.loc[model, f"{metric}_p{q}"]
                assert abs(estimate - want) <= ALPHA * want + 1.0, (model, metric, q, estimate, want)


@pytest.mark.slow
def test_sli_matches_pandas(month):
    con, raw, _ = month
    threshold = 1_500.0
    got = profile.hourly_sli(con, threshold).set_index(["hour_utc", "model"]).sort_index()
    rows = _both(raw)
    ok = rows["status"].between(200, 299)
    valid = ~rows["status"].between(400, 499) | rows["status"].isin([408, 429])  # sql/ddl_macro_sli_valid.sql
    good = ok & (rows["ttft_ms"].isna() | (rows["ttft_ms"] <= threshold))
    g = rows.assign(valid=valid, good=good, ok=ok).groupby(["hour_utc", "model"])
    np.testing.assert_array_equal(got["valid_events"], g["valid"].sum())
    np.testing.assert_array_equal(got["good_events"], g["good"].sum())
    np.testing.assert_allclose(got["success_rate"], g["ok"].sum() / g["valid"].sum(), rtol=1e-12)


@pytest.mark.slow
def test_daily_traffic_matches_pandas(month):
    con, raw, _ = month
    got = profile.daily_traffic(con, profile.ALL_MODELS).set_index("period_start_local")
    hourly = raw.groupby("hour_utc").size()
    daily = hourly.groupby(hourly.index.floor("D"))
    np.testing.assert_array_equal(got["requests"], daily.sum())
    # rates are over observed seconds: the first and last hours of the month are seconds short
    np.testing.assert_allclose(got["peak_hour_to_avg"], daily.max() / daily.mean(), rtol=5e-3)
    np.testing.assert_array_equal(got["busiest_hour_of_day"], daily.idxmax().dt.hour)


@pytest.mark.slow
def test_histogram_counts_add_up_to_requests(month):
    con, raw, _ = month
    for metric in ("input_tokens", "ttft_ms"):
        hist = profile.histograms(con, metric, "week")
        totals = hist.groupby("model")["count"].sum()
        want = _both(raw).dropna(subset=[metric]).groupby("model").size()
        pd.testing.assert_series_equal(totals.sort_index(), want.sort_index(), check_names=False)


def test_a_58_minute_log_over_two_hours_gives_its_real_rate(con, load_rows):
    """Issue 20: 12:31 to 13:29 over two UTC hours read 2.69 req/s (counted as 7,200 s) for a real 5.53."""
    ts = pd.date_range("2026-11-10 12:31:00", "2026-11-10 13:29:00", periods=19_250)
    load_rows(con, [(t.to_pydatetime(), 10, 1, "a", 200, None, None, 1) for t in ts])
    hourly = profile.hourly_traffic(con, "__all__")
    assert hourly["exposure_s"].tolist() == pytest.approx([29 * 60, 29 * 60])
    assert hourly["avg_qps"].tolist() == pytest.approx([h / 1740 for h in hourly["requests"]])
    summary = profile.profile_summary(con)
    assert summary["avg_qps"] == pytest.approx(19_250 / 3480) and summary["avg_qps"] == pytest.approx(5.53, abs=0.01)
    day = profile.daily_traffic(con, "__all__").iloc[0]
    assert day["avg_qps"] == pytest.approx(19_250 / 3480)
    assert day["peak_hour_to_avg"] >= 1


def test_hours_observed_for_under_ten_minutes_have_no_rate(con, load_rows):
    rows = [("2026-11-10 12:55:00", 1, 1, "a", 200, None, None, 1), ("2026-11-10 14:05:00", 1, 1, "a", 200, None, None, 1)]
    load_rows(con, rows)
    hourly = profile.hourly_traffic(con, "__all__").set_index("hour_utc")
    assert hourly["exposure_s"].tolist() == [300.0, 0.0, 300.0]  # the empty hour between is a gap
    # 5 minutes do not stand for an hour: no rate, though not a gap; the empty hour between is a gap
    assert hourly["avg_qps"].isna().all() and hourly["is_gap"].tolist() == [False, True, False]
    assert hourly["requests"].iloc[0] == 1 and hourly["requests"].iloc[2] == 1
