"""capplan.ingest: the contract of a loaded row and its re-validation (capplan.ingest.contract)."""

from __future__ import annotations

import pytest

from capplan.config import IngestConfig
from capplan.db import connect
from capplan.ingest import CANONICAL_COLUMNS, IngestError, RequestRow, ensure_tables
from capplan.ingest.contract import check_contract
from capplan.sql import load as load_sql


def test_the_contract_covers_the_canonical_columns_the_sample_reads():
    assert tuple(RequestRow.columns) == CANONICAL_COLUMNS
    con = connect()
    ensure_tables(con)
    sample = con.sql(load_sql("stg_ingest_contract_rows"), params={"file_id": 1, "limit": 1})
    assert tuple(sample.columns) == CANONICAL_COLUMNS


@pytest.mark.parametrize("contract_check", ["sample", "all"])
def test_a_loaded_row_breaking_the_contract_is_an_ingest_error(contract_check, tmp_path):
    con = connect()
    ensure_tables(con)
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, file_id) "
                "values ('2026-10-01 00:00:00', -5, 1, 'm', 200, 3)")  # what the staging SQL never lets in
    with pytest.raises(IngestError, match="break the RequestRow contract"):
        check_contract(con, 3, IngestConfig(contract_check=contract_check), tmp_path / "x.csv")
    check_contract(con, 3, IngestConfig(contract_check="off"), tmp_path / "x.csv")  # off: nothing read
    check_contract(con, 4, IngestConfig(contract_check="all"), tmp_path / "x.csv")  # another file's rows: fine
