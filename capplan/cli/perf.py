"""``capplan perf``: modelled throughput of one serving replica (see docs/performance.md)."""

from __future__ import annotations

import typer

from capplan.cli._common import JSON_OPTION, fail, print_json

def _print(result: dict, sweep: list[dict], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 120))
    table = Table(title=title, title_justify="left")
    for name in ("term", "value", "unit"):
        table.add_column(name, justify="right" if name == "value" else "left")
    units = {"output_tokens_per_s_per_gpu": "tokens/(s·GPU)", "output_tokens_per_s_per_replica": "tokens/s",
             "batch": "sequences", "ttft_ms": "ms", "tpot_ms": "ms", "kv_memory_batch_limit": "sequences"}
    for key, value in result.items():
        shown = f"{value:,.1f}" if isinstance(value, float) else str(value)
        table.add_row(key, shown, units.get(key, ""))
    console.print(table)
    if sweep:
        curve = Table(title="Sweep over batch size", title_justify="left")
        for name in ("batch [sequences]", "tokens/(s·GPU)", "TPOT [ms]", "TTFT [ms]", "step bound"):
            curve.add_column(name, justify="right")
        for row in sweep:
            curve.add_row(str(row["batch"]), f"{row['output_tokens_per_s_per_gpu']:,.0f}", f"{row['tpot_ms']:.1f}",
                          f"{row['ttft_ms']:.0f}", row["step_bound"])
        console.print(curve)


def perf(
    model: str = typer.Option(..., "--model", help="Model catalogue key, e.g. llama-3.1-70b."),
    gpu: str = typer.Option(..., "--gpu", help="GPU catalogue key, e.g. H100-SXM-80GB."),
    tp: int = typer.Option(1, "--tp", min=1, help="Tensor-parallel GPUs per replica. [GPUs]"),
    precision: str = typer.Option("fp8", "--precision", help="Weights and matmuls: fp16, bf16, fp8 or fp4."),
    input_tokens: float = typer.Option(..., "--input-tokens", min=0, help="Prompt tokens per request (mean). [tokens]"),
    output_tokens: float = typer.Option(..., "--output-tokens", min=1, help="Output tokens per request (mean). [tokens]"),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1, help="Sequences in flight per replica."),
    tpot_ms_max: float | None = typer.Option(None, "--tpot-ms-max", min=0, help="Mean TPOT target. [ms]"),
    ttft_ms_max: float | None = typer.Option(None, "--ttft-ms-max", min=0, help="Mean TTFT target (no queueing). [ms]"),
    sweep: bool = typer.Option(False, "--sweep", help="Also print throughput and TPOT over batch sizes."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Modelled output tokens/s per GPU of one replica, at max batch, a concurrency or latency targets."""
    from capplan.sizing.performance import replica_throughput, throughput_sweep

    if concurrency is not None and (tpot_ms_max is not None or ttft_ms_max is not None):
        fail("give --concurrency or latency targets (--tpot-ms-max/--ttft-ms-max), not both", code=2)
    kwargs = dict(model=model, gpu=gpu, tensor_parallel=tp, precision=precision,
                  input_tokens=input_tokens, output_tokens=output_tokens)
    try:
        result = replica_throughput(**kwargs, concurrency=concurrency, tpot_ms_max=tpot_ms_max,
                                    ttft_ms_max=ttft_ms_max).to_dict()
        curve = throughput_sweep(result["kv_memory_batch_limit"], **kwargs) if sweep else []
    except ValueError as exc:
        fail(str(exc), code=2)
    inputs = {**kwargs, "concurrency": concurrency, "tpot_ms_max": tpot_ms_max, "ttft_ms_max": ttft_ms_max}
    if as_json:
        print_json({"inputs": inputs, "result": result, "sweep": curve, "source": "modelled (sizing.performance)"})
        return
    _print(result, curve, title=f"{model} on {tp} x {gpu} ({precision}), {input_tokens:g} in / "
                               f"{output_tokens:g} out: {result['output_tokens_per_s_per_gpu']:,.0f} tokens/(s·GPU), "
                               f"{result['binds']} binds (modelled)")


def register(app: typer.Typer) -> None:
    """Add ``capplan perf`` to the CLI."""
    app.command("perf")(perf)
