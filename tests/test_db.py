import subprocess
import sys

import pytest

from capplan.db import DatabaseLockedError, connect
from sql import load


def test_ddl_files_create_tables():
    con = connect()
    for name in ("ddl_ingest_ledger", "ddl_requests", "ddl_quarantine"):
        con.execute(load(name))
    tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
    assert {"requests", "quarantine", "ingest_ledger"} <= tables


def test_unknown_sql_name_lists_valid_ones():
    with pytest.raises(FileNotFoundError, match="ddl_requests"):
        load("no_such_query")


def test_locked_database_gives_clear_error(tmp_path):
    db = tmp_path / "x.duckdb"
    code = (
        "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
        "print('ready', flush=True); time.sleep(30)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(DatabaseLockedError, match=str(db)):
            connect(db)
    finally:
        holder.kill()
        holder.wait()
