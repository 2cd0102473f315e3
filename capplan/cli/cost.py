"""``capplan cost``: the cheapest reserved commitment and the cost per option for an hourly GPU need.

What-if from flags (``--on-demand-usd-per-hour``, ``--reserved-usd-per-hour``,
``--spot-usd-per-hour``) or from the price book (``--gpu``, ``--term``); the
need comes from ``--need FILE.csv`` (``ts_utc``, ``gpus``: one row per hour),
which is required: the monthly plan prices its own hourly fleet (``budget.csv``
in its report folder) and writes no need file to fall back on.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from capplan.cli._common import CONFIG_OPTION, JSON_OPTION, console, fail, load, print_json

if TYPE_CHECKING:
    import numpy as np

    from capplan.config import CapplanConfig
    from capplan.sizing.cost.plan import CostPlan, OptionPrices

NEED_COLUMNS = ("ts_utc", "gpus")


def read_need_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Hourly GPU need from a CSV with columns ``ts_utc`` (ISO, UTC) and ``gpus`` [GPUs].

    Returns the hours as ``datetime64[h]`` (UTC) and the need as floats.

    Raises
    ------
    ValueError
        Naming the file, line and column of the first bad value: a missing
        column, an unparseable timestamp, a timestamp not on the hour or not
        one hour after the previous row, or a GPU count that is not a finite
        number >= 0.
    """
    import numpy as np
    import pandas as pd

    if not path.is_file():
        raise ValueError(f"need file {path} does not exist")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise ValueError(f"{path}: not a CSV with a header row ({exc})") from None
    missing = [c for c in NEED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; expected {list(NEED_COLUMNS)}, "
                         f"found {list(frame.columns)}")
    if frame.empty:
        raise ValueError(f"{path}: no data rows; expected one row per hour")
    ts = pd.to_datetime(frame["ts_utc"], utc=True, errors="coerce", format="ISO8601")
    gpus = pd.to_numeric(frame["gpus"], errors="coerce")
    checks = (
        ("ts_utc", ts.isna(), "an ISO-8601 timestamp (UTC if no offset)"),
        ("ts_utc", ts.notna() & (ts != ts.dt.floor("h")), "a timestamp on the hour (hh:00:00)"),
        ("gpus", ~np.isfinite(gpus.to_numpy(float)) | (gpus < 0), "a GPU count >= 0"),
        ("ts_utc", np.r_[False, ts.diff().iloc[1:] != pd.Timedelta(hours=1)],
         "exactly one hour after the previous row (sorted, no gaps, no repeats)"),
    )
    for column, bad, expected in checks:
        rows = np.flatnonzero(np.asarray(bad, dtype=bool))
        if rows.size:
            i = int(rows[0])  # line i + 2: the header is line 1
            raise ValueError(f"{path}: line {i + 2}, column {column!r}: {frame[column].iloc[i]!r} "
                             f"is not {expected}")
    hours = ts.dt.tz_localize(None).to_numpy().astype("datetime64[h]")
    return hours, gpus.to_numpy(float)


def resolve_prices(cfg: CapplanConfig, gpu: str, term: str, *, on_demand: float | None,
                   reserved: float | None, spot: float | None,
                   spot_overhead: float | None) -> tuple[OptionPrices, str]:
    """Prices from the flags, any missing ones from the price book; and a line saying where they came from."""
    from capplan.sizing.cost.plan import OptionPrices
    from capplan.sizing.cost.prices import load_price_book

    if on_demand is not None and reserved is not None:
        return OptionPrices(on_demand, reserved, spot, spot_overhead or 1.0), "prices from flags (what-if)"
    book = load_price_book(cfg.cost.price_book)
    listed = book.gpu(gpu)
    base = listed.option_prices(term)  # type: ignore[arg-type]  # term checked by the CLI choice
    prices = OptionPrices(
        on_demand_usd_per_gpu_hour=base.on_demand_usd_per_gpu_hour if on_demand is None else on_demand,
        reserved_usd_per_gpu_hour=base.reserved_usd_per_gpu_hour if reserved is None else reserved,
        spot_usd_per_gpu_hour=base.spot_usd_per_gpu_hour if spot is None else spot,
        spot_overhead_factor=base.spot_overhead_factor if spot_overhead is None else spot_overhead)
    return prices, f"{gpu}, reserved {term}, from {cfg.cost.price_book.name}: {book.caveat}"


def plan_summary(plan: CostPlan, *, term: str, price_source: str) -> dict[str, Any]:
    """The JSON payload: R*, GPU-hours and cost per option, totals and monthly rows."""
    from capplan.sizing.cost.plan import OPTIONS

    total = plan.total()
    c = plan.commitment
    return {
        "gpu_type": plan.gpu_type, "term": term, "price_source": price_source,
        "prices_usd_per_gpu_hour": {
            "on_demand": plan.prices.on_demand_usd_per_gpu_hour,
            "reserved": plan.prices.reserved_usd_per_gpu_hour,
            "spot": plan.prices.spot_usd_per_gpu_hour,
            "spot_effective": (plan.prices.spot_effective_usd_per_gpu_hour
                               if plan.prices.spot_usd_per_gpu_hour is not None else None)},
        "hours": total.hours,
        "reserved_gpus": plan.reserved_gpus,
        "optimal_reserved_gpus": c.reserved_gpus,
        "break_even_fraction": c.break_even_fraction,
        "batch_on_spot": plan.batch_on_spot,
        "gpu_hours": {o: getattr(total, f"gpu_hours_{o}") for o in OPTIONS} | {"need": total.need_gpu_hours},
        "cost_usd": {o: getattr(total, f"cost_usd_{o}") for o in OPTIONS},
        "total_cost_usd": total.total_cost_usd,
        "all_on_demand_cost_usd": total.all_on_demand_cost_usd,
        "saving_usd": total.saving_usd,
        "months": plan.rows(with_total=False),
    }


