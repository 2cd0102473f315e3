"""Partitioned roll-ups (capplan/partitioned/): exact merge, ledger, quarantine per partition."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime
from pathlib import Path

import pandas as pd
import pyarrow as arrow
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capplan import ingest, partitioned, profile
from capplan.config import ClusterConfig, IngestConfig, SloConfig, SourceConfig, parse_config
from capplan.drift.histogram import daily_histograms
from capplan.slo.status import minute_events, slo_status
from capplan.db import connect
from capplan.plan.inputs import measure_inputs
from capplan.sample import SampleSpec, generate_day, write_sample

NOW_UTC = datetime(2026, 6, 1, tzinfo=UTC)
INGEST = IngestConfig(contract_check="off")  # the RequestRow contract is tested with the ingest
FACT_ORDER = {"fct_traffic_hourly": "hour_utc, model", "fct_histogram_hourly": "hour_utc, model, metric, bin"}
BAD_CSV = ("ts_utc,input_tokens,output_tokens,model,status\n"
           "2026-03-02T10:00:00Z,10,5,m,200\n"
           "not-a-time,10,5,m,200\n"
           "2026-03-02T10:00:01Z,-3,5,m,200\n"
           "2026-03-02T11:30:00Z,7,2,m,503\n")


def facts(con) -> dict[str, arrow.Table]:
    """The central fact tables, in a fixed order."""
    return {t: con.sql(f"select * from {t} order by {o}").to_arrow_table() for t, o in FACT_ORDER.items()}  # noqa: S608


def single_process(files: list[Path]) -> dict[str, arrow.Table]:
    """The reference: every file ingested into one DuckDB and rolled up there."""
    with connect() as con:
        for f in files:
            result = ingest.load_file(con, f, SourceConfig(name="ref"), INGEST, now_utc=NOW_UTC)
            assert result.status == "loaded", result.message
        profile.refresh_rollups(con, full=True)
        return facts(con)


def roll_up_all(con, source: SourceConfig) -> partitioned.RollupSummary:
    """Discover, roll up in this process and store: the flow's steps without Prefect."""
    found, _ = partitioned.discover_partitions(source)
    pending = partitioned.pending_partitions(con, found)
    return partitioned.store_rollups(
        con, [partitioned.roll_up_partition(p, INGEST, now_utc=NOW_UTC) for p in pending], now_utc=NOW_UTC)


@pytest.fixture(scope="module")
def hive(tmp_path_factory) -> Path:
    """Three generated days as dt= folders; day two also holds a CSV file with two bad rows."""
    root = tmp_path_factory.mktemp("hive")
    write_sample(SampleSpec(date(2026, 3, 1), 3, 6_000, seed=7), root, split="day")
    (root / "dt=2026-03-02" / "part-1.csv").write_text(BAD_CSV)
    (root / "dt=2026-03-02" / "_SUCCESS").write_text("")
    return root


def data_files(root: Path) -> list[Path]:
    return sorted(f for f in root.rglob("*") if f.is_file() and not f.name.startswith("_"))


def test_partitioned_equals_single_process_in_process(hive):
    with connect() as con:
        summary = roll_up_all(con, SourceConfig(name="hive", paths=[str(hive)]))
        got = facts(con)
    assert summary.failed == () and summary.shared_hours == 0
    assert len(summary.rolled_up) == 3
    want = single_process(data_files(hive))
    for table in FACT_ORDER:
        assert got[table].num_rows > 0
        assert got[table].equals(want[table]), table


