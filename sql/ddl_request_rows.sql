-- every row of every ingested file, good and bad, in file order: the storage behind the view `requests`
-- (sql/ddl_requests.sql), which shows the good rows (`rule` null). `capplan ingest` writes each row once,
-- here (sql/stg_ingest_insert_rows.sql); a bad row is also copied, with its file row number, to
-- `quarantine`, which is the table to read bad rows from. A bad row keeps its rule, detail, raw values
-- and what parsed (its request id still counts as an id's first occurrence for the duplicate rule);
-- its tokens are null, and so is a timestamp that breaks a timestamp rule, so a future or infinite
-- time never widens the time range DuckDB prunes row groups by. (Nulling every value of a bad row
-- broke the compression runs of sorted `ts_utc`: 474 against 391 MiB for 20 M rows, 1 % bad.)
-- Read `requests` and `quarantine`; this table is capplan's own (docs/ingest.md).
create table if not exists request_rows (
    ts_utc          timestamp,           -- arrival time, UTC; null on a row breaking a timestamp rule
    input_tokens    integer,             -- prompt tokens [tokens], >= 0; null on a bad row
    output_tokens   integer,             -- generated tokens [tokens], >= 0; null on a bad row
    model           varchar,             -- 'default' when the source has no model column
    status          smallint,            -- HTTP status code; 200 when the source has none; null if unknown
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
