"""The ``capplan`` root: ``--version``, and ``--help`` of every command readable at 80 columns."""

from __future__ import annotations

import click
import pytest
import typer
from typer.testing import CliRunner

from capplan.cli import app, package_version

COMMANDS = sorted(typer.main.get_command(app).commands)


def test_version_prints_the_installed_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"capplan {package_version()}" and package_version()[0].isdigit()


@pytest.mark.parametrize("name", COMMANDS)
def test_help_at_80_columns_shows_every_option_name_whole(name):
    result = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert result.exit_code == 0, result.output
    command = typer.main.get_command(app).commands[name]
    names = [opt for p in command.params if isinstance(p, click.Option) for opt in p.opts]
    missing = [opt for opt in names if opt not in result.output]
    assert missing == [], f"`capplan {name} --help` cuts {missing}"
    assert "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_help_shows_config_keys_in_brackets():
    result = CliRunner().invoke(app, ["plan", "--help"], env={"COLUMNS": "80"})
    assert "[database].path" in result.output and "[report].out_dir" in result.output
