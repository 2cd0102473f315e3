"""No peeking: a database read as of T gives what a database holding only the data before T gives."""

from __future__ import annotations

from datetime import date

import pandas as pd
import pytest

from capplan import profile
from capplan.config import CapplanConfig, IngestConfig, SourceConfig
from capplan.db import connect
from capplan.history.as_of import connect_as_of
from capplan.ingest import ingest_paths
from capplan.plan.inputs import measure_inputs
from capplan.plan.traffic import all_models_traffic
from capplan.sample import SampleSpec, write_sample

READERS = {
    "hourly_traffic": lambda c: profile.hourly_traffic(c),
    "daily_traffic": lambda c: profile.daily_traffic(c),
    "token_distribution": lambda c: profile.token_distribution(c, "day"),
    "histograms": lambda c: profile.histograms(c, "latency_ms", "day"),
    "hourly_sli": lambda c: profile.hourly_sli(c, 1_500.0),
    "profile_summary": lambda c: profile.profile_summary(c),
}


def _database(path, files) -> None:
    with connect(path) as con:
        results = ingest_paths(con, [str(p) for p in files], SourceConfig(name="s"), IngestConfig(contract_check="off"))
        assert {r.status for r in results} == {"loaded"}
        profile.refresh_rollups(con)


@pytest.fixture(scope="module")
def databases(tmp_path_factory):
    root = tmp_path_factory.mktemp("as_of")
    logs = write_sample(SampleSpec(date(2026, 3, 2), 8, 600, seed=4), root / "logs.parquet", split="day")
    files = sorted(logs.paths)
    _database(root / "full.duckdb", files)
    _database(root / "before.duckdb", files[:5])  # 2–6 March
    return root / "full.duckdb", root / "before.duckdb", pd.Timestamp("2026-03-07 00:00")


def test_every_profile_reader_sees_only_the_past(databases) -> None:
    full, before, cut = databases
    with connect_as_of(full, cut) as as_of, connect(before, read_only=True) as truth, \
            connect(full, read_only=True) as everything:
        for name, read in READERS.items():
            got, want = read(as_of), read(truth)
            if isinstance(got, pd.DataFrame):
                pd.testing.assert_frame_equal(got, want, obj=name)
            else:
                assert got == want, name
        # and the cut is real: the full database holds more
        assert len(profile.hourly_traffic(everything)) > len(profile.hourly_traffic(as_of))


def test_the_plan_inputs_are_identical_as_of_the_cut(databases) -> None:
    full, before, cut = databases
    cfg = CapplanConfig()
    with connect_as_of(full, cut) as as_of, connect(before, read_only=True) as truth:
        hourly_a, daily_a = all_models_traffic(as_of, cfg)
        hourly_b, daily_b = all_models_traffic(truth, cfg)
        pd.testing.assert_frame_equal(hourly_a, hourly_b)
        pd.testing.assert_frame_equal(daily_a, daily_b)
        assert measure_inputs(as_of, hourly_a, cfg) == measure_inputs(truth, hourly_b, cfg)
        assert hourly_a["hour_utc"].max() < cut


def test_the_source_file_is_not_written(databases, tmp_path) -> None:
    full, _, cut = databases
    stamp = full.stat().st_mtime_ns
    with connect_as_of(full, cut) as con:
        with pytest.raises(Exception, match="read-only|read only"):
            con.execute("insert into as_of_source.main.profile_rollup_version values (99)")
    assert full.stat().st_mtime_ns == stamp
    with pytest.raises(FileNotFoundError, match="no database at"):
        with connect_as_of(tmp_path / "absent.duckdb", cut):
            pass
