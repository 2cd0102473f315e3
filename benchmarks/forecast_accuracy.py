"""Accuracy and speed of ``forecasting.fit`` on M4 Hourly and on real LLM-serving demand (ServeGen).

Run: ``.venv/bin/python benchmarks/forecast_accuracy.py [--suite m4,servegen] [--quick] [--limit N]
[--workers 2] [--split test|tail]``

**M4 Hourly** (``--data``, development half): for each series the training part
goes to :func:`forecasting.fit` (horizon 48, seasons 24 and 168, levels 80 and
95); choices use only the training data (its own backtests on the end of the
history). The test part then scores the automatic choice and every candidate
refitted on the same prepared series, next to M4's Naive2 and the seasonal
naive. Prints sMAPE, MASE, OWA (M4 definitions), interval coverage and MSIS
per interval method (every method of :data:`forecasting.api.INTERVAL_METHODS`
on the same fit, plus pooled conformal on the selection windows only), the
blow-up rate, how far the OWA of two halves of these series differs by chance
(:func:`owa_half_noise`: the yardstick for a gap between a development half
and a held-out one) and wall and CPU times. ``--split tail`` scores the last 48 hours
of each *training* series instead (fit on the rest), for choosing methods
without looking at the test values.

**ServeGen clients** (``--servegen``, the protocol of its README): train on the
first 288 hours, ``fit(y, horizon=48, season_lengths=None, levels=(80, 95))``,
score the last 48. Per method (the automatic choice, and ``fit`` with each
candidate alone, so that every method has intervals calibrated the same way):
mean MASE (in-sample 24 h seasonal-naive scale) and its ratio to the 24 h
seasonal naive's, the share of series where it beats the seasonal naive, and
pooled coverage of the 80 % and 95 % intervals over all series and hours, and the
bootstrap spread of the automatic choice's ratio over the clients (:func:`ratio_bootstrap_sd`). The
same for the pools' aggregate series (the sum of each pool's clients).
``--split tail`` cuts every client to those first 288 hours before anything
else reads it (hours 288+ are never used), trains on hours 0-239 and scores
240-287, for choosing methods without the scored days.

``--quick`` runs a few series of each suite and skips the 2-year timing: a check
that everything runs, for CI. The speed of one 2-year hourly series is given as
a ratio to a baseline measured in the same run (MSTL(24, 168) + ETS on the same
series), because the machine is shared.
"""

from __future__ import annotations

import os

# One BLAS thread per process: the pool provides the parallelism, and BLAS
# threads fighting over 2 cores make small state-space fits many times slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import dataclasses  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from capplan.forecasting import DEFAULT_CANDIDATES, MODELS, fit, period_peaks  # noqa: E402
from capplan.forecasting.api import INTERVAL_METHODS  # noqa: E402
from capplan.forecasting.metrics import coverage, mase, mase_scale, smape  # noqa: E402
from capplan.forecasting.prepare import seasonality_significant  # noqa: E402

DATA_DIR = Path("/work/shared/benchmarks/m4-hourly-dev")
HORIZON_STEPS = 48
SEASONS = (24, 168)
LEVELS = (80, 95)
#: The session-1 intervals: pooled conformal on the selection windows only.
SELECTION_ONLY = "pooled_selection_windows"
SERVEGEN_DIR = Path("/work/shared/benchmarks/servegen-clients-dev")
#: Hours the ServeGen protocol trains on (12 days); the remaining 48 are scored. [h]
SERVEGEN_TRAIN_HOURS = 288
#: Series per suite with ``--quick``. [count]
QUICK_SERIES = {"m4": 3, "servegen": 6}
#: The ServeGen baseline: the last day repeated.
SEASONAL_NAIVE_24 = "seasonal_naive_24h"
#: Random draws of :func:`owa_half_noise` and :func:`ratio_bootstrap_sd`. [count]
NOISE_DRAWS = 2_000


