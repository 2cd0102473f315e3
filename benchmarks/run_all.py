"""capplan's benchmark suite: every stage on generated data, one table, ratios measured in the same run.

    .venv/bin/python benchmarks/run_all.py --sizes 10M,50M,100M --workdir /tmp/capplan-bench
    .venv/bin/python benchmarks/run_all.py --quick          # 1M rows, a few minutes: does everything run?

Sections (each figure from a fresh process, so its peak memory is its own):

* ``ingest`` at every size: :func:`capplan.ingest.load_file` of one Parquet file against a bare DuckDB
  ``create table as select`` of the same file (``benchmarks/ingest.py``'s generator and runner).
* ``profile`` at every size: ``capplan profile --rebuild`` as a whole process against a floor scan of its 7
  columns, a hand-written DuckDB query and pandas, each a whole process (``benchmarks/profile.py --json``;
  a generated month, rows ≈ the size), and the one-day incremental refresh.
* ``partitioned`` at ``--partitioned-size``: a Hive folder of 30 ``dt=`` days (``benchmarks/ingest.py``'s
  generator, ``hive`` format), rolled up (a) single-process:
  every file ingested into one DuckDB, then the profile refreshed; (b) partition by partition in this
  process through the Prefect flow; (c) on a Dask LocalCluster of 2 workers (threads; DuckDB runs outside the GIL). The fact tables of
  (b) and (c) are compared with (a) for equality.
* ``plan``: ``capplan plan --config data/capplan.toml`` end to end on a fresh database, against an empty
  Prefect flow (``benchmarks/plan.py --repeat 1``).
* ``forecast``: ``benchmarks/forecast_accuracy.py``'s 2-year hourly series, ``forecasting.fit`` against
  MSTL + ETS on the same series.

The machine is shared and noisy: every row carries the ratio to its own baseline measured in the same
run; a yardstick (bare hourly ``group by`` over the smallest Parquet file) is measured before and after,
and the 1-minute load average at the start of each step is printed beside it. The steps run in the order
of :func:`run_order`, and ``--markdown`` is rewritten after each, so a run stopped early keeps its figures.
Peak memory is the peak of the summed RSS of the process and all its
children (Dask workers included), sampled every 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import ingest as bench_ingest  # noqa: E402  (benchmarks/ingest.py)

SUFFIX = {"K": 1_000, "M": 1_000_000, "G": 1_000_000_000}
PARTITIONED_DAYS = 30
PARTITIONED_MODES = ("single", "partitioned-none", "partitioned-dask")
YARDSTICK = "select date_trunc('hour', ts_utc::timestamp) as hour_utc, count(*) from read_parquet(?) group by 1"
FACT_ORDER = {"fct_traffic_hourly": "hour_utc, model", "fct_histogram_hourly": "hour_utc, model, metric, bin"}


def parse_size(text: str) -> int:
    """``"10M"`` → 10_000_000; plain integers pass through. [rows]"""
    text = text.strip().upper().replace("_", "")
    if text[-1:] in SUFFIX:
        return int(float(text[:-1]) * SUFFIX[text[-1]])
    return int(text)


class PeakRss:
    """Peak of the summed resident memory of a process tree, sampled on a thread. [MiB]"""

    def __init__(self, pid: int | None = None, every_s: float = 0.05) -> None:
        self.root, self.every_s, self.peak_mib = psutil.Process(pid), every_s, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            try:
                tree = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                return  # the measured process has exited
            for proc in tree:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    pass  # a worker that just exited
            self.peak_mib = max(self.peak_mib, total / 2**20)
            self._stop.wait(self.every_s)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def child_run(argv: list[str], env: dict | None = None) -> tuple[dict, float, float]:
    """Run ``argv`` (JSON on its last stdout line); return its result, wall seconds and tree peak RSS [MiB]."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, **(env or {})})
    with PeakRss(proc.pid) as peak:
        out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed ({proc.returncode}):\n{err[-3000:]}")
    return last_json(out), time.perf_counter() - started, peak.peak_mib


def last_json(text: str) -> dict:
    """The last JSON object in ``text`` (one line or indented), after any log lines; ``{}`` if none."""
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("{"):
            try:
                return json.loads("\n".join(lines[i:]))
            except json.JSONDecodeError:
                continue
    return {}


# --------------------------------------------------------------------------- data


