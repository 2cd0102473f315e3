"""``capplan size``: a what-if fleet calculator, no logs needed (see docs/sizing.md).

The per-GPU throughput is the flat ``--gpu-output-tokens-per-s`` when given (assumed; the golden case),
else the performance model's at ``--input-tokens``/``--output-tokens`` on ``--model``/``--gpu``/``--tp``/
``--precision`` (modelled; the catalogue's figure when the model cannot run); ``--json`` says which in
``throughput_source``.
"""

from __future__ import annotations

from pathlib import Path

import typer

from capplan.cli._common import CONFIG_OPTION, JSON_OPTION, fail, load, print_json

_DTYPES = "fp32, fp16, bf16, fp8, int8 or int4"


def format_value(value: object) -> str:
    """A term's value for a table: thousands separators, about three significant figures."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _print_table(rows: list[dict], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name, justify in (("term", "left"), ("value", "right"), ("unit", "left"), ("source", "left"), ("note", "left")):
        table.add_column(name, justify=justify, overflow="fold")
    for r in rows:
        table.add_row(r["term"], format_value(r["value"]), r["unit"], r["source"], r["note"])
    # Wide enough that notes stay on one line when the output is piped (rich falls back to 80 columns).
    Console(width=max(Console().width, 150)).print(table)


def _demand(requests_per_day: float | None, peak_to_avg: float | None, peak_qps: float | None) -> tuple[float | None, float]:
    """(average QPS or None, peak QPS) from exactly one of --requests-per-day and --peak-qps."""
    from capplan.sizing import demand

    if (requests_per_day is None) == (peak_qps is None):
        raise ValueError("give exactly one of --requests-per-day (with --peak-to-avg) and --peak-qps")
    if peak_qps is not None:
        return None, peak_qps
    if peak_to_avg is None:
        raise ValueError("--requests-per-day needs --peak-to-avg (peak over average request rate)")
    avg = float(demand.average_qps(requests_per_day))
    return avg, float(demand.peak_qps(avg, peak_to_avg))


def _storage_rows(requests_per_day: float, tokens_per_request: float, bytes_per_token: float,
                  retention_days: float) -> list[dict]:
    from capplan.sizing import storage

    per_day = float(storage.request_log_bytes_per_day(requests_per_day, tokens_per_request, bytes_per_token))
    kept = float(storage.retained_bytes(per_day, retention_days))
    return [
        {"term": "request-log bytes per day", "value": per_day / 1e9, "unit": "GB/day", "source": "derived",
         "note": f"{tokens_per_request:g} tokens × {bytes_per_token:g} B/token (ASSUMED) per request"},
        {"term": "request logs retained", "value": kept / 1e9, "unit": "GB", "source": "derived",
         "note": f"{retention_days:g} days of retention"},
    ]


def size(
    requests_per_day: float | None = typer.Option(None, "--requests-per-day", min=0, help="Requests per day. [requests/day]"),
    peak_to_avg: float | None = typer.Option(None, "--peak-to-avg", min=1, help="Peak over average request rate. [ratio]"),
    peak_qps: float | None = typer.Option(None, "--peak-qps", min=0, help="Peak rate, instead of --requests-per-day. [requests/s]"),
    latency_s: float = typer.Option(..., "--latency-s", min=0, help="Mean end-to-end time per request. [s]"),
    output_tokens: float = typer.Option(..., "--output-tokens", min=0, help="Mean output tokens per request. [tokens]"),
    input_tokens: float = typer.Option(0.0, "--input-tokens", min=0, help="Mean prompt tokens per request; adds prefill. [tokens]"),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU catalogue key (default [sizing].gpu), e.g. H100-SXM-80GB."),
    model: str | None = typer.Option(None, "--model", help="Model catalogue key (default [sizing].model), e.g. llama-3.1-70b."),
    precision: str | None = typer.Option(
        None, "--precision",
        help="Weights and KV cache (both dtypes), and the performance model's matmuls: bf16, fp16, fp8 or fp4."),
    gpu_output_tokens_per_s: float | None = typer.Option(
        None, "--gpu-output-tokens-per-s", help="Flat decode throughput per GPU (assumed); without it the performance "
                                                "model gives it from the token mix. [tokens/(s·GPU)]"),
    gpu_prefill_tokens_per_s: float | None = typer.Option(
        None, "--gpu-prefill-tokens-per-s", help="Flat prefill throughput per GPU, with --gpu-output-tokens-per-s. "
                                                 "[tokens/(s·GPU)]"),
    ttft_ms_max: float | None = typer.Option(
        None, "--ttft-ms-max", min=0, help="Mean TTFT the performance model's batch must meet. [ms]"),
    tpot_ms_max: float | None = typer.Option(
        None, "--tpot-ms-max", min=0, help="Mean TPOT the performance model's batch must meet. [ms]"),
    seqs_per_gpu: float | None = typer.Option(
        None, "--seqs-per-gpu", help="Sequences per GPU; overrides the KV-cache calculation. [sequences/GPU]"),
    kv_tokens: float | None = typer.Option(
        None, "--kv-tokens", help="Tokens per KV-cache slot, e.g. p95 of input+output (default: the means). [tokens]"),
    target_utilisation: float | None = typer.Option(None, "--target-utilisation", help="Of throughput and slots. [fraction]"),
    wait_target_s: float | None = typer.Option(
        None, "--wait-target-s", min=0, help="Derive the utilisation from a queueing-wait SLO instead (Erlang C). [s]"),
    wait_percentile: float = typer.Option(0.99, "--wait-percentile", help="Percentile of --wait-target-s. [fraction]"),
    spares: int | None = typer.Option(None, "--spares", help="N+k spare replicas. [replicas]"),
    zones: int | None = typer.Option(None, "--zones", help="Zones the fleet spans. [count]"),
    zones_lost: int | None = typer.Option(None, "--zones-lost", help="Zones whose loss must be survived. [count]"),
    growth_safety_factor: float | None = typer.Option(None, "--growth-safety-factor", help="Forecast-error multiplier. [ratio]"),
    rollout_surge_fraction: float | None = typer.Option(None, "--rollout-surge-fraction", help="Deploy surge. [fraction]"),
    warm_pool_gpus: int | None = typer.Option(None, "--warm-pool-gpus", help="Idle pre-loaded GPUs. [GPUs]"),
    tensor_parallel: int | None = typer.Option(None, "--tensor-parallel", "--tp",
                                               help="GPUs per replica (default: smallest that fits)."),
    kv_dtype: str | None = typer.Option(None, "--kv-dtype", help=f"KV-cache element type: {_DTYPES}."),
    weights_dtype: str | None = typer.Option(None, "--weights-dtype", help=f"Weights element type: {_DTYPES}."),
    memory_reserve_fraction: float | None = typer.Option(
        None, "--memory-reserve-fraction", help="GPU memory kept from the KV cache. [fraction]"),
    retention_days: float | None = typer.Option(
        None, "--retention-days", min=0, help="Also size request-log storage kept this long. [days]"),
    log_bytes_per_token: float = typer.Option(4.0, "--log-bytes-per-token", min=0, help="Stored bytes per token. [B/token]"),
    config: Path | None = CONFIG_OPTION,
    pools: bool = typer.Option(
        False, "--pools", help="Size every [[pools]] entry of --config at this load, each with its own model, GPU "
                               "(\"auto\": cheapest at the reserved rate), TP and headroom; flags other than the "
                               "load are ignored."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Size a GPU fleet from a few numbers: throughput vs KV-cache memory, then headroom."""
    from capplan.sizing.catalogue import CatalogueError
    from capplan.sizing.fleet import size_fleet

    cfg = load(config)
    settings = cfg.sizing
    try:
        average_qps, peak = _demand(requests_per_day, peak_to_avg, peak_qps)
        if pools:
            results = _size_pools(cfg, peak, latency_s, output_tokens, input_tokens, kv_tokens, average_qps)
            if as_json:
                print_json([{"pool": name, **r.to_dict()} for name, r in results])
            else:
                for name, r in results:
                    _print_table(r.rows(), title=f"Pool {name}: {r.total_gpus} {r.gpu} GPUs "
                                 f"(TP {r.tensor_parallel}, {r.binding_constraint} binds)")
            return
        # the flags override [sizing] by name: the same builder as the plan's, FleetSpec fields only
        spec = settings.fleet_spec(
            gpu=gpu, model=model, gpu_output_tokens_per_s=gpu_output_tokens_per_s,
            gpu_prefill_tokens_per_s=gpu_prefill_tokens_per_s, seqs_per_gpu=seqs_per_gpu,
            target_utilisation=target_utilisation, wait_target_s=wait_target_s, wait_percentile=wait_percentile,
            spares=spares, zones=zones, zones_lost=zones_lost, growth_safety_factor=growth_safety_factor,
            rollout_surge_fraction=rollout_surge_fraction, warm_pool_gpus=warm_pool_gpus,
            tensor_parallel=tensor_parallel, kv_dtype=kv_dtype or precision, weights_dtype=weights_dtype or precision,
            memory_reserve_fraction=memory_reserve_fraction)
        if gpu_output_tokens_per_s is None:
            if gpu_prefill_tokens_per_s is not None:
                raise ValueError("--gpu-prefill-tokens-per-s needs --gpu-output-tokens-per-s: the performance model's "
                                 "rate already holds the prompts' prefill")
            spec = _modelled_spec(spec, input_tokens, output_tokens, kv_tokens, ttft_ms_max, tpot_ms_max)
        result = size_fleet(peak_qps=peak, latency_s=latency_s, output_tokens_per_request=output_tokens,
                            input_tokens_per_request=input_tokens, kv_tokens_per_sequence=kv_tokens,
                            average_qps=average_qps, spec=spec)
        storage = []
        if retention_days is not None:
            if requests_per_day is None:
                raise ValueError("--retention-days needs --requests-per-day")
            storage = _storage_rows(requests_per_day, input_tokens + output_tokens, log_bytes_per_token, retention_days)
    except (ValueError, CatalogueError) as exc:
        fail(str(exc), code=2)
    if as_json:
        print_json({**result.to_dict(), "throughput_note": spec.throughput_note, "storage": storage})
        return
    _print_table(result.rows() + storage, title=f"Fleet sizing: {result.total_gpus} GPUs "
                 f"({result.binding_constraint} binds)")


