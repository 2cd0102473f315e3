"""Benchmark the traffic profile against a bare DuckDB hourly ``group by`` on the same table.

Loads a generated month (``capplan.sample``, deterministic by seed) into a DuckDB file, one file_id
per day, holding the last day back. Then, in one process and on the same table, times:

- ``bare``: ``select date_trunc('hour', ts_utc), count(*) from requests group by 1`` (the baseline);
- ``bare_sums``: the same with per-model counts and the four sums (what an hourly rollup must read);
- ``rollup_traffic`` / ``rollup_histogram``: each rollup query alone; ``rollup_concurrency``: the
  in-flight spans query plus the numpy sweep;
- ``refresh_full``: :func:`capplan.profile.refresh_rollups` with ``full=True`` (all three rollups);
- ``refresh_one_day``: after inserting the held-back day, the incremental refresh;
- ``hourly_traffic``, ``token_distribution_day``, ``profile_summary``: readers over the rollups.

Each figure is the median of ``--repeat`` runs, printed with its ratio to ``bare`` measured in the
same run (the machine is shared and noisy: compare ratios, not seconds), plus
``refresh_one_day / refresh_full``. Goals: profile ≤ 1.5× bare, one-day update ≤ 10 % of a full rebuild.

    .venv/bin/python benchmarks/profile.py --requests-per-day 700000 --days 30 --workdir /tmp/capplan-bench
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import sys
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sql  # noqa: E402
from capplan import profile  # noqa: E402
from capplan.db import connect  # noqa: E402
from capplan.sample import SampleSpec, iter_days  # noqa: E402

BARE = "select date_trunc('hour', ts_utc) as hour_utc, count(*) as requests from requests group by 1"
BARE_SUMS = """
select date_trunc('hour', ts_utc) as hour_utc, model, count(*), sum(input_tokens), sum(output_tokens),
       sum(ttft_ms), sum(latency_ms)
from requests group by all
"""


def _median_s(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _load(db: Path, spec: SampleSpec) -> int:
    """Write the spec's days 1..n-1 into ``db`` (reused when it already holds them); rows loaded."""
    con = connect(db)
    con.execute(sql.load("ddl_requests"))
    con.execute("create table if not exists bench_meta (spec varchar)")
    key = repr(spec)
    if con.execute("select count(*) from bench_meta where spec = ?", [key]).fetchall()[0][0] == 0:
        con.execute("delete from requests")
        con.execute("create or replace table held_back as select * from requests limit 0")
        for i, chunk in enumerate(iter_days(spec), start=1):
            con.register("chunk", chunk.table)
            target = "held_back" if i == spec.days else "requests"
            con.execute(f"insert into {target} by name select *, ? as file_id from chunk", [i])  # noqa: S608
            con.unregister("chunk")
            print(f"  generated day {i}/{spec.days}", file=sys.stderr, flush=True)
        con.execute("delete from bench_meta")
        con.execute("insert into bench_meta values (?)", [key])
    for table in (*profile.ROLLUP_TABLES, "profile_file_hours"):
        con.execute(f"drop table if exists {table}")  # noqa: S608
    con.execute("delete from requests where file_id = ?", [spec.days])
    rows = con.execute("select count(*) from requests").fetchall()[0][0]
    con.close()
    return rows


def run(args: argparse.Namespace) -> dict[str, float]:
    spec = SampleSpec(start=date(2026, 1, 1), days=args.days, requests_per_day=args.requests_per_day, seed=args.seed)
    args.workdir.mkdir(parents=True, exist_ok=True)
    db = args.workdir / "profile-bench.duckdb"
    rows = _load(db, spec)
    con = connect(db)
    r = args.repeat
    out: dict[str, float] = {"rows": rows}
    out["bare"] = _median_s(lambda: con.execute(BARE).fetchall(), r)
    out["bare_sums"] = _median_s(lambda: con.execute(BARE_SUMS).fetchall(), r)
    profile._use_source(con, "requests")
    everything = {"start_utc": datetime(1, 1, 1), "end_utc": datetime(9999, 1, 1)}
    lookback_us = math.ceil(con.execute("select max(latency_ms) from requests").fetchall()[0][0] * 1000)
    for name, extra in (("traffic", {}), ("histogram", {"inv_ln_gamma": 1 / math.log(profile.HISTOGRAM_GAMMA)})):
        query = sql.load(f"int_profile_{name}")
        out[f"rollup_{name}"] = _median_s(lambda q=query, e=extra: con.execute(q, everything | e).fetchall(), r)
    first, last = con.execute("select date_trunc('hour', min(ts_utc)), date_trunc('hour', max(ts_utc)) from requests").fetchall()[0]

    def concurrency() -> None:
        spans = con.sql(sql.load("int_profile_inflight_spans"), params=everything | {"lookback_us": lookback_us})
        profile._concurrency_frame(spans.to_arrow_table(), first, last + timedelta(hours=1))

    out["rollup_concurrency"] = _median_s(concurrency, r)
    out["refresh_full"] = _median_s(lambda: profile.refresh_rollups(con, full=True), r)
    out["hourly_traffic"] = _median_s(lambda: profile.hourly_traffic(con), r)
    out["token_distribution_day"] = _median_s(lambda: profile.token_distribution(con, "day"), r)
    out["profile_summary"] = _median_s(lambda: profile.profile_summary(con), r)

    def one_day() -> None:
        con.execute("delete from requests where file_id = ?", [spec.days])
        profile.refresh_rollups(con)
        con.execute("insert into requests select * from held_back")
        t0 = time.perf_counter()
        profile.refresh_rollups(con)
        one_day.seconds.append(time.perf_counter() - t0)

    one_day.seconds = []
    for _ in range(r):
        one_day()
    out["refresh_one_day"] = statistics.median(one_day.seconds)
    out["refresh_full_with_day"] = _median_s(lambda: profile.refresh_rollups(con, full=True), r)
    out["bare_after"] = _median_s(lambda: con.execute(BARE).fetchall(), r)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    con.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=30, help="Days generated (the last is held back). [days]")
    parser.add_argument("--requests-per-day", type=float, default=700_000, help="[requests/day]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="Runs per figure; the median is reported.")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/capplan-bench"))
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args()
    out = run(args)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    base = statistics.mean([out["bare"], out["bare_after"]])  # before and after: the load drifts
    print(f"rows: {out['rows']:,}   bare hourly group by: {base:.3f} s   peak RSS {out['peak_rss_mb']:.0f} MB")
    for name in ("bare_sums", "rollup_traffic", "rollup_histogram", "rollup_concurrency", "refresh_full",
                 "refresh_full_with_day", "refresh_one_day", "hourly_traffic", "token_distribution_day",
                 "profile_summary"):
        print(f"{name:24s} {out[name]:8.3f} s   {out[name] / base:6.2f} x bare")
    print(f"{'one day / full rebuild':24s} {out['refresh_one_day'] / out['refresh_full_with_day']:8.3f}")


if __name__ == "__main__":
    main()
