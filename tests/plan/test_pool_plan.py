"""One pool's plan and the fleet of pools: a hand-checked two-pool case, sums, the auto choice, monotonicity."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capplan.config import parse_config
from capplan.plan.fleet import fleet_for
from capplan.plan.pool_plan import choose_pool_gpu, fleet_plan, plan_pool
from capplan.plan.pools import Pool, gpu_options, pool_fleet_spec
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
