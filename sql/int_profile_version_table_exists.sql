-- 1 when the roll-up version table (sql/ddl_profile.sql) exists, else 0 (a view of it in an as-of
-- connection, capplan/history/as_of.py, counts)
select count(*)::integer as found
from information_schema.tables
where table_name = 'profile_rollup_version'
    and table_schema = 'main' and table_catalog = current_database()
