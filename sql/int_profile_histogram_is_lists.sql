-- 1 when this database stores the histograms' bins and counts as two lists per metric
-- (`fct_histogram_hourly_bins.<metric>_bins` and `<metric>_counts`, written before each bin and its count
-- were one code), else 0; capplan.profile.refresh.ensure_tables migrates them in place
-- (sql/ddl_profile_migrate_histogram_lists.sql). Views count too: an as-of connection shows each table as one.
select count(*)
from duckdb_columns()
where table_name = 'fct_histogram_hourly_bins' and column_name = 'input_tokens_counts'
    and schema_name = 'main' and database_name = current_database()
