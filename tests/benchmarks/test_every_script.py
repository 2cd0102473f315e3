"""Every benchmark script runs at a tiny size and prints its table, so none rots unnoticed.

The full sizes stay on demand (benchmarks/README.md); here each script runs as a user would start
it, in a fresh process from the repository root, with the smallest arguments it takes, and must
exit 0 and print the line its table is known by. Timings at these sizes mean nothing and are not
checked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "benchmarks"

pytestmark = pytest.mark.slow

#: script arguments -> a piece of the table it must print; ``{tmp}`` is a fresh work folder
CASES = {
    "bench_sizing": (["benchmarks/bench_sizing.py"], "gpus_for_throughput"),
    "bench_cost_commitment": (["benchmarks/bench_cost_commitment.py"], "True"),
    "bench_slo_drift": (["benchmarks/bench_slo_drift.py", "--rows", "20000", "--repeats", "1"], "window_comparisons"),
    "bench_sample": (["benchmarks/bench_sample.py", "--rows", "20000", "--days", "2"], "write"),
    "ingest_csv": (["benchmarks/ingest.py", "--rows", "20000", "--formats", "csv", "--modes", "bare", "floor", "capplan",
                    "--workdir", "{tmp}"], "capplan"),
    "ingest_parquet": (["benchmarks/ingest.py", "--rows", "20000", "--formats", "parquet", "--modes", "bare", "capplan",
                        "--workdir", "{tmp}"], "capplan"),
    "profile": (["benchmarks/profile.py", "--days", "2", "--requests-per-day", "2000", "--repeat", "1",
                 "--workdir", "{tmp}"], "one day / full rebuild"),
    "profile_models": (["benchmarks/profile.py", "--days", "2", "--requests-per-day", "2000", "--repeat", "1",
                        "--against-models", "50", "--workdir", "{tmp}"], "50 models"),
    "run_all": (["benchmarks/run_all.py", "--sizes", "20K", "--sections", "ingest,profile", "--workdir", "{tmp}"],
                "capplan profile --rebuild"),
    "plan": (["benchmarks/plan.py", "--repeat", "1"], "plan_over_empty_flow"),
    "cli_startup": (["benchmarks/cli_startup.py", "--rounds", "1"], "capplan size (golden case)"),
    "perf_model": (["benchmarks/perf_model.py", "--quick"], "dense max-throughput"),
    "forecast_accuracy": (["benchmarks/forecast_accuracy.py", "--limit", "2", "--workers", "1"], "2-year hourly series"),
    "forecast_selection": (["benchmarks/forecast_selection.py", "--suite", "servegen", "--limit", "2", "--workers", "1",
                            "--draws", "10"], "replay = fit"),
    "month_peak_calibration": (["benchmarks/month_peak_calibration.py", "--seeds", "1", "--history-days", "28"],
                               "actual_over_p50"),
}
NEEDS_SHARED = {"perf_model": "llm-throughput-dev", "forecast_accuracy": "m4-hourly-dev",
                "forecast_selection": "servegen-clients-dev"}


@pytest.mark.parametrize("name", list(CASES))
def test_benchmark_runs_at_a_tiny_size(name, tmp_path):
    if name in NEEDS_SHARED and not (SHARED / NEEDS_SHARED[name]).exists():
        pytest.skip(f"needs ../shared/benchmarks/{NEEDS_SHARED[name]} beside the repository")
    args, expected = CASES[name]
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert expected in done.stdout, f"{' '.join(args)} printed no table with {expected!r}:\n{done.stdout[-2000:]}"


@pytest.mark.parametrize("script", sorted({args[0] for args, _ in CASES.values()
                                           if "argparse" in (REPO / args[0]).read_text()}))
def test_every_benchmark_with_options_explains_itself(script):
    """``--help`` of each script exits 0 and prints its usage (argparse formats help strings with ``%``: a bare
    percent sign in one broke month_peak_calibration.py's ``--help`` unnoticed by the runs above)."""
    done = subprocess.run([sys.executable, script, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{script} --help failed:\n{done.stderr[-3000:]}"
    assert "usage:" in done.stdout
