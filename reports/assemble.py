"""Turn the stages' results into a :class:`~reports.document.PlanReport`: headline, budget, charts, evidence.

Nothing here computes a capacity, a latency or a price, and nothing re-runs a stage:
the numbers come from the stage results gathered in :class:`ReportInputs` (each pool's
fleet per month, first P50 fleet, latency curve, cost plans and GPU choice; the fleet's
totals and shared commitments; the assumptions table) and are only arranged (sums of
pool rows are the fleet's total rows), so the report's
headline is by construction what the stage functions returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from capplan.config import CapplanConfig
from capplan.plan.evidence import DriftEvidence, SloEvidence
from capplan.plan.inputs import MeasuredInputs
from capplan.history.compare import EarlierPlans
from capplan.history.store import FLEET as HISTORY_FLEET
from capplan.plan.pool_plan import FleetPlan, PoolPlan
from capplan.reports import charts
from capplan.reports.document import ALL_GPUS, FLEET, MIXED, Chart, PlanReport, Table
from capplan.reports.formatting import slug
from capplan.sizing.cost.plan import OPTIONS

#: Days of hourly history drawn before the forecast fan. [days]
HISTORY_DAYS_SHOWN = 56
#: Alert episodes listed in the report's table (all are drawn on the burn-down). [count]
MAX_EPISODES_LISTED = 20
#: Key of the performance model's operating curves: drawn with the charts, shown under the pools table.
OPERATING_CURVE = "operating-curve"
#: Key prefix of the SLO burn-down charts (``slo-<name>``).
SLO_CHART_PREFIX = "slo-"
#: The charts that take longest to draw, longest first: the per-pool small multiples (one axis per pool) and the
#: operating curves (two axes per pool). Drawing them first keeps a long one from being left to the end while the
#: other processes wait (:func:`drawing_rank`).
LONGEST_CHARTS = ("qps-forecast", OPERATING_CURVE, "latency-utilisation", "backtest-error", "gpus-by-month")


@dataclass(frozen=True)
class ReportInputs:
    """Everything the stages produced for one plan."""

    cfg: CapplanConfig
    months: list[str]
    hourly: pd.DataFrame                 # hour_utc, avg_qps, peak_second_qps, is_gap (all models)
    daily: pd.DataFrame                  # day, peak_qps, avg_qps (all models)
    by_pool: dict[str, tuple[pd.DataFrame, pd.DataFrame]]   # pool -> its hourly and daily traffic
    fleet: FleetPlan                     # every pool's plan (measured, forecast, sized, costs), totals, commitments
    assumptions: pd.DataFrame            # capplan.plan.assumptions.assumptions_table: name, value, unit, source
    slos: list[SloEvidence]
    drift: DriftEvidence
    generated_at_utc: str
    notes: tuple[str, ...] = ()
    earlier: EarlierPlans | None = None  # capplan.history.compare: earlier plans against what happened

    @property
    def pools(self) -> tuple[PoolPlan, ...]:
        return self.fleet.pools

    @property
    def evidence(self) -> EvidenceInputs:
        """What the evidence charts are drawn from (:func:`draw_evidence_charts`)."""
        return EvidenceInputs(self.cfg, self.daily, tuple(p.measured for p in self.pools), self.slos, self.drift)


@dataclass(frozen=True)
class EvidenceInputs:
    """What the report's evidence charts need (the daily peak-to-average, the token lengths, the SLO burn-downs):
    the stages' results up to measure, SLO and drift, known before the forecast, so the charts can be drawn beside it."""

    cfg: CapplanConfig
    daily: pd.DataFrame                  # day, peak_qps, avg_qps (all models)
    measured: tuple[MeasuredInputs, ...]  # every pool's, in the order of the pools
    slos: list[SloEvidence]
    drift: DriftEvidence


