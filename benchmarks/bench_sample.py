"""Speed and peak memory of the synthetic log generator (capplan/sample/), run on demand.

    .venv/bin/python benchmarks/bench_sample.py --rows 10_000_000 --days 10 --csv
    .venv/bin/python benchmarks/bench_sample.py --rows 20_000_000 --days 20 --phases write   # memory stays flat

Each phase runs in its own process so its peak RSS is its own:

* ``baseline``  — bare pyarrow: write the same number of rows (one generated day,
  repeated) to Parquet with the generator's writer settings. The floor any
  generator that writes Parquet pays.
* ``generate``  — draw all rows day by day, write nothing.
* ``write``     — ``write_sample`` to one Parquet file (generation overlapped with writing).
* ``write_csv`` — the same to ``.csv.zst`` (optional, ``--csv``).

The machine is shared and noisy, so figures are also given as ratios to the
baseline measured in the same run, and as CPU time per row (all threads), which other
processes disturb less than wall time; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

START = date(2026, 8, 3)


def _spec(rows: int, days: int):
    from capplan.sample import SampleSpec

    # Growth off and a whole number of weeks' shape ignored: rows ≈ requests_per_day × days.
    return SampleSpec(START, days, rows / days, seed=1, monthly_growth_fraction=0.0)


def _phase(name: str, rows: int, days: int, out_dir: Path) -> dict:
    from capplan.sample import generate_day, iter_days, write_sample
    from capplan.sample.write import _Sink

    spec = _spec(rows, days)
    began, cpu_began = time.perf_counter(), time.process_time()
    if name == "baseline":
        day = generate_day(spec, START).table
        # generation of the template day is not part of the baseline
        began, cpu_began = time.perf_counter(), time.process_time()
        sink, written = _Sink.open(out_dir / "baseline.parquet"), 0
        while written < rows:
            sink.write(day)
            written += day.num_rows
        sink.close(ok=True)
        produced = written
    elif name == "generate":
        produced = sum(chunk.table.num_rows for chunk in iter_days(spec))
    elif name == "write":
        produced = write_sample(spec, out_dir / "sample.parquet", overwrite=True).rows
    elif name == "write_csv":
        produced = write_sample(spec, out_dir / "sample.csv.zst", overwrite=True).rows
    else:
        raise ValueError(f"unknown phase {name!r}")
    seconds = time.perf_counter() - began
    cpu_seconds = time.process_time() - cpu_began  # all threads; less sensitive to other processes than wall time
    size = sum(p.stat().st_size for p in out_dir.glob("*") if p.is_file())
    return {"phase": name, "rows": produced, "seconds": seconds, "rows_per_s": produced / seconds,
            "cpu_us_per_row": cpu_seconds / produced * 1e6,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "bytes_per_row": size / produced if size else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000, help="Rows to generate (approximate).")
    parser.add_argument("--days", type=int, default=10, help="Days to spread them over.")
    parser.add_argument("--csv", action="store_true", help="Also time a .csv.zst output.")
    parser.add_argument("--phases", help="Comma-separated subset, e.g. 'baseline,write' (baseline is always run).")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--out-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(_phase(args.phase, args.rows, args.days, Path(args.out_dir))))
        return
    phases = ["baseline", "generate", "write"] + (["write_csv"] if args.csv else [])
    if args.phases:
        phases = ["baseline", *[p for p in args.phases.split(",") if p != "baseline"]]
    results = {}
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    for phase in phases:
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run([sys.executable, __file__, "--phase", phase, "--rows", str(args.rows),
                                   "--days", str(args.days), "--out-dir", tmp],
                                  capture_output=True, text=True, check=True)
        results[phase] = json.loads(proc.stdout.strip().splitlines()[-1])
        r = results[phase]
        ratio = r["seconds"] / results["baseline"]["seconds"] * results["baseline"]["rows"] / r["rows"]
        per_row = f"{r['bytes_per_row']:.1f} B/row" if r["bytes_per_row"] else ""
        print(f"{phase:10s} {r['rows']:>11,} rows {r['seconds']:7.2f} s {r['rows_per_s'] / 1e6:5.2f} Mrows/s "
              f"CPU {r['cpu_us_per_row']:4.2f} µs/row  peak RSS {r['peak_rss_mib']:5.0f} MiB  "
              f"time/row ×{ratio:4.2f} of baseline  {per_row}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