def load_servegen(data_dir: Path, limit: int | None,
                  split: str = "test") -> list[tuple[str, pd.Series, np.ndarray]]:
    """(id, training series, test values) per client, then one aggregate per pool (``pool:<name>``).

    ``limit`` keeps that many clients, evenly spaced over the sorted ids (so
    every pool is represented), and their pools' aggregates. ``split="tail"``
    cuts every client to its first :data:`SERVEGEN_TRAIN_HOURS` before anything
    else reads it and holds out the last :data:`HORIZON_STEPS` of those, so
    methods can be compared without the scored hours.
    """
    frame = pd.read_csv(data_dir / "clients_hourly.csv", parse_dates=["hour"])
    clients = {sid: part.set_index("hour")["qps"].sort_index().asfreq("h")
               for sid, part in frame.groupby("series_id", sort=True)}
    cut = SERVEGEN_TRAIN_HOURS
    if split == "tail":
        clients = {sid: y.iloc[:SERVEGEN_TRAIN_HOURS] for sid, y in clients.items()}
        cut = SERVEGEN_TRAIN_HOURS - HORIZON_STEPS
    ids = sorted(clients)
    if limit:
        ids = [ids[int(i)] for i in np.linspace(0, len(ids) - 1, min(limit, len(ids)))]
    pools: dict[str, pd.Series] = {}
    for sid in ids:
        pool = "pool:" + sid.rsplit("-", 1)[0]
        pools[pool] = clients[sid] if pool not in pools else pools[pool].add(clients[sid], fill_value=0)
    series = {**{sid: clients[sid] for sid in ids}, **pools}
    return [(sid, y.iloc[:cut], y.iloc[cut:].to_numpy(float)) for sid, y in series.items()]


def evaluate_servegen(args: tuple[str, pd.Series, np.ndarray]) -> dict:
    """Fit one ServeGen series the automatic way and with every candidate alone; score the test hours."""
    sid, train, test = args
    horizon = len(test)
    scale = mase_scale(train.to_numpy(float), 24)
    snaive = np.resize(train.to_numpy(float)[-24:], horizon)
    row = {"id": sid, f"mase|{SEASONAL_NAIVE_24}": mase(test, snaive, scale)}
    for method in ("auto", *DEFAULT_CANDIDATES):
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fit(train, horizon, None, levels=LEVELS, candidates=None if method == "auto" else (method,))
        fc = result.frame
        if method == "auto":
            row.update(seconds=time.perf_counter() - started, model=result.info["model"])
            row.update(day_calibration(result, test))
        row[f"mase|{method}"] = mase(test, fc["mean"].to_numpy(), scale)
        for lv in LEVELS:
            row[f"hits{lv}|{method}"] = int(((test >= fc[f"lo_{lv}"]) & (test <= fc[f"hi_{lv}"])).sum())
        row[f"hours|{method}"] = horizon
    return row


def day_calibration(result, test: np.ndarray) -> dict[str, int]:
    """Held-out days whose actual peak / total fell below the simulated P90 (peak also: below the P50, above the P10). [count]"""
    days = period_peaks(result, "D")
    actual = pd.Series(test, index=result.frame.index).groupby(result.frame.index.to_period("D"))
    peak, total = actual.max().to_numpy(), actual.sum().to_numpy()
    return {"days": len(days), "peak_below_p90": int(np.sum(peak <= days["peak_p90"].to_numpy())),
            "peak_below_p50": int(np.sum(peak <= days["peak_p50"].to_numpy())),
            "peak_above_p10": int(np.sum(peak >= days["peak_p10"].to_numpy())),
            "total_below_p90": int(np.sum(total <= days["total_p90"].to_numpy())),
            "peak_below_max_hi80": int(np.sum(peak <= result.frame["hi_80"].groupby(
                result.frame.index.to_period("D")).max().to_numpy()))}