def headline(inputs: ReportInputs) -> pd.DataFrame:
    """GPUs and monthly cost at P50 and P90 per month and pool, what binds, and the fleet's total per month."""
    frames = []
    for p in inputs.pools:
        cost = {level: {m.month: m.total_cost_usd for m in c.months} for level, c in p.costs.items()}
        f = p.sized.months
        frames.append(pd.DataFrame({
            "pool": p.name, "month": f["month"], "gpu_type": p.gpu, "gpus_p50": f["gpus_p50"].astype(int),
            "gpus_p90": f["gpus_p90"].astype(int), "cost_usd_p50": f["month"].map(cost["P50"]).astype(float),
            "cost_usd_p90": f["month"].map(cost["P90"]).astype(float), "binding": f["binding"]}))
    pools = pd.concat(frames, ignore_index=True)
    total = inputs.fleet.months
    bindings = pools.groupby("month")["binding"].agg(lambda b: b.iloc[0] if b.nunique() == 1 else MIXED)
    gpus = pools.groupby("month")["gpu_type"].agg(lambda g: _summary_gpu(list(g)))
    fleet = pd.DataFrame({"pool": FLEET, "month": total["month"], "gpu_type": total["month"].map(gpus),
                          "gpus_p50": total["gpus_p50"].astype(int), "gpus_p90": total["gpus_p90"].astype(int),
                          "cost_usd_p50": total["cost_usd_p50"].astype(float),
                          "cost_usd_p90": total["cost_usd_p90"].astype(float),
                          "binding": total["month"].map(bindings)})
    return pd.concat([pools, fleet], ignore_index=True)


def _pool_budget(p: PoolPlan) -> pd.DataFrame:
    p50 = pd.DataFrame([vars(m) for m in p.costs["P50"].months])
    out = pd.DataFrame({"month": p50["month"], "pool": p.name, "gpu_type": p.costs["P50"].gpu_type})
    out = out.merge(p.sized.months[["month", "gpus_p50", "gpus_p90"]], on="month")
    for prefix in ("gpu_hours_", "cost_usd_"):
        for option in OPTIONS:
            out[prefix + option] = p50[prefix + option].astype(float).to_numpy()
    out["total_cost_usd"] = p50["total_cost_usd"].astype(float).to_numpy()
    for level in ("P10", "P90"):
        out[f"total_cost_usd_{level.lower()}"] = [m.total_cost_usd for m in p.costs[level].months]
    out["throughput_source"] = p.throughput_source
    return out


def budget(inputs: ReportInputs) -> pd.DataFrame:
    """The finance table: per month and pool (its GPU type), P50 GPU-hours and cost per option, P10/P90 totals
    beside; then each month's total row (``pool = "total"``; ``gpu_type``: the pools' one type, else ``all``),
    the sum of its pool rows."""
    pools = pd.concat([_pool_budget(p) for p in inputs.pools], ignore_index=True)
    numeric = pools.select_dtypes("number").columns
    total = pools.groupby("month", sort=True)[list(numeric)].sum().reset_index()
    total.insert(1, "pool", FLEET)
    total.insert(2, "gpu_type", _summary_gpu(list(pools["gpu_type"])))
    total["throughput_source"] = "—"
    out = pd.concat([pools, total[pools.columns]], ignore_index=True)
    order = {name: i for i, name in enumerate([p.name for p in inputs.pools] + [FLEET])}
    out = out.sort_values(["month", "pool"], key=lambda c: c.map(order) if c.name == "pool" else c, kind="stable")
    return out.reset_index(drop=True).astype({"gpus_p50": int, "gpus_p90": int})


def _per_pool(draw, plans, args_of, shared_legend: bool = False) -> bytes:
    """Small multiples: one axis per pool, titled with its name; ``args_of(plan)`` gives ``draw``'s arguments.
    ``shared_legend``: one legend above the figure instead of one above each axis (they would overlap)."""
    n = len(plans)

    def layout(axes, *_):
        axes = axes if isinstance(axes, list) else [axes]
        for ax, p in zip(axes, plans):
            draw(ax, *args_of(p))
            ax.set_title(f"{p.name} ({p.gpu})", fontsize="medium")
        if shared_legend and n > 1:
            charts.legend_above_figure(axes)
    return charts.chart_png(layout, n_axes=n, size_in=(max(8.0, 4.2 * n), 3.4))


def chart_keys(inputs: ReportInputs) -> list[str]:
    """The keys of the report's charts, in the report's order (:func:`draw_charts` draws them)."""
    return [key for key, *_ in _chart_plan(inputs)]


def draw_charts(inputs: ReportInputs, keys: Sequence[str] | None = None) -> list[Chart]:
    """Every chart of the report (only those of ``keys`` when given, in the report's order), each with a caption
    saying how to read it; per pool as small multiples. The operating curves (:data:`OPERATING_CURVE`) are among
    them: :func:`build_report` puts them under the pools table."""
    return _drawn(_chart_plan(inputs), keys)


