"""Every real load-test file under ../shared/loadtests/ imports; a few values checked by hand from the file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from capplan.loadtest.formats import LoadTestFormatError, detect_tool, read_runs

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "loadtests"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"real load-test files not present at {SHARED}")
REAL_FILES = sorted(p for p in SHARED.rglob("*") if p.suffix in (".json", ".jsonl")) if SHARED.is_dir() else []


@needs_shared
def test_the_shared_folder_holds_the_files_the_readme_lists():
    assert len(REAL_FILES) == 15


@needs_shared
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_every_real_file_imports(path):
    runs = read_runs(path)
    assert runs and all(r.completed_requests > 0 and r.requests_per_s > 0 for r in runs)
    assert [r.run_index for r in runs] == list(range(len(runs)))


#: one row per real file, read by hand from the raw file: runs in it, tool, and its first run's target rate
#: [requests/s] (None: closed loop or Infinity), achieved rate [requests/s], mean input tokens [tokens] and one
#: TTFT figure [ms]. vLLM: request_rate, request_throughput, total_input_tokens / completed, p99_ttft_ms.
#: SGLang: request_rate, completed / duration, total_input_tokens / completed, median_ttft_ms.
#: GuideLLM: strategy rate, successful requests / duration, prompt tokens mean, time_to_first_token_ms p99.
#: llmperf: results_num_completed_requests_per_min / 60, results_number_input_tokens_mean, ttft p99 [s] x 1000.
BY_HAND = {
    "A100_vllm-2replicas_benchmark_2025-05-11_22-45-40.json":
        (1, "vllm", 1.8, 1.728939669308656, 1_600_000 / 200, "ttft_p99_ms", 1628.2638817280522),
    "A100_vllm-3replicas_benchmark_2025-05-12_00-03-23.json":
        (1, "vllm", 2.5, 2.3861652801059154, 2_500_000 / 250, "ttft_p99_ms", 2813.2081096712495),
    "A100_vllm-3replicas_benchmark_2025-05-12_00-17-30.json":
        (1, "vllm", 2.5, 2.4240489521699775, 2_500_000 / 250, "ttft_p99_ms", 2755.7777910493296),
    "H100_vllm-2replicas_benchmark_2025-05-13_04-55-27.json":
        (1, "vllm", 3.6, 3.483002633829972, 1_599_800 / 200, "ttft_p99_ms", 261.66544687526766),
    "H100_vllm-2replicas_benchmark_2025-05-13_04-59-44.json":
        (1, "vllm", 3.6, 3.500740393580513, 1_599_800 / 200, "ttft_p99_ms", 527.2356536588628),
    "H100_vllm-2replicas_benchmark_2025-05-13_05-03-46.json":
        (1, "vllm", 3.6, 3.47086732390847, 1_599_800 / 200, "ttft_p99_ms", 261.98455891455524),
    "H100_vllm-3replicas_benchmark_2025-05-13_05-23-51.json":
        (1, "vllm", 5.5, 5.376472945277789, 2_499_750 / 250, "ttft_p99_ms", 985.7955708063672),
    "H100_vllm-3replicas_benchmark_2025-05-13_05-25-19.json":
        (1, "vllm", 5.5, 5.305821950398492, 2_499_750 / 250, "ttft_p99_ms", 829.0210642648159),
    "H100_vllm-3replicas_benchmark_2025-05-13_05-26-45.json":
        (1, "vllm", 5.5, 5.355472468869014, 2_499_750 / 250, "ttft_p99_ms", 999.3999289546626),
    "llama_3_3_70b_offline_output.jsonl":
        (7, "sglang", None, 3000 / 341.72106836596504, 1_525_074 / 3000, "ttft_p50_ms", 91282.20983641222),
    "llama_3_3_70b_online_output.jsonl":
        (7, "sglang", 1.0, 300 / 298.3675805060193, 152_612 / 300, "ttft_p50_ms", 85.74514742940664),
    "llama_405b_online_output.jsonl":
        (6, "sglang", 1.0, 300 / 317.54681650106795, 152_612 / 300, "ttft_p50_ms", 218.80842198152095),
    "guidellm_report_v2_mock_server.json":
        (2, "guidellm", 2.0, 2 / 5.01964807510376, 71.5, "ttft_p99_ms", 11.686325073242188),
    "anyscale_70b.json": (1, "llmperf", None, 84.73327721639254 / 60, 550.0, "ttft_p99_ms", 474.5305190600024),
    "fireworks_70b.json": (1, "llmperf", None, 64.92561266104798 / 60, 550.0, "ttft_p99_ms", 951.4515243999448),
}


@needs_shared
def test_every_real_file_has_a_row_checked_by_hand():
    assert sorted(p.name for p in REAL_FILES) == sorted(BY_HAND)
    assert sum(row[0] for row in BY_HAND.values()) == 33


@needs_shared
@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_every_real_file_reads_the_values_checked_by_hand(path):
    count, tool, target, rate, input_mean, latency, value = BY_HAND[path.name]
    runs = read_runs(path)
    first = runs[0]
    assert (len(runs), first.tool, first.target_requests_per_s) == (count, tool, target)
    assert first.requests_per_s == pytest.approx(rate, rel=1e-12)
    assert first.input_tokens_mean == pytest.approx(input_mean, rel=1e-12)
    assert first.latency[latency] == pytest.approx(value, rel=1e-12)


@needs_shared
@pytest.mark.parametrize(("name", "tool", "key"), [
    ("H100_vllm-2replicas_benchmark_2025-05-13_04-55-27.json", "vllm", "completed"),
    ("llama_405b_online_output.jsonl", "sglang", "duration"),
    ("anyscale_70b.json", "llmperf", "results_num_completed_requests_per_min"),
])
def test_a_real_file_without_a_key_it_needs_names_the_file_and_the_key(tmp_path, name, tool, key):
    """Each real layout with one key it reads taken out (from every run): the error names the file and the key."""
    source = next(p for p in REAL_FILES if p.name == name)
    lines = source.read_text().replace("Infinity", "1e999").splitlines() if source.suffix == ".jsonl" else [
        source.read_text()]
    objects = [json.loads(line) for line in lines if line.strip()]
    for obj in objects:
        del obj[key]
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(o) for o in objects) + "\n")
    with pytest.raises(LoadTestFormatError, match=rf"{re.escape(str(path))}: {tool} layout.* has no key {key!r}"):
        read_runs(path)


@needs_shared
def test_vllm_values_by_hand():
    run, = read_runs(SHARED / "vllm-bench-serve" / "H100_vllm-2replicas_benchmark_2025-05-13_04-55-27.json")
    assert run.tool == "vllm" and run.model_id == "meta-llama/Llama-3.1-8B-Instruct"
    assert run.target_requests_per_s == 3.6 and run.burstiness == 100.0 and run.arrival_process == "gamma"
    assert run.input_tokens_mean == pytest.approx(1_599_800 / 200) and run.output_tokens_mean == 200
    assert run.requests_per_s == pytest.approx(3.483002633829972)
    assert run.latency["ttft_p99_ms"] == pytest.approx(261.66544687526766)
    assert run.latency["ttft_p50_ms"] == pytest.approx(244.08852099440992)  # median_ttft_ms
    assert run.latency["tpot_p95_ms"] == pytest.approx(25.349744470367657)
    assert run.latency["ttft_p90_ms"] is None and run.failed_requests is None  # not in the older script's output


@needs_shared
def test_sglang_infinity_and_measured_lengths():
    runs = read_runs(SHARED / "sglang-bench-serving" / "llama_3_3_70b_offline_output.jsonl")
    assert len(runs) == 7 and runs[0].tool == "sglang"
    assert runs[0].target_requests_per_s is None and runs[0].arrival_process == "burst"  # request_rate: Infinity
    assert runs[0].input_tokens_mean == pytest.approx(1_525_074 / 3000)  # not the nominal 1024
    assert runs[0].latency["e2el_mean_ms"] == pytest.approx(224918.79882259612)
    online = read_runs(SHARED / "sglang-bench-serving" / "llama_3_3_70b_online_output.jsonl")
    assert [r.target_requests_per_s for r in online][:5] == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert online[0].latency["ttft_p50_ms"] == pytest.approx(85.74514742940664)
    assert online[0].requests_per_s == pytest.approx(300 / 298.3675805060193)


@needs_shared
def test_guidellm_v2_seconds_and_milliseconds():
    runs = read_runs(SHARED / "guidellm" / "guidellm_report_v2_mock_server.json")
    assert [r.target_requests_per_s for r in runs] == [2.0, 4.0]
    first = runs[0]
    assert first.tool_version == "0.8.0.dev18" and first.model_id == "e2e-mock-model"
    assert first.arrival_process == "constant" and first.completed_requests == 2 and first.failed_requests == 0
    assert first.latency["e2el_mean_ms"] == pytest.approx(0.01978909969329834 * 1000)  # request_latency is in s
    assert first.latency["ttft_p99_ms"] == pytest.approx(11.686325073242188)  # *_ms fields are ms
    assert first.requests_per_s == pytest.approx(2 / 5.01964807510376)
    assert first.output_tokens_per_s == pytest.approx(16 / 5.01964807510376)
    assert first.input_tokens_mean == 71.5


@needs_shared
def test_llmperf_is_closed_loop_in_milliseconds():
    run, = read_runs(SHARED / "llmperf" / "anyscale_70b.json")
    assert run.tool == "llmperf" and run.arrival_process == "concurrency" and run.max_concurrency == 5
    assert run.target_requests_per_s is None
    assert run.requests_per_s == pytest.approx(84.73327721639254 / 60)
    assert run.latency["ttft_p99_ms"] == pytest.approx(474.5305190600024)
    assert run.latency["e2el_mean_ms"] == pytest.approx(2354.6667737533326)
    assert run.output_tokens_mean == pytest.approx(146.94666666666666)


def _metric(unit: str, avg: float, **percentiles: float) -> dict:
    return {"unit": unit, "avg": avg, **percentiles}


def _aiperf_metrics() -> dict:
    return {"request_throughput": _metric("requests/sec", 0.14968841618235815),
            "request_count": _metric("requests", 30), "error_request_count": _metric("requests", 1),
            "time_to_first_token": _metric("ms", 44.166079325, p50=40.0, p99=90.5),
            "inter_token_latency": _metric("ms", 12.0, p99=20.0), "request_latency": _metric("ms", 900.0),
            "output_token_throughput": _metric("tokens/sec", 25.0), "input_sequence_length": _metric("tokens", 300.0),
            "output_sequence_length": _metric("tokens", 70.0), "benchmark_duration": _metric("sec", 200.0)}


@pytest.mark.parametrize("nested", [False, True], ids=["top-level", "records"])
def test_aiperf_export_as_schemas_md_describes_it(tmp_path, nested):
    config = {"endpoint": {"model_names": ["llama"]}, "loadgen": {"concurrency": 4}}
    body = {"records": _aiperf_metrics()} if nested else _aiperf_metrics()
    path = tmp_path / "profile_export_aiperf.json"
    path.write_text(json.dumps({**body, "input_config": config, "was_cancelled": False}))
    run, = read_runs(path)
    assert run.tool == "aiperf" and run.model_id == "llama"
    assert run.arrival_process == "concurrency" and run.max_concurrency == 4
    assert run.requests_per_s == pytest.approx(0.14968841618235815)
    assert run.latency["ttft_mean_ms"] == pytest.approx(44.166079325) and run.latency["ttft_p99_ms"] == 90.5
    assert run.latency["tpot_p99_ms"] == 20.0  # inter_token_latency is per-request TPOT
    assert run.completed_requests == 30 and run.failed_requests == 1 and run.duration_s == 200.0


def test_genai_perf_export_with_a_request_rate(tmp_path):
    metrics = _aiperf_metrics()
    metrics["time_to_first_token"] = _metric("ns", 44_000_000.0)  # a time unit other than ms is converted
    del metrics["benchmark_duration"]
    path = tmp_path / "profile_export_genai_perf.json"
    path.write_text(json.dumps({**metrics, "telemetry_stats": {}, "input_config": {"request_rate": 2.5}}))
    run, = read_runs(path)
    assert run.tool == "genai-perf" and run.arrival_process == "poisson" and run.target_requests_per_s == 2.5
    assert run.latency["ttft_mean_ms"] == pytest.approx(44.0)


def test_older_guidellm_layout(tmp_path):
    def dist(mean, p99):
        return {"successful": {"mean": mean, "median": mean, "count": 10, "total_sum": mean * 10,
                               "percentiles": {"p90": p99, "p95": p99, "p99": p99}}}

    metrics = {"request_latency": dist(1.5, 2.0), "time_to_first_token_ms": dist(100.0, 150.0),
               "time_per_output_token_ms": dist(10.0, 12.0), "inter_token_latency_ms": dist(10.0, 30.0),
               "prompt_token_count": dist(500.0, 500.0), "output_token_count": dist(100.0, 100.0)}
    bench = {"type_": "generative_benchmark", "args": {"strategy": {"type_": "poisson", "rate": 3.0}},
             "run_stats": {"requests_made": {"successful": 10, "errored": 1, "incomplete": 0, "total": 11}},
             "worker": {"backend_model": "m"}, "request_loader": {}, "extras": {}, "metrics": metrics,
             "duration": 4.0}
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps({"benchmarks": [bench]}))
    run, = read_runs(path)
    assert run.model_id == "m" and run.arrival_process == "poisson" and run.target_requests_per_s == 3.0
    assert run.completed_requests == 10 and run.failed_requests == 1 and run.requests_per_s == 2.5
    assert run.latency["e2el_p99_ms"] == 2000.0 and run.latency["ttft_p50_ms"] == 100.0
    assert run.output_tokens_per_s == pytest.approx(1000.0 / 4.0)


def test_unknown_layout_names_the_file_and_the_keys(tmp_path):
    path = tmp_path / "mystery.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(LoadTestFormatError, match=r"mystery\.json.*'benchmarks'.*'mean_ttft_ms'"):
        read_runs(path)


def test_a_known_layout_missing_a_key_names_it(tmp_path):
    path = tmp_path / "vllm.json"
    path.write_text(json.dumps({"mean_ttft_ms": 1.0, "request_throughput": 1.0, "request_rate": 1.0}))
    with pytest.raises(LoadTestFormatError, match=r"vllm\.json: vllm layout has no key 'completed'"):
        read_runs(path)


def test_forcing_a_tool_and_bad_names():
    assert detect_tool({"benchmarks": []}) == "guidellm"
    with pytest.raises(ValueError, match="tool must be"):
        read_runs("x.json", tool="locust")


def test_not_json_is_a_clear_error(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"a": 1}\nnot json\n')
    with pytest.raises(LoadTestFormatError, match=r"broken\.jsonl: line 2 is not JSON"):
        read_runs(path)
