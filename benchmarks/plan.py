"""Benchmark: ``capplan plan`` on the bundled sample, against an empty Prefect flow in the same run.

Run from the repository root (takes a few minutes on a busy machine):

    .venv/bin/python benchmarks/plan.py [--repeat 3] [--config data/capplan.toml]

Each repeat runs, as separate processes with the same ``PREFECT_HOME``:

1. the baseline: a Prefect flow that returns at once (interpreter start, Prefect import,
   temporary server start, one flow run — the floor of any local ``capplan plan``);
2. ``capplan plan --json`` on a fresh database and report folder in a temporary directory.

It prints the median wall time of each, their ratio, and the plan's CPU time, as JSON.
The machine is shared, so compare the ratio more than the seconds.
"""

from __future__ import annotations

import argparse
import json
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


def _timed(args: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the child and its children) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--config", default="data/capplan.toml")
    args = parser.parse_args()
    base, plan, plan_cpu = [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            base.append(_timed([sys.executable, "-c", BASELINE], REPO)[0])
            wall, cpu = _timed([str(BIN / "capplan"), "plan", "--config", args.config, "--db", f"{tmp}/bench.duckdb",
                                "--out", f"{tmp}/out", "--json"], REPO)
            plan.append(wall)
            plan_cpu.append(cpu)
    result = {"repeats": args.repeat, "empty_flow_wall_s": statistics.median(base),
              "plan_wall_s": statistics.median(plan), "plan_cpu_s": statistics.median(plan_cpu),
              "plan_over_empty_flow": statistics.median(plan) / statistics.median(base)}
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}, indent=2))


if __name__ == "__main__":
    main()
