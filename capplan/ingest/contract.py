"""The contract of a loaded request row (pandera :data:`RequestRow`) and its re-validation.

The SQL staging pass decides each row's fate; this schema is the written contract of what
``requests`` holds, and :func:`check_contract` re-validates a sample (or every row) of a file's
loaded rows inside the file's transaction, so a bug in the staging SQL rolls the file back.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandera.pandas as pa

from capplan.config import IngestConfig
from capplan.ingest import queries
from capplan.ingest.columns import MAX_DURATION_MS
from capplan.ingest.errors import IngestError

#: Contract of one loaded request row (table ``requests``, without ``file_id``). A schema object,
#: not a ``DataFrameModel`` as elsewhere in capplan: building a model's schema makes pandera import
#: its dask typing when dask is installed (the partitioned flow installs it), and every ingest
#: process would pay for it (docs/ingest.md).
RequestRow = pa.DataFrameSchema(
    {
        "ts_utc": pa.Column("datetime64[ns]", description="Arrival time, UTC. [timestamp]"),
        "input_tokens": pa.Column(int, pa.Check.ge(0), description="Prompt tokens. [tokens]"),
        "output_tokens": pa.Column(int, pa.Check.ge(0), description="Generated tokens. [tokens]"),
        "model": pa.Column(str, pa.Check.str_length(min_value=1), description="Model name."),
        "status": pa.Column(int, pa.Check.in_range(100, 599), description="HTTP status code."),
        "ttft_ms": pa.Column(float, pa.Check.in_range(0, MAX_DURATION_MS), nullable=True, description="Time to first token. [ms]"),
        "latency_ms": pa.Column(float, pa.Check.in_range(0, MAX_DURATION_MS), nullable=True, description="Arrival to last token. [ms]"),
        "request_id": pa.Column(str, nullable=True),
        "tenant": pa.Column(str, nullable=True),
        "zone": pa.Column(str, nullable=True),
    },
    name="RequestRow",
    coerce=True,  # DuckDB gives int32/int16/datetime64[us]; the contract is about values
    strict=True,
)


def check_contract(con: duckdb.DuckDBPyConnection, file_id: int, cfg: IngestConfig, path: Path) -> None:
    """Re-validate loaded rows against :data:`RequestRow` (a sample, or all rows in chunks).

    ``cfg.contract_check``: ``"sample"`` reads the file's first ``contract_sample_rows`` rows as
    stored (``sql/stg_ingest_contract_rows.sql``), ``"all"`` every row in chunks of that size,
    ``"off"`` nothing.

    Raises
    ------
    IngestError
        When a loaded row breaks the contract (a bug in the staging SQL).
    """
    if cfg.contract_check == "off":
        return
    limit = None if cfg.contract_check == "all" else cfg.contract_sample_rows
    rows = queries.relation(con, "stg_ingest_contract_rows", {"file_id": file_id, "limit": limit})
    for batch in rows.to_arrow_reader(cfg.contract_sample_rows):
        try:
            RequestRow.validate(batch.to_pandas(), lazy=True)
        except pa.errors.SchemaErrors as exc:
            cases = exc.failure_cases.head(3).to_dict("records")
            raise IngestError(f"{path}: loaded rows break the RequestRow contract (a bug in the "
                              f"staging SQL): {cases}") from None
