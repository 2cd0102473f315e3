"""Helpers shared by the sub-commands: config loading, JSON output, errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

from capplan.config import CapplanConfig, ConfigError, load_config

console = Console(stderr=True)

CONFIG_OPTION = typer.Option(None, "--config", "-c", help="capplan.toml to use (default: built-in defaults).")
DB_OPTION = typer.Option(None, "--db", help="DuckDB file (default: [database].path from the config).")
JSON_OPTION = typer.Option(False, "--json", help="Print machine-readable JSON on stdout.")


def fail(message: str, code: int = 1) -> NoReturn:
    """Print a one-line error (no stack trace) and exit non-zero."""
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def load(config: Path | None) -> CapplanConfig:
    """Load the config or exit with the ConfigError's message."""
    try:
        return load_config(config)
    except ConfigError as exc:
        fail(str(exc), code=2)


def db_path(cfg: CapplanConfig, db: Path | None) -> Path:
    """The database path: ``--db`` wins over the config."""
    return db if db is not None else cfg.database.path


def print_json(payload: Any) -> None:
    """Write ``payload`` as JSON to stdout (dates and paths as strings)."""
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")


def open_requests_db(cfg: CapplanConfig, db: Path | None) -> "duckdb.DuckDBPyConnection":  # noqa: F821
    """Open the database read-only, or exit with one line if it is missing, locked or has no requests."""
    from capplan.db import DatabaseLockedError, connect

    path = db_path(cfg, db)
    if not Path(path).is_file():
        fail(f"database {path} does not exist; run `capplan ingest` first or pass --db")
    try:
        con = connect(path, read_only=True)
    except DatabaseLockedError as exc:
        fail(str(exc))
    if not con.execute("select count(*) from information_schema.tables where table_name = 'requests'").fetchone()[0]:
        fail(f"database {path} has no requests table; run `capplan ingest` first")
    return con
