"""A read-only view of the database as it was at an instant: the backtest's guard against peeking.

:func:`connect_as_of` opens an in-memory DuckDB, attaches the database file read-only as
``as_of_source`` and creates, under each table and view's own name, a view of what was known
before the cut-off: every relation with a time column (``ts_utc``, ``hour_utc``,
``minute_utc`` or ``day_utc``) keeps only rows before the instant; the rest (the ingest
ledger, the roll-up version, load tests) are visible whole. Every reader of every stage runs
unchanged on that connection — the profile, the measured request mix, SLO and drift roll-ups
computed on read — so a plan made "as of T" cannot see a request from T or later, because
no query it runs can name one.

Limits, stated: a request that arrived before T but finished after T is visible with its
latency (its arrival is what the logs stamp); hourly roll-ups cut on whole hours, so T is
floored to the hour; the ingest ledger keeps files ingested after T (it holds no traffic).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pandas as pd

from capplan import sql
from capplan.db import connect

#: An identifier capplan creates: lower-case letters, digits and underscores.
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")


def _identifier(name: str) -> str:
    if not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"unexpected relation or column name {name!r} in the database: not one capplan creates")
    return name


@contextmanager
def connect_as_of(path: str | Path, cut_utc: pd.Timestamp | str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection on which the database at ``path`` shows only what was known before ``cut_utc`` (UTC).

    ``cut_utc`` is floored to the hour (roll-ups are hourly). The file is attached
    read-only: nothing is written to it.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    """
    if not Path(path).is_file():
        raise FileNotFoundError(f"no database at {path}")
    cut = pd.Timestamp(cut_utc)
    cut = (cut.tz_convert("UTC").tz_localize(None) if cut.tzinfo else cut).floor("h")
    con = connect(":memory:")
    try:
        con.execute(sql.load("set_as_of_attach"), {"path": str(path)})
        con.execute(sql.load("ddl_as_of_cut"), {"cut_utc": cut.to_pydatetime()})
        relations = con.execute(sql.load("int_as_of_relations")).fetchall()
        for name, time_column in relations:
            if time_column is None:
                con.execute(sql.load("ddl_as_of_passthrough").format(relation=_identifier(name)))
            else:
                con.execute(sql.load("ddl_as_of_view").format(relation=_identifier(name),
                                                              time_column=_identifier(time_column)))
        yield con
    finally:
        con.close()
