"""Fixtures of the drift tests: generated logs with and without an injected drift, and their cost models."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pyarrow as arrow
import pytest

from capplan.config import CapplanConfig
from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.sample import Drift, SampleSpec, iter_days
from capplan.drift.pricing import request_costs

DRIFT_START = date(2026, 1, 5)
DRIFT_AT = datetime(2026, 2, 17, tzinfo=UTC)  # a Tuesday in the 7th week


def _load(spec: SampleSpec):
    con = connect()
    ensure_tables(con)
    con.register("generated", arrow.concat_tables(c.table for c in iter_days(spec)))
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select *, 0 from generated")
    con.unregister("generated")
    return con


def _spec(seed: int, drift: Drift | None = None) -> SampleSpec:
    # small on purpose: 2,000 requests/day × 8 weeks keeps 20 seeds fast
    return SampleSpec(start=DRIFT_START, days=56, requests_per_day=2_000, seed=seed, incidents=False, drift=drift)


@pytest.fixture(scope="session")
def drift_sample() -> dict:
    """Start day, change time and length [days] of the generated logs (conftest is not importable)."""
    return {"start": DRIFT_START, "drift_at": DRIFT_AT, "days": 56}


@pytest.fixture(scope="session")
def load_generated():
    """``load_generated(seed, drift=None)``: an in-memory database of eight generated weeks."""
    return lambda seed, drift=None: _load(_spec(seed, drift))


@pytest.fixture(scope="session")
def drifted():
    """Inputs of llama-3.1-8b +30 % from :data:`DRIFT_AT`, and the same seed without drift (the counterfactual,
    row for row)."""
    return _load(_spec(11, Drift("llama-3.1-8b", "input", DRIFT_AT, 1.3))), _load(_spec(11))


@pytest.fixture(scope="session")
def costs_of():
    """``costs_of(con)``: the default config's cost model of every model in the log."""
    cfg = CapplanConfig()
    return lambda con: request_costs(cfg, [m for (m,) in con.execute("select distinct model from requests").fetchall()])