def servegen_table(rows: list[dict]) -> pd.DataFrame:
    """Mean MASE, its ratio to the seasonal naive's, share of series beating it, pooled coverage, per method."""
    methods = list(dict.fromkeys(k.split("|")[1] for k in rows[0] if k.startswith("mase|")))
    base = np.array([r[f"mase|{SEASONAL_NAIVE_24}"] for r in rows])
    table = {}
    for m in methods:
        scores = np.array([r[f"mase|{m}"] for r in rows])
        entry = {"MASE": scores.mean(), "x_snaive": scores.mean() / base.mean(),
                 "beats_snaive": float(np.mean(scores < base))}
        for lv in LEVELS:
            hours = sum(r.get(f"hours|{m}", 0) for r in rows)
            entry[f"cover_{lv}"] = sum(r.get(f"hits{lv}|{m}", 0) for r in rows) / hours if hours else np.nan
        table[m] = entry
    return pd.DataFrame(table).T.sort_values("MASE")


def ratio_bootstrap_sd(rows: list[dict], method: str = "auto", draws: int = NOISE_DRAWS, seed: int = 0) -> float:
    """Bootstrap standard deviation of ``method``'s mean MASE ÷ the seasonal naive's over these series. [ratio]

    Series are drawn with replacement ``draws`` times: how far the ratio would move on another set of
    clients like these, so a goal met or missed by less than this on one set is not settled by it.
    """
    if len(rows) < 2:
        return float("nan")
    scores = np.array([[r[f"mase|{method}"], r[f"mase|{SEASONAL_NAIVE_24}"]] for r in rows])
    picks = np.random.default_rng(seed).integers(0, len(rows), (draws, len(rows)))
    means = scores[picks].mean(axis=1)  # (draws, 2)
    return float(np.std(means[:, 0] / means[:, 1]))


def run_servegen(data_dir: Path, limit: int | None, workers: int, split: str = "test") -> None:
    """Print the ServeGen tables (clients, then pool aggregates) and the run time."""
    series = load_servegen(data_dir, limit, split)
    started = time.perf_counter()
    rows = list(_map(evaluate_servegen, series, workers))
    wall = time.perf_counter() - started
    clients = [r for r in rows if not r["id"].startswith("pool:")]
    pools = [r for r in rows if r["id"].startswith("pool:")]
    fmt = {"float_format": lambda v: f"{v:.3f}"}
    train = SERVEGEN_TRAIN_HOURS - (HORIZON_STEPS if split == "tail" else 0)
    scored = (f"tail split: hours {train}-{train + HORIZON_STEPS - 1} scored, hours {SERVEGEN_TRAIN_HOURS}+ unread, "
              if split == "tail" else "")
    print(f"\nServeGen clients ({data_dir}): {len(clients)} series, train {train} h, horizon "
          f"{HORIZON_STEPS} h, {scored}seasons detected; MASE on the in-sample 24 h seasonal-naive scale")
    print(servegen_table(clients).to_string(**fmt))
    print(f"auto x_snaive over these clients: bootstrap s.d. {ratio_bootstrap_sd(clients):.3f} "
          f"({NOISE_DRAWS} draws of the clients with replacement)")
    print(f"\nServeGen pool aggregates: {len(pools)} series")
    print(servegen_table(pools).to_string(**fmt))
    print("per pool, auto vs seasonal naive MASE: "
          + ", ".join(f"{r['id']} {r['mase|auto']:.2f} vs {r[f'mase|{SEASONAL_NAIVE_24}']:.2f}" for r in pools))
    print(f"auto: models chosen: {pd.Series([r['model'] for r in clients]).value_counts().head(6).to_dict()}")
    for name, part in (("clients", clients), ("pools", pools)):
        days = sum(r["days"] for r in part)
        print(f"auto, {name}: share of held-out days with the actual peak below the simulated P90 of the day's peak "
              f"{sum(r['peak_below_p90'] for r in part) / days:.3f} (below P50 "
              f"{sum(r['peak_below_p50'] for r in part) / days:.3f}, above P10 "
              f"{sum(r['peak_above_p10'] for r in part) / days:.3f}), total below P90 "
              f"{sum(r['total_below_p90'] for r in part) / days:.3f}; below the max of hourly hi_80 "
              f"{sum(r['peak_below_max_hi80'] for r in part) / days:.3f} ({days} days)")
    secs = np.array([r["seconds"] for r in rows])
    print(f"ServeGen wall time {wall:.0f} s (every method); auto fit per series median {np.median(secs):.2f} s, "
          f"max {secs.max():.2f} s")


