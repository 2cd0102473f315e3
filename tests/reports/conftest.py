"""Fixtures of the report tests: earlier plans stored and read back as the report reads them."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pytest

from capplan.db import connect
from capplan.history.store import FLEET, latest_plans, new_run, record_plan
from capplan.history.variance import plan_variance

MONTHS = ["2026-09", "2026-10"]


def _plan_row(month: str, pool: str, k: float) -> dict:
    """One plan_months row; ``k`` scales it so every pool and month differs."""
    return {"month": month, "pool": pool, "gpu": "H100-SXM-80GB", "tensor_parallel": 1,
            "requests_p10": 9e5 * k, "requests_p50": 1e6 * k, "requests_p90": 1.2e6 * k,
            "peak_qps_p10": 1.0 * k, "peak_qps_p50": 1.2 * k, "peak_qps_p90": 1.5 * k,
            "gpus_p10": int(4 * k), "gpus_p50": int(5 * k), "gpus_p90": int(7 * k), "binding": "throughput",
            "reserved_gpus": 2, "gpu_hours_p50": 3600.0 * k, "cost_p10_usd": 6e3 * k, "cost_p50_usd": 7e3 * k,
            "cost_p90_usd": 9e3 * k, "on_demand_p50_usd": 5e3 * k, "reserved_p50_usd": 2e3 * k,
            "spot_p50_usd": 0.0, "throughput_source": "assumed"}


@pytest.fixture
def stored_plan_row():
    """The ``plan_months`` row the ``variance`` fixture stores for a month, pool and scale."""
    return _plan_row


@pytest.fixture
def variance() -> pd.DataFrame:
    """Two pools and the fleet, two months, each month planned by a run stored the day before it began;
    October observed in part. Read back through the store as the report reads it."""
    with connect() as con:
        for month, scale in zip(MONTHS, (1.0, 2.0)):
            rows = [_plan_row(month, "chat", scale), _plan_row(month, "rag", 3 * scale),
                    _plan_row(month, FLEET, 4 * scale)]
            created = pd.Period(month, freq="M").start_time - pd.Timedelta(days=1)
            record_plan(con, new_run(month, 1, {}, data_from_utc=None, data_to_utc=None,
                                     created_utc=datetime.fromisoformat(str(created))), pd.DataFrame(rows))
        planned = latest_plans(con, MONTHS)
    actual = pd.DataFrame([{"month": m, "pool": p, "requests": 1.1e6 * i, "peak_qps": 1.4 * i, "gpus_needed": 6 * i,
                            "gpu_hours": 4000.0 * i, "cost_usd": 8e3 * i, "complete": m == "2026-09"}
                           for i, (m, p) in enumerate([(m, p) for m in MONTHS for p in ("chat", "rag", FLEET)], 1)])
    return plan_variance(planned, actual)
