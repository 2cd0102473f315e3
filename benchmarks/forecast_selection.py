"""How other ways of choosing the combination would have scored, replayed from one set of fits.

Run: ``.venv/bin/python benchmarks/forecast_selection.py [--suite m4,servegen] [--split test|tail]
[--limit N] [--workers 2] [--cache FILE]``

``benchmarks/forecast_accuracy.py`` refits everything for each setting, which takes half an hour on
M4. Here each series is fitted once the way :func:`forecasting.fit` fits it (same data, protocol and
splits as that script: M4 Hourly with seasons 24 and 168, ServeGen clients with seasons detected,
horizon 48), and every default candidate is backtested once at the latest
:data:`MAX_WINDOWS` selection origins (:func:`forecasting.api.selection_windows`) and refitted at the
forecast origin. Each rule of :data:`RULES` then chooses its combination from those forecasts alone
with the forecaster's own :func:`forecasting.api.select_pools` (other sizes, tolerance, single-candidate
gain, or more windows), so a rule costs a second, not a run.

The replay of the default rule must give ``fit``'s own components on every series (printed as
"replay = fit"); otherwise the figures below it do not describe the forecaster. Per rule it prints
the suite's headline (ServeGen: clients' mean MASE ÷ the 24 h seasonal naive's, share of clients
ahead of it, the pools' ratio; M4: OWA, sMAPE, MASE, the count of blow-ups over 3x the seasonal
naive's MASE),
its difference to the default rule and the bootstrap s.d. of that difference over the series (a
paired difference: much smaller than the spread of the figure itself). Last, for scale: the best
single candidate per series picked with the test values (an oracle no rule can reach; a
combination can still beat it on a series). Intervals are not replayed (the default rule's are in
forecast_accuracy.py).

``--cache FILE`` keeps the fits (pickle) and reuses them while suite, split, limit, data folder and the
forecaster's source (a hash of ``forecasting/*.py``) match; a changed forecaster refits.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import pickle  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import forecast_accuracy as fa  # noqa: E402  (benchmarks/forecast_accuracy.py: data, protocol, Naive2)
from capplan.forecasting import fit  # noqa: E402
from capplan.forecasting import backtest  # noqa: E402
from capplan.forecasting.api import (candidate_names, select_pools, selection_targets,  # noqa: E402
                                    selection_windows)
from capplan.forecasting.models import model_for  # noqa: E402
from capplan.forecasting.metrics import mase, mase_scale, smape  # noqa: E402
from capplan.forecasting.prepare import steps_per_day  # noqa: E402

FORECASTING = Path(__file__).resolve().parent.parent / "forecasting"
#: Most selection windows any rule replays (the default rule uses ``fit``'s 3). [count]
MAX_WINDOWS = 5
#: rule name -> (selection windows, keyword arguments of :func:`forecasting.api.select` via ``select_pools``)
RULES: dict[str, tuple[int, dict]] = {
    "default": (3, {}),
    "all candidates": (3, {"sizes": (0,)}),
    "5 or all": (3, {"sizes": (5, 0)}),
    "3 or 5 only": (3, {"sizes": (3, 5)}),
    "tolerance 0": (3, {"tolerance": 0.0}),
    "tolerance 0.3": (3, {"tolerance": 0.3}),
    "never one alone": (3, {"single_gain": 0.0}),
    "4 windows": (4, {}),
    "5 windows": (5, {}),
}


def prepare_series(args: tuple[str, pd.Series | np.ndarray, np.ndarray, tuple[int, ...] | None]) -> dict:
    """Fit one series the default way and keep every candidate's forecasts at the selection origins."""
    sid, train, test, seasons = args
    y = train if isinstance(train, pd.Series) else pd.Series(train)
    horizon = len(test)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit(y, horizon, seasons)
        z, seasons_used = result.z, result.seasons
        day = (result.info["unconfirmed_day"] or {}).get("steps")
        names = candidate_names(None, seasons_used, len(z), steps_per_day(y.index), day)
        h_bt, _, _, cuts = selection_windows(len(z), horizon, MAX_WINDOWS)
        fc_bt = backtest.run_backtest(z, {c: model_for(c) for c in names}, h_bt, seasons_used, cuts)
        # at the forecast origin as in the backtest: a candidate that fails there gets NaN, not a crash
        final = {c: backtest.run_backtest(z, {c: model_for(c)}, horizon, seasons_used, [len(z)])[c][0] for c in names}
    values = y.to_numpy(float)
    return {"id": sid, "fit": result, "names": names, "cuts": cuts, "h_bt": h_bt, "fc_bt": fc_bt, "final": final,
            "test": test, "scale": mase_scale(values, 24), "snaive_24": np.resize(values[-24:], horizon),
            "naive2": fa.naive2(values, horizon) if seasons is not None else None}


