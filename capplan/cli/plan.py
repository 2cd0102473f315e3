"""``capplan plan``: run the monthly capacity plan once, locally, with a progress line per stage."""

from __future__ import annotations

import importlib
import json
import os
import time
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path

import typer

from capplan.cli._common import (CLUSTER_OPTION, CONFIG_OPTION, DB_OPTION, JSON_OPTION, SCHEDULER_OPTION, console,
                                      db_path, fail, load, print_json, with_cluster)

OUT_OPTION = typer.Option(None, "--out", help="Report root (default: [report].out_dir); the report goes to OUT/YYYY-MM/.")
MONTH_OPTION = typer.Option(
    None, "--month", help="First month of the plan, YYYY-MM (default: the month after the last complete month of data).")
VERBOSE_OPTION = typer.Option(False, "--verbose", "-v", help="Show Prefect's log lines as well.")
#: Modules the run imports only once a stage needs them, imported before the worker processes are forked
#: (:func:`capplan.runtime.worker_processes`), so that every worker starts with them: pandera's pandas backends
#: and their type registrations (the first validation), Holt-Winters and Theta (the forecast), matplotlib's
#: PNG canvas (the charts).
IMPORT_BEFORE_WORKERS = ("pandera.backends.pandas.register", "pandera.backends.pandas.builtin_checks",
                         "pandera.typing.dask", "statsmodels.tsa.holtwinters", "statsmodels.tsa.forecasting.theta",
                         "matplotlib.backends.backend_agg")
#: Modules only this process needs later (Prefect's engines at the first flow, openpyxl for the report's
#: workbook), imported instead while Prefect's temporary server is still starting, in this order, until it
#: answers (measured with ``python -X importtime``: with those above, ~1.4 s of imports after the flow began).
IMPORT_WHILE_SERVER_STARTS = ("prefect.flow_engine", "prefect.task_engine", "fastapi.encoders", "openpyxl")


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
    completed stage's seconds (as Prefect timed its run), in the order of the stages (those of
    :data:`capplan.flows.tasks.OVERLAPPING` overlap others, so the seconds may sum to more than the run's).
    """
    from capplan.runtime import freeze_heap_at_exit, imports_uncollected, start_temporary_server

    start = time.perf_counter()
    freeze_heap_at_exit()  # registered first: runs after the server's stop and Prefect's hooks
    # Prefect's temporary server boots on the other core while this process imports Prefect and the stages
    # (guarded: a kill -9 of this command must not leave it running); nothing to start when an API is named
    server_ready = start_temporary_server()
    with imports_uncollected() as freeze:  # no full collection walks what the imports make
        from rich.markup import escape
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        from capplan.db import DatabaseLockedError
        from capplan.flows.plan import monthly_capacity_plan
        from capplan.flows.tasks import stage_listener, stages_for
        from capplan.runtime import worker_processes

        for name in IMPORT_BEFORE_WORKERS:
            _import_if_installed(name)

        failures: list[str] = []
        stage_seconds: dict[str, float] = {}
        stages = stages_for(cfg)  # [[cluster.sources]] roll up in a sub-flow after the ingest
        freeze()  # before the fork: the workers share what the imports made and their collections skip it
        # the pools' forecasts and the charts run in processes forked here, before any thread (rich's, Prefect's) starts
        with worker_processes(), Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                          TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                                          console=console, transient=False) as progress:
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

            with stage_listener(on_stage), _without_heartbeats(server_ready.started):
                try:
                    server_ready(meanwhile=[partial(_import_if_installed, name) for name in IMPORT_WHILE_SERVER_STARTS])
                    freeze()
                    folder = monthly_capacity_plan(cfg, month)
                except DatabaseLockedError as exc:
                    fail(str(exc))
                except Exception as exc:  # the flow re-raises the failing task's exception
                    where = f"stage {failures[0]} failed: " if failures else ""
                    fail(f"{where}{type(exc).__name__}: {' '.join(str(exc).split())}")
    in_order = {stage: stage_seconds[stage] for stage in stages if stage in stage_seconds}  # some run side by side
    return str(Path(folder).resolve()), time.perf_counter() - start, in_order


def _without_heartbeats(temporary: bool) -> AbstractContextManager:
    """No flow-run heartbeats when the Prefect server is this command's temporary one (``temporary``).

    A heartbeat tells a server that a run's process is still alive, so that it can mark the run
    crashed when they stop; a temporary server stops with this process (:mod:`capplan.runtime`), so
    no one could act on one. The heartbeat thread also holds each flow's end for up to a second (it
    sleeps in one-second steps and the flow joins it). A server named by ``PREFECT_API_URL`` keeps them.
    """
    if not temporary:
        return nullcontext()
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    return temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})


def _import_if_installed(name: str) -> None:
    """Import module ``name`` now; one that is not installed is left to the code that needs it (if any)."""
    try:
        importlib.import_module(name)
    except ImportError:
        pass


def _next(stages: tuple[str, ...], done: str) -> str:
    i = stages.index(done) if done in stages else -1
    return stages[i + 1] if 0 <= i < len(stages) - 1 else "finishing"
