"""Pool resolution (config → pools), the one FleetSpec builder, and a pool's summed traffic."""

from __future__ import annotations

from dataclasses import replace

import duckdb
import numpy as np
import pandas as pd
import pytest

from capplan.config import CapplanConfig, ConfigError, PoolConfig, parse_config
from capplan.plan.pools import (AUTO_TENSOR_PARALLEL, PoolError, catalogue_model_of, gpu_options, pool_fleet_spec,
                                pool_for_model_id, pool_latency_targets, pool_notes, pool_traffic, priced_gpus, resolve_pools, token_mix_of, unused_pools)
from capplan.loadtest.store import import_file
from capplan.plan.throughput import load_tests_for_plan, modelled_throughput
from capplan.sizing.catalogue import load_gpus

LOG_MODELS = ["llama-3.1-70b", "llama-3.1-8b", "my-finetune"]


def test_without_pools_each_log_model_is_its_own_pool_and_unknown_ones_are_named():
    cfg = parse_config({"sizing": {"gpu": "A100-SXM-80GB", "spares": 2}})
    pools = resolve_pools(cfg, LOG_MODELS + ["__all__"])
    assert [(p.name, p.models, p.model, p.gpu) for p in pools] == [
        ("llama-3.1-70b", ("llama-3.1-70b",), "llama-3.1-70b", "A100-SXM-80GB"),
        ("llama-3.1-8b", ("llama-3.1-8b",), "llama-3.1-8b", "A100-SXM-80GB"),
        ("my-finetune", ("my-finetune",), "llama-3.1-8b", "A100-SXM-80GB")]  # [sizing].model, flagged
    assert [p.default_architecture for p in pools] == [False, False, True]
    (note,) = pool_notes(pools)
    assert "my-finetune" in note and "llama-3.1-8b" in note and "[[pools]]" in note
    assert pool_fleet_spec(cfg, pools[0]).spares == 2  # [sizing] is every pool's default


def test_pools_take_their_models_the_wildcard_the_rest_and_settings_override_sizing():
    cfg = parse_config({"sizing": {"zones": 2}, "pools": [
        {"name": "big", "models": ["llama-3.1-70b"], "model": "llama-3.1-70b", "tensor_parallel": 4,
         "precision": "fp8", "spares": 0, "interruptible_share": 0.5},
        {"name": "rest", "models": ["*"], "model": "llama-3.1-8b", "gpu": "L40S-48GB"},
        {"name": "idle", "models": ["not-in-logs"]}]})
    pools = resolve_pools(cfg, LOG_MODELS)
    assert [(p.name, p.models) for p in pools] == [("big", ("llama-3.1-70b",)),
                                                   ("rest", ("llama-3.1-8b", "my-finetune"))]
    assert unused_pools(cfg, pools) == ["idle"]
    big = pool_fleet_spec(cfg, pools[0])
    assert (big.model.key, big.gpu.key, big.tensor_parallel, big.weights_dtype, big.kv_dtype, big.spares,
            big.zones) == ("llama-3.1-70b", "H100-SXM-80GB", 4, "fp8", "fp8", 0, 2)
    assert pools[0].interruptible_share == 0.5 and pools[1].interruptible_share is None
    assert pool_fleet_spec(cfg, pools[1]).gpu.key == "L40S-48GB"


def test_a_log_model_no_pool_serves_is_an_error_naming_it_and_the_fix():
    cfg = parse_config({"pools": [{"name": "big", "models": ["llama-3.1-70b"]}]})
    with pytest.raises(PoolError, match=r"'llama-3.1-8b' is served by no pool.*models = \[\.\.\., 'llama-3.1-8b'\]"
                                        r".*name = 'big'.*models = \[\"\*\"\].*also unserved: my-finetune"):
        resolve_pools(cfg, LOG_MODELS)


@pytest.mark.parametrize(("pools", "message"), [
    ([{"name": "a", "models": ["x"]}, {"name": "b", "models": ["x"]}], "listed by two pools"),
    ([{"name": "a", "models": ["*"]}, {"name": "b", "models": ["*"]}], "both list"),
    ([{"name": "a", "models": ["x"]}, {"name": "a", "models": ["y"]}], "more than one pool"),
])
def test_contradicting_pools_are_errors(pools, message):
    with pytest.raises(PoolError, match=message):
        resolve_pools(parse_config({"pools": pools}), ["x", "y"])


def test_bad_pool_fields_are_config_errors():
    with pytest.raises(ConfigError, match="pools.0.tensor_parallel"):
        parse_config({"pools": [{"name": "a", "tensor_parallel": "most"}]})
    with pytest.raises(ConfigError, match="pools.0.colour"):
        parse_config({"pools": [{"name": "a", "colour": "red"}]})


