"""Tests for ``capplan slo`` (capplan/cli/slo.py)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from capplan import sql
from capplan.cli import app
from capplan.db import connect
from capplan.ingest import ensure_tables


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Three days at 10 requests/min; every request fails 2026-04-02 10:00–10:10."""
    path = tmp_path_factory.mktemp("slo") / "capplan.duckdb"
    con = connect(path)
    ensure_tables(con)
    con.execute("""
        insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id)
        select ts, 100, 10, 'm', case when ts >= timestamp '2026-04-02 10:00' and ts < timestamp '2026-04-02 10:10'
                                      then 503 else 200 end, 200, 900, null, null, null, 1
        from (select timestamp '2026-04-01' + i * interval 6 second as ts from range(3 * 1440 * 10) t(i))""")
    con.close()
    return path


def test_json_has_budget_and_episodes(db, tmp_path):
    cfg = tmp_path / "capplan.toml"
    cfg.write_text('[[slos]]\nname = "avail"\ntarget = 0.999\nwindow_days = 3\n')
    result = CliRunner().invoke(app, ["slo", "--db", str(db), "--config", str(cfg), "--json"])
    assert result.exit_code == 0, result.output
    (slo,) = json.loads(result.stdout)["slos"]
    assert slo["name"] == "avail"
    # 100 bad of 43,200 requests against a 0.1 % budget: 43.2 allowed, 2.31 budgets spent
    assert slo["budget_remaining_fraction"] == pytest.approx(1 - 100 / 43.2, rel=1e-9)
    pages = [e for e in slo["episodes"] if e["severity"] == "page"]
    assert len(pages) == 1 and pages[0]["start"].startswith("2026-04-02 10:00")
    assert {"start", "end", "burn_rate", "severity"} <= set(pages[0])


def test_human_output_and_errors(db, tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["slo", "--db", str(db)])
    assert ok.exit_code == 0 and "budget consumed" in ok.output and "page" in ok.output
    missing = runner.invoke(app, ["slo", "--db", str(tmp_path / "none.duckdb")])
    assert missing.exit_code == 1 and "does not exist" in missing.output
    bad_name = runner.invoke(app, ["slo", "--db", str(db), "--name", "nope"])
    assert bad_name.exit_code == 1 and "no SLO named 'nope'" in bad_name.output
    bad_date = runner.invoke(app, ["slo", "--db", str(db), "--as-of", "yesterday-ish"])
    assert bad_date.exit_code == 1 and "--as-of" in bad_date.output and "Traceback" not in bad_date.output


def test_as_of_before_the_incident(db):
    result = CliRunner().invoke(app, ["slo", "--db", str(db), "--as-of", "2026-04-02T09:00", "--json"])
    (slo,) = json.loads(result.stdout)["slos"]
    assert slo["budget_remaining_fraction"] == 1.0 and slo["episodes"] == []


def test_an_slo_over_defaulted_status_is_not_measurable_not_100_percent(bare_db):
    """Issue 20: no status column means every status was defaulted to 200: unknown, not perfect."""
    result = CliRunner().invoke(app, ["slo", "--db", str(bare_db), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["slos"] == []
    (unknown,) = payload["not_measurable"]
    assert unknown["measurable"] is False
    assert "status was not logged in any of the 10,800 loaded rows" in unknown["reason"]
    human = CliRunner().invoke(app, ["slo", "--db", str(bare_db)])
    assert "not measurable from these logs" in human.output and "SLI 100" not in human.output