def naive2(y: np.ndarray, horizon: int, period: int = 24) -> np.ndarray:
    """M4's Naive2: naive forecast of the classically (multiplicatively) deseasonalised series."""
    from statsmodels.tsa.seasonal import seasonal_decompose

    if not seasonality_significant(y, period)[0]:
        return np.full(horizon, y[-1])
    seasonal = np.asarray(seasonal_decompose(y, model="multiplicative", period=period).seasonal)
    return (y[-1] / seasonal[-1]) * np.resize(seasonal[-period:], horizon)


def evaluate(args: tuple[str, np.ndarray, np.ndarray, int]) -> dict:
    """Forecast one series and score every method on its test part."""
    sid, train, test, windows = args
    started, cpu_started = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit(pd.Series(train), HORIZON_STEPS, SEASONS, levels=LEVELS, windows=windows)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    fc = result.frame
    scale = mase_scale(train, 24)
    forecasts = {"auto": fc["mean"].to_numpy(), "Naive2": naive2(train, HORIZON_STEPS)}
    for name in DEFAULT_CANDIDATES:
        forecasts[name] = result.to_y(MODELS[name](result.z, HORIZON_STEPS, result.seasons))
    row = {"id": sid, "seconds": seconds, "cpu_seconds": cpu_seconds, "model": result.info["model"],
           "cover_80": coverage(test, fc["lo_80"], fc["hi_80"]), "cover_95": coverage(test, fc["lo_95"], fc["hi_95"])}
    selection_only = dataclasses.replace(result, backtest_errors=result.backtest_errors[-windows:])
    bounds = {m: result.bounds(LEVELS, m) for m in INTERVAL_METHODS}
    bounds[SELECTION_ONLY] = selection_only.bounds(LEVELS, "pooled")
    for method, b in bounds.items():
        for lv in LEVELS:
            row[f"cover{lv}|{method}"] = coverage(test, b[f"lo_{lv}"], b[f"hi_{lv}"])
            row[f"msis{lv}|{method}"] = msis(test, b[f"lo_{lv}"].to_numpy(), b[f"hi_{lv}"].to_numpy(), lv, scale)
    for name, f in forecasts.items():
        row[f"smape|{name}"] = smape(test, f)
        row[f"mase|{name}"] = mase(test, f, scale)
    return row


def msis(actual: np.ndarray, lower: np.ndarray, upper: np.ndarray, level: int, scale: float) -> float:
    """M4's mean scaled interval score: width plus 2/α times each miss, over the MASE scale. [ratio]"""
    alpha = 1 - level / 100
    penalty = (2 / alpha) * ((lower - actual) * (actual < lower) + (actual - upper) * (actual > upper))
    return float(np.mean(upper - lower + penalty) / scale)


