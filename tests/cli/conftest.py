"""Fixtures of the CLI tests."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from capplan.cli import app


@pytest.fixture(scope="session")
def bare_db(tmp_path_factory):
    """A public trace's columns only (``ts_utc, input_tokens, output_tokens``): 3 hours at 1 request/s,
    ingested with ``capplan ingest``. Returns the database path."""
    root = tmp_path_factory.mktemp("bare")
    ts = pd.date_range("2026-11-10 12:00:00", periods=3 * 3600, freq="s")
    pd.DataFrame({"ts_utc": ts.strftime("%Y-%m-%dT%H:%M:%SZ"), "input_tokens": 1000,
                  "output_tokens": 200}).to_csv(root / "trace.csv", index=False)
    db = root / "bare.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(root / "trace.csv"), "--db", str(db)])
    assert result.exit_code == 0, result.output
    return db