def ingest_parquet(rows: int, workdir: Path) -> Path:
    """``benchmarks/ingest.py``'s generated log as one Parquet file (reused if present)."""
    return bench_ingest.generate(rows, workdir, formats=("parquet",))["parquet"]


def hive_folder(rows: int, workdir: Path) -> Path:
    """The same generated log as 30 ``dt=YYYY-MM-DD/`` day folders of Parquet (reused if present)."""
    return bench_ingest.generate(rows, workdir, formats=("hive",))["hive"]


def yardstick_s(parquet: Path, repeat: int = 3) -> float:
    """Median seconds of a bare hourly ``group by`` over ``parquet``: the machine's speed right now."""
    times = []
    with duckdb.connect() as con:
        con.execute("set enable_progress_bar = false")
        for _ in range(repeat):
            t0 = time.perf_counter()
            con.execute(YARDSTICK, [str(parquet)]).fetchall()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


# --------------------------------------------------------------------------- partitioned child


def partitioned_child(mode: str, root: Path, db: Path) -> dict:
    """One partitioned-section run in this process; prints nothing but its JSON result."""
    for f in (db, Path(f"{db}.wal")):
        f.unlink(missing_ok=True)
    from capplan import ingest, profile
    from capplan.config import CapplanConfig, ClusterConfig, DatabaseConfig, SourceConfig
    from capplan.db import connect

    source = SourceConfig(name="bench", paths=[str(root)])
    if mode == "single":
        started = time.perf_counter()
        files, _ = ingest.expand_paths([str(root / "dt=*" / "*.parquet")])
        with connect(db) as con:
            for f in files:
                ingest.load_file(con, f, source, CapplanConfig().ingest)
            profile.refresh_rollups(con)
        return {"seconds": time.perf_counter() - started, "startup_s": 0.0}
    from capplan.flows.partitioned import roll_up_partitions, run_partitioned_rollup

    runner = mode.removeprefix("partitioned-")
    cluster = ClusterConfig(task_runner=runner, n_workers=2, threads_per_worker=1, sources=[source])
    cfg = CapplanConfig(database=DatabaseConfig(path=db), cluster=cluster)
    t0 = time.perf_counter()
    # start Prefect's temporary server outside the timing: a flow with nothing to do
    roll_up_partitions(cfg.model_copy(update={"cluster": ClusterConfig()}))
    startup = time.perf_counter() - t0
    started = time.perf_counter()
    summary = run_partitioned_rollup(cfg)
    if summary.failed or summary.rows_read != summary.rows_rolled_up + summary.rows_quarantined:
        raise RuntimeError(f"partitioned run did not reconcile: {summary}")
    return {"seconds": time.perf_counter() - started, "startup_s": startup, "partitions": len(summary.rolled_up)}


def same_facts(a: Path, b: Path) -> bool:
    """Whether two databases hold identical fact tables (every column, every row)."""
    from capplan.db import connect

    tables = []
    for path in (a, b):
        with connect(path, read_only=True) as con:
            tables.append([con.sql(f"select * from {t} order by {o}").to_arrow_table()  # noqa: S608
                           for t, o in FACT_ORDER.items()])
    return all(x.equals(y) for x, y in zip(*tables))


# --------------------------------------------------------------------------- sections


def run_ingest(rows: int, workdir: Path) -> list[dict]:
    path = ingest_parquet(rows, workdir)
    out, bare = [], None
    for mode in ("bare", "capplan"):
        r = bench_ingest.measure(mode, path, workdir)  # a fresh process each; peak is its ru_maxrss
        bare = r["seconds"] if mode == "bare" else bare
        out.append({"section": "ingest", "rows": r["rows"], "what": "bare create table" if mode == "bare" else
                    "capplan load_file", "seconds": r["seconds"], "peak_mib": r["peak_rss_mib"],
                    "ratio": r["seconds"] / bare, "baseline": "bare create table", "target": None})
    return out


