"""End to end: ``monthly_capacity_plan`` on generated logs, under one session Prefect harness.

The report's numbers are checked against the stage functions called directly
(``sizing.fleet.size_fleet``, ``capplan.sizing.cost.plan.plan_range``) on the same
inputs: the forecast the run wrote (``forecast.csv``), the request mix
measured from the same database and the pool's sizing record (its throughput modelled
from that mix, :func:`capplan.plan.pools.pool_fleet_spec`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
from typer.testing import CliRunner

from capplan.cli import app
from capplan.config import CapplanConfig, load_config
from capplan.db import connect
from capplan.profile import hourly_traffic
from capplan.flows import tasks
from capplan.flows.plan import monthly_capacity_plan
from capplan.loadtest.store import import_file
from capplan.plan.demand import plan_demand
from capplan.plan.inputs import measure_inputs
from capplan.plan.pools import pool_fleet_spec, resolve_pools
from capplan.sizing.cost.plan import plan_range
from capplan.sizing.cost.prices import load_price_book
from capplan.sizing.fleet import size_fleet

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _stage_results(cfg, folder, model):
    """GPUs and cost per month of one model's pool from the stage functions, given the run's forecast of that
    pool and the mix measured from the same database (no [[pools]]: each log model is its own pool, sized as its
    own architecture on [sizing].gpu). GPUs per month: ``size_fleet`` of the design peak of
    :func:`capplan.plan.demand.plan_demand` on the model's hourly traffic (its forecast must be the run's)."""
    fc = pd.read_csv(folder / "forecast.csv", index_col="hour_utc", parse_dates=True)
    fc = fc[fc["pool"] == model].drop(columns="pool")
    with connect(cfg.database.path, read_only=True) as con:
        hourly = hourly_traffic(con, model=model)
        m = measure_inputs(con, hourly, cfg, models=[model])
    pool = next(p for p in resolve_pools(cfg, list(MODELS)) if p.name == model)
    spec = pool_fleet_spec(cfg, pool, measured=m)  # [sizing] with the pool's architecture, throughput modelled
    assert spec.throughput_source == "modelled"

    def fleet(qps: float) -> int:
        return size_fleet(peak_qps=qps, latency_s=m.latency_s, output_tokens_per_request=m.output_tokens_per_request,
                          input_tokens_per_request=m.input_tokens_per_request,
                          kv_tokens_per_sequence=m.kv_tokens_per_sequence, spec=spec).total_gpus

    months = fc.index.to_period("M").astype(str)
    planned = sorted(set(months))[-cfg.forecast.horizon_months:]
    part = fc[np.isin(months, planned)]
    need = {lv: np.array([fleet(m.burst_ratio * q) for q in part[col]], dtype=float)
            for lv, col in (("P10", "lo_80"), ("P50", "mean"), ("P90", "hi_80"))}
    prices = load_price_book(cfg.cost.price_book).gpu(cfg.sizing.gpu).option_prices(cfg.cost.reserved_term)
    costs = plan_range(part.index.to_numpy().astype("datetime64[h]"), need, commit_level="P50",
                       gpu_type=cfg.sizing.gpu, prices=prices)
    # the design peak per month: the demand stage on the same hours (P10/P50/P90 of the month's simulated peak)
    demand = plan_demand(hourly, planned, cfg, m.burst_ratio)
    ours = demand.forecast.loc[part.index, part.columns].to_numpy(float)
    np.testing.assert_allclose(ours, part.to_numpy(float), rtol=1e-6)  # forecast.csv rounds
    gpus = {lv: pd.Series([fleet(q) for q in demand.peaks[f"qps_{lv.lower()}"]], index=planned)
            for lv in ("P10", "P50", "P90")}
    return planned, gpus, costs


MODELS = ("llama-3.1-70b", "llama-3.1-8b", "qwen2.5-7b")  # the generated logs' models: three pools


@pytest.mark.parametrize("model", MODELS)
def test_each_pools_budget_equals_the_stage_functions(planned_report, model):
    folder, cfg = planned_report
    budget = pd.read_csv(folder / "budget.csv")
    rows = budget[budget["Pool"] == model]
    planned, gpus, costs = _stage_results(cfg, folder, model)
    assert rows["Month"].tolist() == planned == [folder.name, str(pd.Period(folder.name) + 1)]
    assert (rows["GPU type"] == cfg.sizing.gpu).all() and (rows["Throughput source"] == "modelled").all()
    assert rows["GPUs P50"].tolist() == gpus["P50"].astype(int).tolist()
    assert rows["GPUs P90"].tolist() == gpus["P90"].astype(int).tolist()
    for level, column in (("P50", "Total cost [USD]"), ("P10", "Total cost P10 [USD]"), ("P90", "Total cost P90 [USD]")):
        expected = [mc.total_cost_usd for mc in costs[level].months]
        assert rows[column].to_numpy() == pytest.approx(expected, abs=0.01)  # CSV rounds to cents
    html = (folder / "report.html").read_text()
    first = rows.iloc[0]
    assert f"<td class=\"key\">{model}</td><td class=\"key\">{first['Month']}</td><td class=\"key\">{cfg.sizing.gpu}</td><td class=\"num\">{first['GPUs P50']}</td>" in html


def test_budget_has_a_row_per_month_and_pool_and_totals_that_sum(planned_report):
    folder, _ = planned_report
    budget = pd.read_csv(folder / "budget.csv")
    months = sorted(budget["Month"].unique())
    assert len(budget) == len(months) * (len(MODELS) + 1)
    assert set(budget["Pool"]) == {*MODELS, "total"}
    numeric = [c for c in budget.columns if pd.api.types.is_numeric_dtype(budget[c])]
    pools = budget[budget["Pool"] != "total"].groupby("Month")[numeric].sum()
    total = budget[budget["Pool"] == "total"].set_index("Month")[numeric]
    pd.testing.assert_frame_equal(pools, total.loc[pools.index], check_exact=False, atol=0.05, check_dtype=False)
    plan = json.loads((folder / "plan.json").read_text())
    assert [p["pool"] for p in plan["pools"]] == list(MODELS)
    assert [t["gpus_p50"] for t in plan["totals"]] == total["GPUs P50"].tolist()
    html = (folder / "report.html").read_text()
    reserved = sum(c["reserved_gpus_shared"] for c in plan["commitments"])
    assert f'id="reserved">{reserved}<' in html


def test_finance_files_open_with_pandas_and_add_up(planned_report):
    folder, _ = planned_report
    csv = pd.read_csv(folder / "budget.csv")
    xlsx = pd.read_excel(folder / "budget.xlsx", sheet_name="budget")
    pd.testing.assert_frame_equal(csv, xlsx, check_dtype=False)
    cost_cols = [c for c in csv.columns if c.startswith("Cost ")]
    hour_cols = [c for c in csv.columns if c.startswith("GPU-hours ")]
    assert len(cost_cols) == len(hour_cols) == 3
    for table in (csv, xlsx):
        assert all(pd.api.types.is_numeric_dtype(table[c]) for c in cost_cols + hour_cols + ["GPUs P50"])
        assert table[cost_cols].sum(axis=1).to_numpy() == pytest.approx(table["Total cost [USD]"], abs=0.03)
        assert (table["Total cost P10 [USD]"] <= table["Total cost P90 [USD]"]).all()
    # Reserved GPU-hours are each pool's commitment times the hours of each month.
    for _pool, rows in csv[csv["Pool"] != "total"].groupby("Pool"):
        hours = np.array([pd.Period(m).days_in_month * 24 for m in rows["Month"]])
        reserved = rows["GPU-hours reserved [GPU-h]"].to_numpy() / hours
        assert np.allclose(reserved, reserved[0]) and float(reserved[0]).is_integer()


def test_report_folder_holds_every_output_and_the_resolved_config(planned_report):
    folder, cfg = planned_report
    names = {p.name for p in folder.iterdir()}
    assert {"report.html", "report.md", "budget.csv", "budget.xlsx", "config.json", "forecast.csv", "charts"} <= names
    assert len(list((folder / "charts").glob("*.png"))) == 9 + len(cfg.slos)  # per-pool small multiples + fleet
    md = (folder / "report.md").read_text()
    curve = "![Throughput and TPOT against batch, per pool (modelled)](charts/operating-curve.png)"
    assert md.count(curve) == 1  # drawn in the charts stage, shown once: under the pools table, not among the charts
    pools_section = md.split("### Pools", 1)[1].split("\n### ", 1)[0]
    assert curve in pools_section
    resolved = CapplanConfig.model_validate_json((folder / "config.json").read_text())
    assert resolved == cfg
    md = (folder / "report.md").read_text()
    assert "## Assumptions" in md and "| measured |" in md and "| assumed |" in md
    for model in MODELS:  # each pool's settings and throughput source are rows of the assumptions table
        assert re.search(rf"\| {re.escape(model)}: throughput per GPU \| [\d,.]+ \| tokens/\(s·GPU\) \| modelled \|", md)
        assert f"| {model}: zones\\_lost |" in md and f"| {model}: throughput batch |" in md
    with connect(cfg.database.path, read_only=True) as con:  # the history records the source the plan used
        sources = con.execute("select distinct throughput_source from plan_months where pool <> '__fleet__'").fetchall()
    assert sources == [("modelled",)]


def _artifacts(key: str) -> list:
    """Every version of the artifact ``key``: other plans of the same month (the partitioned plan's
    test) publish under the same key, so the latest is not necessarily this fixture's."""
    with get_client(sync_client=True) as client:
        return client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))


