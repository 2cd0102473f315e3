"""Tests for capplan/drift/pricing.py: findings priced per request and per month, and monthly volumes."""

from __future__ import annotations

import pandas as pd
import pytest

from capplan.config import CapplanConfig, PoolConfig, SizingConfig
from capplan.drift.pricing import (
    SECONDS_PER_MONTH,
    linear_request_costs,
    monthly_requests,
    price_findings,
    request_costs,
    window_mixes,
)
from capplan.sizing.cost.per_request import ModelledRequestCost, RequestCost
from capplan.sizing.performance import Efficiency

#: Round efficiencies, so a test does not move when data/performance.toml is refitted.
EFF = Efficiency(0.5, 0.5, 0.5, 1.0, 1.0, 0.0, 256, 0.9, 0.0)

DAYS = pd.date_range("2026-01-01", periods=30, freq="D")
CHANGE = DAYS[20]


def _hist() -> pd.DataFrame:
    """10 requests a day of model 'a': 100 input tokens each before CHANGE, 200 from it; 10 output tokens."""
    rows = []
    for day in DAYS:
        rows.append({"day_utc": day, "model": "a", "metric": "input_tokens", "bin": 0, "requests": 10,
                     "tokens_sum": 10 * (200 if day >= CHANGE else 100)})
        rows.append({"day_utc": day, "model": "a", "metric": "output_tokens", "bin": 0, "requests": 10,
                     "tokens_sum": 100})
    return pd.DataFrame(rows)


def _window(start: pd.Timestamp, **changes) -> dict:
    return {"model": "a", "metric": "input_tokens", "baseline_start": DAYS[0], "window_start": start,
            "window_end": start + pd.Timedelta(days=7), "change_date": CHANGE, "psi": 0.5, "p_value": 1e-9,
            "alert": True, **changes}


def test_a_finding_is_priced_hand_worked():
    # 1 USD per 100 input tokens and per 10 output tokens (u = 1): c = in/100 + out/10 [USD] = [GPU·s]
    costs = {"a": RequestCost(100.0, 10.0, 3600.0)}
    windows = pd.DataFrame([_window(DAYS[16]), _window(DAYS[23], psi=0.7, p_value=1e-12),
                            _window(DAYS[9], alert=False)])
    found = price_findings(_hist(), windows, costs, {"a": 1000.0}, window_days=7)
    assert len(found) == 1  # two alerting windows, change dates within a window: one finding
    f = found.iloc[0]
    assert (f["mean_tokens_before"], f["mean_tokens_after"], f["relative_change"]) == (100.0, 200.0, 1.0)
    assert f["usd_per_request_change"] == pytest.approx(1.0)  # (200/100 + 1) - (100/100 + 1)
    assert f["gpu_seconds_per_request_change"] == pytest.approx(1.0)
    assert f["usd_per_month_change"] == pytest.approx(1000.0)
    assert f["gpus_change"] == pytest.approx(1000.0 / SECONDS_PER_MONTH)
    assert (f["psi"], f["p_value"], f["detected_in_window_start"]) == (0.7, 1e-12, DAYS[16])


def test_no_alerting_window_is_no_finding():
    windows = pd.DataFrame([_window(DAYS[16], alert=False)])
    assert price_findings(_hist(), windows, {"a": RequestCost(1.0, 1.0, 1.0)}, {}, window_days=7).empty


def test_monthly_requests_scale_the_last_30_days_to_a_mean_month():
    # 300 served requests in 30 days -> 300 × 30.4375 / 30 per mean Gregorian month
    assert monthly_requests(_hist()) == {"a": pytest.approx(300 * (365.25 / 12) / 30)}


def test_linear_request_costs_use_each_models_size_class_and_the_on_demand_price():
    cfg = CapplanConfig()
    costs = linear_request_costs(cfg, ["llama-3.1-8b", "llama-3.1-70b", "not-in-the-catalogue"])
    assert costs["not-in-the-catalogue"].gpu_seconds(1000, 100) == costs[cfg.sizing.model].gpu_seconds(1000, 100)
    assert costs["llama-3.1-70b"].gpu_seconds(1000, 100) > costs["llama-3.1-8b"].gpu_seconds(1000, 100)
    assert {c.target_utilisation for c in costs.values()} == {cfg.sizing.target_utilisation}
    assert len({c.usd_per_gpu_hour for c in costs.values()}) == 1
    assert {c.source for c in costs.values()} == {"assumed"}


