"""The load_tests table: runs stored with units in the column names; re-import is a no-op."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

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


SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "loadtests"


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"real load-test files not present at {SHARED}")
def test_real_runs_are_stored_column_by_column():
    """Each group of columns the issue lists, read by hand from two real files: the older vLLM script (its
    ``"request_goodput:"`` key, no ``failed``, no E2E latency) imported as 2 replicas of 1 GPU, and GuideLLM v2
    (its tool version, and ``request_latency`` in seconds stored in ms)."""
    con = connect()
    vllm = SHARED / "vllm-bench-serve" / "H100_vllm-2replicas_benchmark_2025-05-13_04-55-27.json"
    assert '"request_goodput:"' in vllm.read_text()
    import_file(con, vllm, pool="chat", replicas=2, gpus_per_replica=1)
    import_file(con, SHARED / "guidellm" / "guidellm_report_v2_mock_server.json", pool="chat")
    runs = {r["tool"] + str(r["run_index"]): r for r in read_stored_runs(con, "chat")}
    v, g = runs["vllm0"], runs["guidellm0"]
    assert v["file_sha256"] == hashlib.sha256(vllm.read_bytes()).hexdigest()
    assert (v["model_id"], v["engine"], v["replicas"], v["gpus_per_replica"]) == (
        "meta-llama/Llama-3.1-8B-Instruct", "openai", 2, 1)
    assert json.loads(v["settings_json"]) == {"timestamp": "2025-05-13_04-55-27,model"}  # what the file records
    assert (v["arrival_process"], v["target_requests_per_s"], v["burstiness"]) == ("gamma", 3.6, 100.0)
    assert (v["completed_requests"], v["failed_requests"]) == (200, None)
    assert (v["input_tokens_mean"], v["output_tokens_mean"]) == (1_599_800 / 200, 40_000 / 200)
    assert (v["requests_per_s"], v["output_tokens_per_s"]) == (3.483002633829972, 696.6005267659943)
    assert (v["ttft_p99_ms"], v["tpot_p95_ms"], v["itl_p99_ms"], v["e2el_mean_ms"]) == (
        261.66544687526766, 25.349744470367657, 216.5980374556966, None)
    assert (g["tool_version"], g["arrival_process"], g["target_requests_per_s"]) == ("0.8.0.dev18", "constant", 2.0)
    assert g["e2el_mean_ms"] == pytest.approx(0.01978909969329834 * 1000)  # seconds in the file
    assert g["itl_p50_ms"] == pytest.approx(1.0459763663155692)
