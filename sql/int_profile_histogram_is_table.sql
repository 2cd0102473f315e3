-- 1 when this database holds `fct_histogram_hourly` as a table (one row per bin, written before the
-- bins were stored as lists), else 0; capplan.profile.refresh.ensure_tables migrates such a table in
-- place (sql/ddl_profile_migrate_histogram.sql). The view `fct_histogram_hourly` is not counted.
select count(*)
from duckdb_tables()
where table_name = 'fct_histogram_hourly' and schema_name = 'main' and database_name = current_database()