def load(data_dir: Path, limit: int | None, split: str = "test") -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(id, train, test) per series from the M4 CSV files.

    ``split="tail"`` holds out the last :data:`HORIZON_STEPS` of each training
    series instead of using the test file, so methods can be compared without
    the test values.
    """
    train = pd.read_csv(data_dir / "Hourly-train.csv", index_col=0)
    rows = [(sid, train.loc[sid].dropna().to_numpy(float)) for sid in train.index]
    if split == "tail":
        out = [(sid, y[:-HORIZON_STEPS], y[-HORIZON_STEPS:]) for sid, y in rows]
    else:
        test = pd.read_csv(data_dir / "Hourly-test.csv", index_col=0)
        out = [(sid, y, test.loc[sid].to_numpy(float)) for sid, y in rows]
    return out[:limit] if limit else out


def interval_table(rows: list[dict]) -> pd.DataFrame:
    """Coverage and MSIS at each level per interval method, averaged over series."""
    methods = list(dict.fromkeys(k.split("|")[1] for r in rows[:1] for k in r if k.startswith("cover80|")))
    return pd.DataFrame({f"{stat}_{lv}": {m: np.mean([r[f"{stat}{lv}|{m}"] for r in rows]) for m in methods}
                         for lv in LEVELS for stat in ("cover", "msis")})


def accuracy_table(rows: list[dict]) -> pd.DataFrame:
    """sMAPE, MASE and OWA per method, averaged over series as in M4."""
    methods = sorted({k.split("|")[1] for r in rows for k in r if k.startswith("smape|")})
    table = pd.DataFrame({
        "sMAPE": {m: np.mean([r[f"smape|{m}"] for r in rows]) for m in methods},
        "MASE": {m: np.mean([r[f"mase|{m}"] for r in rows]) for m in methods},
    })
    table["OWA"] = 0.5 * (table["sMAPE"] / table.loc["Naive2", "sMAPE"] + table["MASE"] / table.loc["Naive2", "MASE"])
    return table.sort_values("OWA")


def owa_half_noise(rows: list[dict], method: str = "auto", draws: int = NOISE_DRAWS, seed: int = 0) -> float:
    """Standard deviation (root mean square) of the OWA difference between two interleaved halves. [OWA]

    Series are sorted by their number and paired with their neighbour (H1/H3, H5/H7, …, as the
    odd/even split of M4 Hourly pairs each development series with a held-out one); each draw sends
    one member of every pair to each half and takes the difference of the halves' OWA. How far two
    halves of the same kind of series differ by chance: a gap between a development half and a
    held-out one within about this × √(half / all) is not evidence of tuning.
    """
    ordered = sorted(rows, key=lambda r: int("".join(ch for ch in r["id"] if ch.isdigit()) or 0))
    pairs = len(ordered) // 2
    if pairs < 2:
        return float("nan")
    stats = np.array([[r[f"smape|{method}"], r[f"mase|{method}"], r["smape|Naive2"], r["mase|Naive2"]]
                      for r in ordered[:2 * pairs]]).reshape(pairs, 2, 4)
    pick = np.random.default_rng(seed).integers(0, 2, (draws, pairs))
    first = stats[np.arange(pairs), pick].mean(axis=1)        # (draws, 4): means of the first half
    second = stats[np.arange(pairs), 1 - pick].mean(axis=1)
    owa = lambda m: 0.5 * (m[:, 0] / m[:, 2] + m[:, 1] / m[:, 3])  # noqa: E731
    return float(np.sqrt(np.mean((owa(first) - owa(second)) ** 2)))  # the mean difference is 0 by symmetry


def long_series_timing() -> tuple[float, float]:
    """Seconds for ``fit`` on a 2-year hourly series and for the baseline on it."""
    rng = np.random.default_rng(20261129)
    t = np.arange(2 * 365 * 24)
    daily = 1 + 0.5 * np.sin(2 * np.pi * t / 24)
    weekly = 1 - 0.2 * (((t // 24) % 7) >= 5)
    y = pd.Series(50 * daily * weekly * (1 + t / t.size) * rng.lognormal(0, 0.1, t.size),
                  index=pd.date_range("2024-01-01", periods=t.size, freq="h"))
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(y, 14 * 24, None)
    ours = time.perf_counter() - started
    from statsmodels.tsa.holtwinters import ExponentialSmoothing
    from statsmodels.tsa.seasonal import MSTL

    started = time.perf_counter()
    res = MSTL(np.log(y.to_numpy()), periods=[24, 168]).fit()
    ExponentialSmoothing(np.asarray(res.trend + res.resid), trend="add", damped_trend=True).fit().forecast(336)
    return ours, time.perf_counter() - started


def _map(function, items: list, workers: int):
    """``function`` over ``items`` in a pool of ``workers`` processes, in order; in this process for 1."""
    if workers <= 1:
        yield from map(function, items)
        return
    with ProcessPoolExecutor(workers) as pool:
        yield from pool.map(function, items, chunksize=1)


def run_m4(args: argparse.Namespace) -> None:
    """Print the M4 tables, interval methods, blow-ups and times."""
    series = load(args.data, args.limit, args.split)
    load_start = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    started = time.perf_counter()
    rows = []
    for row in _map(evaluate, [(*s, args.windows) for s in series], args.workers):
        rows.append(row)
        if args.rows:
            with args.rows.open("a") as out:
                out.write(json.dumps(row) + "\n")
    wall = time.perf_counter() - started
    table = accuracy_table(rows)
    print(f"M4 Hourly dev ({args.split} split): {len(rows)} series, horizon {HORIZON_STEPS}, seasons {SEASONS}, "
          f"{args.workers} workers, load average at start {load_start}")
    print(table.to_string(float_format=lambda v: f"{v:.3f}"))
    blow = np.mean([r["mase|auto"] > 3 * r["mase|seasonal_naive"] for r in rows])
    print("\nintervals of the automatic choice, by interval method (coverage [fraction], MSIS [ratio]):")
    print(interval_table(rows).to_string(float_format=lambda v: f"{v:.3f}"))
    print(f"\nauto (default method): interval coverage: 80% -> {np.mean([r['cover_80'] for r in rows]):.3f}, "
          f"95% -> {np.mean([r['cover_95'] for r in rows]):.3f}")
    print(f"auto: series with MASE > 3x seasonal naive's: {blow:.1%}")
    noise = owa_half_noise(rows)
    if np.isfinite(noise):
        print(f"auto: OWA of two interleaved halves of these series differs by chance with s.d. {noise:.3f} "
              f"(neighbouring series sent to either half, {NOISE_DRAWS} draws); a set twice as large against "
              f"another of its size: ~{noise / np.sqrt(2):.3f}")
    else:
        print("auto: too few series to tell how far two halves of them differ by chance (needs 4)")
    print(f"auto: models chosen: {pd.Series([r['model'] for r in rows]).value_counts().head(8).to_dict()}")
    secs = np.array([r["seconds"] for r in rows])
    cpu = np.array([r["cpu_seconds"] for r in rows])
    print(f"wall time {wall:.0f} s for the set; per series median {np.median(secs):.2f} s, max {secs.max():.2f} s; "
          f"CPU {cpu.sum():.0f} s in all (what 2 idle cores would take: {cpu.sum() / 2:.0f} s wall)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="m4,servegen", help="comma-separated: m4, servegen")
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="M4 Hourly folder")
    parser.add_argument("--servegen", type=Path, default=SERVEGEN_DIR, help="ServeGen clients folder")
    parser.add_argument("--quick", action="store_true",
                        help=f"only {QUICK_SERIES} series per suite (unless --limit), no 2-year timing (for CI)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N M4 series / N ServeGen clients")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--windows", type=int, default=3, help="backtest windows per series (fit's windows=)")
    parser.add_argument("--split", choices=("test", "tail"), default="test",
                        help="score the test values (M4's test file, ServeGen's hours 288+), or the last 48 h of "
                             "each training series (ServeGen: train on hours 0-239, score 240-287)")
    parser.add_argument("--rows", type=Path, default=None,
                        help="also append each M4 series' scores to this JSON-lines file as they finish")
    args = parser.parse_args(argv)
    suites = {s.strip() for s in args.suite.split(",") if s.strip()}
    if not suites <= {"m4", "servegen"}:
        parser.error(f"unknown suite(s) {sorted(suites - {'m4', 'servegen'})}; valid: m4, servegen")
    if "m4" in suites:
        run_m4(argparse.Namespace(**{**vars(args), "limit": args.limit or (QUICK_SERIES["m4"] if args.quick else None)}))
    if "servegen" in suites:
        run_servegen(args.servegen, args.limit or (QUICK_SERIES["servegen"] if args.quick else None), args.workers,
                     args.split)
    if args.quick:
        print("\n2-year hourly series: skipped (--quick)")
        return
    ours, base = long_series_timing()
    print(f"\n2-year hourly series (17,520 points, horizon 336): fit {ours:.2f} s; "
          f"baseline MSTL(24,168)+ETS {base:.2f} s; ratio {ours / base:.2f}; "
          f"load average at end {', '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
