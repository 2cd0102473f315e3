-- first and last `rowid` and the row count of file `$file_id` in `request_rows`: inside the ingest's
-- transaction its rows' rowids are contiguous, in scan order, so they number a CSV file's rows
-- (capplan.ingest.stage checks the contiguity).
-- parameters: $file_id.
select min(rowid), max(rowid), count(*)
from request_rows
where file_id = $file_id
