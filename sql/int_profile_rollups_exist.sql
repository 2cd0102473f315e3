-- 1 when every table of the profile's roll-ups (sql/ddl_profile.sql) exists, i.e. a refresh has run, else 0.
-- information_schema.tables lists views too: an as-of connection (capplan/history/as_of.py) shows each
-- roll-up as a view of the attached database under the table's own name.
select (count(distinct table_name) = 4)::integer as found
from information_schema.tables
where table_name in ('fct_traffic_hourly', 'fct_histogram_hourly', 'fct_concurrency_hourly', 'profile_file_hours')
    and table_schema = 'main' and table_catalog = current_database()
