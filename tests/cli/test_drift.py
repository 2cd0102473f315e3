"""Tests for ``capplan drift`` (capplan/cli/drift.py)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pyarrow as arrow
import pytest
from typer.testing import CliRunner

from capplan import sql
from capplan.cli import app
from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.sample import Drift, SampleSpec, iter_days


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Eight weeks from 1 Feb 2026 at 2,000 requests/day; outputs of llama-3.1-70b +40 % from 10 March."""
    spec = SampleSpec(start=date(2026, 2, 1), days=59, requests_per_day=2_000, seed=5, incidents=False,
                      drift=Drift("llama-3.1-70b", "output", datetime(2026, 3, 10, tzinfo=UTC), 1.4))
    path = tmp_path_factory.mktemp("drift") / "capplan.duckdb"
    con = connect(path)
    ensure_tables(con)
    con.register("generated", arrow.concat_tables(c.table for c in iter_days(spec)))
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select *, 0 from generated")
    con.close()
    return path


def test_json_findings_and_cost_change(db):
    result = CliRunner().invoke(app, ["drift", "--db", str(db), "--json", "--volume", "recent"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    (finding,) = out["findings"]
    assert (finding["model"], finding["metric"]) == ("llama-3.1-70b", "output_tokens")
    assert "2026-03-03" <= finding["change_date"][:10] <= "2026-03-17"
    assert finding["relative_change"] == pytest.approx(0.4, abs=0.08)
    assert finding["usd_per_request_change"] > 0
    # priced by the performance model on the pool's replicas (one pool per log model: [sizing]'s H100, bf16,
    # smallest TP): longer outputs hold more KV per sequence, so the batch set before the change falls, and each
    # request decodes more steps at a longer context: GPU time per request rises faster than the outputs (+40 %)
    assert finding["cost_source"] == "modelled" and "llama-3.1-70b on H100-SXM-80GB, TP 2, bf16" in finding["cost_model"]
    assert finding["batch_after"] < finding["batch_before"]
    assert finding["gpu_seconds_per_request_change"] / finding["gpu_seconds_per_request_before"] > finding[
        "relative_change"]
    assert out["cost_models"]["llama-3.1-8b"]["source"] == "modelled"
    change = out["cost_change"]  # February and March are both fully covered
    assert (change["month_before"], change["month_after"]) == ("2026-02", "2026-03")
    parts = change["usd_change"]
    assert sum(v for k, v in parts.items() if k != "total") == pytest.approx(parts["total"], rel=1e-9)
    assert parts["output_length"] > 0


def test_human_output_and_errors(db, tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["drift", "--db", str(db), "--volume", "recent"])
    assert ok.exit_code == 0 and "1 alerting" in ok.output and "cost change 2026-02" in ok.output
    assert "MODELLED: performance model: llama-3.1-70b" in " ".join(ok.output.split())
    bad = runner.invoke(app, ["drift", "--db", str(db), "--volume", "guess"])
    assert bad.exit_code == 1 and "--volume 'guess'" in bad.output
    empty_month = runner.invoke(app, ["drift", "--db", str(db), "--volume", "recent", "--month-after", "2027-05"])
    assert empty_month.exit_code == 1 and "no served requests in" in empty_month.output
    assert "Traceback" not in empty_month.output


def test_no_window_compared_is_not_no_drift(bare_db):
    result = CliRunner().invoke(app, ["drift", "--db", str(bare_db), "--volume", "recent"])
    assert result.exit_code == 0, result.output
    assert "no drift found" not in result.output
    assert "drift not tested: no window could be compared" in result.output
    assert "needs 35 days of history; only 3.0 h exist" in " ".join(result.output.split())  # 3 h, not "1.0 days"


def test_the_default_forecast_volume_on_three_hours_says_what_is_missing(bare_db):
    """Issue 20: `capplan drift` (volume priced by a forecast) on 3 hours crashed on "y needs at least 3
    observed values, got 1"; with no window compared nothing is priced, so no forecast is needed."""
    import json

    result = CliRunner().invoke(app, ["drift", "--db", str(bare_db), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["windows_compared"] == 0 and payload["findings"] == []
    assert payload["not_tested"].startswith("no window could be compared: a drift test needs 35 days")
    assert "\\[" not in payload["not_tested"]  # no terminal markup escape in JSON
    assert payload["cost_change"]["skipped"].startswith("the log covers no whole month")
