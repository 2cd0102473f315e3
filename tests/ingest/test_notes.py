"""capplan.ingest.notes: implausible time ranges are noted, a file of only quarantined rows is a failure.

From the user's side (``capplan ingest``), plus the pure functions; also ``--model`` and a ``--map``
naming a column the file lacks (issue 20, "Every way in works").
"""

from __future__ import annotations

import json
from datetime import datetime

import duckdb
from typer.testing import CliRunner

from capplan.cli import app
from capplan.ingest.notes import all_quarantined_message, is_plausible_all_quarantined, time_range_notes

RELATIVE = "ts_utc,input_tokens,output_tokens\n3600,1,1\n3601,2,2\n"


def _ingest(tmp_path, text: str, *args: str, name: str = "r.csv", db: str = "r.duckdb"):
    path = tmp_path / name
    path.write_text(text)
    result = CliRunner().invoke(app, ["ingest", str(path), "--db", str(tmp_path / db), *args])
    return result, tmp_path / db


def _ledger(db) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("select rows_read, rows_loaded, rows_quarantined, status, notes from ingest_ledger "
                           "order by file_id").fetchall()
    finally:
        con.close()


def test_a_file_with_every_row_quarantined_fails_and_loads_nothing(tmp_path):
    result, db = _ingest(tmp_path, RELATIVE, "--json")  # numeric timestamps without --timestamp-unit
    assert result.exit_code == 1
    s = json.loads(result.stdout)[0]
    assert (s["status"], s["rows_read"], s["rows_loaded"], s["rows_quarantined"]) == ("all_quarantined", 2, 0, 2)
    assert "every row (2) was quarantined" in s["message"] and "timestamp_unparseable 2" in s["message"]
    assert "--allow-all-quarantined" in s["message"]
    assert _ledger(db) == []  # rolled back: the same file loads once the options are fixed
    fixed, _ = _ingest(tmp_path, RELATIVE, "--json", "--timestamp-unit", "s", "--origin", "2026-10-01T00:00:00Z")
    assert fixed.exit_code == 0 and json.loads(fixed.stdout)[0]["rows_loaded"] == 2


def test_allow_all_quarantined_loads_it_into_quarantine(tmp_path):
    result, db = _ingest(tmp_path, RELATIVE, "--json", "--allow-all-quarantined")
    assert result.exit_code == 0 and json.loads(result.stdout)[0]["status"] == "loaded"
    assert _ledger(db) == [(2, 0, 2, "loaded", [])]
    config = tmp_path / "capplan.toml"
    config.write_text("[ingest]\nallow_all_quarantined = true\n")
    result, db = _ingest(tmp_path, RELATIVE, "--json", "--config", str(config), db="c.duckdb")
    assert result.exit_code == 0 and _ledger(db) == [(2, 0, 2, "loaded", [])]


def test_a_file_of_only_duplicates_of_loaded_requests_is_no_failure(tmp_path):
    text = "ts_utc,input_tokens,output_tokens,request_id\n2026-10-10T12:00:00Z,1,1,a\n2026-10-10T12:00:01Z,1,1,b\n"
    first, db = _ingest(tmp_path, text, name="a.csv")
    again, _ = _ingest(tmp_path, text.replace("1,1,", "1,2,"), "--json", name="b.csv")  # a re-export
    assert first.exit_code == 0 and again.exit_code == 0
    assert [r[:4] for r in _ledger(db)] == [(2, 2, 0, "loaded"), (2, 0, 2, "loaded")]


def test_a_relative_trace_without_origin_loads_with_a_warning_in_output_and_ledger(tmp_path):
    result, db = _ingest(tmp_path, RELATIVE, "--timestamp-unit", "s")
    assert result.exit_code == 0
    assert "warning:" in result.output and "before 2000-01-01" in result.output and "--origin" in result.output
    (row,) = _ledger(db)
    assert row[:4] == (2, 2, 0, "loaded") and "1970-01-01 01:00:00 UTC" in row[4][0]
    quiet, db = _ingest(tmp_path, RELATIVE, "--timestamp-unit", "s", "--origin", "2026-10-01T00:00:00Z",
                        db="q.duckdb")
    assert "warning:" not in quiet.output and _ledger(db)[0][4] == []


def test_a_far_future_range_is_noted_when_the_tolerance_lets_it_load(tmp_path):
    config = tmp_path / "capplan.toml"
    config.write_text("[ingest]\nfuture_tolerance_s = 1e9\n")
    result, db = _ingest(tmp_path, "ts_utc,input_tokens,output_tokens\n2030-01-01T00:00:00Z,1,1\n",
                         "--config", str(config))
    assert result.exit_code == 0 and "more than 24 h after the ingest time" in _ledger(db)[0][4][0]


def test_model_names_the_model_of_rows_that_have_none(tmp_path):
    text = "ts_utc,input_tokens,output_tokens\n2026-10-10T12:00:00Z,1,1\n"
    result, db = _ingest(tmp_path, text, "--model", "llama-3-70b")
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(db))
    assert con.execute("select model from requests").fetchall() == [("llama-3-70b",)]
    con.close()
    # an empty value in a model column too; a named one is kept
    config = tmp_path / "capplan.toml"
    config.write_text(f"[[ingest.sources]]\nname = 'azure'\npaths = ['{tmp_path / 'm.csv'}']\nmodel = 'gpt-x'\n")
    (tmp_path / "m.csv").write_text("ts_utc,input_tokens,output_tokens,model\n2026-10-10T12:00:00Z,1,1,\n"
                                    "2026-10-10T12:00:01Z,1,1,mine\n")
    result = CliRunner().invoke(app, ["ingest", "--config", str(config), "--db", str(tmp_path / "m.duckdb")])
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(tmp_path / "m.duckdb"))
    assert con.execute("select model from requests order by ts_utc").fetchall() == [("gpt-x",), ("mine",)]


def test_a_map_to_a_column_the_file_lacks_is_a_clear_error(tmp_path):
    text = "ts_utc,input_tokens,output_tokens\n2026-10-10T12:00:00Z,1,1\n"
    for name, body in (("m.csv", text), ("m.jsonl", '{"ts_utc":"2026-10-10T12:00:00Z","input_tokens":1,'
                                                    '"output_tokens":1}\n')):
        result, db = _ingest(tmp_path, body, "--map", "model=mdl", "--json", name=name, db=name + ".duckdb")
        assert result.exit_code == 1
        s = json.loads(result.stdout)[0]
        assert s["status"] == "error" and name in s["message"] and "model=mdl" in s["message"]
        assert "input_tokens" in s["message"] and "output_tokens" in s["message"]


def test_time_range_notes_bounds():
    now = datetime(2026, 12, 2)
    assert time_range_notes(datetime(2000, 1, 1), datetime(2026, 12, 3), now) == ()
    assert len(time_range_notes(datetime(1999, 12, 31, 23, 59), datetime(2026, 12, 3, 0, 1), now)) == 2
    assert time_range_notes(None, None, now) == ()


def test_all_quarantined_rules():
    assert is_plausible_all_quarantined([]) and is_plausible_all_quarantined([("request_id_duplicate", 3, "x")])
    assert not is_plausible_all_quarantined([("request_id_duplicate", 3, "x"), ("tokens_negative", 1, "y")])
    rules = [(f"r{i}", 5 - i, "d") for i in range(5)]
    message = all_quarantined_message("f.csv", 15, rules)
    assert "r0 5" in message and "r2 3" in message and "r3" not in message
