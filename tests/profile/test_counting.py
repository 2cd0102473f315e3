"""Tests of capplan.profile.counting: the numpy counting kernel of the profile's hourly rollups."""

from __future__ import annotations

import math
from datetime import date, datetime

import duckdb
import numpy as np
import pandas as pd
import pyarrow as arrow
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from capplan import profile
from capplan.profile.counting import (
    US_PER_HOUR,
    WindowRollup,
    _code_counts,
    _distinct,
    _TokenBins,
    log_bins,
    peak_in_flight_by_model,
    peak_in_flight_sparse,
    plan_windows,
    sparse_sweep_max_hours,
)
from capplan.sample import SampleSpec, generate_day

INV_LN_GAMMA = 1 / math.log(profile.HISTOGRAM_GAMMA)
SQL_BIN = "select greatest(floor(ln(greatest(x, 0.5)) * $inv), -1)::smallint as bin from v"
T0_HOUR = int((datetime(2026, 1, 1) - datetime(1970, 1, 1)).total_seconds()) // 3600


@pytest.mark.parametrize(("value", "want"), [(0, -1), (0.4, -1), (1, 0), (2, 35), (100, 232), (131_072, 595)])
def test_log_bins_golden(value, want):
    # floor(ln(x) / ln 1.02): ln 2 / ln 1.02 = 35.00, ln 100 / ln 1.02 = 232.56, ln 2^17 / ln 1.02 = 595.4
    assert log_bins(np.array([value], float), INV_LN_GAMMA)[0] == want


def test_log_bins_equal_the_sql_formula_at_every_edge_and_token_count():
    """numpy's log and DuckDB's ln bin alike: every token count to 2^20, floats around each edge γ^k."""
    rng = np.random.default_rng(3)
    edges = profile.HISTOGRAM_GAMMA ** np.arange(-5, 1200)
    values = np.concatenate([np.arange(1 << 20, dtype=float), edges, np.nextafter(edges, 0), rng.lognormal(6, 3, 100_000)])
    with duckdb.connect() as con:
        con.register("v", arrow.table({"x": values}))
        want = con.sql(SQL_BIN, params={"inv": INV_LN_GAMMA}).fetchnumpy()["bin"]
    np.testing.assert_array_equal(log_bins(values, INV_LN_GAMMA), want)


@settings(max_examples=40, deadline=None)
@given(tokens=st.lists(st.integers(0, 2**31 - 1) | st.integers(0, 5000), min_size=1, max_size=50))
def test_token_table_equals_direct_bins(tokens):
    values = np.array(tokens, np.int32)
    bins = _TokenBins(INV_LN_GAMMA)
    np.testing.assert_array_equal(bins(values), log_bins(values.astype(float), INV_LN_GAMMA))
    np.testing.assert_array_equal(bins(values[::-1]), log_bins(values[::-1].astype(float), INV_LN_GAMMA))


def _rows(frame: pd.DataFrame, models: list[str]) -> arrow.RecordBatch:
    """The columns of sql/int_profile_rows.sql from a frame of raw rows."""
    status = frame["status"].to_numpy()
    status_class = np.where((status >= 200) & (status < 300), 0,
                            np.where((status >= 400) & (status < 500) & ~np.isin(status, [408, 429]), 1, 2))
    return arrow.RecordBatch.from_pydict({
        "ts_us": arrow.array(frame["ts_utc"].to_numpy("datetime64[us]").astype(np.int64)),
        "model_index": arrow.array(frame["model"].map({m: i for i, m in enumerate(models)}).to_numpy(), arrow.uint16()),
        "status_class": arrow.array(status_class, arrow.uint8()),
        "input_tokens": arrow.array(frame["input_tokens"].to_numpy(), arrow.int32()),
        "output_tokens": arrow.array(frame["output_tokens"].to_numpy(), arrow.int32()),
        "ttft_ms": arrow.array(frame["ttft_ms"].to_numpy(), arrow.float64()),  # NaN when not logged, as the SQL
        "latency_ms": arrow.array(frame["latency_ms"].to_numpy(), arrow.float64()),
    })


@pytest.fixture(scope="module")
def day() -> pd.DataFrame:
    """One generated day (about 20,000 rows, three models, incidents), a few TTFTs not logged."""
    rows = generate_day(SampleSpec(date(2026, 1, 1), 1, 20_000, seed=5), date(2026, 1, 1)).table.to_pandas()
    rows["ts_utc"] = rows["ts_utc"].dt.tz_convert("UTC").dt.tz_localize(None)  # the requests table's naive UTC
    rows.loc[rows.index % 97 == 0, "ttft_ms"] = np.nan
    return rows


