"""``capplan perf``: the three modes, the sweep, JSON and one-line errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from capplan.cli import app
from capplan.sizing.performance import replica_throughput

BASE = ["perf", "--model", "llama-3.1-70b", "--gpu", "H100-SXM-80GB", "--tp", "2", "--precision", "fp8",
        "--input-tokens", "1000", "--output-tokens", "1000"]


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_json_matches_the_library_call():
    result = run(*BASE, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    expected = replica_throughput(model="llama-3.1-70b", gpu="H100-SXM-80GB", tensor_parallel=2, precision="fp8",
                                  input_tokens=1000, output_tokens=1000)
    assert data["result"]["output_tokens_per_s_per_gpu"] == pytest.approx(expected.output_tokens_per_s_per_gpu)
    assert data["result"]["batch"] == expected.batch and data["sweep"] == []
    assert data["source"].startswith("modelled")


def test_concurrency_and_latency_targets():
    by_concurrency = json.loads(run(*BASE, "--concurrency", "8", "--json").stdout)["result"]
    assert (by_concurrency["batch"], by_concurrency["binds"]) == (8, "concurrency")
    by_target = json.loads(run(*BASE, "--tpot-ms-max", "30", "--json").stdout)["result"]
    assert by_target["tpot_ms"] <= 30 and by_target["meets_targets"]


def test_sweep_rises_in_throughput_and_tpot():
    data = json.loads(run(*BASE, "--sweep", "--json").stdout)
    batches = [p["batch"] for p in data["sweep"]]
    assert batches[0] == 1 and batches[-1] == data["result"]["batch"] and batches == sorted(set(batches))
    tput = [p["output_tokens_per_s_per_gpu"] for p in data["sweep"]]
    tpot = [p["tpot_ms"] for p in data["sweep"]]
    assert tput == sorted(tput) and tpot == sorted(tpot)


def test_table_output():
    result = run(*BASE, "--sweep")
    assert result.exit_code == 0, result.output
    assert "tokens/(s·GPU)" in result.stdout and "Sweep over batch size" in result.stdout and "modelled" in result.stdout


@pytest.mark.parametrize(("extra", "match"), [
    (["--gpu", "A100-SXM-80GB"], "has no fp8 tensor cores; valid precisions: bf16, fp16"),
    (["--model", "nope"], "unknown model 'nope'; valid:"),
    (["--concurrency", "4", "--tpot-ms-max", "50"], "not both"),
])
def test_errors_are_one_line_exit_2(extra, match):
    result = run(*BASE, *extra)
    assert result.exit_code == 2
    assert match in result.output and "Traceback" not in result.output
