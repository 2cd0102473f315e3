-- the good rows of the staged file (temp table `ingest_staged`, sql/stg_requests.sql) into `requests`,
-- in file order. A plain filtered scan of one table, so DuckDB plans its batch insert.
-- parameters: $file_id.
insert into requests
select
    ts_utc,
    input_tokens,
    output_tokens,
    model,
    status,
    ttft_ms,
    latency_ms,
    request_id,
    tenant,
    zone,
    cast($file_id as integer) as file_id
from ingest_staged
where rule is null
