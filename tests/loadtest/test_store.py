"""The load_tests table: runs stored with units in the column names; re-import is a no-op."""

from __future__ import annotations

import json

import pytest

from capplan.db import connect
from capplan.loadtest.formats import LoadTestFormatError
from capplan.loadtest.store import import_file, read_stored_runs


def _vllm(tmp_path, name="run.json", rate=2.0):
    path = tmp_path / name
    path.write_text(json.dumps({
        "model_id": "m", "request_rate": rate, "burstiness": 1.0, "max_concurrency": None, "duration": 100.0,
        "completed": 190, "failed": 10, "total_input_tokens": 95_000, "total_output_tokens": 19_000,
        "request_throughput": 1.9, "output_throughput": 190.0, "mean_ttft_ms": 100.0, "median_ttft_ms": 90.0,
        "p99_ttft_ms": 300.0, "mean_tpot_ms": 10.0, "p99_tpot_ms": 20.0, "tp": 2}))
    return path


def test_runs_are_stored_with_their_setup(tmp_path):
    con = connect()
    result = import_file(con, _vllm(tmp_path), replicas=3)
    assert (result.status, result.runs, result.tool, result.pool) == ("imported", 1, "vllm", "m")
    row, = read_stored_runs(con)
    assert row["pool"] == "m" and row["replicas"] == 3 and row["gpus_per_replica"] == 2  # tp from the file
    assert row["ttft_p99_ms"] == 300.0 and row["output_tokens_per_s"] == 190.0 and row["input_tokens_mean"] == 500.0
    assert row["failed_requests"] == 10 and row["arrival_process"] == "poisson"
    assert len(row["file_sha256"]) == 64


def test_reimport_is_a_no_op_even_under_another_name(tmp_path):
    con = connect()
    path = _vllm(tmp_path)
    import_file(con, path, pool="chat")
    again = import_file(con, path, pool="other")
    copy = tmp_path / "copy.json"
    copy.write_bytes(path.read_bytes())
    assert again.status == "unchanged" and again.runs == 0
    assert import_file(con, copy).status == "unchanged"
    assert [r["pool"] for r in read_stored_runs(con)] == ["chat"]
    import_file(con, _vllm(tmp_path, "second.json", rate=3.0), pool="chat")
    assert [r["target_requests_per_s"] for r in read_stored_runs(con, "chat")] == [2.0, 3.0]


def test_a_bad_file_stores_nothing(tmp_path):
    con = connect()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(LoadTestFormatError):
        import_file(con, bad)
    assert read_stored_runs(con) == []
    with pytest.raises(ValueError, match="replicas"):
        import_file(con, bad, replicas=0)
