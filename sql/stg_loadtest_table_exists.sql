-- 1 when the database holds the `load_tests` table (sql/ddl_load_tests.sql), else 0 (a view of it in an
-- as-of connection, capplan/history/as_of.py, counts).
select count(*) as present
from information_schema.tables
where table_name = 'load_tests' and table_schema = 'main' and table_catalog = current_database()