def drawing_rank(key: str) -> int:
    """Sort key of a chart's drawing order: :data:`LONGEST_CHARTS` first in their order, then the others (a stable
    sort keeps those in the report's order)."""
    return LONGEST_CHARTS.index(key) if key in LONGEST_CHARTS else len(LONGEST_CHARTS)


def evidence_chart_keys(evidence: EvidenceInputs) -> list[str]:
    """The keys of the evidence charts (:class:`EvidenceInputs`), in the report's order."""
    return [key for key, *_ in _evidence_chart_plan(evidence)]


def draw_evidence_charts(evidence: EvidenceInputs, keys: Sequence[str] | None = None) -> list[Chart]:
    """The evidence charts as :func:`draw_charts` draws them (the same PNG bytes and captions), from what is known
    before the forecast; only those of ``keys`` when given."""
    return _drawn(_evidence_chart_plan(evidence), keys)


def _drawn(planned: list[tuple[str, str, str, Callable[[], bytes]]], keys: Sequence[str] | None) -> list[Chart]:
    """The charts of ``planned`` (a chart plan, :func:`_chart_plan`'s entries) drawn, only those of ``keys`` when given."""
    return [Chart(key, title, caption, draw()) for key, title, caption, draw in planned if keys is None or key in keys]


def _chart_plan(inputs: ReportInputs) -> list[tuple[str, str, str, Callable[[], bytes]]]:
    """``(key, title, caption, draw)`` of every chart of the report, in its order: the QPS forecast, the traffic
    evidence (peak-to-average, token lengths), the fleet, cost, latency and backtest charts, the operating curves,
    the SLO burn-downs; ``draw()`` returns its PNG."""
    evidence = _evidence_chart_plan(inputs.evidence)
    traffic = [entry for entry in evidence if not entry[0].startswith(SLO_CHART_PREFIX)]
    burn_downs = [entry for entry in evidence if entry[0].startswith(SLO_CHART_PREFIX)]
    plan = _plan_chart_plan(inputs)
    return plan[:1] + traffic + plan[1:] + burn_downs


def _plan_chart_plan(inputs: ReportInputs) -> list[tuple[str, str, str, Callable[[], bytes]]]:
    """:func:`_chart_plan`'s charts of the forecast and the sized fleet, in the report's order."""
    plans = inputs.pools

    def recent(p: PoolPlan) -> pd.Series:
        hourly = inputs.by_pool[p.name][0]
        since = hourly["hour_utc"].max() - pd.Timedelta(days=HISTORY_DAYS_SHOWN)
        return hourly[hourly["hour_utc"] > since].set_index("hour_utc")["avg_qps"]

    bursts = ", ".join(f"{p.name} {p.measured.burst_ratio:.2f} ({p.measured.sources.get('burst_ratio', 'measured')})"
                       for p in plans)
    shown = _shown_span(recent(plans[0]))  # the caption says what exists, not HISTORY_DAYS_SHOWN
    out = [
        ("qps-forecast", "Hourly QPS and forecast, per pool",
         f"Mean QPS per hour of each pool, {shown} and its own forecast to the end of "
         f"the horizon; shaded: prediction intervals. Each pool is sized for the month's busiest hour times "
         f"its peak-to-mean ratio of requests in flight ({bursts}).",
         lambda: _per_pool(lambda ax, r, fc: charts.plot_qps_forecast(ax, r, fc, levels=_levels(fc)), plans,
                           lambda p: (recent(p), p.forecast))),
        ("fleet-gpus-by-month", "Fleet GPUs by month",
         "GPUs at P50 per month, stacked by pool; whisker: the fleet's P90 (the sum of the pools' P90s, an "
         "upper band: the pools' peaks need not coincide).",
         lambda: charts.chart_png(charts.plot_fleet_gpus, _fleet_long(inputs), inputs.fleet.months)),
        ("gpus-by-month", "GPUs by month, per pool",
         "Bar: GPUs the binding constraint needs at P50 (colour: throughput- or memory-bound), grey: "
         "headroom for spares, zone loss and surge; whiskers: P10–P90.",
         lambda: _per_pool(charts.plot_gpus_by_month, plans, lambda p: (p.sized.months,), shared_legend=True)),
        ("cost-by-option", "Fleet cost by option",
         "P50 monthly cost of each purchasing option, summed over the pools (each with its own commitment).",
         lambda: charts.chart_png(charts.plot_cost_by_option, _cost_long(inputs))),
        ("latency-utilisation", "Latency against utilisation, per pool",
         "Mean latency as utilisation rises (service time = the pool's mean latency: "
         + ", ".join(f"{p.name} {p.measured.sources.get('latency_s', 'measured')}" for p in plans)
         + "); the dot is the "
         "target utilisation of the first month's P50 fleet. Pooling many slots keeps the knee late.",
         lambda: _per_pool(charts.plot_hockey_stick, plans, lambda p: (p.sized.latency, p.sized.first_p50.target_utilisation,
                                                                       p.sized.operating_latency_s))),
        ("backtest-error", "Forecast backtest error, per pool",
         "Rolling-origin backtest sMAPE of every candidate model; red: the one each pool's forecast uses "
         "(an ensemble reads 'mean of N'; the assumptions table names its models).",
         lambda: _per_pool(charts.plot_backtest_error, plans, lambda p: (_backtest(p.forecast),
                                                                         p.forecast.attrs.get("model", "")))),
    ]
    curves = _operating_curve_plan(plans)  # not among the report's charts: shown under the pools table
    return out + ([curves] if curves is not None else [])