def _roll(frame: pd.DataFrame, cuts: list[int], dense: bool = True) -> WindowRollup:
    models = sorted(frame["model"].unique())
    rollup = WindowRollup(T0_HOUR, 24, models, INV_LN_GAMMA, in_flight=True, dense=dense)
    for a, b in zip([0, *cuts], [*cuts, len(frame)]):
        rollup.add(_rows(frame.iloc[a:b], models))
    return rollup


@pytest.mark.parametrize("dense", [True, False])
def test_window_counts_match_pandas(day, dense):
    """Counts, sums, busiest second and every histogram bin, against a pandas group-by; counted densely
    (few models) or sparsely (many models), the same."""
    got = _roll(day, [7_000], dense).traffic(profile.ALL_MODELS).to_pandas().set_index(["hour_utc", "model"]).sort_index()
    both = pd.concat([day, day.assign(model=profile.ALL_MODELS)], ignore_index=True)
    both["hour_utc"] = both["ts_utc"].dt.floor("h").astype("datetime64[us]")
    g = both.groupby(["hour_utc", "model"])
    assert got.index.equals(g.size().index)
    np.testing.assert_array_equal(got["requests"], g.size())
    np.testing.assert_array_equal(got["success_events"], g["status"].apply(lambda s: s.between(200, 299).sum()))
    np.testing.assert_array_equal(got["input_tokens_sum"], g["input_tokens"].sum())
    np.testing.assert_array_equal(got["ttft_count"], g["ttft_ms"].count())
    np.testing.assert_allclose(got["latency_ms_sum"], g["latency_ms"].sum(), rtol=1e-12)
    peak = both.assign(second=both["ts_utc"].dt.floor("s")).groupby(["hour_utc", "model", "second"]).size()
    np.testing.assert_array_equal(got["peak_second_requests"], peak.groupby(["hour_utc", "model"]).max())
    hist = _roll(day, [], dense).histogram(profile.ALL_MODELS).to_pandas()
    for metric in ("output_tokens", "ttft_ms"):
        values = both.dropna(subset=[metric])
        want = values.assign(bin=log_bins(values[metric].to_numpy(float), INV_LN_GAMMA)).groupby(
            ["hour_utc", "model", "bin"]).size()
        mine = hist[hist["metric"] == metric].set_index(["hour_utc", "model", "bin"])["count"].sort_index()
        np.testing.assert_array_equal(mine.index.to_frame().to_numpy(), want.index.to_frame().to_numpy())
        np.testing.assert_array_equal(mine, want)


@settings(max_examples=8, deadline=None)
@given(cuts=st.lists(st.integers(1, 19_000), max_size=4, unique=True))
def test_batches_do_not_change_the_result(day, cuts):
    """However the rows are cut into batches, and whether counted densely or sparsely, every table is
    the same (integer counts exactly, float sums to 1e-12)."""
    whole, cut = _roll(day, []), _roll(day, sorted(cuts), dense=False)
    for name in ("traffic", "histogram", "concurrency"):
        a, b = (_sorted(getattr(r, name)(profile.ALL_MODELS)) for r in (whole, cut))
        for column in a.column_names:
            if a.schema.field(column).type == arrow.float64():
                np.testing.assert_allclose(a[column].to_numpy(), b[column].to_numpy(), rtol=1e-12)
            else:
                assert a[column].equals(b[column]), (name, column)


def _sorted(table: arrow.Table) -> arrow.Table:
    """Rows in one order whichever way they were counted (the dense and sparse paths order bins differently)."""
    keys = [c for c in ("hour_utc", "model", "metric", "bin") if c in table.column_names]
    return table.sort_by([(k, "ascending") for k in keys])


