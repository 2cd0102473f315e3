"""Tests for capplan/drift/pricing.py: findings priced per request and per month, and monthly volumes."""

from __future__ import annotations

import pandas as pd
import pytest

from capplan.config import CapplanConfig
from capplan.drift.pricing import SECONDS_PER_MONTH, monthly_requests, price_findings, request_costs
from capplan.sizing.cost.per_request import RequestCost

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


def test_request_costs_use_each_models_size_class_and_the_on_demand_price():
    cfg = CapplanConfig()
    costs = request_costs(cfg, ["llama-3.1-8b", "llama-3.1-70b", "not-in-the-catalogue"])
    assert costs["not-in-the-catalogue"] == costs[cfg.sizing.model]  # a log model outside the catalogue
    assert costs["llama-3.1-70b"].gpu_seconds(1000, 100) > costs["llama-3.1-8b"].gpu_seconds(1000, 100)
    assert {c.target_utilisation for c in costs.values()} == {cfg.sizing.target_utilisation}
    assert len({c.usd_per_gpu_hour for c in costs.values()}) == 1
