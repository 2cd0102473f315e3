"""The plan-history tables: every plan run's decisions per month and pool (``sql/ddl_plan_history.sql``).

A plan run (CLI, flow or schedule) calls :func:`record_plan` once, after its report is
written: one ``plan_runs`` row and one ``plan_months`` row per planned month and pool,
plus a ``__fleet__`` row per month for the fleet total, in one transaction, so a run
killed half-way stores nothing. Runs are never overwritten: a re-run for the same month
adds a run, and :func:`latest_plans` takes, for each month, the newest run made before
that month began (a run made during the month already saw part of it).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb
import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from capplan import sql

#: The ``pool`` value of a month's fleet-total row.
FLEET = "__fleet__"


class PlanMonths(pa.DataFrameModel):
    """One plan run's decisions: a row per month × pool (``FLEET`` for the total)."""

    month: Series[str] = pa.Field(str_matches=r"^\d{4}-(0[1-9]|1[0-2])$")
    pool: Series[str]
    gpu: Series[str] = pa.Field(nullable=True)
    tensor_parallel: Series[float] = pa.Field(ge=1, nullable=True)
    requests_p10: Series[float] = pa.Field(ge=0, nullable=True)
    requests_p50: Series[float] = pa.Field(ge=0, nullable=True)
    requests_p90: Series[float] = pa.Field(ge=0, nullable=True)
    peak_qps_p10: Series[float] = pa.Field(ge=0, nullable=True)
    peak_qps_p50: Series[float] = pa.Field(ge=0, nullable=True)
    peak_qps_p90: Series[float] = pa.Field(ge=0, nullable=True)
    gpus_p10: Series[int] = pa.Field(ge=0)
    gpus_p50: Series[int] = pa.Field(ge=0)
    gpus_p90: Series[int] = pa.Field(ge=0)
    binding: Series[str] = pa.Field(nullable=True)
    reserved_gpus: Series[int] = pa.Field(ge=0, nullable=True)
    gpu_hours_p50: Series[float] = pa.Field(ge=0, nullable=True)
    cost_p10_usd: Series[float] = pa.Field(ge=0, nullable=True)
    cost_p50_usd: Series[float] = pa.Field(ge=0, nullable=True)
    cost_p90_usd: Series[float] = pa.Field(ge=0, nullable=True)
    on_demand_p50_usd: Series[float] = pa.Field(ge=0, nullable=True)
    reserved_p50_usd: Series[float] = pa.Field(ge=0, nullable=True)
    spot_p50_usd: Series[float] = pa.Field(ge=0, nullable=True)
    throughput_source: Series[str] = pa.Field(nullable=True,
                                              isin=["measured", "calibrated", "modelled", "assumed"])

    class Config:
        coerce = True
        strict = "filter"


@dataclass(frozen=True)
class PlanRun:
    """One plan run: when, for which months, with which config, code and data."""

    run_id: str
    created_utc: datetime
    first_month: str
    months: int
    config_sha256: str
    code_version: str
    data_from_utc: datetime | None
    data_to_utc: datetime | None


def config_sha256(config: dict[str, Any]) -> str:
    """SHA-256 of a resolved config as JSON with sorted keys (paths and dates as text)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def code_version() -> str:
    """capplan's installed version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("capplan")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "unknown"


def new_run(first_month: str, months: int, config: dict[str, Any], *, data_from_utc: datetime | None,
            data_to_utc: datetime | None, created_utc: datetime | None = None) -> PlanRun:
    """A :class:`PlanRun` with a fresh id, stamped now (UTC) unless ``created_utc`` is given."""
    created = created_utc or datetime.now(UTC)
    return PlanRun(uuid.uuid4().hex, created.replace(tzinfo=None) if created.tzinfo else created, first_month,
                   months, config_sha256(config), code_version(), data_from_utc, data_to_utc)


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create ``plan_runs`` and ``plan_months`` if they do not exist."""
    con.execute(sql.load("ddl_plan_history"))


def has_tables(con: duckdb.DuckDBPyConnection) -> bool:
    """True when the database holds the plan-history tables (a reader never creates them)."""
    return bool(con.execute(sql.load("int_plan_history_has_tables")).fetchone()[0])


def record_plan(con: duckdb.DuckDBPyConnection, run: PlanRun, months: pd.DataFrame) -> None:
    """Store ``run`` and its :class:`PlanMonths` rows in one transaction (all or nothing).

    Raises
    ------
    pandera.errors.SchemaError
        If ``months`` is not a valid :class:`PlanMonths` frame.
    ValueError
        If ``months`` is empty, lists a month and pool twice, or names a month outside the run's months.
    """
    frame = PlanMonths.validate(months).reset_index(drop=True)
    twice = frame[frame.duplicated(["month", "pool"], keep=False)]
    if not twice.empty:
        pairs = sorted(set(zip(twice["month"], twice["pool"])))
        raise ValueError(f"plan run {run.run_id} lists a month and pool more than once: {pairs}")
    if frame.empty:
        raise ValueError(f"plan run {run.run_id} has no months to record")
    planned = set(pd.period_range(run.first_month, periods=run.months, freq="M").astype(str))
    outside = sorted(set(frame["month"]) - planned)
    if outside:
        raise ValueError(f"plan run {run.run_id} covers {sorted(planned)}, not {outside}")
    frame.insert(0, "run_id", run.run_id)
    ensure_tables(con)
    con.begin()
    try:
        con.execute(sql.load("fct_plan_history_insert_run"), _run_params(run))
        con.register("plan_months_frame", frame)
        try:
            con.execute(sql.load("fct_plan_history_insert_months"))
        finally:
            con.unregister("plan_months_frame")
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _run_params(run: PlanRun) -> dict[str, Any]:
    params = asdict(run)
    for key in ("created_utc", "data_from_utc", "data_to_utc"):
        value = params[key]
        if value is not None:
            params[key] = pd.Timestamp(value).tz_localize(None) if pd.Timestamp(value).tzinfo else pd.Timestamp(value)
    return params


def latest_plans(con: duckdb.DuckDBPyConnection, months: list[str]) -> pd.DataFrame:
    """For each of ``months`` and each pool, the row of the newest run made before the month began.

    Returns the :class:`PlanMonths` columns plus ``run_id``, ``created_utc`` and ``first_month``;
    empty when no earlier plan covered those months (or the database has no plan history yet).
    """
    if not has_tables(con) or not months:
        return pd.DataFrame(columns=["run_id", *PlanMonths.to_schema().columns, "created_utc", "first_month"])
    return con.execute(sql.load("rpt_plan_history_latest"), {"months": list(months)}).df()


def planned_peak(con: duckdb.DuckDBPyConnection, pool: str) -> tuple[float, str] | None:
    """The highest P90 design peak [requests/s] the newest stored plan of ``pool`` sized for, and a phrase
    naming that plan; ``None`` when no stored plan covers the pool (``capplan loadtest export``)."""
    if not has_tables(con):
        return None
    row = con.execute(sql.load("rpt_plan_history_pool_peak"), {"pool": pool}).fetchone()
    if row is None:
        return None
    run_id, peak, first, last = row
    return float(peak), f"the P90 design peak of plan run {run_id} for {first}–{last}"


def plan_runs(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every stored plan run, newest first (empty without plan history)."""
    if not has_tables(con):
        return pd.DataFrame(columns=[f.name for f in PlanRun.__dataclass_fields__.values()])
    return con.execute(sql.load("rpt_plan_history_runs")).df()
