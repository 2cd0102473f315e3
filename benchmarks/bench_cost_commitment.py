"""Benchmark: the sorted commitment optimiser against the O(n·max_need) brute force.

Run on demand (not in CI):

    .venv/bin/python benchmarks/bench_cost_commitment.py

Need series are generated from a fixed seed (daily and weekly cycles, growth,
noise). Times are medians of repeated runs, reported as ratios to baselines
measured in the same run, because the machine is shared and noisy:
``brute / fast`` (speed-up) and ``fast / sort`` (overhead over one ``np.sort``
of the series, the floor for any sort-based method).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from capplan.sizing.cost.commitment import optimal_commitment

P_RESERVED, P_ON_DEMAND = 2.49, 3.99  # USD/GPU-h, the illustrative H100 1y and on-demand rates


def need_series(hours: int, peak_gpus: float, seed: int = 20261129) -> np.ndarray:
    """Hourly need with daily and weekly cycles, 30 %/year growth and noise. [GPUs]"""
    rng = np.random.default_rng(seed)
    t = np.arange(hours)
    daily = 1 + 0.35 * np.sin(2 * np.pi * t / 24)
    weekly = 1 - 0.15 * (t % 168 >= 120)  # weekends lower
    growth = 1.3 ** (t / 8760)
    need = peak_gpus / 1.6 * daily * weekly * growth * rng.lognormal(0, 0.08, hours)
    return np.ceil(need)


def brute_force_r(need: np.ndarray) -> int:
    """R* by evaluating every R with a full pass over the hours: O(n · max_need)."""
    costs = [r * P_RESERVED * need.size + P_ON_DEMAND * np.maximum(need - r, 0).sum()
             for r in range(int(need.max()) + 1)]
    return int(np.argmin(costs))


def median_s(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    print(f"{'hours':>7} {'max GPUs':>9} {'fast [ms]':>10} {'brute/fast':>11} {'fast/sort':>10}  same R*")
    for hours, peak in ((2_208, 64), (2_208, 512), (8_760, 512), (26_280, 2_048)):
        need = need_series(hours, peak)
        fast = optimal_commitment(need, reserved_usd_per_gpu_hour=P_RESERVED, on_demand_usd_per_gpu_hour=P_ON_DEMAND)
        same = fast.reserved_gpus == brute_force_r(need)
        t_fast = median_s(lambda: optimal_commitment(
            need, reserved_usd_per_gpu_hour=P_RESERVED, on_demand_usd_per_gpu_hour=P_ON_DEMAND), 7)
        t_brute = median_s(lambda: brute_force_r(need), 3)
        t_sort = median_s(lambda: np.sort(need), 7)
        print(f"{hours:>7} {int(need.max()):>9} {t_fast * 1e3:>10.2f} {t_brute / t_fast:>11.1f} "
              f"{t_fast / t_sort:>10.1f}  {same}")


if __name__ == "__main__":
    main()
