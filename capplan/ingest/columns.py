"""The canonical request columns, and how a source's columns and timestamps map onto them.

Owns the canonical column names and their defaults, the presets (canonical column -> source
column), :func:`column_mapping` (a source's preset overridden by its own map, checked), and the
timestamp conventions a source may name (``origin``, ``timestamp_unit``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from capplan.config import SourceConfig
from capplan.ingest.errors import IngestError

#: Canonical request columns, in table order (``sql/ddl_requests.sql``).
CANONICAL_COLUMNS = ("ts_utc", "input_tokens", "output_tokens", "model", "status", "ttft_ms",
                     "latency_ms", "request_id", "tenant", "zone")
REQUIRED_COLUMNS = ("ts_utc", "input_tokens", "output_tokens")
#: canonical columns whose check is numeric: a source column of a numeric type stays typed
NUMERIC_COLUMNS = ("input_tokens", "output_tokens", "status", "ttft_ms", "latency_ms")
#: canonical columns loaded as text (a malformed value cannot fail a parse)
TEXT_COLUMNS = ("model", "request_id", "tenant", "zone")
#: Raw value given to an optional column the source lacks (the rest become null).
DEFAULT_MODEL = "default"
DEFAULT_STATUS = "200"
#: canonical column -> source column, per preset; a preset's order is the positional
#: order of a CSV file without a header.
PRESETS: dict[str, dict[str, str]] = {
    "canonical": {c: c for c in CANONICAL_COLUMNS},
    # Azure LLM inference traces (AzurePublicDataset): TIMESTAMP, ContextTokens, GeneratedTokens
    "azure": {"ts_utc": "TIMESTAMP", "input_tokens": "ContextTokens", "output_tokens": "GeneratedTokens"},
}
#: The longest plausible TTFT or latency [ms] (assumed): one day. An LLM request that runs longer is a
#: logging error (a wrong unit, an uninitialised field), not a measurement, and one such value breaks
#: latency sums and the in-flight sweep's lookback (every refresh re-reads that far back): such rows are
#: quarantined (``ttft_ms_invalid``, ``latency_ms_invalid``). Batch APIs complete within 24 h.
MAX_DURATION_MS = 86_400_000
#: microseconds per unit of a numeric timestamp
UNIT_US = {"s": 1e6, "ms": 1e3, "us": 1.0}


def column_mapping(source: SourceConfig) -> dict[str, str]:
    """canonical column -> source column: the preset, overridden by ``source.columns``.

    Raises
    ------
    ValueError
        For an unknown preset or a key that is not a canonical column.
    """
    if source.preset not in PRESETS:
        raise ValueError(f"unknown preset {source.preset!r}; valid presets: {sorted(PRESETS)}")
    unknown = sorted(set(source.columns) - set(CANONICAL_COLUMNS))
    if unknown:
        raise ValueError(f"source {source.name!r}: {unknown} are not canonical columns; "
                         f"valid: {list(CANONICAL_COLUMNS)}")
    if source.timezone is not None:
        try:
            ZoneInfo(source.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"source {source.name!r}: unknown time zone {source.timezone!r}; "
                             "expected an IANA name such as 'Europe/Paris'") from None
    if source.origin is not None and parse_origin(source.origin) is None:
        raise ValueError(f"source {source.name!r}: origin {source.origin!r} is not an ISO-8601 timestamp")
    return {**PRESETS[source.preset], **source.columns}


def check_mapped_columns(path: Path, source: SourceConfig, raw_columns: Sequence[str],
                         defaulted: Sequence[str]) -> None:
    """An explicit mapping (``--map`` or ``columns``) must name a column the file has; a preset's may not.

    ``defaulted`` are the canonical columns the reader found no source column for.

    Raises
    ------
    IngestError
        Naming the file, each mapping whose source column is absent, and the columns the file has.
    """
    absent = [f"{c}={source.columns[c]}" for c in source.columns if c in defaulted]
    if absent:
        raise IngestError(f"{path}: mapped column not in the file: {', '.join(absent)}; "
                          f"the file has columns {list(raw_columns)[:50]}")


def parse_origin(origin: str) -> datetime | None:
    """The start of relative timestamps as naive UTC, or None when ``origin`` is not ISO-8601."""
    try:
        t = datetime.fromisoformat(origin)
    except ValueError:
        return None
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo else t
