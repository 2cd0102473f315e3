"""Tests for ``capplan cost``: flags and price book, JSON, finance CSV, and clear errors on bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capplan.cli import app
from capplan.sizing.cost.plan import ROW_COLUMNS

runner = CliRunner()


def write_need(path: Path, rows: list[tuple[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["ts_utc", "gpus"])
        w.writerows(rows)
    return path


@pytest.fixture()
def need_csv(tmp_path: Path) -> Path:
    # the hand-checked case: need 1, 2, 3 GPUs over three hours
    return write_need(tmp_path / "need.csv", [("2026-01-01T00:00:00Z", "1"), ("2026-01-01T01:00:00Z", "2"),
                                              ("2026-01-01T02:00:00Z", "3")])


def run_json(*args: str) -> dict:
    result = runner.invoke(app, ["cost", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_flags_give_the_hand_checked_optimum(need_csv):
    out = run_json("--need", str(need_csv), "--on-demand-usd-per-hour", "2", "--reserved-usd-per-hour", "1")
    assert out["reserved_gpus"] == 2
    assert out["cost_usd"] == pytest.approx({"reserved": 6.0, "on_demand": 2.0, "spot": 0.0})
    assert out["gpu_hours"] == pytest.approx({"reserved": 6.0, "on_demand": 1.0, "spot": 0.0, "need": 6.0})
    assert out["total_cost_usd"] == pytest.approx(8.0)
    assert out["all_on_demand_cost_usd"] == pytest.approx(12.0)
    assert out["price_source"] == "prices from flags (what-if)"


def test_price_book_prices_for_gpu_and_term(need_csv):
    out = run_json("--need", str(need_csv), "--gpu", "H100-SXM-80GB", "--term", "3y")
    # data/prices.toml: on-demand 3.99; 3y reserved 1.45 + 9,000 / 26,280 h
    assert out["prices_usd_per_gpu_hour"]["on_demand"] == pytest.approx(3.99)
    assert out["prices_usd_per_gpu_hour"]["reserved"] == pytest.approx(1.45 + 9000 / 26_280)
    assert "check current pricing" in out["price_source"]
    assert out["reserved_gpus"] == 2  # 1/3 of hours need a 3rd GPU, below break-even 0.449


def test_spot_takes_only_the_interruptible_share(need_csv):
    out = run_json("--need", str(need_csv), "--on-demand-usd-per-hour", "2", "--reserved-usd-per-hour", "1",
                   "--spot-usd-per-hour", "0.5", "--interruptible-share", "0.5")
    # interactive need 0.5, 1, 1.5 -> R* = 1; batch 3 GPU-h on spot at 0.5
    assert out["reserved_gpus"] == 1
    assert out["gpu_hours"]["spot"] == pytest.approx(3.0)
    assert out["cost_usd"]["spot"] == pytest.approx(1.5)


def test_fixed_reserved_count_and_finance_csv(need_csv, tmp_path):
    rows_path = tmp_path / "out" / "cost.csv"
    out = run_json("--need", str(need_csv), "--on-demand-usd-per-hour", "2", "--reserved-usd-per-hour", "1",
                   "--reserved-gpus", "0", "--csv", str(rows_path))
    assert out["reserved_gpus"] == 0 and out["optimal_reserved_gpus"] == 2
    assert out["total_cost_usd"] == pytest.approx(12.0)
    with rows_path.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == ROW_COLUMNS
    assert [r["month"] for r in rows] == ["2026-01", "total"]
    assert float(rows[-1]["total_cost_usd"]) == pytest.approx(12.0)


def test_table_output_names_the_option_costs(need_csv):
    result = runner.invoke(app, ["cost", "--need", str(need_csv), "--on-demand-usd-per-hour", "2",
                                 "--reserved-usd-per-hour", "1"])
    assert result.exit_code == 0, result.output
    assert "reserved 2 GPUs" in result.stdout and "8.00" in result.stdout and "12.00" in result.stdout


def test_need_is_required_and_no_phantom_plan_file_is_looked_for(tmp_path):
    config = tmp_path / "capplan.toml"
    config.write_text('[report]\nout_dir = "out"\n', encoding="utf-8")
    result = runner.invoke(app, ["cost", "--config", str(config), "--on-demand-usd-per-hour", "2",
                                 "--reserved-usd-per-hour", "1"])
    assert result.exit_code == 2 and "--need" in result.output and "need_gpus.csv" not in result.output
    help_text = runner.invoke(app, ["cost", "--help"]).output
    assert "latest plan" not in help_text and "Required" in help_text


BAD_NEEDS = [
    ("ts,gpus\n2026-01-01T00:00:00Z,1\n", "missing column(s) ['ts_utc']"),
    ("ts_utc,gpus\n", "no data rows"),
    ("ts_utc,gpus\n2026-01-01T00:00:00Z,1\nyesterday,2\n", "line 3, column 'ts_utc': 'yesterday'"),
    ("ts_utc,gpus\n2026-01-01T00:30:00Z,1\n", "line 2, column 'ts_utc': '2026-01-01T00:30:00Z' is not a timestamp on the hour"),
    ("ts_utc,gpus\n2026-01-01T00:00:00Z,1\n2026-01-01T01:00:00Z,-2\n", "line 3, column 'gpus': '-2'"),
    ("ts_utc,gpus\n2026-01-01T00:00:00Z,1\n2026-01-01T01:00:00Z,many\n", "line 3, column 'gpus': 'many'"),
    ("ts_utc,gpus\n2026-01-01T00:00:00Z,1\n2026-01-01T03:00:00Z,1\n", "line 3, column 'ts_utc': '2026-01-01T03:00:00Z' is not exactly one hour after"),
    ("", "not a CSV with a header row"),
]


@pytest.mark.parametrize("text, message", BAD_NEEDS)
def test_bad_need_csv_is_a_one_line_error_naming_file_line_column(tmp_path, text, message):
    path = tmp_path / "need.csv"
    path.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["cost", "--need", str(path), "--on-demand-usd-per-hour", "2",
                                 "--reserved-usd-per-hour", "1"])
    assert result.exit_code == 1
    flat = " ".join(result.stderr.split())  # rich wraps long lines
    assert "need.csv" in flat and "Traceback" not in result.output
    assert message in flat, flat


@pytest.mark.parametrize("args, message, code", [
    (["--gpu", "B200"], "not in the price book", 2),
    (["--term", "5y"], "--term must be 1y or 3y", 2),
    (["--on-demand-usd-per-hour", "0", "--reserved-usd-per-hour", "1"], "must be > 0", 1),
])
def test_bad_price_choice_is_a_clear_error(need_csv, args, message, code):
    result = runner.invoke(app, ["cost", "--need", str(need_csv), *args])
    assert result.exit_code == code
    assert message in " ".join(result.stderr.split()) and "Traceback" not in result.output


def test_missing_need_file_is_named(tmp_path):
    result = runner.invoke(app, ["cost", "--need", str(tmp_path / "none.csv")])
    assert result.exit_code == 1 and "none.csv does not exist" in " ".join(result.stderr.split())
