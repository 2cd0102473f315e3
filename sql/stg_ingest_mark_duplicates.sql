-- mark the staged rows that break only `request_id_duplicate` (sql/stg_ingest_duplicate_rows.sql);
-- the last rule, so it never overrides an earlier one.
update ingest_staged
set rule = 'request_id_duplicate', detail = d.detail, raw_json = d.raw_json
from ingest_duplicate_rows as d
where ingest_staged.source_row = d.source_row
