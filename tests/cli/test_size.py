"""``capplan size``: the golden case end to end through the CLI, catalogue inputs, config defaults, errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from capplan.cli import app
from capplan.cli.size import format_value

GOLDEN = ["size", "--requests-per-day", "2000000", "--peak-to-avg", "4", "--latency-s", "6", "--output-tokens", "400",
          "--gpu-output-tokens-per-s", "2000", "--target-utilisation", "0.6", "--seqs-per-gpu", "40", "--spares", "1"]


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_golden_case_json():
    result = run(*GOLDEN, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    values = {r["term"]: r["value"] for r in data["rows"]}
    assert round(values["average QPS"], 1) == 23.1 and round(values["peak QPS"], 1) == 92.6
    assert round(values["requests in flight (L = λ·W)"]) == 556
    assert round(values["output tokens/s at peak"]) == 37_037
    assert round(values["GPUs by throughput"], 1) == 30.9
    assert round(values["GPUs by concurrency (memory)"], 1) == 23.1
    assert data["binding_constraint"] == "throughput" and data["total_gpus"] == 32


def test_golden_case_table():
    result = run(*GOLDEN)
    assert result.exit_code == 0, result.output
    assert "Fleet sizing: 32 GPUs (throughput binds)" in result.stdout
    for shown in ("23.1", "92.6", "556", "37,037", "30.9"):
        assert shown in result.stdout


def test_catalogue_gpu_and_model_instead_of_seqs_per_gpu():
    result = run("size", "--peak-qps", "92.6", "--latency-s", "6", "--output-tokens", "400", "--input-tokens", "1500",
                 "--kv-tokens", "4000", "--gpu", "H100-SXM-80GB", "--model", "llama-3.1-70b",
                 "--zones", "3", "--zones-lost", "1", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["gpu"] == "H100-SXM-80GB" and data["model"] == "llama-3.1-70b"
    assert data["tensor_parallel"] == 2 and data["kv_bytes_per_token"] == 327_680 / 2
    assert data["total_gpus"] % 2 == 0 and data["replicas"] % 3 == 0


def test_config_supplies_defaults_and_flags_override(tmp_path):
    cfg = tmp_path / "capplan.toml"
    cfg.write_text("[sizing]\nzones = 3\nzones_lost = 1\nspares = 0\n")
    with_cfg = json.loads(run(*GOLDEN[:-2], "--config", str(cfg), "--json").stdout)
    assert (with_cfg["zones"], with_cfg["spares"], with_cfg["total_gpus"]) == (3, 0, 48)   # 3 × ceil(30.9 / 2)
    flag_wins = json.loads(run(*GOLDEN[:-2], "--config", str(cfg), "--zones", "1", "--zones-lost", "0", "--json").stdout)
    assert flag_wins["total_gpus"] == 31


def test_storage_rows():
    data = json.loads(run(*GOLDEN, "--input-tokens", "1000", "--retention-days", "30", "--json").stdout)
    per_day, kept = data["storage"]
    assert per_day["value"] == pytest.approx(2_000_000 * 1_400 * 4 / 1e9)   # GB/day
    assert kept["value"] == pytest.approx(per_day["value"] * 30)


@pytest.mark.parametrize(("extra", "message"), [
    (["--peak-qps", "10"], "give exactly one of --requests-per-day"),
    (["--gpu", "TPU-v5e"], "unknown GPU 'TPU-v5e'"),   # was B200, now in the catalogue (issue 18)
    (["--zones", "2", "--zones-lost", "2"], "zones_lost must be a whole number"),
    (["--kv-dtype", "fp6"], "dtype must be one of"),
    (["--model", "llama-3.1-70b", "--tensor-parallel", "1", "--seqs-per-gpu", "40"], "does not fit on 1 x H100-SXM-80GB"),
])
def test_errors_are_one_line_with_exit_code_2(extra, message):
    result = run(*GOLDEN, *extra)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("value", "shown"), [(32, "32"), (37037.04, "37,037"), (30.864, "30.9"), (0.6, "0.6"),
                                              (0.1358, "0.136"), ("throughput", "throughput")])
def test_format_value(value, shown):
    assert format_value(value) == shown


def test_wait_slo_flag_derives_the_utilisation():
    data = json.loads(run(*GOLDEN, "--wait-target-s", "0.5", "--json").stdout)
    assert data["sources"]["target_utilisation"] == "derived"
    assert data["target_utilisation"] == pytest.approx(data["concurrency"] / 587, rel=1e-12)


@pytest.mark.parametrize(("args", "message"), [
    (["--requests-per-day", "2000000"], "--requests-per-day needs --peak-to-avg"),
    (["--peak-qps", "9", "--retention-days", "3"], "--retention-days needs --requests-per-day"),
])
def test_incomplete_demand_flags(args, message):
    result = run("size", "--latency-s", "6", "--output-tokens", "400", "--seqs-per-gpu", "40", *args)
    assert result.exit_code == 2 and message in " ".join(result.output.split())


def test_config_memory_settings_reach_the_kv_terms(tmp_path):
    cfg = tmp_path / "capplan.toml"
    cfg.write_text('[sizing]\nmodel = "llama-3.1-70b"\nkv_dtype = "fp8"\ntensor_parallel = 4\n')
    data = json.loads(run("size", "--peak-qps", "50", "--latency-s", "6", "--output-tokens", "400",
                          "--kv-tokens", "2000", "--config", str(cfg), "--json").stdout)
    assert data["tensor_parallel"] == 4
    assert data["kv_bytes_per_token"] == 2 * 80 * 2 * 128 * 1   # 8 KV heads over 4 GPUs, 1 byte each in fp8


def test_pools_flag_sizes_every_pool_of_the_config(tmp_path):
    """Each [[pools]] entry at the same load with its own settings; the auto pool equals its cheapest option."""
    from capplan.config import load_config
    from capplan.plan.inputs import MeasuredInputs
    from capplan.plan.pools import config_pools, gpu_options, pool_fleet_spec
    from capplan.sizing.cost.prices import load_price_book
    from capplan.sizing.fleet import size_fleet

    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text('[sizing]\nspares = 0\n'
                        '[[pools]]\nname = "chat"\nmodel = "llama-3.1-8b"\ngpu = "A100-SXM-80GB"\n'
                        '[[pools]]\nname = "big"\nmodel = "llama-3.1-70b"\ngpu = "auto"\ntensor_parallel = "auto"\n'
                        'spares = 1\n')
    load = ["--peak-qps", "20", "--latency-s", "5", "--output-tokens", "300", "--input-tokens", "1000"]
    result = run("size", "--config", str(cfg_file), "--pools", *load, "--json")
    assert result.exit_code == 0, result.output
    chat, big = json.loads(result.stdout)
    assert (chat["pool"], chat["gpu"], chat["model"], chat["spares"]) == ("chat", "A100-SXM-80GB", "llama-3.1-8b", 0)
    assert (big["pool"], big["model"], big["spares"]) == ("big", "llama-3.1-70b", 1) and big["tensor_parallel"] >= 2
    assert chat["throughput_source"] == big["throughput_source"] == "modelled"   # as the plan's pools
    cfg = load_config(cfg_file)
    book = load_price_book(cfg.cost.price_book)
    mix = MeasuredInputs(first_ts_utc=None, last_ts_utc=None, requests=0, input_tokens_per_request=1000.0,
                         output_tokens_per_request=300.0, latency_s=5.0, kv_tokens_per_sequence=1300.0, burst_ratio=1.0)
    costs = {}
    for gpu, tp in gpu_options(cfg, config_pools(cfg)[1]):
        try:
            f = size_fleet(peak_qps=20, latency_s=5, output_tokens_per_request=300, input_tokens_per_request=1000,
                           spec=pool_fleet_spec(cfg, config_pools(cfg)[1], gpu, tp, mix))
        except ValueError:
            continue
        costs[(gpu, f.tensor_parallel)] = f.total_gpus * book.gpu(gpu).reserved_usd_per_gpu_hour("1y")
    assert (big["gpu"], big["tensor_parallel"]) == min(costs, key=costs.get)


def test_without_a_flat_rate_the_performance_model_gives_it_and_json_says_so():
    """--model/--gpu/--tp/--precision/--input-tokens/--output-tokens: the modelled rate, as the plan's pools get it."""
    from capplan.plan.throughput import modelled_throughput
    from capplan.sizing.catalogue import get_gpu, get_model

    args = ["size", "--peak-qps", "20", "--latency-s", "6", "--output-tokens", "400", "--input-tokens", "1500",
            "--model", "llama-3.1-70b", "--gpu", "H100-SXM-80GB", "--tp", "2", "--precision", "fp8",
            "--tpot-ms-max", "60", "--json"]
    result = run(*args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    want = modelled_throughput(get_model("llama-3.1-70b"), get_gpu("H100-SXM-80GB"), 2, "fp8", 1500.0, 400.0,
                               tpot_ms_max=60.0)
    assert data["throughput_source"] == "modelled" and data["sources"]["gpu_output_tokens_per_s"] == "modelled"
    assert data["gpu_output_tokens_per_s"] == pytest.approx(want.gpu_output_tokens_per_s)
    assert data["gpus_for_prefill"] == 0.0 and data["tensor_parallel"] == 2
    assert "TPOT <= 60 ms" in data["throughput_note"] and data["kv_bytes_per_token"] == 327_680 / 2 / 2  # fp8
    golden = json.loads(run(*GOLDEN, "--json").stdout)
    assert golden["throughput_source"] == "assumed" and golden["total_gpus"] == 32


def test_a_precision_the_model_cannot_run_falls_back_to_the_catalogue_with_the_reason():
    data = json.loads(run("size", "--peak-qps", "5", "--latency-s", "6", "--output-tokens", "400",
                          "--model", "llama-3.1-8b", "--precision", "int8", "--json").stdout)
    assert data["throughput_source"] == "assumed" and "performance model unavailable" in data["throughput_note"]
    result = run("size", "--peak-qps", "5", "--latency-s", "6", "--output-tokens", "400",
                 "--gpu-prefill-tokens-per-s", "9000")
    assert result.exit_code == 2 and "needs --gpu-output-tokens-per-s" in " ".join(result.output.split())
