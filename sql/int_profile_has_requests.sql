-- 1 when this database has a `requests` table or view (`capplan ingest` creates the view), else 0.
select count(*) as found
from information_schema.tables
where table_name = 'requests' and table_schema = 'main' and table_catalog = current_database()
