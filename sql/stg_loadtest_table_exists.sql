-- 1 when the database holds the `load_tests` table (sql/ddl_load_tests.sql), else 0.
select count(*) as present
from duckdb_tables()
where table_name = 'load_tests'
