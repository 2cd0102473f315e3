-- drop the CSV reader's `reject_errors` temp table: DuckDB appends every scan's rejects to it per connection,
-- so it is dropped before each file (capplan.ingest.rejects reads the last scan's).
drop table if exists temp.reject_errors
