"""The ingest flow: load request-log files into DuckDB through :mod:`capplan.ingest`.

Reads top to bottom: pick the sources → ingest each → refresh the profile
roll-ups → summarise. One task per source; a file's problems are reported in its
result (status ``error`` or ``refused``), not raised, so one bad file does not
stop the others or the plan. Only a locked database (another writer) is retried.
"""

from __future__ import annotations

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NONE

from capplan.config import CapplanConfig, SourceConfig
from capplan.db import connect
from capplan.ingest import FileResult, ensure_tables, ingest_paths
from capplan.profile import refresh_rollups


@task(name="ingest-source", retries=3, retry_delay_seconds=5, cache_policy=NONE)
def ingest_source(config: CapplanConfig, source: SourceConfig, paths: list[str]) -> list[FileResult]:
    """Ingest the files of one source into the configured database."""
    con = connect(config.database.path)
    try:
        return ingest_paths(con, paths, source, config.ingest)
    finally:
        con.close()


@task(name="refresh-profile-rollups", retries=3, retry_delay_seconds=5, cache_policy=NONE)
def refresh_profile_rollups(config: CapplanConfig) -> int:
    """Bring the profile roll-ups up to date with the ingested files; returns the hours recomputed."""
    con = connect(config.database.path)
    try:
        ensure_tables(con)  # even if no file matched
        return refresh_rollups(con)
    finally:
        con.close()


@flow(name="ingest-logs", log_prints=True)
def ingest_logs(config: CapplanConfig, paths: list[str] | None = None,
                source: SourceConfig | None = None) -> list[FileResult]:
    """Ingest ``paths`` as ``source``, or else every configured ``[[ingest.sources]]``."""
    jobs = [(source or SourceConfig(name="cli"), paths)] if paths else [(s, s.paths) for s in config.ingest.sources]
    results = [r for s, p in jobs for r in ingest_source(config, s, p)]
    if jobs:
        refresh_profile_rollups(config)
    logger = get_run_logger()
    for r in results:
        log = logger.info if r.status in ("loaded", "replaced", "unchanged") and not r.notes else logger.warning
        log("%s: %s, read %d, loaded %d, quarantined %d %s", r.path, r.status, r.rows_read, r.rows_loaded,
            r.rows_quarantined, " ".join((r.message, *r.notes)))
    return results
