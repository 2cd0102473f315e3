"""``capplan profile``: summarise the traffic in the database and optionally write the profile frames.

It reads only, on a read-only connection; ``--refresh`` (or ``--rebuild``, from every raw row) opens
the database writable and brings the roll-ups up to date first.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import typer

from capplan.cli._common import CONFIG_OPTION, DB_OPTION, JSON_OPTION, db_path, fail, load, print_json

_FORMATS = ("csv", "parquet")


def _fmt(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}g}" if abs(value) < 1000 else f"{value:,.0f}"


def _print_summary(s: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    out = Console(width=max(Console().width, 120))  # piped output would wrap at 80 columns
    out.print(f"[bold]{s['scope']}[/]  {s['span_start']} → {s['span_end']} UTC  "
              f"({s['hours']} h, {s['gap_hours']} gap h)")
    out.print(f"requests {_fmt(s['total_requests'])}   avg {_fmt(s['avg_qps'])} req/s   "
              f"peak hour {_fmt(s['peak_hour_qps'])} req/s   peak second {_fmt(s['peak_second_qps'])} req/s   "
              f"peak/avg {_fmt(s['peak_to_avg'])}")
    table = Table(title="tokens per request \\[tokens]: mean / p50 / p90 / p99", title_justify="left")
    for name in ("model", "requests", "input", "output"):
        table.add_column(name, justify="left" if name == "model" else "right")
    for model, st in s["models"].items():
        cells = [" / ".join(_fmt(st[m][k]) for k in ("mean", "p50", "p90", "p99"))
                 for m in ("input_tokens", "output_tokens")]
        table.add_row(model, _fmt(st["requests"]), *cells)
    out.print(table)
    sli = s["sli"]
    unknown = {c for c, d in s.get("defaulted_columns", {}).items() if d["rows_defaulted"] >= d["rows_loaded"]}
    for column, d in s.get("defaulted_columns", {}).items():
        out.print(f"[yellow]not logged:[/] {column} in {d['rows_defaulted']:,} of {d['rows_loaded']:,} loaded rows "
                  f"(unknown: {d['unknown']})", highlight=False)
    if "status" in unknown:
        out.print("SLI: not measurable from these logs (status was not logged; every request was given 200)")
        return
    if sli.get("not_measurable"):
        out.print(f"SLI: {sli['not_measurable']}", highlight=False)
    out.print(f"SLI (TTFT ≤ {sli['ttft_threshold_ms']:g} ms): valid {_fmt(sli['valid_events'])}  "
              f"good {_fmt(sli['good_events'])}  good fraction {_fmt(sli['good_fraction'], 5)}  "
              f"success rate {_fmt(sli['success_rate'], 5)}  TTFT p50/p95/p99 "
              f"{_fmt(sli['ttft_p50_ms'])}/{_fmt(sli['ttft_p95_ms'])}/{_fmt(sli['ttft_p99_ms'])} ms")


def _unknown_is_not_perfect(sli: dict, defaulted: dict[str, dict]) -> dict:
    """``sli`` with the figures that rest only on defaulted columns set to None, and ``not_measurable`` saying why.

    No row logged ``status``: every request was given 200, so the success rate, the valid and good
    events and the good fraction would read 100 %. No row logged ``ttft_ms``: the good fraction
    (2xx within the TTFT threshold) is unknown.
    """
    unknown = [c for c in ("status", "ttft_ms") if c in defaulted
               and defaulted[c]["rows_defaulted"] >= defaulted[c]["rows_loaded"]]
    if not unknown:
        return sli
    gone = ({"valid_events", "good_events", "success_rate", "good_fraction"} if "status" in unknown
            else {"good_events", "good_fraction"})
    reason = "; ".join(f"{c} was not logged in any loaded row" + (" (every request was given status 200)"
                                                                 if c == "status" else "") for c in unknown)
    return {k: (None if k in gone else v) for k, v in sli.items()} | {
        "not_measurable": f"{', '.join(sorted(gone))}: not measurable from these logs: {reason}"}


def _defaulted(con) -> dict[str, dict]:
    """The ingest ledger's defaulted columns (:func:`capplan.ingest.coverage.defaulted_columns`) for the summary."""
    from capplan.ingest.coverage import defaulted_columns

    return {c: {"rows_defaulted": d.rows_defaulted, "rows_loaded": d.rows_loaded, "unknown": d.leaves_unknown}
            for c, d in defaulted_columns(con).items()}