def test_auto_gpu_tries_every_catalogue_gpu_and_with_auto_tp_every_degree():
    cfg = parse_config({"pools": [{"name": "a", "gpu": "auto", "tensor_parallel": "auto"},
                                  {"name": "b", "gpu": "auto"}, {"name": "c", "tensor_parallel": "auto"}]})
    a, b, c = resolve_pools(cfg, ["a", "b", "c"])
    gpus = ["A100-SXM-80GB", "H100-SXM-80GB", "H200-141GB", "L40S-48GB"]  # catalogue GPUs the price book prices
    assert set(gpus) < set(load_gpus())
    assert gpus == priced_gpus(cfg)
    assert gpu_options(cfg, a) == [(g, tp) for g in gpus for tp in AUTO_TENSOR_PARALLEL]
    assert gpu_options(cfg, b) == [(g, None) for g in gpus]  # the smallest degree that fits each
    assert gpu_options(cfg, c) == [("H100-SXM-80GB", None)]
    with pytest.raises(ValueError, match="auto"):
        pool_fleet_spec(cfg, a)


def test_pool_traffic_sums_its_models_hour_by_hour():
    hours = pd.date_range("2026-11-01", periods=3, freq="h")
    rows = []
    for model, qps, start in (("x", 1.0, 0), ("y", 2.0, 1), ("z", 9.0, 0)):
        for h in hours[start:]:
            rows.append({"hour_utc": h, "model": model, "requests": 3600 * qps, "avg_qps": qps,
                         "peak_second_qps": 3 * qps, "concurrency_littles": qps * 2,
                         "concurrency_measured_peak": 4 * qps, "is_gap": False, "exposure_s": 3600.0})
    by_model = pd.DataFrame(rows)
    cfg = parse_config({"pools": [{"name": "p", "models": ["x", "y"]}, {"name": "q", "models": ["z"]}]})
    p, _ = resolve_pools(cfg, ["x", "y", "z"])
    hourly, daily = pool_traffic(by_model, p)
    assert hourly["avg_qps"].tolist() == [1.0, 3.0, 3.0]  # y starts an hour later: it adds 0 before
    assert hourly["requests"].tolist() == [3600.0, 10800.0, 10800.0]
    assert hourly["exposure_s"].tolist() == [3600.0] * 3
    assert hourly["concurrency_littles"].tolist() == [2.0, 6.0, 6.0]
    assert hourly["peak_second_qps"].tolist() == [3.0, 9.0, 9.0]  # an upper band of the pool's busiest second
    assert not hourly["is_gap"].any() and daily["avg_qps"].iloc[0] == pytest.approx(7 / 3)


def test_latency_targets_are_the_pools_own_else_the_tightest_slo_over_its_models():
    cfg = parse_config({"pools": [{"name": "a", "models": ["x"]}, {"name": "b", "models": ["y"], "ttft_ms_max": 300.0,
                                                                   "tpot_ms_max": 25.0}, {"name": "c", "models": ["z"]}],
                        "slos": [{"name": "all", "ttft_threshold_ms": 5000.0}, {"name": "x1", "model": "x",
                                                                                 "ttft_threshold_ms": 1500.0},
                                 {"name": "avail"}]})
    a, b, c = resolve_pools(cfg, ["x", "y", "z"])
    assert pool_latency_targets(cfg, a) == (1500.0, None)   # its model's SLO is tighter than the all-model one
    assert pool_latency_targets(cfg, b) == (300.0, 25.0)    # its own targets win
    assert pool_latency_targets(cfg, c) == (5000.0, None)   # only the all-model SLO covers z
    assert pool_latency_targets(parse_config({"profile": {"ttft_threshold_ms": 900.0}}), c) == (900.0, None)


def test_with_a_measured_mix_the_spec_is_modelled_on_the_tp_it_uses_and_a_flat_rate_stays_given(measured):
    cfg = parse_config({"pools": [{"name": "big", "models": ["x"], "model": "llama-3.1-70b"}]})
    (big,) = resolve_pools(cfg, ["x"])
    spec = pool_fleet_spec(cfg, big, measured=measured)
    assert (spec.throughput_source, spec.tensor_parallel, spec.prefill_in_output_rate) == ("modelled", 2, True)
    assert spec.gpu_output_tokens_per_s == modelled_throughput(
        spec.model, spec.gpu, 2, "bf16", measured.input_tokens_per_request, measured.output_tokens_per_request,
        ttft_ms_max=None).gpu_output_tokens_per_s
    assert pool_fleet_spec(cfg, big).throughput_source == "assumed"  # no mix, no model
    flat = replace(big, settings={"gpu_output_tokens_per_s": 900.0})
    given = pool_fleet_spec(cfg, flat, measured=measured)
    assert (given.gpu_output_tokens_per_s, given.throughput_source, given.prefill_in_output_rate) == (900.0, "assumed",
                                                                                                    False)


