"""Calibration of the plan's design peak: is the actual month's busiest hour below its simulated P90?

Run: ``.venv/bin/python benchmarks/month_peak_calibration.py [--seeds 15] [--history-days 28 84]
[--bursts-per-day 4] [--perturb] [--workers 1]``

The process is ``capplan.sample``'s, as in the metrics proof (``tests/metrics/test_plan_from_metrics.py``):
``--requests-per-day`` (40,000) requests a day, two models at 70 % and 30 % (one pool each), daily and
weekly cycles, 5 %/month growth, bursts (``--bursts-per-day`` 4 a day of 1-10 minutes at 3-8x), no
incidents, successful requests only. For each seed and history length the generated requests are
counted per model and UTC arrival hour over the ``--history-days`` days to 31 Oct 2026 and planned
through the plan's own demand stage (:func:`capplan.plan.demand.plan_demand` for 2026-11 and 2026-12,
default config, burst ratio 1); the same process's November (generated on, same seed) gives the
actual busiest hour. Printed per history length: months, the share whose actual peak is ≤ the P90 /
≤ the P50 / ≥ the P10 of the simulated November peak (nominal 0.9 / 0.5 / 0.9; one binomial s.d. of a
share ``p`` over ``n`` seeds is ``sqrt(p(1 − p)/n)``: a seed's two pools share its bursts, so they count
as one), and the median actual / P50. ``--perturb``
also plans every history with each hour × U(0.976, 1.024) (the ≤ 2.4 % by which counting at completion
differs from counting at arrival) and prints the median and largest moves of the P50 and P90.
"""

from __future__ import annotations

import os

# One BLAS thread per process: the pool provides the parallelism (as benchmarks/forecast_accuracy.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from dataclasses import replace  # noqa: E402
from datetime import date, timedelta  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

from capplan.config import CapplanConfig  # noqa: E402
from capplan.plan.demand import plan_demand  # noqa: E402
from capplan.sample import DEFAULT_MODELS, SampleSpec, iter_days  # noqa: E402

#: First day of the month whose peak is predicted (the plan's first month). [UTC]
MONTH_START = date(2026, 11, 1)
MONTH_DAYS = 30
PLAN_MONTHS = ["2026-11", "2026-12"]
#: Model shares of the two pools, as the metrics proof. [fraction]
SHARES = (0.7, 0.3)
#: Largest relative move of an hour in ``--perturb``: counting at completion vs at arrival. [fraction]
PERTURB = 0.024


def hourly_counts(seed: int, history_days: int, requests_per_day: float, bursts_per_day: float) -> pd.DataFrame:
    """Successful requests per UTC arrival hour (rows) and model (columns), history then November. [requests]"""
    models = tuple(replace(m, share=s) for m, s in zip(DEFAULT_MODELS, SHARES))
    spec = SampleSpec(start=MONTH_START - timedelta(days=history_days), days=history_days + MONTH_DAYS,
                      requests_per_day=requests_per_day, seed=seed, incidents=False, models=models,
                      bursts_per_day=bursts_per_day)
    names = [m.name for m in models]
    index = pd.date_range(pd.Timestamp(spec.start), periods=24 * spec.days, freq="h")
    counts = np.zeros((len(index), len(names)))
    for day, chunk in enumerate(iter_days(spec)):
        table = chunk.table.filter(pc.equal(chunk.table["status"], 200))
        hour = pc.cast(table["ts_utc"], "int64").to_numpy() // 3_600_000_000 - index[0].value // 3_600_000_000_000
        model = table["model"].combine_chunks().indices.to_numpy()
        np.add.at(counts, (hour, model), 1)
    return pd.DataFrame(counts, index=index, columns=names)


