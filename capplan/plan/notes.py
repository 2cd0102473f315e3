"""Notes for the report's reader about the run's inputs: files the ingest refused, failed or partly quarantined."""

from __future__ import annotations

from typing import Any


def ingest_notes(results: list[Any]) -> list[str]:
    """One line per ingested file that needs a reader's attention: refused, failed or partly quarantined.

    ``results`` are :class:`capplan.ingest.FileResult` records from the ingest flow.
    """
    notes = []
    for r in results:
        if r.status not in ("loaded", "replaced", "unchanged"):
            detail = r.message if r.message.startswith(r.path) else f"{r.path}: {r.message}".rstrip(": ")
            notes.append(f"ingest {r.status}: {detail}")
        elif r.rows_quarantined:
            notes.append(f"ingest: {r.path}: {r.rows_quarantined:,} of {r.rows_read:,} rows quarantined "
                         "(see the quarantine table)")
    return notes


def coverage_notes(defaulted: dict, slos: list | tuple = ()) -> list[str]:
    """One line per optional column the logs lacked (:func:`capplan.ingest.coverage.defaulted_columns`)
    and per configured SLO that cannot be measured without it."""
    from capplan.slo.measurable import unmeasurable_reason

    columns = [d.sentence() for d in defaulted.values() if d.column in ("status", "ttft_ms", "latency_ms", "model")]
    return columns + [r for s in slos if (r := unmeasurable_reason(s, defaulted))]