def _write_frames(con, out: Path, fmt: str, model: str | None, since: datetime | None, cfg) -> list[Path]:
    """Write every profile frame to ``out/<name>.<fmt>``; returns the paths written."""
    from capplan import profile

    p = cfg.profile
    frames = {
        "hourly_traffic": profile.hourly_traffic(con, model, since, empty_hours=p.empty_hours),
        "daily_traffic": profile.daily_traffic(con, model, since, empty_hours=p.empty_hours),
        "weekly_traffic": profile.weekly_traffic(con, model, since, empty_hours=p.empty_hours),
        "typical_week": profile.typical_week(con, model, since),
        "token_distribution_day": profile.token_distribution(con, "day", model, since),
        "hourly_sli": profile.hourly_sli(con, p.ttft_threshold_ms, model, since),
    }
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, frame in frames.items():
        path = out / f"{name}.{fmt}"
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
        paths.append(path)
    return paths


def profile(
    config: Path | None = CONFIG_OPTION,
    db: Path | None = DB_OPTION,
    model: str | None = typer.Option(None, "--model", help="One model (default: all models and '__all__')."),
    since: datetime | None = typer.Option(None, "--since", help="First UTC date/time to include, e.g. 2026-01-01."),
    out: Path | None = typer.Option(None, "--out", help="Also write the profile frames into this folder."),
    fmt: str = typer.Option("csv", "--format", help="Format of the frames written with --out: csv or parquet."),
    refresh: bool = typer.Option(False, "--refresh", help="Bring the roll-ups up to date with the ingested files first."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Rebuild the roll-ups from every raw row first."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Summarise the traffic: span, requests, average and peak QPS, token percentiles per model, SLI."""
    import duckdb

    from capplan.db import DatabaseLockedError, connect
    from capplan.profile.freshness import ProfileError
    from capplan.profile.summary import profile_summary  # no pandas: only --out's frames need it

    cfg = load(config)
    if fmt not in _FORMATS:
        fail(f"--format must be one of {list(_FORMATS)}, got {fmt!r}", code=2)
    path = db_path(cfg, db)
    if not path.is_file():
        fail(f"database {path} does not exist: run `capplan ingest` first or point --db at one")
    writes = refresh or rebuild
    try:
        con = connect(path, read_only=not writes)
    except DatabaseLockedError as exc:
        fail(str(exc), kind="database_locked")
    try:
        if writes:
            from capplan.profile.refresh import refresh_rollups

            refresh_rollups(con, full=rebuild)
        summary = profile_summary(con, model, since, ttft_threshold_ms=cfg.profile.ttft_threshold_ms,
                                        empty_hours=cfg.profile.empty_hours)
        if model is not None and summary["total_requests"] == 0:
            fail(f"no requests for model {model!r} in {path}")
        written = _write_frames(con, out, fmt, model, since, cfg) if out is not None else []
        summary["defaulted_columns"] = _defaulted(con)
        summary["sli"] = _unknown_is_not_perfect(summary["sli"], summary["defaulted_columns"])
    except (ProfileError, ValueError, duckdb.Error) as exc:
        fail(str(exc).splitlines()[0])
    finally:
        con.close()
    if as_json:
        print_json(summary | {"written": [str(p) for p in written]})
    else:
        _print_summary(summary)
        for p in written:
            typer.echo(f"wrote {p}")


def register(app: typer.Typer) -> None:
    """Add ``capplan profile`` to the app."""
    app.command("profile")(profile)