def run_profile(rows: int, workdir: Path) -> list[dict]:
    """``benchmarks/profile.py`` at ``rows``: one round of whole processes (floor scan, hand-written DuckDB
    query, pandas, ``capplan profile --rebuild``), each with its own peak memory; the incremental day."""
    days = PARTITIONED_DAYS + 1  # benchmarks/profile.py holds the last day back
    r, _, _ = child_run([sys.executable, str(REPO / "benchmarks" / "profile.py"), "--json", "--repeat", "1",
                         "--days", str(days), "--requests-per-day", str(rows / PARTITIONED_DAYS),
                         "--workdir", str(workdir / f"profile-{rows}")])
    out = [{"section": "profile", "rows": r["rows"], "what": what, "seconds": r[key], "peak_mib": r[f"{key}_peak_mib"],
            "ratio": r["capplan"] / r[key] if key != "capplan" else 1.0, "baseline": "capplan ÷ this",
            "target": target}
           for key, what, target in (("floor", "floor scan (7 columns)", 6.0),
                                     ("hand_written", "hand-written DuckDB query", 1.0),
                                     ("pandas", "pandas through Arrow", None),
                                     ("capplan", "capplan profile --rebuild", None))]
    return [*out, {"section": "profile", "rows": r["rows"], "what": "refresh one more day",
                   "seconds": r["refresh_one_day"], "peak_mib": None, "ratio": r["one_day_fraction"],
                   "baseline": "full rebuild (in-process)", "target": 0.1}]


