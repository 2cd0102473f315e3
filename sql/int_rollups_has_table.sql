-- 1 when a table named $table exists in this database (or a view of it in an as-of connection,
-- capplan/history/as_of.py), else 0.
select count(*) as found from information_schema.tables
where table_name = $table and table_schema = 'main' and table_catalog = current_database()