def november(history: pd.Series, cfg: CapplanConfig) -> np.ndarray:
    """P10, P50, P90 of the plan's November design peak (burst ratio 1) from hourly counts. [requests/s]"""
    frame = pd.DataFrame({"hour_utc": history.index, "avg_qps": history.to_numpy() / 3600,
                          "requests": history.to_numpy(), "is_gap": False})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peaks = plan_demand(frame, PLAN_MONTHS, cfg, 1.0).peaks.set_index("month")
    return peaks.loc["2026-11", ["qps_p10", "qps_p50", "qps_p90"]].to_numpy(float)


def calibrate_seed(job: tuple[int, int, float, float, bool]) -> list[dict]:
    """One row per pool: the simulated November P10/P50/P90, the actual peak, and (``perturb``) the moves."""
    seed, history_days, requests_per_day, bursts_per_day, perturb = job
    counts = hourly_counts(seed, history_days, requests_per_day, bursts_per_day)
    cfg, cut = CapplanConfig(), pd.Timestamp(MONTH_START)
    rows = []
    for column, name in enumerate(counts.columns):
        history = counts.loc[:cut - pd.Timedelta(hours=1), name]
        p10, p50, p90 = november(history, cfg)
        row = {"seed": seed, "history_days": history_days, "model": name, "p10": p10, "p50": p50, "p90": p90,
               "actual": float(counts.loc[cut:, name].max()) / 3600}
        if perturb:
            noise = np.random.default_rng([seed, column]).uniform(1 - PERTURB, 1 + PERTURB, len(history))
            _, q50, q90 = november(history * noise, cfg)
            row |= {"move_p50": abs(q50 / p50 - 1), "move_p90": abs(q90 / p90 - 1)}
        rows.append(row)
    return rows


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per history length: months, shares below P90 / P50 and above P10, two binomial s.d. at 0.9, median ratio.

    The s.d. counts seeds, not months: the pools of one seed share its bursts (their actual / P50 correlate
    at ~0.9 here), so a seed's two months are nearly one observation.
    """
    def one(g: pd.DataFrame) -> pd.Series:
        n = g["seed"].nunique()
        out = {"months": len(g), "le_p90": np.mean(g["actual"] <= g["p90"]), "le_p50": np.mean(g["actual"] <= g["p50"]),
               "ge_p10": np.mean(g["actual"] >= g["p10"]), "two_sd_at_0.9": 2 * np.sqrt(0.09 / n),
               "actual_over_p50": float(np.median(g["actual"] / g["p50"]))}
        if "move_p50" in g:
            out |= {"p50_move_median": g["move_p50"].median(), "p50_move_max": g["move_p50"].max(),
                    "p90_move_median": g["move_p90"].median(), "p90_move_max": g["move_p90"].max()}
        return pd.Series(out)
    return rows.groupby("history_days").apply(one)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=15, help="seeds FIRST..FIRST+N-1 (two pools each)")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--history-days", type=int, nargs="+", default=[28, 84])
    parser.add_argument("--requests-per-day", type=float, default=40_000)
    parser.add_argument("--bursts-per-day", type=float, default=4.0)
    parser.add_argument("--perturb", action="store_true", help="also plan every history with each hour moved by <= 2.4 %%")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--csv", help="write the per-month rows here")
    args = parser.parse_args()
    jobs = [(seed, days, args.requests_per_day, args.bursts_per_day, args.perturb)
            for days in args.history_days for seed in range(args.first_seed, args.first_seed + args.seeds)]
    started = time.perf_counter()
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(calibrate_seed, jobs))
    else:
        results = [calibrate_seed(job) for job in jobs]
    rows = pd.DataFrame([r for rs in results for r in rs])
    if args.csv:
        rows.to_csv(args.csv, index=False)
    print(f"month peak calibration: {args.requests_per_day:,.0f} requests/day, {args.bursts_per_day:g} bursts/day, "
          f"seeds {args.first_seed}..{args.first_seed + args.seeds - 1} x {len(SHARES)} pools, {time.perf_counter() - started:.0f} s")
    print(summary(rows).to_string(float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
