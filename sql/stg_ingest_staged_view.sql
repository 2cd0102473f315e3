-- the rows of the file being ingested, as sql/stg_ingest_insert_rows.sql wrote them to `request_rows`,
-- with their data row numbers: a CSV file's rows are numbered by their position (`rowid`, in scan
-- order, shifted to start at 1; contiguous inside the ingest's transaction, checked by
-- capplan.ingest.stage.row_offset), the other formats by the reader (`source_row` already set).
-- capplan.ingest.stage registers this query as the temp view `ingest_staged`.
-- parameters: $file_id, $row_offset (1 - the first rowid of the file's rows).
select * exclude (file_id) replace (coalesce(source_row, rowid + $row_offset) as source_row)
from request_rows
where file_id = $file_id
