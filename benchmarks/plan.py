"""Benchmark: ``capplan plan`` on the bundled sample, against an empty Prefect flow in the same run.

Run from the repository root (takes a few minutes on a busy machine):

    .venv/bin/python benchmarks/plan.py [--repeat 3] [--config data/capplan.toml] [--before ../main/.venv/bin/capplan]

Each repeat runs, as separate processes, one after the other:

1. the baseline: a Prefect flow that returns at once (interpreter start, Prefect import,
   temporary server start, one flow run, server stop — the floor of any local ``capplan plan``);
2. ``capplan plan --json`` on a fresh database and report folder (the README's main command);
3. with ``--before``, the same command of another install (e.g. the main branch's), on its own
   fresh database.

Every process shares one ``PREFECT_HOME`` made for the run and warmed by an untimed empty flow
(a new home costs the first server ≈ 10 s of migrations; a user's home exists after the first run).
It prints the median wall time of each, their ratio to the baseline, the plan's CPU time
(user + system of the process and its children: the server, the forked workers) and its ratio to the
baseline's CPU (where other work keeps every core busy, the wall ratio tends to it), the median seconds
of each stage as the plan's JSON reports them and the rest of the wall time (imports, waiting for
the server, exit; the stages that run beside the forecast are left out of that sum), then the
figures as JSON on the last lines. The machine is shared: compare ratios, and read the load column.
Every process runs as from a user's install, with Python's bytecode caches (``PYTHONDONTWRITEBYTECODE``
is dropped from the environment; untimed first runs write the caches).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BASELINE = "from prefect import flow\n@flow(name='empty')\ndef empty():\n    return 1\nempty()\n"
TARGET_RATIO = 1.5  # issue 24: the README's main command <= 1.5x an empty Prefect flow


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system of the child and its children) of one process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def _plan(script: str, config: str, tmp: str, env: dict[str, str]) -> tuple[float, float, dict[str, float]]:
    """Wall and CPU seconds of ``script plan --json`` on a fresh database, and its stage seconds."""
    wall, cpu, out = _timed([script, "plan", "--config", config, "--db", f"{tmp}/bench.duckdb", "--out", f"{tmp}/out",
                             "--json"], env)
    return wall, cpu, json.loads(out).get("stage_seconds", {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--config", default="data/capplan.toml")
    parser.add_argument("--before", default=None, help="another install's capplan script, timed in the same rounds")
    args = parser.parse_args()
    variants = {"empty Prefect flow": None, "capplan plan": str(BIN / "capplan")}
    if args.before:
        variants["capplan plan [before]"] = args.before
    walls: dict[str, list[float]] = {v: [] for v in variants}
    cpus: dict[str, list[float]] = {v: [] for v in variants}
    stages: dict[str, list[float]] = {}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as home:
        # as a user's install runs: with bytecode caches (the untimed first runs write them)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(PREFECT_HOME=home, PREFECT_SERVER_ANALYTICS_ENABLED="false",  # as capplan plan sets them
                   PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120")
        _timed([sys.executable, "-c", BASELINE], env)  # untimed: the home's database and migrations
        for script in [s for s in variants.values() if s is not None]:  # untimed: bytecode caches
            _timed([script, "--help"], env)
        for _ in range(args.repeat):
            for name, script in variants.items():
                with tempfile.TemporaryDirectory() as tmp:
                    if script is None:
                        wall, cpu, _ = _timed([sys.executable, "-c", BASELINE], env)
                    else:
                        wall, cpu, seconds = _plan(script, args.config, tmp, env)
                        if name == "capplan plan":
                            for stage, s in seconds.items():
                                stages.setdefault(stage, []).append(s)
                walls[name].append(wall)
                cpus[name].append(cpu)
            loads.append(os.getloadavg()[0])
    base = statistics.median(walls["empty Prefect flow"])
    print(f"capplan plan ({args.config}, fresh database) against an empty Prefect flow, {args.repeat} interleaved "
          f"round(s), whole processes; 1-min load {min(loads):.1f}-{max(loads):.1f}")
    print(f"| {'variant':<24} | {'median wall s':>13} | {'min s':>6} | {'CPU s':>6} | {'÷ empty flow':>12} |")
    print(f"|{'-' * 26}|{'-' * 15}|{'-' * 8}|{'-' * 8}|{'-' * 14}|")
    for name in variants:
        med = statistics.median(walls[name])
        print(f"| {name:<24} | {med:>13.1f} | {min(walls[name]):>6.1f} | {statistics.median(cpus[name]):>6.1f} "
              f"| {med / base:>12.2f} |")
    stage_median = {s: statistics.median(v) for s, v in stages.items()}
    plan_wall = statistics.median(walls["capplan plan"])
    print(f"\nStages of capplan plan (medians; target {TARGET_RATIO}x the empty flow = {TARGET_RATIO * base:.1f} s):")
    print(f"| {'stage':<44} | {'s':>6} |")
    print(f"|{'-' * 46}|{'-' * 8}|")
    for stage, s in stage_median.items():
        print(f"| {stage:<44} | {s:>6.1f} |")
    from capplan.flows.tasks import OVERLAPPING  # they overlap other stages

    serial = sum(s for stage, s in stage_median.items() if stage not in OVERLAPPING)
    print(f"| {'outside the stages (imports, server, exit)':<44} | {plan_wall - serial:>6.1f} |")
    plan_cpu, base_cpu, cores = statistics.median(cpus["capplan plan"]), statistics.median(cpus["empty Prefect flow"]), \
        os.cpu_count() or 1
    # where other work keeps every core busy, wall time follows CPU time: the ratio then tends to the CPU ratio
    print(f"\nCPU: the plan {plan_cpu:.1f} s, the empty flow {base_cpu:.1f} s ({plan_cpu / base_cpu:.2f}x, the ratio on a "
          f"machine kept busy by other work); over {cores} free core(s) the plan's CPU alone is "
          f"{plan_cpu / cores:.1f} s of wall")
    result = {"repeats": args.repeat, "load_min": min(loads), "load_max": max(loads), "empty_flow_wall_s": base,
              "empty_flow_cpu_s": base_cpu, "plan_wall_s": plan_wall, "plan_cpu_s": plan_cpu, "cores": cores,
              "plan_cpu_over_empty_flow_cpu": plan_cpu / base_cpu,
              "plan_over_empty_flow": plan_wall / base, "stage_seconds": stage_median}
    if args.before:
        result["before_wall_s"] = statistics.median(walls["capplan plan [before]"])
        result["before_over_empty_flow"] = result["before_wall_s"] / base
    print(json.dumps(_rounded(result), indent=2))


def _rounded(value):
    if isinstance(value, float):
        return round(value, 2)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


if __name__ == "__main__":
    main()