def test_ledger_reconciles_rows_per_partition(hive):
    with connect() as con:
        roll_up_all(con, SourceConfig(name="hive", paths=[str(hive)]))
        ledger = con.execute("select partition_id, path, files, rows_read, rows_rolled_up, rows_quarantined, "
                         "first_hour_utc, last_hour_utc from partition_ledger order by path").fetchall()
        per_partition = dict(con.execute("select partition_id, sum(requests) from partition_traffic_hourly "
                                     "where model = '__all__' group by all").fetchall())
        quarantined = dict(con.execute("select partition_id, count(*) from partition_quarantine group by all").fetchall())
        rules = [r for (r,) in con.execute("select rule from partition_quarantine order by row_number").fetchall()]
        raw_rows = con.execute("select count(*) from requests").fetchone()[0]
    assert [Path(row[1]).name for row in ledger] == ["dt=2026-03-01", "dt=2026-03-02", "dt=2026-03-03"]
    for pid, path, files, read, rolled, quar, first, last in ledger:
        assert read == rolled + quar
        assert per_partition[pid] == rolled
        assert quarantined.get(pid, 0) == quar
        assert not any(Path(f).name.startswith("_") for f in files)
        assert first.date() == last.date() == date.fromisoformat(Path(path).name[3:])
    assert ledger[1][5] == 2  # the CSV's unparseable timestamp and negative tokens
    assert rules == ["timestamp_unparseable", "tokens_negative"]
    assert raw_rows == 0  # raw rows never reach the centre


def test_second_run_skips_and_changed_partition_is_rerolled(hive, tmp_path):
    root = tmp_path / "hive"
    for f in data_files(hive):
        target = root / f.relative_to(hive)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f.read_bytes())
    source = SourceConfig(name="hive", paths=[str(root)])
    with connect() as con:
        roll_up_all(con, source)
        assert roll_up_all(con, source).rolled_up == ()
        # day three is rewritten with half its rows: only it is re-rolled, replacing its hours
        day3 = root / "dt=2026-03-03" / "part-0.parquet"
        table = pq.read_table(day3)
        pq.write_table(table.slice(0, table.num_rows // 2), day3)
        summary = roll_up_all(con, source)
        got = facts(con)
        statuses = con.execute("select status, count(*) from partition_ledger group by all order by 1").fetchall()
    assert summary.rolled_up == summary.replaced == (str(day3.parent),)
    assert summary.rows_read == table.num_rows // 2
    assert statuses == [("current", 3), ("replaced", 1)]
    want = single_process(data_files(root))
    for t in FACT_ORDER:
        assert got[t].equals(want[t]), t


def test_golden_two_hand_made_partitions(tmp_path):
    """Five rows over two hours; the busiest second of 10:00 holds two arrivals."""
    for day, text in (("2026-03-01", "ts_utc,input_tokens,output_tokens,model,status\n"
                                     "2026-03-01T10:00:00.1Z,100,10,a,200\n2026-03-01T10:00:00.9Z,50,5,b,500\n"
                                     "2026-03-01T10:20:00Z,1,1,a,200\n"),
                      ("2026-03-02", "ts_utc,input_tokens,output_tokens,model,status\n"
                                     "2026-03-02T00:59:59Z,8,2,a,404\n2026-03-02T00:00:00Z,2,0,a,429\n")):
        (tmp_path / f"dt={day}").mkdir()
        (tmp_path / f"dt={day}" / "logs.csv").write_text(text)
    with connect() as con:
        roll_up_all(con, SourceConfig(name="g", paths=[str(tmp_path)]))
        rows = con.execute("select hour_utc, requests, errors, valid_events, success_events, input_tokens_sum, "
                       "peak_second_requests from fct_traffic_hourly where model = '__all__' order by 1").fetchall()
    assert rows == [
        (datetime(2026, 3, 1, 10), 3, 1, 3, 2, 151, 2),
        (datetime(2026, 3, 2, 0), 2, 2, 1, 0, 10, 1),  # 404 is not a valid event, 429 is
    ]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(1, 2_999), min_size=1, max_size=4, unique=True))
