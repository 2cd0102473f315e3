"""capplan.ingest: the canonical columns, presets and column mapping (capplan.ingest.columns).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from capplan.config import SourceConfig
from capplan.ingest import column_mapping


def test_unknown_preset_and_column_are_value_errors():
    with pytest.raises(ValueError, match="valid presets: \\['azure', 'canonical'\\]"):
        column_mapping(SourceConfig(name="x", preset="nope"))
    with pytest.raises(ValueError, match=r"\['tokens'\] are not canonical"):
        column_mapping(SourceConfig(name="x", columns={"tokens": "t"}))
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Base'"):
        column_mapping(SourceConfig(name="x", timezone="Mars/Base"))


def test_azure_preset_and_defaults_are_recorded_in_the_ledger(corpus, load):
    result, con = load(corpus / "azure.csv", SourceConfig(name="azure", preset="azure"))
    assert result.rows_loaded == 3
    assert con.execute("select sum(input_tokens), min(model), min(status) from requests").fetchall() == [
        (374 + 396 + 879, "default", 200)]
    defaulted = con.execute("select defaulted_columns from ingest_ledger").fetchall()[0][0]
    assert defaulted[:2] == ["model", "status"]


def test_relative_timestamps_count_from_the_origin_with_a_column_map(corpus, load):
    source = SourceConfig(name="trace", columns={"ts_utc": "time_s", "input_tokens": "prompt",
                                                 "output_tokens": "completion"}, origin="2026-10-01T02:00:00+02:00")
    result, con = load(corpus / "relative.csv", source)
    ts = [r[0] for r in con.execute("select ts_utc from requests order by ts_utc").fetchall()]
    assert ts == [datetime(2026, 10, 1), datetime(2026, 10, 1, 0, 0, 1, 500000), datetime(2026, 10, 1, 1)]
    assert set(result.defaulted_columns) == {"model", "status", "ttft_ms", "latency_ms", "request_id", "tenant",
                                             "zone"}
