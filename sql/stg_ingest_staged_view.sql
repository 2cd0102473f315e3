-- the staged rows (sql/stg_ingest_staged.sql) with their data row numbers: a CSV file's rows are
-- numbered by their position in the table (`rowid`, in scan order, shifted to start at 1), the
-- other formats by the reader (`source_row` already set). capplan/ingest.py registers this query as
-- the temp view `ingest_staged`.
-- parameters: $row_offset (1 - the table's first rowid).
select * replace (coalesce(source_row, rowid + $row_offset) as source_row)
from ingest_staged_rows
