-- 1 when this database holds `requests` as a table (written before `request_rows` existed: good
-- rows only), else 0; capplan.ingest.tables migrates such a table in place
-- (sql/ddl_ingest_migrate_requests_table.sql). A view `requests` is not counted.
select count(*)
from duckdb_tables()
where table_name = 'requests' and schema_name = 'main' and database_name = current_database()
