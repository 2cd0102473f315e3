-- 1 when `requests` holds a request id from another file (not the version this file replaces) that
-- arrived between $from_utc and $to_utc (both null: any time), else 0: whether the earlier-file
-- duplicate check of sql/stg_ingest_duplicate_rows.sql can find anything. The span as constants
-- skips the row groups of `requests` outside it.
-- parameters: $file_id, $replaced_file_id, $from_utc, $to_utc.
select count(*)
from (
    select 1
    from requests
    where request_id is not null
        and file_id <> $file_id and file_id is distinct from $replaced_file_id
        and ($from_utc is null or ts_utc between cast($from_utc as timestamp) and cast($to_utc as timestamp))
    limit 1
)
