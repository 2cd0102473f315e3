"""``capplan loadtest import|show|export``: load tests in and out (see docs/loadtests.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from capplan.cli._common import CONFIG_OPTION, DB_OPTION, JSON_OPTION, console, db_path, fail, load, print_error, print_json

loadtest_app = typer.Typer(name="loadtest", help="Import load-test results, show capacity at the SLO, export the next "
                                                 "load test from the logs.", no_args_is_help=True)

TTFT_OPTION = typer.Option(None, "--ttft-ms-max", help="TTFT target at --percentile (default: the config's TTFT SLO "
                                                       "threshold, else [profile].ttft_threshold_ms). [ms]")
TPOT_OPTION = typer.Option(None, "--tpot-ms-max", help="TPOT target at --percentile (default: none). [ms]")
PERCENTILE_OPTION = typer.Option(99, "--percentile", help="Percentile the latency targets apply to: 50, 90, 95 or 99.")
ERROR_RATE_OPTION = typer.Option(0.01, "--max-error-rate", min=0, max=1, help="Highest failed share of requests. "
                                                                              "[fraction]")


def _targets(cfg, ttft_ms_max: float | None, tpot_ms_max: float | None, percentile: int, max_error_rate: float):
    """The SLO targets: flags first, else the config's TTFT threshold (first SLO with one, else the profile's)."""
    from capplan.loadtest.capacity import SloTargets

    if ttft_ms_max is None:
        ttft_ms_max = next((s.ttft_threshold_ms for s in cfg.slos if s.ttft_threshold_ms is not None),
                           cfg.profile.ttft_threshold_ms)
    try:
        return SloTargets(ttft_ms_max, tpot_ms_max, percentile, max_error_rate)
    except ValueError as exc:
        fail(str(exc), code=2)


def _pool_targets(cfg, pool_name: str, targets, ttft_flag: float | None, tpot_flag: float | None):
    """A sweep's targets: the flags where given, else those of the ``[[pools]]`` entry the runs were filed under
    (:func:`capplan.plan.pools.pool_latency_targets`, as the plan judges them), else ``targets``."""
    from dataclasses import replace

    from capplan.plan.pools import config_pools, pool_latency_targets

    pool = next((p for p in config_pools(cfg) if cfg.pools and p.name == pool_name), None)
    if pool is None:
        return targets
    ttft, tpot = pool_latency_targets(cfg, pool)
    return replace(targets, ttft_ms_max=ttft_flag if ttft_flag is not None else ttft,
                   tpot_ms_max=tpot_flag if tpot_flag is not None else tpot)


def _existing_db(cfg, db: Path | None, first: str) -> Path:
    """The database path, or exit saying which command creates it."""
    path = db_path(cfg, db)
    if not Path(path).is_file():
        fail(f"database {path} does not exist; run `{first}` first or pass --db")
    return path


def _connect(path: Path, read_only: bool = False):
    from capplan.db import DatabaseLockedError, connect

    try:
        return connect(path, read_only=read_only)
    except DatabaseLockedError as exc:
        fail(str(exc))


# --------------------------------------------------------------------------- import


def import_files(
    paths: list[Path] = typer.Argument(..., help="Result files of vLLM, SGLang, GuideLLM, AIPerf, GenAI-Perf or llmperf."),
    config: Path | None = CONFIG_OPTION,
    db: Path | None = DB_OPTION,
    pool: str | None = typer.Option(None, "--pool", help="Pool the runs measured (default: the config's pool that "
                                    "serves or runs each run's model id, else its only or first pool)."),
    gpus_per_replica: int | None = typer.Option(
        None, "--gpus-per-replica", min=1, help="GPUs per replica (default: the file's tensor parallel, else 1)."),
    replicas: int = typer.Option(1, "--replicas", min=1, help="Replicas behind the endpoint the tool loaded."),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU type of the replicas (a GPU catalogue key), for files "
                                                     "that name none (default: taken as the pool's GPU)."),
    tool: str = typer.Option("auto", "--tool", help="auto|vllm|sglang|guidellm|aiperf|genai-perf|llmperf."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Store each run of each file in the load_tests table (re-importing a file is a no-op)."""
    from capplan.loadtest.formats import TOOLS, LoadTestFormatError
    from capplan.loadtest.store import GpuMismatchError, import_file
    from capplan.plan.pools import pool_for_model_id

    if tool != "auto" and tool not in TOOLS:
        fail(f"--tool {tool!r}: expected auto or one of {', '.join(TOOLS)}", code=2)
    cfg = load(config)
    if gpu is not None:
        from capplan.sizing.catalogue import load_gpus

        known = {k.casefold(): k for k in load_gpus(cfg.sizing.gpu_catalogue)}
        if gpu.casefold() not in known:
            fail(f"--gpu {gpu!r} is not in the GPU catalogue {cfg.sizing.gpu_catalogue}; one of: "
                 f"{', '.join(sorted(known.values()))}", code=2)
        gpu = known[gpu.casefold()]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        fail(f"{missing[0]}: no such file", code=2)
    con = _connect(db_path(cfg, db))
    results, errors = [], []
    try:
        for path in paths:
            try:
                results.append(import_file(con, path, tool=tool, pool=pool, replicas=replicas,
                                           gpus_per_replica=gpus_per_replica,
                                           pool_of_model=lambda model_id: pool_for_model_id(cfg, model_id),
                                           gpu=gpu))
            except (LoadTestFormatError, GpuMismatchError) as exc:
                errors.append(str(exc))
    finally:
        con.close()
    if as_json:
        print_json({"files": [r.to_dict() for r in results], "errors": errors})
    else:
        for r in results:
            console.print(f"{r.path}: {r.status}" + (f", {r.runs} runs of {r.tool} for pool {r.pool}"
                                                     if r.status == "imported" else " (already imported)"),
                          highlight=False, soft_wrap=True)
    for message in errors:
        print_error(message)
    if errors:
        raise typer.Exit(1)


