-- every parsed and checked row of the file being ingested (view `ingest_checked`, sql/stg_requests.sql)
-- into `request_rows`, in file order: the file's only full read, and each row's only write. Good rows
-- are then what the view `requests` shows; bad ones are copied to `quarantine` from here
-- (sql/stg_ingest_insert_quarantine.sql). A bad row keeps its request id (an id's first occurrence
-- counts whatever that row's fate, sql/stg_ingest_duplicate_ids.sql) and its rule, detail and raw
-- values; its other values are nulled, so a future or absurd timestamp never widens a row group's
-- time range. One ordered `insert ... select` (preserve_insertion_order), so a CSV row's number is its
-- position (sql/stg_ingest_staged_view.sql) and DuckDB writes full row groups to the file before
-- commit, in flat memory. Staging into a temp table and copying the good rows on wrote each row twice,
-- and the temp table spilled to disk beyond the memory limit (50 M CSV rows: 2.18x a bare load against
-- 1.63x now, same rounds; docs/ingest.md).
-- parameters: $file_id.
insert into request_rows
select
    case when rule is null then ts_utc end as ts_utc,
    input_tokens,  -- already null on a bad row
    output_tokens,
    case when rule is null then model end as model,
    case when rule is null then status end as status,
    case when rule is null then ttft_ms end as ttft_ms,
    case when rule is null then latency_ms end as latency_ms,
    request_id,
    case when rule is null then tenant end as tenant,
    case when rule is null then zone end as zone,
    cast($file_id as integer) as file_id,
    source_row,
    rule,
    detail,
    raw_json
from ingest_checked
