-- canonical request rows: one row per request, loaded by `capplan ingest`.
-- all timestamps are UTC (naive `timestamp`, microsecond precision).
create table if not exists requests (
    ts_utc          timestamp not null,  -- arrival time, UTC
    input_tokens    integer   not null,  -- prompt tokens [tokens], >= 0
    output_tokens   integer   not null,  -- generated tokens [tokens], >= 0
    model           varchar   not null,  -- 'default' when the source has no model column
    status          smallint  not null,  -- HTTP status code; 200 when the source has none
    ttft_ms         double,              -- time to first token [ms]; null when not logged
    latency_ms      double,              -- arrival to last token [ms]; null when not logged
    request_id      varchar,             -- null when not logged
    tenant          varchar,             -- null when not logged
    zone            varchar,             -- null when not logged
    file_id         integer   not null   -- ingest_ledger.file_id of the file the row came from
);
