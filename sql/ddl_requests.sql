-- canonical request rows: one row per request that passed every ingest rule, loaded by `capplan ingest`.
-- A view of the good rows of `request_rows` (sql/ddl_request_rows.sql), so each row is written once at
-- ingest (docs/ingest.md). Every column but ttft_ms, latency_ms, request_id, tenant and zone is non-null
-- (the staging SQL and the pandera contract RequestRow check it).
-- all timestamps are UTC (naive `timestamp`, microsecond precision).
create view if not exists requests as
select
    ts_utc,          -- arrival time, UTC
    input_tokens,    -- prompt tokens [tokens], >= 0
    output_tokens,   -- generated tokens [tokens], >= 0
    model,           -- 'default' when the source has no model column
    status,          -- HTTP status code; 200 when the source has none
    ttft_ms,         -- time to first token [ms]; null when not logged
    latency_ms,      -- arrival to last token [ms]; null when not logged
    request_id,      -- null when not logged
    tenant,          -- null when not logged
    zone,            -- null when not logged
    file_id          -- ingest_ledger.file_id of the file the row came from
from request_rows
where rule is null
