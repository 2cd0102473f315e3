"""Benchmark ``capplan profile --rebuild`` against what a capable user would run instead (issue 24).

Loads a generated month (``capplan.sample``, deterministic by seed; ``--models N`` renames the models
to N distinct names, for the scaling with models) into a DuckDB file, one file_id per day, holding the
last day back. Then, in ``--repeat`` interleaved rounds, times each of these as a **whole process**
(a fresh Python, its imports included; wall time and peak RSS from ``wait4``):

- ``floor``: a scan of the 7 columns the profile needs with trivial sums (the floor of reading the data);
- ``hand_written``: one hand-written DuckDB query, per UTC hour × model: count, errors, token sums,
  exact p50/p90/p99 of input and output tokens (``quantile_cont``), the busiest second;
- ``pandas``: the same figures but the busiest second, pandas through Arrow;
- ``capplan``: ``capplan profile --db FILE --rebuild --json``: every roll-up rebuilt from the raw rows
  (counts, sums, four histograms, busiest second, in-flight sweep, ``__all__``), then the summary.

Each round's capplan time is divided by each variant's time in the same round; medians of seconds and
of ratios are printed, in wall time and in CPU time (user + sys of the process and its threads, from
``wait4``): on a shared machine wall time follows the load, CPU time much less. Then, in this process, ``--repeat`` rounds of the incremental refresh after the
held-back day is inserted against a full rebuild with it (the median of per-round fractions, in wall and in CPU time).

    .venv/bin/python benchmarks/profile.py --requests-per-day 350000 --days 30 --repeat 3

With ``--against-models N`` (issue 20, item 11) it times only ``capplan`` on two databases of the same rows,
the sample's 3 models and N models, interleaved round by round, and prints each one's median seconds and
peak RSS and the median of the per-round ratios (N models ÷ 3 models), in wall and in CPU time:

    .venv/bin/python benchmarks/profile.py --requests-per-day 700000 --days 30 --against-models 1000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

FLOOR = """
select count(*), sum(epoch_us(ts_utc)), sum(hash(model)), sum(status), sum(input_tokens), sum(output_tokens),
       sum(ttft_ms), sum(latency_ms)
from requests
"""
HAND_WRITTEN = """
with
per_second as (
    select date_trunc('second', ts_utc) as second_utc, model, count(*) as arrivals from requests group by all
),
busiest as (
    select date_trunc('hour', second_utc) as hour_utc, model, max(arrivals) as busiest_second
    from per_second group by all
),
hourly as (
    select date_trunc('hour', ts_utc) as hour_utc, model, count(*) as requests,
        count(*) filter (where status < 200 or status >= 300) as errors,
        sum(input_tokens) as input_tokens_sum, sum(output_tokens) as output_tokens_sum,
        quantile_cont(input_tokens, [0.5, 0.9, 0.99]) as input_tokens_p50_p90_p99,
        quantile_cont(output_tokens, [0.5, 0.9, 0.99]) as output_tokens_p50_p90_p99
    from requests group by all
)
select * from hourly join busiest using (hour_utc, model)
"""
PANDAS_COLUMNS = "select ts_utc, model, status, input_tokens, output_tokens, ttft_ms, latency_ms from requests"
VARIANTS = ("floor", "hand_written", "pandas", "capplan")
LABELS = {"floor": "floor scan (7 columns)", "hand_written": "hand-written DuckDB query",
          "pandas": "pandas through Arrow", "capplan": "capplan profile --rebuild"}


# --------------------------------------------------------------------------- the variants, each a fresh process


def child(variant: str, db: Path) -> None:
    """Run one variant in this fresh process (only what it imports: DuckDB, or DuckDB and pandas)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    con.execute("set enable_progress_bar = false")
    if variant == "floor":
        con.sql(FLOOR).fetchall()
    elif variant == "hand_written":
        con.sql(HAND_WRITTEN).to_arrow_table()
    else:
        frame = con.sql(PANDAS_COLUMNS).to_arrow_table().to_pandas()
        frame["hour_utc"] = frame["ts_utc"].dt.floor("h")
        frame["error"] = ~frame["status"].between(200, 299)
        g = frame.groupby(["hour_utc", "model"], observed=True)
        g.agg(requests=("status", "size"), errors=("error", "sum"), input_tokens_sum=("input_tokens", "sum"),
              output_tokens_sum=("output_tokens", "sum"))
        g[["input_tokens", "output_tokens"]].quantile([0.5, 0.9, 0.99])  # linear: quantile_cont
    con.close()


