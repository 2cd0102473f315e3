-- the bad rows of the file being ingested (view `ingest_staged`, sql/stg_ingest_staged_view.sql) into `quarantine`,
-- with their first broken rule, detail and raw values. Row numbers are in scan order; lines the CSV
-- reader rejected are added and the numbers shifted afterwards (sql/stg_quarantine_renumber.sql).
-- parameters: $file_id, $path.
insert into quarantine
select
    cast($file_id as integer) as file_id,
    cast($path as varchar) as path,
    source_row as row_number,
    rule,
    detail,
    raw_json as raw
from ingest_staged
where rule is not null
