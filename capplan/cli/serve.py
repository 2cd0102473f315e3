"""``capplan serve``: serve the scheduled deployments (monthly plan, daily ingest) with Prefect."""

from __future__ import annotations

from pathlib import Path

import typer

from capplan.cli._common import CONFIG_OPTION, DB_OPTION, console, db_path, fail, load


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve_command(config: Path = CONFIG_OPTION, db: Path = DB_OPTION,
                      limit: int = typer.Option(1, "--limit", min=1, help="Runs at a time [count].")) -> None:
        """Serve the monthly plan and the daily ingest on their cron schedules until stopped.

        Point PREFECT_API_URL at a Prefect server to see the runs in its UI; without one,
        Prefect starts a temporary local server for as long as this runs.
        """
        cfg = load(config)
        cfg = cfg.model_copy(update={"database": cfg.database.model_copy(update={"path": db_path(cfg, db)})})
        from capplan.cli.plan import prefect_environment

        prefect_environment(verbose=True)

        from capplan.flows.deploy import build_deployments, serve_deployments
        from capplan.runtime import tie_temporary_server_to_this_process

        tie_temporary_server_to_this_process()

        try:
            names = [d.name for d in build_deployments(cfg)]
        except ValueError as exc:  # a bad cron or time zone: pydantic's message, on one line
            fail(" ".join(str(exc).split()), code=2)
        if cfg.schedule.drop_folder is None:
            console.print("note: \\[schedule].drop_folder is not set, so there is no daily ingest deployment")
        else:
            cfg.schedule.drop_folder.mkdir(parents=True, exist_ok=True)  # so the first file can be dropped in
        console.print(f"serving {', '.join(names)} (plan cron {cfg.schedule.plan_cron!r}, "
                      f"{cfg.schedule.timezone}); stop with Ctrl-C or SIGTERM", highlight=False)
        serve_deployments(cfg, limit=limit)
