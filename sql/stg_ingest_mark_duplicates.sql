-- mark the rows of the file being ingested that break only `request_id_duplicate`
-- (sql/stg_ingest_duplicate_rows.sql); the last rule, so it never overrides an earlier one. Rows are
-- matched by their data row number, as sql/stg_ingest_staged_view.sql numbers them; marked, a row
-- leaves the view `requests` and goes to `quarantine` with the file's other bad rows.
-- parameters: $file_id, $row_offset (as there).
update request_rows
set rule = 'request_id_duplicate', detail = d.detail, raw_json = d.raw_json
from ingest_duplicate_rows as d
where request_rows.file_id = $file_id
    and coalesce(request_rows.source_row, request_rows.rowid + $row_offset) = d.source_row