def _evidence_chart_plan(evidence: EvidenceInputs) -> list[tuple[str, str, str, Callable[[], bytes]]]:
    """:func:`_chart_plan`'s charts of the measured traffic and the SLOs, in the report's order."""
    drift = evidence.cfg.drift
    token_caption = (f"Share of requests by input and output length, baseline ({drift.baseline_days} days) "
                     f"against the latest {drift.window_days} days.")
    if "baseline" not in set(evidence.drift.token_hist.get("window", ())):  # too little history for a baseline
        token_caption = (f"Share of requests by input and output length in the latest {drift.window_days} days "
                         f"only: no baseline to compare with (the drift test needs {drift.baseline_days + drift.window_days}"
                         f" days of history).")
    out = [
        ("peak-to-average", "Daily peak-to-average",
         "Busiest second of each day over the day's mean QPS, all models: how much capacity bursts need above "
         "the mean." + _step_peak_caption(evidence.measured),
         lambda: charts.chart_png(charts.plot_peak_to_average, evidence.daily)),
        ("token-distributions", "Token lengths and their drift", token_caption,
         lambda: charts.chart_png(_draw_tokens, evidence.drift.token_hist, n_axes=2)),
    ]
    for ev, key in zip(evidence.slos, slo_chart_keys([ev.status.name for ev in evidence.slos])):
        out.append((key, f"Error budget: {ev.status.name}",
                    f"Error budget left over the rolling {ev.status.window_days}-day window "
                    f"(target {ev.status.target:.3%}); shaded: burn-rate alert episodes"
                    + (f"; dashed grey: the history's first {ev.status.window_days} days, whose window is not "
                       "yet full (a shorter window's budget, left out of the y-range)"
                       if "window_full" in ev.burndown and not ev.burndown["window_full"].all() else "") + ".",
                    lambda ev=ev: charts.chart_png(charts.plot_burn_down, ev.burndown, ev.episodes)))
    return out


def slo_chart_keys(names: Sequence[str]) -> list[str]:
    """Chart key (and PNG name) of each SLO's burn-down: ``slo-`` and the name, lower case, every character
    other than a letter or digit a ``-``; names that come out alike (``p99 latency``, ``p99-latency``) get
    ``-2``, ``-3`` … in their order, so no chart overwrites another."""
    keys: list[str] = []
    for name in names:
        base = SLO_CHART_PREFIX + slug(name)
        key, n = base, 1
        while key in keys:
            n += 1
            key = f"{base}-{n}"
        keys.append(key)
    return keys


def _step_peak_caption(measured: Sequence[MeasuredInputs]) -> str:
    """What the daily peak means where metrics fed hours: the busiest step's mean rate, not a measured second."""
    steps = sorted({m.metrics_step_s for m in measured if m.metrics_step_s})
    if not steps:
        return ""
    return (f" In hours fed by metrics the busiest second is the busiest {', '.join(f'{s} s' for s in steps)} step's "
            "mean rate (modelled: peak from a step rate, not measured per second), lower than a logged one; the plan "
            "sizes on requests in flight, not on this peak.")