def test_artifacts_are_published(planned_report):
    folder, _ = planned_report
    key = f"capacity-plan-{folder.name}"
    ours = [a for a in _artifacts(key) if str(folder / "report.html") in a.data]
    assert ours  # the CLI re-run test below publishes a second version for the same folder
    summary = ours[0]
    assert summary.type == "markdown" and "## Headline" in summary.data
    assert "charts/" not in summary.data  # no broken images
    tables = _artifacts(f"{key}-budget")
    assert tables and all(t.type == "table" for t in tables)
    for model in MODELS:  # one budget table per pool
        key_part = "".join(ch if ch.isalnum() else "-" for ch in model)
        assert _artifacts(f"{key}-pool-{key_part}"), model


def test_rerun_through_the_cli_adds_no_rows_and_rewrites_the_same_plan(planned_report):
    folder, cfg = planned_report
    with connect(cfg.database.path, read_only=True) as con:
        before = con.execute("select (select count(*) from requests), (select count(*) from ingest_ledger)").fetchone()
    budget_before = pd.read_csv(folder / "budget.csv")
    config_file = folder.parent.parent / "capplan.toml"
    result = CliRunner().invoke(app, ["plan", "--config", str(config_file), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["report_dir"] == str(folder)
    assert [p["pool"] for p in out["pools"]] == list(MODELS) and len(out["totals"]) == 2  # per pool and totals
    for stage in tasks.STAGES:  # one progress row per stage
        assert re.search(rf"✓ {re.escape(stage)}\s+\d+\.\d s", result.stderr), stage
    assert list(out["stage_seconds"]) == list(tasks.STAGES)  # each stage's seconds, in the order of the stages
    assert all(0 <= s <= out["seconds"] for s in out["stage_seconds"].values())
    # the evidence stages run beside forecast, size and cost: only the others' seconds add up within the run's
    assert sum(s for stage, s in out["stage_seconds"].items() if stage not in tasks.OVERLAPPING) <= out["seconds"]
    with connect(cfg.database.path, read_only=True) as con:
        after = con.execute("select (select count(*) from requests), (select count(*) from ingest_ledger)").fetchone()
    assert after == before
    pd.testing.assert_frame_equal(pd.read_csv(folder / "budget.csv"), budget_before)


def test_the_command_in_its_own_process_forecasts_and_draws_in_workers_and_writes_the_same_plan(
        planned_report, write_plan_config, plan_logs, tmp_path):
    # `capplan plan` as a user runs it: its own temporary server, the pools' forecasts and the charts (the evidence
    # charts beside the forecast) in forked worker processes (capplan.runtime.worker_processes); the harness's run
    # above computed them here, one by one
    folder, _cfg = planned_report
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120")
    script = ("import sys, threading, capplan.runtime as r\n"
              "from capplan.cli import main\n"
              "forked = []\n"
              "def watch(job, args, _in=r.in_workers, **how):\n"
              "    forked.append(bool(r._workers))\n"
              "    return _in(job, args, **how)\n"
              "import capplan.flows.tasks as t; t.in_workers = watch\n"
              "sys.argv = ['capplan', 'plan', '--config', sys.argv[1], '--json']\n"
              "try:\n    main()\nfinally:\n    print('FORKED', forked, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script, str(write_plan_config(tmp_path, plan_logs))], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "FORKED [True, True, True]" in done.stderr  # the forecast, the evidence charts and the charts in workers
    ours = Path(json.loads(done.stdout)["report_dir"])
    for name in ("plan.json", "budget.csv", "forecast.csv"):
        assert (ours / name).read_bytes() == (folder / name).read_bytes(), name
    assert sorted(p.name for p in (ours / "charts").iterdir()) == sorted(p.name for p in (folder / "charts").iterdir())
    for png in (folder / "charts").iterdir():  # drawn in other processes, in another order: the same pictures
        assert (ours / "charts" / png.name).read_bytes() == png.read_bytes(), png.name


def test_the_charts_stage_draws_what_the_evidence_charts_left_and_returns_every_chart_in_the_reports_order(
        planned_report):
    """The evidence charts (peak-to-average, token lengths, SLO burn-downs), drawn beside the forecast from what the
    stages before it made, are the charts ``draw_charts`` draws from the whole plan, byte for byte; the charts stage
    keeps them (not drawn again), draws the rest and returns all in the report's order (the serial path's)."""
    from capplan.plan.assumptions import assumptions_table
    from capplan.plan.calendar import plan_months
    from capplan.reports import assemble

    _folder, cfg = planned_report
    _hourly, daily, pools, by_pool = tasks.profile_traffic.fn(cfg)
    measured = tasks.measure_request_mix.fn(cfg, pools, by_pool)
    months = plan_months(max(m.last_ts_utc for m in measured.values()), cfg.forecast.horizon_months, None)
    demands = tasks.forecast_qps.fn(by_pool, months, cfg, measured)
    plans = tasks.size_pools.fn(cfg, pools, demands, months, measured, tasks.read_load_tests.fn(cfg, pools))
    slos, drift = tasks.check_slos.fn(cfg), tasks.find_drift.fn(cfg)
    inputs = assemble.ReportInputs(cfg=cfg, months=months, hourly=_hourly, daily=daily, by_pool=by_pool,
                                   fleet=tasks.cost_fleet.fn(plans, cfg), assumptions=assumptions_table(cfg, {}, {}),
                                   slos=slos, drift=drift, generated_at_utc="2026-12-01 06:00")
    evidence = tasks.draw_evidence_charts.fn(cfg, daily, measured, slos, drift)
    assert [c.key for c in evidence][:2] == ["peak-to-average", "token-distributions"]
    assert len(evidence) == 2 + len(slos) and all(c.key.startswith("slo-") for c in evidence[2:])
    charts = tasks.draw_charts.fn(inputs, evidence)
    serial = assemble.draw_charts(inputs)
    assert [c.key for c in charts] == [c.key for c in serial] == assemble.chart_keys(inputs)
    assert [(c.title, c.caption, c.png) for c in charts] == [(c.title, c.caption, c.png) for c in serial]
    kept = {c.key: c for c in evidence}
    assert all(c is kept[c.key] for c in charts if c.key in kept)  # kept as drawn beside the forecast, not redrawn


def test_slos_whose_names_slug_alike_get_a_burn_down_chart_each(planned_report):
    """Two SLOs named ``p99 latency`` and ``p99-latency`` (the real SLO stage's result, twice, renamed): before session 14
    both charts were keyed ``slo-p99-latency`` and the second overwrote the first; now the second is ``-2``."""
    import dataclasses

    _folder, cfg = planned_report
    _hourly, daily, pools, by_pool = tasks.profile_traffic.fn(cfg)
    measured = tasks.measure_request_mix.fn(cfg, pools, by_pool)
    slos, drift = tasks.check_slos.fn(cfg), tasks.find_drift.fn(cfg)
    renamed = [dataclasses.replace(slos[0], status=dataclasses.replace(slos[0].status, name=name))
               for name in ("p99 latency", "p99-latency")]
    evidence = tasks.draw_evidence_charts.fn(cfg, daily, measured, renamed, drift)
    burn_downs = [c for c in evidence if c.key.startswith("slo-")]
    assert [c.key for c in burn_downs] == ["slo-p99-latency", "slo-p99-latency-2"]
    assert [c.title for c in burn_downs] == ["Error budget: p99 latency", "Error budget: p99-latency"]


def test_a_failing_stage_fails_the_run_with_its_cause(prefect_harness, write_plan_config, tmp_path):
    cfg = load_config(write_plan_config(tmp_path, [str(tmp_path / "nothing-*.parquet")]))
    seen = []
    with tasks.stage_listener(lambda stage, state, seconds, message: seen.append((stage, state, message))):
        state = monthly_capacity_plan(cfg, return_state=True)
    assert state.is_failed()
    with pytest.raises(Exception, match="ingest logs first"):  # the run's cause is the profile's, whatever ran beside it
        state.result()
    failed = {stage: message for stage, state_name, message in seen if state_name == "Failed"}
    # the ingest flow creates the tables and refreshes (nothing to do); reading finds no traffic. The SLO and drift
    # stages start after refresh-profile, beside the profile, and may fail on the same empty table first or not
    assert "ingest logs first" in failed["profile"]
    assert set(failed) <= {"profile", "slo", "drift"}
    assert not (tmp_path / "out").exists()


def test_a_failing_evidence_charts_stage_fails_the_run_with_its_own_cause(
        prefect_harness, plan_logs, write_plan_config, tmp_path, monkeypatch):
    """The evidence charts run beside the forecast and feed the charts stage; their failure (injected: a drawing
    that raises) must be the run's cause, not a charts stage left NotReady and a report built from nothing."""
    from capplan.reports import assemble

    def broken(*args):
        raise RuntimeError("the peak-to-average chart could not be drawn")

    monkeypatch.setattr(assemble, "draw_evidence_charts", broken)
    cfg = load_config(write_plan_config(tmp_path, plan_logs))
    seen = []
    with tasks.stage_listener(lambda stage, state, seconds, message: seen.append((stage, state, message))):
        state = monthly_capacity_plan(cfg, return_state=True)
    assert state.is_failed()
    with pytest.raises(RuntimeError, match="could not be drawn"):
        state.result()
    failed = {stage for stage, state_name, _ in seen if state_name == "Failed"}
    assert failed == {"evidence-charts"}
    assert not (tmp_path / "out").exists()


def test_a_load_test_imported_for_one_pool_makes_it_measured_and_its_gpus_follow(
        planned_report, plan_logs, write_plan_config, write_vllm_sweep, tmp_path):
    """The fixture's logs and config again, plus a clean sweep imported (as ``capplan loadtest import --pool``
    does) for pool llama-3.1-8b, 1 x H100 (its TP), at the pool's own measured mix (so no token_mix flag).

    No SLO sets a TTFT, so the sweep is judged at [profile].ttft_threshold_ms = 2,000 ms at p99: 1,000, 1,500,
    2,500, 4,000 ms at 0.01..0.04 requests/s cross it halfway from 0.02 to 0.03, a capacity of 0.025
    requests/s × the mean output tokens per GPU — far below the model's — so that pool is measured and needs
    more GPUs than in the fixture's plan, month by month; the other pools stay modelled and unchanged.
    """
    folder0, cfg0 = planned_report
    pool = "llama-3.1-8b"
    with connect(cfg0.database.path, read_only=True) as con:
        mix = measure_inputs(con, hourly_traffic(con, model=pool), cfg0, models=[pool])
    cfg = load_config(write_plan_config(tmp_path, plan_logs))
    with connect(cfg.database.path) as con:
        for path in write_vllm_sweep(tmp_path, input_tokens=mix.input_tokens_per_request,
                                     output_tokens=mix.output_tokens_per_request, rates=(0.01, 0.02, 0.03, 0.04),
                                     p99_ttft_ms=(1000.0, 1500.0, 2500.0, 4000.0)):
            import_file(con, path, pool=pool)
    folder = Path(monthly_capacity_plan(cfg))
    new, old = (pd.read_csv(f / "budget.csv").set_index(["Pool", "Month"]) for f in (folder, folder0))
    assert (new.loc[pool, "Throughput source"] == "measured").all()
    assert (new.loc[pool, "GPUs P50"] > old.loc[pool, "GPUs P50"]).all()
    for other in ("llama-3.1-70b", "qwen2.5-7b"):
        assert (new.loc[other, "Throughput source"] == "modelled").all()
        assert new.loc[other, "GPUs P50"].tolist() == old.loc[other, "GPUs P50"].tolist()
    md = (folder / "report.md").read_text()
    rate = re.search(rf"\| {re.escape(pool)}: throughput per GPU \| ([\d,.]+) \| tokens/\(s·GPU\) \| measured \|", md)
    assert float(rate.group(1).replace(",", "")) == pytest.approx(0.025 * mix.output_tokens_per_request, rel=0.01)
    assert f"| {pool}: throughput load test | " in md and "sweep-" in md
    assert f"{pool}: no modelled curve (measured)" in md and "llama-3.1-70b (modelled)" in md
