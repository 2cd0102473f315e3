-- 1 when the CSV reader's `reject_errors` temp table exists on this connection (a scan with
-- store_rejects ran), else 0.
select count(*) from duckdb_tables() where table_name = 'reject_errors'