def test_packed_bins_are_the_same_dense_or_sparse(day):
    """fct_histogram_hourly_bins' rows: the same rows counted densely or sparsely (in another order: the
    sparse tables put each window's all-models rows last), and the same bins as the one-row-per-bin table
    (the rows of each (hour, model), each metric's bins ascending)."""
    dense, sparse = (_roll(day, [7_000], dense).histogram_bins(profile.ALL_MODELS) for dense in (True, False))
    assert _sorted(dense).equals(_sorted(sparse))
    assert sparse["model"][-24:].to_pylist() == [profile.ALL_MODELS] * 24  # every model's rows, then all models'
    rows = _roll(day, [], dense=False).histogram(profile.ALL_MODELS).to_pandas()  # each metric's: by hour, model
    packed = sparse.to_pandas()
    cells = rows[rows["metric"] == "input_tokens"][["hour_utc", "model"]].drop_duplicates(ignore_index=True)
    assert packed[["hour_utc", "model"]].equals(cells)  # every request has input tokens
    for metric in profile.METRICS:
        assert all(len(codes) == 0 for codes in packed[f"{metric}_codes_large"])  # no count reaches 32768 here
        mine = packed.explode(f"{metric}_codes").dropna(subset=f"{metric}_codes")
        codes = mine[f"{metric}_codes"].to_numpy(np.int64)
        want = rows[rows["metric"] == metric]
        np.testing.assert_array_equal(mine[["hour_utc", "model"]], want[["hour_utc", "model"]])
        np.testing.assert_array_equal((codes & 0xFFFF) - 1, want["bin"])
        np.testing.assert_array_equal(codes >> 16, want["count"])


@pytest.mark.parametrize("dense", [True, False])
def test_counts_of_32768_and_more_are_coded_in_the_large_lists(dense):
    """An hour of 40,000 requests of 10 input tokens (bin floor(ln 10 / ln 1.02) = 116) and 1 output token
    (bin 0), 30,000 of model a and 10,000 of b: a's and all models' counts (30,000 < 32,768 and 40,000)
    land in the int32 and int64 code lists, each code count · 65,536 + bin + 1."""
    rollup = WindowRollup(T0_HOUR, 1, ["a", "b"], INV_LN_GAMMA, in_flight=False, dense=dense)
    n = 40_000
    rollup.add(arrow.record_batch({
        "ts_us": np.full(n, T0_HOUR * 3_600_000_000 + 5), "model_index": np.repeat(np.array([0, 1], np.int32),
                                                                                      [30_000, 10_000]),
        "status_class": np.zeros(n, np.uint8), "input_tokens": np.full(n, 10), "output_tokens": np.ones(n, np.int64),
        "ttft_ms": np.full(n, np.nan), "latency_ms": np.full(n, np.nan)}))
    packed = {row["model"]: row for row in rollup.histogram_bins(profile.ALL_MODELS).to_pylist()}
    assert packed["a"]["input_tokens_codes"] == [30_000 * 65_536 + 117] and packed["a"]["input_tokens_codes_large"] == []
    assert packed["b"]["output_tokens_codes"] == [10_000 * 65_536 + 1]
    assert packed[profile.ALL_MODELS]["input_tokens_codes"] == []
    assert packed[profile.ALL_MODELS]["input_tokens_codes_large"] == [40_000 * 65_536 + 117]
    assert packed[profile.ALL_MODELS]["ttft_ms_codes"] == packed[profile.ALL_MODELS]["ttft_ms_codes_large"] == []


@settings(max_examples=100, deadline=None)
@given(key=st.lists(st.integers(0, 40), max_size=60))
def test_distinct_counts_or_sorts_to_the_same_ranks_and_counts(key):
    """The distinct keys ascending, each key's rank among them (``_distinct``) and how often each occurs
    (``_code_counts``), by a bincount over the key space or by sorting."""
    key = np.array(key, np.int64)
    distinct, index, counts = np.unique(key, return_inverse=True, return_counts=True)
    for dense_limit in (41, 0):  # counted densely, then sorted
        got, at = _distinct(key, 41, dense_limit)
        np.testing.assert_array_equal(got, distinct)
        np.testing.assert_array_equal(at, index.reshape(-1))
        got, times = _code_counts(key, 41, dense_limit)
        np.testing.assert_array_equal(got, distinct)
        np.testing.assert_array_equal(times, counts)


