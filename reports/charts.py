"""Charts for the monthly capacity plan: one ``plot_*(ax, ...)`` per figure, one saver.

Each ``plot_*`` function draws on the matplotlib ``Axes`` it is given and returns
the artists it drew; it never creates figures or touches files, so drawing stays
apart from collecting the data. Every axis label carries its unit. :func:`chart_png`
lays a figure out and returns it as PNG bytes; it uses :class:`matplotlib.figure.Figure`
directly (not ``pyplot``) so charts can be drawn from worker threads.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, MaxNLocator, NullFormatter, ScalarFormatter

#: Colours used consistently across charts (matplotlib's default cycle).
COLOURS = {"p50": "C0", "band": "C0", "history": "0.35", "throughput": "C1", "memory": "C2",
           "headroom": "0.75", "chosen": "C3", "latency": "C4"}


def plot_qps_forecast(ax: Axes, history_qps: pd.Series, forecast: pd.DataFrame,
                      levels: Sequence[int] = (80, 95)) -> list[Any]:
    """Hourly QPS history and the forecast fan.

    Parameters
    ----------
    ax : Axes
        Where to draw.
    history_qps : pandas.Series
        Observed mean QPS per hour, indexed by hour (UTC). [requests/s]
    forecast : pandas.DataFrame
        Indexed by hour (UTC), columns ``mean`` and ``lo_<L>``/``hi_<L>`` for each level. [requests/s]
    levels : sequence of int
        Interval levels to shade, widest drawn first. [%]

    Returns
    -------
    list
        The drawn artists.
    """
    artists: list[Any] = list(ax.plot(history_qps.index, history_qps.to_numpy(), lw=0.6,
                                      color=COLOURS["history"], label="observed"))
    for i, level in enumerate(sorted(levels, reverse=True)):
        artists.append(ax.fill_between(forecast.index, forecast[f"lo_{level}"], forecast[f"hi_{level}"],
                                       color=COLOURS["band"], alpha=0.15 + 0.15 * i, lw=0,
                                       label=f"{level}% interval"))
    artists += ax.plot(forecast.index, forecast["mean"], lw=0.8, color=COLOURS["p50"], label="forecast (P50)")
    locator = mdates.AutoDateLocator(minticks=3, maxticks=7)  # full dates overlap on a pool's narrow axis
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    pad_single_instant(ax, [*history_qps.index, *forecast.index])
    ax.set_xlabel("Time [UTC]")
    ax.set_ylabel("Mean QPS per hour [requests/s]")
    ax.legend(loc="upper left", fontsize="small")
    return artists


def plot_peak_to_average(ax: Axes, daily: pd.DataFrame) -> list[Any]:
    """Daily peak-second QPS divided by the daily mean QPS.

    Parameters
    ----------
    daily : pandas.DataFrame
        Columns ``day`` (date), ``peak_qps`` and ``avg_qps``. [requests/s]
    """
    ratio = daily["peak_qps"] / daily["avg_qps"].where(daily["avg_qps"] > 0)
    artists = list(ax.plot(pd.to_datetime(daily["day"]), ratio, marker=".", lw=0.8, color=COLOURS["p50"]))
    artists.append(ax.axhline(float(ratio.median()), ls="--", color="0.5", lw=0.8, label="median"))
    pad_single_instant(ax, daily["day"])
    ax.set_xlabel("Day [UTC]")
    ax.set_ylabel("Peak-to-average QPS [ratio]")
    ax.legend(loc="upper left", fontsize="small")
    return artists


def plot_token_distribution(ax: Axes, hist: pd.DataFrame, kind: str) -> list[Any]:
    """Token-length distribution of one kind, baseline window against recent window.

    Parameters
    ----------
    hist : pandas.DataFrame
        Columns ``window`` (e.g. ``'baseline'``, ``'recent'``), ``tokens`` (bin lower edge) [tokens]
        and ``share`` (fraction of requests in the bin) [fraction].
    kind : str
        ``'input'`` or ``'output'``; used in the axis label.
    """
    artists: list[Any] = []
    for window, part in hist.groupby("window", sort=True):
        part = part.sort_values("tokens")
        artists += ax.step(part["tokens"], part["share"], where="post", label=str(window))
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel(f"{kind.capitalize()} length [tokens]")
    ax.set_ylabel("Share of requests [fraction]")
    if artists:
        ax.legend(loc="upper right", fontsize="small")
    else:  # e.g. a metrics-only database: no per-request token lengths by day
        ax.text(0.5, 0.5, "no daily token-length histograms in these data", ha="center", va="center",
                transform=ax.transAxes)
    return artists


def plot_gpus_by_month(ax: Axes, sizing: pd.DataFrame) -> list[Any]:
    """GPUs per month: the binding need, its headroom stack and the P10–P90 range.

    Parameters
    ----------
    sizing : pandas.DataFrame
        One row per month: ``month`` (``YYYY-MM``), ``gpus_throughput`` and ``gpus_memory``
        (GPUs each constraint alone needs at P50) [count], ``gpus_p50`` (total with headroom),
        ``gpus_p10``, ``gpus_p90`` [count].
    """
    x = np.arange(len(sizing))
    need = np.maximum(sizing["gpus_throughput"], sizing["gpus_memory"]).to_numpy(float)
    headroom = sizing["gpus_p50"].to_numpy(float) - need
    memory_bound = (sizing["gpus_memory"] > sizing["gpus_throughput"]).to_numpy()
    colours = [COLOURS["memory"] if m else COLOURS["throughput"] for m in memory_bound]
    artists: list[Any] = [ax.bar(x, need, color=colours, width=0.6),
                          ax.bar(x, headroom, bottom=need, color=COLOURS["headroom"], width=0.6,
                                 label="headroom (spares, zones, surge)")]
    yerr = np.vstack([sizing["gpus_p50"] - sizing["gpus_p10"], sizing["gpus_p90"] - sizing["gpus_p50"]])
    artists.append(ax.errorbar(x, sizing["gpus_p50"], yerr=yerr, fmt="none", ecolor="k", capsize=4,
                               label="P10–P90"))
    # Proxy artists so the legend names both colours even when one bound never binds.
    ax.bar([0], [0], color=COLOURS["throughput"], label="need, throughput-bound")
    ax.bar([0], [0], color=COLOURS["memory"], label="need, memory-bound")
    ax.set_xticks(x, sizing["month"].astype(str))
    ax.set_xlabel("Month")
    ax.set_ylabel("GPUs [count]")
    legend_above(ax)
    return artists


def plot_fleet_gpus(ax: Axes, by_pool: pd.DataFrame, fleet: pd.DataFrame) -> list[Any]:
    """The fleet's GPUs per month at P50, stacked by pool, with the fleet's P90 as a whisker.

    Parameters
    ----------
    by_pool : pandas.DataFrame
        ``month``, ``pool``, ``gpus_p50`` [count].
    fleet : pandas.DataFrame
        ``month``, ``gpus_p50``, ``gpus_p90`` (sums over pools) [count].
    """
    months = list(fleet["month"].astype(str))
    x = np.arange(len(months))
    bottom = np.zeros(len(months))
    artists: list[Any] = []
    for pool, rows in by_pool.groupby("pool", sort=False):
        gpus = rows.set_index("month")["gpus_p50"].reindex(months).fillna(0).to_numpy(float)
        artists.append(ax.bar(x, gpus, bottom=bottom, width=0.6, label=str(pool)))
        bottom += gpus
    p50, p90 = fleet["gpus_p50"].to_numpy(float), fleet["gpus_p90"].to_numpy(float)
    artists.append(ax.errorbar(x, p50, yerr=np.vstack([np.zeros_like(p50), p90 - p50]), fmt="none", ecolor="k",
                               capsize=4, label="fleet P90 (sum of pools)"))
    ax.set_xticks(x, months)
    ax.set_xlabel("Month")
    ax.set_ylabel("GPUs [count]")
    legend_above(ax)  # inside, it covered the first month's P90 whisker
    return artists


def plot_cost_by_option(ax: Axes, cost: pd.DataFrame) -> list[Any]:
    """Monthly cost of each purchasing option, grouped by month.

    Parameters
    ----------
    cost : pandas.DataFrame
        Columns ``month`` (``YYYY-MM``), ``option`` (e.g. ``'on_demand'``) and ``cost_usd``. [USD/month]
    """
    table = cost.pivot_table(index="month", columns="option", values="cost_usd", aggfunc="sum", sort=True)
    x = np.arange(len(table))
    width = 0.8 / max(len(table.columns), 1)
    artists: list[Any] = []
    for i, option in enumerate(table.columns):
        artists.append(ax.bar(x + (i - (len(table.columns) - 1) / 2) * width, table[option], width=width,
                              label=str(option).replace("_", "-")))
    ax.set_xticks(x, table.index.astype(str))
    ax.set_xlabel("Month")
    ax.set_ylabel("Cost [USD/month]")
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{v:,.0f}")
    legend_above(ax)
    return artists


def plot_hockey_stick(ax: Axes, curve: pd.DataFrame, utilisation: float, latency_s: float) -> list[Any]:
    """The utilisation–latency curve and the chosen operating point.

    Parameters
    ----------
    curve : pandas.DataFrame
        Columns ``utilisation`` [fraction] and ``latency_s`` [s]; an optional ``label``
        column draws one line per queueing model (e.g. M/M/1 against the pooled M/M/c).
    utilisation, latency_s : float
        The chosen operating point. [fraction], [s]
    """
    labelled = curve if "label" in curve else curve.assign(label="model")
    artists: list[Any] = []
    for label, part in labelled.groupby("label", sort=False):
        artists += ax.plot(part["utilisation"], part["latency_s"], label=str(label))
    artists.append(ax.scatter([utilisation], [latency_s], color=COLOURS["chosen"], zorder=3,
                              label=f"chosen: {utilisation:.0%}, {latency_s:.2f} s"))
    ax.set_xlabel("Utilisation [fraction]")
    ax.set_ylabel("Latency [s]")
    ax.set_xlim(0, 1)
    ax.set_yscale("log")  # M/M/1 reaches 100x the service time at 99 %; a log axis keeps the knee visible
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.legend(loc="upper left", fontsize="small")
    return artists


def plot_operating_curve(ax: Axes, curve: pd.DataFrame, batch: int, output_tokens_per_s_per_gpu: float,
                         tpot_ms: float, tpot_ms_max: float | None = None) -> dict[str, Any]:
    """Modelled throughput per GPU and TPOT over the batch, with the operating point and the TPOT target.

    Parameters
    ----------
    ax : Axes
        Where to draw throughput; TPOT goes on a twin axis on the right.
    curve : pandas.DataFrame
        One row per batch: ``batch`` [sequences], ``output_tokens_per_s_per_gpu`` [tokens/s per GPU],
        ``tpot_ms`` [ms].
    batch, output_tokens_per_s_per_gpu, tpot_ms : int, float, float
        The operating point. [sequences], [tokens/s per GPU], [ms]
    tpot_ms_max : float, optional
        The TPOT target, drawn as a line. [ms]

    Returns
    -------
    dict
        ``throughput`` and ``tpot`` (the lines), ``operating`` (the two markers), ``target`` (the target
        line or None) and ``tpot_axis`` (the twin axis).
    """
    rows = curve.sort_values("batch")
    twin = ax.twinx()
    drawn: dict[str, Any] = {
        "throughput": ax.plot(rows["batch"], rows["output_tokens_per_s_per_gpu"], marker=".",
                              color=COLOURS["throughput"], label="output tokens/s per GPU")[0],
        "tpot": twin.plot(rows["batch"], rows["tpot_ms"], marker=".", ls="--", color=COLOURS["latency"],
                          label="TPOT")[0],
        "target": (twin.axhline(tpot_ms_max, color=COLOURS["latency"], lw=0.8, ls=":", label="TPOT target")
                   if tpot_ms_max is not None else None),
        "tpot_axis": twin}
    drawn["operating"] = [ax.scatter([batch], [output_tokens_per_s_per_gpu], color=COLOURS["chosen"], zorder=3,
                                     label="operating point (the plan's batch)"),
                          twin.scatter([batch], [tpot_ms], color=COLOURS["chosen"], marker="D", s=16, zorder=3)]
    ax.set_xscale("log", base=2)  # the sweep doubles the batch
    ax.xaxis.set_major_formatter(lambda v, _pos: f"{v:g}")
    ax.set_xlabel("Batch [sequences]")
    ax.set_ylabel("Output tokens/s per GPU [tokens/s]")
    twin.set_ylabel("TPOT [ms]")
    ax.set_ylim(bottom=0)
    twin.set_ylim(bottom=0)
    legend_above(ax, [h for h in (drawn["throughput"], drawn["tpot"], drawn["target"], drawn["operating"][0])
                      if h is not None])
    return drawn


def plot_burn_down(ax: Axes, burn: pd.DataFrame, episodes: pd.DataFrame) -> list[Any]:
    """Error budget remaining over time, with alert episodes shaded.

    Parameters
    ----------
    burn : pandas.DataFrame
        Columns ``period_end_utc`` and ``budget_remaining_fraction`` over the rolling window
        ending there (1 = untouched, < 0 = overspent) [fraction], and optionally ``window_full``:
        rows whose window is not yet full (the history's first window) are drawn in grey and
        left out of the y-range, where a few hours' events can swing the fraction far past 0 or 1.
    episodes : pandas.DataFrame
        Columns ``start`` and ``end`` (UTC) of each alert episode.
    """
    full = burn["window_full"].to_numpy(dtype=bool) if "window_full" in burn else np.ones(len(burn), dtype=bool)
    remaining = burn["budget_remaining_fraction"]
    artists = []
    if not full.all():
        # up to and including the first full row, so the grey line joins the blue one
        filling = ~full | np.r_[False, ~full[:-1]]
        artists += ax.plot(burn["period_end_utc"][filling], remaining[filling], color=COLOURS["history"],
                           ls="--", lw=0.9, label="window not yet full")
    if full.any():
        artists += ax.plot(burn["period_end_utc"][full], remaining[full], color=COLOURS["p50"])
        lo, hi = min(0.0, float(remaining[full].min())), max(1.0, float(remaining[full].max()))
        ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    artists.append(ax.axhline(0, color="k", lw=0.6))
    if len(episodes):
        # One collection for all episodes: a noisy SLO can fire thousands of times and one patch
        # each would take tens of seconds to lay out.
        start = mdates.date2num(pd.to_datetime(episodes["start"]))
        width = mdates.date2num(pd.to_datetime(episodes["end"])) - start
        artists.append(ax.broken_barh(list(zip(start, width)), (0, 1), transform=ax.get_xaxis_transform(),
                                      color=COLOURS["chosen"], alpha=0.25, label="alert episode"))
    pad_single_instant(ax, burn["period_end_utc"])
    ax.set_xlabel("Time [UTC]")
    ax.set_ylabel("Error budget remaining [fraction]")
    if len(episodes) or not full.all():
        ax.legend(loc="lower left", fontsize="small")
    return artists


def plot_backtest_error(ax: Axes, backtest: pd.DataFrame, chosen: str) -> list[Any]:
    """Backtest error of each candidate forecast model, the chosen one highlighted.

    Parameters
    ----------
    backtest : pandas.DataFrame
        Columns ``model`` and ``error_pct`` (e.g. sMAPE; one row per model, or per model and fold). [%]
    chosen : str
        Name of the chosen model.
    """
    means = backtest.groupby("model", sort=True)["error_pct"].mean()
    colours = [COLOURS["chosen"] if name == chosen else COLOURS["headroom"] for name in means.index]
    pos = np.arange(len(means))
    artists: list[Any] = [ax.barh(pos, means.to_numpy(), color=colours)]
    ax.set_yticks(pos, [model_label(str(name)) for name in means.index])
    if backtest.duplicated("model").any():  # several folds: show each fold's error too
        at = {name: i for i, name in enumerate(means.index)}
        artists.append(ax.scatter(backtest["error_pct"], backtest["model"].map(at), color="k", s=8, zorder=3))
    ax.set_xlabel("Backtest sMAPE [%]")
    ax.set_ylabel("Model")
    return artists


#: What :func:`plot_plan_variance` can draw: metric -> (planned P10, P50, P90 column, actual column, axis label),
#: columns of :class:`capplan.history.variance.PlanVariance`.
VARIANCE_METRICS = {
    "requests": ("planned_requests_p10", "planned_requests_p50", "planned_requests_p90", "actual_requests",
                 "Requests [requests/month]"),
    "peak_qps": ("planned_peak_qps_p10", "planned_peak_qps_p50", "planned_peak_qps_p90", "actual_peak_qps",
                 "Design peak [requests/s]"),
    "gpus": ("planned_gpus_p10", "planned_gpus_p50", "planned_gpus_p90", "actual_gpus_needed", "GPUs [count]"),
    "cost": ("planned_cost_usd_p10", "planned_cost_usd", "planned_cost_usd_p90", "actual_cost_usd",
             "Cost [USD/month]"),
}
#: Width of a month's band and P50 dash. [x-axis units: one month = 1]
_VARIANCE_WIDTH = 0.5


def plot_plan_variance(ax: Axes, variance: pd.DataFrame, metric: str) -> dict[str, Any]:
    """One metric of earlier plans against what happened, month by month: the planned P10–P90 band, the
    planned P50 and the actual.

    Parameters
    ----------
    variance : pandas.DataFrame
        One row per month (``YYYY-MM``) of one pool, with the columns :data:`VARIANCE_METRICS` names for
        ``metric`` and ``complete`` (a partial month's actual covers its observed hours only: drawn hollow).
    metric : str
        A key of :data:`VARIANCE_METRICS`: ``requests`` [requests/month], ``peak_qps`` [requests/s],
        ``gpus`` [count] or ``cost`` [USD/month].

    Returns
    -------
    dict
        As drawn, in month order: ``band`` (bars from P10, height P90 − P10), ``p50`` (one dash per month),
        ``actual`` (dots).
    """
    if metric not in VARIANCE_METRICS:
        raise ValueError(f"metric must be one of {sorted(VARIANCE_METRICS)}, got {metric!r}")
    p10, p50, p90, actual, label = VARIANCE_METRICS[metric]
    rows = variance.sort_values("month")
    x = np.arange(len(rows))
    lo, mid, hi = (rows[c].to_numpy(float) for c in (p10, p50, p90))
    complete = rows["complete"].to_numpy(bool)
    half = _VARIANCE_WIDTH / 2
    drawn = {"band": ax.bar(x, hi - lo, bottom=lo, width=_VARIANCE_WIDTH, color=COLOURS["band"], alpha=0.2,
                            label="planned P10–P90"),
             "p50": ax.hlines(mid, x - half, x + half, lw=2, color=COLOURS["p50"], label="planned P50"),
             "actual": ax.scatter(x, rows[actual].to_numpy(float), marker="o", s=36, zorder=3,
                                  facecolors=[COLOURS["chosen"] if c else "none" for c in complete],
                                  edgecolors=COLOURS["chosen"], label="actual")}
    if not complete.all():  # proxy so the legend explains the hollow marker
        ax.scatter([], [], marker="o", facecolors="none", edgecolors=COLOURS["chosen"], label="actual, partial month")
    ax.use_sticky_edges = False  # a band's bottom is data, not an axis floor: keep a margin below it
    ax.margins(x=0.3 if len(x) == 1 else 0.08, y=0.15)
    periods = [pd.Period(m, freq="M") for m in rows["month"]]
    # the year under the first month and each January only, so six months fit a narrow axis
    ax.set_xticks(x, [p.strftime("%b\n%Y") if i == 0 or p.month == 1 else p.strftime("%b")
                      for i, p in enumerate(periods)], fontsize="small")
    ax.set_xlabel("Month")
    ax.set_ylabel(label)
    if metric == "gpus":
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        values = np.concatenate([lo, hi, rows[actual].to_numpy(float)])
        bottom, top = ax.get_ylim()  # at least one GPU either side, so a flat band still gets whole-GPU ticks
        ax.set_ylim(min(bottom, np.nanmin(values) - 1), max(top, np.nanmax(values) + 1))
    elif metric in ("requests", "cost"):
        ax.yaxis.set_major_formatter(EngFormatter(sep=""))  # 1.2M requests, 30k USD
    return drawn


#: Longest model name drawn on an axis; the report's assumptions table has the full name. [characters]
MODEL_LABEL_CHARS = 24


def model_label(name: str) -> str:
    """A forecast model's name short enough for a narrow axis: an ensemble ``mean(a, b, c)`` is ``mean of 3``."""
    if len(name) <= MODEL_LABEL_CHARS:
        return name
    if name.startswith("mean(") and name.endswith(")"):
        return f"mean of {len(name[5:-1].split(','))}"
    return name[:MODEL_LABEL_CHARS - 1] + "…"


def legend_above(ax: Axes, handles: Sequence[Any] | None = None) -> Any:
    """Put the legend in one row above the plotting area, so it can never cover a bar or a line.
    ``handles``: the artists to name (default: the axis' own labelled artists; a twin axis' are not)."""
    handles = ax.get_legend_handles_labels()[0] if handles is None else list(handles)
    return ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.01), ncols=max(len(handles), 1),
                     fontsize="small", frameon=False, borderaxespad=0, handlelength=1.2, columnspacing=1.0)


