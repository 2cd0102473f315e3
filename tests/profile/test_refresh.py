"""Tests of capplan.profile.refresh: incremental and full refresh, the mergeable contract, windows.

Incremental refresh, full rebuild and merged partitions must give identical rollup tables.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as arrow
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capplan import profile
from capplan.db import connect
from capplan.profile import refresh
from capplan.profile.counting import log_bins


def test_refresh_is_incremental_and_idempotent(con, insert_rows, golden):
    insert_rows(con, golden[:4])
    assert profile.refresh_rollups(con) == 2  # hour 10, and 11 where a request is still in flight
    assert profile.refresh_rollups(con) == 0
    insert_rows(con, golden[4:])
    assert profile.refresh_rollups(con) == 1
    incremental = profile.hourly_traffic(con)
    profile.refresh_rollups(con, full=True)
    pd.testing.assert_frame_equal(incremental, profile.hourly_traffic(con))


def test_refresh_inside_the_callers_transaction(con, insert_rows, golden):
    con.begin()
    insert_rows(con, golden)
    assert profile.refresh_rollups(con, transaction=False) == 3
    con.rollback()  # the caller's rollback undoes rows and rollups together
    assert profile.refresh_rollups(con) == 0
    assert profile.hourly_traffic(con).empty


def test_rollup_partition_of_no_rows_gives_empty_tables(con, insert_rows, golden):
    insert_rows(con, golden)
    parts = profile.rollup_partition(con, "requests", start_utc=datetime(2027, 1, 1))  # after every row
    assert {name: table.num_rows for name, table in parts.items()} == {"fct_traffic_hourly": 0, "fct_histogram_hourly": 0}
    whole = profile.rollup_partition(con, "requests")
    for name, table in parts.items():
        assert table.schema.names == whole[name].schema.names
    merged = profile.merge_rollups(con, [parts, whole])
    # 10:00: a, b and all; 12:00: b and all
    assert merged["fct_traffic_hourly"].num_rows == whole["fct_traffic_hourly"].num_rows == 5


@pytest.mark.parametrize("window_rows", [1, 1_000])
def test_rollup_partition_sweeps_in_flight_in_the_same_scan(con, monkeypatch, window_rows, insert_rows,
                                                            golden):
    """With ``in_flight``, the partition's peak in flight per hour equals a refresh's, spill-over hours
    after the last arrival included, whatever the windows (one hour each with a budget of one row)."""
    rows = [*golden, ("2026-03-01 12:59:00.000", 5, 5, "a", 200, 10.0, 7_200_000.0, 2)]  # in flight until 14:59
    insert_rows(con, rows)
    monkeypatch.setattr(refresh, "ROLLUP_WINDOW_ROWS", window_rows)
    parts = profile.rollup_partition(con, "requests", in_flight=True)
    profile.refresh_rollups(con, full=True)
    for name, table in parts.items():
        keys = "hour_utc, model" + (", metric, bin" if name == "fct_histogram_hourly" else "")
        want = con.sql(f"select * from {name} order by {keys}").to_arrow_table()  # noqa: S608
        got = table.sort_by([(k.strip(), "ascending") for k in keys.split(",")])
        assert got.to_pylist() == want.to_pylist(), name
    peaks = {(r["hour_utc"].hour, r["model"]) for r in parts["fct_concurrency_hourly"].to_pylist()}
    assert {(13, "a"), (14, "a"), (14, profile.ALL_MODELS)} <= peaks  # hours without arrivals
    assert "fct_concurrency_hourly" not in profile.rollup_partition(con, "requests")


def test_rollup_partition_in_flight_stops_arrivals_at_its_end(con, insert_rows, golden):
    """The sweep runs past ``end_utc`` while requests are in flight; rows arriving after it count nowhere."""
    insert_rows(con, [*golden, ("2026-03-01 10:59:00.000", 5, 5, "a", 200, 10.0, 7_200_000.0, 1)])
    end = datetime(2026, 3, 1, 11)  # leaves out 12:30
    parts = profile.rollup_partition(con, "requests", end_utc=end, in_flight=True)
    plain = profile.rollup_partition(con, "requests", end_utc=end)
    assert parts["fct_traffic_hourly"].to_pylist() == plain["fct_traffic_hourly"].to_pylist()
    assert parts["fct_histogram_hourly"].to_pylist() == plain["fct_histogram_hourly"].to_pylist()
    peaks = {(r["hour_utc"].hour, r["model"]): r["concurrency_peak"] for r in parts["fct_concurrency_hourly"].to_pylist()}
    # the 10:59 request runs until 12:59; the 12:30 arrival (after end_utc) is not in flight with it
    assert peaks[(12, profile.ALL_MODELS)] == 1 and (12, "b") not in peaks


def test_rollup_partition_in_flight_from_mid_hour(con, insert_rows):
    """A range starting inside an hour: earlier rows of that hour feed the sweep only, and requests of
    the source that arrived before the range (longer than any inside it) are still in flight in it."""
    insert_rows(con, [("2026-03-01 09:00:00", 1, 1, "a", 200, 1.0, 7_200_000.0, 1),    # in flight 09:00-11:00
                  ("2026-03-01 10:25:00", 1, 1, "a", 200, 1.0, 5_000.0, 1),
                  ("2026-03-01 10:40:00", 1, 1, "a", 200, 1.0, 5_000.0, 1),
                  ("2026-03-01 11:05:00", 1, 1, "a", 200, 1.0, 600_000.0, 1)])
    start = datetime(2026, 3, 1, 10, 30)
    parts = profile.rollup_partition(con, "requests", start_utc=start, in_flight=True)
    plain = profile.rollup_partition(con, "requests", start_utc=start)
    assert parts["fct_traffic_hourly"].to_pylist() == plain["fct_traffic_hourly"].to_pylist()
    assert [r["requests"] for r in plain["fct_traffic_hourly"].to_pylist() if r["model"] == "a"] == [1, 1]
    peaks = {(r["hour_utc"].hour, r["model"]): r["concurrency_peak"] for r in parts["fct_concurrency_hourly"].to_pylist()}
    # 10:25 and 10:40 each overlap the 09:00 request (a 600 s lookback would have missed it): 2;
    # 11:00 sees the 09:00 request end exactly then (half-open), 11:05 alone: 1
    assert (peaks[(10, "a")], peaks[(11, "a")]) == (2, 1)


def test_rollup_partition_before_1970(con, insert_rows):
    """Hours before the epoch (negative hour numbers) are floored, not truncated toward zero."""
    insert_rows(con, [("1969-12-31 23:30:00", 3, 2, "a", 200, 1.0, 10.0, 1), ("1970-01-01 00:10:00", 4, 1, "a", 200, 1.0, 10.0, 1)])
    traffic = profile.rollup_partition(con, "requests", in_flight=True)["fct_traffic_hourly"].to_pylist()
    assert [(r["hour_utc"], r["requests"]) for r in traffic if r["model"] == "a"] == [
        (datetime(1969, 12, 31, 23), 1), (datetime(1970, 1, 1), 1)]


@pytest.mark.slow
def test_incremental_equals_full_rebuild_and_survives_a_replaced_file(month, rollup_tables):
    con, _, _ = month
    incremental = rollup_tables(con)
    profile.refresh_rollups(con, full=True)
    for name, frame in rollup_tables(con).items():
        pd.testing.assert_frame_equal(frame, incremental[name], obj=name)
    # replace file 5 by half of its rows, as `ingest --on-changed-file replace` would
    con.execute("create temp table keep as select * from requests where file_id = 5")
    con.execute("delete from request_rows where file_id = 5")
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select * exclude (file_id), 99 as file_id from keep where hash(ts_utc) % 2 = 0")
    try:
        touched = profile.refresh_rollups(con)
        assert 24 <= touched <= 26  # that day, and the hour after it where requests may still be in flight
        after_incremental = rollup_tables(con)
        profile.refresh_rollups(con, full=True)
        for name, frame in rollup_tables(con).items():
            pd.testing.assert_frame_equal(frame, after_incremental[name], obj=name)
    finally:
        con.execute("delete from request_rows where file_id = 99")
        con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select * from keep")  # restore for the other tests
        con.execute("drop table keep")
        profile.refresh_rollups(con)


@pytest.mark.slow
@pytest.mark.parametrize(("window_rows", "window_hours", "insert_rows", "window_cells"),
                         [(300, 24, 1_000_000, 1 << 20), (1, 24, 1, 1 << 20), (10_000, 5, 5_000, 1 << 20),
                          (10_000, 24, 1_000_000, 3 * 3600)])
def test_window_sizes_do_not_change_the_rollups(month, monkeypatch, window_rows, window_hours, insert_rows,
                                                window_cells, rollup_tables):
    """Windows cut by the row budget (down to one hour each, spans carried across every boundary), by
    hours or by the seconds × models budget, and inserts gathered or not, give the same tables."""
    con, _, _ = month
    before = rollup_tables(con)
    monkeypatch.setattr(refresh, "ROLLUP_WINDOW_CELLS", window_cells)
    monkeypatch.setattr(refresh, "ROLLUP_WINDOW_ROWS", window_rows)
    monkeypatch.setattr(refresh, "ROLLUP_WINDOW_HOURS", window_hours)
    monkeypatch.setattr(refresh._InsertBuffer, "ROWS", insert_rows)
    profile.refresh_rollups(con, full=True)
    for name, frame in rollup_tables(con).items():
        pd.testing.assert_frame_equal(frame, before[name], obj=name)


@pytest.mark.slow
def test_merged_week_partitions_equal_single_process(month, rollup_tables):
    con, _, folder = month
    parts = []
    for path in sorted(folder.glob("*.parquet")):
        with duckdb.connect() as part_con:  # a fresh DuckDB per partition, as a Dask worker would use
            parts.append(profile.rollup_partition(part_con, path))
    merged = profile.merge_rollups(connect(), parts)
    whole = rollup_tables(con)
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


@pytest.mark.slow
def test_more_models_than_a_smallint_holds(con):
    """70,000 distinct models (LoRA adapters, tenants), a few with many rows in one second: every figure
    exact against a direct pandas computation over the raw rows (the model index was a 16-bit integer)."""
    rng = np.random.default_rng(7)
    n_models, extra = 70_000, 6_000
    model = np.concatenate([np.arange(n_models), rng.integers(0, 50, extra)])  # models 0..49 are busy
    offset_ms = np.concatenate([rng.integers(0, 3 * 3_600_000, n_models), rng.integers(0, 2_000, extra)])
    latency = rng.choice([np.nan, 5.0, 900.0, 4_000_000.0], len(model))  # up to 67 min: across hour starts
    con.register("raw_rows", pd.DataFrame({
        "ts_utc": (pd.Timestamp("2026-03-01") + pd.to_timedelta(offset_ms, "ms")).astype("datetime64[us]"),
        "input_tokens": rng.integers(0, 9_000, len(model)), "output_tokens": rng.integers(0, 900, len(model)),
        "model": [f"m{m:05d}" for m in model], "status": rng.choice([200, 200, 404, 429, 500], len(model)),
        "ttft_ms": np.where(np.isnan(latency), np.nan, 1.5), "latency_ms": latency, "file_id": 1}))
    con.execute("insert into request_rows by name select * from raw_rows")
    profile.refresh_rollups(con)
    got = con.sql("select * from fct_traffic_hourly order by hour_utc, model").df()
    raw = con.sql("select * from requests").df()
    both = pd.concat([raw, raw.assign(model=profile.ALL_MODELS)], ignore_index=True)
    both["hour_utc"] = both["ts_utc"].dt.floor("h")
    g = both.groupby(["hour_utc", "model"])
    assert got["model"].nunique() == n_models + 1
    assert got.set_index(["hour_utc", "model"]).index.equals(g.size().index)
    np.testing.assert_array_equal(got["requests"], g.size())
    np.testing.assert_array_equal(got["errors"], (~both["status"].between(200, 299)).groupby(
        [both["hour_utc"], both["model"]]).sum())
    np.testing.assert_array_equal(got["input_tokens_sum"], g["input_tokens"].sum())
    np.testing.assert_array_equal(got["latency_count"], g["latency_ms"].count())
    np.testing.assert_allclose(got["latency_ms_sum"], g["latency_ms"].sum(), rtol=1e-12)
    peak = both.assign(second=both["ts_utc"].dt.floor("s")).groupby(["hour_utc", "model", "second"]).size()
    np.testing.assert_array_equal(got["peak_second_requests"], peak.groupby(["hour_utc", "model"]).max())
    assert got["peak_second_requests"].max() > 1  # the busy models' seconds
    # histograms: every (hour, model, bin) of input tokens and latency, against numpy's bins of the raw rows
    hist = con.sql("select * from fct_histogram_hourly").df()
    for metric in ("input_tokens", "latency_ms"):
        values = both.dropna(subset=[metric])
        want = values.assign(bin=log_bins(values[metric].to_numpy(float), 1 / math.log(profile.HISTOGRAM_GAMMA)))
        want = want.groupby(["hour_utc", "model", "bin"]).size().rename("count").reset_index()
        mine = hist[hist["metric"] == metric].drop(columns="metric").sort_values(["hour_utc", "model", "bin"])
        pd.testing.assert_frame_equal(mine.reset_index(drop=True), want, check_dtype=False)
    # in flight per model: the most spans covering an hour start or an arrival of the model in the hour
    spans = raw[raw["latency_ms"] > 0].assign(end=lambda f: f["ts_utc"] + pd.to_timedelta(f["latency_ms"], "ms"))
    hour_starts = [pd.DataFrame({"model": spans["model"], "t": spans["ts_utc"].dt.floor("h") + pd.Timedelta(hours=k),
                                 "end": spans["end"]}) for k in (1, 2)]  # a span crosses at most two
    instants = pd.concat([spans[["model", "ts_utc"]].rename(columns={"ts_utc": "t"}),
                          *[h[h["t"] < h["end"]].drop(columns="end") for h in hour_starts]]).drop_duplicates()
    pairs = instants.merge(spans[["model", "ts_utc", "end"]], on="model")
    pairs = pairs[(pairs["ts_utc"] <= pairs["t"]) & (pairs["end"] > pairs["t"])]
    want = (pairs.groupby(["model", "t"]).size().rename("n").reset_index()
            .assign(hour_utc=lambda f: f["t"].dt.floor("h")).groupby(["hour_utc", "model"])["n"].max())
    mine = (con.sql("select * from fct_concurrency_hourly where model <> '__all__'").df()
            .set_index(["hour_utc", "model"])["concurrency_peak"].sort_index())
    pd.testing.assert_series_equal(mine, want.sort_index(), check_names=False, check_dtype=False)


def test_histograms_are_stored_as_lists_and_read_one_row_per_bin(con, insert_rows, golden):
    """The bins of each (hour, model) are one row of fct_histogram_hourly_bins, each metric's ascending; the
    view fct_histogram_hourly shows them one row per bin, the same rows as rollup_partition's table."""
    insert_rows(con, golden)
    profile.refresh_rollups(con)
    stored = con.sql("select * from fct_histogram_hourly_bins").df()
    assert stored.groupby(["hour_utc", "model"]).size().max() == 1
    for metric in profile.METRICS:
        for codes in stored[f"{metric}_codes"]:  # count << 16 | (bin + 1), ascending by bin
            bins, counts = [c & 0xFFFF for c in codes], [c >> 16 for c in codes]
            assert bins == sorted(set(bins)) and all(0 < c < 32_768 for c in counts)
        assert not any(len(codes) for codes in stored[f"{metric}_codes_large"])  # no count of 32,768 here
    assert all(len(b) for b in stored["input_tokens_codes"])  # every request has tokens; golden has no TTFT somewhere
    assert not all(len(b) for b in stored["ttft_ms_codes"])
    keys = ["hour_utc", "model", "metric", "bin"]
    view = con.sql("select * from fct_histogram_hourly").df().sort_values(keys, ignore_index=True)
    want = profile.rollup_partition(con, "requests")["fct_histogram_hourly"]
    want = want.to_pandas().sort_values(keys, ignore_index=True)
    pd.testing.assert_frame_equal(view, want, check_dtype=False)


