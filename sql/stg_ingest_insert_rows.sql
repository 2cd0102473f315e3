-- every parsed and checked row of the file being ingested (view `ingest_checked`, sql/stg_requests.sql)
-- into `request_rows`, in file order: the file's only full read, and each row's only write. Good rows
-- are then what the view `requests` shows; bad ones are copied to `quarantine` from here
-- (sql/stg_ingest_insert_quarantine.sql). A bad row keeps what parsed (its request id counts as an
-- id's first occurrence whatever that row's fate, sql/stg_ingest_duplicate_ids.sql) and its rule,
-- detail and raw values; a timestamp breaking a timestamp rule is nulled, so a future or infinite
-- time never widens a row group's time range (sql/ddl_request_rows.sql). One ordered `insert ... select` (preserve_insertion_order), so a CSV row's number is its
-- position (sql/stg_ingest_staged_view.sql) and DuckDB writes full row groups to the file before
-- commit, in flat memory. Staging into a temp table and copying the good rows on wrote each row twice,
-- and the temp table spilled to disk beyond the memory limit (50 M CSV rows: 2.18x a bare load against
-- 1.63x now, same rounds; docs/ingest.md).
-- parameters: $file_id.
insert into request_rows
select
    -- a timestamp that breaks a timestamp rule (future, infinite) would widen its row group's time range
    case when rule is null or rule not like 'timestamp_%' then ts_utc end as ts_utc,
    input_tokens,  -- null on a bad row (typed for good rows only)
    output_tokens,
    model,
    status,
    ttft_ms,
    latency_ms,
    request_id,
    tenant,
    zone,
    cast($file_id as integer) as file_id,
    source_row,
    rule,
    detail,
    raw_json
from ingest_checked