def test_the_histogram_mix_is_used_when_measured(measured):
    hist = replace(measured, input_tokens_histogram=(np.array([400.0, 1200.0]), np.array([1.0, 1.0])),
                   output_tokens_histogram=(np.array([250.0]), np.array([3.0])))
    assert token_mix_of(measured) == (800.0, 250.0)
    cfg = parse_config({})
    (pool,) = resolve_pools(cfg, ["llama-3.1-8b"])
    spec = pool_fleet_spec(cfg, pool, measured=hist)
    assert "(histogram)" in spec.throughput_note
    # the same mean but a second moment: E[n²] = (400² + 1200²) / 2 = 800,000 > 800² — prefill attention grows
    assert spec.gpu_output_tokens_per_s <= pool_fleet_spec(cfg, pool, measured=measured).gpu_output_tokens_per_s


@pytest.mark.parametrize(("model_id", "key"), [
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("meta-llama/Meta-Llama-3.1-70B-Instruct-FP8", "llama-3.1-70b"),
    ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
    ("llama-3.1-405b", "llama-3.1-405b"),
    ("meta-llama/Llama-3.1-80B", None),  # a key followed by more digits is another model
    ("gpt2", None),
])
def test_a_served_model_id_names_its_catalogue_model(model_id, key):
    catalogue = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen2.5-7b", "qwen2.5-72b"]
    assert catalogue_model_of(model_id, catalogue) == key


def test_a_load_test_run_belongs_to_the_pool_that_serves_or_runs_its_model():
    cfg = CapplanConfig(pools=[
        PoolConfig(name="chat", models=["chat-8b"], model="llama-3.1-8b"),
        PoolConfig(name="large", models=["llama-3.1-70b", "tenant-x"], model="llama-3.1-70b"),
        PoolConfig(name="rest", models=["*"], model="qwen2.5-7b"),
    ])
    assert pool_for_model_id(cfg, "tenant-x") == "large"  # listed by name
    assert pool_for_model_id(cfg, "meta-llama/Llama-3.1-8B-Instruct") == "chat"  # runs its catalogue model
    assert pool_for_model_id(cfg, "Qwen/Qwen2.5-7B-Instruct") == "rest"
    assert pool_for_model_id(cfg, "mistralai/Mistral-Large") == "chat"  # failing that, the first pool
    assert pool_for_model_id(cfg, None) == "chat"
    bare = CapplanConfig()  # no [[pools]]: the pools are the log models, named as the catalogue names them
    assert pool_for_model_id(bare, "meta-llama/Llama-3.1-70B-Instruct") == "llama-3.1-70b"
    assert pool_for_model_id(bare, "my-finetune") == "my-finetune"


def test_a_load_test_stands_only_for_its_own_model_and_for_a_chosen_gpu_only_when_it_names_one(
        tmp_path, measured, write_vllm_sweep):
    """vLLM's files name no GPU: on a pool of a fixed GPU the run is taken as that GPU's; on a pool whose GPU is
    chosen ("auto") it could stand for every candidate, so it is not used until the GPU is known (the file's or
    ``loadtest import --gpu``). A run of another catalogue model never stands for the pool."""
    con = duckdb.connect()
    for path in write_vllm_sweep(tmp_path, tp=2):
        import_file(con, path, pool="big")
    runs = load_tests_for_plan(con, ["big"])
    pool = {"name": "big", "models": ["x"], "model": "llama-3.1-70b", "tensor_parallel": 2, "ttft_ms_max": 1000.0}
    fixed_cfg = parse_config({"pools": [pool | {"gpu": "H100-SXM-80GB"}]})
    (fixed,) = resolve_pools(fixed_cfg, ["x"])
    found = {"measured", "calibrated"}
    assert pool_fleet_spec(fixed_cfg, fixed, measured=measured, load_tests=runs).throughput_source in found
    mistral = runs.assign(model_id="mistralai/Mistral-7B-v0.3")
    assert pool_fleet_spec(fixed_cfg, fixed, measured=measured, load_tests=mistral).throughput_source == "modelled"
    auto_cfg = parse_config({"pools": [pool | {"gpu": "auto"}]})
    (auto,) = resolve_pools(auto_cfg, ["x"])
    on = dict(gpu="H100-SXM-80GB", tensor_parallel=2, measured=measured)
    assert pool_fleet_spec(auto_cfg, auto, **on, load_tests=runs).throughput_source == "modelled"
    named = runs.assign(gpu="H100-SXM-80GB")
    assert pool_fleet_spec(auto_cfg, auto, **on, load_tests=named).throughput_source in found
    assert pool_fleet_spec(auto_cfg, auto, **on | {"gpu": "L40S-48GB"}, load_tests=named).throughput_source != "measured"
