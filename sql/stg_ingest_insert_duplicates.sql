-- copies of the rows of the file being ingested that break only `request_id_duplicate`
-- (sql/stg_ingest_duplicate_rows.sql), marked with that rule, its detail and raw values, appended to
-- `request_rows`; sql/stg_ingest_delete_duplicates.sql then deletes the unmarked originals. An
-- `update` of the rows in place kept every updated value in memory until commit and failed with "Out
-- of Memory" at 1 GiB when every row of a 5.4 M-row file was a duplicate (issue 20); an insert writes
-- row groups and spills, and a delete only marks rows. A copy carries its data row in `source_row`
-- (scan order, as `ingest_staged` numbers it), also for CSV: its `rowid` is no longer its position.
-- parameters: $file_id.
insert into request_rows
with

staged as (
    select * from ingest_staged where rule is null
),

duplicates as (
    select source_row, detail, raw_json from ingest_duplicate_rows
),

final as (
    select
        s.ts_utc,
        s.input_tokens,
        s.output_tokens,
        s.model,
        s.status,
        s.ttft_ms,
        s.latency_ms,
        s.request_id,
        s.tenant,
        s.zone,
        cast($file_id as integer) as file_id,
        s.source_row,
        'request_id_duplicate' as rule,
        d.detail,
        d.raw_json
    from staged as s
    join duplicates as d on s.source_row = d.source_row
)

select * from final
