"""``capplan plan``: run the monthly capacity plan once, locally, with a progress line per stage."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import typer

from capplan.cli._common import (CLUSTER_OPTION, CONFIG_OPTION, DB_OPTION, JSON_OPTION, SCHEDULER_OPTION, console,
                                      db_path, fail, load, print_json, with_cluster)

OUT_OPTION = typer.Option(None, "--out", help="Report root (default: [report].out_dir); the report goes to OUT/YYYY-MM/.")
MONTH_OPTION = typer.Option(
    None, "--month", help="First month of the plan, YYYY-MM (default: the month after the last complete month of data).")
VERBOSE_OPTION = typer.Option(False, "--verbose", "-v", help="Show Prefect's log lines as well.")


def prefect_environment(verbose: bool) -> None:
    """Prefect settings for a local run, unless the user set them: no telemetry, time for the
    temporary server to start on a busy machine, and INFO lines kept off the terminal (they
    still reach Prefect's database and UI) unless ``verbose``.

    Must run before ``prefect`` is imported: its settings and logging are read at import.
    """
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    if not verbose:
        # Prefect logs a failing task at ERROR with its traceback; the command prints the cause in one line.
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan_command(config: Path = CONFIG_OPTION, db: Path = DB_OPTION, out: Path = OUT_OPTION,
                     month: str = MONTH_OPTION, verbose: bool = VERBOSE_OPTION, json_out: bool = JSON_OPTION,
                     cluster: str = CLUSTER_OPTION, scheduler_address: str = SCHEDULER_OPTION) -> None:
        """Ingest new logs, forecast, size, cost and write the monthly report (Prefect flow, no server needed)."""
        cfg = with_cluster(load(config), cluster, scheduler_address)
        if month is not None:
            from capplan.plan.calendar import parse_month
            try:
                parse_month(month)
            except ValueError as exc:
                fail(str(exc), code=2)
        updates = {"database": cfg.database.model_copy(update={"path": db_path(cfg, db)})}
        if out is not None:
            updates["report"] = cfg.report.model_copy(update={"out_dir": out})
        cfg = cfg.model_copy(update=updates)
        prefect_environment(verbose)
        folder, seconds, stage_seconds = _run_with_progress(cfg, month)
        if json_out:
            plan_file = Path(folder) / "plan.json"  # per-pool results and totals (reports.assemble.summary)
            results = json.loads(plan_file.read_text()) if plan_file.is_file() else {}
            print_json({"report_dir": folder, "seconds": round(seconds, 1),
                        "stage_seconds": {k: round(v, 2) for k, v in stage_seconds.items()}, **results})
        else:
            console.print(f"[bold green]report:[/] {folder}/report.html  ({seconds:.1f} s)", highlight=False)


def _run_with_progress(cfg, month: str | None) -> tuple[str, float, dict[str, float]]:
    """Run the flow with one rich progress row per stage; a failed stage exits with its cause.

    Returns the report folder, the seconds since the command began importing the stages, and each
    completed stage's seconds (as Prefect timed its run).
    """
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from capplan.runtime import start_temporary_server

    start = time.perf_counter()
    # Prefect's temporary server boots on the other core while this process imports the stages (guarded:
    # a kill -9 of this command must not leave it running); nothing to start when PREFECT_API_URL is set
    server_ready = start_temporary_server()
    from capplan.db import DatabaseLockedError
    from capplan.flows.plan import monthly_capacity_plan
    from capplan.flows.tasks import stage_listener, stages_for

    failures: list[str] = []
    stage_seconds: dict[str, float] = {}
    stages = stages_for(cfg)  # [[cluster.sources]] roll up in a sub-flow after the ingest
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        bar = progress.add_task("starting Prefect", total=len(stages))

        def on_stage(stage: str, state: str, seconds: float, message: str) -> None:
            if state == "Completed":
                stage_seconds[stage] = seconds
                progress.console.print(f"  [green]✓[/] {stage:<13} {seconds:6.1f} s", highlight=False)
                progress.update(bar, advance=1, description=_next(stages, stage))
            elif state == "Note":
                progress.console.print(f"  [yellow]![/] {escape(message)}", highlight=False)
            elif state in ("Failed", "Crashed"):
                failures.append(stage)

        with stage_listener(on_stage):
            try:
                server_ready()
                folder = monthly_capacity_plan(cfg, month)
            except DatabaseLockedError as exc:
                fail(str(exc))
            except Exception as exc:  # the flow re-raises the failing task's exception
                where = f"stage {failures[0]} failed: " if failures else ""
                fail(f"{where}{type(exc).__name__}: {' '.join(str(exc).split())}")
    return str(Path(folder).resolve()), time.perf_counter() - start, stage_seconds


def _next(stages: tuple[str, ...], done: str) -> str:
    i = stages.index(done) if done in stages else -1
    return stages[i + 1] if 0 <= i < len(stages) - 1 else "finishing"
