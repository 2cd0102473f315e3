"""``capplan sample``: write a synthetic, seeded request log (see docs/sample.md)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import typer

from capplan.cli._common import JSON_OPTION, console, fail, print_json

INCIDENT_HELP = ("An explicit incident 'START,DURATION_MIN,ERROR_FRACTION,LATENCY_FACTOR', "
                 "e.g. '2026-09-10T14:00,45,0.2,3'; repeat for more. Replaces the seeded ones.")


def _parse_incident(text: str):
    from capplan.sample import Incident

    parts = text.split(",")
    if len(parts) != 4:
        raise ValueError(f"--incident {text!r}: expected START,DURATION_MIN,ERROR_FRACTION,LATENCY_FACTOR")
    try:
        start, duration, errors, factor = datetime.fromisoformat(parts[0]), *map(float, parts[1:])
    except ValueError as exc:
        raise ValueError(f"--incident {text!r}: {exc}") from None
    return Incident(start, duration, errors, factor)


def _parse_drift(model: str | None, metric: str, start: datetime | None, factor: float | None):
    from capplan.sample import Drift

    given = {"--drift-model": model, "--drift-start": start, "--drift-factor": factor}
    if all(v is None for v in given.values()):
        return None
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise ValueError(f"drift needs --drift-model, --drift-start and --drift-factor; missing {', '.join(missing)}")
    return Drift(model, metric, start, factor)


def sample(
    out: Path = typer.Option(..., "--out", "-o", help="Output file (.csv/.parquet/.jsonl/.ndjson[.gz|.zst]), "
                             "or a folder with --partition-by-day."),
    days: int = typer.Option(90, "--days", min=1, help="Number of days. [days]"),
    requests_per_day: float = typer.Option(8_000, "--requests-per-day", min=0,
                                           help="Mean requests per day in the first week. [requests/day]"),
    seed: int = typer.Option(0, "--seed", min=0, help="Random seed; same arguments and seed give the same rows."),
    start: datetime | None = typer.Option(None, "--start", formats=["%Y-%m-%d"],
                                          help="First day (UTC). Default: DAYS days before today."),
    growth: float = typer.Option(0.05, "--growth-per-month", help="Compound traffic growth. [fraction/month]"),
    incidents: bool = typer.Option(True, "--incidents/--no-incidents", help="Inject seeded incidents."),
    incident: list[str] = typer.Option([], "--incident", help=INCIDENT_HELP),
    drift_model: str | None = typer.Option(None, "--drift-model", help="Model whose prompt lengths drift."),
    drift_metric: str = typer.Option("input", "--drift-metric", help="'input' or 'output' tokens."),
    drift_start: datetime | None = typer.Option(None, "--drift-start", help="When the drift starts (UTC)."),
    drift_factor: float | None = typer.Option(None, "--drift-factor", help="Token multiplier from then on. [ratio]"),
    partition_by_day: bool = typer.Option(False, "--partition-by-day",
                                          help="Write Hive-partitioned Parquet: OUT/dt=YYYY-MM-DD/part-0.parquet."),
    split_by_month: bool = typer.Option(False, "--split-by-month", help="One file per month: <stem>-YYYY-MM<suffix>."),
    truth: Path | None = typer.Option(None, "--truth", help="Also write the ground truth (incidents, drift, "
                                      "bursts, rows per day) as JSON here."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing outputs."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Write a synthetic LLM request log: cycles, growth, bursts, incidents, drift; deterministic by seed."""
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from capplan.sample import SampleSpec, check_outputs, write_sample

    if partition_by_day and split_by_month:
        fail("--partition-by-day and --split-by-month exclude each other")
    first_day = start.date() if start else datetime.now(UTC).date() - timedelta(days=days)
    try:
        spec = SampleSpec(
            start=first_day, days=days, requests_per_day=requests_per_day, seed=seed,
            monthly_growth_fraction=growth,
            incidents=[_parse_incident(t) for t in incident] if incident else incidents,
            drift=_parse_drift(drift_model, drift_metric, drift_start, drift_factor),
        )
        split = "day" if partition_by_day else "month" if split_by_month else "none"
        check_outputs(spec, out, split, overwrite=force)
    except ValueError as exc:
        fail(str(exc), code=2)
    except FileExistsError as exc:
        fail(str(exc))
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("days"),
               TextColumn("{task.fields[rows]:,} rows"), TimeRemainingColumn())
    began = time.perf_counter()
    try:
        with Progress(*columns, console=console, transient=as_json) as progress:
            task = progress.add_task(f"sample → {out}", total=days, rows=0)
            rows = 0

            def on_day(chunk) -> None:
                nonlocal rows
                rows += chunk.table.num_rows
                progress.update(task, advance=1, rows=rows)

            result = write_sample(spec, out, split=split, overwrite=force, on_day=on_day)
    except (ValueError, FileExistsError, OSError) as exc:
        fail(str(exc))
    seconds = time.perf_counter() - began
    summary = {
        "paths": [str(p) for p in result.paths], "rows": result.rows, "seconds": round(seconds, 3),
        "rows_per_s": round(result.rows / seconds) if seconds > 0 else None,
        "start": first_day.isoformat(), "days": days, "seed": seed,
        "incidents": result.truth.to_dict()["incidents"], "drift": result.truth.to_dict()["drift"],
    }
    if truth is not None:
        truth.parent.mkdir(parents=True, exist_ok=True)
        truth.write_text(json.dumps(result.truth.to_dict(), indent=2) + "\n", encoding="utf-8")
    if as_json:
        print_json(summary)
        return
    console.print(f"wrote {result.rows:,} rows to {len(result.paths)} file(s) in {seconds:.1f} s "
                  f"({summary['rows_per_s'] or 0:,} rows/s)", highlight=False)
    for inc in summary["incidents"]:
        console.print(f"  incident {inc['start']} for {inc['duration_min']:g} min: "
                      f"{inc['error_fraction']:.0%} errors, latency ×{inc['latency_factor']:g}", highlight=False)
    if spec.drift:
        d = spec.drift
        console.print(f"  drift {d.model} {d.metric} tokens ×{d.factor:g} from {d.start.isoformat()}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``capplan sample`` to the CLI."""
    app.command("sample")(sample)
