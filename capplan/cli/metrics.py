"""``capplan ingest-metrics``: hourly roll-ups from Prometheus (see docs/metrics.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from capplan.cli._common import CONFIG_OPTION, DB_OPTION, JSON_OPTION, console, db_path, fail, load, print_json

FROM_OPTION = typer.Option(..., "--from", help="First day or hour to ingest, UTC (ISO 8601, e.g. 2026-11-01).")
TO_OPTION = typer.Option(None, "--to", help="End, exclusive, UTC (default: now; only completed hours are stored).")
MAP_OPTION = typer.Option([], "--map", help="CANONICAL=COLUMN, e.g. ts_utc=hour or model=series_id; repeatable.")
SOURCE_OPTION = typer.Option(None, "--source", help="Only this [[metrics.sources]] name (default: all).")


def _utc(text: str | None):
    from datetime import UTC, datetime

    if text is None:
        return datetime.now(UTC)
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        fail(f"not an ISO 8601 date or time: {text!r} (e.g. 2026-11-01 or 2026-11-01T06:00)", code=2)
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def register(app: typer.Typer) -> None:
    @app.command("ingest-metrics")
    def ingest_metrics_command(config: Path = CONFIG_OPTION, db: Path = DB_OPTION, start: str = FROM_OPTION,
                               end: str = TO_OPTION, source: str = SOURCE_OPTION, json_out: bool = JSON_OPTION) -> None:
        """Range-query the Prometheus servers of the config's metrics.sources into the hourly roll-ups; resumable, whole hours only."""
        from capplan.db import connect
        from capplan.metrics.client import MetricsError
        from capplan.metrics.ingest import ingest_metrics

        cfg = load(config)
        sources = [s for s in cfg.metrics.sources if source in (None, s.name)]
        if not sources:
            fail("no [[metrics.sources]] in the config" + (f" named {source!r}" if source else ""), code=2)
        start_t, end_t = _utc(start), _utc(end)
        con = connect(db_path(cfg, db))
        try:
            results = [ingest_metrics(con, s, start_t, end_t).__dict__ for s in sources]
        except (MetricsError, ValueError) as exc:
            fail(str(exc))
        finally:
            con.close()
        if json_out:
            print_json(results)
        else:
            for r in results:
                console.print(f"[bold]{r['source']}[/]: {r['hours_stored']} hour(s) stored in {r['chunks']} chunk(s), "
                              f"{r['hours_skipped']} already stored; {r['requests']} requests; models: "
                              f"{', '.join(r['models']) or '—'}", highlight=False)

    @app.command("ingest-rates")
    def ingest_rates_command(file: Path = typer.Argument(..., help="CSV or Parquet: ts_utc, requests or qps, "
                                                         "optional input_tokens, output_tokens, model."),
                             config: Path = CONFIG_OPTION, db: Path = DB_OPTION, mapping: list[str] = MAP_OPTION,
                             json_out: bool = JSON_OPTION) -> None:
        """Load a request-rate series into the hourly traffic roll-up (forecast and the plan's throughput side)."""
        from capplan.db import connect
        from capplan.metrics.client import MetricsError
        from capplan.metrics.rates import ingest_rates

        pairs = [m.partition("=") for m in mapping]
        if any(not (k and eq and v) for k, eq, v in pairs):
            fail(f"--map expects CANONICAL=COLUMN, got {mapping}", code=2)
        cfg = load(config)
        con = connect(db_path(cfg, db))
        try:
            result = ingest_rates(con, file, {k.strip(): v.strip() for k, _, v in pairs})
        except MetricsError as exc:
            fail(str(exc))
        finally:
            con.close()
        if json_out:
            print_json(result)
        else:
            console.print(f"{result['file']}: {result['rows']} rows every {result['interval_s']} s -> {result['hours']} "
                          f"hour(s), {result['requests']} requests, models: {', '.join(result['models'])}",
                          highlight=False)
