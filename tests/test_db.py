import subprocess
import sys

import duckdb
import pytest

from capplan.db import DatabaseLockedError, connect, keep_block_memory, memory_capped, memory_limit_mib
from capplan.sql import load


def test_ddl_files_create_tables():
    con = connect()
    for name in ("ddl_ingest_ledger", "ddl_request_rows", "ddl_requests", "ddl_quarantine"):
        con.execute(load(name))
    tables = dict(con.execute("select table_name, table_type from information_schema.tables").fetchall())
    assert {"request_rows", "requests", "quarantine", "ingest_ledger"} <= tables.keys()
    assert tables["requests"] == "VIEW"


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


@pytest.mark.parametrize(("setting", "mib"), [("300MiB", 300), ("2GiB", 2048), ("1500kB", 1.4)])
def test_memory_limit_is_read_in_mib(setting, mib):
    con = connect()
    con.execute("set memory_limit = ?", [setting])
    assert memory_limit_mib(con) == pytest.approx(mib, rel=0.01)  # DuckDB prints one decimal


def test_memory_capped_lowers_then_restores_and_never_raises():
    con = connect()
    con.execute("set memory_limit = '2GiB'")
    with memory_capped(con, 256):
        assert memory_limit_mib(con) == 256
    assert memory_limit_mib(con) == 2048
    con.execute("set memory_limit = '100MiB'")
    with memory_capped(con, 256):  # a lower limit already set is kept
        assert memory_limit_mib(con) == 100
    with pytest.raises(RuntimeError), memory_capped(con, 50):
        raise RuntimeError("restored even so")
    assert memory_limit_mib(con) == 100
    with memory_capped(con, None):
        assert memory_limit_mib(con) == 100


def test_memory_capped_restores_inside_an_aborted_transaction_and_keeps_the_error():
    con = connect()
    con.execute("set memory_limit = '2GiB'")
    con.begin()
    with pytest.raises(duckdb.ConversionException), memory_capped(con, 256):
        con.execute("select 'x'::int")  # aborts con's transaction
    con.rollback()
    assert memory_limit_mib(con) == 2048



def test_keep_block_memory_raises_the_allocator_reserve_and_never_lowers_it():
    con = connect()
    setting = "select current_setting('block_allocator_memory')"
    keep_block_memory(con, None)
    assert con.execute(setting).fetchall() == [("0 bytes",)]
    keep_block_memory(con, 256)
    keep_block_memory(con, 128)  # DuckDB refuses to lower it; capplan does not ask
    assert con.execute(setting).fetchall() == [("256.0 MiB",)]
    assert connect().execute(setting).fetchall() == [("0 bytes",)]  # per database instance