def replay(row: dict, windows: int, kwargs: dict) -> tuple[tuple[str, ...], np.ndarray]:
    """The components a rule chooses for one series and its point forecast (series' unit)."""
    result = row["fit"]
    keep = len(row["cuts"]) - min(windows, len(row["cuts"]))
    cuts = row["cuts"][keep:]
    y_act, scale = selection_targets(result.z, result.to_y, result.seasons, row["h_bt"], cuts)
    fc_z = {c: f[keep:] for c, f in row["fc_bt"].items()}
    components, _, _, _ = select_pools(row["names"], fc_z, y_act, result.to_y, scale, **kwargs)
    components = components or ("seasonal_naive",)
    return components, result.to_y(np.mean([row["final"][c] for c in components], axis=0))


def baselines(rows: list[dict]) -> np.ndarray:
    """Per series: 24 h seasonal naive's MASE, Naive2's MASE and sMAPE (M4 only, else NaN), the
    ``seasonal_naive`` candidate's MASE, and 1 for a client (0 for a ServeGen pool aggregate)."""
    out = []
    for r in rows:
        n2 = r["naive2"]
        out.append([mase(r["test"], r["snaive_24"], r["scale"]),
                    mase(r["test"], n2, r["scale"]) if n2 is not None else np.nan,
                    smape(r["test"], n2) if n2 is not None else np.nan,
                    mase(r["test"], r["fit"].to_y(r["final"]["seasonal_naive"]), r["scale"]),
                    float(not r["id"].startswith("pool:"))])
    return np.array(out)


def headline(base: np.ndarray, scores: np.ndarray, suite: str) -> dict[str, float]:
    """The suite's figures for one rule; ``scores`` is (series, [MASE, sMAPE]) of its forecasts,
    ``base`` the same series' :func:`baselines`."""
    if suite == "servegen":
        clients = base[:, 4] == 1
        out = {"x_snaive": scores[clients, 0].mean() / base[clients, 0].mean(),
               "ahead": float(np.mean(scores[clients, 0] < base[clients, 0]))}
        if (~clients).any():
            out["pools_x_snaive"] = scores[~clients, 0].mean() / base[~clients, 0].mean()
        return out
    return {"OWA": 0.5 * (scores[:, 1].mean() / base[:, 2].mean() + scores[:, 0].mean() / base[:, 1].mean()),
            "sMAPE": scores[:, 1].mean(), "MASE": scores[:, 0].mean(),
            "blow_ups": int(np.sum(scores[:, 0] > 3 * base[:, 3]))}


def paired_sd(base: np.ndarray, scores: np.ndarray, default: np.ndarray, suite: str,
              draws: int = fa.NOISE_DRAWS, seed: int = 0) -> float:
    """Bootstrap s.d. over the series (clients only for ServeGen) of the headline difference between a
    rule and the default rule."""
    key = "x_snaive" if suite == "servegen" else "OWA"
    keep = np.flatnonzero(base[:, 4] == 1)
    if len(keep) < 2:
        return float("nan")
    picks = keep[np.random.default_rng(seed).integers(0, len(keep), (draws, len(keep)))]
    return float(np.std([headline(base[p], scores[p], suite)[key] - headline(base[p], default[p], suite)[key]
                         for p in picks]))


