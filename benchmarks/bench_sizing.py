"""How cheap is sizing? Times size_fleet and friends against a one-formula baseline in the same run.

Run: ``.venv/bin/python benchmarks/bench_sizing.py``. The machine is shared and
noisy, so each figure is the median of several repeats and is reported as a
ratio to the baseline (one checked scalar formula, ``gpus_for_throughput``).
"""

from __future__ import annotations

import statistics
import timeit

import numpy as np

from capplan.sizing import capacity, queueing
from capplan.sizing.catalogue import get_gpu, get_model
from capplan.sizing.fleet import FleetSpec, size_fleet

GOLDEN = dict(peak_qps=2_000_000 / 86_400 * 4, latency_s=6, output_tokens_per_request=400,
              spec=FleetSpec(gpu_output_tokens_per_s=2_000, target_utilisation=0.6, seqs_per_gpu=40, spares=1))


def per_call_s(fn, number: int, repeat: int = 7) -> float:
    """Median seconds per call over ``repeat`` runs of ``number`` calls."""
    return statistics.median(t / number for t in timeit.repeat(fn, number=number, repeat=repeat))


def main() -> None:
    gpu, model = get_gpu("H100-SXM-80GB"), get_model("llama-3.1-70b")
    qps = np.random.default_rng(0).uniform(10, 200, 1_000_000)
    cases = {
        "baseline: gpus_for_throughput (scalar)": (lambda: capacity.gpus_for_throughput(37_037, 2_000, 0.6), 20_000),
        "size_fleet, golden inputs": (lambda: size_fleet(**GOLDEN), 2_000),
        "size_fleet, catalogue GPU + 70B model": (
            lambda: size_fleet(peak_qps=92.6, latency_s=6, output_tokens_per_request=400, input_tokens_per_request=1500,
                               spec=FleetSpec(gpu=gpu, model=model, zones=3, zones_lost=1)), 2_000),
        "get_gpu (cached catalogue lookup)": (lambda: get_gpu("H100-SXM-80GB"), 2_000),
        "erlang_c, 400 servers": (lambda: queueing.erlang_c(400, 372), 5_000),
        "max_utilisation_for_latency_target (brentq)": (
            lambda: queueing.max_utilisation_for_latency_target(400, 6, 0.5, 0.99), 20),
        "gpus_for_throughput over 1e6 hours (one array call)": (
            lambda: capacity.gpus_for_throughput(qps * 400, 2_000, 0.6), 20),
    }
    base = None
    print(f"{'case':55s} {'per call':>12s} {'× baseline':>12s}")
    for name, (fn, number) in cases.items():
        t = per_call_s(fn, number)
        base = base or t
        print(f"{name:55s} {t * 1e6:10.1f} µs {t / base:12.1f}")


if __name__ == "__main__":
    main()
