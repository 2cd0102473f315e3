"""Shared pytest fixtures."""

from __future__ import annotations

import os

# No network here: keep Prefect from phoning home, and give its temporary server time to start.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("MPLBACKEND", "Agg")
# Prefect in tests (measured, see /work/shared/TOOLCHAIN.md): the task-run recorder's SQLite writes
# stall flows by seconds, and no test reads task runs back.
os.environ.setdefault("PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED", "false")

import datetime as _dt  # noqa: E402 - after the environment, which Prefect reads at import
import json  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect server and database for the whole session (≈ 10 s once)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=None):  # None: PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS
        yield


#: The generated logs of the end-to-end plan: five weeks (the drift baseline and window) of three models,
#: deterministic.
PLAN_SAMPLE = {"start": _dt.date(2026, 9, 27), "days": 35, "requests_per_day": 2500, "seed": 8}


def _write_plan_config(root: Path, sources: list[str], **sections: dict) -> Path:
    """A capplan.toml under ``root``: database and report folder there, ``sources`` as one source.

    ``sections`` add or override keys, e.g. ``forecast={"horizon_months": 1}``.
    """
    tables = {"database": {"path": "plan.duckdb"}, "forecast": {"horizon_months": 2}, "report": {"out_dir": "out"}}
    for name, values in sections.items():
        tables[name] = {**tables.get(name, {}), **values}
    lines = []
    for name, values in tables.items():
        lines.append(f"[{name}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in values.items()]
    lines += ["[[ingest.sources]]", 'name = "generated"', f"paths = {json.dumps(sources)}"]
    path = root / "capplan.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="session")
def plan_sample() -> dict:
    """:data:`PLAN_SAMPLE`, for tests (conftest is not importable under ``--import-mode=importlib``)."""
    return dict(PLAN_SAMPLE)


@pytest.fixture(scope="session")
def write_plan_config():
    """``write_plan_config(root, sources, **sections) -> Path`` of a small capplan.toml."""
    return _write_plan_config


@pytest.fixture(scope="session")
def plan_logs(tmp_path_factory) -> list[str]:
    """Generated request logs for the end-to-end plan, one Parquet file per month."""
    from capplan.sample import SampleSpec, write_sample

    out = tmp_path_factory.mktemp("logs") / "requests.parquet"
    result = write_sample(SampleSpec(**PLAN_SAMPLE), out, split="month")
    return [str(p) for p in result.paths]


@pytest.fixture(scope="session")
def planned_report(prefect_harness, plan_logs, tmp_path_factory):
    """Run ``monthly_capacity_plan`` once on the generated logs; return (report folder, config)."""
    from capplan.config import load_config
    from capplan.flows.plan import monthly_capacity_plan

    cfg = load_config(_write_plan_config(tmp_path_factory.mktemp("plan"), plan_logs))
    folder = Path(monthly_capacity_plan(cfg))
    return folder, cfg


def _write_vllm_sweep(folder: Path, *, input_tokens: float = 800.0, output_tokens: float = 250.0,
                      rates: tuple[float, ...] = (1.0, 2.0, 3.0, 4.0, 5.0),
                      p99_ttft_ms: tuple[float, ...] = (500.0, 800.0, 900.0, 1200.0, 1500.0), tp: int = 1) -> list[Path]:
    """One ``vllm bench serve`` result file per rate (open loop, Poisson, no GPU named, ``tp`` GPUs per replica):
    achieved rate = offered rate, ``output_tokens`` per request, the given p99 TTFT, p99 TPOT 20 ms, no failures."""
    paths = []
    for i, (rate, ttft) in enumerate(zip(rates, p99_ttft_ms, strict=True)):
        done = round(200 * rate)
        path = folder / f"sweep-{input_tokens:g}-{i}.json"
        path.write_text(json.dumps({
            "model_id": "llama", "request_rate": rate, "burstiness": 1.0, "max_concurrency": None, "duration": 200.0,
            "completed": done, "failed": 0, "total_input_tokens": done * input_tokens,
            "total_output_tokens": done * output_tokens, "request_throughput": rate,
            "output_throughput": rate * output_tokens, "mean_ttft_ms": ttft / 2, "median_ttft_ms": ttft / 2,
            "p99_ttft_ms": ttft, "mean_tpot_ms": 15.0, "p99_tpot_ms": 20.0,
            "mean_e2el_ms": ttft / 2 + 15.0 * (output_tokens - 1), "tp": tp}))
        paths.append(path)
    return paths


@pytest.fixture(scope="session")
def write_vllm_sweep():
    """``write_vllm_sweep(folder, input_tokens=800, output_tokens=250, rates=..., p99_ttft_ms=..., tp=1)``: a
    synthetic load-test sweep, one vLLM result file per rate (see :func:`_write_vllm_sweep`)."""
    return _write_vllm_sweep


def _plan_row(month: str, pool: str, k: float) -> dict:
    """One plan_months row; ``k`` scales it so every pool and month differs."""
    return {"month": month, "pool": pool, "gpu": "H100-SXM-80GB", "tensor_parallel": 1,
            "requests_p10": 9e5 * k, "requests_p50": 1e6 * k, "requests_p90": 1.2e6 * k,
            "peak_qps_p10": 1.0 * k, "peak_qps_p50": 1.2 * k, "peak_qps_p90": 1.5 * k,
            "gpus_p10": int(4 * k), "gpus_p50": int(5 * k), "gpus_p90": int(7 * k), "binding": "throughput",
            "reserved_gpus": 2, "gpu_hours_p50": 3600.0 * k, "cost_p10_usd": 6e3 * k, "cost_p50_usd": 7e3 * k,
            "cost_p90_usd": 9e3 * k, "on_demand_p50_usd": 5e3 * k, "reserved_p50_usd": 2e3 * k,
            "spot_p50_usd": 0.0, "throughput_source": "assumed"}


@pytest.fixture
def stored_plan_row():
    """``stored_plan_row(month, pool, k)``: one ``plan_months`` row (a stored plan's month of a pool), scaled by ``k``."""
    return _plan_row