def _print_table(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    out = summary
    table = Table(title=f"{out['gpu_type']}: {out['hours']} h, reserved {out['reserved_gpus']} GPUs "
                        f"(optimal {out['optimal_reserved_gpus']}, break-even {out['break_even_fraction']:.1%} "
                        "of hours)")
    table.add_column("option")
    table.add_column("GPU-hours [GPU·h]", justify="right")
    table.add_column("cost [USD]", justify="right")
    for option, cost in out["cost_usd"].items():
        table.add_row(option.replace("_", "-"), f"{out['gpu_hours'][option]:,.1f}", f"{cost:,.2f}")
    table.add_row("total", f"{out['gpu_hours']['need']:,.1f} needed", f"{out['total_cost_usd']:,.2f}", style="bold")
    table.add_row("all on-demand", "", f"{out['all_on_demand_cost_usd']:,.2f}")
    table.add_row("saving", "", f"{out['saving_usd']:,.2f}")
    Console().print(table)
    console.print(out["price_source"], highlight=False)


def _write_rows(path: Path, plan: CostPlan) -> None:
    import csv

    from capplan.reports.escaping import spreadsheet_text
    from capplan.sizing.cost.plan import ROW_COLUMNS

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=ROW_COLUMNS)
        writer.writeheader()
        writer.writerows({k: spreadsheet_text(v) for k, v in row.items()} for row in plan.rows())


def register(app: typer.Typer) -> None:
    """Add ``capplan cost`` to ``app``."""

    @app.command("cost")
    def cost(
        need: Path = typer.Option(
            ..., "--need", help="CSV of hourly GPU need: columns ts_utc (ISO, UTC), gpus; one row per hour. "
                                "Required (a plan prices its own fleet in its budget.csv)."),
        gpu: str | None = typer.Option(None, "--gpu", help="GPU type in the price book (default: [sizing].gpu)."),
        term: str | None = typer.Option(None, "--term", help="Reserved term: 1y or 3y (default: [cost].reserved_term)."),
        on_demand_usd_per_hour: float | None = typer.Option(
            None, "--on-demand-usd-per-hour", min=0, help="On-demand price per GPU-hour (overrides the book). [USD]"),
        reserved_usd_per_hour: float | None = typer.Option(
            None, "--reserved-usd-per-hour", min=0, help="Effective reserved price per GPU-hour. [USD]"),
        spot_usd_per_hour: float | None = typer.Option(
            None, "--spot-usd-per-hour", min=0, help="Spot price per GPU-hour; used only for interruptible work. [USD]"),
        spot_overhead_factor: float | None = typer.Option(
            None, "--spot-overhead-factor", min=1, help="Spot GPU-hours bought per useful GPU-hour. [ratio]"),
        interruptible_share: float | None = typer.Option(
            None, "--interruptible-share", min=0, max=1,
            help="Share of need that may run on spot (default: [cost].interruptible_share). [fraction]"),
        reserved_gpus: int | None = typer.Option(
            None, "--reserved-gpus", min=0, help="Price this reserved count instead of the optimum. [GPUs]"),
        csv_out: Path | None = typer.Option(None, "--csv", help="Write the monthly finance rows to this CSV."),
        config: Path | None = CONFIG_OPTION,
        json_out: bool = JSON_OPTION,
    ) -> None:
        """Optimal reserved GPU count and cost per option (reserved, on-demand, spot) for an hourly need."""
        from capplan.sizing.cost.plan import blended_plan
        from capplan.sizing.cost.prices import PriceBookError

        cfg = load(config)
        gpu_type = gpu or cfg.sizing.gpu
        chosen_term = term or cfg.cost.reserved_term
        if chosen_term not in ("1y", "3y"):
            fail(f"--term must be 1y or 3y, got {chosen_term!r}", code=2)
        try:
            hours, gpus = read_need_csv(need)
            prices, source = resolve_prices(
                cfg, gpu_type, chosen_term, on_demand=on_demand_usd_per_hour, reserved=reserved_usd_per_hour,
                spot=spot_usd_per_hour, spot_overhead=spot_overhead_factor)
            share = cfg.cost.interruptible_share if interruptible_share is None else interruptible_share
            plan = blended_plan(hours, gpus, gpu_type=gpu_type, prices=prices, interruptible_share=share,
                                reserved_gpus=reserved_gpus, level="what-if")
        except PriceBookError as exc:
            fail(str(exc), code=2)
        except KeyError as exc:
            fail(str(exc.args[0]), code=2)
        except ValueError as exc:
            fail(str(exc))
        summary = plan_summary(plan, term=chosen_term, price_source=source)
        if csv_out is not None:
            _write_rows(csv_out, plan)
        if json_out:
            print_json(summary)
        else:
            _print_table(summary)
