"""PLAN.md of an exported load test: the sweep, the SLO, and every failure test with each tool's command line."""

from __future__ import annotations

import re

import pytest

from capplan.loadtest.runbook import RunbookInputs, render_plan
from capplan.loadtest.workload import sweep_rates_rps

SUMMARY = {"mean": 1000.0, "std": 200.0, "min": 500.0, "max": 1500.0, "p50": 990.0, "p90": 1250.0, "p99": 1450.0}
TOOLS = ("vllm bench serve", "python -m sglang.bench_serving", "guidellm benchmark", "aiperf profile")


def _inputs(**changes) -> RunbookInputs:
    """Pool ``small`` of two log models; a design peak of 6 requests/s over 3 replicas in 3 zones, one lost."""
    base = dict(pool="small", models=("llama-3.1-8b", "qwen2.5-7b"), since_utc="2026-03-03 00:00:00",
                until_utc="2026-03-06 00:00:00", days=3, requests=12_345, peak_hour_qps=4.0, design_peak_qps=6.0,
                design_peak_source="the P90 design peak of plan run r1", replicas=3, zones=3, zones_lost=1,
                rates_rps=tuple(sweep_rates_rps(6.0, 3)), ttft_ms_max=800.0, tpot_ms_max=40.0, percentile=99,
                max_error_rate=0.01, step_minutes=10.0, soak_minutes=60.0, input_summary=SUMMARY,
                output_summary=SUMMARY, trace_file="trace.jsonl", trace_rate_rps=6.0, trace_duration_s=3600.0)
    return RunbookInputs(**(base | changes))


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_sweep_spans_a_quarter_to_one_and_a_half_times_the_peak_per_replica():
    """6 requests/s over 3 replicas = 2 per replica: 0.5, 1, 1.5, 2, 2.5, 3 requests/s; 10 min a step = 600 s,
    so the first vLLM step sends 0.5 x 600 = 300 prompts."""
    text = render_plan(_inputs())
    sweep = _section(text, "Open-loop sweep (per replica, 10 min per step)")
    rows = re.findall(r"^\| (\d) \| ([\d.]+) \| ([\d.]+) \|$", sweep, re.M)
    assert [(float(r), float(x)) for _k, r, x in rows] == [
        (0.5, 0.25), (1.0, 0.5), (1.5, 0.75), (2.0, 1.0), (2.5, 1.25), (3.0, 1.5)]
    assert "--request-rate 0.5 --burstiness 1.0 --num-prompts 300 " in sweep
    assert "TTFT p99 <= 800 ms, TPOT p99 <= 40 ms, error rate <= 1.00%" in text
    assert "requests of models `llama-3.1-8b`, `qwen2.5-7b`" in text
    assert "the P90 design peak of plan run r1" in text


def test_every_failure_test_has_each_tools_command_line_at_the_design_peak():
    """Failure tests run the whole pool at the design peak, 6 requests/s (10 min: 3,600 prompts): a survivor of
    three replicas takes 6 / 2 = 3 requests/s, two zones of three carry 3 / 2 = 1.5x their share; the failover
    and the cold start each have a vLLM, SGLang, GuideLLM and AIPerf line (AIPerf on the trace re-exported at
    6 requests/s), and vLLM's cold start ramps from 0 to 6."""
    failures = _section(render_plan(_inputs()), "Failure tests")
    for needle in ("at the total peak to plan for, 6 requests/s", "each survivor then takes 3 requests/s",
                   "take 1 of 3 zones away 5 min in; the remaining zones carry 1.5x their share",
                   "Cold start to peak"):
        assert needle in failures, needle
    failover, cold = failures.split("Cold start to peak:\n", 1)
    for block, label in ((failover, "failover"), (cold, "cold-start")):
        commands = [line for line in block.splitlines() if line.startswith((*TOOLS, "capplan"))]
        assert [next(t for t in (*TOOLS, "capplan") if c.startswith(t)) for c in commands] == [
            TOOLS[0], TOOLS[1], TOOLS[2], "capplan", TOOLS[3]], label
        vllm, sglang, guidellm, export, aiperf = commands
        assert "--request-rate 6 " in vllm and "--num-prompts 3600 " in vllm and f"vllm-{label}.json" in vllm
        assert "--request-rate 6 --num-prompts 3600 " in sglang and f"sglang-{label}.jsonl" in sglang
        assert "--rate 6 --max-seconds 600 " in guidellm
        assert export == f"capplan loadtest export --pool small --days 3 --rate 6 --out {label}/"
        assert f"--input-file {label}/trace.jsonl" in aiperf and "--fixed-schedule" in aiperf
    assert "--ramp-up-strategy linear --ramp-up-start-rps 0 --ramp-up-end-rps 6" in cold
    assert "--ramp-up" not in failover


@pytest.mark.parametrize(("replicas", "zones", "kill", "zone"), [
    (1, 3, "the pool has one replica, so this is an outage", "carry 1.5x"),
    (2, 1, "each survivor then takes 6 requests/s", "the config spans one zone"),
])
def test_one_replica_or_one_zone_is_said_to_be_an_outage(replicas, zones, kill, zone):
    failures = _section(render_plan(_inputs(replicas=replicas, zones=zones,
                                            rates_rps=tuple(sweep_rates_rps(6.0, replicas)))), "Failure tests")
    assert kill in failures and zone in failures
