"""A plain request-rate series (CSV or Parquet) -> the profile's hourly traffic roll-up.

Columns: ``ts_utc`` (start of each interval, UTC), ``requests`` per interval or ``qps`` (mean rate
[requests/s] over it), optional ``input_tokens`` / ``output_tokens`` (sums over the interval
[tokens]) and ``model``. The interval is the smallest spacing of one model's timestamps and must
divide an hour (an interval longer than an hour cannot be split into hours). ``requests = qps ×
interval_s`` (rounded). What a rate series cannot give — token distributions, latency, errors — stays
unknown: no histogram rows, zero TTFT/latency counts (the report takes them from config), and the
busiest second is the busiest interval's mean rate. A file with a bad row is refused as a whole,
naming the file, the row and the column (nothing is stored).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from capplan.metrics.client import MetricsError
from capplan.metrics.ingest import ALL, ensure_tables, store_hours
from capplan import sql

DEFAULT_MODEL = "default"


def read_rates(path: Path, mapping: dict[str, str] | None = None) -> pd.DataFrame:
    """The file's rows in canonical columns (``mapping``: canonical -> the file's column name)."""
    path = Path(path)
    if not path.is_file():
        raise MetricsError(f"{path}: no such file")
    frame = pd.read_parquet(path) if path.suffix.lower() in (".parquet", ".pq") else pd.read_csv(path)
    frame = frame.rename(columns={v: k for k, v in (mapping or {}).items()})
    if "ts_utc" not in frame:
        raise MetricsError(f"{path}: missing column 'ts_utc' (start of each interval, UTC); columns: {list(frame)}")
    if ("requests" in frame) == ("qps" in frame):
        raise MetricsError(f"{path}: expected exactly one of the columns 'requests' or 'qps'; columns: {list(frame)}")
    ts = pd.to_datetime(frame["ts_utc"], errors="coerce", utc=True)
    _refuse(path, frame, ts.isna(), "ts_utc", "an ISO 8601 time")
    frame["ts_utc"] = ts.dt.tz_localize(None)
    for col in ("requests", "qps", "input_tokens", "output_tokens"):
        if col in frame:
            values = pd.to_numeric(frame[col], errors="coerce")
            _refuse(path, frame, values.isna() | (values < 0), col, "a number >= 0")
            frame[col] = values.astype(float)
    frame["model"] = frame["model"].astype(str) if "model" in frame else DEFAULT_MODEL
    if (frame["model"] == ALL).any():
        raise MetricsError(f"{path}: model name {ALL!r} is reserved (all models together)")
    return frame


def _refuse(path: Path, frame: pd.DataFrame, bad: pd.Series, column: str, expected: str) -> None:
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise MetricsError(f"{path}: row {row + 2} (line, header = 1), column {column!r}: expected {expected}, "
                           f"got {frame[column].iloc[row]!r}; {int(bad.sum())} bad row(s), nothing stored")


def interval_s(frame: pd.DataFrame, path: Path) -> int:
    """The series' interval: the smallest spacing of one model's timestamps; it must divide 3600 s. [s]"""
    gaps = frame.sort_values("ts_utc").groupby("model")["ts_utc"].diff().dropna().dt.total_seconds()
    gaps = gaps[gaps > 0]
    step = int(gaps.min()) if len(gaps) else 3600
    if 3600 % step:
        raise MetricsError(f"{path}: the interval is {step} s; it must divide an hour (e.g. 60, 300, 600, 3600 s)")
    if frame.duplicated(["model", "ts_utc"]).any():
        raise MetricsError(f"{path}: duplicate (model, ts_utc) rows")
    return step


def hourly_from_rates(frame: pd.DataFrame, step_s: int) -> pd.DataFrame:
    """``fct_traffic_hourly`` rows (models and ``__all__``) of a rate series with interval ``step_s`` [s]."""
    f = frame.copy()
    f["requests"] = np.rint(f["qps"] * step_s) if "requests" not in f else np.rint(f["requests"])
    f["hour_utc"] = f["ts_utc"].dt.floor("h")
    for col in ("input_tokens", "output_tokens"):
        f[col] = np.rint(f[col]) if col in f else 0.0
    per = f.groupby(["hour_utc", "model"], as_index=False).agg(
        requests=("requests", "sum"), input_tokens_sum=("input_tokens", "sum"),
        output_tokens_sum=("output_tokens", "sum"), peak=("requests", "max"))
    by_ts = f.groupby(["hour_utc", "ts_utc"], as_index=False)["requests"].sum()
    total = per.groupby("hour_utc", as_index=False)[["requests", "input_tokens_sum", "output_tokens_sum"]].sum()
    total = total.merge(by_ts.groupby("hour_utc", as_index=False)["requests"].max().rename(columns={"requests": "peak"}))
    out = pd.concat([per, total.assign(model=ALL)], ignore_index=True)
    req = out["requests"].astype("int64")
    return pd.DataFrame({
        "hour_utc": out["hour_utc"], "model": out["model"], "requests": req, "errors": 0, "valid_events": req,
        "success_events": req, "input_tokens_sum": out["input_tokens_sum"].astype("int64"),
        "output_tokens_sum": out["output_tokens_sum"].astype("int64"), "ttft_ms_sum": 0.0, "ttft_count": 0,
        "latency_ms_sum": 0.0, "latency_count": 0,
        # busiest interval's mean rate, rounded up: not a measured busiest second
        "peak_second_requests": np.ceil(out["peak"] / step_s - 1e-9).astype("int64")})


def ingest_rates(con: duckdb.DuckDBPyConnection, path: Path, mapping: dict[str, str] | None = None) -> dict:
    """Store a rate file's hours (replacing what the same file stored before); one transaction."""
    path = Path(path)
    frame = read_rates(path, mapping)
    step = interval_s(frame, path)
    traffic = hourly_from_rates(frame, step)
    hours = sorted(traffic["hour_utc"].unique())
    ensure_tables(con)
    source = f"rates:{path.name}"
    con.execute(sql.load("fct_metrics_ledger_delete_source"), {"source": source})
    empty = {"histogram": pd.DataFrame(columns=["hour_utc", "model", "metric", "bin", "count"]),
             "concurrency": pd.DataFrame(columns=["hour_utc", "model", "concurrency_peak"])}
    store_hours(con, source, [pd.Timestamp(h).to_pydatetime() for h in hours], {"traffic": traffic, **empty},
                step_s=step)
    models = sorted(set(frame["model"]))
    return {"file": str(path), "rows": len(frame), "interval_s": step, "hours": len(hours), "models": models,
            "requests": int(traffic.loc[traffic["model"] == ALL, "requests"].sum())}