# every child writes its peak RSS at exit: VmHWM starts afresh at exec, while ru_maxrss keeps the forking
# parent's peak on Linux (so a child would report this process's)
_PEAK_AT_EXIT = """
import atexit, os
def _write_peak():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            open(os.environ['CAPPLAN_BENCH_PEAK'], 'w').write(line.split()[1])  # [KiB]
atexit.register(_write_peak)
"""


def _argv(variant: str, db: Path) -> list[str]:
    if variant == "capplan":  # the console script's entry point, in this interpreter
        code, args = "from capplan.cli import main; main()", ["profile", "--db", str(db), "--rebuild", "--json"]
    else:
        code, args = f"import runpy; runpy.run_path({str(Path(__file__))!r}, run_name='__main__')", [
            "--child", variant, "--db", str(db)]
    return [sys.executable, "-c", _PEAK_AT_EXIT + code, *args]


def _whole_process(argv: list[str]) -> tuple[float, float, float]:
    """Wall seconds, peak RSS [MiB] and CPU seconds (user + sys, every thread) of one fresh process."""
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as peak:
        started = time.perf_counter()
        child_process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO,
                                         env={**os.environ, "CAPPLAN_BENCH_PEAK": peak.name})
        _, status, usage = os.wait4(child_process.pid, 0)  # the child's own resource use, as it exits
        seconds = time.perf_counter() - started
        returncode = os.waitstatus_to_exitcode(status)
        child_process.returncode = returncode  # reaped above: Popen must not wait for it again
        if returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(argv)} failed ({returncode}):\n{err.read().decode()[-3000:]}")
        return seconds, int(peak.read()) / 1024, usage.ru_utime + usage.ru_stime  # KiB -> MiB


# --------------------------------------------------------------------------- data and rounds


def _load(db: Path, spec, models: int | None) -> int:
    """Write the spec's days 1..n-1 into ``db`` (reused when it already holds them); rows loaded.

    With ``models``, every row's model is renamed to one of ``models`` names by a hash of its row.
    """
    from capplan import profile
    from capplan.db import connect
    from capplan.ingest import ensure_tables
    from capplan.sample import iter_days

    con = connect(db)
    ensure_tables(con)
    con.execute("create table if not exists bench_meta (spec varchar)")
    key = repr((spec, models))
    if con.execute("select count(*) from bench_meta where spec = ?", [key]).fetchall()[0][0] == 0:
        con.execute("delete from request_rows")
        con.execute("create or replace table held_back as select * from requests limit 0")
        for i, chunk in enumerate(iter_days(spec), start=1):
            con.register("chunk", chunk.table)
            target = "held_back" if i == spec.days else "request_rows"  # `requests` is a view of request_rows
            con.execute(f"insert into {target} by name select *, ? as file_id from chunk", [i])  # noqa: S608
            con.unregister("chunk")
            print(f"  generated day {i}/{spec.days}", file=sys.stderr, flush=True)
        if models:
            for table in ("request_rows", "held_back"):
                con.execute(f"update {table} set model = 'm' || (hash(ts_utc, input_tokens) % ?)::varchar",  # noqa: S608
                            [models])
        con.execute("delete from bench_meta")
        con.execute("insert into bench_meta values (?)", [key])
    profile.ensure_tables(con)  # a database of an earlier capplan: its histogram table becomes the view
    con.execute("drop view if exists fct_histogram_hourly")
    for table in ("fct_traffic_hourly", "fct_histogram_hourly_bins", "fct_concurrency_hourly", "profile_file_hours"):
        con.execute(f"drop table if exists {table}")  # noqa: S608
    con.execute("delete from request_rows where file_id = ?", [spec.days])
    profile.refresh_rollups(con, full=True)
    rows = con.execute("select count(*) from requests").fetchall()[0][0]
    con.close()
    return rows


