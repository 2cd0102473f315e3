-- 1 when the roll-up version table (sql/ddl_profile.sql) exists, else 0
select count(*)::integer as found
from duckdb_tables()
where table_name = 'profile_rollup_version'
    and schema_name = 'main' and database_name = current_database() and not temporary