def test_a_long_sparse_window_equals_its_days_counted_densely(day):
    """Thin hours joined into one long window (plan_windows) are counted sparsely, its all-models sweep by
    sorting (a dense per-second sweep of 8 days would outgrow the rows): the same tables as each day counted
    densely in a window of its own. Eight copies of the generated day, one day apart, a request running
    across each midnight carried from one day's window into the next."""
    days = pd.concat([day.assign(ts_utc=day["ts_utc"] + pd.Timedelta(days=d)) for d in range(8)], ignore_index=True)
    models = sorted(days["model"].unique())
    long = WindowRollup(T0_HOUR, 8 * 24, models, INV_LN_GAMMA, in_flight=True, dense=False)
    long.add(_rows(days, models))
    assert 2 * long.n_hours * 3_600 > (1 << 20)  # beyond the dense all-models sweep of a sparse window
    tables = {name: [] for name in ("traffic", "histogram", "concurrency")}
    carried = None
    for d in range(8):
        one = WindowRollup(T0_HOUR + 24 * d, 24, models, INV_LN_GAMMA, in_flight=True, carried_spans=carried)
        one.add(_rows(days[days["ts_utc"].dt.floor("D") == pd.Timestamp(2026, 1, 1 + d)], models))
        carried = one.open_spans((T0_HOUR + 24 * (d + 1)) * US_PER_HOUR)
        for name in tables:
            tables[name].append(getattr(one, name)(profile.ALL_MODELS))
    for name, parts in tables.items():
        a, b = _sorted(getattr(long, name)(profile.ALL_MODELS)), _sorted(arrow.concat_tables(parts))
        assert a.equals(b), name


def test_sparse_sweep_max_hours_keeps_the_event_codes_in_63_bits():
    """3 models need 2 bits: 2^59 µs, 160,127,986 hours; 1,000 models need 10 bits: 2^51 µs, 625,499 hours."""
    assert sparse_sweep_max_hours(3) == ((1 << 59) - 2) // US_PER_HOUR == 160_127_986
    assert sparse_sweep_max_hours(1_000) == 625_499
    hours = sparse_sweep_max_hours(1_000)
    spans = (np.array([999]), np.array([T0_HOUR * US_PER_HOUR]), np.array([T0_HOUR * US_PER_HOUR + 1]))
    assert len(peak_in_flight_sparse(*spans, T0_HOUR, hours)[0]) == 1
    with pytest.raises(ValueError, match="too many models"):
        peak_in_flight_sparse(*spans, T0_HOUR, 2 * hours)


@pytest.mark.parametrize("dense", [True, False])
def test_lookback_rows_feed_only_the_sweep(dense):
    """A request arriving before the window and still running counts in flight, not as an arrival."""
    frame = pd.DataFrame({
        "ts_utc": pd.to_datetime(["2025-12-31 23:59:59.000", "2026-01-01 00:00:00.500", "2026-01-01 00:10:00.000"]),
        "input_tokens": [1, 2, 3], "output_tokens": [1, 1, 1], "model": ["a", "b", "a"], "status": [200, 503, 404],
        "ttft_ms": [1.0, 1.0, 1.0], "latency_ms": [2_000.0, 10.0, np.nan],
    })
    rollup = WindowRollup(T0_HOUR, 1, ["a", "b"], INV_LN_GAMMA, in_flight=True, dense=dense)
    rollup.add(_rows(frame, ["a", "b"]))
    traffic = rollup.traffic(profile.ALL_MODELS).to_pylist()
    assert [(r["model"], r["requests"], r["errors"], r["valid_events"], r["success_events"]) for r in traffic] == [
        ("a", 1, 1, 0, 0), ("b", 1, 1, 1, 0), (profile.ALL_MODELS, 2, 2, 1, 0)]  # 404 is no SLI event, 503 is
    assert [r["latency_count"] for r in traffic] == [0, 1, 1]
    # at 00:00:00.5 the 23:59:59 request (until 00:00:01) and the new one are both in flight
    assert {(r["model"], r["concurrency_peak"]) for r in rollup.concurrency(profile.ALL_MODELS).to_pylist()} == {
        ("a", 1), ("b", 1), (profile.ALL_MODELS, 2)}
    # input tokens 3 (a) and 2 (b) fall in two bins, so all models has two rows; output tokens and TTFT one
    # bin per model; latency only for b (the 404 has none)
    # (Arrow's group_by may return the groups in any order: compare as a mapping)
    counts = rollup.histogram(profile.ALL_MODELS).group_by("metric").aggregate([("bin", "count")]).to_pydict()
    assert dict(zip(counts["metric"], counts["bin_count"], strict=True)) == {
        "input_tokens": 4, "output_tokens": 3, "ttft_ms": 3, "latency_ms": 2}


def test_concurrency_needs_the_spans():
    rollup = WindowRollup(T0_HOUR, 1, ["a"], INV_LN_GAMMA, in_flight=False)
    with pytest.raises(ValueError, match="in_flight=False"):
        rollup.concurrency(profile.ALL_MODELS)


