-- whether the database has a table named $table_name (any schema): the CLI's check that a
-- database was ingested into before it reads it (capplan/cli/_common.py).
-- output: one row; table_exists [boolean].
select count(*) > 0 as table_exists
from information_schema.tables
where table_name = $table_name::varchar
