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
from capplan.cli._common import ERROR_TYPES

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


# --- `--json`: every failure of every command with --json is one JSON error object on stdout (issue 20)


def _json_error(result) -> dict:
    """The JSON error object of a failed ``--json`` run: stdout is exactly one JSON document of that shape."""
    import json

    payload = json.loads(result.stdout)
    assert set(payload) == {"error"} and set(payload["error"]) == {"type", "message"}, payload
    assert payload["error"]["type"] in ERROR_TYPES and payload["error"]["message"]
    return payload["error"]


@pytest.fixture
def not_a_database(tmp_path):
    """A file that is no DuckDB database: opening it raises an exception no command expects."""
    path = tmp_path / "garbage.duckdb"
    path.write_bytes(b"this is no database\n" * 100)
    return path


@pytest.mark.parametrize("args", [["ingest", "{csv}"], ["profile"], ["forecast"], ["slo"], ["drift"]])
def test_an_unexpected_exception_with_json_is_an_internal_json_error(tmp_path, not_a_database, args):
    (tmp_path / "t.csv").write_text("ts_utc,input_tokens,output_tokens\n2026-11-10T12:00:00Z,1,1\n")
    argv = [a.format(csv=tmp_path / "t.csv") for a in args] + ["--db", str(not_a_database), "--json"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 1
    error = _json_error(result)
    assert error["type"] == "internal" and "not a valid DuckDB database file" in error["message"]
    assert "Traceback" in result.stderr  # the traceback for a bug report, on stderr only


def test_without_json_an_unexpected_exception_still_raises(not_a_database):
    result = CliRunner().invoke(app, ["profile", "--db", str(not_a_database)])
    assert result.exit_code == 1 and result.stdout == "" and result.exception is not None


@pytest.mark.parametrize("args, kind, code, words", [
    (["profile", "--db", "{missing}"], "error", 1, "does not exist"),
    (["forecast", "--db", "{missing}"], "error", 1, "does not exist"),
    (["ingest", "{missing_csv}", "--db", "{db}", "--bogus"], "usage", 2, "No such option: --bogus"),
    (["profile", "--format", "xml", "--db", "{db}"], "usage", 2, "--format must be one of"),
    (["forecast", "--horizon-days", "many"], "usage", 2, "--horizon-days"),
    (["plan", "--config", "{missing}"], "usage", 2, "missing.toml"),
])
def test_every_failure_with_json_prints_the_error_object(tmp_path, args, kind, code, words):
    names = {"missing": tmp_path / "missing.toml", "missing_csv": tmp_path / "none.csv", "db": tmp_path / "x.duckdb"}
    result = CliRunner().invoke(app, [a.format(**names) for a in args] + ["--json"])
    assert result.exit_code == code, result.output
    error = _json_error(result)
    assert error["type"] == kind and words in error["message"]