def _modelled_spec(spec, input_tokens: float, output_tokens: float, kv_tokens: float | None,
                   ttft_ms_max: float | None, tpot_ms_max: float | None):
    """``spec`` with the performance model's per-GPU throughput at this token mix (means) and targets.

    The same estimate as a pool's in the plan (:func:`capplan.plan.throughput.modelled_throughput`), on the
    tensor-parallel degree the sizing uses; the catalogue's figure (assumed, with the reason) when the model
    cannot run for this GPU and precision.
    """
    from capplan.plan.throughput import modelled_throughput
    from capplan.sizing.fleet import tensor_parallel_for

    if spec.gpu is None or spec.model is None:
        return spec
    tp = tensor_parallel_for(spec, kv_tokens if kv_tokens is not None else input_tokens + output_tokens)
    estimate = modelled_throughput(spec.model, spec.gpu, tp, spec.weights_dtype, input_tokens, output_tokens,
                                   tpot_ms_max=tpot_ms_max, ttft_ms_max=ttft_ms_max)
    return estimate.applied_to(spec, tp)


def _size_pools(cfg, peak: float, latency_s: float, output_tokens: float, input_tokens: float,
                kv_tokens: float | None, average_qps: float | None) -> list:
    """``(pool, FleetSizing)`` for every pool of ``cfg`` at one load (:func:`capplan.plan.pools.config_pools`).

    An automatic GPU is the cheapest candidate at the reserved rate for the whole month
    (GPUs × reserved USD/GPU-h × 730 h): a what-if has no hourly forecast to commit on. Each pool
    and candidate gets its throughput as in the plan (:func:`capplan.plan.pools.pool_fleet_spec`: the
    performance model at the flags' token means and the pool's latency targets; no load tests here).
    """
    import pandas as pd

    from capplan.plan.inputs import MeasuredInputs
    from capplan.plan.pools import config_pools, gpu_options, pool_fleet_spec
    from capplan.sizing.choice import SizedOption, choose_gpu
    from capplan.sizing.cost.prices import load_price_book
    from capplan.sizing.fleet import operating_latency_s, size_fleet

    book = load_price_book(cfg.cost.price_book)
    load_terms = dict(peak_qps=peak, latency_s=latency_s, output_tokens_per_request=output_tokens,
                      input_tokens_per_request=input_tokens, kv_tokens_per_sequence=kv_tokens, average_qps=average_qps)
    # the flags' load as the request mix the plan would have measured (a what-if: nothing is measured here)
    mix = MeasuredInputs(first_ts_utc=pd.NaT, last_ts_utc=pd.NaT, requests=0, input_tokens_per_request=input_tokens,
                         output_tokens_per_request=output_tokens, latency_s=latency_s,
                         kv_tokens_per_sequence=kv_tokens if kv_tokens is not None else input_tokens + output_tokens,
                         burst_ratio=1.0)
    out = []
    for pool in config_pools(cfg):
        gpu, tp = pool.gpu, None
        if pool.is_auto:
            def fit(g, t, pool=pool):
                try:
                    f = size_fleet(**load_terms, spec=pool_fleet_spec(cfg, pool, g, t, mix))
                except ValueError:
                    return None
                return SizedOption(f.total_gpus, f.tensor_parallel, f.binding_constraint, operating_latency_s(f))
            chosen = choose_gpu(gpu_options(cfg, pool), fit, lambda g, o: o.gpus * 730.0 * book.gpu(g)
                                .reserved_usd_per_gpu_hour(cfg.cost.reserved_term),
                                latency_target_s=pool.latency_target_s).chosen
            gpu, tp = chosen.gpu, chosen.tensor_parallel
        out.append((pool.name, size_fleet(**load_terms, spec=pool_fleet_spec(cfg, pool, gpu, tp, mix))))
    return out


def register(app: typer.Typer) -> None:
    """Add ``capplan size`` to the CLI."""
    app.command("size")(size)
