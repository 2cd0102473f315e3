-- 1 when a persistent table named $table exists, else 0.
select count(*) as found from duckdb_tables() where table_name = $table and not temporary
