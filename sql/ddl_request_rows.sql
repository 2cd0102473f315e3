-- every row of every ingested file, good and bad, in file order: the storage behind the view `requests`
-- (sql/ddl_requests.sql), which shows the good rows (`rule` null). `capplan ingest` writes each row once,
-- here (sql/stg_ingest_insert_rows.sql); a bad row is also copied, with its file row number, to
-- `quarantine`, which is the table to read bad rows from. A bad row keeps only its request id (it
-- still counts as an id's first occurrence for the duplicate rule), file, rule, detail and raw values;
-- its other columns are null, so they never widen the time ranges DuckDB prunes row groups by (a row
-- that breaks only `request_id_duplicate`, marked after the write, keeps its valid values).
-- Read `requests` and `quarantine`; this table is capplan's own (docs/ingest.md).
create table if not exists request_rows (
    ts_utc          timestamp,           -- arrival time, UTC; null on a bad row
    input_tokens    integer,             -- prompt tokens [tokens], >= 0; null on a bad row
    output_tokens   integer,             -- generated tokens [tokens], >= 0; null on a bad row
    model           varchar,             -- 'default' when the source has no model column; null on a bad row
    status          smallint,            -- HTTP status code; 200 when the source has none; null on a bad row
    ttft_ms         double,              -- time to first token [ms]; null when not logged
    latency_ms      double,              -- arrival to last token [ms]; null when not logged
    request_id      varchar,             -- null when not logged
    tenant          varchar,             -- null when not logged
    zone            varchar,             -- null when not logged
    file_id         integer   not null,  -- ingest_ledger.file_id of the file the row came from
    source_row      bigint,              -- data row as the reader numbered it (Parquet, JSON lines); null for CSV
    rule            varchar,             -- first rule the row breaks; null for a good row
    detail          varchar,             -- bad rows: column, value, what was expected
    raw_json        json                 -- bad rows: the raw values, as read
);
