"""`capplan profile` end to end on a small DuckDB file."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from capplan import sql
from capplan.cli import app
from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.profile import refresh_rollups

runner = CliRunner()


@pytest.fixture
def stale_db(tmp_path):
    """Rows in ``request_rows`` of a database whose roll-ups were never refreshed."""
    path = tmp_path / "capplan.duckdb"
    con = connect(path)
    ensure_tables(con)
    con.executemany(
        "insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, file_id)"
        " values (?, ?, ?, ?, ?, ?, ?, 1)",
        [("2026-03-01 10:00:00", 100, 10, "a", 200, 100.0, 1000.0),
         ("2026-03-01 10:00:00.5", 300, 30, "b", 200, 3000.0, 5000.0),
         ("2026-03-01 12:00:00", 200, 20, "a", 503, 50.0, 100.0)],
    )
    con.close()
    return path


@pytest.fixture
def db(stale_db):
    """``stale_db`` with its roll-ups refreshed, as ``capplan ingest`` leaves a database."""
    with connect(stale_db) as con:
        refresh_rollups(con)
    return stale_db


def test_json_summary_and_frames(db, tmp_path):
    out = tmp_path / "frames"
    result = runner.invoke(app, ["profile", "--db", str(db), "--json", "--out", str(out), "--format", "parquet"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["total_requests"] == 3 and summary["gap_hours"] == 1
    assert summary["span_start"] == "2026-03-01T10:00:00" and summary["span_end"] == "2026-03-01T13:00:00"
    assert summary["peak_second_qps"] == 2.0
    assert set(summary["models"]) == {"__all__", "a", "b"}
    # default threshold 2000 ms: b's 3000 ms TTFT is bad, a's 503 is bad
    assert (summary["sli"]["valid_events"], summary["sli"]["good_events"]) == (3, 1)
    hourly = pd.read_parquet(out / "hourly_traffic.parquet")
    assert hourly["is_gap"].sum() == 2  # hour 11 for '__all__' and for 'a'
    assert len(summary["written"]) == 6


def test_text_summary_for_one_model(db):
    result = runner.invoke(app, ["profile", "--db", str(db), "--model", "a", "--since", "2026-03-01"])
    assert result.exit_code == 0, result.output
    assert "requests 2" in result.stdout and "SLI" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--db", "{missing}"], "does not exist"),
    (["--db", "{db}", "--model", "nope"], "no requests for model 'nope'"),
    (["--db", "{db}", "--format", "xlsx"], "--format must be one of"),
])
def test_errors_are_one_line(db, tmp_path, args, message):
    args = [a.format(db=db, missing=tmp_path / "missing.duckdb") for a in args]
    result = runner.invoke(app, ["profile", *args])
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output


def test_reads_only_and_names_the_refresh_when_stale(stale_db):
    result = runner.invoke(app, ["profile", "--db", str(stale_db)])
    assert result.exit_code != 0 and "capplan profile --refresh" in result.output
    with connect(stale_db, read_only=True) as con:  # the failed read wrote nothing
        assert con.execute("select count(*) from duckdb_tables() where table_name = 'fct_traffic_hourly'").fetchone()[0] == 0


@pytest.mark.parametrize("flag", ["--refresh", "--rebuild"])
def test_refresh_and_rebuild_bring_the_rollups_up_to_date_first(stale_db, flag):
    result = runner.invoke(app, ["profile", "--db", str(stale_db), "--json", flag])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total_requests"] == 3
    again = runner.invoke(app, ["profile", "--db", str(stale_db), "--json"])  # read-only now suffices
    assert again.exit_code == 0 and json.loads(again.stdout)["total_requests"] == 3


def test_profile_shows_the_columns_the_logs_lacked(bare_db):
    result = CliRunner().invoke(app, ["profile", "--db", str(bare_db)])
    assert result.exit_code == 0, result.output
    assert "not logged: status in 10,800 of 10,800 loaded rows" in result.output
    assert "SLI: not measurable from these logs" in result.output
    summary = json.loads(CliRunner().invoke(app, ["profile", "--db", str(bare_db), "--json"]).stdout)
    assert summary["defaulted_columns"]["ttft_ms"] == {"rows_defaulted": 10_800, "rows_loaded": 10_800,
                                                       "unknown": "TTFT SLIs and percentiles"}
    assert summary["avg_qps"] == pytest.approx(10_800 / (3 * 3600 - 1))  # first to last arrival observed


def test_json_sli_is_not_a_perfect_score_from_defaulted_status(bare_db):
    """Issue 20: with no status and no TTFT logged, the JSON once gave success_rate and good_fraction 1.0."""
    summary = json.loads(CliRunner().invoke(app, ["profile", "--db", str(bare_db), "--json"]).stdout)
    sli = summary["sli"]
    assert sli["success_rate"] is None and sli["good_fraction"] is None and sli["valid_events"] is None
    assert sli["not_measurable"].startswith("good_events, good_fraction, success_rate, valid_events: not measurable")
    assert "status was not logged in any loaded row" in sli["not_measurable"]


@pytest.mark.parametrize("flag", [[], ["--rebuild"]])
def test_summary_process_imports_no_reader_frames(db, flag):
    """Issue 24: the summary reads plain values, so `capplan profile [--rebuild] --json` in a fresh process loads
    neither the readers nor their pandera schemas (about 0.35 s of CPU before), nor pandera itself (the
    `capplan.ingest` package imports its modules on first use, so the defaulted columns' `capplan.ingest.coverage`
    no longer brings in the pandera contract: about 0.25 s more); `--out` still writes validated frames."""
    code = ("import sys; from capplan.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('capplan.profile.read', 'capplan.profile.schemas', 'pandera') if m in sys.modules),"
            " file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, "profile", "--db", str(db), "--json", *flag],
                          capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout)["total_requests"] == 3
    assert done.stderr.strip().splitlines()[-1] == "[]"
