"""``capplan serve`` against a real Prefect server: deployments, schedules, a triggered monthly run.

Starts ``prefect server start`` on 127.0.0.1 (a free port, its own PREFECT_HOME),
then ``capplan serve`` pointed at it; checks both deployments and their cron
schedules through the REST API, triggers the monthly plan and waits for its
report folder. Both processes are stopped in ``finally`` (SIGTERM to their
process group, SIGKILL after a grace period: background processes ignore SIGINT).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from capplan.flows.deploy import INGEST_DEPLOYMENT, PLAN_DEPLOYMENT, build_deployments

pytestmark = [pytest.mark.prefect_server, pytest.mark.slow, pytest.mark.timeout(600)]

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    out = log.open("w")
    return subprocess.Popen(args, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the process group, SIGKILL it if still there after 15 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(15)
            return
        except subprocess.TimeoutExpired:
            continue


def _wait(what: str, probe, timeout_s: float, logs: list[Path]):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if (value := probe()):
                return value
        except httpx.HTTPError:
            pass
        time.sleep(1)
    tails = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in logs if p.exists())
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}\n{tails}")


def test_build_deployments_schedules_and_parameters(write_plan_config, tmp_path: Path):
    from capplan.config import load_config

    cfg = load_config(write_plan_config(tmp_path, ["x.parquet"], schedule={
        "plan_cron": "30 7 1 * *", "timezone": "Europe/Paris", "drop_folder": "drop"}))
    plan, ingest = build_deployments(cfg)
    assert (plan.name, ingest.name) == (PLAN_DEPLOYMENT, INGEST_DEPLOYMENT)
    assert plan.schedules[0].schedule.cron == "30 7 1 * *"
    assert plan.schedules[0].schedule.timezone == "Europe/Paris"
    assert ingest.schedules[0].schedule.cron == cfg.schedule.ingest_cron
    assert plan.parameters["config"]["database"]["path"] == str(tmp_path / "plan.duckdb")
    sources = ingest.parameters["config"]["ingest"]["sources"]
    assert [s["name"] for s in sources] == ["drop-folder"]
    assert all(p.startswith(str(tmp_path / "drop")) for p in sources[0]["paths"])
    no_drop = build_deployments(load_config(write_plan_config(tmp_path, ["x.parquet"])))
    assert [d.name for d in no_drop] == [PLAN_DEPLOYMENT]


def test_serve_against_a_real_server_runs_the_monthly_plan(write_plan_config, planned_report, plan_logs,
                                                           tmp_path: Path):
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_API_URL": api,
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false"}
    env.pop("PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED", None)
    config = write_plan_config(tmp_path, plan_logs, forecast={"horizon_months": 1},
                               schedule={"drop_folder": "drop"})
    # Start from the end-to-end plan's database: same files, so the run's ingest finds nothing new
    # and the profile nothing to refresh; the rest of the plan runs in full.
    shutil.copy(planned_report[1].database.path, tmp_path / "plan.duckdb")
    logs = [tmp_path / "server.log", tmp_path / "serve.log"]
    server = _start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)], env, logs[0])
    serve = None
    try:
        _wait("the server's health check", lambda: httpx.get(f"{api}/health", timeout=5).json() is True, 180, logs)
        serve = _start([str(BIN / "capplan"), "serve", "--config", str(config)], env, logs[1])

        def deployments():
            found = httpx.post(f"{api}/deployments/filter", json={}, timeout=10).json()
            return found if {d["name"] for d in found} == {PLAN_DEPLOYMENT, INGEST_DEPLOYMENT} else None

        found = {d["name"]: d for d in _wait("both deployments", deployments, 180, logs)}
        crons = {name: [s["schedule"]["cron"] for s in d["schedules"]] for name, d in found.items()}
        assert crons == {PLAN_DEPLOYMENT: ["0 6 1 * *"], INGEST_DEPLOYMENT: ["0 5 * * *"]}
        assert found[PLAN_DEPLOYMENT]["schedules"][0]["schedule"]["timezone"] == "UTC"

        def create_run():
            # serve may still be (re)registering its deployments: a refused request created nothing, so
            # look the deployment up again and retry until the server accepts the run
            current = {d["name"]: d for d in deployments() or []}
            if PLAN_DEPLOYMENT not in current:
                return None
            run = httpx.post(f"{api}/deployments/{current[PLAN_DEPLOYMENT]['id']}/create_flow_run", json={},
                             timeout=10)
            return run.json()["id"] if run.is_success else None

        run_id = _wait("the server to accept a flow run of the plan deployment", create_run, 120, logs)

        def finished():
            state = httpx.get(f"{api}/flow_runs/{run_id}", timeout=10).json()["state"]
            return state if state["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") else None

        state = _wait("the monthly run to finish", finished, 420, logs)
        assert state["type"] == "COMPLETED", (state, logs[1].read_text()[-3000:])
        folder = tmp_path / "out" / "2026-11"
        assert (folder / "report.html").is_file() and (folder / "budget.xlsx").is_file()
    finally:
        for proc in (serve, server):
            if proc is not None:
                _stop(proc)
    assert server.poll() is not None and (serve is None or serve.poll() is not None)