def run_partitioned(rows: int, workdir: Path, repeat: int = 1) -> list[dict]:
    """The three modes, interleaved in ``repeat`` rounds; medians of seconds and of each round's ratio to single."""
    root = hive_folder(rows, workdir)
    n_rows = int(duckdb.execute("select sum(num_rows) from parquet_file_metadata(?)",
                                [str(root / "dt=*" / "*.parquet")]).fetchone()[0])
    env = {"PREFECT_HOME": str(workdir / "prefect-home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
           "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED": "false",
           "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING"}
    dbs = {mode: workdir / f"partitioned-{mode}.duckdb" for mode in PARTITIONED_MODES}
    seconds: dict[str, list[float]] = {mode: [] for mode in PARTITIONED_MODES}
    peaks: dict[str, list[float]] = {mode: [] for mode in PARTITIONED_MODES}
    same: dict[str, bool] = {}
    for _ in range(repeat):
        for mode in PARTITIONED_MODES:  # interleaved: each round sees the same load for all three
            r, _, peak = child_run([sys.executable, __file__, "--child", mode, str(root), str(dbs[mode])], env)
            seconds[mode].append(r["seconds"])
            peaks[mode].append(peak)
            if mode != "single":
                same[mode] = same.get(mode, True) and same_facts(dbs["single"], dbs[mode])
    out = []
    for mode in PARTITIONED_MODES:
        what = {"single": "single process: ingest + profile", "partitioned-none": "partitions, in-process flow",
                "partitioned-dask": "partitions, Dask 2 workers"}[mode]
        what += "" if mode == "single" else f" (identical facts: {same[mode]})"
        what += f", median of {repeat}" if repeat > 1 else ""
        ratios = [t / s for t, s in zip(seconds[mode], seconds["single"])]
        out.append({"section": "partitioned", "rows": n_rows, "what": what, "seconds": statistics.median(seconds[mode]),
                    "peak_mib": max(peaks[mode]), "ratio": statistics.median(ratios), "baseline": "single process",
                    "target": None if mode == "single" else 1.3})
    for path in dbs.values():
        for f in (path, Path(f"{path}.wal")):
            f.unlink(missing_ok=True)
    return out


def run_plan(workdir: Path) -> list[dict]:
    env = {"PREFECT_HOME": str(workdir / "prefect-home"), "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180"}
    r, _, peak = child_run([sys.executable, str(REPO / "benchmarks" / "plan.py"), "--repeat", "1"], env)
    return [{"section": "plan", "rows": None, "what": "empty Prefect flow (process)", "seconds": r["empty_flow_wall_s"],
             "peak_mib": None, "ratio": 1.0, "baseline": "empty Prefect flow", "target": None},
            {"section": "plan", "rows": None, "what": "capplan plan, bundled sample", "seconds": r["plan_wall_s"],
             "peak_mib": peak, "ratio": r["plan_over_empty_flow"], "baseline": "empty Prefect flow", "target": None}]


def run_forecast() -> list[dict]:
    from forecast_accuracy import long_series_timing  # benchmarks/forecast_accuracy.py

    ours, baseline = long_series_timing()
    return [{"section": "forecast", "rows": 17_520, "what": "forecasting.fit, 2-year hourly", "seconds": ours,
             "peak_mib": None, "ratio": ours / baseline, "baseline": "MSTL + ETS", "target": None}]


# --------------------------------------------------------------------------- table


def _cell(value, spec: str) -> str:
    return "" if value is None else format(value, spec)


def table(rows: list[dict], yard_s: float) -> str:
    """A Markdown table of the results; a row with a target says whether its ratio meets it."""
    lines = ["| section | rows | what | seconds | rows/s | peak MiB | ratio | to | target | × yardstick | load |",
             "|---|---:|---|---:|---:|---:|---:|---|---|---:|---:|"]
    for r in rows:
        rate = r["rows"] / r["seconds"] if r.get("rows") and r["seconds"] else None
        target = "" if r.get("target") is None else f"≤ {r['target']} {'ok' if r['ratio'] <= r['target'] else 'MISSED'}"
        lines.append(" | ".join(["", r["section"], _cell(r.get("rows"), ","), r["what"], _cell(r["seconds"], ".2f"),
                                 _cell(rate, ",.0f"), _cell(r.get("peak_mib"), ",.0f"), _cell(r.get("ratio"), ".2f"),
                                 r.get("baseline", ""), target, _cell(r["seconds"] / yard_s, ",.1f"),
                                 _cell(r.get("load"), ".1f"), ""]).strip())
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10M,50M,100M", help="Rows for ingest and profile, e.g. 10M,50M. [rows]")
    parser.add_argument("--partitioned-size", default=None, help="Rows for the partitioned section (default: "
                                                                 "the smallest size). [rows]")
    parser.add_argument("--sections", default="ingest,profile,partitioned,plan,forecast")
    parser.add_argument("--partitioned-repeat", type=int, default=1,
                        help="Interleaved rounds of the partitioned section's three modes; medians reported.")
    parser.add_argument("--quick", action="store_true", help="1M rows everywhere: checks that everything runs.")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/capplan-bench"))
    parser.add_argument("--markdown", type=Path, help="Also write the table to this file.")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "ROOT", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(partitioned_child(args.child[0], Path(args.child[1]), Path(args.child[2]))))
        return
    sizes = [1_000_000] if args.quick else sorted(parse_size(s) for s in args.sizes.split(","))
    part_size = parse_size(args.partitioned_size) if args.partitioned_size else sizes[0]
    sections = args.sections.split(",")
    args.workdir.mkdir(parents=True, exist_ok=True)
    yard_file = ingest_parquet(sizes[0], args.workdir)
    before = yardstick_s(yard_file)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; yardstick {before:.3f} s", flush=True)
    results: list[dict] = []
    steps = run_order(sizes, part_size, sections, args.workdir, args.partitioned_repeat)
    for i, (name, run) in enumerate(steps, start=1):
        load = os.getloadavg()[0]
        rows = run()
        results += [{**r, "load": load} for r in rows]
        print(f"  {name} done at {time.strftime('%H:%M:%S', time.gmtime())} UTC: {json.dumps(rows)}", flush=True)
        if args.markdown and i < len(steps):  # a run stopped early keeps what it measured
            args.markdown.write_text(f"partial: {i} of {len(steps)} steps; yardstick {before:.3f} s before\n\n"
                                     + table(results, before) + "\n")
    after = yardstick_s(yard_file)
    yard = statistics.mean([before, after])
    text = (f"yardstick (bare hourly group by over {sizes[0]:,} Parquet rows): {before:.3f} s before, {after:.3f} s "
            f"after; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n\n" + table(results, yard))
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")


def run_order(sizes: list[int], part_size: int, sections: list[str], workdir: Path,
              partitioned_repeat: int = 1) -> list[tuple[str, Callable]]:
    """The steps in run order: the smallest size's ingest and profile, the partitioned, plan and forecast
    sections, then the profile at each larger size (its flat memory is a target), then the ingest at each
    larger size (no target, and the longest steps). A run stopped early has measured every section once."""
    first, *larger = sizes
    steps = [(f"ingest {first:,}", "ingest", lambda: run_ingest(first, workdir)),
             (f"profile {first:,}", "profile", lambda: run_profile(first, workdir)),
             ("partitioned", "partitioned", lambda: run_partitioned(part_size, workdir, partitioned_repeat)),
             ("plan", "plan", lambda: run_plan(workdir)), ("forecast", "forecast", run_forecast)]
    steps += [(f"profile {size:,}", "profile", lambda size=size: run_profile(size, workdir)) for size in larger]
    steps += [(f"ingest {size:,}", "ingest", lambda size=size: run_ingest(size, workdir)) for size in larger]
    return [(label, run) for label, section, run in steps if section in sections]


if __name__ == "__main__":
    main()
