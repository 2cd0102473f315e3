"""Whether an SLO can be measured from the logs at all: an SLI over defaulted columns is unknown, not 100 %.

A file without ``status`` gets status 200 on every row, and a 2xx without TTFT counts as good, so
an SLI over such logs reads 100 % whatever happened. :func:`unmeasurable_reason` says so instead,
from the ingest ledger's defaulted columns (:func:`capplan.ingest.coverage.defaulted_columns`).
"""

from __future__ import annotations

from capplan.config import SloConfig
from capplan.ingest.coverage import DefaultedColumn, unmeasurable


def slo_needs(slo: SloConfig) -> tuple[str, ...]:
    """The log columns an SLO's good events depend on: ``status``, and ``ttft_ms`` with a TTFT threshold."""
    return ("status",) + (("ttft_ms",) if slo.ttft_threshold_ms is not None else ())


def unmeasurable_reason(slo: SloConfig, defaulted: dict[str, DefaultedColumn]) -> str | None:
    """``"SLO 'x' is not measurable from these logs: status was not logged ..."``, or ``None`` if it is measurable."""
    missing = unmeasurable(defaulted, slo_needs(slo))
    if not missing:
        return None
    return (f"SLO {slo.name!r} is not measurable from these logs: "
            + "; ".join(f"{d.column} was not logged in any of the {d.rows_loaded:,} loaded rows" for d in missing)
            + " (its SLI would read 100 % from defaulted values)")
