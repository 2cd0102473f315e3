"""Public LLM traces, as look-alikes generated here, through ``ingest``, ``profile``, ``slo``, ``drift`` and ``plan``.

Issue 20: a new user tries capplan on the public traces first. Two shapes, generated with a seed
(no third-party data is committed):

- **Azure LLM inference 2023** (AzurePublicDataset ``AzureLLMInferenceTrace_conv``): CSV
  ``TIMESTAMP, ContextTokens, GeneratedTokens``, timestamps with 7 fractional digits, one hour,
  no latency, no status, no model; ingested with ``--preset azure --model NAME``.
- **Mooncake FAST'25** (``conversation_trace.jsonl``): JSON lines ``timestamp`` (ms after an
  unstated start), ``input_length``, ``output_length``, ``hash_ids``; one hour; ingested with
  ``--map``, ``--timestamp-unit ms``, ``--origin`` and ``--model``.

Each test runs the commands from the user's side (CliRunner, a config written here) and checks
that every output says plainly what could not be measured: no SLI of 100 % from a defaulted
status, no growth forecast from one hour, latency modelled for the pool's own architecture,
drift saying there is no baseline; and that nothing crashes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from capplan.cli import app

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

#: the pool both traces are planned as (a catalogue architecture, fixed GPU and TP: no automatic choice)
CONFIG = """\
[database]
path = "trace.duckdb"
[report]
out_dir = "out"
[forecast]
horizon_months = 2
[[pools]]
name = "serving"
models = ["{model}"]
model = "{model}"
gpu = "H100-SXM-80GB"
tensor_parallel = 4
[[slos]]
name = "availability"
target = 0.99
window_days = 30
[[slos]]
name = "ttft-5s"
target = 0.95
window_days = 30
ttft_threshold_ms = 5000.0
"""


def _azure(folder: Path, seed: int = 7) -> Path:
    """One hour of an Azure 2023 conversation trace look-alike, ~5 requests/s (18,000 rows)."""
    rng = np.random.default_rng(seed)
    n = 18_000
    ts = pd.Timestamp("2023-11-16 18:00:00") + pd.to_timedelta(np.sort(rng.uniform(0, 3600, n)), unit="s")
    frame = pd.DataFrame({"TIMESTAMP": ts.strftime("%Y-%m-%d %H:%M:%S.%f") + "0",  # 7 digits, as the trace
                          "ContextTokens": np.minimum(rng.lognormal(6.5, 1.0, n).astype(int) + 1, 100_000),
                          "GeneratedTokens": rng.lognormal(4.0, 1.0, n).astype(int) + 1})
    path = folder / "AzureLLMInferenceTrace_conv_1hour.csv"
    frame.to_csv(path, index=False)
    return path


def _mooncake(folder: Path, seed: int = 3) -> Path:
    """One hour of a Mooncake conversation trace look-alike: 12,031 requests, ms offsets, block hash ids."""
    rng = np.random.default_rng(seed)
    n = 12_031
    path = folder / "conversation_trace.jsonl"
    with path.open("w") as out:
        for t in np.sort(rng.integers(0, 3_600_000, n)):
            inputs = int(min(rng.lognormal(8.5, 0.9), 126_000))
            out.write(json.dumps({"timestamp": int(t), "input_length": inputs,
                                  "output_length": int(rng.lognormal(5.5, 0.8)) + 1,
                                  "hash_ids": rng.integers(0, 50_000, min((inputs + 511) // 512, 40)).tolist()})
                      + "\n")
    return path


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _every_command(folder: Path, trace: Path, model: str, ingest_options: list[str], rows: int) -> dict:
    """ingest, profile, slo, drift, forecast and plan of ``trace`` with ``--json``; returns each parsed output."""
    config = folder / "capplan.toml"
    config.write_text(CONFIG.format(model=model))
    cfg = ["--config", str(config)]
    code, out, err = _run("ingest", str(trace), *cfg, *ingest_options, "--model", model, "--json")
    assert code == 0, err
    (loaded,) = json.loads(out)
    assert (loaded["status"], loaded["rows_read"], loaded["rows_loaded"]) == ("loaded", rows, rows)
    assert loaded["notes"] == []  # a plausible time range: the origin and unit were right
    outputs = {"ingest": loaded}
    for command in ("profile", "slo", "drift"):
        code, out, err = _run(command, *cfg, "--json")
        assert code == 0, f"capplan {command}: {err}"
        outputs[command] = json.loads(out)
    code, out, err = _run("forecast", *cfg, "--json")  # one hour: nothing to forecast, said plainly
    assert code == 1 and json.loads(out)["error"]["type"] == "error"
    outputs["forecast"] = json.loads(out)["error"]["message"]
    code, out, err = _run("plan", *cfg, "--json")
    assert code == 0, err
    outputs["plan"] = json.loads(out)
    # read the Markdown as a person does: without its escapes (``latency\\_ms`` is ``latency_ms``)
    outputs["report"] = re.sub(r"\\(.)", r"\1", (Path(outputs["plan"]["report_dir"]) / "report.md").read_text())
    return outputs


def _check_says_what_it_cannot_measure(o: dict, model: str, rows: int) -> None:
    profile, slo, drift, report = o["profile"], o["slo"], o["drift"], o["report"]
    assert profile["hours"] == 1 and profile["total_requests"] == rows
    # no SLI of 100 % from a status every request was given
    assert profile["sli"]["success_rate"] is None and profile["sli"]["good_fraction"] is None
    assert "not measurable" in profile["sli"]["not_measurable"]
    assert {"status", "ttft_ms", "latency_ms"} <= set(profile["defaulted_columns"])
    assert slo["slos"] == [] and {s["name"] for s in slo["not_measurable"]} == {"availability", "ttft-5s"}
    assert all("would read 100 % from defaulted values" in s["reason"] for s in slo["not_measurable"])
    # drift: no baseline in one hour, and nothing priced from a forecast of one hour
    assert drift["windows_compared"] == 0 and drift["findings"] == []
    assert "a drift test needs 35 days of history; only 1.0 h exist" in drift["not_tested"]
    assert drift["cost_change"]["skipped"].startswith("the log covers no whole month")
    assert "the forecaster needs at least 3" in o["forecast"] and "1 h of traffic" in o["forecast"]
    # the plan: flat at the observed peak, latency modelled for the pool's architecture, SLOs unknown
    headline = report.split("## Budget")[0]
    assert "only 1.0 h of history (a growth forecast needs 336 h = 14 days): no growth forecast" in headline
    assert f"latency modelled as" in headline and f"output token for {model} on H100-SXM-80GB" in headline
    assert "SLO 'availability' is not measurable from these logs" in headline
    assert "the drift test (a window after its baseline) needs 35 days of history; only 1.0 h exist" in headline
    assert re.search(r"^\| serving: latency_s \| [\d.]+ \| s \| modelled \|$", report, re.M)
    assert re.search(r"^\| serving: demand model \| flat \(observed level, one level\) \|  \| assumed \|$", report,
                     re.M)
    assert re.search(r"^\| serving: requests measured \(2xx\) \| [\d,]+ \| requests \| assumed \|$", report, re.M)
    assert "no baseline to compare with" in report and "baseline (28 days)" not in report
    (pool,) = o["plan"]["pools"]
    assert pool["architecture"] == model and pool["latency_s"] > 0


def test_azure_2023_lookalike_with_the_azure_preset(prefect_harness, tmp_path):
    trace = _azure(tmp_path)
    outputs = _every_command(tmp_path, trace, "llama-3.1-70b", ["--preset", "azure"], rows=18_000)
    _check_says_what_it_cannot_measure(outputs, "llama-3.1-70b", 18_000)
    assert outputs["profile"]["span_start"] == "2023-11-16T18:00:00"


def test_mooncake_lookalike_with_map_unit_and_origin(prefect_harness, tmp_path):
    trace = _mooncake(tmp_path)
    options = ["--map", "ts_utc=timestamp", "--map", "input_tokens=input_length", "--map",
               "output_tokens=output_length", "--timestamp-unit", "ms", "--origin", "2024-06-01T00:00:00Z"]
    outputs = _every_command(tmp_path, trace, "qwen2.5-72b", options, rows=12_031)
    _check_says_what_it_cannot_measure(outputs, "qwen2.5-72b", 12_031)
    assert outputs["profile"]["span_start"] == "2024-06-01T00:00:00"  # ms offsets after the stated origin