# --------------------------------------------------------------------------- show


def _production_mixes(con, cfg, pools_of_runs: list[str], model: str | None, days: int,
                      ) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Each run pool's production mix from the last ``days`` of the logs, and a note on what was not checked.

    ``{pool: {"models", "input_tokens_mean", "output_tokens_mean"}}``: the mix of the pool's log models taken
    together, the pool as the plan resolves it (:func:`capplan.plan.pools.resolve_pools`); with ``model``, that
    log model's mix for every pool. A pool the logs do not serve is left out (and named in the note).
    """
    from capplan.loadtest.logs import LogsError, model_names, production_profile, recent_window
    from capplan.plan.pools import PoolError, pool_traffic, read_model_traffic, resolve_pools
    from capplan.profile import ProfileError
    from capplan.profile.freshness import require_requests

    try:
        require_requests(con)
        log_models = model_names(con)
        by_model = read_model_traffic(con, cfg)
        if model is not None:
            chosen = dict.fromkeys(pools_of_runs, _logs_pool(cfg, log_models, None, model)[0])
        else:
            resolved = {p.name: p for p in resolve_pools(cfg, log_models)}
            chosen = {name: resolved[name] for name in pools_of_runs if name in resolved}
        mix_of = {}  # one read per distinct set of log models
        for pool in chosen.values():
            if pool.models not in mix_of:
                profile = production_profile(con, recent_window(con, pool.models, days, scope=pool.name),
                                             pool_traffic(by_model, pool)[0])
                mix_of[pool.models] = {"models": list(pool.models), "input_tokens_mean": profile.input_tokens_mean,
                                       "output_tokens_mean": profile.output_tokens_mean}
        mixes = {name: mix_of[pool.models] for name, pool in chosen.items()}
    except (ProfileError, PoolError) as exc:
        if model is not None:
            fail(str(exc))
        return {}, f"token-mix check skipped: {exc}"
    except LogsError as exc:
        fail(str(exc))
    unchecked = sorted(set(pools_of_runs) - set(mixes))
    note = (f"token-mix check skipped for {', '.join(unchecked)}: no pool of that name serves a model in the logs "
            "(pass --model, the logs' model)") if unchecked else None
    return mixes, note


def _fmt(value: Any) -> str:
    from capplan.cli.size import format_value

    return "-" if value is None else format_value(value)


def _print_show(payload: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    t = payload["targets"]
    p = t["percentile"]
    out = Console(width=max(Console().width, 160))
    runs = Table(title=f"load-test runs (p{p} latencies)", title_justify="left")
    for name in ("pool", "run", "tool", "arrival", "target req/s", "req/s", "in tok", "out tok", f"TTFT p{p} ms",
                 f"TPOT p{p} ms", "flags"):
        runs.add_column(name, justify="left" if name in ("pool", "run", "tool", "arrival", "flags") else "right")
    for r in payload["runs"]:
        runs.add_row(r["pool"], f"{Path(r['file_path']).name}#{r['run_index']}", r["tool"], r["arrival_process"],
                     _fmt(r["target_requests_per_s"]), _fmt(r["requests_per_s"]), _fmt(r["input_tokens_mean"]),
                     _fmt(r["output_tokens_mean"]), _fmt(r[f"ttft_p{p}_ms"]), _fmt(r[f"tpot_p{p}_ms"]),
                     ", ".join(f["name"] for f in r["flags"]) or "-")
    out.print(runs)
    for s in payload["sweeps"]:
        c = s["capacity"]
        setup = s["setup"]
        out.print(f"[bold]{setup['pool']}[/] {setup['tool']} {setup['model_id'] or ''} ({setup['replicas']} replicas x "
                  f"{setup['gpus_per_replica']} GPUs, {len(s['runs'])} runs): {c['kind']} "
                  f"{_fmt(s['requests_per_s_per_replica'])} req/s and {_fmt(s['output_tokens_per_s_per_replica'])} "
                  f"output tok/s per replica, {_fmt(s['requests_per_s_per_gpu'])} req/s per GPU; {c['note']}"
                  + (f"; flags: {', '.join(s['flags'])}" if s["flags"] else ""), highlight=False, soft_wrap=True)
    for r in payload["runs"]:
        for f in r["flags"]:
            out.print(f"  {Path(r['file_path']).name}#{r['run_index']}: {f['name']}: {f['message']}", highlight=False,
                      soft_wrap=True)
    if payload["note"]:
        out.print(payload["note"], highlight=False)


def show(
    config: Path | None = CONFIG_OPTION,
    db: Path | None = DB_OPTION,
    pool: str | None = typer.Option(None, "--pool", help="Only this pool's runs."),
    model: str | None = typer.Option(None, "--model", help="The logs' model whose production mix every run is "
                                                           "checked against (default: each run's pool's models)."),
    days: int | None = typer.Option(None, "--days", min=1, help="Days of logs for the production mix "
                                                                "(default [report].measured_window_days)."),
    ttft_ms_max: float | None = TTFT_OPTION,
    tpot_ms_max: float | None = TPOT_OPTION,
    percentile: int = PERCENTILE_OPTION,
    max_error_rate: float = ERROR_RATE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """List the stored runs, their sweeps, capacities at the SLO and hygiene flags."""
    from capplan.loadtest.capacity import group_sweeps, sweep_summary
    from capplan.loadtest.hygiene import run_flags
    from capplan.loadtest.store import read_stored_runs

    cfg = load(config)
    targets = _targets(cfg, ttft_ms_max, tpot_ms_max, percentile, max_error_rate)
    path = _existing_db(cfg, db, "capplan loadtest import")
    con = _connect(path, read_only=True)
    try:
        runs = read_stored_runs(con, pool)
        if not runs:
            fail(f"no load tests in {path}" + (f" for pool {pool!r}" if pool else "") + "; run `capplan loadtest import`")
        mixes, note = _production_mixes(con, cfg, sorted({r["pool"] for r in runs}), model,
                                        days or cfg.report.measured_window_days)
    finally:
        con.close()
    for r in runs:
        mix = mixes.get(r["pool"], {})
        r["flags"] = [f.to_dict() for f in run_flags(r, mix.get("input_tokens_mean"), mix.get("output_tokens_mean"))]
    first = next(iter(mixes.values()), {}) if model is not None else {}
    payload = {"targets": {"ttft_ms_max": targets.ttft_ms_max, "tpot_ms_max": targets.tpot_ms_max,
                           "percentile": targets.percentile, "max_error_rate": targets.max_error_rate},
               "production_mix": {"model": model, "input_tokens_mean": first.get("input_tokens_mean"),
                                  "output_tokens_mean": first.get("output_tokens_mean"), "pools": mixes},
               "runs": runs, "sweeps": [], "note": note}
    for group in group_sweeps(runs):
        pool_targets = _pool_targets(cfg, group[0]["pool"], targets, ttft_ms_max, tpot_ms_max)
        payload["sweeps"].append({**sweep_summary(group, pool_targets), "targets": {
            "ttft_ms_max": pool_targets.ttft_ms_max, "tpot_ms_max": pool_targets.tpot_ms_max,
            "percentile": pool_targets.percentile, "max_error_rate": pool_targets.max_error_rate}})
    if as_json:
        print_json(payload)
    else:
        _print_show(payload)


# --------------------------------------------------------------------------- export


def _logs_pool(cfg, log_models: list[str], pool_name: str | None, model: str | None):
    """The pool whose logs are read (exported, or the production mix), as the plan resolves it
    (:func:`capplan.plan.pools.resolve_pools`), and whether ``--model`` narrowed it to one of its models.
    Default: the pool of the busiest log model."""
    from dataclasses import replace

    from capplan.plan.pools import resolve_pools

    pools = resolve_pools(cfg, log_models)
    if model is not None and model not in log_models:
        fail(f"no requests of model {model!r} in the logs; models there: {log_models}")
    if pool_name is not None:
        pool = next((p for p in pools if p.name == pool_name), None)
        if pool is None:
            fail(f"no pool {pool_name!r} serves a model in the logs; pools: {', '.join(p.name for p in pools)}")
    else:
        wanted = model or log_models[0]
        pool = next(p for p in pools if wanted in p.models)
    if model is None:
        return pool, False
    if model not in pool.models:
        fail(f"model {model!r} is not served by pool {pool.name!r} (its models: {', '.join(pool.models)})")
    return replace(pool, models=(model,)), True


def export(
    out: Path = typer.Option(..., "--out", help="Folder for trace.jsonl, lengths.jsonl, lengths.json and PLAN.md."),
    pool: str | None = typer.Option(None, "--pool", help="The pool whose log models are exported (as `capplan plan` "
                                                      "maps them) and whose newest stored plan's P90 design peak the "
                                                      "sweep is built around (default: the busiest model's pool)."),
    model: str | None = typer.Option(None, "--model", help="Only this log model of the pool (default: every model "
                                                           "of the pool)."),
    days: int = typer.Option(7, "--days", min=1, help="Days of logs to export, ending with the newest hour."),
    rate: float | None = typer.Option(None, "--rate", min=0, help="Time-scale the trace to this arrival rate "
                                                                  "(default: production timing). [requests/s]"),
    replicas: int = typer.Option(1, "--replicas", min=1, help="Replicas the peak is spread over (sweep rates per replica)."),
    step_minutes: float = typer.Option(10.0, "--step-minutes", min=1, help="Length of each sweep step. [min]"),
    soak_minutes: float = typer.Option(60.0, "--soak-minutes", min=1, help="Length of the soak. [min]"),
    ttft_ms_max: float | None = TTFT_OPTION,
    tpot_ms_max: float | None = TPOT_OPTION,
    percentile: int = PERCENTILE_OPTION,
    max_error_rate: float = ERROR_RATE_OPTION,
    config: Path | None = CONFIG_OPTION,
    db: Path | None = DB_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Write a trace replaying a pool's logs, a lengths dataset and PLAN.md for the next load test."""
    from capplan.history.store import planned_peak
    from capplan.loadtest.export import ExportRequest, export_load_test
    from capplan.loadtest.logs import LogsError, model_names
    from capplan.plan.pools import PoolError, pool_traffic, read_model_traffic

    cfg = load(config)
    targets = _targets(cfg, ttft_ms_max, tpot_ms_max, percentile, max_error_rate)
    path = _existing_db(cfg, db, "capplan ingest")
    con = _connect(path, read_only=True)  # reads the logs' roll-ups, as `capplan ingest` left them
    try:
        log_models = model_names(con)
        if not log_models:
            fail(f"database {path} has no requests; run `capplan ingest` first")
        chosen, narrowed = _logs_pool(cfg, log_models, pool, model)
        hourly, _daily = pool_traffic(read_model_traffic(con, cfg), chosen)
        result = export_load_test(con, ExportRequest(
            pool=chosen.name, models=chosen.models, days=days, out_dir=out, targets=targets, rate_rps=rate,
            replicas=replicas, zones=cfg.sizing.zones, zones_lost=cfg.sizing.zones_lost, step_minutes=step_minutes,
            soak_minutes=soak_minutes, planned_peak=None if narrowed else planned_peak(con, chosen.name),
            unplanned_peak_reason=(f"--model {model} narrows pool {chosen.name}, whose stored plan covers all its "
                                   "models" if narrowed else None)), hourly)
    except (LogsError, PoolError, ValueError) as exc:
        fail(str(exc))
    finally:
        con.close()
    if as_json:
        print_json(result.to_dict())
    else:
        console.print(f"{result.requests:,} requests of pool {chosen.name} ({', '.join(chosen.models)}) -> {out} "
                      f"(trace at {result.trace_rate_rps:.4g} req/s; sweep "
                      f"{', '.join(f'{r:.3g}' for r in result.rates_rps)} req/s per replica)", highlight=False,
                      soft_wrap=True)


loadtest_app.command("import")(import_files)
loadtest_app.command("show")(show)
loadtest_app.command("export")(export)


def register(app: typer.Typer) -> None:
    """Add ``capplan loadtest`` to ``app``."""
    app.add_typer(loadtest_app, name="loadtest")
