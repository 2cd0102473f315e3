"""Benchmark the traffic profile against a bare DuckDB hourly ``group by`` on the same table.

Loads a generated month (``capplan.sample``, deterministic by seed) into a DuckDB file, one file_id
per day, holding the last day back. Then, on the same table, in ``--repeat`` interleaved rounds
(every figure once per round, so a load spike hits all of them alike), times:

- ``bare``: ``select date_trunc('hour', ts_utc), count(*) from requests group by 1`` (the baseline of
  the issue's goal: a full rebuild ≤ 1.5× this);
- ``bare_sums``: the same with per-model counts and the four sums;
- ``like_for_like``: one hand-written DuckDB query computing what the rollups hold (per hour and
  model: counts by status, sums, the busiest second, also of all models, and the four log-binned
  histograms), the floor of doing it all in SQL; no concurrency sweep;
- ``scan``: ``sql/int_profile_rows.sql`` streamed as Arrow batches and dropped: what the rollup reads;
- ``count``: the scan plus :class:`capplan.profile.counting.WindowRollup` counting (no tables written);
- ``refresh_full``: :func:`capplan.profile.refresh_rollups` with ``full=True``.

Each round's figures are divided by that round's ``bare``; the medians of seconds and of ratios are
printed. Then, as before: ``refresh_one_day`` (after inserting the held-back day, the incremental
refresh) against ``refresh_full_with_day``, and the readers over the rollups. With ``--memory``, the
peak RSS of a child process that runs only ``refresh_full``, and of ones that run only ``scan`` (the
same columns read; DuckDB keeps the blocks it read in its buffer pool) or only ``bare``.

    .venv/bin/python benchmarks/profile.py --requests-per-day 700000 --days 30 --repeat 3 --memory
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from capplan import sql  # noqa: E402
from capplan import profile  # noqa: E402
from capplan.profile import refresh  # noqa: E402
from capplan.db import connect  # noqa: E402
from capplan.ingest import ensure_tables  # noqa: E402
from capplan.sample import SampleSpec, iter_days  # noqa: E402

BARE = "select date_trunc('hour', ts_utc) as hour_utc, count(*) as requests from requests group by 1"
BARE_SUMS = """
select date_trunc('hour', ts_utc) as hour_utc, model, count(*), sum(input_tokens), sum(output_tokens),
       sum(ttft_ms), sum(latency_ms)
