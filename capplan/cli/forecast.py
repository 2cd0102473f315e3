"""``capplan forecast``: backtested forecasts of the traffic profile, with the model each one chose."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from capplan.cli._common import CONFIG_OPTION, DB_OPTION, JSON_OPTION, console, fail, load, open_requests_db, print_json

#: What is forecast: name -> (profile frame, column, unit).
TARGETS: dict[str, tuple[str, str, str]] = {
    "requests_per_day": ("daily", "requests", "requests/day"),
    "peak_hour_qps": ("daily", "peak_hour_qps", "requests/s"),
    "input_tokens_mean": ("tokens", "input_tokens_mean", "tokens/request"),
    "output_tokens_mean": ("tokens", "output_tokens_mean", "tokens/request"),
    "hourly_avg_qps": ("hourly", "avg_qps", "requests/s"),
}


def register(app: typer.Typer) -> None:
    """Add the ``forecast`` command to ``app``."""

    @app.command("forecast")
    def forecast_command(
        config: Path | None = CONFIG_OPTION,
        db: Path | None = DB_OPTION,
        horizon_days: int = typer.Option(30, "--horizon-days", min=1, max=731, help="Days ahead to forecast."),
        model: str = typer.Option("__all__", "--model", help="Served model to forecast, or '__all__'."),
        as_json: bool = JSON_OPTION,
    ) -> None:
        """Forecast daily requests, peak-hour QPS, tokens per request and hourly QPS, with intervals."""
        import warnings

        from capplan.forecasting import fit
        from capplan.forecasting.history import limit_horizon

        cfg = load(config)
        con = open_requests_db(cfg, db)
        try:
            series = _profile_series(con, model, cfg.profile.empty_hours)
        except ValueError as exc:
            fail(str(exc))
        finally:
            con.close()
        results: dict[str, Any] = {}
        refused: dict[str, str] = {}
        history_h = int(series["hourly_avg_qps"].notna().sum())
        for name, y in series.items():
            horizon = horizon_days * 24 if TARGETS[name][0] == "hourly" else horizon_days
            reason = _too_short(name, y, history_h)
            if reason and TARGETS[name][0] == "tokens" and not y.notna().any() and history_h >= 3:
                # traffic without a single token count (a rate series, capplan ingest-rates): unknown, not zero
                reason = (f"{name}: no token counts in this database (a rate series has none): unknown; "
                          "the plan takes token lengths from config")
            if reason:
                refused[name] = reason
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # notes are reported in the output instead
                    result = fit(y, horizon, levels=cfg.forecast.levels)
            except ValueError as exc:
                fail(f"{name}: {exc}")
            hourly = TARGETS[name][0] == "hourly"
            # no growth extrapolated past the history: later periods repeat the last supported week
            result.frame, note = limit_horizon(result.frame, int(y.notna().sum()), 168 if hourly else 7,
                                               "hour" if hourly else "day")
            if note:
                result.info["warnings"] = [*result.info["warnings"], f"{name}: {note}"]
            results[name] = _summary(name, y, result)
        if not results:
            fail("nothing to forecast:\n  " + "\n  ".join(refused.values()))
        if as_json:
            print_json(results | ({"not_forecast": refused} if refused else {}))
        else:
            for reason in refused.values():
                console.print(f"[yellow]not forecast:[/] {reason}", highlight=False)
            _print_tables(results, cfg.forecast.levels)


def _too_short(name: str, y, history_h: int) -> str | None:
    """Why ``y`` is too short to forecast (which series, how much exists, how much is needed), or ``None``."""
    from capplan.forecasting.prepare import MIN_OBSERVATIONS

    observed = int(y.notna().sum())
    if observed >= MIN_OBSERVATIONS:
        return None
    step = "hour" if TARGETS[name][0] == "hourly" else "whole UTC day"
    return (f"{name} ({TARGETS[name][0]} {TARGETS[name][1]}): {observed} observed {step}(s), the forecaster needs "
            f"at least {MIN_OBSERVATIONS}; the database holds {history_h} h of traffic"
            + ("" if step == "hour" else " (daily targets count only complete UTC days without a logging gap; "
                                         "the first and last partial days are left out)"))


def _profile_series(con, model: str, empty_hours: str) -> dict:
    """One regular series per target, gap periods as NaN, partial first/last days dropped."""
    import pandas as pd

    from capplan.profile import daily_traffic, hourly_traffic, token_distribution

    daily = daily_traffic(con, model=model, empty_hours=empty_hours)
    if daily.empty:
        raise ValueError(f"no traffic for model {model!r} in the database")
    full_day = (daily["observed_hours"] + daily["gap_hours"]) >= 24
    # a day with a logging gap under-counts its requests: leave it to the forecaster to fill
    daily.loc[daily["gap_hours"] > 0, ["requests", "peak_hour_qps"]] = None
    daily = daily[full_day].set_index("period_start_local")
    tokens = token_distribution(con, "day", model=model).set_index("period_start_utc")
    tokens = tokens.loc[tokens.index.isin(daily.index)]
    hourly = hourly_traffic(con, model=model, empty_hours=empty_hours).set_index("hour_utc")
    frames = {"daily": daily, "tokens": tokens, "hourly": hourly}
    out = {}
    for name, (frame, column, _unit) in TARGETS.items():
        freq = "h" if frame == "hourly" else "D"
        values = frames[frame][column].astype("float64")
        out[name] = values.asfreq(freq) if len(values) else pd.Series(dtype=float)
    return out


def _summary(name: str, y, result) -> dict[str, Any]:
    """What the command reports for one target: the choice, its backtests and the forecast."""
    fc = result.frame
    scores = result.info["backtest"]["scores"]
    return {
        "unit": TARGETS[name][2],
        "history": {"start": y.index[0], "end": y.index[-1], "periods": len(y), "last_value": float(y.dropna().iloc[-1])},
        "model": result.info["model"],
        "chosen_backtest": scores[result.info["model"]],
        # every candidate's row, and the chosen one's too when it is a candidate alone rather than a mean
        "candidates_backtest": {k: v for k, v in scores.items()
                                if k != result.info["model"] or len(result.info["components"]) == 1},
        "interval_coverage_cv": result.info["coverage"],
        "interval_method": result.info["interval_method"],
        "transform": result.info["transform"],
        "season_lengths": result.info["season_lengths"],
        "unconfirmed_day": result.info["unconfirmed_day"],
        "notes": result.info["warnings"],
        "flattened_after_periods": fc.attrs.get("flattened_after_steps"),
        "forecast": [{"period": ts, **row} for ts, row in zip(fc.index, fc.to_dict("records"))],
    }


def _print_tables(results: dict[str, Any], levels) -> None:
    """A few lines per target: the choice, its backtest, the forecast's start and end, the candidates."""
    lv = 80 if 80 in levels else min(levels)
    for name, r in results.items():
        if "skipped" in r:
            console.print(f"[bold]{name}[/]: not forecast: {r['skipped']}", highlight=False)
            continue
        first, last = r["forecast"][0], r["forecast"][-1]
        cov = r["interval_coverage_cv"].get(str(lv))
        console.print(f"[bold]{name}[/] \\[{r['unit']}]: last observed {r['history']['last_value']:.4g} "
                      f"({r['history']['end']:%Y-%m-%d %H:%M})", highlight=False)
        day = r.get("unconfirmed_day")
        tried = "" if not day else (f"; the day ({day['steps']} steps) tried though the test did not confirm it: "
                                    f"{'used' if day['used'] else 'not used'}")
        console.print(f"  model     {r['model']} (transform {r['transform']}, seasons {r['season_lengths']}{tried})",
                      highlight=False)
        console.print(f"  backtest  MASE {r['chosen_backtest']['mase']:.3f}, sMAPE {r['chosen_backtest']['smape']:.2f} %, "
                      f"{lv} % interval coverage (cross-validated) {'-' if cov is None else f'{cov:.2f}'}",
                      highlight=False)
        for label, row in (("first", first), ("last", last)):
            console.print(f"  {label:9} {row['period']:%Y-%m-%d %H:%M}  {row['mean']:.4g}  "
                          f"[{row[f'lo_{lv}']:.4g}, {row[f'hi_{lv}']:.4g}] ({lv} %)", highlight=False)
        ranked = sorted(r["candidates_backtest"].items(), key=lambda kv: kv[1]["mase"])
        console.print("  candidates (MASE) " + ", ".join(f"{c} {s['mase']:.3f}" for c, s in ranked), highlight=False)
        for note in r["notes"]:
            console.print(f"  [yellow]note:[/] {note}", highlight=False)
