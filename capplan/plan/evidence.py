"""The SLO and drift stages' evidence for the report: SLO standing and burn-down, token-length drift."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pandas as pd

from capplan.config import CapplanConfig, DriftConfig
from capplan.drift.detect import detect_drift
from capplan.drift.histogram import bin_lower_tokens, daily_histograms
from capplan.drift.pricing import request_costs
from capplan.ingest.coverage import defaulted_columns
from capplan.slo.measurable import unmeasurable_reason
from capplan.slo.status import SloStatus, burndown_of_events, episodes_of_events, minute_events, slo_status


@dataclass(frozen=True)
class SloEvidence:
    """One SLO's standing, its error-budget burn-down and its alert episodes (the SLO stage's outputs)."""

    status: SloStatus
    burndown: pd.DataFrame
    episodes: pd.DataFrame


def slo_evidence(con: duckdb.DuckDBPyConnection, cfg: CapplanConfig) -> list[SloEvidence]:
    """Run the SLO stage for every configured SLO the logs can measure (the others are notes, see
    :func:`capplan.plan.notes.coverage_notes`)."""
    defaulted = defaulted_columns(con)  # s7-honest: an SLI over defaulted columns is unknown, not 100 %
    out = []
    for s in cfg.slos:
        if unmeasurable_reason(s, defaulted) is None:
            events = minute_events(con, s)  # the whole history's minutes: read once for the status, burn-down and alerts
            out.append(SloEvidence(slo_status(con, s, history=events), burndown_of_events(events, s),
                                   episodes_of_events(events, s)))
    return out


@dataclass(frozen=True)
class DriftEvidence:
    """Token-length shares of the baseline and latest windows, and the drift stage's priced findings."""

    token_hist: pd.DataFrame   # window ('baseline' | 'latest'), metric, tokens (bin lower edge) [tokens], share [fraction]
    findings: pd.DataFrame     # capplan.drift.pricing.DriftFinding
    caption: str


def window_token_shares(hist: pd.DataFrame, cfg: DriftConfig) -> pd.DataFrame:
    """Share of requests per token bin in the latest ``window_days`` and the ``baseline_days`` before, all models.

    ``hist`` is :func:`capplan.drift.histogram.daily_histograms`'s frame; each bin's ``tokens`` is its
    lower edge (:func:`capplan.drift.histogram.bin_lower_tokens`).
    """
    end = hist["day_utc"].max() + pd.Timedelta(days=1)
    starts = {"latest": end - pd.Timedelta(days=cfg.window_days)}
    starts["baseline"] = starts["latest"] - pd.Timedelta(days=cfg.baseline_days)
    window = pd.Series(pd.NA, index=hist.index, dtype="string")
    window[(hist["day_utc"] >= starts["baseline"]) & (hist["day_utc"] < starts["latest"])] = "baseline"
    window[hist["day_utc"] >= starts["latest"]] = "latest"
    counts = hist.assign(window=window).dropna(subset=["window"]).groupby(
        ["window", "metric", "bin"], as_index=False)["requests"].sum()
    counts["share"] = counts["requests"] / counts.groupby(["window", "metric"])["requests"].transform("sum")
    counts["tokens"] = bin_lower_tokens(counts["bin"])
    return counts[["window", "metric", "tokens", "share"]].astype({"window": str})


def drift_evidence(con: duckdb.DuckDBPyConnection, cfg: CapplanConfig) -> DriftEvidence:
    """Run the drift stage: window shares for the chart and the priced findings for the table."""
    hist = daily_histograms(con)
    findings = detect_drift(con, cfg.drift, request_costs(cfg, hist["model"].unique()))
    caption = (f"Token-length drift per model: the latest {cfg.drift.window_days}-day window against the "
               f"{cfg.drift.baseline_days} days before, priced per request at each "
               f"model's pool operating point (modelled) or, where the pool's model or GPU is not modelled, at the "
               f"catalogue rate (assumed; the table's cost source says which) ({len(findings)} finding(s)).")
    return DriftEvidence(window_token_shares(hist, cfg.drift), findings, caption)
