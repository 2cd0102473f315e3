"""``capplan backtest``: re-run the plan as of the start of each month and compare it with what happened."""

from __future__ import annotations

from pathlib import Path

import typer

from capplan.cli._common import CONFIG_OPTION, DB_OPTION, JSON_OPTION, console, db_path, fail, load, print_json

_MONTH = r"^\d{4}-(0[1-9]|1[0-2])$"


def register(app: typer.Typer) -> None:
    """Add the ``backtest`` command to ``app``."""

    @app.command("backtest")
    def backtest_command(
        first: str = typer.Option(..., "--from", help="First month to plan, YYYY-MM."),
        last: str = typer.Option(..., "--to", help="Last month to plan, YYYY-MM."),
        config: Path | None = CONFIG_OPTION,
        db: Path | None = DB_OPTION,
        as_json: bool = JSON_OPTION,
    ) -> None:
        """Plan each month using only the data before it, then size and price what its traffic needed.

        Reads the database only (refresh it first with `capplan ingest` or `capplan profile --refresh`).
        """
        import re

        from rich.table import Table

        from capplan.history.backtest import backtest
        from capplan.profile import ProfileError

        for name, value in (("--from", first), ("--to", last)):
            if not re.fullmatch(_MONTH, value):
                fail(f"{name} {value!r}: expected a month as YYYY-MM")
        cfg = load(config)
        path = db_path(cfg, db)
        try:
            result = backtest(path, cfg, first, last)
        except (ValueError, FileNotFoundError, ProfileError) as exc:
            fail(str(exc))
        if as_json:
            print_json(result.to_dict())
            return
        table = Table(title=f"Backtest {first} … {last}: each month planned with only the data before it")
        for column in ("month", "pool", "GPUs P50/P90 planned", "GPUs needed", "hours short P50/P90",
                       "idle GPU·h", "cost planned", "cost at need", "peak ≤ P90", "demand error"):
            table.add_column(column, justify="left" if column in ("month", "pool") else "right")
        for m in result.months:
            error = "—" if m.demand_abs_pct_error is None else f"{m.demand_abs_pct_error:.1%}"
            table.add_row(m.month + ("" if m.complete else " (partial)"), m.pool,
                          f"{m.planned_gpus_p50}/{m.planned_gpus_p90}", str(m.needed_gpus),
                          f"{m.under_capacity_hours_p50}/{m.under_capacity_hours_p90}", f"{m.idle_gpu_hours:,.0f}",
                          f"${m.planned_cost_usd:,.0f}", f"${m.actual_need_cost_usd:,.0f}",
                          "yes" if m.peak_within_p90 else "no", error)
        console.print(table)
        for s in result.skipped:
            console.print(f"[yellow]not planned[/]: {s['month']}: {s['reason']}")
        summary = result.summary()
        coverage = "—" if summary["p90_coverage"] is None else f"{summary['p90_coverage']:.0%}"
        mape = "—" if summary["demand_mape"] is None else f"{summary['demand_mape']:.1%}"
        console.print(f"{summary['compared']} complete pool-months compared: actual peak within the planned P90 in "
                      f"{coverage}; demand MAPE {mape}; hours under capacity at P50 "
                      f"{summary['under_capacity_hours_p50']}, at P90 {summary['under_capacity_hours_p90']}.")
