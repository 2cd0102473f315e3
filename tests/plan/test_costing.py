"""capplan/plan/costing.py: the hourly fleet priced per level, with its volumes and spot share."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from capplan.config import CapplanConfig
from capplan.plan import costing as plan
from capplan.plan.assumptions import assumptions_table
from capplan.plan.fleet import hourly_need_gpus
from capplan.sizing.cost.plan import plan_range
from capplan.sizing.cost.prices import load_price_book


def test_cost_matches_the_stage_function(measured, flat_forecast):
    cfg = CapplanConfig()
    fc = flat_forecast("2026-12-01", 31 * 24, 10.0)
    fc["mean"] = 10 + 5 * np.sin(np.arange(len(fc)) * 2 * np.pi / 24)  # a daily cycle
    fc["lo_80"], fc["hi_80"] = 0.8 * fc["mean"], 1.3 * fc["mean"]
    hours, need = hourly_need_gpus(fc, ["2026-12"], cfg.sizing.fleet_spec(), measured)
    costs = plan.cost_by_level(hours, need, cfg)
    prices = load_price_book(cfg.cost.price_book).gpu(cfg.sizing.gpu).option_prices(cfg.cost.reserved_term)
    direct = plan_range(hours, need, commit_level="P50", gpu_type=cfg.sizing.gpu, prices=prices)
    assert costs["P90"].months[0].total_cost_usd == pytest.approx(direct["P90"].months[0].total_cost_usd)
    assert costs["P50"].reserved_gpus == direct["P50"].reserved_gpus


def test_cost_per_unit_and_measured_interruptible_share_reach_the_cost_stage(measured, flat_forecast):
    cfg = CapplanConfig()
    fc = flat_forecast("2026-12-01", 24, 10.0)
    hours, need = hourly_need_gpus(fc, ["2026-12"], cfg.sizing.fleet_spec(), measured)
    requests, tokens = plan.hourly_volumes(fc, ["2026-12"], measured)
    assert requests["P50"].sum() == pytest.approx(10.0 * 3600 * 24)       # 10 QPS for a day
    assert tokens["P50"].sum() == pytest.approx(10.0 * 3600 * 24 * 250.0)  # × measured 250 tokens/request
    costs = plan.cost_by_level(hours, need, cfg, measured, (requests, tokens))
    total = costs["P50"].total()
    assert total.usd_per_1k_requests == pytest.approx(total.total_cost_usd / (requests["P50"].sum() / 1e3))
    # A measured share replaces the assumed 0: spot can only make the plan cheaper or equal.
    spot = plan.cost_by_level(hours, need, cfg, replace(measured, interruptible_share=0.5), (requests, tokens))
    assert spot["P50"].total().total_cost_usd <= total.total_cost_usd
    assert assumptions_table(cfg, replace(measured, interruptible_share=0.5).table()).set_index(
        "name").loc["interruptible_share", "source"] == "measured"
    # ... exactly where the assumed share would: the same plan as [cost].interruptible_share = 0.5
    assumed = plan.cost_by_level(hours, need, cfg.model_copy(update={"cost": cfg.cost.model_copy(
        update={"interruptible_share": 0.5})}), measured, (requests, tokens))
    assert spot["P50"].total().total_cost_usd == pytest.approx(assumed["P50"].total().total_cost_usd)