def _summary_gpu(types: list[str]) -> str:
    """The GPU type of a total row: the pools' one type, or ``all`` when they run on several."""
    return types[0] if len(set(types)) == 1 else ALL_GPUS


def _summary(values: list[str]) -> str:
    unique = list(dict.fromkeys(values))
    return unique[0] if len(unique) == 1 else ", ".join(unique)


def build_report(inputs: ReportInputs, chart_list: list[Chart]) -> PlanReport:
    """Arrange the stage results as a validated :class:`PlanReport`.

    ``chart_list`` is :func:`draw_charts`'s: the operating curves (key :data:`OPERATING_CURVE`) go under the
    pools table, every other chart to the report's charts.
    """
    plans = inputs.pools
    curves = [c for c in chart_list if c.key == OPERATING_CURVE]
    chart_list = [c for c in chart_list if c.key != OPERATING_CURVE]
    shared = inputs.fleet.commitments
    reserved = "; ".join(f"{c.reserved_gpus} {gpu} GPU(s) shared by {', '.join(c.per_pool_reserved_gpus)} "
                         f"(per-pool commitment would reserve {sum(c.per_pool_reserved_gpus.values())}; sharing saves "
                         f"{c.saving_usd:,.0f} USD over the horizon)" for gpu, c in shared.items())
    forecast = pd.concat([p.forecast.assign(pool=p.name).set_index("pool", append=True) for p in plans])
    forecast = forecast.reset_index(level="pool")
    return PlanReport(
        month=inputs.months[0], generated_at_utc=inputs.generated_at_utc,
        gpu_type=_summary([p.gpu for p in plans]),
        model_name=f"{len(plans)} pool(s) ({', '.join(f'{p.name}: {p.pool.model}' for p in plans)})",
        headline=headline(inputs), recommended_reserved_gpus=int(sum(c.reserved_gpus for c in shared.values())),
        budget=budget(inputs), assumptions=inputs.assumptions, charts=chart_list,
        tables=_tables(inputs, curves[0] if curves else None), notes=list(inputs.notes), forecast=forecast,
        reserved_summary=reserved, summary=summary(inputs),
        variance=_fleet_as_total(inputs.earlier.variance) if inputs.earlier is not None else None)


def summary(inputs: ReportInputs) -> dict:
    """Per-pool results and the fleet's totals as plain data (``plan.json``, ``capplan plan --json``)."""
    head = headline(inputs)
    records = lambda frame: frame.drop(columns="pool").to_dict(orient="records")  # noqa: E731
    pools = []
    for p, row in zip(inputs.pools, pool_table(inputs.pools).to_dict(orient="records")):
        pools.append({**row, "months": records(head[head["pool"] == p.name]),
                      # the first month's P50 design peak that gpus_throughput / gpus_memory are sized at [requests/s]
                      "design_peak_qps": float(p.sized.months["qps_p50"].iloc[0]),
                      "reserved_gpus": int(p.costs["P50"].reserved_gpus),
                      "candidates": p.choice.rows() if p.choice is not None else None})
    return {"month": inputs.months[0], "pools": pools, "totals": records(head[head["pool"] == FLEET]),
            "fleet_p90": "sum of the pools' P90s (an upper band)",
            "commitments": inputs.fleet.commitment_table().to_dict(orient="records")}


def pool_table(plans: tuple[PoolPlan, ...]) -> pd.DataFrame:
    """One row per pool: what it serves, how it is built, its measured mix and what binds at the first P50 peak."""
    rows = []
    for p in plans:
        f, m = p.sized.first_p50, p.measured
        rows.append({"pool": p.name, "models": ", ".join(p.pool.models), "architecture": p.pool.model,
                     "gpu_type": p.gpu, "tensor_parallel": int(f.tensor_parallel), "precision": p.spec.weights_dtype,
                     "target_utilisation": float(f.target_utilisation), "input_tokens": m.input_tokens_per_request,
                     "output_tokens": m.output_tokens_per_request, "latency_s": m.latency_s,
                     "kv_tokens": m.kv_tokens_per_sequence, "burst_ratio": m.burst_ratio,
                     "gpus_throughput": f.gpus_by_throughput, "gpus_memory": f.gpus_by_memory,
                     "binding": f.binding_constraint, "binding_margin_gpus": f.binding_margin_gpus,
                     "gpus_p50": int(f.total_gpus), "interruptible_share": p.interruptible_share,
                     "throughput_source": p.throughput_source})
    return pd.DataFrame(rows)


