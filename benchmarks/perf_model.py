"""The replica performance model (capplan.sizing.performance) against published throughput figures.

Reads ../shared/benchmarks/llm-throughput-dev/llm_throughput_dev.csv (or --data), predicts every row
with a throughput figure, and prints the median and 90th-percentile absolute percentage error (APE)
by mode, GPU, TP and dense vs MoE, with leave-one-group-out cross-validation: for each configuration
group (model, GPU, precision, TP) the efficiencies are fitted on the dense rows of every other group
and that group is predicted. Mixture-of-experts rows are never fitted on.

    .venv/bin/python benchmarks/perf_model.py            # CV tables (about a minute)
    .venv/bin/python benchmarks/perf_model.py --quick    # 3 folds, for CI
    .venv/bin/python benchmarks/perf_model.py --fit      # fit on all dense rows, write data/performance.toml
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import re
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from capplan.sizing import performance as perf
from capplan.sizing.catalogue import load_models

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = Path("/work/shared/benchmarks/llm-throughput-dev/llm_throughput_dev.csv")
#: MLPerf Llama-2-70B Server constraints when a row does not restate them. [ms]
MLPERF_SERVER_TTFT_MS, MLPERF_SERVER_TPOT_MS = 2000.0, 200.0

#: Weight of a TPOT residual against a throughput residual in the fit.
TPOT_WEIGHT = 1.0
#: Fitted parameters: name, lower bound, upper bound, starting value.
FITTED: tuple[tuple[str, float, float, float], ...] = (
    ("hbm_bandwidth_fraction", 0.2, 1.0, 0.6),
    ("kv_bandwidth_fraction", 0.05, 1.0, 0.5),
    ("compute_fraction", 0.1, 1.0, 0.5),
    ("step_overhead_ms", 0.0, 30.0, 2.0),
    ("interconnect_fraction", 0.05, 1.0, 0.6),
    ("fp4_compute_fraction", 0.05, 1.0, 0.3),
    ("max_batch_sequences", 32.0, 4096.0, 1024.0),
)
#: Not fitted (engine defaults / a stated allowance).
FIXED = {"allreduce_latency_us": 8.0, "kv_memory_fraction": 0.9, "activation_reserve_gib": 3.0}


@dataclass(frozen=True)
class Rows:
    """The usable rows, their stacked replicas and how each is predicted."""

    frame: pd.DataFrame
    rep: perf.Replica


def _leading_number(text: object) -> float | None:
    match = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)", str(text))
    return float(match.group(1)) if match else None


def _mode(row: pd.Series) -> str:
    text = str(row["mode"]).lower()
    rate = row["request_rate_qps"]
    saturated = isinstance(rate, float) and math.isinf(rate)   # QPS = inf rows are max-throughput runs
    if "server" in text or "closed-loop" in text or ("online" in text and not saturated):
        return "latency-constrained"
    return "max-throughput"


def load_rows(path: Path) -> tuple[Rows, pd.DataFrame]:
    """Rows that can be predicted (numeric lengths, known precision, a throughput) and the skipped ones."""
    raw = pd.read_csv(path)
    raw["isl_tokens"] = raw["isl"].map(_leading_number)
    raw["osl_tokens"] = raw["osl"].map(_leading_number)
    raw["tp_used"] = np.where(raw["tp_n"] > 0, raw["tp_n"], raw["num_gpus"]).astype(int)
    raw["batch_given"] = raw["concurrency_or_batch"].map(
        lambda t: _leading_number(str(t).split("=")[-1]) if "=" in str(t) else None)  # concurrency=N, batch=N
    raw["mode_class"] = raw.apply(_mode, axis=1)
    models = load_models()
    raw["moe"] = raw["model_key"].map(lambda k: models[k].num_experts is not None if k in models else False)
    usable = (raw["isl_tokens"].notna() & raw["osl_tokens"].notna() & raw["output_tok_s_per_gpu"].notna()
              & raw["precision_key"].isin(perf.PRECISIONS))
    frame = raw[usable].reset_index(drop=True)
    reps = [perf.replica(r.model_key, r.gpu_key, r.tp_used, r.precision_key, r.isl_tokens, r.osl_tokens)
            for r in frame.itertuples()]
    return Rows(frame, perf.stack_replicas(reps)), raw[~usable]


def _subset(rows: Rows, mask: np.ndarray) -> Rows:
    rep = perf.Replica(**{k: np.asarray(v)[mask] for k, v in rows.rep.__dict__.items()})
    return Rows(rows.frame[mask].reset_index(drop=True), rep)


def _targets(row) -> tuple[float | None, float | None]:
    text = str(row.mode)
    found = re.findall(r"(TTFT|TPOT) p99<=(\d+)", text)
    limits = {k: float(v) for k, v in found}
    return limits.get("TTFT", MLPERF_SERVER_TTFT_MS), limits.get("TPOT", MLPERF_SERVER_TPOT_MS)


def predict(rows: Rows, eff: perf.Efficiency) -> tuple[np.ndarray, np.ndarray]:
    """Predicted output tokens/s per GPU [tokens/(s·GPU)] and TPOT [ms] for every row."""
    rep, frame = rows.rep, rows.frame
    limit, kv_limit = perf.batch_limit(rep, eff)
    limit = np.maximum(limit, 1.0)
    given = frame["batch_given"].to_numpy(dtype=float)
    # A published batch is the engine's setting: only KV memory caps it, not the fitted engine limit.
    batch = np.where(np.isfinite(given), np.minimum(given, np.maximum(kv_limit, 1.0)), limit)
    rate = frame["request_rate_qps"].to_numpy(dtype=float)
    online = np.isfinite(rate)
    if online.any():
        batch[online] = perf.batch_for_arrival_rate(_subset(rows, online).rep, eff, rate[online])
    servers = np.flatnonzero(frame["mode"].str.contains("Server").to_numpy())
    for i in servers:
        ttft, tpot = _targets(frame.iloc[i])
        one = _subset(rows, np.arange(len(frame)) == i).rep
        batch[i], _ = perf.best_batch_for_targets(one, eff, int(limit[i]), tpot, ttft)
    out = np.asarray(perf.output_tokens_per_s_per_gpu(rep, eff, batch), dtype=float)
    if online.any():  # below saturation a replica delivers what is offered
        offered = rate[online] * frame["osl_tokens"].to_numpy()[online] / frame["tp_used"].to_numpy()[online]
        out[online] = np.minimum(offered, out[online])
    return out, np.asarray(perf.tpot_s(rep, eff, batch)[0], dtype=float) * 1e3


def efficiency_from(x: np.ndarray) -> perf.Efficiency:
    """An :class:`Efficiency` from the fitted vector and the fixed values."""
    return perf.Efficiency(**{**FIXED, **dict(zip([f[0] for f in FITTED], map(float, x)))})


def fit(rows: Rows, max_nfev: int = 400, start: perf.Efficiency | None = None) -> perf.Efficiency:
    """Least squares on log(predicted / published), soft-L1 loss, each group weighted equally."""
    measured = np.log(rows.frame["output_tok_s_per_gpu"].to_numpy(dtype=float))
    counts = rows.frame.groupby("group")["group"].transform("size").to_numpy(dtype=float)
    weight = 1.0 / np.sqrt(counts)
    # Published mean/median TPOT below saturation pins the small-batch step time.
    tpot = rows.frame["tpot_or_itl_ms"].to_numpy(dtype=float)
    has_tpot = np.isfinite(tpot) & (rows.frame["mode_class"] == "latency-constrained").to_numpy() & \
        ~rows.frame["mode"].str.contains("Server").to_numpy()

    def residuals(x: np.ndarray) -> np.ndarray:
        out, tpot_ms = predict(rows, efficiency_from(x))
        return np.concatenate([weight * (np.log(np.maximum(out, 1e-9)) - measured),
                               TPOT_WEIGHT * weight[has_tpot] * (np.log(tpot_ms[has_tpot]) - np.log(tpot[has_tpot]))])

    lower, upper, x0 = (np.array([f[i] for f in FITTED]) for i in (1, 2, 3))
    if start is not None:
        x0 = np.clip([getattr(start, f[0]) for f in FITTED], lower, upper)
    result = least_squares(residuals, x0, bounds=(lower, upper), loss="soft_l1", f_scale=0.2,
                           diff_step=1e-3, max_nfev=max_nfev)
    return efficiency_from(result.x)


def ape(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Absolute percentage error. [%]"""
    return np.abs(predicted / measured - 1.0) * 100.0


