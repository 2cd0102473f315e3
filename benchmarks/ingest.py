"""Benchmark ``capplan ingest`` against a bare DuckDB load of the same file.

Generates a deterministic request log of ``--rows`` rows in the ``--formats`` asked for (one
Parquet file, a CSV file, or a Hive folder of ``dt=YYYY-MM-DD`` day partitions of Parquet files),
then, each in a fresh process with a fresh database file, times and measures the
peak resident memory of:

- ``bare``: ``create table t as select * from read_parquet(...)`` / ``read_csv(...)``;
- ``floor`` (CSV only): :data:`FLOOR_LOAD` then :data:`FLOOR_DUPLICATES`, the least any validating
  text load does (see there);
- ``capplan``: :func:`capplan.ingest.load_file` with validation on (SQL rules +
  quarantine + ledger, pandera contract on a sample);
- ``capplan-contract-all``: the same with pandera over every loaded row (chunks);
- ``capplan-contract-off``: SQL rules only;
- ``capplan-before``: ``capplan`` with the code of ``--before DIR`` (an export of another commit's
  ``capplan/`` and ``sql/``, e.g. ``git archive HEAD~3 capplan sql | tar -x -C DIR``), to compare two
  versions in one run.

Peak memory is the child's own high-water mark (``VmHWM``): ``ru_maxrss`` of a child started
by ``subprocess`` also counts the parent's peak (this script's own file generation), which hid
the smaller loads' peaks before.

Prints a table of seconds, ratio to the ``bare`` run of the same format and round, peak RSS
and the 1-minute load average at the end of the run; with ``--repeat N`` the modes run
interleaved N times (bare, capplan, bare, capplan, ...) and a last line per format and mode
gives the medians. The machine is shared and noisy: compare ratios within one run, not
absolute times.

    .venv/bin/python benchmarks/ingest.py --rows 20000000 --rows 50000000 --repeat 3 --modes bare capplan

``--after-month`` (CSV) times the capplan modes on a database that already holds the month before
(the same rows 31 days earlier, other request ids, loaded untimed first): the load of the next
month, with its check against earlier files' ids.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb

MODES = ("bare", "floor", "capplan", "capplan-contract-all", "capplan-contract-off", "capplan-before")
#: ``floor``: a strict subset of what a validating text load must do, as plain DuckDB: read every
#: value as text (a typed read rejects or rounds values it cannot keep, and loses the raw text a
#: bad row is quarantined with), cast it (the cheapest casts, no rule), write the typed rows, and
#: find repeated request ids. No quarantine, row numbers, rules, content hash or ledger.
FLOOR_LOAD = """
    create table t as
    select
        cast(try_cast(ts_utc as timestamptz) as timestamp) as ts_utc,
        try_cast(input_tokens as integer) as input_tokens,
        try_cast(output_tokens as integer) as output_tokens,
        model,
        try_cast(status as smallint) as status,
        try_cast(ttft_ms as double) as ttft_ms,
        try_cast(latency_ms as double) as latency_ms,
        request_id,
        tenant,
        zone
    from read_csv(?, all_varchar = true)
