"""Planned against actual, and the exact split of the cost variance."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, strategies as st

from capplan.history.variance import PARTS, cost_variance_parts, plan_variance

positive = st.floats(min_value=1e-3, max_value=1e7, allow_nan=False)


@given(positive, positive, positive, positive, positive, positive)
def test_parts_sum_to_the_variance(v0, h0, c0, v1, h1, c1) -> None:
    parts = cost_variance_parts({"requests": v0, "gpu_hours": h0, "cost_usd": c0},
                                {"requests": v1, "gpu_hours": h1, "cost_usd": c1})
    # exact to rounding: the error is relative to the size of the parts, which may cancel
    scale = max(c0, c1, *(abs(p) for p in parts.values()))
    assert math.isclose(sum(parts.values()), c1 - c0, rel_tol=0, abs_tol=1e-12 * scale * 10)


def test_one_factor_changed_takes_the_whole_variance() -> None:
    # Hand check. Planned 1,000 requests on 100 GPU-h at $2/GPU-h = $200.
    # Same requests and GPU-hours, price $2.5/GPU-h: $250, all of the +$50 is price.
    parts = cost_variance_parts({"requests": 1000, "gpu_hours": 100, "cost_usd": 200},
                                {"requests": 1000, "gpu_hours": 100, "cost_usd": 250})
    assert parts == pytest.approx({"volume": 0.0, "token_mix": 0.0, "price": 50.0}, abs=1e-9)
    # Twice the requests, each needing the same capacity: +$200, all volume.
    parts = cost_variance_parts({"requests": 1000, "gpu_hours": 100, "cost_usd": 200},
                                {"requests": 2000, "gpu_hours": 200, "cost_usd": 400})
    assert parts == pytest.approx({"volume": 200.0, "token_mix": 0.0, "price": 0.0}, abs=1e-9)
    # Same requests, longer prompts: 150 GPU-h → +$100, all token mix.
    parts = cost_variance_parts({"requests": 1000, "gpu_hours": 100, "cost_usd": 200},
                                {"requests": 1000, "gpu_hours": 150, "cost_usd": 300})
    assert parts == pytest.approx({"volume": 0.0, "token_mix": 100.0, "price": 0.0}, abs=1e-9)


def test_undefined_split_is_nan_not_zero() -> None:
    parts = cost_variance_parts({"requests": 0, "gpu_hours": 0, "cost_usd": 0},
                                {"requests": 10, "gpu_hours": 1, "cost_usd": 2})
    assert all(math.isnan(parts[p]) for p in PARTS)


def test_plan_variance_lines_up_months_and_flags_band_and_shortfall() -> None:
    planned = pd.DataFrame([{"run_id": "r1", "created_utc": pd.Timestamp("2026-10-31 06:00"), "month": "2026-11",
                             "pool": "chat", "requests_p10": 900.0, "requests_p50": 1000.0, "requests_p90": 1100.0,
                             "peak_qps_p10": 1.0, "peak_qps_p50": 1.2, "peak_qps_p90": 1.4, "gpus_p10": 8,
                             "gpus_p50": 10, "gpus_p90": 12, "gpu_hours_p50": 7200.0, "cost_p50_usd": 14400.0}])
    actual = pd.DataFrame([{"month": "2026-11", "pool": "chat", "requests": 1150.0, "peak_qps": 1.3,
                            "gpus_needed": 11, "gpu_hours": 7900.0, "cost_usd": 15800.0, "complete": True},
                           {"month": "2026-12", "pool": "chat", "requests": 10.0, "peak_qps": 1.0,
                            "gpus_needed": 9, "gpu_hours": 10.0, "cost_usd": 20.0, "complete": False}])
    out = plan_variance(planned, actual)
    assert out["month"].tolist() == ["2026-11"]  # December had no earlier plan
    row = out.iloc[0]
    assert row["variance_requests"] == 150.0 and row["variance_gpus"] == 1
    assert not row["requests_in_band"] and row["peak_in_band"]
    assert not row["gpus_enough_p50"] and row["gpus_enough_p90"]
    split = sum(row[f"variance_{p}_usd"] for p in PARTS)
    assert math.isclose(split, row["variance_cost_usd"], rel_tol=1e-12)
