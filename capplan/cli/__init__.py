"""The ``capplan`` command line (typer + rich).

Each sub-command lives in ``capplan/cli/<name>.py`` and exposes
``register(app: typer.Typer) -> None``; heavy imports (pandas, prefect,
statsmodels) stay inside the command functions so ``capplan --help`` is fast.
Add a module's name to :data:`COMMAND_MODULES` when you add the module.
"""

from __future__ import annotations

import importlib

import typer


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
    "metrics",
]

app = typer.Typer(
    name="capplan",
    help="Forecast LLM-serving traffic from request logs and plan the GPU fleet and its cost.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)



@app.callback()
def _root() -> None:
    """Forecast LLM-serving traffic from request logs and plan the GPU fleet and its cost."""


for _name in COMMAND_MODULES:
    importlib.import_module(f"capplan.cli.{_name}").register(app)


def main() -> None:
    """Console-script entry point."""
    app()