def test_any_split_merges_counts_exactly(tmp_path_factory, cuts):
    """Files cut at arbitrary rows: counts, sums and bins are exact; a shared hour's peak second is a lower bound."""
    rows = generate_day(SampleSpec(date(2026, 3, 2), 1, 5_000, seed=11, incidents=False), date(2026, 3, 2)).table
    rows = rows.slice(0, 3_000)
    folder = tmp_path_factory.mktemp("split")
    bounds = [0, *sorted(cuts), rows.num_rows]
    files = []
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        files.append(folder / f"part-{i}.parquet")
        pq.write_table(rows.slice(a, b - a), files[-1])
    with connect() as con:
        summary = roll_up_all(con, SourceConfig(name="s", paths=[str(folder / "*.parquet")]))
        got = facts(con)
        shared = {h for h, _ in partitioned.shared_hours(con)}
    want = single_process(files)
    assert summary.rows_read == rows.num_rows
    assert got["fct_histogram_hourly"].equals(want["fct_histogram_hourly"])
    g, w = got["fct_traffic_hourly"].to_pylist(), want["fct_traffic_hourly"].to_pylist()
    assert [{**r, "peak_second_requests": 0} for r in g] == [{**r, "peak_second_requests": 0} for r in w]
    for rg, rw in zip(g, w):
        assert rg["peak_second_requests"] <= rw["peak_second_requests"]
        if rg["hour_utc"] not in shared:
            assert rg["peak_second_requests"] == rw["peak_second_requests"]


def test_failed_partition_is_reported_and_not_recorded(tmp_path):
    write_sample(SampleSpec(date(2026, 3, 1), 2, 2_000, seed=1), tmp_path, split="day")
    (tmp_path / "dt=2026-03-02" / "part-0.parquet").write_bytes(b"PAR1 this is not parquet")
    with connect() as con:
        summary = roll_up_all(con, SourceConfig(name="h", paths=[str(tmp_path)]))
        ledger = con.execute("select path from partition_ledger").fetchall()
    assert [Path(p).name for (p,) in ledger] == ["dt=2026-03-01"]
    assert len(summary.failed) == 1 and "dt=2026-03-02" in summary.failed[0]


@pytest.mark.parametrize(("name", "message"), [
    ("dt=2026-02-30", "not a calendar date"),
    ("country=fr", "expected only dt=YYYY-MM-DD folders"),
])
def test_bad_hive_layout_raises(tmp_path, name, message):
    (tmp_path / name).mkdir()
    (tmp_path / name / "a.parquet").write_bytes(b"")
    with pytest.raises(partitioned.PartitionError, match=message):
        partitioned.discover_partitions(SourceConfig(name="x", paths=[str(tmp_path)]))


def test_missing_patterns_are_listed(tmp_path):
    (tmp_path / "empty").mkdir()
    found, missing = partitioned.discover_partitions(
        SourceConfig(name="x", paths=[str(tmp_path / "empty"), str(tmp_path / "none-*.csv")]))
    assert found == [] and missing == [str(tmp_path / "empty"), str(tmp_path / "none-*.csv")]


def test_hours_already_fed_by_requests_are_refused(hive):
    with connect() as con:
        ingest.load_file(con, hive / "dt=2026-03-02" / "part-1.csv", SourceConfig(name="files"), INGEST,
                         now_utc=NOW_UTC)
        with pytest.raises(partitioned.PartitionError, match="feed each hour from one of the two"):
            roll_up_all(con, SourceConfig(name="hive", paths=[str(hive)]))
        assert con.execute("select count(*) from partition_ledger").fetchone()[0] == 0  # rolled back whole


def test_full_profile_refresh_is_healed_by_the_next_store(hive):
    with connect() as con:
        roll_up_all(con, SourceConfig(name="hive", paths=[str(hive)]))
        before = facts(con)
        profile.refresh_rollups(con, full=True)  # clears every fact row: `requests` is empty here
        assert con.execute("select count(*) from fct_traffic_hourly").fetchone()[0] == 0
        summary = partitioned.store_rollups(con, [])
        after = facts(con)
    assert summary.hours_merged == 72
    for t in FACT_ORDER:
        assert after[t].equals(before[t])


@pytest.mark.parametrize(("cluster", "expected"), [
    (ClusterConfig(duckdb_threads_per_partition=3), 3),
    (ClusterConfig(task_runner="dask", scheduler_address="tcp://10.0.0.5:8786"), None),
    (ClusterConfig(task_runner="none"), os.cpu_count()),
    (ClusterConfig(task_runner="dask", n_workers=os.cpu_count() or 1), 1),
])
def test_duckdb_threads(cluster, expected):
    assert partitioned.duckdb_threads(cluster) == expected


