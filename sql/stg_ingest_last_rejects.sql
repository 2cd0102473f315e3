-- the lines the CSV reader rejected in its last scan (the staging pass, sql/stg_ingest_insert_rows.sql;
-- the reader's sniffing scans come before it): file line number, DuckDB's error type, the raw line.
select distinct line, error_type, csv_line
from reject_errors
where scan_id = (select max(scan_id) from reject_errors)
order by line