def _rounds(db: Path, repeat: int) -> dict[str, list[tuple[float, float, float]]]:
    """``repeat`` rounds of every variant in turn, each a fresh process: (seconds, peak MiB, CPU seconds) per round."""
    got: dict[str, list[tuple[float, float, float]]] = {v: [] for v in VARIANTS}
    for i in range(repeat):
        for variant in VARIANTS:
            got[variant].append(_whole_process(_argv(variant, db)))
        print(f"  round {i + 1}/{repeat}: " + ", ".join(f"{v} {got[v][-1][0]:.2f} s" for v in VARIANTS),
              file=sys.stderr, flush=True)
    return got


def _incremental(db: Path, spec, repeat: int) -> dict[str, float]:
    """The refresh after one more day against a full rebuild with it, ``repeat`` rounds in this process: median
    seconds of each, and the medians of their per-round ratios in wall time and in CPU time (every thread of the
    process: the steadier of the two on a shared machine)."""
    from capplan import profile
    from capplan.db import connect

    con = connect(db)
    wall: dict[str, list[float]] = {"one_day": [], "full": []}
    cpu: dict[str, list[float]] = {"one_day": [], "full": []}

    def timed(name: str, full: bool) -> None:
        w0, c0 = time.perf_counter(), time.process_time()
        profile.refresh_rollups(con, full=full)
        wall[name].append(time.perf_counter() - w0)
        cpu[name].append(time.process_time() - c0)

    for _ in range(repeat):
        con.execute("delete from request_rows where file_id = ?", [spec.days])
        profile.refresh_rollups(con)
        con.execute("insert into request_rows by name select * from held_back")
        timed("one_day", full=False)
        timed("full", full=True)
    con.execute("delete from request_rows where file_id = ?", [spec.days])
    profile.refresh_rollups(con)
    con.close()
    return {"refresh_one_day": statistics.median(wall["one_day"]), "refresh_full_with_day": statistics.median(wall["full"]),
            "one_day_fraction": statistics.median(a / b for a, b in zip(wall["one_day"], wall["full"], strict=True)),
            "refresh_one_day_cpu": statistics.median(cpu["one_day"]),
            "refresh_full_with_day_cpu": statistics.median(cpu["full"]),
            "one_day_fraction_cpu": statistics.median(a / b for a, b in zip(cpu["one_day"], cpu["full"], strict=True))}


def run_models(args: argparse.Namespace) -> dict[str, float]:
    """``capplan profile --rebuild`` on the 3-model and the ``--against-models`` databases, interleaved."""
    sys.path.insert(0, str(REPO))
    from capplan.sample import SampleSpec

    spec = SampleSpec(start=date(2026, 1, 1), days=args.days, requests_per_day=args.requests_per_day, seed=args.seed)
    args.workdir.mkdir(parents=True, exist_ok=True)
    dbs = {"few": args.workdir / "profile-bench.duckdb",
           "many": args.workdir / f"profile-bench-{args.against_models}.duckdb"}
    out: dict[str, float] = {"rows": _load(dbs["few"], spec, None), "models": args.against_models}
    _load(dbs["many"], spec, args.against_models)
    out["load_1min"] = os.getloadavg()[0]
    got: dict[str, list[tuple[float, float, float]]] = {"few": [], "many": []}
    for i in range(args.repeat):
        for name, db in dbs.items():
            got[name].append(_whole_process(_argv("capplan", db)))
        print(f"  round {i + 1}/{args.repeat}: 3 models {got['few'][-1][0]:.2f} s, {args.against_models} models "
              f"{got['many'][-1][0]:.2f} s", file=sys.stderr, flush=True)
    for name in dbs:
        out[f"{name}_seconds"] = statistics.median(s for s, _, _ in got[name])
        out[f"{name}_peak_mib"] = max(m for _, m, _ in got[name])
    pairs = list(zip(got["many"], got["few"], strict=True))
    out["many_over_few"] = statistics.median(m / f for (m, _, _), (f, _, _) in pairs)
    out["many_over_few_cpu"] = statistics.median(m / f for (_, _, m), (_, _, f) in pairs)
    out["load_1min_end"] = os.getloadavg()[0]
    return out