def cross_validate(rows: Rows, groups: list[str] | None = None, max_nfev: int = 200,
                   refit_nfev: int = 200) -> tuple[pd.Series, pd.Series]:
    """Held-out throughput and TPOT: each group predicted by a fit on the dense rows of all other groups."""
    held = pd.Series(np.nan, index=rows.frame.index)
    held_tpot = pd.Series(np.nan, index=rows.frame.index)
    dense = ~rows.frame["moe"].to_numpy()
    all_groups = rows.frame["group"].unique().tolist()
    full = fit(_subset(rows, dense), max_nfev)
    for group in groups or all_groups:
        in_group = (rows.frame["group"] == group).to_numpy()
        if rows.frame.loc[in_group, "moe"].all():   # never in a fit anyway: use the all-dense fit
            eff = full
        else:   # from the same neutral start as the full fit: nothing of the held-out group leaks in
            eff = fit(_subset(rows, dense & ~in_group), refit_nfev)
        held[in_group], held_tpot[in_group] = predict(_subset(rows, in_group), eff)
    return held, held_tpot


def summary(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    """Median and P90 APE and row count per value of ``by``."""
    g = frame.groupby(by)["ape"]
    return pd.DataFrame({"rows": g.size(), "median_ape_%": g.median().round(1), "p90_ape_%": g.quantile(0.9).round(1)})


def print_tables(frame: pd.DataFrame, title: str) -> None:
    """The tables the issue asks for: by mode and dense vs MoE, then dense rows by GPU, TP and precision."""
    frame = frame.assign(kind=np.where(frame["moe"], "MoE", "dense"))
    print(f"\n## {title}\n")
    print(summary(frame, ["kind", "mode_class"]).to_string(), "\n")
    for by in ("gpu_key", "tp_used", "precision_key"):
        print("dense models only\n" + summary(frame[frame["kind"] == "dense"], by).to_string(), "\n")
    print("MoE models\n" + summary(frame[frame["kind"] == "MoE"], ["model_key", "gpu_key"]).to_string(), "\n")
    if "tpot_ape" in frame:
        timed = frame[frame["tpot_ape"].notna()]
        print(f"TPOT of latency-constrained rows with a published TPOT/ITL: median {timed['tpot_ape'].median():.1f} %, "
              f"P90 {timed['tpot_ape'].quantile(0.9):.1f} % over {len(timed)} rows")
    goal = frame[(frame["kind"] == "dense") & (frame["mode_class"] == "max-throughput")]
    print(f"dense max-throughput: median {goal['ape'].median():.1f} %, P90 {goal['ape'].quantile(0.9):.1f} % "
          f"over {len(goal)} rows (goal: median <= 15 %, P90 <= 35 %)")


def write_parameters(eff: perf.Efficiency, rows: Rows, path: Path, in_sample: pd.DataFrame) -> None:
    """data/performance.toml: the parameters and how they were fitted."""
    dense = rows.frame[~rows.frame["moe"]]
    goal = in_sample[(~in_sample["moe"]) & (in_sample["mode_class"] == "max-throughput")]
    lines = [
        "# Efficiency parameters of the replica performance model (capplan.sizing.performance).",
        "# WRITTEN BY benchmarks/perf_model.py --fit; do not edit by hand, re-run the fit.",
        f"# command: .venv/bin/python benchmarks/perf_model.py --fit --data {DEFAULT_DATA}",
        f"# date: {dt.date.today().isoformat()}",
        f"# rows: {len(dense)} dense-model rows with a throughput figure and numeric lengths "
        f"({len(dense['group'].unique())} configuration groups); mixture-of-experts rows are not fitted on.",
        "# groups: " + ", ".join(sorted(dense["group"].unique())),
        "# method: scipy.optimize.least_squares on log(predicted / published) output tokens/s per GPU, and on",
        "#   log TPOT of the latency-constrained rows below saturation (published TPOT/ITL), soft-L1 loss",
        "#   (f_scale 0.2), rows weighted 1/sqrt(rows in their group); allreduce_latency_us,",
        "#   kv_memory_fraction and activation_reserve_gib are fixed, not fitted.",
        f"# in-sample dense max-throughput APE: median {goal['ape'].median():.1f} %, P90 {goal['ape'].quantile(0.9):.1f} %"
        " (held-out figures: docs/performance.md)",
        "",
        "[efficiency]",
    ]
    for name, value in eff.__dict__.items():
        if value is not None:
            lines.append(f"{name} = {value:.4g}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--fit", action="store_true", help="fit on all dense rows and write --out")
    parser.add_argument("--out", type=Path, default=REPO / "data" / "performance.toml")
    parser.add_argument("--quick", action="store_true", help="3 held-out groups, short fits (CI)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows, skipped = load_rows(args.data)
    print(f"{len(rows.frame)} rows predicted, {len(skipped)} skipped (no throughput, non-numeric lengths "
          f"or unknown precision)")
    dense = ~rows.frame["moe"].to_numpy()
    nfev, refit_nfev = (40, 40) if args.quick else (200, 200)
    if args.fit:
        eff = fit(_subset(rows, dense), nfev)
        in_sample = rows.frame.assign(ape=ape(predict(rows, eff)[0], rows.frame["output_tok_s_per_gpu"].to_numpy()))
        write_parameters(eff, rows, args.out, in_sample)
        print(f"wrote {args.out}: {eff}")
        print_tables(in_sample, "in sample (fit on every dense group)")
    groups = rows.frame["group"].unique().tolist()
    if args.quick:
        groups = groups[:3]
    held, held_tpot = cross_validate(rows, groups, nfev, refit_nfev)
    frame = rows.frame.assign(predicted=held.to_numpy(), predicted_tpot_ms=held_tpot.to_numpy())
    frame = frame[frame["predicted"].notna()]
    timed = (frame["mode_class"] == "latency-constrained") & frame["tpot_or_itl_ms"].notna()
    frame = frame.assign(ape=ape(frame["predicted"].to_numpy(), frame["output_tok_s_per_gpu"].to_numpy()),
                         tpot_ape=np.where(timed, ape(frame["predicted_tpot_ms"].to_numpy(),
                                                      frame["tpot_or_itl_ms"].to_numpy()), np.nan))
    print_tables(frame, f"leave-one-group-out, {len(groups)} held-out groups")
    print(f"\n{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
