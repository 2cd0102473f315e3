-- how many rows of the file being ingested break only `request_id_duplicate`
-- (sql/stg_ingest_duplicate_rows.sql).
select count(*) from ingest_duplicate_rows
