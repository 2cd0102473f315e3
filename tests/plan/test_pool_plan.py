"""One pool's plan and the fleet of pools: a hand-checked two-pool case, sums, the auto choice, monotonicity."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capplan.config import parse_config
from capplan.db import connect
from capplan.history.record import pool_rows
from capplan.plan.assumptions import pool_assumptions
from capplan.loadtest.store import import_file
from capplan.plan.fleet import fleet_for
from capplan.plan.pool_plan import choose_pool_gpu, fleet_plan, plan_pool
from capplan.plan.pools import Pool, gpu_options, pool_fleet_spec
from capplan.plan.throughput import load_tests_for_plan, modelled_throughput
from capplan.sizing.cost.prices import load_price_book

MONTHS = ["2026-12"]
#: Hand-checkable settings: catalogue rates replaced by round figures, no headroom.
SIMPLE = {"gpu_output_tokens_per_s": 1000.0, "seqs_per_gpu": 10.0, "target_utilisation": 0.5, "spares": 0,
          "zones": 1, "rollout_surge_fraction": 0.0}


def _pool(name: str, **changes) -> Pool:
    base = Pool(name=name, models=(name,), model="llama-3.1-8b", gpu="H100-SXM-80GB", tensor_parallel=1,
                settings=dict(SIMPLE))
    return replace(base, **changes)


@pytest.fixture
def cfg():
    return parse_config({"cost": {"interruptible_share": 0.0, "commit_level": "P50"}})


def test_two_pools_by_hand(cfg, measured, flat_forecast):
    """Two pools on H100, each request 250 output tokens, no prompt, 4 s in flight; burst ratio 1.5.

    Settings: 1,000 decode tokens/s and 10 sequences per GPU, utilisation 0.5, no headroom, TP 1.
    The forecast is flat; P10/P50/P90 = 0.8 / 1 / 1.3 × the mean.

    Pool *a*, mean 4 req/s. P50 peak = 1.5 × 4 = 6 req/s: throughput 6 × 250 / (1,000 × 0.5) = 3 GPUs;
    memory 6 × 4 s = 24 in flight / (10 × 0.5) = 4.8 → **5 GPUs**, memory binds. P90 peak 7.8 req/s:
    31.2 / 5 = 6.24 → **7**. P10 peak 4.8: 19.2 / 5 = 3.84 → **4**.
    Pool *b*, mean 2 req/s. P50 peak 3: 12 / 5 = 2.4 → **3**; P90 3.9: 15.6 / 5 = 3.12 → **4**; P10 2.4: 1.92 → **2**.
    Fleet: P50 5 + 3 = **8**, P90 7 + 4 = **11** (the sum of the pools' P90s).
    Commitment: the need is flat, so each pool reserves its P50 need (5 and 3) and so does the shared
    commitment (8): no saving; the P50 cost is 8 × 744 h × the reserved rate (all reserved, nothing on demand).
    """
    m = replace(measured, input_tokens_per_request=0.0, output_tokens_per_request=250.0, latency_s=4.0)
    hours = 31 * 24
    plans = [plan_pool(cfg, _pool(name), flat_forecast("2026-12-01", hours, mean), MONTHS, m)
             for name, mean in (("a", 4.0), ("b", 2.0))]
    got = {p.name: p.sized.months.iloc[0][["gpus_p10", "gpus_p50", "gpus_p90", "binding"]].tolist() for p in plans}
    assert got == {"a": [4, 5, 7, "memory"], "b": [2, 3, 4, "memory"]}
    fleet = fleet_plan(plans, cfg)
    row = fleet.months.iloc[0]
    assert (row["gpus_p10"], row["gpus_p50"], row["gpus_p90"]) == (6, 8, 11)
    shared = fleet.commitments["H100-SXM-80GB"]
    assert (shared.reserved_gpus, shared.per_pool_reserved_gpus, shared.saving_usd) == (8, {"a": 5, "b": 3}, 0.0)
    rate = load_price_book(cfg.cost.price_book).gpu("H100-SXM-80GB").reserved_usd_per_gpu_hour("1y")
    assert row["cost_usd_p50"] == pytest.approx(8 * hours * rate)
    assert row["cost_usd_p50"] == pytest.approx(sum(p.costs["P50"].months[0].total_cost_usd for p in plans))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(means=st.lists(st.floats(0.1, 30.0), min_size=1, max_size=3))
def test_fleet_total_is_the_sum_of_its_pools(means, measured, flat_forecast):
    cfg = parse_config({})
    plans = [plan_pool(cfg, _pool(f"p{i}", settings={}), flat_forecast("2026-12-01", 48, q), MONTHS, measured)
             for i, q in enumerate(means)]
    fleet = fleet_plan(plans, cfg).months.iloc[0]
    for column in ("gpus_p10", "gpus_p50", "gpus_p90"):
        assert fleet[column] == sum(int(p.sized.months.iloc[0][column]) for p in plans)
    for level in ("P10", "P50", "P90"):
        assert fleet[f"cost_usd_{level.lower()}"] == pytest.approx(
            sum(p.costs[level].months[0].total_cost_usd for p in plans))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.floats(0.01, 200.0), more=st.floats(0.0, 200.0), model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b"]),
       gpu=st.sampled_from(["H100-SXM-80GB", "A100-SXM-80GB", "H200-141GB"]), spares=st.integers(0, 2),
       zones=st.integers(1, 3))
def test_a_pools_gpus_never_fall_as_its_demand_rises(q, more, model, gpu, spares, zones, measured):
    cfg = parse_config({})
    pool = _pool("p", model=model, gpu=gpu, tensor_parallel=None, settings={"spares": spares, "zones": zones})
    spec = pool_fleet_spec(cfg, pool, measured=measured)
    assert fleet_for(q, spec, measured).total_gpus <= fleet_for(q + more, spec, measured).total_gpus


def test_auto_equals_planning_every_option_and_keeping_the_cheapest(cfg, measured, flat_forecast):
    """gpu = tensor_parallel = "auto" for a 70B pool: the choice is the option whose own plan is cheapest."""
    fc = flat_forecast("2026-12-01", 31 * 24, 3.0)
    pool = _pool("big", model="llama-3.1-70b", gpu="auto", tensor_parallel="auto", settings={})
    choice = choose_pool_gpu(cfg, pool, fc, MONTHS, measured)
    brute = {}
    for gpu, tp in gpu_options(cfg, pool):
        try:
            plan = plan_pool(cfg, replace(pool, gpu=gpu, tensor_parallel=tp), fc, MONTHS, measured)
        except ValueError:
            continue  # does not fit
        brute[(gpu, tp)] = plan.costs["P50"].total().total_cost_usd
    best = min(brute.values())
    assert choice.chosen.cost_usd_per_month == pytest.approx(best)
    assert all(tp >= 2 for (g, tp) in brute if g != "H200-141GB")  # 70B bf16 needs TP >= 2 on 80 GB
    planned = plan_pool(cfg, pool, fc, MONTHS, measured)
    assert (planned.gpu, planned.sized.first_p50.tensor_parallel) == (choice.chosen.gpu,
                                                                      choice.chosen.tensor_parallel)
    assert planned.choice is not None and len(planned.choice.candidates) == len(brute)
    assert np.isclose(planned.costs["P50"].total().total_cost_usd, best)


def _load_tests(tmp_path, write_vllm_sweep, input_tokens: float = 800.0):
    """Five vLLM results of one replica (1 x H100, TP 1, no GPU named) at 1..5 requests/s, 250 output tokens a
    request; p99 TTFT 500, 800, 900, 1,200, 1,500 ms crosses 1,000 ms a third of the way from 3 to 4 requests/s.
    Imported with the importer ``capplan loadtest import`` uses, read back as the plan reads it."""
    con = connect(str(tmp_path / "lt.duckdb"))
    for path in write_vllm_sweep(tmp_path, input_tokens=input_tokens):
        import_file(con, path, pool="a")
    return load_tests_for_plan(con, ["a"])


def test_a_load_test_of_one_pool_makes_its_throughput_measured_and_its_gpus_follow(cfg, measured, flat_forecast,
                                                                                    tmp_path, write_vllm_sweep):
    """Pool *a* (8B on 1 x H100, TTFT target 1,000 ms) with a clean sweep imported; pool *b* the same without.

    Measured capacity: 3 + 1/3 requests/s × 250 output tokens = **833.3 tokens/s per GPU** (one replica of one
    GPU). At a P50 peak of 1.5 × 8 = 12 requests/s: 12 × 250 = 3,000 tokens/s / (833.3 × 0.5) = 7.2 → **8 GPUs**
    (throughput binds: 12 × 4 s = 48 in flight over ~140 KV slots per GPU is under one GPU), no prefill GPUs
    (a load test measures them). Without the load test the pool is modelled (far above 833 tokens/s) and needs fewer.
    """
    settings = {k: v for k, v in SIMPLE.items() if k not in ("gpu_output_tokens_per_s", "seqs_per_gpu")}
    pool = _pool("a", settings=settings, ttft_ms_max=1000.0)
    fc = flat_forecast("2026-12-01", 31 * 24, 8.0)
    with_test = plan_pool(cfg, pool, fc, MONTHS, measured, load_tests=_load_tests(tmp_path, write_vllm_sweep))
    without = plan_pool(cfg, pool, fc, MONTHS, measured)
    assert with_test.throughput_source == "measured" and without.throughput_source == "modelled"
    assert with_test.spec.gpu_output_tokens_per_s == pytest.approx(2500.0 / 3)
    first = with_test.sized.first_p50
    assert (first.total_gpus, first.binding_constraint, first.gpus_for_prefill) == (8, "throughput", 0.0)
    assert "sweep-800-0.json" in with_test.spec.throughput_note and "taken as the pool's" in with_test.spec.throughput_note
    assert without.spec.gpu_output_tokens_per_s > 833.4
    assert without.sized.first_p50.total_gpus < first.total_gpus
    row = pool_rows(with_test, MONTHS)[0]
    assert row["throughput_source"] == "measured" and row["gpus_p50"] == 8


def test_a_load_test_at_another_mix_is_calibrated_to_the_pools_mix(cfg, measured, flat_forecast, tmp_path,
                                                                   write_vllm_sweep):
    """The same sweep at 2,000 input tokens (the pool's mix is 800: the token_mix flag): the model, scaled by
    measured / model at the test's mix, evaluated at the pool's mix."""
    pool = _pool("a", settings={}, ttft_ms_max=1000.0)
    plan = plan_pool(cfg, pool, flat_forecast("2026-12-01", 48, 8.0), MONTHS, measured,
                     load_tests=_load_tests(tmp_path, write_vllm_sweep, input_tokens=2000.0))
    assert plan.throughput_source == "calibrated"
    at = {mix: modelled_throughput(plan.spec.model, plan.spec.gpu, 1, "bf16", mix, 250.0, ttft_ms_max=1000.0)
          for mix in (800.0, 2000.0)}
    ratio = (2500.0 / 3) / at[2000.0].gpu_output_tokens_per_s
    assert plan.spec.gpu_output_tokens_per_s == pytest.approx(at[800.0].gpu_output_tokens_per_s * ratio)
    assert plan.throughput.details["calibration_ratio"] == pytest.approx(ratio)
    modelled = plan_pool(cfg, pool, flat_forecast("2026-12-01", 48, 8.0), MONTHS, measured)
    assert modelled.throughput_source == "modelled"
    assert modelled.spec.gpu_output_tokens_per_s == pytest.approx(at[800.0].gpu_output_tokens_per_s)
    # the calibrated rate is the modelled one x ratio (< 1: the sweep measured less than the model says), so the
    # GPUs the throughput needs grow by 1 / ratio and the pool gets more GPUs
    assert ratio < 1
    assert plan.sized.first_p50.gpus_for_decode == pytest.approx(
        modelled.sized.first_p50.gpus_for_decode / ratio, rel=1e-9)
    assert plan.sized.first_p50.total_gpus > modelled.sized.first_p50.total_gpus
    rows = pool_assumptions(cfg, plan)  # the assumptions table names the file and its flag
    assert rows["throughput per GPU"][2] == "calibrated"
    assert "sweep-" in rows["throughput load test"][0] and rows["throughput load-test flags"][0] == "token_mix"
