"""``capplan slo``: error budget left and every burn-rate alert that would have fired, per SLO."""

from __future__ import annotations

from datetime import datetime
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


SHOWN_EPISODES = 15  # the terminal table shows the latest episodes only


def _parse_as_of(as_of: str | None) -> datetime | None:
    if as_of is None:
        return None
    import pandas as pd

    try:
        ts = pd.Timestamp(as_of)
    except ValueError:
        fail(f"--as-of {as_of!r} is not an ISO date or timestamp (e.g. 2026-03-01 or 2026-03-01T12:00)")
    return (ts.tz_convert("UTC").tz_localize(None) if ts.tzinfo else ts).to_pydatetime()


def register(app: typer.Typer) -> None:
    """Add the ``slo`` command to ``app``."""

    @app.command("slo")
    def slo(
        config: Path | None = CONFIG_OPTION,
        db: Path | None = DB_OPTION,
        name: str | None = typer.Option(None, "--name", help="Only the SLO with this name (default: all)."),
        as_of: str | None = typer.Option(
            None, "--as-of", help="End of the budget window, UTC (default: the minute after the last request)."),
        as_json: bool = JSON_OPTION,
    ) -> None:
        """Error budget consumed and remaining, and the multi-window burn-rate alert episodes."""
        from rich.table import Table

        from capplan.ingest.coverage import defaulted_columns
        from capplan.slo.measurable import unmeasurable_reason
        from capplan.slo.status import alert_episodes, slo_status

        cfg = load(config)
        slos = [s for s in cfg.slos if name is None or s.name == name]
        if not slos:
            fail(f"no SLO named {name!r}; configured: {[s.name for s in cfg.slos]}")
        end = _parse_as_of(as_of)
        con = open_requests_db(cfg, db)
        results, unknown = [], []
        try:
            defaulted = defaulted_columns(con)
            for s in slos:
                reason = unmeasurable_reason(s, defaulted)
                if reason:  # an SLI over defaulted columns is unknown, not 100 %
                    unknown.append({"name": s.name, "measurable": False, "reason": reason})
                    continue
                status = slo_status(con, s, end)
                episodes = alert_episodes(con, s, end=status.as_of)
                results.append({**status.to_record(), "episodes": episodes.drop(columns="slo").to_dict("records")})
        except ValueError as exc:
            fail(str(exc))
        finally:
            con.close()
        if as_json:
            print_json({"slos": results, "not_measurable": unknown})
            return
        for u in unknown:
            console.print(f"[bold]{u['name']}[/]: not measurable from these logs. {u['reason']}.", highlight=False)
        for r in results:
            console.print(
                f"[bold]{r['name']}[/] ({r['kind']}-based, {r['target']:.3%} over {r['window_days']} d to "
                f"{r['as_of']:%Y-%m-%d %H:%M} UTC): SLI {r['sli']:.4%}, budget consumed "
                f"{r['budget_consumed_fraction']:.1%}, remaining {r['budget_remaining_fraction']:.1%} "
                f"(budget = {r['error_budget_minutes']:.1f} min of full outage)", highlight=False)
            for note in r["notes"]:  # metrics hours: their resolution, an interpolated TTFT threshold
                console.print(f"  note: {note}", highlight=False)
            episodes = r["episodes"]
            counts = {sev: sum(e["severity"] == sev for e in episodes) for sev in ("page", "ticket")}
            console.print(f"alert episodes over the history: {counts['page']} pages, {counts['ticket']} tickets"
                          + (f"; the last {SHOWN_EPISODES} (--json lists all):" if len(episodes) > SHOWN_EPISODES
                             else ""), highlight=False)
            table = Table("severity", "start (UTC)", "end (UTC)", "min", "burn rate [x]", "budget spent", "rules")
            for e in episodes[-SHOWN_EPISODES:]:
                table.add_row(e["severity"], f"{e['start']:%Y-%m-%d %H:%M}", f"{e['end']:%Y-%m-%d %H:%M}",
                              str(e["duration_min"]), f"{e['burn_rate']:.1f}", f"{e['budget_spent_fraction']:.1%}",
                              e["rules"])
            if episodes:
                console.print(table)
