"""Fixtures of the report tests: earlier plans stored and read back as the report reads them."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pytest

from capplan.db import connect
from capplan.history.store import FLEET, latest_plans, new_run, record_plan
from capplan.history.variance import plan_variance

MONTHS = ["2026-09", "2026-10"]


@pytest.fixture
def variance(stored_plan_row) -> pd.DataFrame:
    """Two pools and the fleet, two months, each month planned by a run stored the day before it began;
    October observed in part. Read back through the store as the report reads it."""
    with connect() as con:
        for month, scale in zip(MONTHS, (1.0, 2.0)):
            rows = [stored_plan_row(month, "chat", scale), stored_plan_row(month, "rag", 3 * scale),
                    stored_plan_row(month, FLEET, 4 * scale)]
            created = pd.Period(month, freq="M").start_time - pd.Timedelta(days=1)
            record_plan(con, new_run(month, 1, {}, data_from_utc=None, data_to_utc=None,
                                     created_utc=datetime.fromisoformat(str(created))), pd.DataFrame(rows))
        planned = latest_plans(con, MONTHS)
    actual = pd.DataFrame([{"month": m, "pool": p, "requests": 1.1e6 * i, "peak_qps": 1.4 * i, "gpus_needed": 6 * i,
                            "gpu_hours": 4000.0 * i, "cost_usd": 8e3 * i, "complete": m == "2026-09"}
                           for i, (m, p) in enumerate([(m, p) for m in MONTHS for p in ("chat", "rag", FLEET)], 1)])
    return plan_variance(planned, actual)
