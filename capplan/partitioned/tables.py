"""The central database's tables of partitioned roll-ups: the ledger, per-partition rows and the facts."""

from __future__ import annotations

import duckdb

from capplan import ingest, profile, sql

ROLLUP_TABLES = {"fct_traffic_hourly": "partition_traffic_hourly",
                 "fct_histogram_hourly": "partition_histogram_hourly",
                 "fct_concurrency_hourly": "partition_concurrency_hourly"}
"""Central fact table -> the per-partition table it is merged from."""


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the ledger, per-partition and fact tables; also an empty ``requests`` so profile readers work."""
    ingest.ensure_tables(con)
    profile.ensure_tables(con)
    con.execute(sql.load("ddl_partitioned"))