def run(args: argparse.Namespace) -> dict[str, float]:
    sys.path.insert(0, str(REPO))
    from capplan.sample import SampleSpec

    spec = SampleSpec(start=date(2026, 1, 1), days=args.days, requests_per_day=args.requests_per_day, seed=args.seed)
    args.workdir.mkdir(parents=True, exist_ok=True)
    db = args.workdir / (f"profile-bench-{args.models}.duckdb" if args.models else "profile-bench.duckdb")
    out: dict[str, float] = {"rows": _load(db, spec, args.models), "models": args.models or 3,
                             "load_1min": os.getloadavg()[0]}
    got = _rounds(db, args.repeat)
    for variant in VARIANTS:
        out[variant] = statistics.median(s for s, _, _ in got[variant])
        out[f"{variant}_peak_mib"] = max(m for _, m, _ in got[variant])
        out[f"{variant}_cpu"] = statistics.median(c for _, _, c in got[variant])
        out[f"capplan_over_{variant}"] = statistics.median(
            c / s for (c, _, _), (s, _, _) in zip(got["capplan"], got[variant], strict=True))
        out[f"capplan_cpu_over_{variant}"] = statistics.median(
            c / s for (_, _, c), (_, _, s) in zip(got["capplan"], got[variant], strict=True))
    out |= _incremental(db, spec, args.repeat)
    out["load_1min_end"] = os.getloadavg()[0]
    return out


def print_table(out: dict[str, float], repeat: int) -> None:
    print(f"rows: {out['rows']:,}   models: {out['models']:,}   load average {out['load_1min']:.1f} -> "
          f"{out['load_1min_end']:.1f}   whole processes, medians of {repeat} interleaved rounds")
    print(f"{'variant':28s} {'seconds':>8s} {'peak MiB':>9s} {'capplan ÷ variant':>18s} {'CPU s':>7s} "
          f"{'CPU ratio':>9s}")
    for v in VARIANTS:
        print(f"{LABELS[v]:28s} {out[v]:8.2f} {out[f'{v}_peak_mib']:9.0f} {out[f'capplan_over_{v}']:18.2f} "
              f"{out[f'{v}_cpu']:7.2f} {out[f'capplan_cpu_over_{v}']:9.2f}")
    print(f"{'one day / full rebuild':28s} {out['one_day_fraction']:8.3f}   "
          f"({out['refresh_one_day']:.2f} s / {out['refresh_full_with_day']:.2f} s, in-process refresh_rollups); "
          f"CPU {out['one_day_fraction_cpu']:.3f} ({out['refresh_one_day_cpu']:.2f} s / "
          f"{out['refresh_full_with_day_cpu']:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=30, help="Days generated (the last is held back). [days]")
    parser.add_argument("--requests-per-day", type=float, default=700_000, help="[requests/day]")
    parser.add_argument("--models", type=int, help="Rename the rows' models to this many distinct names. [count]")
    parser.add_argument("--against-models", type=int,
                        help="Time capplan alone on 3 models against this many (same rows). [count]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="Interleaved rounds; medians are reported.")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/capplan-bench"))
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    parser.add_argument("--child", choices=VARIANTS[:-1], help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.db)
        return
    out = run_models(args) if args.against_models else run(args)
    if args.json:
        print(json.dumps(out, indent=2))
    elif args.against_models:
        print(f"rows: {out['rows']:,}   load average {out['load_1min']:.1f} -> {out['load_1min_end']:.1f}   "
              f"capplan profile --rebuild, whole processes, medians of {args.repeat} interleaved rounds")
        print(f"3 models {out['few_seconds']:.2f} s ({out['few_peak_mib']:.0f} MiB), {out['models']:,} models "
              f"{out['many_seconds']:.2f} s ({out['many_peak_mib']:.0f} MiB): {out['many_over_few']:.2f}x "
              f"(CPU {out['many_over_few_cpu']:.2f}x)")
    else:
        print_table(out, args.repeat)


if __name__ == "__main__":
    main()
