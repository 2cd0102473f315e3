"""The ``capplan`` command line (typer + rich).

Each sub-command lives in ``capplan/cli/<name>.py`` and exposes
``register(app: typer.Typer) -> None``; heavy imports (pandas, prefect,
statsmodels) stay inside the command functions so ``capplan --help`` is fast.
Add a module's name to :data:`COMMAND_MODULES` when you add the module.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

# One BLAS thread unless the user chose otherwise: capplan's numerical work is many small matrices
# (Kalman filters and Lyapunov solves in the forecasts), on which OpenBLAS's thread pool spins rather
# than computes (docs/plan_and_reports.md, "Start-up and wall time"). Set before numpy loads OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import typer  # noqa: E402 - after the BLAS setting, by intent
from typer.core import TyperGroup  # noqa: E402


COMMAND_MODULES: list[str] = [
    "ingest",
    "profile",
    "cost",
    "size",
    "sample",
    "slo",
    "drift",
    "plan",
    "serve",
    "forecast",
    "loadtest",
    "perf",
    "backtest",
    "metrics",
]

class JsonErrorGroup(TyperGroup):
    """The ``capplan`` group: with ``--json`` anywhere in the arguments, every failure prints a JSON error.

    ``{"error": {"type": ..., "message": ...}}`` on stdout (``type`` one of
    :data:`capplan.cli._common.ERROR_TYPES`), whatever fails: a usage error (exit 2), a command's
    own one-line error (:func:`capplan.cli._common.fail`, exit 1 or 2), or an unexpected exception
    (``internal``, exit 1; its traceback goes to stderr, stdout stays one JSON document). Without
    ``--json`` nothing changes: errors go to stderr and a crash shows its traceback.
    """

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        from capplan.cli._common import JSON_ERRORS, print_json_error

        argv = list(sys.argv[1:] if args is None else args)
        if "--json" not in argv or not standalone_mode:
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        token = JSON_ERRORS.set(True)
        try:
            code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as exc:  # bad options (typer's click errors): the usage message, as JSON too
            exc.show()
            print_json_error("usage", exc.format_message())
            sys.exit(exc.exit_code)
        except typer.Abort:
            print_json_error("error", "aborted")
            sys.exit(1)
        except Exception as exc:  # a bug: the traceback for the report, on stderr
            traceback.print_exc()
            print_json_error("internal", f"{type(exc).__name__}: {' '.join(str(exc).split())}")
            sys.exit(1)
        finally:
            JSON_ERRORS.reset(token)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="capplan",
    cls=JsonErrorGroup,
    help="Forecast LLM-serving traffic from request logs and plan the GPU fleet and its cost.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Plain click help: it wraps descriptions and never cuts an option name (rich's table cut
    # `--on-demand-usd-per-hour` at 80 columns), `[cost].x` in a help text is shown, not read as markup,
    # and typer's rich formatter would import rich.markdown, pygments and rich.traceback (~0.2 s).
    rich_markup_mode=None,
    context_settings={"max_content_width": 100},
)


def package_version() -> str:
    """The installed capplan version (``0+unknown`` when run from a tree that is not installed)."""
    from importlib.metadata import PackageNotFoundError, version  # here: it imports the email package

    try:
        return version("capplan")
    except PackageNotFoundError:
        return "0+unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"capplan {package_version()}")
        raise typer.Exit()


@app.callback()
def _root(show_version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                            help="Print the capplan version and exit.")) -> None:
    """Forecast LLM-serving traffic from request logs and plan the GPU fleet and its cost."""


for _name in COMMAND_MODULES:
    importlib.import_module(f"capplan.cli.{_name}").register(app)


def main() -> None:
    """Console-script entry point.

    A command that registered :func:`capplan.runtime.freeze_heap_at_exit` (``capplan plan``) ends its process
    right after the exit hooks, with the exit status here, instead of tearing the interpreter down object by object.
    """
    try:
        app()
    except SystemExit as stop:
        runtime = sys.modules.get("capplan.runtime")  # imported only by the commands that use it
        if runtime is not None and (stop.code is None or isinstance(stop.code, int)):
            runtime.end_after_exit_hooks(stop.code or 0)
        raise
