"""Tests for capplan.cost: the interruptible share measured in DuckDB."""

from __future__ import annotations

import pytest

from capplan import sql
from capplan.config import CostConfig
from capplan.cost import interruptible_share
from capplan.db import connect
from capplan.ingest import ensure_tables

ROWS = [  # ts_utc, model, status, tenant
    ("2026-01-01 00:00", "batch-embed", 200, None),
    ("2026-01-02 00:00", "chat", 200, "nightly"),
    ("2026-01-03 00:00", "chat", 200, None),
    ("2026-01-03 01:00", "chat", 200, "acme"),
    ("2026-01-03 02:00", "batch-embed", 503, None),   # failed: not counted
]


@pytest.fixture()
def con():
    c = connect()
    c.execute(sql.load("ddl_ingest_ledger"))
    ensure_tables(c)
    c.executemany("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, tenant, file_id) "
                  "values (?, 10, 10, ?, ?, ?, 1)", ROWS)
    return c


@pytest.mark.parametrize("cfg, window_days, expected", [
    (CostConfig(interruptible_models=["batch-embed"], interruptible_tenants=["nightly"]), 30, 2 / 4),
    (CostConfig(interruptible_models=["batch-embed"]), 30, 1 / 4),
    (CostConfig(interruptible_tenants=["nightly"]), 30, 1 / 4),
    # the last day (after 2026-01-02 02:00) holds only the two 2026-01-03 chat requests
    (CostConfig(interruptible_models=["batch-embed"], interruptible_tenants=["nightly"]), 1, 0.0),
    (CostConfig(interruptible_share=0.3), 30, 0.3),  # nothing listed: the assumed share
])
def test_interruptible_share(con, cfg, window_days, expected):
    assert interruptible_share(con, cfg, window_days=window_days) == pytest.approx(expected, abs=1e-12)


def test_empty_table_gives_zero(con):
    con.execute("delete from request_rows")
    assert interruptible_share(con, CostConfig(interruptible_models=["x"]), window_days=7) == 0.0
