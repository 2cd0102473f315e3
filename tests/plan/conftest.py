"""Fixtures of the plan's tests: a measured request mix and a flat hourly forecast."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from capplan.plan.inputs import MeasuredInputs


@pytest.fixture
def measured() -> MeasuredInputs:
    """A request mix as :func:`capplan.plan.inputs.measure_inputs` returns it, burst ratio 1.5."""
    return MeasuredInputs(first_ts_utc=pd.Timestamp("2026-09-01"), last_ts_utc=pd.Timestamp("2026-11-30 23:00"),
                          requests=1000, input_tokens_per_request=800.0, output_tokens_per_request=250.0,
                          latency_s=4.0, kv_tokens_per_sequence=3000.0, burst_ratio=1.5)


@pytest.fixture
def flat_forecast() -> Callable[[str, int, float], pd.DataFrame]:
    """``make(start, hours, mean)``: an hourly forecast of constant ``mean`` with 80 % and 95 % bounds. [requests/s]"""
    def make(start: str, hours: int, mean: float) -> pd.DataFrame:
        idx = pd.date_range(start, periods=hours, freq="h")
        m = np.full(hours, mean)
        return pd.DataFrame({"mean": m, "lo_80": 0.8 * m, "hi_80": 1.3 * m, "lo_95": 0.7 * m, "hi_95": 1.5 * m},
                            index=idx)
    return make
