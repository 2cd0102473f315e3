"""Cost-stage inputs measured in DuckDB: the share of traffic that may run on spot."""

from __future__ import annotations

import duckdb

from capplan import sql
from capplan.config import CostConfig


def interruptible_share(con: duckdb.DuckDBPyConnection, cost: CostConfig, *, window_days: int) -> float:
    """Share of requests that tolerate spot interruption. [fraction]

    With ``interruptible_models`` or ``interruptible_tenants`` set in
    ``[cost]``, it is *measured*: the share of successful requests in the last
    ``window_days`` days of data to a listed model or from a listed tenant.
    Otherwise it is the *assumed* ``[cost].interruptible_share``.
    """
    if not cost.interruptible_models and not cost.interruptible_tenants:
        return cost.interruptible_share
    share, _requests = con.execute(sql.load("int_cost_interruptible_share"), {
        "models": list(cost.interruptible_models), "tenants": list(cost.interruptible_tenants),
        "window_days": window_days}).fetchone()
    return float(share)