@pytest.mark.parametrize("dense", [True, False])
def test_empty_window_gives_empty_tables(dense):
    rollup = WindowRollup(T0_HOUR, 3, [], INV_LN_GAMMA, in_flight=True, dense=dense)
    assert rollup.traffic("x").num_rows == rollup.histogram("x").num_rows == rollup.concurrency("x").num_rows == 0
    assert rollup.histogram_bins("x").num_rows == 0
    assert US_PER_HOUR == 3_600 * 1_000_000


@settings(max_examples=200, deadline=None)
@given(hour_rows=st.lists(st.integers(0, 50), max_size=80), max_hours=st.integers(1, 30),
       max_rows=st.integers(1, 120))
def test_plan_windows_tiles_the_hours_within_the_limits(hour_rows, max_hours, max_rows):
    windows = plan_windows(np.array(hour_rows, dtype=np.int64), max_hours, max_rows)
    # consecutive, in order, covering every hour exactly once
    assert [h for a, b in windows for h in range(a, b)] == list(range(len(hour_rows)))
    for a, b in windows:
        assert 1 <= b - a <= max_hours
        assert sum(hour_rows[a:b]) <= max_rows or b - a == 1  # only a lone hour may exceed the budget
    # greedy: no window could have taken the next hour
    for (a, b), (_, d) in zip(windows, windows[1:]):
        assert b - a == max_hours or sum(hour_rows[a:b + 1]) > max_rows


@settings(max_examples=200, deadline=None)
@given(hour_rows=st.lists(st.integers(0, 50), max_size=80), max_hours=st.integers(1, 30),
       max_rows=st.integers(1, 120), thin_rows=st.integers(0, 60), max_thin_hours=st.integers(1, 100))
def test_thin_windows_join_within_the_limits(hour_rows, max_hours, max_rows, thin_rows, max_thin_hours):
    """Thin windows join while the joined window keeps the row budget and ``max_thin_hours``; every window
    is a run of the windows of the plain plan, a window that is not thin is one of them, alone, and a join
    stops only where the next window is not thin or would break a limit (so never joining fails)."""
    rows = np.array(hour_rows, dtype=np.int64)
    plain = plan_windows(rows, max_hours, max_rows)
    windows = plan_windows(rows, max_hours, max_rows, thin_rows=thin_rows, max_thin_hours=max_thin_hours)
    assert [h for a, b in windows for h in range(a, b)] == list(range(len(hour_rows)))
    for a, b in windows:
        parts = [(c, d) for c, d in plain if a <= c and d <= b]
        assert parts and parts[0][0] == a and parts[-1][1] == b  # a run of whole plain windows
        if len(parts) > 1:  # joined: thin parts, within the budget
            assert all(rows[c:d].sum() < thin_rows for c, d in parts)
            assert rows[a:b].sum() <= max_rows and b - a <= max_thin_hours
        following = [(c, d) for c, d in plain if c == b]
        if rows[parts[0][0]:parts[0][1]].sum() < thin_rows and following:  # a join stopped for a reason:
            c, d = following[0]  # the next plain window is not thin, or would break a limit of the join
            assert rows[c:d].sum() >= thin_rows or rows[a:d].sum() > max_rows or d - a > max_thin_hours
    assert plan_windows(rows, max_hours, max_rows, thin_rows=0) == plain


def test_plan_windows_worked_example():
    # 10 rows an hour, budget 25: two hours a window; an hour of 40 rows stands alone
    assert plan_windows(np.array([10, 10, 10, 10, 40, 10]), 24, 25) == [(0, 2), (2, 4), (4, 5), (5, 6)]
    assert plan_windows(np.array([1] * 5), 2, 100) == [(0, 2), (2, 4), (4, 5)]
    assert plan_windows(np.array([], dtype=np.int64), 24, 10) == []
    # windows of 2 hours below 3 rows are thin: the first four hours join (4 rows), the hours of 9 rows stay
    # a window of their own, the last three join again
    assert plan_windows(np.array([1, 1, 1, 1, 9, 9, 1, 1, 1]), 2, 100, thin_rows=3) == [(0, 4), (4, 6), (6, 9)]
    # joined up to the row budget: 5 rows take hours 0-3 (the next window would make 6), then hours 4-6;
    # or up to max_thin_hours: 3 hours, then 2
    assert plan_windows(np.array([1] * 7), 2, 5, thin_rows=3) == [(0, 4), (4, 7)]
    assert plan_windows(np.array([1] * 5), 1, 100, thin_rows=3, max_thin_hours=3) == [(0, 3), (3, 5)]


