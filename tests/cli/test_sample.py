"""Tests of capplan/cli/sample.py: ``capplan sample`` against the library and docs/sample.md."""

from __future__ import annotations

import json
import shlex
from datetime import date, datetime
from pathlib import Path

import duckdb
import pyarrow as arrow
import pyarrow.parquet as pq
import pytest
import typer
from typer.testing import CliRunner

from capplan.sample import Drift, Incident, SampleSpec, iter_days

MONDAY = date(2026, 8, 3)
REPO = Path(__file__).resolve().parents[2]


def _documented_sample_command() -> list[str]:
    """The ``capplan sample`` arguments in docs/sample.md's bundled-sample code block."""
    text = (REPO / "docs" / "sample.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return shlex.split(block.replace("\\\n", " "))[1:]  # drop the executable


@pytest.fixture(scope="module")
def cli() -> typer.Typer:
    """The real ``capplan`` app, as the console script runs it."""
    from capplan.cli import app

    return app


def test_cli_writes_same_rows_as_library_and_reports_truth(tmp_path: Path, cli: typer.Typer):
    out, truth = tmp_path / "s.parquet", tmp_path / "truth.json"
    args = ["sample", "--out", str(out), "--days", "3", "--requests-per-day", "2000", "--seed", "4",
            "--start", "2026-08-03", "--drift-model", "llama-3.1-8b", "--drift-start", "2026-08-04",
            "--drift-factor", "1.5", "--incident", "2026-08-04T10:00,30,0.25,3", "--truth", str(truth), "--json"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    spec = SampleSpec(MONDAY, 3, 2_000, seed=4, incidents=[Incident(datetime(2026, 8, 4, 10), 30, 0.25, 3)],
                      drift=Drift("llama-3.1-8b", "input", datetime(2026, 8, 4), 1.5))
    expected = arrow.concat_tables(chunk.table for chunk in iter_days(spec))
    assert summary["rows"] == expected.num_rows and summary["incidents"][0]["end"] == "2026-08-04T10:30:00+00:00"
    assert duckdb.sql("select count(*) from read_parquet($p)", params={"p": str(out)}).fetchall() == [(len(expected),)]
    assert json.loads(truth.read_text())["drift"]["factor"] == 1.5


@pytest.mark.parametrize("extra, code, message", [
    (["--out", "x.txt"], 2, "suffix"),
    (["--out", "x.csv", "--drift-model", "llama-3.1-8b"], 2, "--drift-start"),
    (["--out", "x.csv", "--incident", "2026-08-04,30"], 2, "START,DURATION_MIN"),
    (["--out", "x.csv", "--partition-by-day", "--split-by-month"], 1, "exclude"),
])
def test_cli_errors_are_one_line_and_non_zero(tmp_path: Path, cli: typer.Typer, extra, code, message):
    res = CliRunner().invoke(cli, ["sample", "--days", "1", *[str(tmp_path / a) if a.startswith("x.") else a
                                                              for a in extra]])
    assert res.exit_code == code
    assert message in res.output and "Traceback" not in res.output


@pytest.mark.slow
def test_bundled_sample_is_what_the_documented_command_writes(tmp_path: Path, cli: typer.Typer):
    """data/sample/ holds exactly the rows the command in docs/sample.md writes (≈ 490k rows, a few s)."""
    args = [a.replace("data/sample", str(tmp_path)) for a in _documented_sample_command()]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    committed = sorted((REPO / "data" / "sample").glob("*.parquet"))
    assert [p.name for p in committed] == sorted(p.name for p in tmp_path.glob("*.parquet"))
    for path in committed:
        assert pq.read_table(path).equals(pq.read_table(tmp_path / path.name)), path.name
    assert json.loads((REPO / "data/sample/ground_truth.json").read_text()) == json.loads(
        (tmp_path / "ground_truth.json").read_text())
    assert sum(p.stat().st_size for p in committed) < 6e6


def test_cli_refuses_existing_output_without_force(tmp_path: Path, cli: typer.Typer):
    args = ["sample", "--out", str(tmp_path / "a.csv"), "--days", "1", "--requests-per-day", "50"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1 and "already exists" in res.output
    assert CliRunner().invoke(cli, [*args, "--force"]).exit_code == 0
