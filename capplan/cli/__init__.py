"""The ``capplan`` command line (typer + rich).

Each sub-command lives in ``capplan/cli/<name>.py`` and exposes
``register(app: typer.Typer) -> None``; heavy imports (pandas, prefect,
statsmodels) stay inside the command functions so ``capplan --help`` is fast.
Add a module's name to :data:`COMMAND_MODULES` when you add the module.
"""

from __future__ import annotations

import importlib
import os

# One BLAS thread unless the user chose otherwise: capplan's numerical work is many small matrices
# (Kalman filters and Lyapunov solves in the forecasts), on which OpenBLAS's thread pool spins rather
# than computes (docs/plan_and_reports.md, "Start-up and wall time"). Set before numpy loads OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import typer  # noqa: E402 - after the BLAS setting, by intent


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

app = typer.Typer(
    name="capplan",
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
    """Console-script entry point."""
    app()