def operating_curve_chart(plans: tuple[PoolPlan, ...]) -> Chart | None:
    """Per pool whose throughput is modelled or calibrated, the performance model's curve the plan read its
    throughput from (:attr:`capplan.plan.throughput.ThroughputEstimate.curve`); ``None`` when no pool has one."""
    planned = _operating_curve_plan(plans)
    if planned is None:
        return None
    key, title, caption, draw = planned
    return Chart(key, title, caption, draw())


def _operating_curve_plan(plans: tuple[PoolPlan, ...]) -> tuple[str, str, str, Callable[[], bytes]] | None:
    """:func:`operating_curve_chart` as ``(key, title, caption, draw)``, as :func:`_chart_plan`; ``None`` when no
    pool has a curve."""
    curved = [p for p in plans if p.throughput is not None and p.throughput.curve is not None]
    if not curved:
        return None
    others = [f"{p.name}: no modelled curve ({p.throughput_source})" for p in plans if p not in curved]
    return (OPERATING_CURVE, "Throughput and TPOT against batch, per pool (modelled)",
            "Modelled by the performance model (sizing.performance) at each pool's production token mix, on its "
            "GPU, TP and precision, over batch sizes up to the KV-memory batch limit: output tokens/s per GPU "
            "(left axis) and mean TPOT (right axis, dashed; dotted: the TPOT target); red: the batch the plan "
            "runs at. " + "; ".join(_curve_text(p) for p in curved) + "."
            + (" " + "; ".join(others) + "." if others else ""),
            lambda: charts.chart_png(draw_operating_curves, curved, n_axes=len(curved),
                                     size_in=(max(8.0, 4.2 * len(curved)), 3.4)))


def draw_operating_curves(axes, plans: list[PoolPlan]) -> dict[str, dict]:
    """Small multiples of :func:`charts.plot_operating_curve`, one axis per pool titled as the other per-pool
    charts, one legend above them all. Returns what each pool's axis drew, by pool name."""
    axes = axes if isinstance(axes, list) else [axes]
    drawn = {}
    for ax, p in zip(axes, plans):
        c = p.throughput.curve
        drawn[p.name] = charts.plot_operating_curve(ax, pd.DataFrame(list(c.points)), c.batch,
                                                    c.output_tokens_per_s_per_gpu, c.tpot_ms, c.tpot_ms_max)
        ax.set_title(f"{p.name} ({p.gpu})", fontsize="medium")
    if len(axes) > 1:  # the twin axes hold the TPOT lines
        charts.legend_above_figure([*axes, *(d["tpot_axis"] for d in drawn.values())])
    return drawn


def _curve_text(p: PoolPlan) -> str:
    c = p.throughput.curve
    calibrated = (f", throughputs scaled by the load test's measured/model ratio {c.calibration_ratio:.3g} "
                  "(TPOT and TTFT the model's)" if c.source == "calibrated" else "")
    return (f"{p.name} ({c.source}{calibrated}): {c.inputs}; there {c.output_tokens_per_s_per_gpu:,.0f} tokens/s per "
            f"GPU, TPOT {c.tpot_ms:.1f} ms, TTFT {c.ttft_ms:,.0f} ms; KV memory holds {c.kv_memory_batch_limit} "
            "sequences")


