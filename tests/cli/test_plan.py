"""``capplan plan`` and ``capplan serve``: argument errors are one line and exit 2, before Prefect starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from capplan.cli import app


@pytest.mark.parametrize(("args", "message"), [
    (["plan", "--month", "2026-13"], "month '2026-13' is not of the form YYYY-MM"),
    (["plan", "--config", "no-such.toml"], "no-such.toml does not exist"),
    (["serve", "--config", "no-such.toml"], "no-such.toml does not exist"),
])
def test_bad_arguments_fail_fast_with_one_line(args, message):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_serve_with_a_bad_time_zone_fails_in_one_line(tmp_path: Path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[schedule]\ntimezone = "Mars/Olympus"\n')
    result = CliRunner().invoke(app, ["serve", "--config", str(cfg)])
    assert result.exit_code == 2 and "Invalid timezone" in result.output and "Mars/Olympus" in result.output
    assert "Traceback" not in result.output


def test_bad_config_value_names_the_key(tmp_path: Path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[report]\nmeasured_window_days = 0\n")
    result = CliRunner().invoke(app, ["plan", "--config", str(cfg)])
    assert result.exit_code == 2 and "report.measured_window_days" in result.output
