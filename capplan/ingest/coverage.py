"""Which optional columns the logs did not have: the ingest ledger's ``defaulted_columns``, read back.

An absent column is unknown, not perfect. The ingest gives a file without ``status`` the status
``200`` and a file without ``model`` the model ``default``, and leaves ``ttft_ms``/``latency_ms``
null; the ledger records, per file, which columns it lacked. This module reads that record
(read-only) so the stages can say what they cannot measure:

| column defaulted | what cannot be measured |
|---|---|
| ``status`` | success rate, errors, every SLI (all requests look successful) |
| ``ttft_ms`` | TTFT SLIs and percentiles |
| ``latency_ms`` | latency, Little's-law concurrency, burst ratio (the plan models or assumes it) |
| ``model`` | the per-model split |
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from capplan import sql

#: What each defaulted column makes unmeasurable, for messages.
DEPENDENTS = {"status": "success rate and every SLI (each request was given status 200)",
              "ttft_ms": "TTFT SLIs and percentiles", "latency_ms": "latency and requests in flight",
              "model": "the per-model split (every request of such a file was given one model: the source's "
                       "`model` / --model, else 'default')",
              "tenant": "per-tenant shares", "request_id": "duplicate detection by id", "zone": "per-zone shares"}


@dataclass(frozen=True)
class DefaultedColumn:
    """One optional column some files lacked.

    Attributes
    ----------
    column : str
        Canonical column name.
    rows_defaulted : int
        Rows loaded from files without it. [rows]
    rows_loaded : int
        Rows loaded in all. [rows]
    """

    column: str
    rows_defaulted: int
    rows_loaded: int

    @property
    def everywhere(self) -> bool:
        """True when no loaded row had the column: it is unknown, not measured."""
        return self.rows_defaulted >= self.rows_loaded

    @property
    def leaves_unknown(self) -> str:
        """What cannot be measured without this column (:data:`DEPENDENTS`)."""
        return DEPENDENTS.get(self.column, "what depends on it")

    def sentence(self) -> str:
        """What is missing and what that leaves unmeasured, in one sentence."""
        what = self.leaves_unknown
        if self.everywhere:
            return (f"{self.column} was not logged (none of the {self.rows_loaded:,} loaded rows has it): "
                    f"{what} cannot be measured from these logs")
        return (f"{self.column} was not logged in {self.rows_defaulted:,} of {self.rows_loaded:,} loaded rows: "
                f"{what} rests partly on defaulted values")


def defaulted_columns(con: duckdb.DuckDBPyConnection) -> dict[str, DefaultedColumn]:
    """Columns some loaded file lacked, by name (``sql/rpt_ingest_defaulted_columns.sql``); ``{}`` without a ledger.

    Requests of hours fed by metrics (``metrics_ledger``, ``sql/rpt_metrics_request_coverage.sql``) count as
    loaded without ``status`` when no error counter fed their hour (their errors are unknown; with one, the
    SLO stage counts the hour's good and valid requests), without ``ttft_ms`` when their hour has no TTFT
    histogram, and those of rate series also without ``latency_ms``.
    """
    def exists(table: str) -> bool:
        return bool(con.execute(sql.load("rpt_cli_table_exists"), {"table_name": table}).fetchall()[0][0])

    rows = con.execute(sql.load("rpt_ingest_defaulted_columns")).fetchall() if exists("ingest_ledger") else []
    found = {c: [int(d), int(n)] for c, d, n in rows if d}
    loaded = int(rows[0][2]) if rows else (int(con.execute(sql.load("rpt_ingest_rows_loaded")).fetchone()[0])
                                           if exists("ingest_ledger") else 0)
    if exists("metrics_ledger"):
        metrics, status, ttft, rates = (int(x) for x in con.execute(sql.load("rpt_metrics_request_coverage")).fetchone())
        loaded += metrics
        for column, unknown in (("status", status), ("ttft_ms", ttft), ("latency_ms", rates)):
            if unknown:
                found.setdefault(column, [0, 0])[0] += unknown
    return {c: DefaultedColumn(c, d, loaded) for c, (d, _) in found.items()}


def unmeasurable(defaulted: dict[str, DefaultedColumn], needs: tuple[str, ...]) -> list[DefaultedColumn]:
    """The columns of ``needs`` that no loaded row had: what an output depending on them cannot measure."""
    return [defaulted[c] for c in needs if c in defaulted and defaulted[c].everywhere]
