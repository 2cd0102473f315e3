"""Helpers shared by the sub-commands: config loading, JSON output, errors."""

from __future__ import annotations

import json
import os
import sys
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:  # imported where used: pydantic and the config models cost most of `capplan --help`
    import duckdb

    from capplan.config import CapplanConfig

console = Console(stderr=True)

CONFIG_OPTION = typer.Option(None, "--config", "-c", help="capplan.toml to use (default: built-in defaults).")
DB_OPTION = typer.Option(None, "--db", help="DuckDB file (default: [database].path from the config).")
JSON_OPTION = typer.Option(False, "--json", help="Print machine-readable JSON on stdout.")


#: Set by the ``capplan`` group while a command given ``--json`` runs (:class:`capplan.cli.JsonErrorGroup`):
#: an error is then also a JSON object on stdout.
JSON_ERRORS: ContextVar[bool] = ContextVar("capplan_json_errors", default=False)
#: ``type`` of the JSON error object: what kind of failure (stable names, docs/cli.md)
ERROR_TYPES = ("usage", "error", "database_locked", "internal")


def fail(message: str, code: int = 1, kind: str | None = None) -> NoReturn:
    """Print a one-line error (no stack trace) and exit non-zero; under ``--json`` also the JSON error object.

    ``kind`` is the object's ``type`` (one of :data:`ERROR_TYPES`); by default ``usage`` for code 2 (bad
    options or config), else ``error``.
    """
    print_error(message)
    if JSON_ERRORS.get():
        print_json_error(kind or ("usage" if code == 2 else "error"), message)
    raise typer.Exit(code)


def print_json_error(kind: str, message: str) -> None:
    """Write ``{"error": {"type": kind, "message": message}}`` to stdout: what every ``--json`` failure prints."""
    print_json({"error": {"type": kind, "message": message}})


def print_error(message: str) -> None:
    """Print ``error: message`` on stderr, on one line, the message taken literally (no rich markup)."""
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def load(config: Path | None) -> CapplanConfig:
    """Load the config or exit with the ConfigError's message."""
    from capplan.config import ConfigError, load_config

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


def open_requests_db(cfg: CapplanConfig, db: Path | None) -> duckdb.DuckDBPyConnection:
    """Open the database read-only, or exit with one line if it is missing, locked or has no requests."""
    from capplan import sql
    from capplan.db import DatabaseLockedError, connect

    path = db_path(cfg, db)
    if not Path(path).is_file():
        fail(f"database {path} does not exist; run `capplan ingest` first or pass --db")
    try:
        con = connect(path, read_only=True)
    except DatabaseLockedError as exc:
        fail(str(exc), kind="database_locked")
    (has_requests,) = con.execute(sql.load("rpt_cli_table_exists"), {"table_name": "requests"}).fetchone()
    if not has_requests:
        fail(f"database {path} has no requests table; run `capplan ingest` first")
    return con


CLUSTER_OPTION = typer.Option(
    None, "--cluster", help="Roll partitioned sources up in this process (none) or in parallel on a Dask cluster "
                            "(dask); default: [cluster].task_runner.")
SCHEDULER_OPTION = typer.Option(
    None, "--scheduler-address", help="Dask scheduler, e.g. tcp://10.0.0.5:8786 (default: [cluster].scheduler_address, "
                                      "else a LocalCluster on this machine).")


def with_cluster(cfg: CapplanConfig, cluster: str | None, scheduler_address: str | None) -> CapplanConfig:
    """``cfg`` with ``--cluster`` and ``--scheduler-address`` applied to its ``[cluster]`` section."""
    if cluster not in (None, "none", "dask"):
        fail(f"--cluster {cluster!r}: expected none or dask", code=2)
    if scheduler_address is not None and cluster == "none":
        fail("--scheduler-address needs --cluster dask", code=2)
    updates = {k: v for k, v in (("task_runner", cluster), ("scheduler_address", scheduler_address)) if v is not None}
    if scheduler_address is not None:
        updates["task_runner"] = "dask"
    return cfg.model_copy(update={"cluster": cfg.cluster.model_copy(update=updates)})


def run_partitioned(cfg: CapplanConfig, as_json: bool = False, db: Path | None = None):
    """Roll up ``[[cluster.sources]]`` into ``db`` (default: the config's) on the configured task runner; print a line.

    Returns the :class:`capplan.partitioned.RollupSummary`, or ``None`` when no partitioned source is configured.
    """
    if not cfg.cluster.sources:
        return None
    # read when prefect is imported: no telemetry, time for the temporary server to start, INFO lines kept off
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    from capplan.partitioned import PartitionError
    from capplan.flows.partitioned import run_partitioned_rollup
    from capplan.runtime import tie_temporary_server_to_this_process

    tie_temporary_server_to_this_process()

    cfg = cfg.model_copy(update={"database": cfg.database.model_copy(update={"path": db_path(cfg, db)})})
    try:
        summary = run_partitioned_rollup(cfg)
    except PartitionError as exc:
        fail(str(exc))
    if not as_json:
        console.print(f"partitioned: {len(summary.rolled_up)} partitions rolled up ({len(summary.replaced)} replaced) "
                      f"on {cfg.cluster.task_runner}: {summary.rows_read:,} rows read, {summary.rows_rolled_up:,} "
                      f"rolled up, {summary.rows_quarantined:,} quarantined", highlight=False, soft_wrap=True)
    for message in [*summary.failed, *(f"{m}: no such file or partition folder" for m in summary.missing)]:
        print_error(message)
    return summary
