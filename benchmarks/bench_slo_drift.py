"""Benchmark the SLO and drift stages against a plain hourly count over the same table.

Run on demand: ``.venv/bin/python benchmarks/bench_slo_drift.py --rows 10000000``.
The machine is shared and noisy, so each stage is reported as a ratio to the
baseline ``select date_trunc('hour', ts_utc), count(*) … group by 1`` measured
in the same run (median of ``--repeats``); absolute seconds are printed too.
Rows are synthetic, generated in DuckDB from a fixed seed over 90 days.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from capplan import sql
from capplan.config import CapplanConfig
from capplan.db import connect
from capplan.drift.detect import window_comparisons
from capplan.drift.histogram import daily_histograms
from capplan.ingest import ensure_tables
from capplan.slo.status import alert_episodes, slo_status


def _median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    con = connect()
    ensure_tables(con)
    con.execute("select setseed(0.42)")
    # 90 days; ~0.5 % failures; log-normal-ish token lengths
    con.execute("""
        insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id)
        select timestamp '2026-01-01' + (random() * 90 * 86400) * interval 1 second,
               (exp(6.4 + 0.9 * sqrt(-2 * ln(random())) * cos(2 * pi() * random())))::integer,
               (exp(5.2 + 0.7 * sqrt(-2 * ln(random())) * cos(2 * pi() * random())))::integer,
               case when random() < 0.6 then 'a' else 'b' end,
               case when random() < 0.005 then 503 else 200 end,
               200 + 100 * random(), 2000.0, null, null, null, 1
        from range($rows)""", {"rows": args.rows})
    cfg = CapplanConfig()
    slo = cfg.slos[0]
    stages = {
        "baseline: hourly count": lambda: con.execute(
            "select date_trunc('hour', ts_utc), count(*) from requests group by 1").fetchall(),
        "slo_status (30 d)": lambda: slo_status(con, slo),
        "alert_episodes (3 rules)": lambda: alert_episodes(con, slo),
        "daily_histograms": lambda: daily_histograms(con),
        "window_comparisons": lambda: window_comparisons(daily_histograms(con), cfg.drift),
    }
    results = {name: _median_s(fn, args.repeats) for name, fn in stages.items()}
    base = results["baseline: hourly count"]
    print(f"{args.rows:,} rows, median of {args.repeats}")
    for name, seconds in results.items():
        print(f"{name:28s} {seconds:8.3f} s  {seconds / base:6.1f}x baseline")


if __name__ == "__main__":
    main()
