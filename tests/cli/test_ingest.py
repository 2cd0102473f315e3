"""``capplan ingest`` end to end: JSON summary, exit codes, a locked database, kill -9 mid-ingest, the flow."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from capplan.cli import app
from capplan.config import CapplanConfig, DatabaseConfig
from capplan.db import connect

CORPUS = Path(__file__).resolve().parents[1] / "data" / "ingest"
CAPPLAN = [str(Path(sys.executable).parent / "capplan")]  # the installed console script


def _counts(db: Path) -> tuple:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("select (select count(*) from requests), (select count(*) from quarantine), "
                           "(select count(*) from ingest_ledger)").fetchall()[0]
    finally:
        con.close()


def test_json_summary_per_file_and_non_zero_exit_on_a_bad_file(tmp_path):
    db = tmp_path / "x.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(CORPUS / "rules.csv"), str(CORPUS / "header_only.csv"),
                                      "--db", str(db), "--json"])
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert [(Path(s["path"]).name, s["status"], s["rows_read"], s["rows_loaded"], s["rows_quarantined"])
            for s in summary] == [("rules.csv", "loaded", 14, 2, 12), ("header_only.csv", "error", 0, 0, 0)]
    assert "no data rows" in summary[1]["message"]


def test_preset_map_and_timestamp_options_from_the_command_line(tmp_path):
    db = tmp_path / "x.duckdb"
    args = ["ingest", str(CORPUS / "relative.csv"), "--db", str(db), "--source", "trace", "--map", "ts_utc=time_s",
            "--map", "input_tokens=prompt", "--map", "output_tokens=completion", "--origin", "2026-10-01T00:00:00Z",
            "--timestamp-unit", "s", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["rows_loaded"] == 3
    bad = CliRunner().invoke(app, ["ingest", str(CORPUS / "azure.csv"), "--db", str(db), "--preset", "nope"])
    assert bad.exit_code == 2 and "valid presets" in bad.output
    bad_map = CliRunner().invoke(app, ["ingest", str(CORPUS / "azure.csv"), "--db", str(db), "--map", "ts_utc"])
    assert bad_map.exit_code == 2 and "expected CANONICAL=SOURCE" in bad_map.output


def test_locked_database_is_a_clear_message_not_a_stack_trace(tmp_path):
    db = tmp_path / "x.duckdb"
    code = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        run = subprocess.run([*CAPPLAN, "ingest", str(CORPUS / "bom.csv"), "--db", str(db)],
                             capture_output=True, text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert run.returncode == 1
    assert "in use by another process" in run.stderr and "Traceback" not in run.stderr


def _big_csv(path: Path, rows: int) -> int:
    """A CSV of ``rows`` rows, every 97th with negative tokens; returns the bad-row count."""
    con = duckdb.connect()
    con.execute(f"""copy (select strftime(timestamp '2026-10-01' + to_microseconds(i * 1000), '%Y-%m-%dT%H:%M:%S.%fZ')
                           as ts_utc, case when i % 97 = 0 then -1 else i % 500 end as input_tokens,
                           i % 300 as output_tokens, 'req-' || i as request_id
                    from range($rows) t(i)) to '{path}' (header)""", {"rows": rows})
    return len(range(0, rows, 97))


@pytest.mark.slow
@pytest.mark.parametrize("when", ["early", "mid-insert"])
def test_kill_9_leaves_the_database_as_before_the_file_and_a_rerun_completes(tmp_path, when):
    db = tmp_path / "x.duckdb"
    assert subprocess.run([*CAPPLAN, "ingest", str(CORPUS / "bom.csv"), "--db", str(db)],
                          capture_output=True, timeout=120).returncode == 0
    before = _counts(db)
    big = tmp_path / "big.csv"
    rows = 1_000_000  # loads in ~1 s: a smaller file can commit inside the 1 s 'early' wait, before the kill
    bad = _big_csv(big, rows)
    size0 = db.stat().st_size
    proc = subprocess.Popen([*CAPPLAN, "ingest", str(big), "--db", str(db)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    if when == "early":
        time.sleep(1.0)
    else:  # the insert writes row groups to the file before it commits: the file grows
        while db.stat().st_size == size0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
    assert proc.poll() is None, "the ingest finished before it could be killed; use a larger file"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _counts(db) == before
    rerun = subprocess.run([*CAPPLAN, "ingest", str(big), "--db", str(db), "--json"], capture_output=True,
                           text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)[0]
    assert (summary["rows_read"], summary["rows_loaded"], summary["rows_quarantined"]) == (rows, rows - bad, bad)
    assert _counts(db) == (before[0] + rows - bad, before[1] + bad, before[2] + 1)


def test_flow_ingests_the_configured_database(prefect_harness, tmp_path):
    from capplan.flows.ingest import ingest_logs

    cfg = CapplanConfig(database=DatabaseConfig(path=tmp_path / "flow.duckdb"))
    results = ingest_logs(cfg, paths=[str(CORPUS / "rules.csv"), str(CORPUS / "empty.csv")])
    assert [(Path(r.path).name, r.status) for r in results] == [("rules.csv", "loaded"), ("empty.csv", "error")]
    again = ingest_logs(cfg, paths=[str(CORPUS / "rules.csv")])
    assert again[0].status == "unchanged"
    con = connect(cfg.database.path, read_only=True)
    assert con.execute("select count(*) from requests").fetchall() == [(2,)]


def _ingest_json(*args: str) -> tuple[int, list[dict]]:
    result = CliRunner().invoke(app, ["ingest", *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_file_names_with_glob_characters_are_read_literally(tmp_path):
    # issue 20, item 6: `a[12].parquet` re-read a1 and a2 (12 rows, token sum 18); `c[12].csv` gave INTERRUPT Error
    con = duckdb.connect()
    for name, rows, tokens in (("a1", 1, 1), ("a2", 2, 2), ("a[12]", 9, 3009)):
        con.execute(f"copy (select timestamp '2026-10-01 00:00:00' + to_seconds(i) as ts_utc, "
                    f"case when i = 0 then {tokens - rows + 1} else 1 end as input_tokens, 0 as output_tokens "
                    f"from range({rows}) t(i)) to '{tmp_path / name}.parquet' (format parquet)")
    (tmp_path / "c1.csv").write_text("ts_utc,input_tokens,output_tokens\n2026-10-01T00:00:00Z,1,1\n")
    (tmp_path / "c[12].csv").write_text("ts_utc,input_tokens,output_tokens\n2026-10-01T00:00:00Z,5,5\n"
                                        "2026-10-01T00:00:01Z,5,5\n")
    db = tmp_path / "x.duckdb"
    code, files = _ingest_json(str(tmp_path / "a[12].parquet"), str(tmp_path / "c[12].csv"), "--db", str(db))
    assert code == 0, files
    assert [(Path(f["path"]).name, f["status"], f["rows_read"]) for f in files] == [
        ("a[12].parquet", "loaded", 9), ("c[12].csv", "loaded", 2)]
    assert duckdb.connect(str(db), read_only=True).execute(
        "select count(*), sum(input_tokens) from requests").fetchone() == (11, 3009 + 10)


def test_a_folder_ingests_its_log_files_recursively_and_an_empty_glob_says_so(tmp_path):
    logs = tmp_path / "logs"
    for rel in ("a.csv", "dt=2026-10-01/b.csv", "deep/er/c.csv", "_tmp/x.csv", ".hidden/y.csv", "_SUCCESS",
                ".d.csv", "README.md"):
        (logs / rel).parent.mkdir(parents=True, exist_ok=True)
        (logs / rel).write_text(f"ts_utc,input_tokens,output_tokens,request_id\n2026-10-01T00:00:00Z,1,1,{rel}\n")
    db = tmp_path / "x.duckdb"
    code, files = _ingest_json(str(logs), "--db", str(db))
    assert code == 0, files
    assert sorted(Path(f["path"]).relative_to(logs).as_posix() for f in files) == [
        "a.csv", "deep/er/c.csv", "dt=2026-10-01/b.csv"]
    assert all(f["rows_read"] == f["rows_loaded"] + f["rows_quarantined"] == 1 for f in files)
    code, files = _ingest_json(str(tmp_path / "nothing-*.csv"), str(tmp_path / "absent.csv"), "--db", str(db))
    assert code == 1
    assert [f["message"] for f in files] == [f"no file matches {tmp_path / 'nothing-*.csv'}",
                                             f"{tmp_path / 'absent.csv'}: no such file"]
    (tmp_path / "empty").mkdir()
    code, files = _ingest_json(str(tmp_path / "empty"), "--db", str(db))
    assert code == 1 and "no log file in this folder" in files[0]["message"]


def test_a_path_changed_to_another_files_content_is_a_change_not_unchanged(tmp_path):
    # issue 20, item 8: `capplan ingest x1.csv x2.csv; cp x1.csv x2.csv; capplan ingest x2.csv --on-changed replace`
    # reported "unchanged" and kept x2's old rows
    x1, x2, db = tmp_path / "x1.csv", tmp_path / "x2.csv", tmp_path / "d.duckdb"
    x1.write_text("ts_utc,input_tokens,output_tokens,request_id\n2026-10-01T00:00:00Z,1,1,a\n2026-10-01T00:00:01Z,2,2,b\n")
    x2.write_text("ts_utc,input_tokens,output_tokens,request_id\n2026-10-01T00:00:02Z,7,7,c\n")
    assert _ingest_json(str(x1), str(x2), "--db", str(db))[0] == 0
    x2.write_bytes(x1.read_bytes())
    code, files = _ingest_json(str(x2), "--db", str(db))
    assert code == 1 and files[0]["status"] == "refused"
    code, files = _ingest_json(str(x2), "--db", str(db), "--on-changed", "replace")
    assert code == 0 and files[0]["status"] == "replaced", files
    assert files[0]["rows_read"] == 2 == files[0]["rows_loaded"] + files[0]["rows_quarantined"]
    con = duckdb.connect(str(db), read_only=True)
    # x2's old row is gone; its new rows repeat x1's ids, so they are duplicates, not counted twice
    assert con.execute("select request_id, input_tokens from requests order by ts_utc").fetchall() == [("a", 1), ("b", 2)]
    assert con.execute("select rule, count(*) from quarantine group by rule").fetchall() == [("request_id_duplicate", 2)]
    assert con.execute("select path, status from ingest_ledger order by file_id").fetchall() == [
        (str(x1), "loaded"), (str(x2), "replaced"), (str(x2), "loaded")]
    con.close()
    assert _ingest_json(str(x2), "--db", str(db))[1][0]["status"] == "unchanged"  # the same path and content again


def test_a_locked_database_with_json_prints_a_json_error_object(tmp_path):
    db = tmp_path / "x.duckdb"
    code = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        run = subprocess.run([*CAPPLAN, "ingest", str(CORPUS / "bom.csv"), "--db", str(db), "--json"],
                             capture_output=True, text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert run.returncode == 1
    error = json.loads(run.stdout)
    assert error == {"error": {"type": "database_locked", "message": error["error"]["message"]}}
    assert "in use by another process" in error["error"]["message"]
