"""Fixtures of the ingest tests: the bad-input corpus, the ingest time, and a one-file load."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from capplan.config import IngestConfig, SourceConfig
from capplan.db import connect
from capplan.ingest import FileResult, load_file

CORPUS = Path(__file__).resolve().parents[1] / "data" / "ingest"


@pytest.fixture
def corpus() -> Path:
    """tests/data/ingest/: every case names its expected error or quarantine rule and data row."""
    return CORPUS


@pytest.fixture
def now() -> datetime:
    """The ingest time of every test load, UTC."""
    return datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def cfg_all() -> IngestConfig:
    """Default settings, but the contract re-validates every loaded row, and a file of only bad rows loads
    (into quarantine: the rule tests look at it; the all-quarantined failure is tested in test_notes.py)."""
    return IngestConfig(contract_check="all", allow_all_quarantined=True)


@pytest.fixture
def canonical() -> SourceConfig:
    """A source of canonical column names."""
    return SourceConfig(name="test")


@pytest.fixture
def load(now, cfg_all, canonical) -> Callable[..., tuple[FileResult, duckdb.DuckDBPyConnection]]:
    """``load(path, source=canonical, cfg=cfg_all, con=None)``: load one file (into a new database by default)."""
    def load_one(path: Path, source: SourceConfig | None = None, cfg: IngestConfig | None = None, con=None):
        con = con or connect()
        return load_file(con, path, source or canonical, cfg or cfg_all, now_utc=now), con
    return load_one


@pytest.fixture
def quarantine() -> Callable[[duckdb.DuckDBPyConnection], list[tuple[int, str]]]:
    """``quarantine(con)``: (row_number, rule) of every quarantine row, by row number."""
    def rows(con: duckdb.DuckDBPyConnection) -> list[tuple[int, str]]:
        return [tuple(r) for r in con.execute("select row_number, rule from quarantine order by row_number").fetchall()]
    return rows