def test_cluster_section_parses():
    cfg = parse_config({"cluster": {"task_runner": "dask", "scheduler_address": "tcp://h:8786",
                                    "sources": [{"name": "big", "paths": ["s3-mount/requests"]}]}})
    assert cfg.cluster.task_runner == "dask" and cfg.cluster.sources[0].name == "big"
    with pytest.raises(ValueError, match="task_runner"):
        parse_config({"cluster": {"task_runner": "spark"}})


# --------------------------------------------------------------------------- the plan's other inputs

SLOS = [SloConfig(name="availability"), SloConfig(name="ttft", kind="request", ttft_threshold_ms=500.0),
        SloConfig(name="a-only", model="llama-3.1-8b", count_client_errors=True)]


@pytest.fixture(scope="module")
def both_ways(hive):
    """The hive folder as (single-process database, partitioned central database), SLO thresholds rolled up."""
    single, central = connect(), connect()
    for f in data_files(hive):
        ingest.load_file(single, f, SourceConfig(name="ref"), INGEST, now_utc=NOW_UTC)
    profile.refresh_rollups(single, full=True)
    found, _ = partitioned.discover_partitions(SourceConfig(name="hive", paths=[str(hive)]))
    partitioned.store_rollups(central, [partitioned.roll_up_partition(
        p, INGEST, now_utc=NOW_UTC, ttft_thresholds_ms=[s.ttft_threshold_ms for s in SLOS]) for p in found])
    yield single, central
    single.close()
    central.close()


def test_measured_inputs_equal_single_process(both_ways):
    cfg = parse_config({"report": {"measured_window_days": 2}, "cost": {"interruptible_models": ["llama-3.1-8b"]}})
    got, want = (measure_inputs(con, profile.hourly_traffic(con, model=profile.ALL_MODELS), cfg)
                 for con in both_ways)
    assert got.requests == want.requests > 0 and (got.first_ts_utc, got.last_ts_utc) == (want.first_ts_utc,
                                                                                           want.last_ts_utc)
    # token sums are integers (exact); latency sums are doubles added in another order: last-bit differences
    for name in ("input_tokens_per_request", "output_tokens_per_request", "kv_tokens_per_sequence", "burst_ratio",
                 "interruptible_share", "latency_s"):
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-12), name
    assert 0 < got.interruptible_share < 1


@pytest.mark.parametrize("slo", SLOS, ids=[s.name for s in SLOS])
def test_slo_minutes_and_status_equal_single_process(both_ways, slo):
    got, want = (minute_events(con, slo) for con in both_ways)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert got["bad_events"].sum() > 0 or slo.ttft_threshold_ms is None
    assert slo_status(both_ways[1], slo) == slo_status(both_ways[0], slo)


def test_slo_with_a_threshold_not_rolled_up_is_a_clear_error(both_ways):
    with pytest.raises(ValueError, match=r"SLO 'fast'.*thresholds \[500\.0, inf\] ms only, not 250\.0 ms"):
        minute_events(both_ways[1], SloConfig(name="fast", ttft_threshold_ms=250.0))


def test_drift_histograms_equal_single_process(both_ways):
    got, want = (daily_histograms(con) for con in both_ways)
    assert len(got) > 0
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_concurrency_is_exact_but_a_lower_bound_where_days_meet(both_ways):
    """Each partition sweeps its own requests: the first hour of a day misses the previous day's stragglers."""
    query = "select hour_utc, model, concurrency_peak from fct_concurrency_hourly order by all"
    got, want = ({(h, m): c for h, m, c in con.execute(query).fetchall()} for con in both_ways)
    assert got.keys() == want.keys()
    day_starts = {h for h, _ in got if h.hour == 0}
    for key, peak in got.items():
        assert peak <= want[key]
        if key[0] not in day_starts:
            assert peak == want[key], key