def table(rows: list[dict], suite: str, draws: int = fa.NOISE_DRAWS) -> pd.DataFrame:
    """One line per rule of :data:`RULES`, then the per-series oracle."""
    key = "x_snaive" if suite == "servegen" else "OWA"
    scored = {}
    for name, (windows, kwargs) in RULES.items():
        forecasts = [replay(r, windows, kwargs)[1] for r in rows]
        scored[name] = np.array([[mase(r["test"], f, r["scale"]), smape(r["test"], f)]
                                 for r, f in zip(rows, forecasts, strict=True)])
    oracle = []
    for r in rows:
        best = min(r["names"], key=lambda c: mase(r["test"], r["fit"].to_y(r["final"][c]), r["scale"]))
        f = r["fit"].to_y(r["final"][best])
        oracle.append([mase(r["test"], f, r["scale"]), smape(r["test"], f)])
    scored["best candidate, chosen on the test (oracle)"] = np.array(oracle)
    base = baselines(rows)
    default = scored["default"]
    out = {}
    for name, scores in scored.items():
        line = headline(base, scores, suite)
        line[f"{key}_minus_default"] = line[key] - headline(base, default, suite)[key]
        line["paired_sd"] = 0.0 if name == "default" else paired_sd(base, scores, default, suite, draws)
        out[name] = line
    return pd.DataFrame(out).T


def load_rows(suite: str, split: str, limit: int | None, workers: int, data: Path, servegen: Path,
              cache: Path | None) -> list[dict]:
    """Prepared series of one suite, from ``cache`` when it holds the same suite, split and limit."""
    source = hashlib.sha256(b"".join(f.read_bytes() for f in sorted(FORECASTING.glob("*.py")))).hexdigest()
    key = (suite, split, limit, str(data if suite == "m4" else servegen), MAX_WINDOWS, source)
    if cache and cache.exists():
        stored = pickle.loads(cache.read_bytes())
        if stored.get(key):
            return stored[key]
    if suite == "m4":
        items = [(sid, y, t, fa.SEASONS) for sid, y, t in fa.load(data, limit, split)]
    else:
        items = [(sid, y, t, None) for sid, y, t in fa.load_servegen(servegen, limit, split)]
    rows = list(fa._map(prepare_series, items, workers))
    if cache:
        stored = pickle.loads(cache.read_bytes()) if cache.exists() else {}
        stored[key] = rows
        cache.write_bytes(pickle.dumps(stored))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="servegen,m4", help="comma-separated: m4, servegen")
    parser.add_argument("--split", choices=("test", "tail"), default="test",
                        help="as in forecast_accuracy.py: score the test values or the end of each training series")
    parser.add_argument("--limit", type=int, default=None, help="only the first N M4 series / N ServeGen clients")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data", type=Path, default=fa.DATA_DIR, help="M4 Hourly folder")
    parser.add_argument("--servegen", type=Path, default=fa.SERVEGEN_DIR, help="ServeGen clients folder")
    parser.add_argument("--cache", type=Path, default=None, help="pickle file keeping the fits between runs")
    parser.add_argument("--draws", type=int, default=fa.NOISE_DRAWS, help="bootstrap draws for paired_sd")
    args = parser.parse_args(argv)
    for suite in [s.strip() for s in args.suite.split(",") if s.strip()]:
        if suite not in ("m4", "servegen"):
            parser.error(f"unknown suite {suite!r}: m4, servegen")
        started = time.perf_counter()
        rows = load_rows(suite, args.split, args.limit, args.workers, args.data, args.servegen, args.cache)
        same = 0
        for r in rows:
            components, forecast = replay(r, *RULES["default"])
            same += components == r["fit"].components and np.array_equal(forecast, r["fit"].frame["mean"].to_numpy())
        windows = sorted({len(r["cuts"]) for r in rows})
        print(f"\n{suite} ({args.split} split): {len(rows)} series; replay = fit (components and forecast) on "
              f"{same} of {len(rows)}; selection windows the history allows: {windows[0]}-{windows[-1]} "
              f"(a rule asking for more uses these); fits {time.perf_counter() - started:.0f} s")
        print(table(rows, suite, args.draws).to_string(float_format=lambda v: f"{v:.4f}"))


if __name__ == "__main__":
    main()