def _tables(inputs: ReportInputs, operating_curve: Chart | None) -> list[Table]:
    slo = pd.DataFrame([{k: v for k, v in ev.status.to_record().items()
                         if k in ("name", "target", "sli", "budget_remaining_fraction", "burn_rate")}
                        for ev in inputs.slos])
    episodes = pd.concat([ev.episodes for ev in inputs.slos], ignore_index=True) if inputs.slos else pd.DataFrame()
    n_episodes = len(episodes)
    if n_episodes > MAX_EPISODES_LISTED:
        episodes = episodes.nlargest(MAX_EPISODES_LISTED, "budget_spent_fraction").sort_values("start")
    demand = pd.concat([p.sized.months[["month", "qps_p10", "qps_p50", "qps_p90", "gpus_throughput", "gpus_memory",
                                        "binding"]].assign(pool=p.name) for p in inputs.pools], ignore_index=True)
    demand = demand[["pool", *demand.columns.drop("pool")]]
    out = [
        Table("Pools", pool_table(inputs.pools),
              "Each pool at its first month's P50 design peak: its measured mix (tokens/request, latency [s], KV "
              "tokens per sequence, burst ratio), the GPUs each constraint alone needs [GPUs], what binds and by how "
              "much; throughput source: measured (a load test), calibrated (a load test carried to the pool's "
              "mix by the performance model), modelled (the performance model) or assumed (the GPU catalogue's "
              "rates); the assumptions table says what each rests on.", operating_curve),
        Table("Demand and constraints by month", demand,
              "Design peak QPS [requests/s] at P10/P50/P90 and the GPUs each constraint alone needs at P50 [GPUs], "
              "per pool."),
        Table("Commitment across pools", inputs.fleet.commitment_table(),
              "Reserved GPUs of one type are interchangeable between its pools: R* optimised on the summed hourly "
              "P50 need (interactive part) against each pool committing alone; horizon cost of reserved + "
              "on-demand [USD]. The budget prices each pool with its own commitment (the per-pool column)."),
    ]
    for p in inputs.pools:
        if p.choice is not None:
            saving = p.choice.saving_usd_per_month
            out.append(Table(f"GPU choice: {p.name}", pd.DataFrame(p.choice.rows()),
                             f"Every catalogue GPU and TP degree the model fits on (brute force), sized at the first "
                             f"month's P50 peak and priced at the commit level [USD/month]; chosen: "
                             f"{p.choice.chosen.gpu} TP {p.choice.chosen.tensor_parallel}"
                             + (f", {saving:,.0f} USD/month cheaper than the next best." if saving is not None
                                else ".")))
    return out + [
        Table("SLO status", slo, "SLI and remaining error budget over each SLO's rolling window [fraction]."),
        Table("Alert episodes", episodes.astype({c: str for c in ("start", "end") if c in episodes}),
              f"Spans in which a multi-window burn-rate alert would have fired (UTC): {n_episodes} in all"
              + (f"; the {MAX_EPISODES_LISTED} that spent the most budget are listed." if n_episodes > len(episodes)
                 else ".")),
        Table("Drift findings", inputs.drift.findings, inputs.drift.caption),
        earlier_plans_table(inputs.earlier),
    ]


#: The columns of "How earlier plans did", in the order printed.
VARIANCE_COLUMNS = ("month", "pool", "planned_requests_p50", "actual_requests", "planned_peak_qps_p90",
                    "actual_peak_qps", "planned_gpus_p50", "planned_gpus_p90", "actual_gpus_needed",
                    "planned_cost_usd", "actual_cost_usd", "variance_volume_usd", "variance_token_mix_usd",
                    "variance_price_usd", "requests_in_band", "peak_in_band", "complete")


def draw_plan_variance(grid: list[list], variance: pd.DataFrame) -> dict[tuple[str, str], dict]:
    """Small multiples of earlier plans against what happened: a row per pool (the fleet last), a column per
    metric of :data:`charts.VARIANCE_METRICS`; one legend above them all. Returns what each axis drew, by
    (pool, metric)."""
    drawn = {}
    for row, (pool, rows) in zip(grid, _variance_pools(variance)):
        for ax, metric in zip(row, charts.VARIANCE_METRICS):
            drawn[(pool, metric)] = charts.plot_plan_variance(ax, rows, metric)
            ax.set_title("fleet (sum of pools)" if pool == HISTORY_FLEET else pool, loc="left", fontsize="medium")
    charts.legend_above_figure([ax for row in grid for ax in row], first=("planned P10–P90", "planned P50"))
    return drawn


def _fleet_as_total(variance: pd.DataFrame) -> pd.DataFrame:
    """The stored fleet rows (``__fleet__``) named as every other table of the report names them: ``total``."""
    if "pool" not in variance:  # no earlier plan compared: nothing to rename
        return variance
    return variance.assign(pool=variance["pool"].replace({HISTORY_FLEET: FLEET}))


