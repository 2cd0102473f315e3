"""PLAN.md of an exported load test: the rates to sweep, the SLO, the soak and the failure tests,
each with the command lines of vLLM, SGLang, GuideLLM and AIPerf. Text only; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from capplan.loadtest.workload import sglang_random_args, vllm_random_args


@dataclass(frozen=True)
class RunbookInputs:
    """Everything PLAN.md states (one typed record, built by :mod:`capplan.loadtest.export`)."""

    pool: str
    models: tuple[str, ...]  # the log models whose requests the workload replays
    since_utc: str
    until_utc: str
    days: int
    requests: int
    peak_hour_qps: float  # observed peak-hour rate of the models together [requests/s]
    design_peak_qps: float  # the peak the sweep is built around [requests/s]
    design_peak_source: str  # where it comes from (a stored plan's P90, or the observed peak)
    replicas: int
    zones: int
    zones_lost: int
    rates_rps: tuple[float, ...]  # per replica [requests/s]
    ttft_ms_max: float | None
    tpot_ms_max: float | None
    percentile: int
    max_error_rate: float
    step_minutes: float
    soak_minutes: float
    input_summary: dict[str, float]  # [tokens]
    output_summary: dict[str, float]  # [tokens]
    trace_file: str
    trace_rate_rps: float  # the exported trace's arrival rate [requests/s]
    trace_duration_s: float


def _models_text(models: tuple[str, ...]) -> str:
    return ("model " if len(models) == 1 else "models ") + ", ".join(f"`{m}`" for m in models)


def _slo_text(x: RunbookInputs) -> str:
    parts = [f"TTFT p{x.percentile} <= {x.ttft_ms_max:g} ms" if x.ttft_ms_max is not None else None,
             f"TPOT p{x.percentile} <= {x.tpot_ms_max:g} ms" if x.tpot_ms_max is not None else None,
             f"error rate <= {x.max_error_rate:.2%}"]
    return ", ".join(p for p in parts if p)


def _prompts(x: RunbookInputs, rate: float) -> int:
    """Requests of one step: ``rate`` for ``step_minutes``."""
    return max(1, math.ceil(rate * x.step_minutes * 60))  # min -> s


def vllm_command(x: RunbookInputs, rate: float, label: str, extra: str = "") -> str:
    """``vllm bench serve`` at ``rate`` for ``step_minutes``, the production mix as uniform lengths."""
    in_len, in_ratio = vllm_random_args(x.input_summary)
    out_len, out_ratio = vllm_random_args(x.output_summary)
    prompts = _prompts(x, rate)
    return (f"vllm bench serve --backend openai --base-url $BASE_URL --model $SERVED_MODEL --dataset-name random "
            f"--random-input-len {in_len} --random-output-len {out_len} "
            f"--random-range-ratio {min(in_ratio, out_ratio):.2f} --request-rate {rate:.4g} --burstiness 1.0 "
            f"--num-prompts {prompts} --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,95,99 "
            f"--save-result --result-filename vllm-{label}.json{extra}")


def sglang_command(x: RunbookInputs, rate: float, label: str) -> str:
    """``sglang.bench_serving`` at ``rate``; SGLang draws lengths in ``[len · ratio, len]``."""
    in_len, in_ratio = sglang_random_args(x.input_summary)
    out_len, _ = sglang_random_args(x.output_summary)
    prompts = _prompts(x, rate)
    return (f"python -m sglang.bench_serving --backend sglang-oai --base-url $BASE_URL --model $SERVED_MODEL "
            f"--dataset-name random --random-input-len {in_len} --random-output-len {out_len} "
            f"--random-range-ratio {in_ratio:.2f} --request-rate {rate:.4g} --num-prompts {prompts} "
            f"--output-file sglang-{label}.jsonl")


def guidellm_command(x: RunbookInputs, rates: tuple[float, ...], seconds: float, label: str) -> str:
    """``guidellm benchmark`` over ``rates`` (Poisson), the lengths as GuideLLM's synthetic data."""
    i, o = x.input_summary, x.output_summary
    data = (f"prompt_tokens={round(i['mean'])},prompt_tokens_stdev={round(i['std'])},prompt_tokens_min={round(i['min'])},"
            f"prompt_tokens_max={round(i['max'])},output_tokens={round(o['mean'])},output_tokens_stdev={round(o['std'])},"
            f"output_tokens_min={round(o['min'])},output_tokens_max={round(o['max'])}")
    return (f"guidellm benchmark --target $BASE_URL --model $SERVED_MODEL --profile poisson "
            f"--rate {','.join(f'{r:.4g}' for r in rates)} --max-seconds {seconds:.0f} --data \"{data}\" "
            f"--output-path guidellm-{label}.json")


def aiperf_command(x: RunbookInputs, label: str) -> str:
    """``aiperf profile`` replaying the exported trace on its own timestamps."""
    return (f"aiperf profile --model $SERVED_MODEL --url $BASE_URL --endpoint-type chat --streaming "
            f"--input-file {x.trace_file} --custom-dataset-type mooncake_trace --fixed-schedule "
            f"--artifact-dir aiperf-{label}")