"""
FLOOR_DUPLICATES = "select count(*) from (select request_id from t group by request_id having count(*) > 1)"
#: 30 days of traffic, 1 % of rows broken in the ways the quarantine rules catch
ROWS = """
    select
        strftime(timestamp '2026-01-01' + to_microseconds((i::hugeint * 2592000000000 // $rows)::bigint),
                 '%Y-%m-%dT%H:%M:%S.%fZ') as ts_utc,
        case when hash(i, $seed) % 100 = 0 then -1 else (hash(i, $seed, 1) % 4000)::int end as input_tokens,
        (hash(i, $seed, 2) % 800)::int as output_tokens,
        'model-' || (hash(i, $seed, 3) % 3) as model,
        case when hash(i, $seed, 4) % 50 = 0 then 503 else 200 end as status,
        (hash(i, $seed, 5) % 2000)::double as ttft_ms,
        (hash(i, $seed, 6) % 20000)::double as latency_ms,
        'req-' || i as request_id,
        'tenant-' || (i % 17) as tenant,
        'zone-' || (i % 3) as zone
    from range($rows) as t(i)
"""
# COPY's target cannot be a parameter: '{out}' is a path of ours, formatted in; values stay parameters
GENERATE = f"copy ({ROWS}) to '{{out}}' (format parquet)"
#: the same rows as one Parquet folder per UTC day (the ts_utc text starts with the date)
GENERATE_HIVE = f"copy (select *, ts_utc[1:10] as dt from ({ROWS})) to '{{out}}' (format parquet, partition_by (dt))"
FORMATS = ("parquet", "csv", "hive")


def generate(rows: int, workdir: Path, seed: int = 7, formats: tuple[str, ...] = ("parquet", "csv")) -> dict[str, Path]:
    """Write ``rows`` rows under ``workdir`` in each of ``formats`` (:data:`FORMATS`); existing outputs are reused.

    ``parquet``: one file; ``csv``: one file, written from the Parquet one; ``hive``: a folder of
    ``dt=YYYY-MM-DD/data_0.parquet`` day partitions. A folder is written under a temporary name and
    renamed when complete, so an interrupted run is not reused.
    """
    unknown = set(formats) - set(FORMATS)
    if unknown:
        raise ValueError(f"unknown formats {sorted(unknown)}; valid: {FORMATS}")
    out = {"parquet": workdir / f"requests-{rows}.parquet", "csv": workdir / f"requests-{rows}.csv",
           "hive": workdir / f"requests-{rows}-hive"}
    con = duckdb.connect()
    con.execute("set enable_progress_bar = false")
    params = {"rows": rows, "seed": seed}
    if {"parquet", "csv"} & set(formats) and not out["parquet"].exists():
        con.execute(GENERATE.format(out=out["parquet"]), params)
    if "csv" in formats and not out["csv"].exists():
        con.execute(f"copy (select * from read_parquet('{out['parquet']}')) to '{out['csv']}' (header)")
    if "hive" in formats and not out["hive"].exists():
        partial = out["hive"].with_name(out["hive"].name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        con.execute(GENERATE_HIVE.format(out=partial), params)
        partial.rename(out["hive"])
    con.close()
    return {f: out[f] for f in formats}


def month_before(path: Path) -> Path:
    """The rows of CSV ``path`` 31 days earlier and with other request ids (``prev-`` prefixed), written once
    beside it: the month loaded before ``path`` for ``--after-month``."""
    out = path.with_name(path.stem + "-month-before.csv")
    if not out.exists():
        partial = out.with_name(out.name + ".partial")
        con = duckdb.connect()
        con.execute("set enable_progress_bar = false")
        con.execute(f"""copy (select * replace ('prev-' || request_id as request_id,
                                 strftime(cast(ts_utc as timestamptz) - interval 31 day, '%Y-%m-%dT%H:%M:%S.%fZ')
                                     as ts_utc)
                       from read_csv(?, all_varchar = true)) to '{partial}' (header)""", [str(path)])
        con.close()
        partial.rename(out)
    return out


def child(mode: str, path: Path, db: Path, preload: Path | None = None) -> dict:
    """Run one load in this process; return seconds and peak RSS.

    ``preload`` (capplan modes only): a file loaded into the database first, untimed, so the timed
    load is the next file of a database that already holds one (see :func:`month_before`).
    """
    if preload is not None and mode not in ("bare", "floor"):
        _capplan_load(db, preload, "off")
    start = time.perf_counter()
    if mode == "bare":
        con = duckdb.connect(str(db))
        con.execute("set enable_progress_bar = false")
        reader = "read_parquet" if path.suffix == ".parquet" else "read_csv"
        con.execute(f"create table t as select * from {reader}(?)", [str(path)])
        rows = con.execute("select count(*) from t").fetchall()[0][0]
        con.close()
    elif mode == "floor":
        if path.suffix == ".parquet":
            raise ValueError("mode floor is the text load's floor: use --formats csv")
        con = duckdb.connect(str(db))
        con.execute("set enable_progress_bar = false")
        con.execute(FLOOR_LOAD, [str(path)])
        con.execute(FLOOR_DUPLICATES).fetchall()
        rows = con.execute("select count(*) from t").fetchall()[0][0]
        con.close()
    else:
        contract = {"capplan": "sample", "capplan-before": "sample", "capplan-contract-all": "all",
                    "capplan-contract-off": "off"}[mode]
        rows = _capplan_load(db, path, contract)
    seconds = time.perf_counter() - start
    return {"mode": mode, "seconds": seconds, "peak_rss_mib": peak_rss_mib(), "rows": rows}


def _capplan_load(db: Path, path: Path, contract: str) -> int:
    """:func:`capplan.ingest.load_file` of ``path`` into ``db`` (imports included); the rows read."""
    from capplan.config import IngestConfig, SourceConfig
    from capplan.db import connect
    from capplan.ingest import load_file

    con = connect(db)
    result = load_file(con, path, SourceConfig(name="bench"), IngestConfig(contract_check=contract))
    con.close()
    assert result.rows_read == result.rows_loaded + result.rows_quarantined
    return result.rows_read


def peak_rss_mib() -> float:
    """This process's peak resident memory [MiB]: ``VmHWM``, which, unlike ``ru_maxrss``, starts afresh at exec."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024  # kB
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB




def measure(mode: str, path: Path, workdir: Path, before: Path | None = None, preload: Path | None = None) -> dict:
    """Run :func:`child` in a fresh process with a fresh database (``capplan-before``: the code in ``before``)."""
    db = workdir / f"bench-{mode}.duckdb"
    for f in (db, db.with_suffix(".duckdb.wal")):
        f.unlink(missing_ok=True)
    env = None
    if mode == "capplan-before":
        if before is None:
            raise ValueError("mode capplan-before needs --before DIR")
        env = {**os.environ, "PYTHONPATH": str(before.resolve())}
    extra = ["--preload", str(preload)] if preload is not None else []
    out = subprocess.run([sys.executable, __file__, "--child", mode, str(path), str(db), *extra],
                         check=True, capture_output=True, text=True, env=env)
    db.unlink(missing_ok=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, action="append", help="rows to generate (repeatable)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/capplan-bench"))
    parser.add_argument("--formats", nargs="+", default=["parquet", "csv"], choices=["parquet", "csv"],
                        help="Formats generated and measured (run_all.py also asks for 'hive').")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--before", type=Path, help="capplan/ and sql/ of another version, for capplan-before")
    parser.add_argument("--repeat", type=int, default=1, help="interleaved rounds; medians when > 1")
    parser.add_argument("--after-month", action="store_true",
                        help="CSV only: capplan modes load the same rows a month earlier (other ids) first, "
                             "untimed, and time the file as the next month of that database (the earlier-file "
                             "duplicate check); bare and floor still load into an empty database")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "FILE", "DB"), help=argparse.SUPPRESS)
    parser.add_argument("--preload", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), Path(args.child[2]), args.preload)))
        return
    if args.after_month and args.formats != ["csv"]:
        parser.error("--after-month needs --formats csv")
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"{'rows':>11} {'format':8} {'mode':22} {'seconds':>8} {'x bare':>7} {'peak MiB':>9} {'load':>5}")
    for rows in args.rows or [2_000_000]:
        files = generate(rows, args.workdir, formats=tuple(args.formats))
        for fmt in args.formats:
            runs: dict[str, list[dict]] = {m: [] for m in args.modes}
            preload = month_before(files[fmt]) if args.after_month else None
            for _ in range(args.repeat):
                bare = None
                for mode in args.modes:
                    r = measure(mode, files[fmt], args.workdir, args.before, preload)
                    bare = r["seconds"] if mode == "bare" else bare
                    r["ratio"] = r["seconds"] / bare if bare else None
                    r["load"] = os.getloadavg()[0]
                    runs[mode].append(r)
                    _print_row(rows, fmt, mode, r)
            if args.repeat > 1:
                for mode, rs in runs.items():
                    ratios = [r["ratio"] for r in rs if r["ratio"] is not None]
                    _print_row(rows, fmt, f"{mode} (median)", {
                        "seconds": statistics.median(r["seconds"] for r in rs),
                        "ratio": statistics.median(ratios) if ratios else None,
                        "peak_rss_mib": statistics.median(r["peak_rss_mib"] for r in rs),
                        "load": statistics.median(r["load"] for r in rs)})


def _print_row(rows: int, fmt: str, mode: str, r: dict) -> None:
    ratio = f"{r['ratio']:7.2f}" if r["ratio"] is not None else "      -"
    print(f"{rows:>11,} {fmt:8} {mode:22} {r['seconds']:8.1f} {ratio} {r['peak_rss_mib']:9.0f} {r['load']:5.1f}",
          flush=True)


if __name__ == "__main__":
    main()