@pytest.mark.parametrize(("max_hours", "max_rows"), [(0, 10), (5, 0)])
def test_plan_windows_rejects_empty_limits(max_hours, max_rows):
    with pytest.raises(ValueError, match="max_hours and max_rows"):
        plan_windows(np.array([1]), max_hours, max_rows)


_SPAN = st.tuples(st.integers(-600, 3 * 3600 + 600), st.integers(0, 900), st.integers(0, 2))  # start, duration, model
_BASE_HOUR = 1_700_000_000 // 3600  # an hour of late 2023 [hours since the epoch]


@settings(max_examples=300, deadline=None)
@given(spans=st.lists(_SPAN, max_size=60), unit_us=st.sampled_from([1_000, 1_000_000]))
def test_peak_in_flight_by_model_matches_brute_force(spans, unit_us):
    """Per model and of all models, against counting the covering spans at every instant that matters.

    Times in ms (many events in one second) or s (events on hour edges); spans starting before the
    window are carried in, and spans after it are ignored.
    """
    start = np.array([s for s, _, _ in spans], dtype=np.int64) * unit_us + _BASE_HOUR * US_PER_HOUR
    end = start + np.array([d for _, d, _ in spans], dtype=np.int64) * unit_us
    model = np.array([m for _, _, m in spans], dtype=np.int64)
    got = peak_in_flight_by_model(model, start, end, 3, _BASE_HOUR, 3)
    assert got.shape == (3, 4)
    for column in range(4):
        mine = model == column if column < 3 else np.ones(len(model), bool)
        s_, e_ = start[mine], end[mine]
        for hour in range(3):
            lo, hi = (_BASE_HOUR + hour) * US_PER_HOUR, (_BASE_HOUR + hour + 1) * US_PER_HOUR
            instants = [lo] + [t for t in s_ if lo <= t < hi]
            want = max(int(np.sum((s_ <= t) & (e_ > t))) for t in instants)
            assert got[hour, column] == want, (hour, column)


@settings(max_examples=300, deadline=None)
@given(spans=st.lists(_SPAN, max_size=60), unit_us=st.sampled_from([1_000, 1_000_000, 60_000_000]))
def test_peak_in_flight_sparse_matches_the_dense_sweep(spans, unit_us):
    """The sort-based sweep of many models gives, per model, the dense sweep's (brute-force-tested) peaks;
    in minutes, spans cross several hour starts and start or end exactly on them."""
    start = np.array([s for s, _, _ in spans], dtype=np.int64) * unit_us + _BASE_HOUR * US_PER_HOUR
    end = start + np.array([d for _, d, _ in spans], dtype=np.int64) * unit_us
    model = np.array([m for _, _, m in spans], dtype=np.int64)
    dense = peak_in_flight_by_model(model, start, end, 3, _BASE_HOUR, 3)[:, :3]
    hour, column, peak = peak_in_flight_sparse(model, start, end, _BASE_HOUR, 3)
    got = np.zeros_like(dense)
    got[hour, column] = peak
    np.testing.assert_array_equal(got, dense)
    assert (peak > 0).all() and len(set(zip(hour, column))) == len(peak)  # one row per (hour, model) in flight


@example(spans=[(0, 0), (10800, 1)])  # an arrival exactly at the window end counts in no hour
@settings(max_examples=60, deadline=None)
@given(spans=st.lists(st.tuples(st.integers(0, 3 * 3600), st.integers(0, 5000)), max_size=40))
def test_peak_in_flight_matches_brute_force(spans):
    """Against counting, at every instant that matters, the spans that cover it (times in seconds)."""
    us = 1_000_000
    start = np.array([s for s, _ in spans], dtype=np.int64) * us
    end = start + np.array([d for _, d in spans], dtype=np.int64) * us
    got = peak_in_flight_by_model(np.zeros(len(start), np.int64), start, end, 1, 0, 3)[:, 0]  # one model
    for hour in range(3):
        lo, hi = hour * 3600 * us, (hour + 1) * 3600 * us
        instants = [lo] + [t for t in start if lo <= t < hi]
        want = max(int(np.sum((start <= t) & (end > t))) for t in instants)
        assert got[hour] == want