def test_histogram_rows_of_any_count_are_stored_and_read_back(con):
    """store_histogram_rows (a partition merge, a metrics chunk) packs counts below 32,768 and above it (the
    int32 and the int64 code lists) and bins -1 to 32,767; the view shows the same rows."""
    profile.refresh.ensure_tables(con)
    hour = datetime(2026, 1, 1)
    rows = arrow.table({"hour_utc": [hour] * 5, "model": ["m"] * 5,
                        "metric": ["input_tokens", "input_tokens", "input_tokens", "latency_ms", "latency_ms"],
                        "bin": arrow.array([-1, 7, 32_767, 0, 3], arrow.int16()),
                        "count": arrow.array([1, 32_767, 32_768, 2**40, 5], arrow.int64())})
    refresh.store_histogram_rows(con, rows)
    stored = con.sql("select input_tokens_codes, input_tokens_codes_large, latency_ms_codes, latency_ms_codes_large, "
                     "output_tokens_codes from fct_histogram_hourly_bins").fetchall()
    assert stored == [([1 * 65_536 + 0, 32_767 * 65_536 + 8], [32_768 * 65_536 + 32_768], [5 * 65_536 + 4],
                       [2**40 * 65_536 + 1], [])]
    view = con.sql("select * from fct_histogram_hourly order by metric, bin").to_arrow_table()
    assert view.schema.field("bin").type == arrow.int16() and view.schema.field("count").type == arrow.int64()
    assert view.to_pylist() == rows.sort_by([("metric", "ascending"), ("bin", "ascending")]).to_pylist()


