"""The ``load_tests`` table: one row per imported run (``sql/ddl_load_tests.sql``), and reading it back.

A file is identified by the SHA-256 of its bytes: importing the same content again, under any
name, stores nothing (``unchanged``). Queries live in ``sql/``; values enter as bound parameters.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from capplan import sql
from capplan.loadtest.formats import LoadTestRun, read_runs

_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class ImportResult:
    """What importing one file did."""

    path: str
    status: str  # imported | unchanged
    tool: str | None
    runs: int  # runs stored now (0 when unchanged)
    pool: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "tool": self.tool, "runs": self.runs, "pool": self.pool}


def ensure_table(con: duckdb.DuckDBPyConnection) -> None:
    """Create ``load_tests`` if it does not exist."""
    con.execute(sql.load("ddl_load_tests"))


def has_table(con: duckdb.DuckDBPyConnection) -> bool:
    """True when the database holds a ``load_tests`` table."""
    return bool(con.execute(sql.load("stg_loadtest_table_exists")).fetchone()[0])


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of the file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


class GpuMismatchError(ValueError):
    """``--gpu`` names another GPU than the file does (nothing is stored)."""


def import_file(con: duckdb.DuckDBPyConnection, path: str | Path, *, tool: str = "auto", pool: str | None = None,
                replicas: int = 1, gpus_per_replica: int | None = None,
                pool_of_model: Callable[[str | None], str | None] | None = None, gpu: str | None = None,
                ) -> ImportResult:
    """Parse ``path`` and store its runs, unless a file with the same content is stored already.

    Parameters
    ----------
    tool : str
        ``"auto"`` or a tool of :data:`capplan.loadtest.formats.TOOLS`.
    pool : str, optional
        Pool the runs measured; default: ``pool_of_model(run.model_id)`` (the config's pools,
        :func:`capplan.plan.pools.pool_for_model_id`), else each run's model id (``"default"``
        when the file has none).
    replicas : int
        Replicas behind the endpoint the tool loaded. [count]
    gpus_per_replica : int, optional
        GPUs per replica; default: the file's tensor-parallel degree, else 1. [GPUs]
    gpu : str, optional
        GPU type of the replicas (a GPU catalogue key) for a file that names none; a file that
        names another GPU is refused (:class:`GpuMismatchError`). Without it and without one in the file,
        the plan takes the run's GPU to be its pool's and says so.

    Raises
    ------
    capplan.loadtest.formats.LoadTestFormatError
        The file is not a layout capplan reads (nothing is stored).
    """
    if replicas < 1 or (gpus_per_replica is not None and gpus_per_replica < 1):
        raise ValueError(f"replicas and gpus_per_replica must be >= 1, got {replicas} and {gpus_per_replica}")
    digest = file_sha256(path)
    ensure_table(con)
    if con.execute(sql.load("stg_loadtest_file_imported"), {"file_sha256": digest}).fetchone()[0]:
        return ImportResult(str(path), "unchanged", None, 0, None)
    runs = read_runs(path, tool)
    if gpu is not None:
        other = next((r.gpu for r in runs if r.gpu and r.gpu.casefold() != gpu.casefold()), None)
        if other is not None:
            raise GpuMismatchError(f"{path}: the file names GPU {other!r}, --gpu says {gpu!r}; drop --gpu or fix the file")
        runs = [replace(r, gpu=r.gpu or gpu) for r in runs]
    now = datetime.now(UTC).replace(tzinfo=None)
    con.begin()
    try:
        for run in runs:
            con.execute(sql.load("stg_loadtest_insert_run"),
                        _row(run, digest, path, now, _pool(run, pool, pool_of_model), replicas, gpus_per_replica))
        con.commit()
    except BaseException:
        con.rollback()
        raise
    pools = sorted({_pool(run, pool, pool_of_model) for run in runs})
    return ImportResult(str(path), "imported", runs[0].tool, len(runs), ", ".join(pools))


def _pool(run: LoadTestRun, pool: str | None, pool_of_model: Callable[[str | None], str | None] | None) -> str:
    return pool or (pool_of_model and pool_of_model(run.model_id)) or run.model_id or "default"


def _row(run: LoadTestRun, digest: str, path: str | Path, now: datetime, pool: str, replicas: int,
         gpus_per_replica: int | None) -> dict[str, Any]:
    return {**run.to_row(), "file_sha256": digest, "file_path": str(path), "imported_at_utc": now,
            "pool": pool, "replicas": replicas,
            "gpus_per_replica": gpus_per_replica or run.tensor_parallel or 1}


def read_stored_runs(con: duckdb.DuckDBPyConnection, pool: str | None = None) -> list[dict[str, Any]]:
    """The stored runs (all pools, or one) as dicts, ordered by setup then rate; ``[]`` without a table."""
    if not has_table(con):
        return []
    cursor = con.execute(sql.load("rpt_loadtest_runs"), {"pool": pool})
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
