"""Turn the stages' results into a :class:`~reports.document.PlanReport`: headline, budget, charts, evidence.

Nothing here computes a capacity, a latency or a price, and nothing re-runs a stage:
the numbers come from the stage results gathered in :class:`ReportInputs` (the
fleet per month and the first month's P50 fleet with its latency curve from the size
stage, the cost plans, the assumptions table) and are only arranged, so the report's
headline is by construction what the stage functions returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from capplan.config import CapplanConfig
from capplan.plan.evidence import DriftEvidence, SloEvidence
from capplan.plan.fleet import SizedFleet
from capplan.plan.inputs import MeasuredInputs
from capplan.reports import charts
from capplan.reports.document import Chart, PlanReport, Table
from capplan.sizing.cost.plan import OPTIONS, CostPlan

#: Days of hourly history drawn before the forecast fan. [days]
HISTORY_DAYS_SHOWN = 56
#: Alert episodes listed in the report's table (all are drawn on the burn-down). [count]
MAX_EPISODES_LISTED = 20


@dataclass(frozen=True)
class ReportInputs:
    """Everything the stages produced for one plan."""

    cfg: CapplanConfig
    months: list[str]
    hourly: pd.DataFrame                 # hour_utc, avg_qps, peak_second_qps, is_gap (all models)
    daily: pd.DataFrame                  # day, peak_qps, avg_qps
    measured: MeasuredInputs
    assumptions: pd.DataFrame            # capplan.plan.assumptions.assumptions_table: name, value, unit, source
    forecast: pd.DataFrame               # ForecastFrame indexed by hour, attrs from the forecasting stage
    sized: SizedFleet                    # the size stage: months (MonthlyFleet), first_p50 and its latency curve
    costs: dict[str, CostPlan]           # P10/P50/P90
    slos: list[SloEvidence]
    drift: DriftEvidence
    generated_at_utc: str
    notes: tuple[str, ...] = ()


def headline(inputs: ReportInputs) -> pd.DataFrame:
    """GPUs and monthly cost at P50 and P90 per month, and what binds."""
    cost = {level: {m.month: m.total_cost_usd for m in p.months} for level, p in inputs.costs.items()}
    f = inputs.sized.months
    return pd.DataFrame({"month": f["month"], "gpus_p50": f["gpus_p50"].astype(int),
                         "gpus_p90": f["gpus_p90"].astype(int),
                         "cost_usd_p50": f["month"].map(cost["P50"]).astype(float),
                         "cost_usd_p90": f["month"].map(cost["P90"]).astype(float), "binding": f["binding"]})


def budget(inputs: ReportInputs) -> pd.DataFrame:
    """The finance table: P50 GPU-hours and cost per option per month, with the P10 and P90 totals beside."""
    p50 = pd.DataFrame([vars(m) for m in inputs.costs["P50"].months])
    out = pd.DataFrame({"month": p50["month"], "gpu_type": inputs.costs["P50"].gpu_type})
    out = out.merge(inputs.sized.months[["month", "gpus_p50", "gpus_p90"]], on="month")
    for prefix in ("gpu_hours_", "cost_usd_"):
        for option in OPTIONS:
            out[prefix + option] = p50[prefix + option].astype(float).to_numpy()
    out["total_cost_usd"] = p50["total_cost_usd"].astype(float).to_numpy()
    for level in ("P10", "P90"):
        out[f"total_cost_usd_{level.lower()}"] = [m.total_cost_usd for m in inputs.costs[level].months]
    return out


def draw_charts(inputs: ReportInputs) -> list[Chart]:
    """Every chart of the report, each with a caption saying how to read it."""
    fc, hourly = inputs.forecast, inputs.hourly
    since = hourly["hour_utc"].max() - pd.Timedelta(days=HISTORY_DAYS_SHOWN)
    recent = hourly[hourly["hour_utc"] > since].set_index("hour_utc")["avg_qps"]
    shown = _shown_span(recent)  # s7-honest: the caption says what exists, not HISTORY_DAYS_SHOWN
    first = inputs.sized.first_p50
    out = [
        Chart("qps-forecast", "Hourly QPS and forecast",
              f"Mean QPS per hour, {shown} and the forecast to the end of the horizon "
              f"(model: {fc.attrs.get('model', '?')}); shaded: prediction intervals. The fleet is sized for the "
              f"month's busiest hour times the {inputs.measured.sources.get('burst_ratio', 'measured')} peak-to-mean "
              f"ratio of requests in flight "
              f"({inputs.measured.burst_ratio:.2f}).",
              charts.chart_png(charts.plot_qps_forecast, recent, fc, levels=_levels(fc))),
        Chart("peak-to-average", "Daily peak-to-average",
              "Busiest second of each day over the day's mean QPS: how much capacity bursts need above the mean.",
              charts.chart_png(charts.plot_peak_to_average, inputs.daily)),
        Chart("token-distributions", "Token lengths and their drift",
              f"Share of requests by input and output length, baseline ({inputs.cfg.drift.baseline_days} days) "
              f"against the latest {inputs.cfg.drift.window_days} days.",
              charts.chart_png(_draw_tokens, inputs.drift.token_hist, n_axes=2)),
        Chart("gpus-by-month", "GPUs by month",
              "Bar: GPUs the binding constraint needs at P50 (colour: throughput- or memory-bound), grey: "
              "headroom for spares, zone loss and surge; whiskers: P10–P90.",
              charts.chart_png(charts.plot_gpus_by_month, inputs.sized.months)),
        Chart("cost-by-option", "Cost by option",
              f"P50 monthly cost of each purchasing option with {inputs.costs['P50'].reserved_gpus} reserved GPUs.",
              charts.chart_png(charts.plot_cost_by_option, _cost_long(inputs.costs["P50"]))),
        Chart("latency-utilisation", "Latency against utilisation",
              "Mean latency as utilisation rises (service time = "
              f"{inputs.measured.sources.get('latency_s', 'measured')} mean latency); the dot is the target "
              "utilisation of the first month's P50 fleet. Pooling many slots keeps the knee late.",
              charts.chart_png(charts.plot_hockey_stick, inputs.sized.latency, first.target_utilisation,
                               inputs.sized.operating_latency_s)),
        Chart("backtest-error", "Forecast backtest error",
              "Rolling-origin backtest sMAPE of every candidate model; red: the one the forecast uses.",
              charts.chart_png(charts.plot_backtest_error, _backtest(fc), fc.attrs.get("model", ""))),
    ]
    for ev in inputs.slos:
        key = "slo-" + "".join(ch if ch.isalnum() else "-" for ch in ev.status.name.lower())
        out.append(Chart(key, f"Error budget: {ev.status.name}",
                         f"Error budget left over the rolling {ev.status.window_days}-day window "
                         f"(target {ev.status.target:.3%}); shaded: burn-rate alert episodes.",
                         charts.chart_png(charts.plot_burn_down, ev.burndown, ev.episodes)))
    return out


def build_report(inputs: ReportInputs, chart_list: list[Chart]) -> PlanReport:
    """Arrange the stage results as a validated :class:`PlanReport`."""
    cfg = inputs.cfg
    return PlanReport(
        month=inputs.months[0], generated_at_utc=inputs.generated_at_utc, gpu_type=cfg.sizing.gpu,
        model_name=cfg.sizing.model, headline=headline(inputs),
        recommended_reserved_gpus=int(inputs.costs["P50"].reserved_gpus), budget=budget(inputs),
        assumptions=inputs.assumptions, charts=chart_list,
        tables=_tables(inputs), notes=list(inputs.notes), forecast=inputs.forecast)


def _tables(inputs: ReportInputs) -> list[Table]:
    slo = pd.DataFrame([{k: v for k, v in ev.status.to_record().items()
                         if k in ("name", "target", "sli", "budget_remaining_fraction", "burn_rate")}
                        for ev in inputs.slos])
    episodes = pd.concat([ev.episodes for ev in inputs.slos], ignore_index=True) if inputs.slos else pd.DataFrame()
    n_episodes = len(episodes)
    if n_episodes > MAX_EPISODES_LISTED:
        episodes = episodes.nlargest(MAX_EPISODES_LISTED, "budget_spent_fraction").sort_values("start")
    fleet = inputs.sized.months[["month", "qps_p10", "qps_p50", "qps_p90", "gpus_throughput", "gpus_memory", "binding"]]
    return [
        Table("Demand and constraints by month", fleet,
              "Design peak QPS [requests/s] at P10/P50/P90 and the GPUs each constraint alone needs at P50 [GPUs]."),
        Table("SLO status", slo, "SLI and remaining error budget over each SLO's rolling window [fraction]."),
        Table("Alert episodes", episodes.astype({c: str for c in ("start", "end") if c in episodes}),
              f"Spans in which a multi-window burn-rate alert would have fired (UTC): {n_episodes} in all"
              + (f"; the {MAX_EPISODES_LISTED} that spent the most budget are listed." if n_episodes > len(episodes)
                 else ".")),
        Table("Drift findings", inputs.drift.findings, inputs.drift.caption),
    ]


def _shown_span(recent: pd.Series) -> str:
    """"the last N days" (or hours) of history the chart shows, as much as exists."""
    hours = len(recent)
    if hours >= HISTORY_DAYS_SHOWN * 24:
        return f"last {HISTORY_DAYS_SHOWN} days"
    return f"all {hours} hours of history" if hours < 48 else f"all {hours / 24:.1f} days of history"


def _levels(fc: pd.DataFrame) -> list[int]:
    return sorted(int(c.removeprefix("lo_")) for c in fc.columns if c.startswith("lo_"))


def _backtest(fc: pd.DataFrame) -> pd.DataFrame:
    scores = fc.attrs.get("backtest", {}).get("scores", {})
    rows = [{"model": name, "error_pct": s["smape"]} for name, s in scores.items() if np.isfinite(s["smape"])]
    return pd.DataFrame(rows, columns=["model", "error_pct"])


def _cost_long(p: CostPlan) -> pd.DataFrame:
    return pd.DataFrame([{"month": m.month, "option": o, "cost_usd": getattr(m, f"cost_usd_{o}")}
                         for m in p.months for o in OPTIONS])


def _draw_tokens(axes: list, token_hist: pd.DataFrame) -> None:
    for ax, metric in zip(axes, ("input_tokens", "output_tokens")):
        charts.plot_token_distribution(ax, token_hist[token_hist["metric"] == metric], metric.split("_")[0])
