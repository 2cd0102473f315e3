-- 1 when every table of the profile's roll-ups (sql/ddl_profile.sql) exists, i.e. a refresh has run, else 0.
select (count(distinct table_name) = 4)::integer as found
from duckdb_tables()
where table_name in ('fct_traffic_hourly', 'fct_histogram_hourly', 'fct_concurrency_hourly', 'profile_file_hours')
    and schema_name = 'main' and database_name = current_database() and not temporary
