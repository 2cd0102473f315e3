-- mark the staged rows that break only `request_id_duplicate` (sql/stg_ingest_duplicate_rows.sql);
-- the last rule, so it never overrides an earlier one. Rows are matched by their data row number,
-- as sql/stg_ingest_staged_view.sql numbers them.
-- parameters: $row_offset (as there).
update ingest_staged_rows
set rule = 'request_id_duplicate', detail = d.detail, raw_json = d.raw_json
from ingest_duplicate_rows as d
where coalesce(ingest_staged_rows.source_row, ingest_staged_rows.rowid + $row_offset) = d.source_row