from requests group by all
"""
_BIN = "greatest(floor(ln(greatest({}, 0.5::double)) * $inv_ln_gamma::double), -1)::smallint"
LIKE_FOR_LIKE = f"""
with
source as (
    select epoch_us(ts_utc) // 3600000000 as hour_epoch, epoch_us(ts_utc) // 1000000 as second_epoch, model, status,
        input_tokens, output_tokens, ttft_ms, latency_ms
    from requests
),
totals as (
    select hour_epoch, model, count(*) as requests,
        count(*) filter (where status < 200 or status >= 300) as errors,
        count(*) filter (where status < 400 or status >= 500 or status = 429) as valid_events,
        count(*) filter (where status >= 200 and status < 300) as success_events,
        sum(input_tokens) as input_tokens_sum, sum(output_tokens) as output_tokens_sum,
        sum(ttft_ms) as ttft_ms_sum, count(ttft_ms) as ttft_count, sum(latency_ms) as latency_ms_sum,
        count(latency_ms) as latency_count
    from source group by all
),
per_second as (select second_epoch, model, count(*) as n from source group by all),
peak as (
    select second_epoch // 3600 as hour_epoch, model, max(n) as peak_second_requests from per_second group by all
    union all
    select hour_epoch, '__all__', max(n) from (
        select second_epoch // 3600 as hour_epoch, sum(n) as n from per_second group by second_epoch)
    group by all
),
histogram as (
    select hour_epoch, model, 'input_tokens' as metric, {_BIN.format('input_tokens')} as bin, count(*) as count
    from source group by all
    union all
    select hour_epoch, model, 'output_tokens', {_BIN.format('output_tokens')}, count(*) from source group by all
    union all
    select hour_epoch, model, 'ttft_ms', {_BIN.format('ttft_ms')}, count(*) from source
    where ttft_ms is not null group by all
    union all
    select hour_epoch, model, 'latency_ms', {_BIN.format('latency_ms')}, count(*) from source
    where latency_ms is not null group by all
),
final as (
    -- every histogram group is counted (the checksum), so none of the work is optimised away
    select totals.*, peak.peak_second_requests, (select sum(bin * count) from histogram) as histogram_checksum
    from totals left join peak using (hour_epoch, model)
)
select * from final
"""
FIGURES = ("bare", "bare_sums", "like_for_like", "scan", "count", "refresh_full")


def _seconds(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _load(db: Path, spec: SampleSpec) -> int:
    """Write the spec's days 1..n-1 into ``db`` (reused when it already holds them); rows loaded."""
    con = connect(db)
    ensure_tables(con)
    con.execute("create table if not exists bench_meta (spec varchar)")
    key = repr(spec)
    if con.execute("select count(*) from bench_meta where spec = ?", [key]).fetchall()[0][0] == 0:
        con.execute("delete from request_rows")
        con.execute("create or replace table held_back as select * from requests limit 0")
        for i, chunk in enumerate(iter_days(spec), start=1):
            con.register("chunk", chunk.table)
            target = "held_back" if i == spec.days else "request_rows"  # `requests` is a view of request_rows
            con.execute(f"insert into {target} by name select *, ? as file_id from chunk", [i])  # noqa: S608
            con.unregister("chunk")
            print(f"  generated day {i}/{spec.days}", file=sys.stderr, flush=True)
        con.execute("delete from bench_meta")
        con.execute("insert into bench_meta values (?)", [key])
    for table in (*profile.ROLLUP_TABLES, "profile_file_hours"):
        con.execute(f"drop table if exists {table}")  # noqa: S608
    con.execute("delete from request_rows where file_id = ?", [spec.days])
    rows = con.execute("select count(*) from requests").fetchall()[0][0]
    con.close()
    return rows


def _scan(con, count: bool) -> None:
    """The rollup's rows of the whole table streamed and dropped; or, with ``count``, counted window by window."""
    first, last = con.execute("select min(ts_utc), max(ts_utc) from requests").fetchall()[0]
    start, end = refresh._floor_hour(first), refresh._floor_hour(last) + refresh._HOUR
    refresh._use_source(con, "requests")
    if count:
        for _ in refresh._roll_up(con, start, end, lookback_us=0, in_flight=False):
            pass
        return
    models = [m for (m,) in con.execute("select distinct model from requests order by 1").fetchall()]
    params = {"start_utc": start, "end_utc": end, "lookback_us": 0, "models": models}
    for _ in con.sql(sql.load("int_profile_rows"), params=params).to_arrow_reader(1 << 19):
        pass


def _rounds(con, repeat: int) -> dict[str, list[float]]:
    """``repeat`` rounds of every figure in turn; seconds per figure and round."""
    params = {"inv_ln_gamma": 1 / math.log(profile.HISTOGRAM_GAMMA)}
    run = {
        "bare": lambda: con.sql(BARE).to_arrow_table(),
        "bare_sums": lambda: con.sql(BARE_SUMS).to_arrow_table(),
        "like_for_like": lambda: con.sql(LIKE_FOR_LIKE, params=params).to_arrow_table(),
        "scan": lambda: _scan(con, count=False),
        "count": lambda: _scan(con, count=True),
        "refresh_full": lambda: profile.refresh_rollups(con, full=True),
    }
    seconds: dict[str, list[float]] = {name: [] for name in FIGURES}
    for i in range(repeat):
        for name in FIGURES:
            seconds[name].append(_seconds(run[name]))
        print(f"  round {i + 1}/{repeat}: " + ", ".join(f"{n} {seconds[n][-1]:.2f} s" for n in FIGURES),
              file=sys.stderr, flush=True)
    return seconds


def _child_peak_rss_mib(db: Path, figure: str) -> float:
    """Peak RSS of a fresh process that opens ``db`` and runs one figure once. [MiB]"""
    out = subprocess.run([sys.executable, __file__, "--child", figure, "--db", str(db)],
                         check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def run(args: argparse.Namespace) -> dict[str, float]:
    spec = SampleSpec(start=date(2026, 1, 1), days=args.days, requests_per_day=args.requests_per_day, seed=args.seed)
    args.workdir.mkdir(parents=True, exist_ok=True)
    db = args.workdir / "profile-bench.duckdb"
    rows = _load(db, spec)
    con = connect(db)
    out: dict[str, float] = {"rows": rows, "load_1min": os.getloadavg()[0]}
    profile.refresh_rollups(con, full=True)  # warm: the first build creates the tables
    seconds = _rounds(con, args.repeat)
    for name in FIGURES:
        out[name] = statistics.median(seconds[name])
        out[f"{name}_ratio"] = statistics.median(s / b for s, b in zip(seconds[name], seconds["bare"], strict=True))
    out["hourly_traffic"] = _seconds(lambda: profile.hourly_traffic(con))
    out["token_distribution_day"] = _seconds(lambda: profile.token_distribution(con, "day"))
    out["profile_summary"] = _seconds(lambda: profile.profile_summary(con))

    one_day, full_with_day = [], []
    for _ in range(args.repeat):
        con.execute("delete from request_rows where file_id = ?", [spec.days])
        profile.refresh_rollups(con)
        con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select * from held_back")
        one_day.append(_seconds(lambda: profile.refresh_rollups(con)))
        full_with_day.append(_seconds(lambda: profile.refresh_rollups(con, full=True)))
    out["refresh_one_day"] = statistics.median(one_day)
    out["refresh_full_with_day"] = statistics.median(full_with_day)
    out["bare_after"] = _seconds(lambda: con.sql(BARE).to_arrow_table())
    con.execute("delete from request_rows where file_id = ?", [spec.days])
    profile.refresh_rollups(con)
    con.close()
    out["load_1min_end"] = os.getloadavg()[0]
    if args.memory:
        out["peak_rss_mb"] = _child_peak_rss_mib(db, "refresh_full")
        out["scan_peak_rss_mb"] = _child_peak_rss_mib(db, "scan")
        out["bare_peak_rss_mb"] = _child_peak_rss_mib(db, "bare")
    else:
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def child(figure: str, db: Path) -> None:
    """Run one figure in this fresh process and print its peak RSS [MiB] (``--memory``)."""
    con = connect(db)
    if figure == "refresh_full":
        profile.refresh_rollups(con, full=True)
    elif figure == "scan":
        _scan(con, count=False)
    else:
        con.sql(BARE).to_arrow_table()
    con.close()
    print(_peak_rss_mib())


def _peak_rss_mib() -> float:
    """This process's peak RSS [MiB]: ``VmHWM``, which starts afresh at exec (``ru_maxrss`` keeps the
    forking parent's peak on Linux, so a child would report its parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB -> MiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=30, help="Days generated (the last is held back). [days]")
    parser.add_argument("--requests-per-day", type=float, default=700_000, help="[requests/day]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="Interleaved rounds; medians are reported.")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/capplan-bench"))
    parser.add_argument("--memory", action="store_true", help="Peak RSS of refresh_full alone, in a child process.")
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    parser.add_argument("--child", choices=("refresh_full", "scan", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.db)
        return
    out = run(args)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"rows: {out['rows']:,}   load average {out['load_1min']:.1f} -> {out['load_1min_end']:.1f}   "
          f"bare hourly group by: {out['bare']:.3f} s (median of {args.repeat})")
    for name in FIGURES[1:]:
        print(f"{name:24s} {out[name]:8.3f} s   {out[f'{name}_ratio']:6.2f} x bare (median of per-round ratios)")
    for name in ("hourly_traffic", "token_distribution_day", "profile_summary"):
        print(f"{name:24s} {out[name]:8.3f} s   {out[name] / out['bare']:6.2f} x bare (one run)")
    print(f"{'one day / full rebuild':24s} {out['refresh_one_day'] / out['refresh_full_with_day']:8.3f}   "
          f"({out['refresh_one_day']:.2f} s / {out['refresh_full_with_day']:.2f} s)")
    if args.memory:
        print(f"peak RSS: refresh_full {out['peak_rss_mb']:.0f} MiB, scan {out['scan_peak_rss_mb']:.0f} MiB, "
              f"bare {out['bare_peak_rss_mb']:.0f} MiB (fresh processes)")


if __name__ == "__main__":
    main()