def _bins_in_order(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """Every row of the view fct_histogram_hourly, in one order."""
    return con.sql("select * from fct_histogram_hourly order by hour_utc, model, metric, bin").fetchall()


_TWO_LISTS_TABLE = "create table fct_histogram_hourly_bins as select hour_utc, model, " + ", ".join(
    f"coalesce(list(bin order by bin) filter (where metric = '{m}'), [])::smallint[] as {m}_bins, "
    f"coalesce(list(count order by bin) filter (where metric = '{m}'), [])::bigint[] as {m}_counts"
    for m in profile.METRICS) + " from old_rows group by hour_utc, model"
"""The layout of sessions 9-10: each metric's bins and counts as two lists."""
_TWO_LISTS_VIEW = "create view fct_histogram_hourly as " + " union all ".join(
    f"select hour_utc, model, '{m}' as metric, unnest({m}_bins) as bin, unnest({m}_counts) as count "
    "from fct_histogram_hourly_bins" for m in profile.METRICS)


def test_histograms_in_two_lists_per_metric_are_migrated_in_place(con, insert_rows, golden):
    """A database whose fct_histogram_hourly_bins holds each metric's bins and counts as two lists (written
    before each bin and its count were one code) keeps its bins: ensure_tables packs them as codes."""
    insert_rows(con, golden)
    profile.refresh_rollups(con)
    before = _bins_in_order(con)
    con.execute("create table old_rows as select * from fct_histogram_hourly")
    con.execute("drop view fct_histogram_hourly")
    con.execute("drop table fct_histogram_hourly_bins")
    con.execute(_TWO_LISTS_TABLE)
    con.execute(_TWO_LISTS_VIEW)
    con.execute("drop table old_rows")
    assert _bins_in_order(con) == before
    with pytest.raises(profile.ProfileError, match="older layout"):
        profile.require_current_rollups(con)
    refresh.ensure_tables(con)
    columns = {r[0] for r in con.sql("select column_name from duckdb_columns() "
                                     "where table_name = 'fct_histogram_hourly_bins'").fetchall()}
    assert "input_tokens_codes" in columns and "input_tokens_counts" not in columns
    assert _bins_in_order(con) == before
    profile.require_current_rollups(con)
    assert profile.refresh_rollups(con) == 0  # the roll-ups are current as they were
    assert _bins_in_order(con) == before


def test_an_old_histogram_table_is_migrated_in_place(con, insert_rows, golden):
    """A database whose fct_histogram_hourly is a table of one row per bin (written before the bins were
    stored as lists) keeps its bins: ensure_tables packs them, drops the table and creates the view."""
    insert_rows(con, golden)
    profile.refresh_rollups(con)
    before = _bins_in_order(con)
    con.execute("create table old_bins as select * from fct_histogram_hourly")
    con.execute("drop view fct_histogram_hourly")
    con.execute("drop table fct_histogram_hourly_bins")
    con.execute("alter table old_bins rename to fct_histogram_hourly")
    refresh.ensure_tables(con)
    kinds = dict(con.sql("select table_name, table_type from information_schema.tables").fetchall())
    assert kinds["fct_histogram_hourly"] == "VIEW" and kinds["fct_histogram_hourly_bins"] == "BASE TABLE"
    assert _bins_in_order(con) == before
    assert profile.refresh_rollups(con) == 0  # the roll-ups are current as they were
    assert _bins_in_order(con) == before


def test_incremental_refresh_reads_back_the_requests_in_flight_from_other_files(con, insert_rows, rollup_tables):
    """A day's refresh reads back only the files still in flight at its first hour (sql/int_profile_lookback.sql),
    over their longest latency: file 1's 3-hour request from 23:30 is in flight at 01:00, when file 2's only
    request arrives (01:10, 1 s), so model a's peak in hour 01 is 2 (hand count), as a full rebuild finds."""
    insert_rows(con, [("2026-03-01 23:30:00", 10, 1, "a", 200, 5.0, 3 * 3_600_000.0, 1),
                      ("2026-03-01 22:00:00", 10, 1, "b", 200, 5.0, 20.0, 1)])
    profile.refresh_rollups(con)
    insert_rows(con, [("2026-03-02 01:10:00", 10, 1, "a", 200, 5.0, 1_000.0, 2)])
    assert profile.refresh_rollups(con) == 1  # hour 01 only
    incremental = rollup_tables(con)
    peaks = incremental["fct_concurrency_hourly"].set_index(["hour_utc", "model"])["concurrency_peak"]
    assert peaks[(pd.Timestamp("2026-03-02 01:00"), "a")] == 2
    profile.refresh_rollups(con, full=True)
    for name, table in rollup_tables(con).items():
        pd.testing.assert_frame_equal(incremental[name], table, check_exact=True)


def _rollups_except_all(con: duckdb.DuckDBPyConnection, kept: str) -> dict[str, tuple[int, int, int]]:
    """Per stored roll-up table: its rows, and the rows of ``except all`` with the copy ``<kept>_<table>``
    each way (0 and 0: the same rows, duplicates counted)."""
    out = {}
    for table in ("fct_traffic_hourly", "fct_histogram_hourly_bins", "fct_histogram_hourly", "fct_concurrency_hourly",
                  "profile_file_hours"):
        out[table] = con.execute(
            f"select (select count(*) from {table}),"
            f" (select count(*) from (select * from {table} except all select * from {kept}_{table})),"
            f" (select count(*) from (select * from {kept}_{table} except all select * from {table}))").fetchall()[0]
    return out


def _rebuild_old_and_new_windows(con: duckdb.DuckDBPyConnection, monkeypatch) -> dict[str, tuple[int, int, int]]:
    """Rebuild with the windows of before (no thin windows joined), keep the tables, rebuild with thin windows
    joined: the rows of each table and of ``except all`` both ways."""
    with monkeypatch.context() as patch:
        patch.setattr(refresh, "ROLLUP_THIN_ROWS", 0)
        profile.refresh_rollups(con, full=True)
    for table in ("fct_traffic_hourly", "fct_histogram_hourly_bins", "fct_histogram_hourly", "fct_concurrency_hourly",
                  "profile_file_hours"):
        con.execute(f"create or replace temp table old_{table} as select * from {table}")
    profile.refresh_rollups(con, full=True)
    return _rollups_except_all(con, "old")


def _window_count(con: duckdb.DuckDBPyConnection) -> int:
    """The windows a full rebuild of ``requests`` is cut into."""
    first, last = con.execute("select min(ts_utc), max(ts_utc) from requests").fetchall()[0]
    refresh._use_source(con, "requests")
    models = con.execute("select count(distinct model) from requests").fetchall()[0][0]
    return len(refresh._windows(con, first.replace(minute=0, second=0, microsecond=0), last + timedelta(hours=1),
                                models))


@pytest.mark.slow
def test_thin_windows_joined_give_the_tables_of_day_windows(month, monkeypatch):
    """Few rows an hour (the generated month: ~170): the 31 days were 30 windows of 25 hours, now one window
    counted sparsely; the rebuilt tables are the same rows (``except all`` both ways, floats exactly)."""
    con, _, _ = month
    try:
        assert _window_count(con) == 1
        with monkeypatch.context() as patch:
            patch.setattr(refresh, "ROLLUP_THIN_ROWS", 0)
            assert _window_count(con) == 30
        for table, (rows, new_only, old_only) in _rebuild_old_and_new_windows(con, monkeypatch).items():
            assert rows > 0 and new_only == old_only == 0, table
    finally:
        profile.refresh_rollups(con)


@pytest.mark.slow
def test_thin_windows_joined_give_the_tables_of_day_windows_on_the_bundled_sample(con, monkeypatch):
    """The bundled sample (data/sample: 489,800 rows over 92 days, ~220 an hour), its three files loaded as
    `capplan ingest` stores them: one window instead of 89, the same tables."""
    sample = sorted((Path(__file__).resolve().parents[2] / "data" / "sample").glob("requests-*.parquet"))
    assert len(sample) == 3
    for file_id, path in enumerate(sample, start=1):
        con.execute("insert into request_rows by name select ts_utc::timestamp as ts_utc, * exclude (ts_utc),"
                    " ? as file_id from read_parquet(?)", [file_id, str(path)])
    assert con.execute("select count(*) from requests").fetchall()[0][0] == 489_800
    assert _window_count(con) == 1
    for table, (rows, new_only, old_only) in _rebuild_old_and_new_windows(con, monkeypatch).items():
        assert rows > 0 and new_only == old_only == 0, table
