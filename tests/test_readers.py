"""Readers never write: every stage that reads the database runs on a read-only connection.

One database is ingested and refreshed (the only writes), then opened with ``read_only=True``; the
profile, SLO, drift, plan-input and load-test readers run on it and give what they give on the
writable connection. DuckDB refuses any write on a read-only connection, so a reader that wrote
(a refresh, a table, a stored result) would fail here.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from capplan import profile
from capplan.config import SloConfig, load_config
from capplan.db import connect
from capplan.drift.histogram import daily_histograms
from capplan.ingest import ingest_sources
from capplan.loadtest.store import import_file, read_stored_runs
from capplan.plan.evidence import drift_evidence, slo_evidence
from capplan.plan.inputs import measure_inputs
from capplan.plan.traffic import all_models_traffic
from capplan.slo.status import alert_episodes, budget_burndown, slo_status

LOADTEST = Path(__file__).resolve().parents[1].parent / "shared" / "loadtests" / "llmperf" / "anyscale_70b.json"


@pytest.fixture(scope="module")
def database(plan_logs, write_plan_config, tmp_path_factory):
    """(path, config) of a database holding the generated logs, refreshed, and one load test."""
    cfg = load_config(write_plan_config(tmp_path_factory.mktemp("readers"), plan_logs))
    with connect(cfg.database.path) as con:
        ingest_sources(con, cfg.ingest)
        profile.refresh_rollups(con)
        if LOADTEST.exists():
            import_file(con, LOADTEST)
    return cfg.database.path, cfg


def _every_reader(con, cfg) -> dict[str, object]:
    hourly, daily = all_models_traffic(con, cfg)
    slo = cfg.slos[0] if cfg.slos else SloConfig(name="availability", target=0.99)
    drift = drift_evidence(con, cfg)
    return {
        "hourly_traffic": profile.hourly_traffic(con), "daily_traffic": profile.daily_traffic(con),
        "token_distribution": profile.token_distribution(con, "day"), "hourly_sli": profile.hourly_sli(con, 2000.0),
        "summary": pd.Series(profile.profile_summary(con)).astype(str),
        "all_models_daily": daily, "measured": measure_inputs(con, hourly, cfg).table(),
        "slo_status": pd.Series(vars(slo_status(con, slo))).astype(str), "burndown": budget_burndown(con, slo),
        "episodes": alert_episodes(con, slo), "slo_evidence": pd.Series([len(slo_evidence(con, cfg))]),
        "daily_histograms": daily_histograms(con), "drift_findings": drift.findings,
        "drift_shares": drift.token_hist, "load_tests": pd.DataFrame(read_stored_runs(con)),
    }


def test_every_reader_runs_read_only_and_reads_what_a_writable_connection_reads(database):
    path, cfg = database
    with connect(path) as con:
        writable = _every_reader(con, cfg)
    with connect(path, read_only=True) as con:
        read_only = _every_reader(con, cfg)
    assert writable.keys() == read_only.keys()
    for name, frame in writable.items():
        if isinstance(frame, dict):
            assert {k: str(v) for k, v in read_only[name].items()} == {k: str(v) for k, v in frame.items()}, name
        elif isinstance(frame, pd.Series):
            pd.testing.assert_series_equal(read_only[name], frame, obj=name)
        else:
            pd.testing.assert_frame_equal(read_only[name], frame, obj=name)
    assert len(writable["hourly_traffic"]) > 0 and len(writable["daily_histograms"]) > 0
    assert len(writable["load_tests"]) == (1 if LOADTEST.exists() else 0)