def test_request_costs_model_each_pool_on_its_gpu_tp_and_precision():
    cfg = CapplanConfig(pools=[PoolConfig(name="big", models=["llama-3.1-70b"], model="llama-3.1-70b",
                                          gpu="H200-141GB", tensor_parallel=2, precision="fp8"),
                               PoolConfig(name="rest", models=["*"])])
    costs = request_costs(cfg, ["llama-3.1-8b", "llama-3.1-70b", "not-in-the-catalogue"])
    big = costs["llama-3.1-70b"]
    assert isinstance(big, ModelledRequestCost) and big.source == "modelled"
    assert (big.model, big.gpu, big.tensor_parallel, big.precision) == ("llama-3.1-70b", "H200-141GB", 2, "fp8")
    assert big.pool_models == ("llama-3.1-70b",)
    rest = costs["llama-3.1-8b"]  # [sizing]'s architecture, GPU, precision; TP unset: the smallest that fits
    assert (rest.model, rest.gpu, rest.tensor_parallel, rest.precision) == ("llama-3.1-8b", "H100-SXM-80GB", None,
                                                                            "bf16")
    assert rest.pool_models == ("llama-3.1-8b", "not-in-the-catalogue") and costs["not-in-the-catalogue"] == rest
    assert big.usd_per_gpu_hour != rest.usd_per_gpu_hour  # each pool at its own GPU's on-demand price
    assert rest.at_operating_point(1000, 200).tensor_parallel == 1


def test_no_log_model_is_nothing_to_price_not_a_pool_error():
    """A metrics- or rate-only database has no daily histograms: no model to price, and no pool to resolve."""
    cfg = CapplanConfig(pools=[PoolConfig(name="big", models=["llama-3.1-70b"], model="llama-3.1-70b")])
    assert request_costs(cfg, []) == {}


@pytest.mark.parametrize(("pool", "sizing", "reason"), [
    (dict(gpu="auto"), {}, 'chosen by the plan (gpu = "auto")'),
    ({}, dict(weights_dtype="int4"), "has no int4"),
    (dict(gpu="GH200"), {}, "GH200"),  # in the GPU catalogue, not in the price book
])
def test_request_costs_fall_back_to_the_assumed_linear_cost_and_say_why(pool, sizing, reason):
    cfg = CapplanConfig(sizing=SizingConfig(**sizing), pools=[PoolConfig(name="p", models=["*"], **pool)])
    (cost,) = request_costs(cfg, ["llama-3.1-8b"]).values()
    assert isinstance(cost, RequestCost) and cost.source == "assumed"
    assert reason in cost.describe() and "not modelled: pool p" in cost.describe()
    assert cost.gpu_seconds(1000, 100) == linear_request_costs(cfg, ["llama-3.1-8b"])["llama-3.1-8b"].gpu_seconds(
        1000, 100)


def test_a_finding_is_priced_with_the_modelled_cost_at_the_baseline_operating_point():
    """+100 % prompt (100 -> 200 tokens, 10 output tokens): the change is the modelled cost of the two mixes at the
    batch set before the change, and the finding says so."""
    cost = ModelledRequestCost("llama-3.1-70b", "H100-SXM-80GB", 2, "fp8", 3600.0, efficiency=EFF)
    found = price_findings(_hist(), pd.DataFrame([_window(DAYS[16])]), {"a": cost}, {"a": 1000.0}, window_days=7)
    f = found.iloc[0]
    at = cost.at_operating_point(100, 10)
    assert at.batch == 256  # the engine limit of EFF binds at 110 tokens a sequence
    expected = at.gpu_seconds(200, 10) - at.gpu_seconds(100, 10)  # 3600 USD/GPU-h: USD = GPU·s
    assert expected > 0
    assert f["gpu_seconds_per_request_change"] == pytest.approx(expected, rel=1e-9)
    assert f["usd_per_request_change"] == pytest.approx(expected, rel=1e-9)
    assert (f["cost_source"], f["batch_before"], f["batch_after"]) == ("modelled", 256, 256)
    assert "llama-3.1-70b on H100-SXM-80GB, TP 2, fp8, batch 256 set at the baseline mix" in f["cost_model"]


def test_window_mixes_keep_each_bins_mean_length():
    hist = pd.DataFrame([{"day_utc": DAYS[0], "model": "a", "metric": "input_tokens", "bin": b, "requests": n,
                          "tokens_sum": t} for b, n, t in [(3, 2, 30), (5, 1, 40)]])
    mix = window_mixes(hist, ["a"], DAYS[0], DAYS[1])
    assert mix["input_tokens"][0].tolist() == [15.0, 40.0] and mix["input_tokens"][1].tolist() == [2.0, 1.0]
    assert mix["output_tokens"][0].tolist() == [0.0]  # no rows: one length of 0
