"""Whole-process start-up of the CLI: `capplan --help` and the README's golden `capplan size` case.

Each command runs as a user starts it (a fresh process of the installed console script), in
interleaved rounds with the baseline `python -c pass` (the interpreter's own start-up), and the table
gives the median of each and its ratio to the baseline's median. The machine is shared: read the
ratios and the load column, not the seconds alone. Targets (issue 24): each command ≤ 0.5 s.

    .venv/bin/python benchmarks/cli_startup.py --rounds 15
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CAPPLAN = str(Path(sys.executable).with_name("capplan"))
#: the README's golden case (README.md, "The golden case"; tests/sizing/test_fleet.py)
GOLDEN = ["size", "--requests-per-day", "2000000", "--peak-to-avg", "4", "--latency-s", "6", "--output-tokens", "400",
          "--gpu-output-tokens-per-s", "2000", "--target-utilisation", "0.6", "--seqs-per-gpu", "40", "--spares", "1"]
COMMANDS = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "capplan --help": [CAPPLAN, "--help"],
    "capplan size (golden case)": [CAPPLAN, *GOLDEN],
    "capplan size --json": [CAPPLAN, *GOLDEN, "--json"],
    "capplan size --wait-target-s 0.5": [CAPPLAN, *GOLDEN, "--wait-target-s", "0.5"],
}
TARGET_S = 0.5
#: As a user's install runs: with bytecode caches (the untimed warm-up round writes them).
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "COLUMNS": "150"}


def time_once(argv: list[str]) -> float:
    """Wall time of one fresh process [s]; fails loudly if the command fails."""
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=ENV)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=11, help="interleaved rounds (medians are reported)")
    parser.add_argument("--before", type=Path, default=None,
                        help="another install's capplan script (e.g. ../main/.venv/bin/capplan), timed in the same rounds")
    args = parser.parse_args()
    if args.before is not None:
        for name in [n for n in COMMANDS if n.startswith("capplan")]:
            COMMANDS[f"{name} [before]"] = [str(args.before), *COMMANDS[name][1:]]
    loads = [os.getloadavg()[0]]
    for argv in COMMANDS.values():  # warm the file cache once, untimed
        time_once(argv)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.rounds):
        for name, argv in COMMANDS.items():
            times[name].append(time_once(argv))
        loads.append(os.getloadavg()[0])
    base = statistics.median(times["python -c pass (baseline)"])
    print(f"CLI start-up, {args.rounds} interleaved rounds, whole processes; 1-min load {min(loads):.1f}-{max(loads):.1f}")
    print(f"| {'command':<36} | {'median s':>8} | {'min s':>6} | {'÷ python -c pass':>16} | {'- baseline s':>12} | target |")
    print(f"|{'-' * 38}|{'-' * 10}|{'-' * 8}|{'-' * 18}|{'-' * 14}|--------|")
    for name, ts in times.items():
        med = statistics.median(ts)
        target = "" if name.startswith("python") else ("met" if med <= TARGET_S else "MISSED")
        print(f"| {name:<36} | {med:>8.3f} | {min(ts):>6.3f} | {med / base:>16.1f} | {med - base:>12.3f} | {target:<6} |")


if __name__ == "__main__":
    main()