def render_plan(x: RunbookInputs) -> str:
    """The text of PLAN.md."""
    peak_per_replica = x.design_peak_qps / x.replicas
    lines = [
        f"# Load test plan: pool {x.pool}", "",
        f"From {x.requests:,} requests of {_models_text(x.models)} in the {x.days} days {x.since_utc} to {x.until_utc} "
        f"UTC. Observed peak-hour rate {x.peak_hour_qps:.4g} requests/s.", "",
        f"The rates below span a quarter to one and a half times the peak to plan for, {x.design_peak_qps:.4g} "
        f"requests/s ({x.design_peak_source}), {peak_per_replica:.4g} per replica over {x.replicas} replicas.", "",
        "Set `BASE_URL` to one replica's endpoint and `SERVED_MODEL` to the model name it serves. Import every "
        "result with `capplan loadtest import FILE --pool " + x.pool + " --replicas 1 --gpus-per-replica N` and "
        "read the capacity with `capplan loadtest show`.", "",
        "## SLO to judge against", "", f"{_slo_text(x)}, each step judged on its own.", "",
        "## Workload", "",
        f"- `{x.trace_file}`: Mooncake/AIPerf trace (`timestamp` [ms], `input_length`, `output_length`), the "
        f"production arrival pattern and joint lengths at {x.trace_rate_rps:.4g} requests/s "
        f"({x.trace_duration_s / 60:.1f} min to replay).",
        "- `lengths.jsonl` / `lengths.json`: the joint prompt/output lengths and their summary, for the synthetic "
        "modes below.",
        "| tokens | mean | std | min | p50 | p90 | p99 | max |", "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in (("input", x.input_summary), ("output", x.output_summary)):
        lines.append(f"| {name} | " + " | ".join(f"{s[k]:.4g}" for k in ("mean", "std", "min", "p50", "p90", "p99", "max"))
                     + " |")
    lines += ["", f"## Open-loop sweep (per replica, {x.step_minutes:g} min per step)", "",
              "| step | rate [requests/s] | x peak per replica |", "|---|---|---|"]
    lines += [f"| {k + 1} | {r:.4g} | {r / peak_per_replica:.2f} |" for k, r in enumerate(x.rates_rps)]
    lines += ["", "vLLM, one command per step:", "", "```sh"]
    lines += [vllm_command(x, r, f"step{k + 1}") for k, r in enumerate(x.rates_rps)]
    lines += ["```", "", "SGLang:", "", "```sh"]
    lines += [sglang_command(x, r, f"step{k + 1}") for k, r in enumerate(x.rates_rps)]
    lines += ["```", "", "GuideLLM (all steps in one run):", "", "```sh",
              guidellm_command(x, x.rates_rps, x.step_minutes * 60, "sweep"), "```", "",
              "AIPerf, replaying the production trace (re-export with `--rate R` for another rate):", "", "```sh",
              aiperf_command(x, "trace"), "```", ""]
    lines += _soak_and_failures(x, peak_per_replica)
    return "\n".join(lines) + "\n"


def _soak_and_failures(x: RunbookInputs, peak_per_replica: float) -> list[str]:
    soak = x.soak_minutes / x.step_minutes
    peak = x.design_peak_qps
    lines = ["## Soak", "", f"{x.soak_minutes:g} min at the peak rate per replica ({peak_per_replica:.4g} requests/s): "
             "latency must not drift up, memory must not grow.", "", "```sh",
             vllm_command(_longer(x, soak), peak_per_replica, "soak"), "```", "", "## Failure tests", "",
             "Run against the whole pool (`BASE_URL` = the load balancer) at the total peak to plan for, "
             f"{peak:.4g} requests/s.", ""]
    if x.replicas > 1:
        survivor = peak / (x.replicas - 1)
        lines += [f"- **Kill a replica**: delete one of the {x.replicas} replicas 5 min in (e.g. `kubectl delete pod "
                  f"REPLICA`); each survivor then takes {survivor:.4g} requests/s. The SLO must hold after failover."]
    else:
        lines += ["- **Kill a replica**: the pool has one replica, so this is an outage; plan at least two."]
    if x.zones > x.zones_lost and x.zones > 1:
        left = x.zones - x.zones_lost
        lines += [f"- **Lose a zone**: take {x.zones_lost or 1} of {x.zones} zones away 5 min in; the remaining zones "
                  f"carry {x.zones / max(left, 1):.3g}x their share."]
    else:
        lines += ["- **Lose a zone**: the config spans one zone (`[sizing].zones`), so losing it is an outage."]
    lines += ["- **Cold start to peak**: scale the pool to its minimum, then load it; the SLO must hold once new "
              "replicas report ready. vLLM ramps from 0 to the peak over the step; SGLang, GuideLLM and AIPerf start "
              "at the peak at once (the harder case).", "",
              "Kill a replica and lose a zone (one run each, the failure injected 5 min in):", ""]
    lines += _every_tool(x, peak, "failover")
    lines += ["Cold start to peak:", ""]
    lines += _every_tool(x, peak, "cold-start", f" --ramp-up-strategy linear --ramp-up-start-rps 0 "
                                                f"--ramp-up-end-rps {peak:.4g}")
    return lines


def _every_tool(x: RunbookInputs, rate: float, label: str, vllm_extra: str = "") -> list[str]:
    """One run at ``rate`` for ``step_minutes`` with each tool: vLLM, SGLang, GuideLLM, AIPerf replaying the trace."""
    return ["```sh", vllm_command(x, rate, label, vllm_extra), sglang_command(x, rate, label),
            guidellm_command(x, (rate,), x.step_minutes * 60, label),  # min -> s
            f"capplan loadtest export --pool {x.pool} --days {x.days} --rate {rate:.4g} --out {label}/",
            aiperf_command(replace(x, trace_file=f"{label}/{x.trace_file}"), label), "```", ""]


def _longer(x: RunbookInputs, factor: float) -> RunbookInputs:
    return replace(x, step_minutes=x.step_minutes * factor)