def _variance_pools(variance: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Each pool's rows in the order they come, the fleet's last."""
    pools = [p for p in dict.fromkeys(variance["pool"]) if p != HISTORY_FLEET]
    pools += [HISTORY_FLEET] if (variance["pool"] == HISTORY_FLEET).any() else []
    return [(p, variance[variance["pool"] == p]) for p in pools]


def earlier_plans_chart(variance: pd.DataFrame) -> Chart:
    """The chart of "How earlier plans did", drawn from the same variance rows as its table."""
    n_rows = len(_variance_pools(variance))
    png = charts.chart_png(draw_plan_variance, variance, n_axes=len(charts.VARIANCE_METRICS), n_rows=n_rows,
                           size_in=(10.0, 0.4 + 2.3 * n_rows))
    return Chart("plan-variance", "Earlier plans against what happened",
                 "Per month an earlier plan covered: shaded, the stored plan's P10–P90; dash, its P50 (both "
                 "modelled when the plan was made); dot, the actual: requests and design peak measured from the "
                 "logs, the GPUs that traffic needed and their cost modelled with the plan's own sizing and prices "
                 "on the planned GPU type. A hollow dot is a partial month: its actual covers the observed hours "
                 "only. The fleet's band is the sum of the pools' bands (an upper band).", png)


def earlier_plans_table(earlier: EarlierPlans | None) -> Table:
    """"How earlier plans did": each earlier month's plan against what its traffic needed, and its chart."""
    frame = pd.DataFrame(columns=list(VARIANCE_COLUMNS))
    chart = None
    if earlier is not None and not earlier.variance.empty:
        frame = pd.concat([rows for _pool, rows in _variance_pools(earlier.variance)])  # pools, then the fleet
        frame = _fleet_as_total(frame.sort_values("month", kind="stable")[list(VARIANCE_COLUMNS)]).reset_index(drop=True)
        chart = earlier_plans_chart(earlier.variance)
    caption = ("Each month that an earlier plan (the latest made before the month began) covered and the logs now "
               "observe: planned P50 requests and P90 design peak [requests/s] against what came; the GPUs that "
               "traffic needed, sized the same way on the planned GPU type [GPUs]; its cost with the planned "
               "reserved GPUs against the planned P50 cost [USD], the difference split exactly into volume, "
               "token mix (GPU-hours per request) and price (USD per GPU-hour); whether the actual fell inside "
               "P10–P90. A partial month compares only its observed hours.")
    if frame.empty:
        caption = ("No earlier plan covers a month the logs observe yet: this plan is stored, and next month's "
                   "report compares it with what happened.")
    if earlier is not None and earlier.notes:
        caption += " Not compared: " + "; ".join(earlier.notes) + "."
    return Table("How earlier plans did", frame, caption, chart)


def _fleet_long(inputs: ReportInputs) -> pd.DataFrame:
    return pd.concat([p.sized.months[["month", "gpus_p50"]].assign(pool=p.name) for p in inputs.pools],
                     ignore_index=True)


def _shown_span(recent: pd.Series) -> str:
    """"the last N days" (or hours) of history the chart shows, as much as exists."""
    hours = len(recent)
    if hours >= HISTORY_DAYS_SHOWN * 24:
        return f"last {HISTORY_DAYS_SHOWN} days"
    if hours == 1:
        return "the 1 hour of history"
    return f"all {hours} hours of history" if hours < 48 else f"all {hours / 24:.1f} days of history"


def _levels(fc: pd.DataFrame) -> list[int]:
    return sorted(int(c.removeprefix("lo_")) for c in fc.columns if c.startswith("lo_"))


def _backtest(fc: pd.DataFrame) -> pd.DataFrame:
    scores = fc.attrs.get("backtest", {}).get("scores", {})
    rows = [{"model": name, "error_pct": s["smape"]} for name, s in scores.items() if np.isfinite(s["smape"])]
    return pd.DataFrame(rows, columns=["model", "error_pct"])


def _cost_long(inputs: ReportInputs) -> pd.DataFrame:
    rows = pd.DataFrame([{"month": m.month, "option": o, "cost_usd": getattr(m, f"cost_usd_{o}")}
                         for p in inputs.pools for m in p.costs["P50"].months for o in OPTIONS])
    return rows.groupby(["month", "option"], sort=False, as_index=False)["cost_usd"].sum()


def _draw_tokens(axes: list, token_hist: pd.DataFrame) -> None:
    for ax, metric in zip(axes, ("input_tokens", "output_tokens")):
        charts.plot_token_distribution(ax, token_hist[token_hist["metric"] == metric], metric.split("_")[0])
