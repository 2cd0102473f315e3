"""The profile of a generated month against independent pandas/numpy computations, and its invariants.

Counts and sums must agree exactly; histogram percentiles within HISTOGRAM_RELATIVE_ERROR of the
exact order statistic; incremental refresh, full rebuild and merged partitions must give identical
rollup tables.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capplan import sql
from capplan import profile
from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.sample import SampleSpec, iter_days

pytestmark = pytest.mark.slow

SPEC = SampleSpec(start=date(2026, 1, 1), days=31, requests_per_day=4_000, seed=11)
ALPHA = profile.HISTOGRAM_RELATIVE_ERROR


def _tables(con) -> dict[str, pd.DataFrame]:
    """Every rollup table, sorted, for exact comparison."""
    keys = {"fct_traffic_hourly": ["hour_utc", "model"], "fct_histogram_hourly": ["hour_utc", "model", "metric", "bin"],
            "fct_concurrency_hourly": ["hour_utc", "model"]}
    return {t: con.table(t).df().sort_values(k, ignore_index=True) for t, k in keys.items()}


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    """A generated month loaded day by day (file_id = day) and refreshed as it grows; raw rows in pandas;
    weekly Parquet partitions of whole days in a folder."""
    folder = tmp_path_factory.mktemp("month")
    con = connect()
    ensure_tables(con)
    for i, chunk in enumerate(iter_days(SPEC), start=1):
        con.register("chunk", chunk.table)
        con.execute("insert into request_rows by name select *, ? as file_id from chunk", [i])
        con.unregister("chunk")
        if i % 10 == 0 or i == SPEC.days:
            profile.refresh_rollups(con)  # incremental: a few days at a time, as after daily ingests
    for week, first_day in enumerate(range(1, SPEC.days + 1, 7)):  # partitions of whole days
        con.execute("copy (select * from requests where file_id between ? and ?) to ? (format parquet)",
                    [first_day, first_day + 6, str(folder / f"week-{week}.parquet")])
    raw = con.execute("select * from requests").df()
    raw["hour_utc"] = raw["ts_utc"].dt.floor("h")
    yield con, raw, folder
    con.close()


def _both(raw: pd.DataFrame) -> pd.DataFrame:
    """Raw rows once per model and once as '__all__'."""
    return pd.concat([raw, raw.assign(model=profile.ALL_MODELS)], ignore_index=True)


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


def test_daily_traffic_matches_pandas(month):
    con, raw, _ = month
    got = profile.daily_traffic(con, profile.ALL_MODELS).set_index("period_start_local")
    hourly = raw.groupby("hour_utc").size()
    daily = hourly.groupby(hourly.index.floor("D"))
    np.testing.assert_array_equal(got["requests"], daily.sum())
    np.testing.assert_allclose(got["peak_hour_to_avg"], daily.max() / daily.mean(), rtol=1e-12)
    np.testing.assert_array_equal(got["busiest_hour_of_day"], daily.idxmax().dt.hour)


def test_histogram_counts_add_up_to_requests(month):
    con, raw, _ = month
    for metric in ("input_tokens", "ttft_ms"):
        hist = profile.histograms(con, metric, "week")
        totals = hist.groupby("model")["count"].sum()
        want = _both(raw).dropna(subset=[metric]).groupby("model").size()
        pd.testing.assert_series_equal(totals.sort_index(), want.sort_index(), check_names=False)


def test_incremental_equals_full_rebuild_and_survives_a_replaced_file(month):
    con, _, _ = month
    incremental = _tables(con)
    profile.refresh_rollups(con, full=True)
    for name, frame in _tables(con).items():
        pd.testing.assert_frame_equal(frame, incremental[name], obj=name)
    # replace file 5 by half of its rows, as `ingest --on-changed-file replace` would
    con.execute("create temp table keep as select * from requests where file_id = 5")
    con.execute("delete from request_rows where file_id = 5")
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select * exclude (file_id), 99 as file_id from keep where hash(ts_utc) % 2 = 0")
    try:
        touched = profile.refresh_rollups(con)
        assert 24 <= touched <= 26  # that day, and the hour after it where requests may still be in flight
        after_incremental = _tables(con)
        profile.refresh_rollups(con, full=True)
        for name, frame in _tables(con).items():
            pd.testing.assert_frame_equal(frame, after_incremental[name], obj=name)
    finally:
        con.execute("delete from request_rows where file_id = 99")
        con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select * from keep")  # restore for the other tests
        con.execute("drop table keep")
        profile.refresh_rollups(con)


@pytest.mark.parametrize(("window_rows", "window_hours", "insert_rows", "window_cells"),
                         [(300, 24, 1_000_000, 1 << 20), (1, 24, 1, 1 << 20), (10_000, 5, 5_000, 1 << 20),
                          (10_000, 24, 1_000_000, 3 * 3600)])
def test_window_sizes_do_not_change_the_rollups(month, monkeypatch, window_rows, window_hours, insert_rows,
                                                window_cells):
    """Windows cut by the row budget (down to one hour each, spans carried across every boundary), by
    hours or by the seconds × models budget, and inserts gathered or not, give the same tables."""
    con, _, _ = month
    before = _tables(con)
    monkeypatch.setattr(profile, "ROLLUP_WINDOW_CELLS", window_cells)
    monkeypatch.setattr(profile, "ROLLUP_WINDOW_ROWS", window_rows)
    monkeypatch.setattr(profile, "ROLLUP_WINDOW_HOURS", window_hours)
    monkeypatch.setattr(profile._InsertBuffer, "ROWS", insert_rows)
    profile.refresh_rollups(con, full=True)
    for name, frame in _tables(con).items():
        pd.testing.assert_frame_equal(frame, before[name], obj=name)


def test_merged_week_partitions_equal_single_process(month):
    con, _, folder = month
    parts = []
    for path in sorted(folder.glob("*.parquet")):
        with duckdb.connect() as part_con:  # a fresh DuckDB per partition, as a Dask worker would use
            parts.append(profile.rollup_partition(part_con, path))
    merged = profile.merge_rollups(connect(), parts)
    whole = _tables(con)
    for name, keys in (("fct_traffic_hourly", ["hour_utc", "model"]),
                       ("fct_histogram_hourly", ["hour_utc", "model", "metric", "bin"])):
        got = merged[name].to_pandas().sort_values(keys, ignore_index=True)
        pd.testing.assert_frame_equal(got, whole[name], obj=name, check_dtype=False)


_ROW = st.tuples(
    st.integers(0, 4 * 3_600_000_000 - 1),            # arrival, us after 2026-01-01
    st.integers(0, 5000), st.integers(0, 500),         # input, output tokens
    st.sampled_from(["a", "b"]), st.sampled_from([200, 200, 429, 500]),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(_ROW, min_size=1, max_size=60), split_hour=st.integers(1, 3))
def test_rollups_merge_over_any_hour_aligned_split(rows, split_hour):
    con = connect()
    t0 = datetime(2026, 1, 1)
    frame = pd.DataFrame({
        "ts_utc": [t0 + timedelta(microseconds=r[0]) for r in rows],
        "input_tokens": [r[1] for r in rows], "output_tokens": [r[2] for r in rows],
        "model": [r[3] for r in rows], "status": [r[4] for r in rows],
    }).astype({"input_tokens": "int32", "output_tokens": "int32", "status": "int16"})
    frame = frame.assign(ttft_ms=np.nan, latency_ms=np.nan)
    split = t0 + timedelta(hours=split_hour)
    whole = profile.rollup_partition(con, con.from_df(frame))
    parts = [profile.rollup_partition(con, con.from_df(frame), end_utc=split),
             profile.rollup_partition(con, con.from_df(frame), start_utc=split)]
    merged = profile.merge_rollups(con, parts)
    traffic = whole["fct_traffic_hourly"].to_pandas().sort_values(["hour_utc", "model"], ignore_index=True)
    pd.testing.assert_frame_equal(
        merged["fct_traffic_hourly"].to_pandas().sort_values(["hour_utc", "model"], ignore_index=True),
        traffic, check_dtype=False)
    everything = traffic[traffic["model"] == profile.ALL_MODELS].set_index("hour_utc")
    by_model = traffic[traffic["model"] != profile.ALL_MODELS].groupby("hour_utc")
    pd.testing.assert_series_equal(everything["requests"], by_model["requests"].sum(), check_names=False)
    assert (traffic["peak_second_requests"] <= traffic["requests"]).all()
    assert (everything["peak_second_requests"] >= by_model["peak_second_requests"].max()).all()
    assert int(everything["requests"].sum()) == len(rows)
