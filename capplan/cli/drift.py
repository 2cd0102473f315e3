"""``capplan drift``: token-length drift per model, priced, and the month-over-month cost attribution."""

from __future__ import annotations

from pathlib import Path

import typer

from capplan.cli._common import (
    CONFIG_OPTION,
    DB_OPTION,
    JSON_OPTION,
    console,
    fail,
    load,
    open_requests_db,
    print_json,
)


def register(app: typer.Typer) -> None:
    """Add the ``drift`` command to ``app``."""

    @app.command("drift")
    def drift(
        config: Path | None = CONFIG_OPTION,
        db: Path | None = DB_OPTION,
        volume: str = typer.Option(
            "forecast", "--volume",
            help="Monthly volume that prices a drift: 'forecast' (mean of the next [forecast].horizon_months) "
                 "or 'recent' (last 30 days)."),
        month_before: str | None = typer.Option(None, "--month-before", help="YYYY-MM (default: the month "
                                                "before --month-after)."),
        month_after: str | None = typer.Option(None, "--month-after", help="YYYY-MM (default: the last complete "
                                               "month in the log)."),
        as_json: bool = JSON_OPTION,
    ) -> None:
        """Detect input/output-length drift, price it, and split the monthly cost change."""
        import pandas as pd
        from rich.markup import escape
        from rich.table import Table

        from capplan.drift.decomposition import cost_change_decomposition
        from capplan.drift.detect import window_comparisons
        from capplan.drift.histogram import daily_histograms
        from capplan.drift.pricing import forecast_requests_per_month, monthly_requests, price_findings
        from capplan.drift.pricing import request_costs
        from capplan.forecasting.history import window_note
        from capplan.profile.exposure import observed_span

        if volume not in ("forecast", "recent"):
            fail(f"--volume {volume!r}: expected 'forecast' or 'recent'")
        cfg = load(config)
        con = open_requests_db(cfg, db)
        try:
            hist = daily_histograms(con)
            spans = observed_span(con)  # the hours of history (a day of histograms may hold one hour)
        finally:
            con.close()
        if hist.empty:
            fail("no served (2xx) requests in the database")
        try:
            costs = request_costs(cfg, hist["model"].unique())
            windows = window_comparisons(hist, cfg.drift)
            # the volume prices the windows compared: with none (too little history) a forecast is not needed,
            # and cannot be made from a day or two
            per_month = (forecast_requests_per_month(hist, cfg.forecast.horizon_months)
                         if volume == "forecast" and len(windows) else monthly_requests(hist))
            findings = price_findings(hist, windows, costs, per_month, cfg.drift.window_days)
            # by default the last two months the log covers from their first to their last day
            first_full = (hist["day_utc"].min() - pd.Timedelta(days=1)).to_period("M") + 1
            after = pd.Period(month_after, "M") if month_after else (
                (hist["day_utc"].max() + pd.Timedelta(days=1)).to_period("M") - 1)
            before = pd.Period(month_before, "M") if month_before else after - 1
            cost_change = {"month_before": str(before), "month_after": str(after)}
            if month_before or month_after or before >= first_full:
                parts = cost_change_decomposition(hist, str(before), str(after), costs)
                cost_change["usd_change"] = dict(zip(parts["component"], parts["usd_change"]))
            elif after < first_full:
                cost_change["skipped"] = (f"the log covers no whole month ({hist['day_utc'].min():%Y-%m-%d} to "
                                          f"{hist['day_utc'].max():%Y-%m-%d}); a cost change compares two")
            else:
                cost_change["skipped"] = (f"the log does not cover all of {before} (it starts "
                                          f"{hist['day_utc'].min():%Y-%m-%d}); pass --month-before/--month-after")
        except (ValueError, KeyError) as exc:
            fail(str(exc).strip("'\""))
        hours = sum((last - first).total_seconds() for first, last in spans) / 3600
        needed = window_note("a drift test", hours, cfg.drift.baseline_days + cfg.drift.window_days)
        payload = {"volume_source": volume, "windows_compared": int(len(windows)),
                   "windows_alerting": int(windows["alert"].sum()),
                   "findings": findings.to_dict("records"), "cost_change": cost_change,
                   "cost_models": {m: {"source": c.source, "inputs": c.describe()} for m, c in sorted(costs.items())}}
        if not len(windows):  # nothing compared is not "no drift"
            payload["not_tested"] = (f"no window could be compared: {needed or 'too few days with traffic'} "
                                     f"({cfg.drift.window_days}-day window after a {cfg.drift.baseline_days}-day "
                                     f"baseline; [drift] window_days and baseline_days)")
        if as_json:
            print_json(payload)
            return
        console.print(f"{len(windows)} windows compared ({cfg.drift.window_days} d vs the {cfg.drift.baseline_days} d "
                      f"before), {payload['windows_alerting']} alerting", highlight=False)
        table = Table("model", "metric", "change date", "rel. change", "PSI", "GPU·s/request Δ",
                      "USD/request Δ", "GPUs Δ", "USD/month Δ")
        for f in payload["findings"]:
            table.add_row(f["model"], f["metric"], f"{f['change_date']:%Y-%m-%d}", f"{f['relative_change']:+.1%}",
                          f"{f['psi']:.3f}", f"{f['gpu_seconds_per_request_change']:+.4f}",
                          f"{f['usd_per_request_change']:+.3g}", f"{f['gpus_change']:+.3g}",
                          f"{f['usd_per_month_change']:+,.2f}")
        if "not_tested" in payload:
            console.print(f"drift not tested: {escape(payload['not_tested'])}", highlight=False)
        else:
            console.print(table if payload["findings"] else "no drift found")
            for f in payload["findings"]:
                before = f["gpu_seconds_per_request_before"]
                change = f["gpu_seconds_per_request_change"]
                batch = "" if pd.isna(f["batch_before"]) else (
                    f", batch {f['batch_before']:.0f} → {f['batch_after']:.0f}")
                console.print(f"{f['model']} {f['metric']}: GPU·s/request {before:.4g} → {before + change:.4g} "
                              f"({change / before:+.1%}{batch}), {f['cost_source'].upper()}: {f['cost_model']}",
                              highlight=False, soft_wrap=True)
        if "usd_change" in cost_change:
            console.print(f"cost change {cost_change['month_before']} → {cost_change['month_after']} [USD]: " + ", ".join(
                f"{k} {v:+,.2f}" for k, v in cost_change["usd_change"].items()), highlight=False)
        else:
            console.print(f"cost change not computed: {escape(cost_change['skipped'])}", highlight=False)