def legend_above_figure(axes: Sequence[Axes], first: Sequence[str] = ()) -> Any:
    """One legend in one row above a figure of small multiples: every label drawn on any of ``axes``, once
    (an axis' own legend above it would cover its neighbours' titles); the labels ``first`` lead, the rest
    follow in the order first seen."""
    handles: dict[str, Any] = {}
    for ax in axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    labels = [k for k in first if k in handles] + [k for k in handles if k not in first]
    return axes[0].figure.legend([handles[k] for k in labels], labels, loc="outside upper left",
                                 ncols=max(len(labels), 1), fontsize="small", frameon=False)


def pad_single_instant(ax: Axes, times: Any, pad: pd.Timedelta = pd.Timedelta(days=1)) -> None:
    """With fewer than two distinct ``times`` on a date axis, show ``pad`` either side of the one point.

    matplotlib's default range for a single date spans years, which puts one lonely dot in the middle.
    """
    distinct = pd.to_datetime(pd.Series(list(times)), utc=True).dropna().unique()
    if len(distinct) == 1:
        t = pd.Timestamp(distinct[0]).tz_convert(None)
        ax.set_xlim(t - pad, t + pad)


def chart_png(draw: Callable[..., Any], *args: Any, n_axes: int = 1, n_rows: int = 1,
              size_in: tuple[float, float] = (8.0, 3.2), dpi: int = 100, **kwargs: Any) -> bytes:
    """Lay out a figure of ``n_rows`` rows of ``n_axes`` side by side, call ``draw(axes, *args, **kwargs)``,
    return PNG bytes.

    In one row ``draw`` receives one ``Axes`` when ``n_axes == 1`` and a list otherwise; with several
    rows, a list of rows (each a list of ``Axes``). ``size_in`` is the figure size. [inch]
    """
    fig = Figure(figsize=size_in, dpi=dpi, layout="constrained")
    grid = fig.subplots(n_rows, n_axes, squeeze=False)
    if n_rows > 1:
        draw([list(row) for row in grid], *args, **kwargs)
    else:
        draw(grid[0][0] if n_axes == 1 else list(grid[0]), *args, **kwargs)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
