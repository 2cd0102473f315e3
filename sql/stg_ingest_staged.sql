-- keep every parsed and checked row of a text file (view `ingest_checked`, sql/stg_requests.sql) in
-- the temp table `ingest_staged_rows`: the file's only full read. Good rows go on to `requests`
-- (sql/stg_ingest_insert_requests.sql), bad ones to `quarantine` (sql/stg_ingest_insert_quarantine.sql),
-- from here. Re-reading CSV text costs more than writing and scanning this table (tokenising and
-- parsing every line again); a Parquet file's columns are cheap to scan again, so for Parquet
-- `ingest_staged` is a view of `ingest_checked` (capplan/ingest.py). Beyond the ingest's DuckDB
-- memory limit the table spills to DuckDB's temporary folder.
-- One `create table as` of an ordered scan keeps the rows in scan order (preserve_insertion_order),
-- so a CSV row's number is its position in the table (sql/stg_ingest_staged_view.sql), not a
-- `row_number()` window, which serialises the scan (5 M rows: 2.5 s against 1.4 s, measured).
create or replace temp table ingest_staged_rows as
select * from ingest_checked
