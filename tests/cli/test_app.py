"""The ``capplan`` root: ``--version``, ``--help`` of every command readable at 80 columns, one BLAS thread."""

from __future__ import annotations

import os
import subprocess
import sys

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


#: numpy's OpenBLAS thread count, asked of the library numpy loaded, after importing the CLI as its entry point does
_BLAS_THREADS = ("import capplan.cli, ctypes, glob, os, numpy\n"
                 "lib = glob.glob(os.path.join(os.path.dirname(numpy.__file__), '..', 'numpy.libs', '*openblas*'))\n"
                 "print(ctypes.CDLL(lib[0]).scipy_openblas_get_num_threads64_() if lib else 'none')")


@pytest.mark.parametrize(("user_value", "expected"), [(None, "1"), ("2", "2")])
def test_the_cli_computes_on_one_blas_thread_unless_the_user_set_one(user_value, expected):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user_value is not None:
        env["OPENBLAS_NUM_THREADS"] = user_value
    done = subprocess.run([sys.executable, "-c", _BLAS_THREADS], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    if done.stdout.strip() == "none":
        pytest.skip("this numpy has no bundled OpenBLAS")
    assert done.stdout.strip() == expected
