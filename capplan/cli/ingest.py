"""``capplan ingest``: load request-log files into the DuckDB database (see docs/ingest.md)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from capplan.cli._common import (CLUSTER_OPTION, CONFIG_OPTION, DB_OPTION, JSON_OPTION, SCHEDULER_OPTION, console,
                                      db_path, fail, load, print_error, print_json, run_partitioned, with_cluster)

MAP_HELP = "CANONICAL=SOURCE column mapping, e.g. ts_utc=TIMESTAMP; repeatable; overrides the preset."


def _parse_map(items: list[str]) -> dict[str, str]:
    pairs = [item.partition("=") for item in items]
    bad = [item for item, (k, eq, v) in zip(items, pairs) if not (k and eq and v)]
    if bad:
        fail(f"--map {bad[0]!r}: expected CANONICAL=SOURCE, e.g. ts_utc=TIMESTAMP", code=2)
    return {k.strip(): v.strip() for k, _, v in pairs}


def _source(cfg, name: str | None, overrides: dict):
    """The configured source called ``name`` (or a new one) with the command-line overrides applied."""
    from pydantic import ValidationError

    from capplan.config import SourceConfig
    from capplan.ingest import column_mapping

    base = next((s for s in cfg.ingest.sources if s.name == name), None)
    data = {**(base.model_dump() if base else {"name": name or "cli"}),
            **{k: v for k, v in overrides.items() if v is not None and v != {}}}
    try:
        source = SourceConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        fail(f"invalid --{'-'.join(map(str, err['loc'])).replace('_', '-')} {err.get('input')!r}: {err['msg']}", code=2)
    try:
        column_mapping(source)
    except ValueError as exc:
        fail(str(exc), code=2)
    return source


def _summary_table(results):
    from rich.table import Table

    from capplan.ingest.run import FAILED_STATUSES

    table = Table(title="ingest summary")
    for col in ("file", "status", "read", "loaded", "quarantined", "note"):
        table.add_column(col, justify="right" if col in ("read", "loaded", "quarantined") else "left")
    for r in results:
        colour = {"loaded": "green", "replaced": "green", "unchanged": "dim"}.get(r.status, "red")
        table.add_row(Path(r.path).name, f"[{colour}]{r.status}[/]", f"{r.rows_read:,}", f"{r.rows_loaded:,}",
                      f"{r.rows_quarantined:,}", "see below" if r.status in FAILED_STATUSES or r.notes else r.message)
    return table


def ingest(
    paths: list[str] = typer.Argument(None, help="Files or glob patterns (default: the configured sources)."),
    config: Path | None = CONFIG_OPTION,
    db: Path | None = DB_OPTION,
    source: str | None = typer.Option(None, "--source", help="Source name: a configured source, or a new name."),
    preset: str | None = typer.Option(None, "--preset", help="Column-mapping preset: canonical or azure."),
    mapping: list[str] = typer.Option([], "--map", help=MAP_HELP),
    timestamp_unit: str | None = typer.Option(None, "--timestamp-unit", help="Unit of numeric timestamps: s|ms|us."),
    origin: str | None = typer.Option(None, "--origin", help="ISO timestamp that relative timestamps count from."),
    timezone: str | None = typer.Option(None, "--timezone", help="IANA zone of naive timestamps (default UTC)."),
    on_changed: str | None = typer.Option(None, "--on-changed",
                                          help="A path ingested before with other content: refuse|replace."),
    model: str | None = typer.Option(None, "--model", help="Model name of rows that have none (no model column, "
                                                          "or an empty value)."),
    allow_all_quarantined: bool = typer.Option(False, "--allow-all-quarantined",
                                               help="Load a file even if every row is quarantined (else it is a "
                                                    "failure and nothing of it is loaded)."),
    cluster: str | None = CLUSTER_OPTION,
    scheduler_address: str | None = SCHEDULER_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Validate and load request logs (CSV, Parquet, JSON lines; gzip/zstd) into DuckDB."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from capplan.db import DatabaseLockedError, connect
    from capplan.ingest import ensure_tables, ingest_paths
    from capplan.ingest.run import FAILED_STATUSES
    from capplan.profile import refresh_rollups

    cfg = with_cluster(load(config), cluster, scheduler_address)
    if allow_all_quarantined:
        cfg = cfg.model_copy(update={"ingest": cfg.ingest.model_copy(update={"allow_all_quarantined": True})})
    if on_changed not in (None, "refuse", "replace"):
        fail(f"--on-changed {on_changed!r}: expected refuse or replace", code=2)
    overrides = {"preset": preset, "columns": _parse_map(mapping), "timestamp_unit": timestamp_unit,
                 "origin": origin, "timezone": timezone, "model": model}
    if paths and cluster is not None:  # --cluster: the paths are Hive folders or files, rolled up per partition
        cfg = cfg.model_copy(update={"cluster": cfg.cluster.model_copy(update={"sources": [
            _source(cfg, source, overrides).model_copy(update={"paths": paths})]})})
        jobs = []
    elif paths:
        jobs = [(_source(cfg, source, overrides), paths)]
    else:
        chosen = [s for s in cfg.ingest.sources if source in (None, s.name)]
        if not chosen and not cfg.cluster.sources:
            fail("no files given and no matching [[ingest.sources]] in the config", code=2)
        jobs = [(_source(cfg, s.name, overrides), s.paths) for s in chosen]
    try:
        con = connect(db_path(cfg, db))
    except DatabaseLockedError as exc:
        fail(str(exc), kind="database_locked")
    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[rows]:,} rows read"), console=console, transient=True,
                  disable=as_json) as progress:
        bar = progress.add_task("files", total=None, rows=0)

        def advance(result) -> None:
            progress.update(bar, advance=1, description=Path(result.path).name)

        def add_rows(n: int) -> None:
            progress.update(bar, rows=progress.tasks[0].fields["rows"] + n)

        try:
            for src, patterns in jobs:
                results += ingest_paths(con, patterns, src, cfg.ingest, on_changed=on_changed, on_file=advance,
                                        on_rows=add_rows)
            if jobs:  # readers never write: the profile is current once the files are in
                ensure_tables(con)  # even if no file matched
                refresh_rollups(con)
        finally:
            con.close()
    partitioned = run_partitioned(cfg, as_json, db)
    files = [{k: r.to_dict()[k] for k in ("path", "rows_read", "rows_loaded", "rows_quarantined", "status", "message",
                                          "notes")}
             for r in results]
    if as_json:
        print_json(files if partitioned is None else {"files": files, "partitioned": partitioned.to_dict()})
    elif results:
        console.print(_summary_table(results))
    failed = [r for r in results if r.status in FAILED_STATUSES]
    for r in failed:
        print_error(r.message)
    for r in results:
        for note in r.notes:
            console.print(f"[yellow]warning:[/] {escape(r.path)}: {escape(note)}", highlight=False, soft_wrap=True)
    if failed or (partitioned is not None and (partitioned.failed or partitioned.missing)):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``capplan ingest`` to ``app``."""
    app.command("ingest")(ingest)
